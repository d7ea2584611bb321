/*
 * A class's weight by what it runs (policy stage, pure). Every kernel before 7.3, and
 * 7.3's cgroup_mode smp, divide a group's weight among the CPUs by its load there (the
 * hierarchical pick): N busy tasks of one class compete, each on its CPU, with 1/N-th
 * of the class's weight, and lose to a lone task in the root group (a 4-vCPU guest of
 * 6.1: 4 hogs at -5, 4 at 5, 4 untouched got 38 / 6 / 55 % for the nice ratio's
 * 70 / 7 / 23). There a class weighs its value's weight times the busy tasks it runs,
 * at most one for each CPU they may run on, followed tick by tick; elsewhere, the
 * value's weight alone.
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
 * Whether the running kernel splits a group's weight among the CPUs it runs on: mode
 * is 7.3's debugfs sched/cgroup_mode as features_cgroup_mode gives it ("unknown"
 * where it cannot be read), major.minor the running kernel's version. Before 7.3, and
 * in mode smp, it does. In 7.3's other modes it does not, or not so: measured in a
 * 4-vCPU guest, the case above gave 66-70 / 6-7 / 21-27 % unscaled in concur, max and
 * tasks, and in up 62 / 5 / 31 unscaled but 87 / 5 / 7 scaled. A 7.3 kernel whose mode
 * cannot be read (debugfs not mounted or locked down) is taken at its default, concur.
 */
bool latweigh_splits(const char *mode, unsigned major, unsigned minor);

/*
 * For --features: whether the classes are scaled on this kernel and why, from the same
 * mode and version as latweigh_splits, in ret (always terminated). The daemon follows a
 * change of cgroup_mode at run time; this says what holds when it is asked.
 */
void latweigh_describe(const char *mode, unsigned major, unsigned minor, char *ret,
		       size_t len);

/* What one tick shows of the classes. */
struct latweigh_in {
	uint64_t now_ns;                    /* the snapshot's */
	bool splits;                        /* latweigh_splits */
	/* Runnable tasks of class v (index v - LAT_MIN), running or waiting. */
	unsigned busy[LATWEIGH_NVALUES];
	/* The online CPUs those tasks may run on, their affinities joined. */
	unsigned cpus[LATWEIGH_NVALUES];
};

/* The policy's own state from tick to tick; all zero to start. */
struct latweigh_state {
	unsigned k[LATWEIGH_NVALUES];        /* the multiplier in force; 0 is 1 (none decided) */
	unsigned low_max[LATWEIGH_NVALUES];  /* the highest count while below k */
	uint64_t low_since_ns[LATWEIGH_NVALUES]; /* since when the count is below k; 0: it is not */
};

/*
 * Each class's multiplier for this tick (at least 1; 1 for every class where the kernel
 * does not split): a PLAN_LAT_CLASS action for each class whose multiplier changes.
 * Returns the actions added, or -ENOMEM (the state then unchanged for that class).
 */
int latweigh_decide(const struct latweigh_in *in, struct latweigh_state *st, struct plan *ret);

/*
 * The weight of class v under c with multiplier k (0 is 1), in the interface's unit:
 * cgroup2's cpu.weight (1…10000) when v2, else v1's cpu.shares (2…262144), at most the
 * interface's bound. The multiplier applies to the value's weight as lat_map gives it,
 * boost_cpu_pct's cap included: the cap holds per CPU, as the weight does.
 */
uint64_t latweigh_class_weight(const struct lat_conf *c, int v, unsigned k, bool v2);

#endif
