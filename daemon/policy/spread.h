/*
 * The spread policy: pure. A snapshot, the config and the policy's own memory in,
 * a plan out. No I/O, no clock (time comes in the snapshot), no randomness.
 */
#ifndef RQB_SPREAD_H
#define RQB_SPREAD_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "plan/plan.h"
#include "snapshot/snap.h"

/* Which rule made a pin: each rule releases only its own. */
enum spread_pin_kind {
	PIN_SPREAD,     /* an overloaded LLC sent it away (spread.c) */
	PIN_TOGETHER,   /* keep_together holds its process in one LLC (place_together.c) */
	PIN_APART,      /* latency_apart: kept on, or off, the latency tasks' LLCs (place_apart.c) */
	PIN_FAST,       /* fast_cores: kept on, or off, the fastest cores (place_fast.c) */
};

/* A task the policy has pinned to an LLC. */
struct spread_pin {
	pid_t tid;
	pid_t tgid;
	uint64_t start_time;
	int from_llc, to_llc;
	cpu_set_t mask;          /* what it was pinned to */
	cpu_set_t orig;          /* what it was allowed before */
	uint64_t since_ns;       /* when the pin was planned */
	uint64_t room_ns;        /* since when its LLC of origin could take it back; 0: not now */
	int from_cpu;            /* the CPU it was listed on when pinned */
	enum spread_pin_kind kind;
	bool lat_task;           /* PIN_APART, PIN_FAST: a latency task kept there, not batch
				    sent off */
	bool listed;             /* scratch: this tick's snapshot lists the task somewhere */
	bool counted_away;       /* scratch: and it counts on a CPU of its pin */
	char comm[SNAP_COMM_LEN];
};

/* keep_together's memory of a process with busy threads (place_together.c). */
#define PLACE_MAX_LLCS 64 /* LLCs a process's runtime is scored on; others never preferred */
struct place_proc {
	pid_t tgid;
	int held;                /* the LLC it is held in; -1: not held */
	int busy_prev;           /* its busy threads last tick */
	uint64_t seen_ns;        /* the last tick it had two busy threads or more */
	uint64_t busy_since_ns;  /* since when its LLC has been too busy; 0: it is not */
	uint64_t gave_up_ns;     /* when repeated failures made it give up; 0: it did not */
	unsigned failures;       /* its pins the actuator could not make or keep */
	uint64_t fail_ns;        /* when the first of those failures was */
	const char *why;         /* why it was let go, for the plan lines of its releases */
	uint64_t rss_kb;         /* its resident set when last held (the LLC's sum of them) */
	uint64_t seen_ticks;     /* the snapshot's uptime_ticks when a thread of it was last
				    listed; 0 where unknown (a replay without them) */
	uint16_t score[PLACE_MAX_LLCS]; /* decaying count of its threads seen on each LLC */
};

/* latency_apart's and fast_cores' memory of a task with a negative value (place_kit.c). */
struct place_lat {
	pid_t tid;
	uint64_t start_time;
	int llc;                 /* -1 until it is seen runnable */
	uint64_t seen_ns;
	uint64_t busy_ns;        /* the last tick it was listed runnable, having used CPU
				    (or ran again within min_residency_ms of such a tick); 0 */
};

/* A task moved recently: not moved again before min_residency. */
struct spread_recent {
	pid_t tid;
	uint64_t start_time;
	uint64_t moved_ns;
};

