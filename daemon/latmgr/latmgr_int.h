/*
 * What the latency manager's files share, and nothing outside daemon/latmgr/ includes:
 * latmgr.h is the manager's one face. The files, by job: latmgr.c the process table and
 * the requests on it; latmgr_plan.c what the policy reads and the plans it hands to
 * the actuator; latmgr_fg.c the foreground and games; latmgr_rules.c rules, /proc walks and the
 * tick; latmgr_events.c fork, exec and exit; latmgr_source.c which event source;
 * latmgr_units.c systemd units; latmgr_view.c what get, list, explain and status show.
 */
#ifndef RQB_LATMGR_INT_H
#define RQB_LATMGR_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "actuate/latact.h"
#include "latmgr/latmgr.h"
#include "plan/plan.h"
#include "policy/latpol.h"
#include "taskev/evsrc.h"
#include "taskev/ident.h"

/* What the kernel said a process runs (BPF): from its exec event, or a task walk. */
struct latmgr_exe {
	uint64_t start_ns;      /* the process's start, CLOCK_BOOTTIME ns */
	struct ident_exe id;    /* the file it runs */
};

/* ---- latmgr_procs.c: the process table ---- */

/* Adds p, or replaces the record of its tgid. 0 or -ENOMEM. */
int latmgr_proc_put(struct latmgr *m, const struct latmgr_proc *p);
void latmgr_proc_del(struct latmgr *m, pid_t tgid);
/* The record of process rq->tgid, started at start, given rq's value. 0 or -ENOMEM. */
int latmgr_proc_record(struct latmgr *m, const struct lat_req *rq, uint64_t start,
		       bool from_rule);
/*
 * The record under number tgid as the events read so far leave it, whichever process
 * it was made for: only for the event handlers, which read fork, exec and exit in the
 * kernel's order (latmgr_find_process for everyone else).
 */
const struct latmgr_proc *latmgr_event_process(const struct latmgr *m, pid_t tgid);
/*
 * Process rq->tgid gets rq's value (latmgr_set_threads) and a record, a rule's if
 * from_rule. Returns the tasks given the value, or -errno with *ret_why.
 */
int latmgr_give_process(struct latmgr *m, const struct lat_req *rq, bool from_rule,
			const char **ret_why);
/*
 * Gives back what process tgid had, and forgets its record: the tasks given back, or
 * -ENOENT if it was not managed, or (expect not 0) has another start time.
 */
int latmgr_take_back(struct latmgr *m, pid_t tgid, uint64_t expect);
/*
 * Every thread of managed process p gets its value; from: the entry of the task they
 * inherited their settings from, or NULL. As latmgr_set_threads.
 */
int latmgr_refill_threads(struct latmgr *m, const struct latmgr_proc *p,
			  const struct lat_entry *from);

/* ---- latmgr_plan.c: what the policy reads, and its plans to the actuator ---- */

/* Start time and kernel-thread flag of a task (proc/procfs); -ESRCH when it is gone. */
int latmgr_task_info(const struct latmgr *m, pid_t tid, uint64_t *ret_start, bool *ret_kthread);
/* Task tid (of tgid) as it is now, with the value rqbalance gave it. */
void latmgr_read_task(const struct latmgr *m, pid_t tid, pid_t tgid, struct latpol_task *ret);
/* The manager's record of a process (NULL: none), as the policy reads it. */
struct latpol_rec latmgr_rec_of(const struct latmgr_proc *p);
/* The tasks that have a value (of process tgid; 0: all), as the policy reads them; to free. */
struct latpol_task *latmgr_entries_of(const struct latmgr *m, pid_t tgid, size_t *ret_n);
/*
 * Hands a plan to the actuator, the manager's one caller of latact_apply_plan: one
 * result an action (to free), or NULL (nothing done).
 */
struct latact_result *latmgr_apply(struct latmgr *m, const struct plan *pl);
/*
 * latmgr_apply with the threads rq's judge read handed to the actuator for the plan
 * (latact_hand): their pidfds and cgroups, so that none is read again.
 */
struct latact_result *latmgr_apply_judged(struct latmgr *m, const struct plan *pl,
					  const struct lat_req *rq);
/* The one result of a plan of one action, or the policy's answer r when it is not 1. */
int latmgr_apply_one(struct latmgr *m, struct plan *pl, int r, const char **ret_why);
/*
 * What a plan for a process came to (its results res, one an action): its first
 * thread's refusal (-ESRCH, -EPERM), else the tasks given the value, or an error
 * where none was (a thread that exited meanwhile is no failure).
 */
int latmgr_threads_result(const struct plan *pl, const struct latact_result *res,
			  const char **ret_why);
