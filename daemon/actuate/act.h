/*
 * The actuator: the only code that changes the system. One table of operations
 * (a Linux driver and a dry-run driver); journals before it writes, reads back,
 * writes only on difference, and sorts errors into transient and permanent.
 */
#ifndef RQB_ACT_H
#define RQB_ACT_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "plan/plan.h"

struct journal;
struct rqb_sched_attr;

/* A task opened for acting on, its identity checked. */
struct act_task {
	pid_t tid;
	uint64_t start_time;
	int pidfd;            /* -1 where the kernel cannot open one for a thread */
};

/* Whoever holds a task number now, as act_ops.who reads it. */
struct act_who {
	uint64_t start_time;  /* clock ticks after boot */
	pid_t tgid;           /* its process */
	pid_t ppid;           /* its parent process; 0 for none */
};

struct act_ops {
	const char *name;     /* for the log: "linux", "dry run" */
	/*
	 * Opens the journal file name in dir, locked: -EBUSY while another daemon holds
	 * it. A driver that writes nothing opens none (*ret NULL), and without a journal
	 * the actuators keep nothing they would have to give back. 0 or -errno.
	 */
	int (*journal)(const char *dir, const char *name, struct journal **ret);
	/* Opens tid if its start time is start_time: 0, -ESRCH (gone or reused), -errno. */
	int (*open)(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret);
	/*
	 * Opens tid from pidfd, a pidfd of it opened before its start time was read as
	 * start_time (procfs_pidfd_open): what open would give, without reading the start
	 * time again. pidfd stays the caller's. NULL in a driver that has none (open then).
	 */
	int (*adopt)(int pidfd, pid_t tid, uint64_t start_time, struct act_task *ret);
	/* 0 while the task opened is alive, -ESRCH once it is gone. */
	int (*alive)(const struct act_task *t);
	/*
	 * Who holds task number tid now (its start time, process and parent), for
	 * act_reuse_find: 0, or -ESRCH when no task does.
	 */
	int (*who)(pid_t tid, struct act_who *ret);
	int (*get_affinity)(const struct act_task *t, cpu_set_t *ret);
	/*
	 * The writes that name a task by its number (set_affinity, set_attr, attach), made
	 * through an opened task: only while t is alive, and checked after the write.
	 * 0: t held its number throughout, so the kernel wrote t. -ESRCH: t was gone
	 * before, nothing written. -ESTALE: written, but by the end t had been released,
	 * so the kernel may have found another task that took the number in between
	 * (act_reuse_find finds it, for the caller to undo what it wrote there). Else
	 * -errno, nothing written.
	 */
	int (*set_affinity)(const struct act_task *t, const cpu_set_t *mask);
	void (*close)(struct act_task *t);
	/*
	 * Calls fn for every thread of process tgid, and every thread of its descendant
	 * processes (children, their children…, each started at or after since), started
	 * at or after since (clock ticks after boot): the tasks that may have inherited
	 * what rqbalance set on a thread of tgid (none where the driver writes nothing).
	 * 0 or -errno.
	 */
	int (*offspring)(pid_t tgid, uint64_t since,
			 void (*fn)(void *ctx, pid_t tid, pid_t tgid, uint64_t start), void *ctx);
	/*
	 * The latency actuator's writes (latact.h). Paths are absolute, under the cpu
	 * hierarchy's mount, so that a test can point them at a fake tree. 0 or -errno.
	 */
	/* sched_getattr: what a task has of what set_attr writes, read before and back. */
	int (*get_attr)(pid_t tid, struct rqb_sched_attr *ret);
	/* sched_setattr: a task's policy, nice, slice and uclamp in one call (as above). */
	int (*set_attr)(const struct act_task *t, const struct rqb_sched_attr *a);
	/*
	 * Moves t into a cgroup, writing its number to the group's cgroup.procs (its whole
	 * process) or tasks file (as above).
	 */
	int (*attach)(const char *procs_file, const struct act_task *t);
	/* Writes a cgroup file: cpu.shares, cpu.weight, cpu.idle, cpu.max, subtree_control… */
	int (*write)(const char *path, const char *text);
	/* Makes a class cgroup, or their parent: 0 where it is there already. */
	int (*mkdir)(const char *dir);
	/* Removes an empty class cgroup, or their parent. */
	int (*rmdir)(const char *dir);
	/* A systemd unit's CPUWeight over D-Bus (sd_bus *bus): w, or "idle" if idle. */
	int (*unit_weight)(void *bus, const char *unit, uint64_t w, bool idle, char *err,
			   size_t errlen);
	/*
	 * Logs what came of a plan action, r (0 or -errno) with why (a reason, or NULL):
	 * the Linux driver says what was done, the dry-run driver what would be.
	 */
	void (*log_action)(const struct plan_action *pa, int r, const char *why);
};

