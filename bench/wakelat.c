/*
 * wakelat: a schbench-like wakeup-latency workload for rqbalance's latency benches.
 * A message thread wakes worker threads in turn every interval; each worker measures
 * how long after the wake it ran, works a little, and sleeps again. Prints p50, p99
 * and p99.9 of that wakeup latency. With --hog it is instead a CPU hog.
 * It only measures; it never changes a scheduling setting.
 */
#include <errno.h>
#include <getopt.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define NBUCKETS 20000 /* 1 µs buckets up to 20 ms; above lands in the last */

struct worker {
	_Atomic uint32_t word;   /* futex: 0 sleeping, 1 woken */
	_Atomic uint64_t stamp;  /* when it was woken, ns */
	pthread_t th;
};

static struct {
	int workers;
	long interval_us, work_us;
	double seconds;
	_Atomic int stop;
	struct worker *w;
	pthread_mutex_t lock;
	uint64_t hist[NBUCKETS];
	uint64_t samples;
} g = { .workers = 2, .interval_us = 1000, .work_us = 50, .seconds = 10,
	.lock = PTHREAD_MUTEX_INITIALIZER };

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void spin_ns(uint64_t ns)
{
	uint64_t end = now_ns() + ns;

	while (now_ns() < end)
		;
}

static void futex_wait(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *w)
{
	syscall(SYS_futex, w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (!atomic_load(&g.stop)) {
		uint64_t lat;

		while (atomic_load(&w->word) == 0 && !atomic_load(&g.stop))
			futex_wait(&w->word);
		if (atomic_load(&g.stop))
			break;
		lat = (now_ns() - atomic_load(&w->stamp)) / 1000;
		atomic_store(&w->word, 0);
		pthread_mutex_lock(&g.lock);
		g.hist[lat < NBUCKETS ? lat : NBUCKETS - 1]++;
		g.samples++;
		pthread_mutex_unlock(&g.lock);
		spin_ns((uint64_t)g.work_us * 1000);
	}
	return NULL;
}

static uint64_t percentile(double p)
{
	uint64_t want = (uint64_t)(p * (double)g.samples), seen = 0;

	for (int i = 0; i < NBUCKETS; i++) {
		seen += g.hist[i];
		if (seen > want)
			return (uint64_t)i;
	}
	return NBUCKETS;
}

static void usage(FILE *out)
{
	fprintf(out, "Usage: wakelat [--workers N] [--interval-us N] [--work-us N] [--seconds S]\n"
		     "       wakelat --hog [--seconds S]\n"
		     "Prints: p50_us p99_us p999_us samples\n");
}

static int hog(void)
{
	uint64_t end = now_ns() + (uint64_t)(g.seconds * 1e9);

	while (now_ns() < end)
		spin_ns(1000000);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "workers", required_argument, NULL, 'w' },
		{ "interval-us", required_argument, NULL, 'i' },
		{ "work-us", required_argument, NULL, 'k' },
		{ "seconds", required_argument, NULL, 's' },
		{ "hog", no_argument, NULL, 'H' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, is_hog = 0;
	uint64_t end, next;

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 'w':
			g.workers = atoi(optarg);
			break;
		case 'i':
			g.interval_us = atol(optarg);
			break;
		case 'k':
			g.work_us = atol(optarg);
			break;
		case 's':
			g.seconds = atof(optarg);
			break;
		case 'H':
			is_hog = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (g.workers < 1 || g.interval_us < 1 || g.work_us < 0 || g.seconds <= 0) {
		usage(stderr);
		return 2;
	}
	if (is_hog)
		return hog();
	g.w = calloc((size_t)g.workers, sizeof(*g.w));
	if (!g.w)
		return 1;
	for (int i = 0; i < g.workers; i++)
		if (pthread_create(&g.w[i].th, NULL, worker_main, &g.w[i]) != 0)
			return 1;
	end = now_ns() + (uint64_t)(g.seconds * 1e9);
	next = now_ns();
	for (int turn = 0; now_ns() < end; turn = (turn + 1) % g.workers) {
		struct worker *w = &g.w[turn];
		struct timespec ts;

		next += (uint64_t)g.interval_us * 1000;
		ts.tv_sec = (time_t)(next / 1000000000ULL);
		ts.tv_nsec = (long)(next % 1000000000ULL);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
		atomic_store(&w->stamp, now_ns());
		atomic_store(&w->word, 1);
		futex_wake(&w->word);
	}
	atomic_store(&g.stop, 1);
	for (int i = 0; i < g.workers; i++) {
		atomic_store(&g.w[i].word, 1);
		futex_wake(&g.w[i].word);
		pthread_join(g.w[i].th, NULL);
	}
	printf("%llu %llu %llu %llu\n", (unsigned long long)percentile(0.50),
	       (unsigned long long)percentile(0.99), (unsigned long long)percentile(0.999),
	       (unsigned long long)g.samples);
	free(g.w);
	return 0;
}
