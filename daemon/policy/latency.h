/*
 * Latency-nice (-20 … 19) and what a stock kernel offers for it: the one mapping
 * table, pure (policy layer). Measured on 6.18 (KERNEL-NOTES): only weight buys wakeup
 * latency against CPU hogs, from either side, and a task's nice only competes inside its
 * autogroup, so a value moves the task into a class cgroup of rqbalance's own whose
 * weight is the one the kernel gives that nice value, and sets the nice too (its weight
 * inside its own group); the EEVDF slice follows the value in both directions;
 * SCHED_BATCH and SCHED_IDLE only on the positive side.
 */
#ifndef RQB_LATENCY_H
#define RQB_LATENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/model.h"

#define LAT_SLICE_MIN_NS 100000ULL     /* the kernel clamps to 0.1 ms … 100 ms */
#define LAT_SLICE_MAX_NS 100000000ULL
/* lat_conf.default_slice_ns when unknown: the kernel's default on 2 CPUs. */
#define LAT_SLICE_DEFAULT_NS 1400000ULL
#define LAT_UNIT_WEIGHT_DEFAULT 100ULL /* systemd's CPUWeight where none is set */

#define LAT_MOVE_FROM_MAX 64 /* [latency] move_from patterns */

struct lat_conf {
	int batch_from;     /* SCHED_BATCH from this value up; 20 = never */
	bool idle_at_19;    /* SCHED_IDLE for a task, cpu.idle for a cgroup, at 19 */
	bool uclamp;        /* use uclamp where the kernel has it */
	bool class_cgroups; /* values move tasks into rqbalance's class cgroups */
	bool reset_on_fork; /* values but 0 set SCHED_FLAG_RESET_ON_FORK on their tasks */
	unsigned boost_cpu_pct; /* bounds a negative weight (see latency_map); 0 = no bound */
	/*
	 * The kernel's default slice (base_slice_ns, which follows the online CPUs), that
	 * a value's slice is a ratio of; read by the features probe, not the config.
	 * 0: unknown, taken as LAT_SLICE_DEFAULT_NS.
	 */
	uint64_t default_slice_ns;
	/*
	 * [latency] move_from: fnmatch(3) patterns (FNM_PATHNAME) of the cgroups, besides
	 * the top and the classes, whose tasks a value may move into a class. The strings
	 * are the config's, which a reload changes in place.
	 */
	unsigned nmove_from;
	const char *move_from[LAT_MOVE_FROM_MAX];
};

struct lat_knobs {
	int policy;          /* SCHED_OTHER, SCHED_BATCH or SCHED_IDLE */
	int nice;            /* the task's nice: the value itself, its weight among its peers */
	uint64_t slice_ns;   /* EEVDF sched_runtime; 0 = the kernel's default slice */
	int uclamp_min;      /* 0…1024, -1 = leave as it is */
	int uclamp_max;      /* 0…1024, -1 = leave as it is */
	int reset_on_fork;   /* 1: SCHED_FLAG_RESET_ON_FORK, -1 = leave as it is */
	bool use_class;      /* per task: belongs in the class cgroup for this value (not 0) */
	uint32_t shares;     /* weight of that class, or of a cgroup target (1024 = default) */
	bool cg_idle;        /* a cgroup target gets cpu.idle = 1 */
};

/* The knobs for value v (LAT_MIN…LAT_MAX) under c. */
void latency_map(const struct lat_conf *c, int v, struct lat_knobs *ret);
/*
 * The slice value v gets where the kernel's default is default_ns (0: unknown): the
 * default x 2^(v/5) within the kernel's 0.1-100 ms, and 0 (the default itself) for
 * 0 and wherever the bound leaves no slice on the value's side of the default.
 */
uint64_t latency_slice_ns(uint64_t default_ns, int v);
/* The kernel's nice → weight table, nice -20…19 (1024 at 0). */
uint32_t latency_nice_weight(int nice);
/*
 * Whether moving a task whose own nice is nice into the class of value v gives it more
 * weight than that nice does, where the classes share a parent of weight parent_shares
 * (in v1 cpu.shares; 0 where they sit at the top): see latency.c.
 */
bool latency_class_gains(int v, int nice, uint64_t parent_shares);
/* v1 cpu.shares → cgroup2 cpu.weight (and systemd CPUWeight=), 1…10000. */
uint32_t latency_shares_to_weight(uint32_t shares);
/* A value given as text: -20…19, with a reason on error. 0 or -EINVAL. */
int latency_parse(const char *s, int *ret, const char **ret_reason);

