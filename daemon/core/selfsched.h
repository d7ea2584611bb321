/*
 * The daemon's own scheduling: it gives itself the nice and slice of a latency-nice
 * value ([daemon] latency_nice), so that an exec event wakes it ahead of the task
 * that execs, and the value a rule gives is in force before that task's first
 * instructions. Its own threads only; no plan, no journal: nothing to give back.
 */
#ifndef RQB_SELFSCHED_H
#define RQB_SELFSCHED_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/latency.h"

/*
 * Gives every thread of the daemon the nice of value v under lc, and its slice where
 * the kernel takes one (slices), with SCHED_RESET_ON_FORK so that nothing it starts
 * inherits them. Describes what it set in desc. 0 or -errno (the first error).
 */
int selfsched_apply(const struct lat_conf *lc, int v, bool slices, char *desc, size_t len);

#endif
