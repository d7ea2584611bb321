/*
 * samplecost: the CPU time one sampler takes per tick, alone, without the rest of
 * the daemon (whose event loop also wakes for every fork and exec on the machine).
 * It links the daemon's own samplers and calls them as the daemon does, once a tick,
 * and measures SECONDS after a WARMUP_S warm-up (as bench/overhead does the daemon:
 * the proc sampler's first walk of /proc, and the bpf sampler's load, stay out).
 *
 * Usage: samplecost bpf|proc INTERVAL_MS SECONDS
 * Prints: SAMPLER INTERVAL_MS TICKS US_PER_TICK PCT_OF_ONE_CPU TASKS_LAST_TICK
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rqbalance.h"
#include "sample/sampler.h"
#include "sample/topo.h"
#include "util/log.h"
#include "util/util.h"

#define WARMUP_S 2

static uint64_t thread_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * NSEC_PER_SEC + (uint64_t)t.tv_nsec;
}

static int make(const char *name, uint64_t interval_ns, struct sampler **ret)
{
	char why[256] = "";
	struct bpf_sampler_opts bo = {
		.self_tgid = getpid(), .interval_ns = interval_ns, .walk_gap_ns = NSEC_PER_SEC,
		.forget_ns = 10 * NSEC_PER_SEC, .root = "", .why = why, .why_len = sizeof(why),
	};
	/* The daemon's defaults: a walk of /proc every 10 s, 4096 tasks followed. */
	struct proc_sampler_opts po = {
		.root = "", .self_tgid = getpid(), .rescan_ns = 10 * NSEC_PER_SEC, .max_tracked = 4096,
	};
	int r;

	if (strcmp(name, "proc") == 0)
		return proc_sampler_new(&po, ret);
	if (strcmp(name, "bpf") != 0)
		return -EINVAL;
	r = bpf_sampler_new(&bo, ret);
	if (r < 0)
		fprintf(stderr, "samplecost: bpf sampler: %s\n", why);
	return r;
}

int main(int argc, char **argv)
{
	struct topo_opts to = { .filter_online = true, .root = "" };
	uint64_t interval_ns, start_ns, end_ns, next_ns, used = 0, ticks = 0, measured = 0;
	struct sampler *sm;
	struct snapshot *s;
	struct topo *t;

	if (argc != 4 || atoi(argv[2]) < 1 || atoi(argv[3]) < 1) {
		fprintf(stderr, "usage: samplecost bpf|proc INTERVAL_MS SECONDS\n");
		return 2;
	}
	log_set_level(LOG_WARNING);
	interval_ns = (uint64_t)atoi(argv[2]) * NSEC_PER_MSEC;
	if (topo_load(&to, &t) < 0 || !(s = snap_new(t)) || make(argv[1], interval_ns, &sm) < 0) {
		fprintf(stderr, "samplecost: cannot start the %s sampler\n", argv[1]);
		return 1;
	}
	next_ns = util_now_ns();
	start_ns = next_ns + WARMUP_S * NSEC_PER_SEC;
	end_ns = start_ns + (uint64_t)atoi(argv[3]) * NSEC_PER_SEC;
	while (next_ns < end_ns) {
		struct timespec at = { (time_t)(next_ns / NSEC_PER_SEC), (long)(next_ns % NSEC_PER_SEC) };
		uint64_t t0;

		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
		t0 = thread_ns();
		snap_reset(s);
		s->seq = ++ticks;
		s->now_ns = util_now_ns();
		sampler_sample(sm, s->now_ns, s);
		if (next_ns >= start_ns) {
			used += thread_ns() - t0;
			measured++;
		}
		next_ns += interval_ns;
	}
	printf("%s %s %llu %.1f %.4f %zu\n", argv[1], argv[2], (unsigned long long)measured,
	       (double)used / 1e3 / (double)measured,
	       100.0 * (double)used / (double)(measured * interval_ns), s->ntasks);
	sampler_free(sm);
	snap_free(s);
	topo_free(t);
	return 0;
}
