/*
 * What a door (ctl/: the socket and D-Bus) sees of the latency manager: a request's
 * target, the calls that set, reset, show and explain, and the event barrier a sync
 * waits on. struct latmgr stays opaque here: a door reaches the actuator, the policy
 * and the snapshot only through these calls.
 */
#ifndef RQB_LATMGR_DOOR_H
#define RQB_LATMGR_DOOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/model.h"

struct latmgr;
struct rqb_sched_attr;

/* What a request names: a process (all its threads), one thread, or a cgroup. */
enum lat_target_kind { LAT_T_PROCESS, LAT_T_THREAD, LAT_T_CGROUP };
struct lat_target {
	enum lat_target_kind kind;
	pid_t pid;                /* LAT_T_PROCESS: the process; LAT_T_THREAD: the thread */
	pid_t tgid;               /* its process */
	uint64_t start_time;      /* of pid, when judged (clock ticks after boot); 0: unknown */
	char path[LAT_PATH_MAX];  /* LAT_T_CGROUP */
	/*
	 * LAT_T_PROCESS, once judged (ctl_req_run, which frees it): the threads the
	 * permission was judged on, with their start times as read then, which a set
	 * gives the value to without reading them or walking /proc/PID/task again (a
	 * thread made since follows by its fork event). NULL: whichever threads the
	 * process has now.
	 */
	struct lat_thread *threads;
	size_t nthreads;
};

/*
 * Target t gets value as source: a whole process (all threads now and later), one
 * thread only (its process is read), or a cgroup (rqctl set -g). trusted: the caller
 * may give any task any value (root, ctl_group, CAP_SYS_NICE): it may weigh a unit
 * another user shares. t->start_time: the start time the permission was decided on
 * (0: as it is now); a task that no longer has it reused the pid, and is left alone
 * (-ESRCH). An untrusted caller asking for the value t has from another source
 * changes nothing: the value stays that source's. Returns the tasks given the value
 * (0 for a cgroup), or -errno with *ret_why.
 */
int latmgr_set(struct latmgr *m, const struct lat_target *t, int value, const char *source,
	       bool trusted, const char **ret_why);
/*
 * Gives back what t had: the tasks given back (1 for a thread or a cgroup), or
 * -ENOENT if it was not managed, or (t->start_time not 0) what is managed under that
 * pid has another start time.
 */
int latmgr_reset(struct latmgr *m, const struct lat_target *t);
/*
 * Puts process rq->tgid in front for a caller (a desktop's focused window), one record
 * a person: caller is its share of the callers (ctl_caller.share), not its uid. It gets
 * rq->value, as rq->source, unless it has a value at most that already, which it
 * keeps. The value is a grant (latmgr_proc.grant), which ends at the same caller's
 * next call, or when the process in front exits (not when the caller disconnects: it
 * is the person's): the process put in front before gets its own back (the value it
 * had before, or none), and the processes started under it since none, whether or not
 * it still runs, each only where it still has what the call gave it: a value someone
 * set since stays. rq->start_time pins the process: a record of an earlier owner of its
 * number is not what it had. rq->tgid 0:
 * nothing in front. The rest of rq as for latmgr_set on a process. 0 with the value the
 * process has now in *ret_value, or -errno with *ret_why (-EUSERS: LATMGR_FG_MAX
 * callers hold one).
 */
int latmgr_foreground(struct latmgr *m, uid_t caller, const struct lat_req *rq, int *ret_value,
		      const char **ret_why);
/*
 * A barrier on the event source: every event queued before now_ns is handled once the
 * source was read to empty since, or an event stamped margin_ns after it was handled
 * (events queue in the order they were stamped, but for the moment between stamp and
 * queue: the margin covers it), so a fork storm that never lets the source empty
 * only delays it. Events lost to an overflow are covered by a /proc walk begun after.
 */
struct latmgr_mark {
	uint64_t ns;            /* the barrier's moment, CLOCK_MONOTONIC */
	uint64_t margin_ns;
	uint64_t empty_reads;   /* the count before the mark's own read */
	uint64_t overflows;
	bool lost;              /* a resync was due at the mark */
};
/* Sets a mark at now_ns and handles one bounded batch of what the source holds. */
void latmgr_mark(struct latmgr *m, uint64_t now_ns, uint64_t margin_ns, struct latmgr_mark *ret);
/* Whether every event queued before the mark has been handled, and the class moves made. */
bool latmgr_passed(const struct latmgr *m, const struct latmgr_mark *mk);

/* A task's process id from /proc/TID/status. 0 or -ESRCH. */
int latmgr_tgid_of(const struct latmgr *m, pid_t tid, pid_t *ret);

/*
 * A value as a door receives it ("-20" to "19"), by the mapping's own parser: 0, or
 * -EINVAL with *ret_why.
 */
int latmgr_parse_value(const char *s, int *ret, const char **ret_why);
/* Whether path may name a cgroup target: absolute, no "." or ".." step, no blank. */
bool latmgr_cgroup_path_ok(const char *path);

/* ---- views: what rqctl get, list and explain show, read through the manager alone ---- */

/*
 * Whether the asker may see task tid (with start_time not 0: and that it is still the
 * task of that start time). A view names another task only where this says yes.
 */
