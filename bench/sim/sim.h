/*
 * The simulator's machine: CPUs with run queues, tasks of three kinds, a simple
 * model of the kernel's own placement and of the caches, and the balancer under test
 * on top.
 */
#ifndef RQB_SIM_H
#define RQB_SIM_H

#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "conf/conf.h"
#include "plan/plan.h"
#include "policy/spread.h"
#include "sample/topo.h"
#include "snapshot/snap.h"

enum sim_kind {
	SIM_HOG,   /* CPU-bound from arrival to departure */
	SIM_REQ,   /* sleeps, is woken by a dispatcher on LLC 0, runs a short burst */
	SIM_PAIR,  /* runs a burst, wakes its partner, sleeps until woken back */
};

enum sim_balancer {
	SIM_NONE,     /* the kernel model alone */
	SIM_PULLER,   /* takes from the most utilized CPU, even when it runs one task */
	SIM_RQB,      /* rqbalance's policy, spread_decide(), as the daemon runs it */
	SIM_NBALANCERS
};

/* The kernel's record_wakee() state for one waker: how often it switches wakees. */
struct sim_flips {
	unsigned flips;         /* wakee switches, halved at most once a second */
	int last_wakee;         /* task index, a listener's negative id, or SIM_NO_WAKEE */
	uint64_t decay_ms;      /* when flips was last halved */
};

#define SIM_NO_WAKEE (-1)

/*
 * A process of the cache model: threads that share a working set. Tasks outside any
 * (proc -1) keep the flat costs of the first model (2 ms after changing LLC, and
 * cross_llc_penalty_pct).
 */
struct sim_proc {
	pid_t tgid;
	uint64_t ws_kb;         /* working set, KiB: what its threads keep in their LLC */
	uint64_t rss_kb;        /* resident set the snapshot shows (keep_together's proxy) */
	int llc_pct;            /* share of a thread's time, at full speed, on LLC accesses */
	int shared_pct;         /* share of the working set (and of those accesses) all share */
	int nthreads;
	int think_ms;           /* request workers: mean think time, drawn 1/2 to 3/2 of it */
	int burst_us;           /* request workers: work a request takes at full speed */
	int disp_cpu;           /* request workers: where its message thread wakes them from; -1: a timer */
	struct sim_flips disp;  /* that message thread, as a waker */
};

struct sim_task {
	enum sim_kind kind;
	pid_t tid;
	int proc;               /* index in sim.proc, -1: none */
	int lat_nice;           /* the latency-nice value rqbalance gave it, 0 none */
	bool sampled;           /* its wakeup latencies go to sim.lat */
	bool held;              /* pinned by keep_together (why "together") */
	int partner;            /* index of the other half of a pair, -1 */
	bool alive;             /* arrived and not departed */
	bool queued;            /* on a run queue (runnable) */
	int cpu;                /* where it is queued, or ran last */
	int64_t left_ns;        /* work left in the current burst (not hogs), at full speed */
	uint64_t wake_ms;       /* SIM_REQ: when the dispatcher wakes it next */
	uint64_t arrive_ms;     /* SIM_HOG: lifetime */
	uint64_t depart_ms;
	int64_t slice_ns;       /* ran since it last reached the head of its queue */
	unsigned ran_ms;        /* ran in the current tick: the task's utilization */
	uint64_t last_ms;       /* the millisecond it last ran in; with cpu, where its data is */
	bool ran_ever;          /* last_ms means something */
	int64_t stall_ns;       /* run time still lost before progress: a cold cache, a wakeup */
	bool woken;             /* woken and not run yet: its wakeup latency is open */
	uint64_t woke_ns;       /* when, on the simulated clock */
	uint32_t wake_cost_ns;  /* what taking it from its queue costs (sim_wake_cost_ns) */
	bool handed;            /* SIM_PAIR: woken while still running: go on when done */
	int side_every;         /* SIM_PAIR: also wakes a listener every this many bursts; 0 never */
	unsigned nbursts;       /* bursts completed */
	uint64_t work_ns;       /* progress made, in CPU time at full speed */
	struct sim_flips wf;    /* as a waker, for wake_wide() */
	cpu_set_t allowed;      /* affinity, as the balancer left it */
	cpu_set_t orig;         /* affinity before any balancer touched it */
	int moved_from_llc;     /* ping-pong: LLC the balancer last took it from */
	uint64_t moved_tick;    /* and when */
};

struct sim_cpu {
	int *q;                 /* task indexes; q[0] runs */
	int n, cap;
	unsigned busy_ms;       /* in the current policy tick */
	unsigned idle_ms;
	int64_t free_ns;        /* in this ms, from when it had nothing left to run */
};

