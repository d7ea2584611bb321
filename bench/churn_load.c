/*
 * churn_load: the load behind bench/churn and t_churn. It keeps thread holders alive
 * (half of them under the path a rule names), execs churn_child at a fixed rate,
 * alternating the two paths, and can first set off a fork storm from a managed
 * process. It reads every child's report, and prints what they saw as key=value
 * lines; with --list, one line per child, "KIND PID START_TIME OUTCOME" (KIND: match,
 * other, hold-match, hold-other), for checking the daemon's journal. It never changes
 * a scheduling setting itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "churn.h"

extern char **environ;

static struct {
	const char *match, *other;  /* the two copies of churn_child */
	const char *cgroup;         /* the class cgroup the rule's value puts a task in */
	uint64_t slice_ns;          /* and the slice it gives */
	unsigned rate;              /* execs a second */
	unsigned seconds;
	unsigned threads, holders;
	unsigned wait_ms;           /* how long a matching child waits for its setting */
	unsigned hold_ms;           /* how long a non-matching child watches itself */
	unsigned burst;             /* forks in the storm; 0: none */
	pid_t stop;                 /* stopped (SIGSTOP) for the storm, then continued */
	unsigned stopped_execs;     /* execs of each path while it is stopped */
	unsigned max_alive;         /* churn children alive at once, at most */
	const char *list;
	const char *journal;        /* the daemon's: its size when the churn starts is printed */
} o = { .rate = 100, .seconds = 10, .holders = 4, .wait_ms = 5000, .hold_ms = 20,
	.max_alive = 4096 };

/* What this process has: the non-matching children must keep it. */
static struct {
	char cgroup[4096];
	int policy;
	uint64_t slice_ns;
} dflt;

static struct {
	unsigned spawned[2], reports[2], outcome[2][4];
	unsigned deferred, spawn_errors, reused, lost, bad_records;
	unsigned holders_ready, holders_done, threads_started, threads_ok, threads_bad;
	uint32_t *delays;
	size_t ndelays;
	unsigned alive;
	unsigned problems;          /* reports printed on stderr, at most 10 */
	unsigned burst_forks, burst_us;
	bool burst_ready, burst_managed, burst_done;
} st;

static pid_t holders[64];     /* 0 once reaped */
static pid_t burst_pid;
static int rfd = -1, wfd = -1;
static unsigned char *pid_seen;
static long pid_max = 32768;
static FILE *list;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void own_state(void)
{
	char buf[4096], *save = NULL, *v2 = NULL;
	struct { uint32_t size, policy; uint64_t flags; int32_t nice; uint32_t prio;
		 uint64_t runtime, deadline, period; uint32_t umin, umax; } a = { .size = sizeof(a) };
	FILE *f = fopen("/proc/self/cgroup", "re");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	snprintf(dflt.cgroup, sizeof(dflt.cgroup), "/");
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *ctl = strchr(l, ':'), *path;

		if (!ctl || !(path = strchr(ctl + 1, ':')))
			continue;
		*path++ = '\0';
		if (ctl[1] == '\0') {
			v2 = path;
			continue;
		}
		for (char *c = strtok(ctl + 1, ","); c; c = strtok(NULL, ","))
			if (strcmp(c, "cpu") == 0) {
				snprintf(dflt.cgroup, sizeof(dflt.cgroup), "%s", path);
				v2 = NULL;
				goto sched;
			}
	}
	if (v2)
		snprintf(dflt.cgroup, sizeof(dflt.cgroup), "%s", v2);
sched:
	syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0);
	dflt.policy = (int)a.policy;
	dflt.slice_ns = a.runtime;
}

static pid_t spawn(const char *path, char *const *argv)
{
	pid_t pid;
	int r = posix_spawn(&pid, path, NULL, NULL, argv, environ);

	if (r != 0) {
		st.spawn_errors++;
		return -1;
	}
	return pid;
}

static void note_pid(pid_t pid)
{
	if (pid <= 0 || pid >= pid_max || !pid_seen)
		return;
	if (pid_seen[pid])
		st.reused++;
	pid_seen[pid] = 1;
}

