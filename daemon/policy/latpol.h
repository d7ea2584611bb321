/*
 * The latency decisions (policy stage): who gets which latency-nice value, and from
 * whom, given what the manager read (plain structs) and a ctl request, a rule set, or
 * a fork. Out come plan actions (plan.h); the latency actuator carries them out.
 */
#ifndef RQB_LATPOL_H
#define RQB_LATPOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/model.h"
#include "plan/plan.h"
#include "policy/rules.h"

/* A task as the manager read it. */
struct latpol_task {
	pid_t tid;
	pid_t tgid;
	uint64_t start_time;    /* clock ticks after boot, as /proc/TID/stat says */
	bool gone;              /* not there, or its stat not readable */
	bool kthread;           /* a kernel thread */
	int value;              /* the value rqbalance gave it, LAT_NONE if none */
	const char *source;     /* and who asked for it; "" if none */
	bool no_inherit;        /* and not handed down (lat_req.no_inherit) */
};

/* A process as the manager read it. */
struct latpol_proc {
	struct latpol_task lead;        /* its first thread (tid = tgid) */
	const struct latpol_task *t;    /* its threads, in any order; lead's among them or not */
	size_t nt;
	bool no_threads;                /* its thread list could not be read */
};

/* The manager's record of a process given a value (latmgr_proc). */
struct latpol_rec {
	bool managed;           /* there is one: the fields below hold */
	uint64_t start_time;
	int value;
	const char *source;
	bool from_rule;         /* a rule's, not a ctl request's */
	bool no_inherit;        /* not handed down: a rule's inherit = no */
};

/*
 * Every thread of process p gets rq's value from rq's source, but those that already
 * have it from that source; the first thread first. rq->start_time: the start time
 * the request was decided on (0: as it is now); rq->from_tid: the task whose settings
 * they inherited (0: none); the target is p (rq's tid and tgid are not read). self:
 * rqbalanced's pid. Returns the actions added, or -ESRCH or -EPERM with *ret_why
 * (then none).
 */
int latpol_process(const struct latpol_proc *p, const struct lat_req *rq, pid_t self,
		   struct plan *ret, const char **ret_why);
/* One task, t, only, whatever it has now. 1, or -ESRCH or -EPERM with *ret_why. */
int latpol_task(const struct latpol_task *t, const struct lat_req *rq, pid_t self,
		struct plan *ret, const char **ret_why);

/*
 * Gives back what process tgid's tasks had: e, its tasks that have a value (the
 * actuator's entries); rec, its record. expect (0: any): the start time the request
 * was decided on: a record, or a first thread, of another start time is another
 * process, which keeps its value. Returns the actions added, or -ENOENT (none).
 */
int latpol_reset_process(pid_t tgid, const struct latpol_rec *rec, uint64_t expect,
			 const struct latpol_task *e, size_t n, struct plan *ret);
/* One task (e: its entry, NULL if none). 1 or -ENOENT. */
int latpol_reset_task(const struct latpol_task *e, uint64_t expect, struct plan *ret);

/* A cgroup target (rqctl set -g, reset -g). Returns 1. */
int latpol_cgroup(const char *path, int v, const char *source, struct plan *ret);
int latpol_cgroup_reset(const char *path, struct plan *ret);

/*
 * The unit (its cgroup, path) of managed processes, as latency_unit_decide found it
 * (d; NULL: no managed process is left in it). held: the value rqbalance gave the
 * unit for its processes, LAT_NONE if none. A unit whose processes all carry a value
 * gets its weight; one that no longer does gets back what it had. Returns the
 * actions added (0 or 1), or -ENOMEM.
 */
int latpol_unit(const char *path, const struct lat_unit_decision *d, int held,
		const char *source, struct plan *ret);

/* What the rules say of a process. */
enum latpol_rule_verdict {
	LATPOL_RULE_KEEP,       /* nothing changes */
	LATPOL_RULE_GIVE_BACK,  /* a rule's value no rule gives any more */
	LATPOL_RULE_APPLY,      /* a rule gives it a value (new or another) */
};
/* Whether the rules may touch a process: not rqbalanced, not a ctl request's value. */
bool latpol_rules_may_change(const struct latpol_rec *rec, bool self);
/*
 * The rules on a process identified as id (NULL: not readable, gone, or a kernel
 * thread) that has rec. APPLY sets *ret_rule (its index in rs) and ret_source
 * (PLAN_SOURCE_MAX bytes: "rule NAME").
 */
enum latpol_rule_verdict latpol_rule(const struct rule_set *rs, const struct proc_ident *id,
				     const struct latpol_rec *rec, int *ret_rule,
				     char *ret_source);

/* A task that a task of a managed process created. */
struct latpol_fork {
	struct latpol_rec creator;  /* the creating process's record (managed) */
	bool thread;                /* a new thread of it, else a new process */
	bool creator_known;         /* the event names the creating task (BPF) */
	/*
	 * The kernel gave the new task what rqbalance set on from_tid (nice, policy,
	 * class cgroup): where the creator is not known, the task it came from held the
	 * value (the parent of record is not the creator after CLONE_PARENT).
	 */
	bool inherited;
	pid_t from_tid;             /* the entry it inherited from, 0 if none */
	struct latpol_task child;
};
/*
 * The creator's value and source for the new task, where it inherited them: 1 action,
 * or 0 (*ret_why says why not), or -ESRCH or -EPERM with *ret_why. A new process of a
 * creator whose value is not handed down gets none (0): latpol_hands_down says so.
 */
int latpol_fork(const struct latpol_fork *f, pid_t self, struct plan *ret, const char **ret_why);
/*
 * A process a walk of /proc found (started at start), whose parent of record has
 * parent: whether it takes the parent's value (then latpol_process, with the parent's
 * value and source). A rule's value goes only to those the rule matches.
 */
bool latpol_adopt(const struct latpol_rec *parent, uint64_t start, bool inherited);
/*
 * Whether a task made by a process of record creator (thread: a new thread of it, else
 * a new process) keeps the creator's value: a value not handed down (a launcher's)
 * stays with the process's threads, and what it starts is given back what it copied.
 */
bool latpol_hands_down(const struct latpol_rec *creator, bool thread);

/*
 * The mapping or the rules changed: every task that has a value (e, the actuator's
 * entries) is given it anew. Returns the actions added.
 */
int latpol_reapply(const struct latpol_task *e, size_t n, struct plan *ret);

#endif
