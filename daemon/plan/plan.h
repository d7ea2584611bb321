/* The plan: a sorted, deduplicated list of intended actions with a deterministic dump. */
#ifndef RQB_PLAN_H
#define RQB_PLAN_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "snapshot/snap.h"

/* A cgroup path and a requester, as the latency actions carry them. */
#define PLAN_PATH_MAX 256
#define PLAN_SOURCE_MAX 48
/* The longest line plan_format writes, with its escapes. */
#define PLAN_LINE_MAX (4 * PLAN_PATH_MAX + 4 * PLAN_SOURCE_MAX + 256)

enum plan_op {
	PLAN_PIN,          /* narrow the task's affinity to mask (a soft pin on one LLC) */
	PLAN_UNPIN,        /* give the task back the affinity it had before its pin */
	PLAN_LAT_SET,      /* give the task latency-nice value (and the knobs it maps to) */
	PLAN_LAT_RESET,    /* give the task back what it had before its value */
	PLAN_LAT_CG_SET,   /* give cgroup path the weight of value */
	PLAN_LAT_CG_RESET, /* give cgroup path back the weight it had */
	/*
	 * Give the systemd unit (or cgroup) path whose processes all carry value the weight
	 * of value, and give it back: the weight follows its processes, not a request.
	 */
	PLAN_LAT_UNIT_SET,
	PLAN_LAT_UNIT_RESET,
	/*
	 * Weigh the class cgroup of value for class_k busy tasks (latweigh.h): its value's
	 * weight times class_k over class_div, the kernel's own multiplier for them.
	 */
	PLAN_LAT_CLASS,
};

struct plan_action {
	enum plan_op op;
	pid_t tid;
	pid_t tgid;
	uint64_t start_time;      /* with tid, the task's identity */
	int from_llc;             /* LLC it leaves, -1 if none */
	int to_llc;               /* LLC it goes to, -1 for "anywhere it was allowed" */
	cpu_set_t mask;           /* affinity to write */
	char comm[SNAP_COMM_LEN];
	const char *why;          /* static text */
	/* PLAN_LAT_*: */
	int value;                /* latency-nice, -20…19 (the SETs) */
	/*
	 * LAT_SET: the task whose settings this one inherited from the kernel (its
	 * creator, or its process's first thread), 0 for none: what that one had before
	 * rqbalance is what this one had.
	 */
	pid_t from_tid;
	/*
	 * LAT_SET: one of a process's tasks given a value as a whole: its first thread
	 * gone or refused (a real-time task) leaves the others as they are.
	 */
	bool whole;
	bool async_move;          /* LAT_SET: its class move may end later (lat_req's) */
	bool no_inherit;          /* LAT_SET: not handed down to its children (lat_req's) */
	char source[PLAN_SOURCE_MAX]; /* who asked: "ctl uid N", "rule NAME" */
	char path[PLAN_PATH_MAX];     /* LAT_CG_*, LAT_UNIT_*: the cgroup, in the cpu hierarchy */
	unsigned class_k;         /* LAT_CLASS: the busy tasks weighed for, 1 or more */
	unsigned class_div;       /* LAT_CLASS: the kernel's multiplier undone; 0 is 1 */
	unsigned order;           /* set by plan_add: keeps the first of duplicates first */
};

struct plan {
	size_t n, cap;
	struct plan_action *a;
};

void plan_init(struct plan *p);
void plan_fini(struct plan *p);
void plan_clear(struct plan *p);
/* Appends a copy (its order field is set here); 0 or -ENOMEM. */
int plan_add(struct plan *p, const struct plan_action *a);
/*
 * Sorts and deduplicates: affinity actions first, by tid then start time; then latency
 * actions on tasks, by process, its first thread before its others (a process refused
 * there is refused whole), then tid and start time; then latency actions on cgroups, by
 * path; then the classes' weights, by value. Of two affinity actions for one task, two latency actions for one task, or two
 * for one cgroup, only the first added stays.
 */
void plan_finish(struct plan *p);
/*
 * One line an action: "pin tid=12 tgid=10 comm="x" llc=0->1 cpus=2-3 why=overload",
 * "lat tid=12 tgid=10 start=345 value=-5 source="rule db" from=11 whole" (from only
 * when inherited, whole only for a whole process, then " noinherit" for no_inherit), "unlat tid=12 tgid=10 start=345",
 * "latcg path=/a value=3 source="…"", "unlatcg path=/a", and for a unit's weight
 * "latunit path=/a.slice/b.service value=3 source="…"", "unlatunit path=…", and a class's weight "latclass value=-5 k=4" (over a kernel's own multiplier: "k=4/3"). Paths and sources escape controls, '"' and '\' as \xHH, paths
 * blanks too.
 */
void plan_format(const struct plan_action *a, char *buf, size_t len);
const char *plan_op_name(enum plan_op op);
/* Whether op is one of the PLAN_LAT_* actions. */
bool plan_op_is_latency(enum plan_op op);

#endif
