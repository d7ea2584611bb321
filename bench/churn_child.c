/*
 * churn_child: the program bench/churn_load execs again and again, under two paths, only
 * one of which a rule names. Each copy checks its own scheduling state (its cpu cgroup,
 * policy and slice, read from /proc/self and sched_getattr) and reports what it saw as
 * one fixed-size record on an inherited pipe: a write under PIPE_BUF is atomic, so the
 * records of thousands of children never interleave. It never changes its own state.
 *
 *   churn_child wait  FD TIMEOUT_MS CGROUP SLICE_NS   a rule should give it CGROUP:
 *       polls until it has it (or TIMEOUT_MS passes), then checks policy and slice
 *   churn_child check FD HOLD_MS CGROUP POLICY SLICE_NS   no rule names it: for
 *       HOLD_MS it checks that it keeps what its parent had
 *   churn_child hold  FD NTHREADS CGROUP POLICY SLICE_NS   starts NTHREADS threads,
 *       reports ready, and at SIGTERM checks every thread against the three values
 *   churn_child burst FD NFORKS CGROUP HOLD   waits for CGROUP, reports ready, (with
 *       HOLD 1, waits for SIGUSR1,) then forks NFORKS children that exit at once: a fork
 *       storm from a managed process
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "churn.h"

struct sattr { /* the kernel's struct sched_attr, VER1 */
	uint32_t size, policy;
	uint64_t flags;
	int32_t nice;
	uint32_t priority;
	uint64_t runtime, deadline, period;
	uint32_t util_min, util_max;
};

static int report_fd = -1;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void nap_us(long us)
{
	struct timespec ts = { .tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* Reads a whole small file into buf; length or -1. */
static ssize_t slurp(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	size_t n;

	if (!f)
		return -1;
	n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = '\0';
	return (ssize_t)n;
}

/* The path of the cpu controller's line (or cgroup2's "0::" line) of a cgroup file. */
static int cpu_cgroup(const char *file, char *ret, size_t size)
{
	char buf[4096], *save = NULL, *v2 = NULL;

	if (slurp(file, buf, sizeof(buf)) < 0)
		return -1;
	for (char *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *ctl = strchr(l, ':'), *path;

		if (!ctl || !(path = strchr(ctl + 1, ':')))
			continue;
		*path++ = '\0';
		ctl++;
		if (*ctl == '\0') {
			v2 = path;
			continue;
		}
		for (char *c = strtok(ctl, ","); c; c = strtok(NULL, ","))
			if (strcmp(c, "cpu") == 0) {
				snprintf(ret, size, "%s", path);
				return 0;
			}
	}
	if (!v2)
		return -1;
	snprintf(ret, size, "%s", v2);
	return 0;
}

static int getattr(pid_t tid, struct sattr *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->size = sizeof(*ret);
	return (int)syscall(SYS_sched_getattr, tid, ret, sizeof(*ret), 0);
}

static uint64_t start_time(void)
{
	char buf[1024], *p;
	unsigned long long st = 0;

	if (slurp("/proc/self/stat", buf, sizeof(buf)) < 0 || !(p = strrchr(buf, ')')))
		return 0;
	/* Field 22, the 20th after the ')'. */
	sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
		      "%*d %llu", &st);
	return st;
}

static void send_rec(struct churn_rec *r)
{
	r->magic = CHURN_MAGIC;
	r->pid = getpid();
	if (!r->start_time)
		r->start_time = start_time();
	if (write(report_fd, r, sizeof(*r)) != (ssize_t)sizeof(*r))
		_exit(3);
}

/* The task's state against what it should be: 0 when all three match. */
static int state_is(pid_t tid, const char *cgfile, const char *cg, int policy, uint64_t slice,
		    struct churn_rec *r)
{
	char have[4096];
	struct sattr a;

	if (cpu_cgroup(cgfile, have, sizeof(have)) < 0 || getattr(tid, &a) < 0)
		return -1;
	r->policy = (int32_t)a.policy;
	r->slice_ns = a.runtime;
	return strcmp(have, cg) == 0 && (policy < 0 || (int)a.policy == policy) &&
			       (!slice || a.runtime == slice)
		       ? 0
		       : 1;
}

static int do_wait(char **argv)
{
	uint64_t t0 = now_ns(), deadline = t0 + strtoull(argv[0], NULL, 10) * 1000000ULL;
	const char *cg = argv[1];
	uint64_t slice = strtoull(argv[2], NULL, 10);
	struct churn_rec r = { .kind = CHURN_MATCH };
	char have[4096];
	long nap = 100;

	r.start_time = start_time();
	/* Often at first, when the daemon should act; then less, not to load the machine. */
	while (cpu_cgroup("/proc/self/cgroup", have, sizeof(have)) == 0 && strcmp(have, cg) != 0) {
		if (now_ns() >= deadline) {
			r.outcome = CHURN_MISSED;
			break;
		}
		nap_us(nap);
		if (nap < 10000)
			nap += nap / 8;
	}
	r.delay_us = (uint32_t)((now_ns() - t0) / 1000);
	/* The daemon writes policy and slice before it moves the task: both are there now. */
	if (state_is(0, "/proc/self/cgroup", cg, 0, slice, &r) != 0 && r.outcome != CHURN_MISSED)
		r.outcome = CHURN_WRONG;
	send_rec(&r);
	return 0;
}

static int do_check(char **argv)
{
	uint64_t deadline = now_ns() + strtoull(argv[0], NULL, 10) * 1000000ULL;
	int policy = atoi(argv[2]);
	uint64_t slice = strtoull(argv[3], NULL, 10);
	struct churn_rec r = { .kind = CHURN_OTHER, .outcome = CHURN_OK };

	r.start_time = start_time();
	do {
		if (state_is(0, "/proc/self/cgroup", argv[1], policy, slice, &r) != 0) {
			r.outcome = CHURN_TOUCHED;
			break;
		}
		nap_us(1000);
	} while (now_ns() < deadline);
	send_rec(&r);
	return 0;
}

static void *idle_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* Every thread of the process, the main one too, against what it should have. */
static void check_threads(const char *cg, int policy, uint64_t slice, struct churn_rec *ret)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	char file[128];

	while (d && (de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		struct churn_rec tmp;

		if (tid <= 0)
			continue;
		snprintf(file, sizeof(file), "/proc/self/task/%d/cgroup", (int)tid);
		if (state_is(tid, file, cg, policy, slice, &tmp) == 0)
			ret->nthreads++;
		else
			ret->nbad++;
	}
	if (d)
		closedir(d);
}

static int do_hold(char **argv)
{
	int n = atoi(argv[0]), policy = atoi(argv[2]), sig;
	uint64_t slice = strtoull(argv[3], NULL, 10);
	struct churn_rec r = { .kind = CHURN_HOLD_READY };
	struct churn_rec done = { .kind = CHURN_HOLD_DONE, .outcome = CHURN_OK };
	pthread_attr_t at;
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 * 1024);
	for (int i = 0; i < n; i++) {
		pthread_t t;

		if (pthread_create(&t, &at, idle_thread, NULL) != 0)
			break;
		r.nthreads++;
	}
	send_rec(&r);
	sigwait(&set, &sig);
	check_threads(argv[1], policy, slice, &done);
	if (done.nbad)
		done.outcome = CHURN_WRONG;
	send_rec(&done);
	return 0;
}

