/*
 * shareload: a shared-data workload for bench/placement-ab. P processes of T threads
 * each; the threads of one process share a buffer of their own: every thread sweeps
 * all of it, reading each cache line and writing the lines it owns (line k belongs to
 * thread k mod T), so what one thread writes the others read on their next sweep. With
 * --pingpong a process is instead a pair of threads passing a token through two pipes,
 * each touching the buffer (a small one) at every hop. After a warm-up the parent
 * counts operations over a window and prints how many a second.
 * It only measures; it never changes a scheduling setting or an affinity.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"

#define LINE_BYTES 64
#define MAX_PROCS 1024
#define MAX_THREADS 1024
#define MAX_KIB (1024L * 1024) /* 1 GiB a process */
#define SWEEP_CHUNK 1024       /* lines between two updates of a thread's counter */
#define READY_TIMEOUT_NS (10 * 1000000000ULL)

/* One thread's count, alone in its cache line so that counting costs no sharing. */
struct counter {
	_Atomic uint64_t ops; /* lines visited (sweep) or round trips (pingpong) */
	char pad[LINE_BYTES - sizeof(uint64_t)];
};

/* Shared with the children (MAP_SHARED, made before the forks). */
struct shared {
	_Atomic long ready; /* threads running, all processes together */
	struct counter c[]; /* procs * threads */
};

static struct {
	long procs;   /* processes */
	long threads; /* threads a process (pingpong: 2) */
	long kib;     /* buffer a process, KiB; 0: the mode's default */
	long warmup_s;
	long seconds;
	bool pingpong;
} opt = { .procs = 1, .threads = 2, .warmup_s = 1, .seconds = 5 };

/* What a thread of a child works on. */
struct work {
	uint64_t *buf;          /* the process's buffer, one word used a line */
	size_t nlines;          /* lines in buf */
	long self;              /* this thread's index in its process */
	struct counter *ctr;    /* this thread's count */
	int rx, tx;             /* pingpong: the pipe ends it reads and writes */
	struct shared *sh;
};

static pid_t pids[MAX_PROCS];
static long npids;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: shareload [--procs P] [--threads T] [--kib K] [--warmup W] [--seconds S]\n"
		"                 [--pingpong]\n"
		"P processes of T threads; a process's threads share a buffer of K KiB: each\n"
		"thread sweeps all of it, reading every cache line and writing its own (line k\n"
		"is thread k mod T's).\n"
		"  -p, --procs P     processes (default 1, at most %d)\n"
		"  -t, --threads T   threads a process (default 2, at most %d)\n"
		"  -k, --kib K       buffer a process, KiB (default 4096; --pingpong 16)\n"
		"  -w, --warmup W    seconds run before the count starts (default 1)\n"
		"  -s, --seconds S   seconds counted (default 5)\n"
		"      --pingpong    a process is a pair of threads passing a token through two\n"
		"                    pipes, each reading and writing the whole buffer at every\n"
		"                    hop (T is 2)\n"
		"  -h, --help        this help\n"
		"Prints one line once the window is over:\n"
		"  OPS_PER_SECOND OPS SECONDS\n"
		"an operation being one cache line visited by one thread (pingpong: one round\n"
		"trip of a pair), all processes together. Exit 0, 1 when a process failed or a\n"
		"signal stopped it, 2 on bad arguments.\n",
		MAX_PROCS, MAX_THREADS);
}

