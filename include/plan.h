/* The plan: a sorted, deduplicated list of intended actions with a deterministic dump. */
#ifndef RQB_PLAN_H
#define RQB_PLAN_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "snapshot.h"

enum plan_op {
	PLAN_PIN,   /* narrow the task's affinity to mask (a soft pin on one LLC) */
	PLAN_UNPIN, /* give the task back the affinity it had before its pin */
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
/* Sorts by tid then start time; of two actions for one task only the first added stays. */
void plan_finish(struct plan *p);
/* One line an action: "pin tid=12 tgid=10 comm="x" llc=0->1 cpus=2-3 why=overload". */
void plan_format(const struct plan_action *a, char *buf, size_t len);
void plan_dump(const struct plan *p, FILE *out);
const char *plan_op_name(enum plan_op op);

#endif