struct sim_stats {
	uint64_t wasted_ms;      /* sum over ms of min(tasks waiting, CPUs idle) */
	/* wasted_ms split three ways (they add up to it): */
	uint64_t wasted_unseen_ms; /* across LLCs, while the last tick saw no imbalance */
	uint64_t wasted_seen_ms;   /* across LLCs, after a tick saw an imbalance */
	uint64_t wasted_local_ms;  /* within an LLC: waiting beside an idle sibling */
	uint64_t migrations;     /* a task queued on another CPU than it ran on last */
	uint64_t moves;          /* balancer actions that narrowed an affinity */
	uint64_t single_pulls;   /* of those, from a CPU that ran only that task */
	uint64_t pingpong;       /* a task sent back to an LLC it was taken from < 1 s ago */
	uint64_t work_ns;        /* progress, in CPU time at full speed (not refilling a cache) */
	uint64_t batch_ns;       /* of it, by tasks with a positive latency-nice value */
	uint64_t bursts;         /* request and pair bursts completed */
	uint64_t wakes;          /* wakeups by a waker (a task or the dispatcher) */
	uint64_t wide_wakes;     /* of those, placed wide: wake_wide() said not affine */
	uint64_t episodes;       /* imbalances seen (an LLC over its CPUs, another idle) */
	uint64_t episode_ticks;  /* ticks spent imbalanced, summed */
	uint64_t episode_max;    /* longest imbalance, in ticks */
	double spread_sum;       /* sum over ticks of max - min runnable per LLC */
	uint64_t ticks;
	/* The placement rules' plan lines, by their why (place_*.c) */
	uint64_t pins_together;  /* "together": a thread held in its process's LLC */
	uint64_t unpins_together;/* a keep_together pin given back, any why */
	uint64_t pins_latency;   /* "latency": a latency task kept on its LLCs */
	uint64_t pins_apart;     /* "apart": a batch task sent off them */
	uint64_t unpins_short;   /* "short": batch pins given back for want of CPUs */
	uint64_t pins_fast;      /* "fast": a latency task kept on the fast cores */
	uint64_t pins_off_fast;  /* "off_fast": a batch task sent off them */
	uint64_t unpins_crowded; /* "crowded": more busy latency tasks than fast cores */
	uint64_t asym_pulls;     /* the kernel model's asym packing: tasks pulled to a faster core */
	uint64_t proc_ms;        /* run segments (about ms) of the cache model's threads */
	uint64_t over_ms;        /* of them, in an LLC whose working sets overflow */
};

/* Wakeup latencies of the sampled tasks, ns: from the wakeup to running. */
struct sim_lat {
	uint64_t *ns;
	size_t n, cap;
};

struct sim {
	const struct topo *topo;
	struct sim_cpu *cpu;     /* nr_cpu_ids */
	struct sim_task *t;
	int nt, tcap;
	uint64_t now_ms;
	uint64_t rng;
	enum sim_balancer bal;
	int tick_ms;             /* the balancer's interval */
	int kernel_lb_ms;        /* the kernel model's cross-LLC balance interval */
	int cross_llc_penalty_pct; /* extra work for a pair burst run away from its waker's LLC */
	bool lat_preempt;        /* a waking negative latency-nice task preempts one that is not */
	/*
	 * The balance of a newer kernel: across LLCs by idle CPUs and waiting tasks, not
	 * utilization; within an LLC, between busy CPUs by load too.
	 */
	bool lb_spare;
	int run_at;              /* the CPU run_cpus is stepping, -1 outside it */
	int64_t off_ns;          /* the simulated clock within the ms, where it is stepping */
	struct sim_proc *proc;   /* the cache model's processes */
	int nproc, proccap;
	int *proc_llc;           /* per ms: nproc x nllcs threads active on each LLC */
	double *llc_over;        /* per ms, per LLC: share of its working sets that does not fit */
	struct sim_lat lat;
	struct sim_lat frame;    /* the sampled request tasks' bursts: wakeup to done, ns */
	/*
	 * Kinds of core. speed: per CPU, work done per ms against the slowest kind (1 on a
	 * machine of one kind). With kinds, the kernel model of such parts: asym packing
	 * toward prio every ASYM_MS, an idle core before an idle SMT sibling at wakeup, no
	 * wake affine to a CPU the wakee may not run on; and smt_pct: the share of its speed
	 * a task keeps while its core's other CPU is busy (0: siblings do not share).
	 */
	double *speed;
	double *prio;            /* the kernel's ranking of the CPUs (ITMT or CPPC), higher first */
	int *sibling;            /* the other CPU of its core, -1 */
	bool kinds;
	int smt_pct;
	struct rqb_conf conf;    /* rqbalance's config (keep_pairs, imbalance_pct...) */
	struct spread_state pol;
	struct snapshot *snap;
	struct plan plan;
	uint64_t decide_ns;      /* time spent in the balancer's decisions */
	bool check;              /* assert the invariants every ms */
	int episode_len;         /* current imbalance, in ticks */
	bool imb_seen;           /* the last tick saw an LLC overloaded while another idled */
	struct sim_flips disp;   /* the request dispatcher on LLC 0, as a waker */
	long *llc_waiting, *llc_idle; /* scratch: per LLC, for the waste split */
	float *series;           /* ticks x nllcs runnable per LLC, for the plot */
	int nseries, series_cap;
	struct sim_stats st;
};