/* A whole number in [min, max], else -1 (after a message). */
static long parse_num(const char *name, const char *s, long min, long max)
{
	return bench_parse_num("shareload", name, s, min, max);
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "procs", required_argument, NULL, 'p' },
		{ "threads", required_argument, NULL, 't' },
		{ "kib", required_argument, NULL, 'k' },
		{ "warmup", required_argument, NULL, 'w' },
		{ "seconds", required_argument, NULL, 's' },
		{ "pingpong", no_argument, NULL, 'P' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool threads_given = false;
	int ch;

	while ((ch = getopt_long(argc, argv, "p:t:k:w:s:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'p':
			opt.procs = parse_num("procs", optarg, 1, MAX_PROCS);
			break;
		case 't':
			opt.threads = parse_num("threads", optarg, 1, MAX_THREADS);
			threads_given = true;
			break;
		case 'k':
			opt.kib = parse_num("kib", optarg, 4, MAX_KIB);
			break;
		case 'w':
			opt.warmup_s = parse_num("warmup", optarg, 0, 3600);
			break;
		case 's':
			opt.seconds = parse_num("seconds", optarg, 1, 86400);
			break;
		case 'P':
			opt.pingpong = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			usage(stderr);
			return -1;
		}
		if (opt.procs < 0 || opt.threads < 0 || opt.kib < 0 || opt.warmup_s < 0 ||
		    opt.seconds < 0)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "shareload: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	if (opt.pingpong && threads_given && opt.threads != 2) {
		fprintf(stderr, "shareload: --pingpong: a process is a pair: --threads 2\n");
		return -1;
	}
	if (opt.pingpong)
		opt.threads = 2;
	if (!opt.kib)
		opt.kib = opt.pingpong ? 16 : 4096;
	return 0;
}

/* ---- a child's threads ---- */

/*
 * One pass over the buffer: every line read, its own lines written. Relaxed atomics:
 * other threads write the lines it reads, and on x86 these are plain moves.
 */
static uint64_t sweep_once(const struct work *w)
{
	uint64_t sum = 0;
	long owner = 0;

	for (size_t k = 0; k < w->nlines; k++) {
		uint64_t *p = &w->buf[k * (LINE_BYTES / sizeof(uint64_t))];
		uint64_t v = __atomic_load_n(p, __ATOMIC_RELAXED);

		sum += v;
		if (owner == w->self)
			__atomic_store_n(p, v + 1, __ATOMIC_RELAXED);
		if (++owner == opt.threads)
			owner = 0;
		if ((k + 1) % SWEEP_CHUNK == 0 || k + 1 == w->nlines)
			atomic_fetch_add_explicit(&w->ctr->ops, k % SWEEP_CHUNK + 1,
						  memory_order_relaxed);
	}
	return sum;
}

static _Noreturn void sweep_forever(const struct work *w)
{
	volatile uint64_t sink = 0;

	for (;;)
		sink = sink + sweep_once(w);
}

/* A byte through fd, or the child ends: its pair is gone or a pipe failed. */
static void hop_read(int fd)
{
	char c;
	ssize_t n;

	while ((n = read(fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		_exit(1);
}

static void hop_write(int fd)
{
	char c = 't';
	ssize_t n;

	while ((n = write(fd, &c, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		_exit(1);
}

/* Every line of the buffer read and written: what a hop hands the other thread. */
static void touch(const struct work *w)
{
	for (size_t k = 0; k < w->nlines; k++) {
		uint64_t *p = &w->buf[k * (LINE_BYTES / sizeof(uint64_t))];

		__atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + 1, __ATOMIC_RELAXED);
	}
}

/* Thread 0 starts each round trip and counts it; thread 1 answers. */
static _Noreturn void pingpong_forever(const struct work *w)
{
	for (;;) {
		if (w->self == 0) {
			hop_write(w->tx);
			hop_read(w->rx);
			touch(w);
			atomic_fetch_add_explicit(&w->ctr->ops, 1, memory_order_relaxed);
		} else {
			hop_read(w->rx);
			touch(w);
			hop_write(w->tx);
		}
	}
}

static void *thread_main(void *arg)
{
	const struct work *w = arg;

	atomic_fetch_add(&w->sh->ready, 1);
	if (opt.pingpong)
		pingpong_forever(w);
	sweep_forever(w);
}

/* The process's buffer, faulted in now so that its resident set is whole from the start. */
static uint64_t *make_buffer(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
	memset(p, 0, bytes);
	return p;
}

/* The two pipes of a pair: thread 0 writes a[1] and reads b[0], thread 1 the reverse. */
static int pair_pipes(struct work *w)
{
	int a[2], b[2];

	if (pipe(a) < 0)
		return -errno;
	if (pipe(b) < 0) {
		close(a[0]);
		close(a[1]);
		return -errno;
	}
	w[0].tx = a[1];
	w[0].rx = b[0];
	w[1].tx = b[1];
	w[1].rx = a[0];
	return 0;
}

static _Noreturn void child_fail(long proc, const char *what, int err)
{
	fprintf(stderr, "shareload: process %ld: %s: %s\n", proc, what, strerror(err));
	_exit(1);
}

/* A child: its buffer and threads; its first thread is the process's own. */
static _Noreturn void child_main(struct shared *sh, long proc, pid_t parent)
{
	size_t bytes = (size_t)opt.kib * 1024;
	struct work *w = calloc((size_t)opt.threads, sizeof(*w));
	uint64_t *buf = make_buffer(bytes);
	sigset_t none;
	pthread_t th;
	int r;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL); /* the parent's block is not the child's */
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1); /* the parent died before the line above */
	if (!w || !buf)
		child_fail(proc, "buffer", ENOMEM);
	for (long t = 0; t < opt.threads; t++)
		w[t] = (struct work){ .buf = buf, .nlines = bytes / LINE_BYTES, .self = t,
				      .ctr = &sh->c[proc * opt.threads + t], .sh = sh };
	if (opt.pingpong && (r = pair_pipes(w)) < 0)
		child_fail(proc, "pipe", -r);
	for (long t = 1; t < opt.threads; t++)
		if ((r = pthread_create(&th, NULL, thread_main, &w[t])) != 0)
			child_fail(proc, "thread", r);
	thread_main(&w[0]);
	_exit(1);
}

/* ---- the parent ---- */

static void kill_children(void)
{
	for (long i = 0; i < npids; i++)
		kill(pids[i], SIGKILL);
	for (long i = 0; i < npids; i++)
		while (waitpid(pids[i], NULL, 0) < 0 && errno == EINTR)
			;
	npids = 0;
}

/* A child that has exited already, or 0. */
static pid_t child_gone(void)
{
	int status;
	pid_t pid = waitpid(-1, &status, WNOHANG);

	return pid > 0 ? pid : 0;
}

/* Sleeps ns; -EINTR when SIGTERM, SIGINT or SIGHUP (blocked, in mask) came first. */
static int nap(const sigset_t *mask, uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	for (;;) {
		uint64_t now = now_ns(), left = end > now ? end - now : 0;
		struct timespec ts = { .tv_sec = (time_t)(left / 1000000000ULL),
				       .tv_nsec = (long)(left % 1000000000ULL) };

		if (!left)
			return 0;
		if (sigtimedwait(mask, NULL, &ts) >= 0)
			return -EINTR;
		if (errno == EAGAIN)
			return 0;
	}
}

static uint64_t total_ops(const struct shared *sh)
{
	uint64_t sum = 0;

	for (long i = 0; i < opt.procs * opt.threads; i++)
		sum += atomic_load_explicit(&sh->c[i].ops, memory_order_relaxed);
	return sum;
}

/* Until every thread of every child runs; -EINTR (a signal), -ECHILD or -ETIMEDOUT. */
static int wait_ready(const struct shared *sh, const sigset_t *mask)
{
	uint64_t end = now_ns() + READY_TIMEOUT_NS;
	int r;

	while (atomic_load(&sh->ready) < opt.procs * opt.threads) {
		if (child_gone())
			return -ECHILD;
		if (now_ns() > end)
			return -ETIMEDOUT;
		if ((r = nap(mask, 1000000)) < 0)
			return r;
	}
	return 0;
}

static int start_children(struct shared *sh)
{
	pid_t parent = getpid();

	for (long p = 0; p < opt.procs; p++) {
		pid_t pid = fork();

		if (pid < 0)
			return -errno;
		if (pid == 0)
			child_main(sh, p, parent);
		pids[npids++] = pid;
	}
	return 0;
}

/* The warm-up, then the window; ops counted and seconds taken go to ret_*. */
static int measure(const struct shared *sh, const sigset_t *mask, uint64_t *ret_ops,
		   double *ret_s)
{
	uint64_t c0, c1, t0, t1;
	int r;

	if ((r = nap(mask, (uint64_t)opt.warmup_s * 1000000000ULL)) < 0)
		return r;
	c0 = total_ops(sh);
	t0 = now_ns();
	if ((r = nap(mask, (uint64_t)opt.seconds * 1000000000ULL)) < 0)
		return r;
	c1 = total_ops(sh);
	t1 = now_ns();
	if (child_gone())
		return -ECHILD;
	*ret_ops = c1 - c0;
	*ret_s = (double)(t1 - t0) / 1e9;
	return 0;
}

static const char *why(int r)
{
	switch (r) {
	case -EINTR:
		return "stopped by a signal";
	case -ECHILD:
		return "a process exited early";
	case -ETIMEDOUT:
		return "the threads did not all start within 10 s";
	default:
		return strerror(-r);
	}
}

int main(int argc, char **argv)
{
	size_t ncounters, bytes;
	struct shared *sh;
	uint64_t ops = 0;
	double secs = 0;
	sigset_t mask;
	int r;

	if (parse_args(argc, argv) < 0)
		return 2;
	ncounters = (size_t)(opt.procs * opt.threads);
	bytes = sizeof(*sh) + ncounters * sizeof(struct counter);
	sh = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED) {
		fprintf(stderr, "shareload: counters: %s\n", strerror(errno));
		return 1;
	}
	/* Blocked before the forks, so that only nap() sees them; children unblock. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	r = start_children(sh);
	if (r == 0)
		r = wait_ready(sh, &mask);
	if (r == 0)
		r = measure(sh, &mask, &ops, &secs);
	kill_children();
	if (r < 0) {
		fprintf(stderr, "shareload: %s\n", why(r));
		return 1;
	}
	printf("%.0f %llu %.3f\n", (double)ops / secs, (unsigned long long)ops, secs);
	return 0;
}
