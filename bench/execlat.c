/*
 * execlat: how long after exec a rule's value is visible, for bench/latency. It spawns a
 * command again and again and polls the child's /proc/PID/cgroup until the cpu line names
 * the class cgroup; with --nice, it also polls the child's nice (sched_getattr) for the
 * first knob the value sets, the moment from which the task is favoured. It only
 * measures; it never changes a scheduling setting.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What the child leaves for the parent; the page outlives the child's exec. */
struct stamp {
	_Atomic uint64_t exec_ns; /* CLOCK_MONOTONIC just before execv, 0 until then */
};

static struct {
	int spawns;
	uint64_t timeout_ns;
	uint64_t gap_ns;    /* pause between spawns, so each finds the daemon idle */
	const char *cgroup; /* the class cgroup's last path component */
	bool nice_on;       /* --nice given: time the first knob too */
	int nice;           /* the nice the value sets */
	char **argv;        /* the command, argv[0] an absolute path */
} g = { .spawns = 200, .timeout_ns = 1000000000ULL, .gap_ns = 5000000ULL };

/*
 * Per spawn: the delay to the class (all knobs), and whether it showed before the
 * timeout; with --nice, the delay to the nice (the first knob).
 */
struct sample {
	uint64_t delay_ns;
	bool seen;
	uint64_t first_ns;
	bool first_seen;
};

/* struct sched_attr as far as sched_nice: what the kernel fills for a size of 48. */
struct attr_head {
	uint32_t size, sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime, sched_deadline, sched_period;
};

/* 1 when the child has the value's nice, 0 not yet, -errno (the child is gone). */
static int has_nice(pid_t pid)
{
	struct attr_head a = { 0 };

	if (syscall(SYS_sched_getattr, pid, &a, sizeof(a), 0) < 0)
		return -errno;
	return a.sched_nice == g.nice;
}

/* The polling's own cost: a spawn's delay is late by up to one poll. */
struct polling {
	uint64_t polls;
	uint64_t ns; /* time spent polling, all spawns */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ULL),
			       .tv_nsec = (long)(ns % 1000000000ULL) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* True when a line of /proc/PID/cgroup puts the cpu controller (or cgroup2) in the class. */
static bool line_in_class(const char *line, size_t len)
{
	const char *c1 = memchr(line, ':', len), *c2, *base;
	size_t clen, blen, nlen = strlen(g.cgroup);
	bool cpu = false;

	if (!c1 || !(c2 = memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line))))
		return false;
	clen = (size_t)(c2 - c1 - 1);
	if (clen == 0)
		cpu = true; /* cgroup2's "0::" line */
	for (const char *w = c1 + 1; w < c2;) {
		const char *e = memchr(w, ',', (size_t)(c2 - w));

		if (!e)
			e = c2;
		if (e - w == 3 && memcmp(w, "cpu", 3) == 0)
			cpu = true;
		w = e + 1;
	}
	base = memrchr(c2 + 1, '/', len - (size_t)(c2 + 1 - line));
	base = base ? base + 1 : c2 + 1;
	blen = len - (size_t)(base - line);
	return cpu && blen == nlen && memcmp(base, g.cgroup, nlen) == 0;
}

/* 1 in the class, 0 not yet, -errno when the file cannot be read (the child is gone). */
static int in_class(int fd)
{
	char buf[4096];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	char *p, *nl;

	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	for (p = buf; p < buf + n; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(buf + n - p));
		if (!nl)
			nl = buf + n;
		if (line_in_class(p, (size_t)(nl - p)))
			return 1;
	}
	return 0;
}

