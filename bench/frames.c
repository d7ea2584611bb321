/*
 * frames: a game-like workload for bench/frames. A render thread starts a frame at
 * every period boundary of a fixed rate (--hz, absolute-time sleeps on CLOCK_MONOTONIC),
 * does its own share of the frame, hands the rest to N worker threads and waits until
 * the last of them is done. A frame's time runs from its boundary (not from when the
 * render thread woke: a late wakeup is the frame's loss too) to the last worker's end.
 * A frame that ends after its deadline (its boundary plus one period) is missed, and
 * the next frame starts at the first boundary after it ended, as a game synced to the
 * display drops the frames it had no time for. The work is CPU time, not wall time
 * (each thread spins until its own CPU clock has advanced by its share), so a thread
 * that waits for a CPU makes the frame longer, as it would in a game.
 *
 * Prints one line: `slots frames missed dropped p50_us p99_us max_us`: the period
 * boundaries in the run, the frames rendered, those over budget, the boundaries
 * skipped, and the frame time's p50, p99 and max in microseconds.
 * It only measures; it never changes a scheduling setting.
 */
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "args.h"

static struct {
	long hz, workers, work_pct, render_pct;
	long seconds;
	uint64_t period_ns, work_ns, render_ns;

	pthread_mutex_t lock;
	pthread_cond_t go, done;
	uint64_t gen;      /* the frame the workers are asked to do */
	long pending;      /* workers still busy with it */
	uint64_t last_end; /* the latest worker's end in this frame, ns */
	int stop;
} g = { .hz = 60, .workers = 0, .work_pct = 40, .render_pct = 5, .seconds = 10,
	.lock = PTHREAD_MUTEX_INITIALIZER, .go = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER };

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static uint64_t now_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

/* Burns ns of this thread's own CPU time: the same work however long it waits for a CPU. */
static void work_ns(uint64_t ns)
{
	uint64_t end = clock_ns(CLOCK_THREAD_CPUTIME_ID) + ns;
	volatile uint64_t x = 0;

	while (clock_ns(CLOCK_THREAD_CPUTIME_ID) < end)
		for (int i = 0; i < 200; i++)
			x += (uint64_t)i * 2654435761u;
}

