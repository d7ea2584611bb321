/*
 * A class's weight by what it runs (policy stage, pure). Every kernel before 7.3, and
 * 7.3's cgroup_mode smp, divide a group's weight among the CPUs by its load there (the
 * hierarchical pick): N busy tasks of one class compete, each on its CPU, with 1/N-th
 * of the class's weight, and lose to a lone task in the root group (a 4-vCPU guest of
 * 6.1: 4 hogs at -5, 4 at 5, 4 untouched got 38 / 6 / 55 % for the nice ratio's
 * 70 / 7 / 23). 7.3's other modes multiply that by a count of their own (one short of
 * N in concur, its default: 65 / 27 / 7 there). A class weighs its value's weight times
 * N over the kernel's multiplier, N its busy tasks, at most one for each CPU they may
 * run on, followed tick by tick, so that each of its tasks weighs, on its CPU, what its
 * value does.
 */
#ifndef RQB_LATWEIGH_H
#define RQB_LATWEIGH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/model.h"
#include "plan/plan.h"
#include "policy/latency.h"

#define LATWEIGH_NVALUES (LAT_MAX - LAT_MIN + 1)
/*
 * A class's multiplier follows a rise at once (a class weighed for fewer tasks than it
 * runs is diluted: the favour turns into a penalty) and a fall once the count has been
 * lower this long, to the highest count seen meanwhile: a task caught asleep by one
 * sample, or a burst of a few ticks, does not make the weight flap.
 */
#define LATWEIGH_HOLD_NS 2000000000ULL
#define LATWEIGH_V1_MAX 262144ULL /* cpu.shares: the kernel's MAX_SHARES, 1 << 18 */
#define LATWEIGH_V2_MAX 10000ULL  /* cpu.weight */

/*
 * What the running kernel gives a group's entity on each CPU, from a group weight W and
 * n busy tasks of the group, one a CPU (read from 7.3's calc_*_shares in fair.c; the
 * kernels before 7.3 have only the first):
 *   SPLIT  (before 7.3; 7.3's smp)  W / n: the group's weight divided among its CPUs.
 *   CONCUR (7.3's concur, default)  W x min(t, CPUs) / n, t = the group's runnable
 *          average in tasks, rounded down: n busy tasks average a little under n
 *          (1023 of 1024 each), so t is n - 1 (at least 1). Measured in a 4-vCPU guest:
 *          4 hogs of a class at cpu.weight 305 got 2347 a CPU for 3123, 3/4 of it.
 *   TASKS  (7.3's tasks)            W x t / n, t as in CONCUR.
 *   MAX    (7.3's max)              W x CPUs / n, the online CPUs (at most nice -20's).
 *   WHOLE  (7.3's up)               W on every CPU, whatever n.
 * The daemon wants W on each CPU a class runs a task on, as a lone task of its value
 * would weigh there: it writes the value's weight times n over the kernel's
 * multiplier (n, 1, t, CPUs, or 1 for WHOLE: nothing to undo).
 */
enum latweigh_kernel {
	LATWEIGH_SPLIT,
	LATWEIGH_CONCUR,
	LATWEIGH_TASKS,
	LATWEIGH_MAX,
	LATWEIGH_WHOLE,
};

/*
 * The running kernel's kind: mode is 7.3's debugfs sched/cgroup_mode as
 * features_cgroup_mode gives it ("unknown" where it cannot be read), major.minor the
 * running kernel's version. Before 7.3 SPLIT; a 7.3 or later whose mode cannot be read,
 * or names a mode this build does not know, is taken at 7.3's default, CONCUR.
 */
enum latweigh_kernel latweigh_kernel_of(const char *mode, unsigned major, unsigned minor);

/* Whether the kernel of that kind scales a group's weight by what it runs (not WHOLE). */
bool latweigh_scales(enum latweigh_kernel kind);

/*
 * For --features: how the classes are weighed on this kernel and why, from the same
 * mode and version as latweigh_kernel_of, in ret (always terminated). The daemon
 * follows a change of cgroup_mode at run time; this says what holds when it is asked.
 */
void latweigh_describe(const char *mode, unsigned major, unsigned minor, char *ret,
		       size_t len);

/* What one tick shows of the classes. */
struct latweigh_in {
	uint64_t now_ns;                    /* the snapshot's */
	enum latweigh_kernel kind;          /* latweigh_kernel_of */
	unsigned online;                    /* the online CPUs (MAX's and CONCUR's bound) */
	/* Runnable tasks of class v (index v - LAT_MIN), running or waiting. */
	unsigned busy[LATWEIGH_NVALUES];
	/* The online CPUs those tasks may run on, their affinities joined. */
	unsigned cpus[LATWEIGH_NVALUES];
};

/* The policy's own state from tick to tick; all zero to start. */
struct latweigh_state {
	unsigned k[LATWEIGH_NVALUES];        /* the busy tasks weighed for; 0 is 1 (none decided) */
	unsigned div[LATWEIGH_NVALUES];      /* the kernel's own multiplier undone; 0 is 1 */
	unsigned low_max[LATWEIGH_NVALUES];  /* the highest count while below k */
	uint64_t low_since_ns[LATWEIGH_NVALUES]; /* since when the count is below k; 0: it is not */
};

/*
 * Each class's multiplier for this tick, k / div: k its busy tasks, at most one a CPU
 * (held as LATWEIGH_HOLD_NS says), div what the kernel multiplies its weight by for
 * them (latweigh_kernel); 1 / 1 for every class on a WHOLE kernel. A PLAN_LAT_CLASS
 * action for each class whose multiplier changes. Returns the actions added, or
 * -ENOMEM (the state then unchanged for that class).
 */
int latweigh_decide(const struct latweigh_in *in, struct latweigh_state *st, struct plan *ret);

/*
 * The weight of class v under c with multiplier k / div (0 is 1), rounded, in the
 * interface's unit: cgroup2's cpu.weight (1…10000) when v2, else v1's cpu.shares
 * (2…262144), at most the interface's bound. The multiplier applies to the value's
 * weight as latency_map gives it, boost_cpu_pct's cap included: the cap holds per CPU, as
 * the weight does.
 */
uint64_t latweigh_class_weight(const struct lat_conf *c, int v, unsigned k, unsigned div,
			       bool v2);

#endif