/*
 * A process target on a systemd host. Each scope and service is a cgroup of systemd's,
 * and where the cpu controller separates them (Debian enables it down to the user
 * slices) a task's nice only counts inside its own unit. The unit's CPUWeight is what
 * buys latency across units, and it weighs every process in the unit: rqbalance sets
 * it only where every process in the unit's cgroup (and below) carries the same value,
 * so that no process gets a weight nobody asked for it. Units of one user, or whose
 * values all come from a trusted source (a rule, root, a CAP_SYS_NICE caller): a user's
 * request never changes a unit that another user's process shares.
 */
struct lat_member {
	pid_t pid;          /* a process in the unit's cgroup or below */
	uint32_t ruid, euid;
	int value;          /* its latency-nice value, LAT_NONE without one */
	bool trusted;       /* the value came from a rule or a privileged caller */
};

enum lat_unit_verdict {
	LAT_UNIT_OWN = 0,   /* every process carries the value: the unit gets its weight */
	LAT_UNIT_NOT_A_UNIT,/* no systemd unit owns the cgroup (the root, a hand-made one) */
	LAT_UNIT_DELEGATED, /* inside a unit's delegated subtree: the unit's payload's */
	LAT_UNIT_SHARED,    /* processes without the value share the unit */
	LAT_UNIT_OTHERS,    /* processes with another value share the unit */
	LAT_UNIT_USERS,     /* another user's processes share it, on a user's request */
	LAT_UNIT_TOO_MANY,  /* more processes than were read */
	LAT_UNIT_HELD_BACK, /* someone set its weight below the default; the value would raise it */
};

struct lat_unit_view {
	const char *cgroup;            /* the cgroup path, as /proc/PID/cgroup gives it */
	const char *unit;              /* its unit; "" when cgsd_unit_for_cgroup said none */
	bool delegated;                /* the path lies in a unit's delegated subtree */
	const struct lat_member *m;    /* its processes, those below included */
	size_t n;
	bool truncated;                /* there were more than n */
	/*
	 * Its CPUWeight before rqbalance set it (now, where it has not): 0 where it is not
	 * set (the default, 100), else 1…10000; before_idle for idle. Below the default
	 * someone holds the unit's CPU back, and no value raises it above that, as no
	 * value moves a task out of a cgroup someone else put it in (latency_cg_decide).
	 */
	uint64_t before_weight;
	bool before_idle;
};

struct lat_unit_decision {
	enum lat_unit_verdict verdict;
	int value;                     /* the value the members carry (OWN), else LAT_NONE */
	uint64_t weight;               /* systemd CPUWeight for it, 1…10000; 0 = idle (OWN) */
	size_t others;                 /* members that keep the unit from being OWN */
	char why[160];                 /* why not OWN, for rqctl get and the log; "" if OWN */
};

/* What the unit of a process target gets; the decision, pure. */
void latency_unit_decide(const struct lat_conf *c, const struct lat_unit_view *v,
		     struct lat_unit_decision *ret);

/*
 * Whose a task's cgroup is, before rqbalance moves it into a class. rqbalance moves a
 * task only out of a cgroup it can show is its own to move from (latency_cg_movable): the
 * top, its classes, or one the config names. Anywhere else someone put the task, and
 * it keeps its cgroup and gets the value's nice, policy and slice: an allow-list,
 * never a judgement of what the cgroup's limits look like.
 */
enum lat_cg_verdict {
	LAT_CG_OURS = 0,    /* where rqbalance put it (or may put it): it may be moved */
	LAT_CG_MOVED,       /* someone else moved it (or its creator) since: theirs */
	LAT_CG_PLACED,      /* a first value, in a cgroup not rqbalance's to move from: left */
};

struct lat_cg_view {
	const char *cur;    /* the task's cgroup now */
	/*
	 * Where rqbalance put it (a task it holds), or, for a new task, where the kernel
	 * put it by inheritance from a creator rqbalance holds: the creator's. NULL for a
	 * task given its first value.
	 */
	const char *held;
	/*
	 * For a new task, where its creator was before rqbalance moved it into held: a task
	 * the kernel made before that move landed (it waits for an RCU grace period, or for
	 * the worker) was made there, not moved there by anyone. NULL: not a new task.
	 */
	const char *held_before;
	bool movable;       /* cur is rqbalance's to move a task out of (latency_cg_movable) */
};

/*
 * Whether cgroup cur (as /proc/PID/cgroup names it) is one rqbalance may move a task
 * out of: the top of the hierarchy ("/", where every task sits that no one placed, in
 * its session's autogroup), one of its own classes (class_parent/rqbalance-latN, with
 * class_parent "/" for the top), or one that c->move_from names.
 */
bool latency_cg_movable(const struct lat_conf *c, const char *class_parent, const char *cur);
enum lat_cg_verdict latency_cg_decide(const struct lat_cg_view *v);
/* What a verdict says, for rqctl get and the log: "" for LAT_CG_OURS. */
const char *latency_cg_why(enum lat_cg_verdict verdict);

#endif