static int open_cgroup_file(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* Polls without pause until the class shows, the child dies or the timeout passes. */
static void poll_child(pid_t pid, struct stamp *st, struct sample *ret, struct polling *pl)
{
	uint64_t start = now_ns(), t = start;
	int fd = open_cgroup_file(pid), r = 0;

	uint64_t first_t = 0;

	ret->seen = false;
	ret->first_seen = false;
	while (fd >= 0 && t - start < g.timeout_ns) {
		if (g.nice_on && !first_t) {
			int n = has_nice(pid);

			if (n < 0)
				break;
			if (n)
				first_t = now_ns();
		}
		r = in_class(fd);
		t = now_ns();
		pl->polls++;
		if (r < 0 || (r == 1 && (first_t || !g.nice_on)))
			break;
	}
	pl->ns += t - start;
	if (fd >= 0)
		close(fd);
	if (!atomic_load(&st->exec_ns))
		return;
	if (r == 1) {
		ret->seen = true;
		ret->delay_ns = t - atomic_load(&st->exec_ns);
	}
	if (first_t) {
		ret->first_seen = true;
		ret->first_ns = first_t - atomic_load(&st->exec_ns);
	}
}

static int spawn_one(struct stamp *st, struct sample *ret, struct polling *pl)
{
	pid_t pid;

	atomic_store(&st->exec_ns, 0);
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* Should execlat be killed mid-spawn, the child must not outlive it. */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		atomic_store(&st->exec_ns, now_ns());
		execv(g.argv[0], g.argv);
		_exit(127);
	}
	poll_child(pid, st, ret, pl);
	kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank: the smallest value with at least p of the samples at or below it. */
static double rank_us(const uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)n + 0.999999);

	if (i < 1)
		i = 1;
	return (double)v[(i > n ? n : i) - 1] / 1000.0;
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: execlat --cgroup NAME [--nice N] [--spawns N] [--timeout-ms N]"
		     " [--gap-ms N] -- /ABS/CMD [ARG...]\n"
		     "Prints: p50_us p99_us max_us seen spawns poll_us: exec to the class (all knobs)\n"
		     "and with --nice: first_p50_us first_p99_us first_max_us first_seen: exec to\n"
		     "the nice N (the first knob)\n");
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cgroup", required_argument, NULL, 'c' },
		{ "nice", required_argument, NULL, 'N' },
		{ "spawns", required_argument, NULL, 'n' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "gap-ms", required_argument, NULL, 'g' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "+h", lo, NULL)) != -1) {
		switch (ch) {
		case 'c':
			g.cgroup = optarg;
			break;
		case 'N':
			g.nice_on = true;
			g.nice = atoi(optarg);
			break;
		case 'n':
			g.spawns = atoi(optarg);
			break;
		case 't':
			g.timeout_ns = (uint64_t)strtoull(optarg, NULL, 10) * 1000000ULL;
			break;
		case 'g':
			g.gap_ns = (uint64_t)strtoull(optarg, NULL, 10) * 1000000ULL;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
	}
	if (!g.cgroup || !*g.cgroup || g.spawns < 1 || !g.timeout_ns || optind >= argc ||
	    argv[optind][0] != '/')
		return -1;
	/* A failed execv would only show as a spawn that never reaches the class. */
	if (access(argv[optind], X_OK) < 0) {
		fprintf(stderr, "execlat: '%s': %s\n", argv[optind], strerror(errno));
		return -1;
	}
	g.argv = argv + optind;
	return 0;
}

int main(int argc, char **argv)
{
	struct polling pl = { 0 };
	struct stamp *st;
	uint64_t *seen, *first;
	size_t n = 0, nf = 0;

	if (parse_args(argc, argv) < 0) {
		usage(stderr);
		return 2;
	}
	st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	seen = calloc((size_t)g.spawns, sizeof(*seen));
	first = calloc((size_t)g.spawns, sizeof(*first));
	if (st == MAP_FAILED || !seen || !first) {
		fprintf(stderr, "execlat: out of memory\n");
		return 1;
	}
	for (int i = 0; i < g.spawns; i++) {
		struct sample s = { 0 };
		int r = spawn_one(st, &s, &pl);

		if (r < 0) {
			fprintf(stderr, "execlat: fork: %s\n", strerror(-r));
			return 1;
		}
		if (s.seen)
			seen[n++] = s.delay_ns;
		if (s.first_seen)
			first[nf++] = s.first_ns;
		sleep_ns(g.gap_ns);
	}
	qsort(seen, n, sizeof(*seen), cmp_u64);
	qsort(first, nf, sizeof(*first), cmp_u64);
	if (n)
		printf("%.1f %.1f %.1f %zu %d %.2f", rank_us(seen, n, 0.50),
		       rank_us(seen, n, 0.99), (double)seen[n - 1] / 1000.0, n, g.spawns,
		       pl.polls ? (double)pl.ns / 1000.0 / (double)pl.polls : 0.0);
	else
		printf("- - - 0 %d -", g.spawns);
	if (g.nice_on && nf)
		printf(" %.1f %.1f %.1f %zu", rank_us(first, nf, 0.50), rank_us(first, nf, 0.99),
		       (double)first[nf - 1] / 1000.0, nf);
	else if (g.nice_on)
		printf(" - - - 0");
	printf("\n");
	free(seen);
	free(first);
	return 0;
}
