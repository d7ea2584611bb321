/*
 * The snapshot: what the sampler saw in one tick. Immutable once handed to the
 * policy. Its text form is the replay/record format, shared with the simulator.
 */
#ifndef RQB_SNAP_H
#define RQB_SNAP_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "model/model.h"

#define SNAP_TASK_KTHREAD 0x1u /* a kernel thread: never touched */
/* Used no CPU time since the last sample: caught runnable for an instant, not load to move. */
#define SNAP_TASK_NO_CPU 0x2u

struct snap_cpu {
	uint32_t nr_running; /* runnable tasks on its run queue, the daemon's own excluded */
	uint32_t busy_pct;   /* share of the last interval spent not idle, 0..100 */
	/*
	 * CLOCK_MONOTONIC of what these counts say; 0 for now_ns. Older where the sampler
	 * took a CPU's record some time before the tick, or kept its last one (a silent
	 * CPU that the host did not run): a task moved there since is not listed on it.
	 */
	uint64_t sample_ns;
};

struct snap_task {
	pid_t tid;
	pid_t tgid;
	int cpu;                  /* CPU it last ran on (stat field 39) */
	uint64_t start_time;      /* stat field 22, clock ticks after boot: identity with tid */
	uint32_t flags;           /* SNAP_TASK_* */
	pid_t partner;            /* the tid it wakes, or is woken by, most; 0 if unknown */
	bool partner_placed;      /* partner_cpu holds the CPU the partner last ran on */
	int partner_cpu;
	cpu_set_t allowed;        /* its affinity mask when sampled */
	char comm[SNAP_COMM_LEN];
	char *cgroup;             /* cgroup path (cpu controller or unified), owned; may be NULL */
	int lat_nice;             /* the latency-nice value rqbalance gave it; 0 where none */
	uint64_t rss_kb;          /* its process's resident set, KiB; 0 where not read */
};

/*
 * A task with a negative latency-nice value from rqbalance, runnable or not: the
 * policy keeps batch work off the LLC it runs on (latency_apart) while it lives.
 */
struct snap_lat {
	pid_t tid;
	uint64_t start_time;      /* with tid, its identity */
	int value;                /* LAT_MIN…-1 */
	int ran_cpu;              /* seen to have run since the last look: its last CPU; else -1 */
};

struct snapshot {
	uint64_t seq;             /* tick number */
	uint64_t now_ns;          /* CLOCK_MONOTONIC at the sample */
	pid_t self_tgid;          /* the daemon: never touched */
	/*
	 * The sample's moment on the clock of start_time (clock ticks after boot, suspend
	 * included) and that clock's ticks a second, so the policy knows a task's age;
	 * both 0 where unknown (a replay written without them): no task is then too young.
	 */
	uint64_t uptime_ticks;
	uint32_t tick_hz;
	const struct topo *topo;  /* not owned */
	int nr_cpu_ids;           /* entries in cpus */
	struct snap_cpu *cpus;    /* indexed by OS CPU number */
	size_t ntasks;            /* runnable tasks, each once */
	size_t cap;
	struct snap_task *tasks;
	size_t nlat, lat_cap;     /* latency tasks, sorted by tid (snap_add_lat) */
	struct snap_lat *lat;
};

/* When CPU cpu's counts were taken (sample_ns, or now_ns where that is 0). */
uint64_t snap_cpu_sampled(const struct snapshot *s, int cpu);
struct snapshot *snap_new(const struct topo *t);
void snap_free(struct snapshot *s);
/* Empties the task list and per-CPU counters, keeps the allocations. */
void snap_reset(struct snapshot *s);
/* Appends a task (copies cgroup); returns it or NULL on ENOMEM. */
struct snap_task *snap_add_task(struct snapshot *s, const struct snap_task *t, const char *cgroup);
/* Adds a latency task, kept sorted by tid; 0, -EINVAL for a value not below 0, or -ENOMEM. */
int snap_add_lat(struct snapshot *s, pid_t tid, uint64_t start_time, int value);
/* The latency task tid with start_time, or NULL. */
const struct snap_lat *snap_find_lat(const struct snapshot *s, pid_t tid, uint64_t start_time);
/*
 * The latency task ran since it was last looked at, last on cpu. 0, -ENOENT if it is
 * not listed, -EINVAL for a CPU not in the topology.
 */
int snap_lat_ran(struct snapshot *s, pid_t tid, uint64_t start_time, int cpu);

/*
 * Text form, one record a line:
 *   snapshot SEQ NOW_NS SELF_TGID [uptime=TICKS hz=HZ]
 *   cpu CPU NR_RUNNING BUSY_PCT
 *   task TID TGID CPU START_TIME FLAGS ALLOWED COMM CGROUP [partner=TID[@CPU]] [lat=V]
 *        [rss=KIB]
 *   latency TID START_TIME VALUE [ran=CPU]
 *   end
 * COMM and CGROUP are escaped (\xHH for bytes <= 0x20, 0x7f, '\\' and a leading '-');
 * "-" alone is an empty cgroup.
 * Lines starting with '#' and blank lines are ignored.
 */
int snap_write(const struct snapshot *s, FILE *out);
/*
 * Reads the next snapshot into s (reset first). Returns 1 when one was read, 0 at end of
 * file, -EINVAL on a malformed record (message in ret_err, with *lineno), or -errno.
 */
int snap_read(FILE *in, struct snapshot *s, unsigned *lineno, char *ret_err, size_t errlen);

#endif