struct spread_state {
	size_t npins, pins_cap;
	struct spread_pin *pins;         /* sorted by tid */
	size_t nrecent, recent_cap;
	struct spread_recent *recent;    /* sorted by tid */
	uint64_t moves;               /* pins and releases planned so far */
	/*
	 * The last tick's runnable and idle counts per LLC, after its moves: a sample is
	 * one instant, so an overload of one task, or an idle CPU, counts only when two
	 * ticks in a row show it (a short task caught running is not load). nprev_llcs
	 * is 0 until then.
	 */
	int nprev_llcs;
	int *prev_nr, *prev_idle;
	uint64_t prev_now_ns;    /* the last tick's snapshot time; 0 before the first */
	/* Scratch reused across ticks, sized to the topology and the snapshot. */
	size_t scratch_tasks;
	int nscratch_cpus, nscratch_llcs;
	int *cpu_nr, *bucket_start, *bucket;
	int *raw_nr, *raw_idle;  /* this tick's counts per LLC, moves applied */
	int *raw_young;          /* listed tasks per LLC not settled yet (see persist()) */
	int *llc_nr;             /* runnable as a source (see persist() in spread.c) */
	int *llc_load;           /* runnable as a target: the higher of the two */
	int *llc_idle;           /* CPUs idle in both ticks */
	int *llc_away;           /* pins that took a task away from each LLC */
	unsigned char *llc_done;
	struct spread_slot { pid_t tid; int slot; } *byid; /* keep_pairs: tid -> bucket slot */
	size_t nbyid;
	/* keep_together's processes (sorted by tgid), the latency tasks (by tid, place_kit.c) */
	size_t nprocs, procs_cap;
	struct place_proc *procs;
	size_t nlats, lats_cap;
	struct place_lat *lats;
	unsigned char *reserved;     /* latency_apart: LLCs kept for latency tasks this tick */
	int nreserved;
	uint64_t short_since_ns;     /* since when batch work has outnumbered its CPUs; 0 */
	bool apart_short;            /* batch pins given back for want of CPUs: none made */
	/* fast_cores: crowded, short and their settling times (place_fast.c) */
	bool fast_crowded;           /* more busy latency tasks than fast cores: none held */
	uint64_t crowded_since_ns;   /* since when that has been otherwise; 0 */
	bool fast_short;             /* batch pins off the fast cores given back, none made */
	uint64_t fast_short_since_ns;
	uint64_t place_prev_ns;      /* the last tick place.c decided at; 0 before the first */
	struct place_slot { pid_t tgid; int slot; } *bytg; /* scratch: bucket slots by tgid */
	/* whole_processes: each bucketed user task's (tgid, LLC), sorted */
	struct spread_tgllc { pid_t tgid; int llc; } *bytgllc;
	size_t nbytgllc;
};

/* Up to this many [exclude] patterns of each kind (conf.h's CONF_MAX_LIST). */
#define SPREAD_MAX_EXCLUDE 64

/* What the policy reads of the config, and no more; conf_spread (conf.h) fills it. */
struct spread_conf {
	uint32_t imbalance_pct;         /* target must be this much less loaded, 117 = 17 % */
	uint32_t max_moves_per_tick;    /* pins plus releases per tick */
	uint32_t min_residency_ms;      /* no task moves again sooner than this */
	uint32_t max_pin_ms;            /* a pin is released at this age at the latest */
	uint32_t min_llc_cores;         /* LLCs with fewer cores are not spread across */
	bool keep_pairs;                /* move tasks that wake each other only together */
	bool keep_together;             /* hold a process that fits one LLC there (place_together.c) */
	bool latency_apart;             /* an LLC for negative latency-nice tasks (place_apart.c) */
	bool fast_cores;                /* the fastest cores for them, batch off (place_fast.c) */
	/*
	 * The kernel keeps a process's threads in one LLC itself (cache-aware scheduling,
	 * 7.2 and later): no task is moved away from another runnable task of its process
	 * in the same LLC, so that no pin splits what the kernel keeps together.
	 */
	bool whole_processes;
	/* [exclude]: fnmatch(3) patterns on comm, and cgroup path prefixes; not owned */
	unsigned nexclude_comms, nexclude_cgroups;
	const char *exclude_comms[SPREAD_MAX_EXCLUDE];
	const char *exclude_cgroups[SPREAD_MAX_EXCLUDE];
};

void spread_init(struct spread_state *st);
void spread_fini(struct spread_state *st);

/*
 * Decides one tick: appends to plan (which the caller cleared) and updates st as if the
 * plan is carried out. Returns the number of actions, or -ENOMEM.
 */
int spread_decide(const struct snapshot *s, const struct spread_conf *c, struct spread_state *st,
	       struct plan *plan);
/*
 * The actuator could not carry out, or has given up, the pin of this task: forget it.
 * failed: not because the task is gone (keep_together counts those failures).
 */
void spread_forget(struct spread_state *st, pid_t tid, uint64_t start_time, bool failed);

/*
 * The CPUs fast_cores keeps latency work on: the CCD the part's amd_x3d_mode prefers,
 * else the kind of core hwloc ranks fastest; online ones only. Returns what they are,
 * for the log and status, or NULL where the machine has no such set (one kind of core,
 * or every online CPU of the fastest kind) and *ret is empty.
 */
const char *place_fast_cpus(const struct topo *tp, cpu_set_t *ret);

/* Rule (e), exposed for tests: why a task may not be touched, or NULL if it may. */
const char *spread_ineligible(const struct snapshot *s, const struct spread_conf *c,
			   const struct snap_task *t);

#endif
