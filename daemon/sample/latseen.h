/*
 * Where the tasks with a negative latency-nice value last ran (latseen.c), for
 * latency_apart: such a task runs in bursts of microseconds, which a sample of the
 * run queues seldom lists, so each tick looks at some of them in turn through /proc.
 */
#ifndef RQB_LATSEEN_H
#define RQB_LATSEEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "snapshot/snap.h"

/* At most this many looks a tick (each a read of a small /proc file, two if it ran). */
#define LATSEEN_LOOKS 64

struct latseen_task {
	pid_t tid, tgid;
	uint64_t start_time;
	int value;               /* LAT_MIN…-1 */
	uint64_t run_ns;         /* its time on a CPU at the last look */
	bool looked;             /* run_ns is known */
};

struct latseen {
	size_t n, cap;
	struct latseen_task *t;  /* sorted by tid */
	size_t next;             /* the next to look at */
};

void latseen_init(struct latseen *ls);
void latseen_fini(struct latseen *ls);
/*
 * in: the tasks with a negative value now, n of them, sorted by tid (their run_ns and
 * looked ignored). Adds each to s as a latency record; looks at up to LATSEEN_LOOKS of
 * them, in turn from where the last tick stopped, and marks those whose time on a CPU
 * grew since their last look as ran on the CPU their stat names. 0 or -ENOMEM.
 */
int latseen_fill(struct latseen *ls, const char *proc_root, const struct latseen_task *in,
		 size_t n, struct snapshot *s);

#endif
