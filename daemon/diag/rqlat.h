/*
 * Run-queue wait histograms (daemon/diag/rqlat.c): how long tasks waited for a
 * CPU, per latency-nice class and per managed cgroup, from rqlat.bpf.c. Loaded at
 * start whichever sampler is in use; read only when rqctl latency asks.
 */
#ifndef RQB_RQLAT_H
#define RQB_RQLAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct rqlat_state;

/* Managed cgroups followed, the rest counted only by class (bpf/rqlat.bpf.h agrees). */
#define RQB_RQLAT_MAX_CG 16

/*
 * Where a wait starts ([daemon] histograms_from): when the task was last queued on
 * the run queue it runs from, by the kernel's own mark (sched_info.last_queued, one
 * program on sched_switch), or at its wakeup or preemption, by the programs' own
 * stamps (three programs and task storage, as runqlat).
 */
enum rqlat_from { RQLAT_FROM_QUEUE, RQLAT_FROM_WAKEUP };

/*
 * Loads and attaches the programs; needs CAP_BPF and CAP_PERFMON, so before the
 * daemon drops them. "queue" that does not load (a kernel without the mark) is
 * "wakeup": rqlat_from() says which runs, rqlat_queue_refused() why ("" if none).
 * 0, or -errno with a one-line reason in why.
 */
int rqlat_new(struct rqlat_state **ret, enum rqlat_from from, char *why, size_t why_len);
enum rqlat_from rqlat_from(const struct rqlat_state *rl);
const char *rqlat_queue_refused(const struct rqlat_state *rl);
void rqlat_free(struct rqlat_state *rl);
/* Thread tid now has latency-nice value (LAT_MIN…LAT_MAX), or none (!managed). */
void rqlat_task(struct rqlat_state *rl, pid_t tid, int value, bool managed);
/*
 * The managed cgroups: paths relative to mount (the cpu hierarchy). The first
 * RQL_MAX_CGROUPS are followed; a call that names the same list again costs no
 * system call.
 */
void rqlat_cgroups(struct rqlat_state *rl, const char *mount, const char *const *paths, size_t n);
/*
 * The histograms summed over CPUs, as ctl reply text: per class with waits,
 * "class NAME total N sum_us N max_us N" then "hist NAME LO_US HI_US COUNT" lines
 * (HI_US "inf" for the last bucket). NAME is -20…19, "none", or "cg:PATH".
 * Returns malloc'd text, or NULL with errno set.
 */
char *rqlat_text(struct rqlat_state *rl);
/* Bucket b's bounds in µs: [lo, hi); hi 0 for the open-ended last one. */
void rqlat_bucket_range(unsigned b, uint64_t *ret_lo_us, uint64_t *ret_hi_us);

#endif