static pid_t spawn_churn(bool match)
{
	char fd[16], a1[32], a3[32], a4[32];
	char *argv[8];
	pid_t pid;

	snprintf(fd, sizeof(fd), "%d", wfd);
	argv[0] = "churn_child";
	argv[2] = fd;
	if (match) {
		snprintf(a1, sizeof(a1), "%u", o.wait_ms);
		snprintf(a3, sizeof(a3), "%llu", (unsigned long long)o.slice_ns);
		argv[1] = "wait";
		argv[3] = a1;
		argv[4] = (char *)o.cgroup;
		argv[5] = a3;
		argv[6] = NULL;
	} else {
		snprintf(a1, sizeof(a1), "%u", o.hold_ms);
		snprintf(a3, sizeof(a3), "%d", dflt.policy);
		snprintf(a4, sizeof(a4), "%llu", (unsigned long long)dflt.slice_ns);
		argv[1] = "check";
		argv[3] = a1;
		argv[4] = dflt.cgroup;
		argv[5] = a3;
		argv[6] = a4;
		argv[7] = NULL;
	}
	pid = spawn(match ? o.match : o.other, argv);
	if (pid > 0) {
		st.spawned[!match]++;
		st.alive++;
		note_pid(pid);
	}
	return pid;
}

static void on_record(const struct churn_rec *r)
{
	int k;

	if (r->magic != CHURN_MAGIC) {
		st.bad_records++;
		return;
	}
	switch (r->kind) {
	case CHURN_MATCH:
	case CHURN_OTHER:
		k = r->kind == CHURN_OTHER;
		st.reports[k]++;
		st.outcome[k][r->outcome & 3]++;
		if (!k && r->outcome == CHURN_OK)
			st.delays[st.ndelays++] = r->delay_us;
		if (list)
			fprintf(list, "%s %d %llu %d\n", k ? "other" : "match", r->pid,
				(unsigned long long)r->start_time, r->outcome);
		if (r->outcome != CHURN_OK && ++st.problems <= 10)
			fprintf(stderr, "churn: %s child %d: %s (cgroup policy %d slice %llu)\n",
				k ? "non-matching" : "matching", r->pid,
				r->outcome == CHURN_MISSED ? "never got its setting" :
				r->outcome == CHURN_TOUCHED ? "was changed" : "wrong setting",
				r->policy, (unsigned long long)r->slice_ns);
		break;
	case CHURN_HOLD_READY:
		st.holders_ready++;
		st.threads_started += r->nthreads;
		for (unsigned i = 0; list && i < o.holders; i++)
			if (holders[i] == r->pid)
				fprintf(list, "hold-%s %d %llu 0\n", i % 2 == 0 ? "match" : "other",
					r->pid, (unsigned long long)r->start_time);
		break;
	case CHURN_HOLD_DONE:
		st.holders_done++;
		st.threads_ok += r->nthreads;
		st.threads_bad += r->nbad;
		if (r->nbad)
			fprintf(stderr, "churn: holder %d: %u of its threads wrong\n", r->pid, r->nbad);
		break;
	case CHURN_BURST_READY:
		st.burst_ready = true;
		st.burst_managed = r->outcome == CHURN_OK;
		break;
	case CHURN_BURST:
		st.burst_forks = r->nthreads;
		st.burst_us = r->delay_us;
		st.burst_done = true;
		break;
	default:
		st.bad_records++;
	}
}

static void drain(void)
{
	struct churn_rec r;

	while (read(rfd, &r, sizeof(r)) == (ssize_t)sizeof(r))
		on_record(&r);
}

/* Reaps exited children; those reaped that were churn children leave st.alive. */
static void reap(void)
{
	int status;
	pid_t p;

	while ((p = waitpid(-1, &status, WNOHANG)) > 0) {
		bool other = p == burst_pid;

		if (other)
			burst_pid = 0;
		for (unsigned i = 0; i < o.holders; i++)
			if (holders[i] == p) {
				holders[i] = 0;
				other = true;
			}
		if (!other && st.alive)
			st.alive--;
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			st.lost++;
	}
}

/* Waits until cond() holds or timeout_ms passes, draining and reaping. */
static bool wait_until(bool (*cond)(void), unsigned timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000ULL;

	while (!cond() && now_ns() < deadline) {
		drain();
		reap();
		usleep(2000);
	}
	drain();
	return cond();
}

static bool burst_over(void) { return st.burst_done; }
static bool holders_ready(void) { return st.holders_ready >= o.holders; }
static bool holders_done(void) { return st.holders_done >= o.holders; }
static bool churn_over(void) { return st.alive == 0; }

static void start_holders(void);

static bool burst_ready(void) { return st.burst_ready; }

/*
 * A fork storm from a managed process; with o.stop, the daemon is stopped for it, as a
 * descheduled daemon would be; the thread holders start meanwhile, and execs are made
 * after it before the daemon goes on: their events queue behind the storm's, or are
 * lost with them.
 */