typedef bool (*latmgr_visible_fn)(void *ctx, pid_t tid, uint64_t start_time);

/* The /proc the manager reads (a test's tree, or "/proc"). */
const char *latmgr_proc_root(const struct latmgr *m);
/*
 * Whether a set reads a task's cgroup (class cgroups are on): a judge that reads it
 * with the task's other facts hands it over (lat_thread.cgroup), not read again.
 */
bool latmgr_reads_cgroup(const struct latmgr *m);
/* The value t has and where it came from (valid until the next change); -ENOENT: none. */
int latmgr_value(const struct latmgr *m, const struct lat_target *t, int *ret_value,
		 const char **ret_source);
/* How many tasks hold t's value now: a process's threads, or the one thread (0 or 1). */
size_t latmgr_tasks_of(const struct latmgr *m, const struct lat_target *t);
/*
 * rqctl get: "key value" lines of what t has from rqbalance (its value, source, scope,
 * tasks, knobs, and the unit of a process), -ENOENT when it has nothing.
 */
int latmgr_get_text(const struct latmgr *m, const struct lat_target *t, char *out, size_t size);
/*
 * rqctl set's reply after process tgid was given a value: its unit and what the unit
 * got ("unit", "unit_weight", "unit_why" lines), or "" where no unit is weighed.
 */
void latmgr_unit_text(const struct latmgr *m, pid_t tgid, char *out, size_t size);
/*
 * rqctl list: one tab-separated line for each managed task the asker may see
 * (visible), each unit and each cgroup, as many as fit in max bytes, then a
 * "truncated N" line when the whole (N lines) did not. malloc'd, NULL without memory.
 */
char *latmgr_list(const struct latmgr *m, latmgr_visible_fn visible, void *ctx, size_t max);
/*
 * rqctl explain: for t, the value it has and where it came from (or why it has none),
 * what the value maps to on this kernel, and each knob's state: one "key text" line
 * each, keys unique. detail: the asker may act on t, so what the process itself shows
 * (its exe, command line, uid, cgroup) may be used to say why a rule does not match.
 * The task t inherited its value from is named only where visible says so. Reads the
 * task's knobs now. malloc'd into *ret; 0 or -ENOMEM.
 */
int latmgr_explain(struct latmgr *m, const struct lat_target *t, bool detail,
		   latmgr_visible_fn visible, void *ctx, char **ret);
/*
 * What a request would leave thread tid (started at start_time), which holds now, for
 * the permission rule: each knob a rule covers (the knob table's), now and after, as
 * the actuator's own decide step (latact_decide_knobs) has them: with want a value,
 * what that value maps to; with LAT_NONE (a reset), what it had before rqbalance; a
 * knob someone else changed since rqbalance set it stays.
 */
void latmgr_would_leave(const struct latmgr *m, pid_t tid, uint64_t start_time, int want,
			const struct rqb_sched_attr *now, struct lat_perm_thread *ret);
/*
 * What thread tid (started at start_time) would have without a temporary grant
 * (latmgr_proc.grant) it holds: each knob's value before rqbalance where it is still
 * what the grant wrote, for the permission rule, which judges a caller's change
 * against what the caller could reach without the favour. Left as they are otherwise.
 */
void latmgr_ungranted(const struct latmgr *m, pid_t tid, uint64_t start_time,
		      struct lat_perm_thread *t);
/*
 * Who may write cgroup path's weight: the owner of its weight file, or root where it
 * has none (a cgroup2 group with no cpu controller: only systemd can give it one).
 * 0, or -ENOENT: no such cgroup (or no cpu controller mounted).
 */
int latmgr_cgroup_owner(const struct latmgr *m, const char *path, uid_t *ret);

/* Whether latency management runs (latmgr_open succeeded, and no close since). */
bool latmgr_on(const struct latmgr *m);

/*
 * Registers game rq->tgid (pinned by rq->start_time) for bus connection conn of caller
 * (its share of the callers, as latmgr_foreground's): a grant as the foreground's, of
 * rq->value, which a game with a value at most that already keeps (the record is kept
 * all the same, so that its unregister is answered). It ends at latmgr_game_end, at
 * the game's exit, and at latmgr_games_gone for conn. Asked again by the same
 * connection, nothing changes. 0 with the value the game has now in *ret_value, or
 * -errno with *ret_why: -EUSERS (LATMGR_GAMES_PER_USER of caller's, or
 * LATMGR_GAMES_MAX in all), -ESRCH (gone).
 */
int latmgr_game(struct latmgr *m, uid_t caller, const char *conn, const struct lat_req *rq,
		int *ret_value, const char **ret_why);
/*
 * Ends the grant connection conn holds on game tgid of start_time: 0, or -ESRCH where
 * it holds none.
 */
int latmgr_game_end(struct latmgr *m, const char *conn, pid_t tgid, uint64_t start_time);
/*
 * Connection conn left the bus (NULL: the daemon's own bus went away): its games end.
 * The games ended; *ret_owner, when one was, the caller (share) that held the last.
 */
size_t latmgr_games_gone(struct latmgr *m, const char *conn, uid_t *ret_owner);
/* Whether connection conn holds a game. */
bool latmgr_games_of(const struct latmgr *m, const char *conn);

#endif
