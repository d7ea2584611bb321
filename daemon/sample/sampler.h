/* The sampler interface: every way of reading the world fills the same snapshot. */
#ifndef RQB_SAMPLER_H
#define RQB_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sample/latseen.h"
#include "proc/parse.h"
#include "snapshot/snap.h"

struct sampler;

struct sampler_ops {
	const char *name;
	/* Fills s (already reset) for the tick at now_ns. 0 or -errno. */
	int (*sample)(struct sampler *sm, uint64_t now_ns, struct snapshot *s);
	void (*free)(struct sampler *sm);
	/*
	 * keep_pairs: reads whom each listed task wakes (noted at sched_waking, weighed as
	 * wake_wide() does, with LLC sizes from t) and names each task's partner in the
	 * snapshot, or stops. True if it does. NULL: this sampler cannot see who wakes whom.
	 */
	bool (*pairs)(struct sampler *sm, const struct topo *t, bool on);
	/*
	 * Whether its task walks still work without CAP_BPF in the effective set (older
	 * kernels ask for it on every bpf() call when unprivileged BPF is off; 6.1 and 6.18
	 * only to create maps and programs). NULL: it makes no such walk.
	 */
	bool (*walks_unprivileged)(struct sampler *sm);
};

struct sampler {
	const struct sampler_ops *ops;
	void *priv;
};

struct proc_sampler_opts {
	const char *root;          /* prefix for /proc, "" for the real one */
	pid_t self_tgid;           /* left out of every count */
	uint64_t rescan_ns;        /* full walk at most this far apart */
	unsigned max_tracked;      /* open stat files at most */
};

int proc_sampler_new(const struct proc_sampler_opts *o, struct sampler **ret);

struct bpf_sampler_opts {
	pid_t self_tgid;           /* counted apart and never listed */
	uint64_t interval_ns;      /* the tick, which sets the perf sample period */
	uint64_t walk_gap_ns;      /* full task walks at most this often */
	uint64_t forget_ns;        /* a task unseen this long loses its cached cgroup */
	/*
	 * A task's cgroup is read only while *want_cgroups is not 0 (the daemon's count of
	 * [exclude] cgroups, which a reload may change); NULL: always. Under emulation one
	 * read of /proc/PID/task/TID/cgroup costs about a millisecond.
	 */
	const unsigned *want_cgroups;
	const char *root;          /* prefix for /proc and /sys, "" for the real ones */
	bool tracepoints;          /* sample at the scheduler's tracepoints even where perf
	                              events are allowed (tests) */
	char *why;                 /* on failure, one line saying why; may be NULL */
	size_t why_len;
};

/*
 * Loads rqsample.bpf.c, opens a cpu-clock perf event on every online CPU, or where
 * perf events are refused (Debian's kernel.perf_event_paranoid = 3 without
 * CAP_SYS_ADMIN) or o->tracepoints asks, attaches to the scheduler's sched_stat_runtime
 * and sched_switch tracepoints instead, and waits for a first sample. 0, or -errno
 * with the reason in o->why.
 */
int bpf_sampler_new(const struct bpf_sampler_opts *o, struct sampler **ret);

/* Counters of the bpf sampler, for tests and the bench. */
struct bpf_stats {
	const char *rq_path;    /* "runqueues ksym" or "current task" */
	const char *trigger;    /* "cpu-clock perf events" or "scheduler tracepoints" */
	uint64_t period_ns;     /* the perf sample period */
	uint64_t samples;       /* perf samples taken, all CPUs */
	uint64_t stale;         /* CPU reads whose sample was too old (silent CPUs) */
	uint64_t silent_reads;  /* reads of /proc/stat to tell an idle silent CPU from a held one */
	uint64_t held;          /* silent CPUs that were not idle: their last record stood */
	uint64_t torn;          /* CPU reads that raced a write twice: last good one used */
	uint64_t walks;         /* full task walks through the iterator */
};
/*
 * keep_pairs on or off, where the sampler can see who wakes whom (its pairs operation):
 * true if it now names partners. False for a sampler that cannot, and where the bpf
 * sampler's sched_waking program did not attach.
 */
bool sampler_pairs(struct sampler *sm, const struct topo *t, bool on);
/*
 * Whether the sampler's task walks still work without CAP_BPF; call it with CAP_BPF
 * lowered. True for a sampler that makes no such walk.
 */
bool sampler_walks_unprivileged(struct sampler *sm);
/*
 * Replays the snapshots in path, one a tick; after the last, keeps returning the last
 * one. The whole file is read and checked against the topology first: a bad record
 * fails here, with "path:line: reason" logged. Whatever the file says, self_tgid (the
 * running daemon) is the snapshot's "itself".
 */
int replay_sampler_new(const char *path, const struct topo *t, pid_t self_tgid,
		       struct sampler **ret);

static inline int sampler_sample(struct sampler *sm, uint64_t now_ns, struct snapshot *s)
{
	return sm->ops->sample(sm, now_ns, s);
}

/* A task with a latency-nice value, as the latency half gave it. */
struct sample_lat {
	pid_t tid, tgid;
	uint64_t start_time;     /* of the task the value was given to (a reused tid is not it) */
	int value;
};

/*
 * What the placement rules read beside a sampler's counts, asked of sampler_tick:
 * - lat, nlat: the tasks with a latency-nice value, sorted by tid. Each one the
 *   sampler listed takes its value (lat_nice), and those with a negative value are
 *   placed through seen (latseen.h: they run too briefly for a sample to list them)
 *   and added as latency records, for latency_apart. NULL, 0: not asked.
 * - rss: for keep_together, the resident set of each process with two user tasks
 *   listed or more, from /proc/TGID/statm.
 */
struct sample_asks {
	const struct sample_lat *lat;
	size_t nlat;
	struct latseen *seen;    /* given with lat */
	bool rss;
};

/*
 * A tick's snapshot, whole: the sampler's counts (s already reset), then what a
 * asks; a NULL: nothing (a replay brings its own). 0, or the sampler's -errno (then
 * nothing asked is read). An ask that runs out of memory is left out, logged.
 */
int sampler_tick(struct sampler *sm, uint64_t now_ns, const struct sample_asks *a,
		struct snapshot *s);
void sampler_free(struct sampler *sm);
/* Stamps s with the clock of the tasks' start times (uptime_ticks, tick_hz): live samplers. */
void sampler_stamp_uptime(struct snapshot *s);

/* Counters of the proc sampler, for tests and the bench. */
struct proc_stats {
	uint64_t rescans;       /* full walks of /proc */
	uint64_t stat_reads;    /* per-task stat reads in ticks */
	unsigned tracked;       /* tasks being followed now */
};

#endif
