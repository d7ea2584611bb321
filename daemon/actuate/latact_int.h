/*
 * What the parts of the latency actuator share (latact.c, latact_journal.c,
 * latact_cls.c, latact_task.c, latact_cg.c, latact_replay.c, latact_move.c,
 * latact_reuse.c, latact_offspring.c); nothing outside
 * daemon/actuate/latact*.c includes it.
 */
#ifndef RQB_LATACT_INT_H
#define RQB_LATACT_INT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "actuate/latact.h"

#define LATACT_JOURNAL_HEAD "# rqbalance latency journal v1\n"
/* Compact the journal when it holds this many more lines than live entries (as act.c). */
#define LATACT_JOURNAL_SLACK 1024

/* latact_journal.c: the journal's records. */
void latact_escape_field(const char *s, char *ret, size_t size);
int latact_unescape_field(const char *in, char *ret, size_t size);
int latact_journal_task(struct latact *la, const struct lat_entry *e);
void latact_journal_untask(struct latact *la, pid_t tid, uint64_t start);
int latact_journal_cg(struct latact *la, const struct lat_cg_entry *c);
void latact_journal_uncg(struct latact *la, const char *path);
void latact_compact(struct latact *la);

/* latact_cls.c: the class hierarchy, and whose a task's cgroup is. */
int latact_read_task_cgroup(const struct latact *la, pid_t tid, char *ret, size_t size);
/*
 * Moves task t into cgroup (a path in the cpu hierarchy; "/" is its top): the driver's
 * checked write (act.h). latact_cls_attach undoes a write that may have reached a task
 * that took t's number (-ESTALE: latact_cls_undo_move) and says -ESRCH for it;
 * latact_cls_write leaves that to its caller (the class moves' worker, which touches no
 * entry).
 */
int latact_cls_write(const struct latact *la, const char *cgroup, const struct act_task *t);
int latact_cls_attach(struct latact *la, const char *cgroup, const struct act_task *t);
/*
 * Moves leader's whole process into cgroup in one write (cgroup.procs, v1 and cgroup2):
 * one wait for the kernel's grace period instead of one a thread. -ESRCH as above.
 */
int latact_cls_attach_process(struct latact *la, const char *cgroup, const struct act_task *leader);
/*
 * A move of t into cgroup came back -ESTALE: the task that took t's number goes back
 * to the cgroup it was made in, where it is in cgroup and its creator is not (as
 * latact_undo_sched does for the sched knobs).
 */
void latact_cls_undo_move(struct latact *la, const struct act_task *t, const char *cgroup);
int latact_class_ensure(struct latact *la, int v, char *ret, size_t size);
void latact_classes_find(struct latact *la);
void latact_classes_stale(struct latact *la);
void latact_classes_reweigh(struct latact *la);
void latact_classes_remove(struct latact *la);
/* Empties the class groups (their tasks to the top) and removes them; their parent stays. */
void latact_classes_clear(struct latact *la);
/* The tasks in class v (v1 tasks; cgroup2 cgroup.procs, its processes), all: *ret to free. */
int latact_class_members(const struct latact *la, int v, pid_t **ret, size_t *ret_n);
/* The processes with a task in class v (cgroup.procs, v1 and cgroup2): *ret to free. */
int latact_class_procs(const struct latact *la, int v, pid_t **ret, size_t *ret_n);
bool latact_cls_movable(const struct latact *la, const char *cg);

/* latact_task.c and latact_cg.c: give back what an entry set, where still as set. */
void latact_restore_entry(struct latact *la, const struct lat_entry *e);
/*
 * The same after a crash, from the journal: a knob that still holds was (what
 * rqbalance had set before e's last record, which the crash may have kept it from
 * writing) is rqbalance's too.
 */
void latact_restore_crashed(struct latact *la, const struct lat_entry *e,
			    const struct lat_state *was);
/* A cgroup's the same way: was's set_weight and set_idle are rqbalance's too. */
void latact_restore_cg_crashed(struct latact *la, const struct lat_cg_entry *c,
			       const struct lat_cg_entry *was);
void latact_restore_cg(struct latact *la, const struct lat_cg_entry *c);

/* latact_task.c: the sched knobs of want, written to t (act.h's checked write). */
int latact_write_sched(const struct latact *la, const struct act_task *t,
		       const struct lat_state *want);
/* latact_task.c: task tid's entry, to change; NULL if none. */
struct lat_entry *latact_entry_of(struct latact *la, pid_t tid);

/*
 * latact_reuse.c: a write through t's number came back -ESTALE (act.h): the task that
 * took the number gets back what it was made with, where it holds exactly what was
 * written (the sched knobs of written) and its creator does not. The class cgroup's
 * counterpart is latact_cls_undo_move.
 */
void latact_undo_sched(struct latact *la, const struct act_task *t,
		       const struct lat_state *written);

/* latact_move.c: class moves made by a worker thread (latact_moves_start). */
/* Queues the move of task tid (started at start_time) into cgroup; -EAGAIN: make it now. */
int latact_move_async(struct latact *la, const char *cgroup, pid_t tid, pid_t tgid,
		      uint64_t start_time);

/*
 * latact_offspring.c: the end of the favours recs (a crashed run's journal, or every
 * give-back of a stop) by state: every thread and descendant of a recorded task that
 * holds exactly what rqbalance wrote on it (nice, policy, slice, uclamp), or its class
 * cgroup, gets back what the recorded task had before, knob by knob where still as
 * written; then every task left in a class of rqbalance's, from a record of its
 * process or of that value. One pass over /proc, each task read once. why is for the log.
 */
void latact_give_back_offspring(struct latact *la, const struct lat_entry *const *recs,
				size_t n, const char *why);

/* latact_replay.c: restores what the journal says a previous run left, then starts it afresh. */
void latact_recover(struct latact *la);

#endif
