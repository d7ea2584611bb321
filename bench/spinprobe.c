/*
 * spinprobe: how long after exec a rule's nice is in force for a program that is busy
 * from its first instruction, for bench/latency. Unlike execlat, which watches the child
 * from outside, the child watches itself: from the first line of main() it asks
 * getpriority(2) again and again, without a pause (or with --sleep-us between looks),
 * until it sees the nice, and reports when. A program that keeps its CPU after exec is
 * the case where a daemon woken on that CPU may not run until the program is preempted.
 *
 *   spinprobe --nice N [--spawns K] [--sleep-us U] [--gap-ms G] -- /ABS/COPY
 *
 * forks K times; each child takes CLOCK_MONOTONIC just before it execs COPY (a copy of
 * this program under the name a rule matches) with "--probe" and the stamp. Prints
 * "p50 p90 p99 max at_main seen spawns late_p99 late_max": microseconds from exec to
 * the nice seen; at_main counts the spawns that had the nice already at main()'s first
 * line; late is from main()'s first line to the nice seen (0 when it was there at main):
 * how long the program's own code ran without its value, the part exec's own cost does
 * not hide. It only measures; it never changes a scheduling setting.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* A child that does not see the nice within this gives up: the spawn is "not seen". */
#define PROBE_TIMEOUT_NS 1000000000ull

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The child after exec: argv = COPY --probe STAMP NICE SLEEP_US. Writes "US AT_MAIN LATE_US"
 * or "-". */
static int probe(char **argv)
{
	uint64_t start = now_ns(), t0 = strtoull(argv[2], NULL, 10), seen;
	int want = atoi(argv[3]), sleep_us = atoi(argv[4]);
	bool at_main;

	errno = 0;
	at_main = getpriority(PRIO_PROCESS, 0) == want && !errno;
	while (!at_main) {
		errno = 0;
		if (getpriority(PRIO_PROCESS, 0) == want && !errno)
			break;
		if (now_ns() - start > PROBE_TIMEOUT_NS) {
			puts("-");
			return 0;
		}
		if (sleep_us)
			usleep((useconds_t)sleep_us);
	}
	seen = now_ns();
	printf("%" PRIu64 " %d %" PRIu64 "\n", (seen - t0) / 1000, at_main,
	       at_main ? 0 : (seen - start) / 1000);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static uint64_t pct(const uint64_t *v, int n, double q)
{
	int i = (int)(q * n);

	return v[i < n ? i : n - 1];
}

/* One spawn: the microseconds to the nice, or -1 when not seen; *at_main and *late_us as
 * it said. */
static int64_t spawn(const char *exe, int nice, int sleep_us, bool *at_main, uint64_t *late_us)
{
	char out[96] = "", stamp[32], nice_s[16], sleep_s[16], *end;
	unsigned long long us, late;
	int m;
	int fds[2], st;
	ssize_t n;
	pid_t pid;

	if (pipe(fds) < 0)
		return -2;
	pid = fork();
	if (pid < 0)
		return -2;
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		snprintf(nice_s, sizeof(nice_s), "%d", nice);
		snprintf(sleep_s, sizeof(sleep_s), "%d", sleep_us);
		snprintf(stamp, sizeof(stamp), "%" PRIu64, now_ns());
		execl(exe, exe, "--probe", stamp, nice_s, sleep_s, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	n = read(fds[0], out, sizeof(out) - 1);
	close(fds[0]);
	if (waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0 || n <= 0)
		return -2;
	out[n] = '\0';
	if (out[0] == '-')
		return -1;
	errno = 0;
	us = strtoull(out, &end, 10);
	if (errno || sscanf(end, " %d %llu", &m, &late) != 2)
		return -2;
	*at_main = m == 1;
	*late_us = late;
	return (int64_t)us;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: spinprobe --nice N [--spawns K] [--sleep-us U] [--gap-ms G] -- "
		   "/ABS/COPY\n"
		   "Spawns COPY (a copy of spinprobe) K times (default 200), G ms apart (default "
		   "5);\neach child spins on getpriority() from main() until its nice is N (with "
		   "U us\nof sleep between looks, default 0). Prints p50 p90 p99 max at_main seen "
		   "spawns\n(microseconds from exec to the nice seen) and late_p99 late_max "
		   "(from main()'s\nfirst line to the nice seen, 0 when it was there at main).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "nice", required_argument, NULL, 'n' },
		{ "spawns", required_argument, NULL, 's' },
		{ "sleep-us", required_argument, NULL, 'u' },
		{ "gap-ms", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int nice = 0, spawns = 200, sleep_us = 0, gap_ms = 5, c, seen = 0, at_main = 0;
	bool nice_set = false;
	uint64_t *v, *late;

	if (argc == 5 && strcmp(argv[1], "--probe") == 0)
		return probe(argv);
	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n': nice = atoi(optarg); nice_set = true; break;
		case 's': spawns = atoi(optarg); break;
		case 'u': sleep_us = atoi(optarg); break;
		case 'g': gap_ms = atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!nice_set || spawns < 1 || sleep_us < 0 || gap_ms < 0 || optind != argc - 1 ||
	    argv[optind][0] != '/') {
		usage(stderr);
		return 2;
	}
	v = calloc((size_t)spawns, sizeof(*v));
	late = calloc((size_t)spawns, sizeof(*late));
	if (!v || !late) {
		free(v);
		free(late);
		return 1;
	}
	for (int i = 0; i < spawns; i++) {
		bool m = false;
		uint64_t l = 0;
		int64_t us = spawn(argv[optind], nice, sleep_us, &m, &l);

		if (us == -2) {
			fprintf(stderr, "spinprobe: spawn %d of %s failed\n", i, argv[optind]);
			free(v);
			free(late);
			return 1;
		}
		if (us >= 0) {
			late[seen] = l;
			v[seen++] = (uint64_t)us;
			at_main += m;
		}
		usleep((useconds_t)gap_ms * 1000);
	}
	if (!seen) {
		printf("- - - - 0 0 %d - -\n", spawns);
		free(v);
		free(late);
		return 0;
	}
	qsort(v, (size_t)seen, sizeof(*v), cmp_u64);
	qsort(late, (size_t)seen, sizeof(*late), cmp_u64);
	printf("%" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " %d %d %d %" PRIu64 " %" PRIu64 "\n",
	       pct(v, seen, 0.5), pct(v, seen, 0.9), pct(v, seen, 0.99), v[seen - 1], at_main, seen,
	       spawns, pct(late, seen, 0.99), late[seen - 1]);
	free(v);
	free(late);
	return 0;
}