int sim_init(struct sim *s, const struct topo *t, enum sim_balancer bal, uint64_t seed);
void sim_fini(struct sim *s);
/* Adds a task, not yet alive; returns its index or -1. */
int sim_add(struct sim *s, enum sim_kind kind);
/* Adds a process of the cache model, gives it a tgid; returns its index or -1. */
int sim_add_proc(struct sim *s, const struct sim_proc *p);
/* Adds a task of process p, not yet alive; returns its index or -1. */
int sim_add_thread(struct sim *s, enum sim_kind kind, int p);
/* A task arrives now: placed as a fork from a parent on the given LLC would be. */
void sim_arrive(struct sim *s, int i, int llc);
/*
 * A task arrives now through the kernel's fork balancing (find_idlest_group): on the
 * LLC with the fewest runnable tasks per CPU, parent_llc first among equals.
 */
void sim_fork(struct sim *s, int i, int parent_llc);
void sim_depart(struct sim *s, int i);
/*
 * Wakes task i from waker, which runs on waker_cpu; a NULL waker is a timer. With a
 * waker, wake_wide() decides between its LLC (affine) and the task's previous one.
 */
void sim_wake(struct sim *s, int i, struct sim_flips *waker, int waker_cpu);
/* Advances one millisecond; every tick_ms the balancer runs. */
void sim_step(struct sim *s);
/* The CPU task i may run on with the shortest queue, LLC l first when l >= 0; -1 if none. */
int sim_least_loaded(const struct sim *s, int i, int l);
/* The k-th CPU of mask, round and round; -1 if it is empty. */
int sim_nth_cpu(const cpu_set_t *mask, int k);
/* Moves a queued task to another CPU's queue, as a migration. */
void sim_migrate(struct sim *s, int i, int cpu);
/* The balancer's tick (balance.c): metrics, then the balancer under test. */
void sim_balance(struct sim *s);
uint64_t sim_rand(struct sim *s);
/*
 * Of the wasted idle now (min of tasks waiting and CPUs idle), the part within LLCs
 * (a task waits beside an idle CPU of its own LLC) and the part across LLCs.
 */
void sim_waste(struct sim *s, long *ret_local, long *ret_cross);
/* Checks the invariants; returns NULL or what broke. */
const char *sim_invariants(const struct sim *s);
const char *sim_balancer_name(enum sim_balancer b);

/* ---- the cache model (machine.c), exposed for --check ---- */

/* Taking a wakee from its queue when its waker is in the same LLC, or another. */
uint32_t sim_wake_cost_ns(bool remote);
/* Refilling kb of working set at one core's memory bandwidth. */
uint64_t sim_warm_ns(uint64_t kb);
/*
 * The time a thread takes for one unit of work, 1.0 at full speed: llc_pct of its time
 * goes to LLC accesses; of those, shared_pct touch data all its threads share, of which
 * remote (0..1) was last written in another LLC, and over (0..1) miss the LLC.
 */
double sim_slowdown(int llc_pct, int shared_pct, double remote, double over);

/* ---- kinds of core (machine.c), exposed for --check ---- */

/*
 * A CPU's speed against the slowest kind of core: the ratio of its kind's highest
 * clock (hwloc's FrequencyMaxMHz) to the lowest kind's; 1 where the topology names
 * fewer than two kinds or a kind without a clock.
 */
double sim_core_speed(const struct topo *t, int cpu);
/*
 * A unit of work's time on a core of that speed, with slowdown (sim_slowdown) on its
 * llc_pct share: the core's speed shortens the rest, not the time spent on the cache.
 */
double sim_core_time(double speed, int llc_pct, double slowdown);

#endif