static void run_burst(void)
{
	char fd[16], n[32];
	char *argv[] = { "churn_child", "burst", fd, n, (char *)o.cgroup, o.stop ? "1" : "0", NULL };

	snprintf(fd, sizeof(fd), "%d", wfd);
	snprintf(n, sizeof(n), "%u", o.burst);
	burst_pid = spawn(o.match, argv);
	if (burst_pid <= 0)
		return;
	if (!wait_until(burst_ready, 60000))
		fprintf(stderr, "churn: the storm's parent did not start\n");
	if (o.stop) {
		kill(o.stop, SIGSTOP);
		/* The holders' threads too: events that ask real work of the daemon. */
		if (o.holders)
			start_holders();
		kill(burst_pid, SIGUSR1);
	}
	if (!wait_until(burst_over, 120000))
		fprintf(stderr, "churn: the fork storm did not end in 2 minutes\n");
	if (o.stop) {
		/* Their events queue behind the storm's, or are lost with them. */
		for (unsigned i = 0; i < 2 * o.stopped_execs; i++)
			spawn_churn(i % 2 == 0);
		usleep(200000);
		kill(o.stop, SIGCONT);
	}
	/* reap() may have had it already, and set burst_pid to 0: waitpid(0) would take any. */
	if (burst_pid > 0)
		waitpid(burst_pid, NULL, 0);
	burst_pid = 0;
	wait_until(churn_over, o.wait_ms + 10000);
}

static void start_holders(void)
{
	char fd[16], n[32], pol[16], sl[32], dsl[32];

	snprintf(fd, sizeof(fd), "%d", wfd);
	snprintf(n, sizeof(n), "%u", o.threads / o.holders);
	snprintf(pol, sizeof(pol), "%d", dflt.policy);
	snprintf(sl, sizeof(sl), "%llu", (unsigned long long)o.slice_ns);
	snprintf(dsl, sizeof(dsl), "%llu", (unsigned long long)dflt.slice_ns);
	for (unsigned i = 0; i < o.holders; i++) {
		bool match = i % 2 == 0;
		char *argv[] = { "churn_child", "hold", fd, n, match ? (char *)o.cgroup : dflt.cgroup,
				 match ? "0" : pol, match ? sl : dsl, NULL };

		holders[i] = spawn(match ? o.match : o.other, argv);
	}
	if (!wait_until(holders_ready, 60000))
		fprintf(stderr, "churn: only %u of %u holders started\n", st.holders_ready,
			o.holders);
}

static void stop_holders(void)
{
	for (unsigned i = 0; i < o.holders; i++)
		if (holders[i] > 0)
			kill(holders[i], SIGTERM);
	if (!wait_until(holders_done, 60000))
		fprintf(stderr, "churn: only %u of %u holders checked their threads\n",
			st.holders_done, o.holders);
	for (unsigned i = 0; i < o.holders; i++)
		if (holders[i] > 0) {
			kill(holders[i], SIGKILL);
			waitpid(holders[i], NULL, 0);
		}
}

static void churn(void)
{
	uint64_t t0 = now_ns(), period = 1000000000ULL / o.rate, end = t0 + o.seconds * 1000000000ULL;
	uint64_t next = t0;
	unsigned i = 0;

	while (next < end) {
		uint64_t now = now_ns();

		if (now < next) {
			struct timespec ts = { .tv_sec = (time_t)(next / 1000000000ULL),
					       .tv_nsec = (long)(next % 1000000000ULL) };

			drain();
			reap();
			clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
			continue;
		}
		if (st.alive >= o.max_alive)
			st.deferred++;
		else
			spawn_churn(i++ % 2 == 0);
		next += period;
		if (i % 64 == 0) {
			drain();
			reap();
		}
	}
	printf("churn_seconds=%.2f\n", (double)(now_ns() - t0) / 1e9);
	wait_until(churn_over, o.wait_ms + 10000);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static void summary(void)
{
	static const char *const kind[] = { "match", "other" };
	uint32_t *d = st.delays;
	size_t n = st.ndelays;

	for (int k = 0; k < 2; k++)
		printf("%s_spawned=%u\n%s_reports=%u\n%s_ok=%u\n%s_missed=%u\n%s_wrong=%u\n"
		       "%s_touched=%u\n",
		       kind[k], st.spawned[k], kind[k], st.reports[k], kind[k], st.outcome[k][0],
		       kind[k], st.outcome[k][1], kind[k], st.outcome[k][2], kind[k],
		       st.outcome[k][3]);
	qsort(d, n, sizeof(*d), cmp_u32);
	printf("delay_us_p50=%u\ndelay_us_p99=%u\ndelay_us_max=%u\n", n ? d[n / 2] : 0,
	       n ? d[n * 99 / 100] : 0, n ? d[n - 1] : 0);
	printf("deferred=%u\nspawn_errors=%u\nreused_pids=%u\nlost=%u\nbad_records=%u\n",
	       st.deferred, st.spawn_errors, st.reused, st.lost, st.bad_records);
	printf("holders_ready=%u\nholders_done=%u\nthreads_started=%u\nthreads_ok=%u\n"
	       "threads_bad=%u\n", st.holders_ready, st.holders_done, st.threads_started,
	       st.threads_ok, st.threads_bad);
	printf("burst_managed=%d\nburst_forks=%u\nburst_ms=%u\n", st.burst_managed,
	       st.burst_forks, st.burst_us / 1000);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: churn_load --match PATH --other PATH --cgroup CG --slice NS [--rate N]\n"
		"       [--seconds N] [--threads N] [--holders N] [--wait-ms N] [--hold-ms N]\n"
		"       [--burst N [--stop PID --stopped-execs N]] [--max-alive N] [--list FILE]\n"
		"       [--journal FILE]\n");
	exit(2);
}

