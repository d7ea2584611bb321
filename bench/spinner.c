/*
 * spinner: load for the benchmarks. N threads that sleep and M that spin on any CPU,
 * for S seconds or until SIGTERM/SIGINT. It never pins a thread: placement is the
 * kernel's (and the daemon's) to choose.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* Sleepers only ever sit in pause(): a small stack keeps 2,000 of them cheap. */
#define SLEEPER_STACK_BYTES (64 * 1024)

struct opts {
	long sleepers; /* threads blocked in pause() */
	long busy;     /* threads spinning on the CPU */
	long seconds;  /* lifetime; 0 = until a signal */
};

static pthread_barrier_t start_barrier;
static atomic_bool stopping;

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: spinner --sleepers N --busy M [--seconds S]\n"
		"Start N sleeping threads and M busy ones (affinity: every CPU), print\n"
		"\"PID ready\" once all of them run, and exit after S seconds (default: never)\n"
		"or on SIGTERM or SIGINT.\n");
}

static int parse_count(const char *name, const char *s, long max, long *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 0 || v > max) {
		fprintf(stderr, "spinner: --%s: '%s' is not a number in 0..%ld\n", name, s, max);
		return -EINVAL;
	}
	*ret = v;
	return 0;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	static const struct option long_opts[] = {
		{ "sleepers", required_argument, NULL, 's' },
		{ "busy", required_argument, NULL, 'b' },
		{ "seconds", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, r = 0;

	while ((ch = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		switch (ch) {
		case 's':
			r = parse_count("sleepers", optarg, 100000, &o->sleepers);
			break;
		case 'b':
			r = parse_count("busy", optarg, 1024, &o->busy);
			break;
		case 't':
			r = parse_count("seconds", optarg, INT_MAX, &o->seconds);
			break;
		case 'h':
			usage(stdout);
			exit(EXIT_SUCCESS);
		default:
			usage(stderr);
			return -EINVAL;
		}
		if (r < 0)
			return r;
	}
	if (optind < argc) {
		fprintf(stderr, "spinner: unexpected argument '%s'\n", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

static void *sleeper(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start_barrier);
	for (;;)
		pause();
	return NULL;
}

/* Every CPU the machine has, so the thread is free to go anywhere. */
static int unpin_self(void)
{
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	cpu_set_t all;

	CPU_ZERO(&all);
	for (long c = 0; c < ncpus && c < CPU_SETSIZE; c++)
		CPU_SET((int)c, &all);
	if (sched_setaffinity(0, sizeof(all), &all) < 0)
		return -errno;
	return 0;
}

static void *busy(void *arg)
{
	volatile unsigned long spins = 0;
	int r = unpin_self();

	(void)arg;
	if (r < 0)
		fprintf(stderr, "spinner: busy thread: cannot allow every CPU: %s\n", strerror(-r));
	pthread_barrier_wait(&start_barrier);
	while (!atomic_load_explicit(&stopping, memory_order_relaxed))
		spins++;
	return NULL;
}

static int start_threads(long n, void *(*fn)(void *), size_t stack_bytes)
{
	pthread_attr_t attr;
	pthread_t th;
	int r;

	r = pthread_attr_init(&attr);
	if (r)
		return -r;
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	if (stack_bytes)
		pthread_attr_setstacksize(&attr, stack_bytes);
	for (long i = 0; i < n && r == 0; i++)
		r = pthread_create(&th, &attr, fn, NULL);
	pthread_attr_destroy(&attr);
	return -r;
}

/* Waits for SIGTERM or SIGINT, or for seconds to pass (0: no limit). */
static void wait_for_end(long seconds, const sigset_t *mask)
{
	struct timespec ts = { .tv_sec = seconds };
	int sig;

	do {
		sig = seconds ? sigtimedwait(mask, NULL, &ts) : sigwaitinfo(mask, NULL);
	} while (sig < 0 && errno == EINTR);
}

int main(int argc, char **argv)
{
	struct opts o = { 0 };
	sigset_t mask;
	int r;

	if (parse_args(argc, argv, &o) < 0)
		return 2;
	/* Blocked before any thread starts, so only sigtimedwait() in main sees them. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	r = pthread_barrier_init(&start_barrier, NULL, (unsigned)(o.sleepers + o.busy + 1));
	if (r) {
		fprintf(stderr, "spinner: barrier: %s\n", strerror(r));
		return EXIT_FAILURE;
	}
	r = start_threads(o.sleepers, sleeper, SLEEPER_STACK_BYTES);
	if (r == 0)
		r = start_threads(o.busy, busy, 0);
	if (r < 0) {
		fprintf(stderr, "spinner: cannot start threads: %s\n", strerror(-r));
		return EXIT_FAILURE;
	}
	pthread_barrier_wait(&start_barrier);
	printf("%d ready\n", (int)getpid());
	fflush(stdout);
	wait_for_end(o.seconds, &mask);
	atomic_store(&stopping, true);
	return EXIT_SUCCESS;
}