/* Clock ticks after boot now: the unit of start times in /proc. */
uint64_t act_boot_ticks(void);

/*
 * After a write through gone's number came back -ESTALE (act_ops): the task that holds
 * the number now, if it is another one (opened into *ret_holder), and its creator,
 * whose state the kernel copied into it when it made it: its process's leader for a
 * thread, its parent for a process or where the write acted on the whole process
 * (process: a cgroup.procs write), opened into *ret_creator. 0, or -ESRCH where no
 * other task holds the number, or its creator is gone: nothing to compare with, and
 * the caller undoes nothing. The caller closes both.
 */
int act_reuse_find(const struct act_ops *ops, const struct act_task *gone, bool process,
		   struct act_task *ret_holder, pid_t *ret_holder_tgid, struct act_task *ret_creator);

extern const struct act_ops act_linux_ops;
extern const struct act_ops act_dryrun_ops;

/* A task rqbalance changed: what it had and what it was given. */
struct act_entry {
	struct act_task task;
	pid_t tgid;
	cpu_set_t prev;
	cpu_set_t set;
	uint64_t since;          /* clock ticks after boot of the first change */
};

struct act_counters {
	uint64_t moves;          /* affinity writes that took */
	uint64_t restores;       /* affinities given back */
	uint64_t inherited;      /* of those, to threads and children that inherited a pin */
	uint64_t left_alone;     /* entries dropped because the task changed it itself */
	uint64_t gone;           /* entries dropped because the task exited */
	uint64_t transient;      /* errors worth a retry next tick */
	uint64_t permanent;      /* errors that dropped the action */
};

struct act {
	const struct act_ops *ops;
	struct journal *journal;  /* NULL where the driver opens none */
	size_t n, cap;
	struct act_entry *e;      /* sorted by tid */
	struct act_counters cnt;
};

/*
 * Told about every task whose pin the actuator dropped or could not make: err is
 * -ESRCH or -ENOENT where the task is gone, 0 where someone else changed its
 * affinity, else why the kernel refused.
 */
typedef void (*act_dropped_fn)(void *ctx, pid_t tid, uint64_t start_time, int err);

/*
 * Opens the journal in journal_dir through ops (the dry-run driver opens none) and
 * first gives back whatever a previous run left in it. 0 or -errno (-EBUSY: another
 * daemon holds the journal).
 */
int act_init(struct act *a, const struct act_ops *ops, const char *journal_dir);
/* Restores every task still as rqbalance left it, then closes the journal. */
void act_fini(struct act *a);
/* Carries out a plan; returns how many actions took. */
int act_apply(struct act *a, const struct plan *p, act_dropped_fn dropped, void *ctx);
/* Drops entries whose task exited or changed its own affinity since. */
void act_verify(struct act *a, act_dropped_fn dropped, void *ctx);
/* Gives back every affinity still as rqbalance set it. Returns the number restored. */
int act_restore_all(struct act *a);
static inline size_t act_managed(const struct act *a) { return a->n; }
/* -ESRCH, -EPERM, -EINVAL...: permanent; -EAGAIN, -EINTR, -EBUSY, -ENOMEM: transient. */
bool act_error_is_transient(int err);

#endif