static void parse(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "match", 1, 0, 'm' },   { "other", 1, 0, 'o' },   { "cgroup", 1, 0, 'c' },
		{ "slice", 1, 0, 's' },   { "rate", 1, 0, 'r' },    { "seconds", 1, 0, 't' },
		{ "threads", 1, 0, 'n' }, { "holders", 1, 0, 'H' }, { "wait-ms", 1, 0, 'w' },
		{ "hold-ms", 1, 0, 'h' }, { "burst", 1, 0, 'b' },   { "max-alive", 1, 0, 'a' },
		{ "list", 1, 0, 'l' },    { "stop", 1, 0, 'S' },    { "stopped-execs", 1, 0, 'x' },
		{ "journal", 1, 0, 'j' }, { 0, 0, 0, 0 },
	};
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		unsigned long v = optarg ? strtoul(optarg, NULL, 10) : 0;

		switch (c) {
		case 'm': o.match = optarg; break;
		case 'o': o.other = optarg; break;
		case 'c': o.cgroup = optarg; break;
		case 's': o.slice_ns = v; break;
		case 'r': o.rate = (unsigned)v; break;
		case 't': o.seconds = (unsigned)v; break;
		case 'n': o.threads = (unsigned)v; break;
		case 'H': o.holders = (unsigned)v; break;
		case 'w': o.wait_ms = (unsigned)v; break;
		case 'h': o.hold_ms = (unsigned)v; break;
		case 'b': o.burst = (unsigned)v; break;
		case 'a': o.max_alive = (unsigned)v; break;
		case 'l': o.list = optarg; break;
		case 'S': o.stop = (pid_t)v; break;
		case 'x': o.stopped_execs = (unsigned)v; break;
		case 'j': o.journal = optarg; break;
		default: usage();
		}
	}
	if (!o.match || !o.other || !o.cgroup || !o.rate || !o.holders || optind != argc)
		usage();
	if (!o.threads)
		o.holders = 0;
}

int main(int argc, char **argv)
{
	struct stat jst;
	int fds[2];
	FILE *f;

	parse(argc, argv);
	if (o.holders > 64)
		o.holders = 64;
	own_state();
	if ((f = fopen("/proc/sys/kernel/pid_max", "re"))) {
		if (fscanf(f, "%ld", &pid_max) != 1)
			pid_max = 32768;
		fclose(f);
	}
	pid_seen = calloc((size_t)pid_max, 1);
	st.delays = calloc((size_t)o.rate * o.seconds + o.stopped_execs + 1, sizeof(*st.delays));
	if (pipe2(fds, O_CLOEXEC) < 0 || !st.delays) {
		perror("churn_load");
		return 1;
	}
	rfd = fds[0];
	wfd = fds[1];
	/* The children write to it after exec; this end only reads, without blocking. */
	fcntl(wfd, F_SETFD, 0);
	fcntl(rfd, F_SETFL, O_NONBLOCK);
	fcntl(rfd, F_SETPIPE_SZ, 1 << 20);
	if (o.list && !(list = fopen(o.list, "we"))) {
		perror(o.list);
		return 1;
	}
	printf("default_cgroup=%s\ndefault_policy=%d\ndefault_slice_ns=%llu\n", dflt.cgroup,
	       dflt.policy, (unsigned long long)dflt.slice_ns);
	fflush(stdout);
	if (o.burst)
		run_burst();
	if (o.journal && stat(o.journal, &jst) == 0)
		printf("journal_offset=%lld\n", (long long)jst.st_size);
	if (o.holders && !st.holders_ready)
		start_holders();
	if (o.seconds)
		churn();
	if (o.holders)
		stop_holders();
	drain();
	summary();
	if (list)
		fclose(list);
	return 0;
}
