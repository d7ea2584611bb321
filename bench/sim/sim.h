/*
 * The simulator's machine: CPUs with run queues, tasks of three kinds, a simple
 * model of the kernel's own placement, and the balancer under test on top.
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

struct sim_task {
	enum sim_kind kind;
	pid_t tid;
	int partner;            /* index of the other half of a pair, -1 */
	bool alive;             /* arrived and not departed */
	bool queued;            /* on a run queue (runnable) */
	int cpu;                /* where it is queued, or ran last */
	int left_ms;            /* work left in the current burst (not hogs) */
	uint64_t wake_ms;       /* SIM_REQ: when the dispatcher wakes it next */
	uint64_t arrive_ms;     /* SIM_HOG: lifetime */
	uint64_t depart_ms;
	int slice_ms;           /* ran since it last reached the head of its queue */
	unsigned ran_ms;        /* ran in the current tick: the task's utilization */
	int cold_ms;            /* run time still lost to a cold cache after leaving an LLC */
	bool handed;            /* SIM_PAIR: woken while still running: go on when done */
	int side_every;         /* SIM_PAIR: also wakes a listener every this many bursts; 0 never */
	unsigned nbursts;       /* bursts completed */
	unsigned work_ms;       /* CPU time spent on progress */
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
	uint64_t work_ms;        /* CPU time spent on useful work (not refilling a cache) */
	uint64_t bursts;         /* request and pair bursts completed */
	uint64_t wakes;          /* wakeups by a waker (a task or the dispatcher) */
	uint64_t wide_wakes;     /* of those, placed wide: wake_wide() said not affine */
	uint64_t episodes;       /* imbalances seen (an LLC over its CPUs, another idle) */
	uint64_t episode_ticks;  /* ticks spent imbalanced, summed */
	uint64_t episode_max;    /* longest imbalance, in ticks */
	double spread_sum;       /* sum over ticks of max - min runnable per LLC */
	uint64_t ticks;
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
/* A task arrives now: placed as a fork from a parent on the given LLC would be. */
void sim_arrive(struct sim *s, int i, int llc);
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

#endif