/*
 * The plan for every thread of process rq->tgid to have rq's value (each thread read),
 * into pl: as latmgr_set_threads, without carrying it out. Its count of actions,
 * 0 where nothing is to change, or -errno with *ret_why.
 */
int latmgr_plan_threads(struct latmgr *m, const struct lat_req *rq, struct plan *pl,
			uint64_t *ret_start, const char **ret_why);
/*
 * Gives every thread of process rq->tgid rq's value; rq->from_tid: the task whose
 * settings they inherited (0: none). rq->start_time: the start time the decision was
 * made on (0: as it is now); if the pid now names another process, nothing is done.
 * ret_start, if not NULL, gets the process's. Returns the tasks given the value, or
 * -errno with *ret_why.
 */
int latmgr_set_threads(struct latmgr *m, const struct lat_req *rq, uint64_t *ret_start,
			  const char **ret_why);

/* ---- latmgr_fg.c: the foreground, and games ---- */

/* The front of f exited: its grant ends, as at the caller's call with no process. */
void latmgr_fg_exited(struct latmgr *m, struct latmgr_fg *f);
/* A game exited: its grant ends, and its record is freed. */
void latmgr_game_exited(struct latmgr *m, struct latmgr_fg *g);

/* ---- latmgr_rules.c ---- */

/*
 * Applies the rules to process pid; a ctl value is left as it is. kx, where known, is
 * what the kernel said the process runs; at_exec: at its exec event (its class move
 * may end after the call). True if a rule's value was given just now.
 */
bool latmgr_apply_rules(struct latmgr *m, pid_t pid, const struct latmgr_exe *kx, bool at_exec);
/* The rules' exe files by (device, inode), built again. */
void latmgr_exetab_build(struct latmgr *m);
/* Watches the folders of the exe rules' files, so that the table follows them. */
void latmgr_exe_watch(struct latmgr *m);
void latmgr_exe_unwatch(struct latmgr *m);

/* ---- latmgr_events.c: fork, exec, exit ---- */

/* The manager's callbacks for its event source (ctx: the manager). */
extern const struct evsrc_callbacks latmgr_event_callbacks;
/* One bounded batch of events; notes when the source was read to empty. */
void latmgr_dispatch(struct latmgr *m);
/* The loop's handler of the source's fd (ctx: the manager): latmgr_dispatch. */
int latmgr_events_ready(sd_event_source *s, int fd, uint32_t revents, void *userdata);
/* The entry of the task a new one came from: that thread's, else its process's first. */
const struct lat_entry *latmgr_from_of(const struct latmgr *m, pid_t tid, pid_t tgid);
/* Whether the kernel gave task tid what rqbalance set on from (see latmgr_events.c). */
bool latmgr_kernel_inherited(const struct latmgr *m, pid_t tid, const struct lat_entry *from);

/* ---- latmgr_units.c: each managed process's unit (latmgr_units_refresh) ---- */

/* Process p (in the table) counts in the unit it is in now; a unit it left is marked. */
void latmgr_unit_place(struct latmgr *m, struct latmgr_proc *p);
/* Process p leaves the table: its unit is marked. */
void latmgr_unit_leave(struct latmgr *m, struct latmgr_proc *p);
/* Process p's value changed: its unit is marked. */
void latmgr_unit_touch(struct latmgr *m, const struct latmgr_proc *p);
/* Process tgid exited: a unit it kept SHARED is marked. */
void latmgr_units_exit(struct latmgr *m, pid_t tgid);
/* The next count units are marked, round the table: a share of them each tick. */
void latmgr_units_check_some(struct latmgr *m, size_t count);
/* Every process's unit read again, every unit marked (a full sweep). */
void latmgr_units_check_all(struct latmgr *m);

/* ---- latmgr_source.c: which event source ---- */

/*
 * Opens the event source [latency] events allows, reporting to cb, and in loop e reads
 * it with ready (latmgr_events.c's). 0, or -errno: none allowed.
 */
int latmgr_source_open(struct latmgr *m, sd_event *e, const struct evsrc_callbacks *cb,
		       sd_event_io_handler_t ready);
void latmgr_source_close(struct latmgr *m);
/* Whether an exec must wake the daemon at once, told to the event source. */
void latmgr_source_pace(struct latmgr *m);
/* CLOCK_BOOTTIME ns in the clock ticks of /proc/PID/stat's start time. */
uint64_t latmgr_boot_ticks(uint64_t ns);
/* CLOCK_MONOTONIC ns (an event's time) in the same ticks; 0 for 0. */
uint64_t latmgr_mono_ticks(uint64_t ns);

#endif