static void sleep_until(uint64_t t)
{
	struct timespec ts = { .tv_sec = (time_t)(t / 1000000000ULL),
			       .tv_nsec = (long)(t % 1000000000ULL) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static void *worker_main(void *arg)
{
	uint64_t seen = 0;

	(void)arg;
	for (;;) {
		uint64_t end;

		pthread_mutex_lock(&g.lock);
		while (g.gen == seen && !g.stop)
			pthread_cond_wait(&g.go, &g.lock);
		if (g.stop) {
			pthread_mutex_unlock(&g.lock);
			return NULL;
		}
		seen = g.gen;
		pthread_mutex_unlock(&g.lock);

		work_ns(g.work_ns);
		end = now_ns();

		pthread_mutex_lock(&g.lock);
		if (end > g.last_end)
			g.last_end = end;
		if (--g.pending == 0)
			pthread_cond_signal(&g.done);
		pthread_mutex_unlock(&g.lock);
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The nearest-rank percentile p of the n sorted values v, in microseconds. */
static uint64_t pct_us(const uint64_t *v, size_t n, double p)
{
	size_t i;

	if (n == 0)
		return 0;
	i = (size_t)(p / 100.0 * (double)n + 0.999999);
	if (i < 1)
		i = 1;
	if (i > n)
		i = n;
	return v[i - 1] / 1000;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: frames [--hz H] [--seconds S] [--workers N] [--work-pct P] [--render-pct R]\n"
		"A frame loop at H frames a second (default 60) for S seconds (default 10): at\n"
		"each period boundary the render thread spins R %% of the period (default 5) of\n"
		"its own CPU time, then N worker threads (default: the CPUs online) each spin\n"
		"P %% of it (default 40), and the frame ends when the last is done. Prints\n"
		"`slots frames missed dropped p50_us p99_us max_us`.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "hz", required_argument, NULL, 'z' },
		{ "seconds", required_argument, NULL, 's' },
		{ "workers", required_argument, NULL, 'w' },
		{ "work-pct", required_argument, NULL, 'p' },
		{ "render-pct", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	uint64_t *times, start, t, end_of_run, slots;
	size_t frames = 0, missed = 0, dropped = 0;
	pthread_t *th;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		long *dst = NULL, min = 0, max = 0;
		const char *name = NULL;

		switch (c) {
		case 'z': dst = &g.hz; name = "hz"; min = 1; max = 1000; break;
		case 's': dst = &g.seconds; name = "seconds"; min = 1; max = 3600; break;
		case 'w': dst = &g.workers; name = "workers"; min = 1; max = 256; break;
		case 'p': dst = &g.work_pct; name = "work-pct"; min = 0; max = 1000; break;
		case 'r': dst = &g.render_pct; name = "render-pct"; min = 0; max = 1000; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
		if ((*dst = bench_parse_num("frames", name, optarg, min, max)) < 0)
			return 2;
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	if (g.workers == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);

		g.workers = n > 0 ? n : 1;
	}
	g.period_ns = 1000000000ULL / (uint64_t)g.hz;
	g.work_ns = g.period_ns * (uint64_t)g.work_pct / 100;
	g.render_ns = g.period_ns * (uint64_t)g.render_pct / 100;
	slots = (uint64_t)g.hz * (uint64_t)g.seconds;

	times = calloc(slots, sizeof(*times));
	th = calloc((size_t)g.workers, sizeof(*th));
	if (!times || !th) {
		fprintf(stderr, "frames: out of memory\n");
		return 1;
	}
	for (long i = 0; i < g.workers; i++) {
		int err = pthread_create(&th[i], NULL, worker_main, NULL);

		if (err) {
			fprintf(stderr, "frames: pthread_create: %s\n", strerror(err));
			return 1;
		}
	}

	/* The first boundary a period from now: the workers are up and asleep by then. */
	start = now_ns() + g.period_ns;
	end_of_run = start + slots * g.period_ns;
	for (t = start; t < end_of_run;) {
		uint64_t end, next;

		sleep_until(t);
		work_ns(g.render_ns);
		pthread_mutex_lock(&g.lock);
		g.gen++;
		g.pending = g.workers;
		g.last_end = 0;
		pthread_cond_broadcast(&g.go);
		while (g.pending > 0)
			pthread_cond_wait(&g.done, &g.lock);
		end = g.last_end;
		pthread_mutex_unlock(&g.lock);
		if (end < t) /* no worker work: the frame ends when the render thread is done */
			end = now_ns();

		times[frames++] = end - t;
		if (end > t + g.period_ns)
			missed++;
		/* The next boundary after the end; those passed meanwhile are dropped. */
		next = t + g.period_ns;
		if (end > next) {
			uint64_t skip = (end - next) / g.period_ns + 1;

			next += skip * g.period_ns;
			dropped += skip;
		}
		t = next;
	}
	/* Boundaries past the run's end that a last long frame skipped are not counted. */
	if (t > end_of_run)
		dropped -= (t - end_of_run) / g.period_ns;

	pthread_mutex_lock(&g.lock);
	g.stop = 1;
	pthread_cond_broadcast(&g.go);
	pthread_mutex_unlock(&g.lock);
	for (long i = 0; i < g.workers; i++)
		pthread_join(th[i], NULL);

	qsort(times, frames, sizeof(*times), cmp_u64);
	printf("%llu %zu %zu %zu %llu %llu %llu\n", (unsigned long long)slots, frames, missed,
	       dropped, (unsigned long long)pct_us(times, frames, 50),
	       (unsigned long long)pct_us(times, frames, 99),
	       (unsigned long long)pct_us(times, frames, 100));
	free(times);
	free(th);
	return 0;
}