static int do_burst(char **argv)
{
	long n = atol(argv[0]);
	uint64_t t0 = now_ns(), deadline = t0 + 30 * 1000000000ULL;
	struct churn_rec r = { .kind = CHURN_BURST_READY, .outcome = CHURN_OK };
	char have[4096];
	sigset_t set;
	long live = 0;
	int sig;

	/* Managed first, so that every fork below is work for the daemon. */
	while (cpu_cgroup("/proc/self/cgroup", have, sizeof(have)) == 0 &&
	       strcmp(have, argv[1]) != 0 && now_ns() < deadline)
		nap_us(200);
	if (strcmp(have, argv[1]) != 0)
		r.outcome = CHURN_MISSED;
	/* With a go-ahead asked for, the parent says when (it may stop the daemon first). */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);
	send_rec(&r);
	if (atoi(argv[2]))
		sigwait(&set, &sig);
	r.kind = CHURN_BURST;
	t0 = now_ns();
	for (long i = 0; i < n; i++) {
		pid_t p = fork();

		if (p == 0)
			_exit(0);
		if (p > 0) {
			r.nthreads++;
			live++;
		}
		while (live > 0 && (live >= 512 || p < 0) && waitpid(-1, NULL, 0) > 0)
			live--;
	}
	while (live > 0 && waitpid(-1, NULL, 0) > 0)
		live--;
	r.delay_us = (uint32_t)((now_ns() - t0) / 1000);
	send_rec(&r);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int nargs;
		int (*fn)(char **argv);
	} modes[] = {
		{ "wait", 3, do_wait },
		{ "check", 4, do_check },
		{ "hold", 4, do_hold },
		{ "burst", 3, do_burst },
	};

	for (size_t i = 0; argc >= 3 && i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (strcmp(argv[1], modes[i].name) != 0)
			continue;
		if (argc != 3 + modes[i].nargs)
			break;
		report_fd = atoi(argv[2]);
		return modes[i].fn(argv + 3);
	}
	fprintf(stderr, "usage: churn_child wait|check|hold|burst FD ARGS... (see the source)\n");
	return 2;
}
