/*
 * The latency actuator: gives tasks and cgroups what the mapping (latency.h) says a
 * latency-nice value is, and gives it back. Like the affinity actuator it checks a
 * task's identity before it acts, journals before it writes (latency.journal), reads
 * back, and restores a knob only where it still has the value rqbalance set.
 */
#ifndef RQB_LATACT_H
#define RQB_LATACT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "actuate/act.h"
#include "policy/latency.h"

#define LAT_JOURNAL_NAME "latency.journal"
/* A path as the journal writes it (\xHH for blanks, controls and '\\'): 4 bytes a byte. */
#define LAT_ESC_MAX (4 * LAT_PATH_MAX)
/* The longest journal record: a task's, with two escaped cgroup paths. */
#define LAT_LINE_MAX (2 * LAT_ESC_MAX + 256)

/* What a task has, of the knobs the mapping sets. */
struct lat_state {
	int policy;                 /* SCHED_OTHER, SCHED_BATCH, SCHED_IDLE, … */
	int nice;
	uint64_t slice_ns;          /* sched_runtime; 0 = the kernel's default */
	int umin, umax;             /* uclamp, 0…1024; -1 where the kernel has none */
	int rof;                    /* SCHED_FLAG_RESET_ON_FORK: 1 set, 0 not */
	char cgroup[LAT_PATH_MAX];  /* in the class hierarchy; "" without one */
};

/*
 * A task's knobs as bits (lat_entry.left: those someone else changed after rqbalance
 * set them); each is a row of latknob.c's table, which says the rest of it.
 */
enum lat_knob {
	LAT_K_POLICY = 1 << 0,
	LAT_K_NICE = 1 << 1,
	LAT_K_SLICE = 1 << 2,
	LAT_K_UCLAMP = 1 << 3,
	LAT_K_RESET_ON_FORK = 1 << 4,
};

struct lat_entry {
	struct act_task task;
	pid_t tgid;
	int value;
	char source[48];            /* who asked: "ctl uid N", "rule NAME", "inherited" */
	struct lat_state prev;      /* what it had before rqbalance */
	/*
	 * What rqbalance gave it, read back; for a knob in left, what rqbalance had
	 * given it (or would have), which the task no longer has.
	 */
	struct lat_state set;
	/*
	 * enum lat_knob: knobs someone else changed since rqbalance set them (or that the
	 * task inherited so changed from its creator). They are theirs: never written
	 * again for this entry, nor given back; the cgroup's counterpart is cg.
	 */
	unsigned left;
	pid_t from_tid;             /* the task it inherited its value from; 0 for none */
	bool no_inherit;            /* not handed down: set.rof, and its children are given
				       back what they copied of it (lat_req.no_inherit) */
	int64_t since;              /* when it got its value (CLOCK_REALTIME, seconds) */
	/*
	 * Whether its cgroup is rqbalance's to move (latency_cg_decide). When it is not,
	 * set.cgroup is "" (nothing to give back) and cg_left is where it was left.
	 */
	enum lat_cg_verdict cg;
	char cg_left[LAT_PATH_MAX];
};

struct lat_cg_entry {
	char path[LAT_PATH_MAX];    /* cgroup path in the cpu hierarchy */
	char unit[LAT_PATH_MAX];    /* the systemd unit that owns it; "" = cgroupfs */
	int value;
	char source[48];
	uint64_t prev_weight, set_weight; /* v1 shares, v2 / systemd weight */
	int prev_idle, set_idle;    /* cpu.idle; -1 where there is none */
	bool by_procs;              /* a unit weighted for its processes' value, not a target */
	/*
	 * Someone else changed its weight since rqbalance set it: theirs, never written
	 * again for this entry, nor given back.
	 */
	bool left;
	int64_t since;              /* when it got its value (CLOCK_REALTIME, seconds) */
};

/* Where the class cgroups are, if anywhere. */
struct lat_classes {
	bool on;
	bool v2;
	char mount[PATH_MAX];       /* the cpu hierarchy's mount point */
	char root[LAT_PATH_MAX];    /* the classes' parent, relative to mount; "" = the top */
	bool made_root;             /* rqbalance made that parent: it removes it */
	uint64_t root_shares;       /* its weight, in v1 cpu.shares (start, reload); 0: top */
	bool rt;                    /* v1 with RT group scheduling: classes get RT runtime */
	bool no_group_uclamp;       /* uclamp for tasks, none for groups: said once */
	bool made[LAT_MAX - LAT_MIN + 1];
	/*
	 * Each class's multiplier (PLAN_LAT_CLASS, latweigh.h): its weight is its value's
	 * times k over div; 0 is 1. Kept for a class not made yet, which is made with it.
	 */
	unsigned k[LAT_MAX - LAT_MIN + 1];
	unsigned div[LAT_MAX - LAT_MIN + 1];
};

struct latact_opts {
	const char *journal_dir;
	const char *cgroup_root;     /* the classes' parent; "" = the top of the hierarchy */
	bool class_cgroups;          /* resolved: use them if a cpu hierarchy is there */
	bool slices;                 /* the kernel takes sched_runtime as the slice */
	bool uclamp;                 /* the kernel has uclamp */
	bool autogroup;              /* the kernel's autogroup is on: a nice counts within a
				      * session only, in the root cpu cgroup (explain says so) */
	bool systemd;                /* systemd owns the cgroups: units are set over D-Bus */
	const char *bus_address;     /* "" = the system bus */
	const char *proc_root;       /* "" = "/proc"; for the cgroup of a task */
	const char *mounts_file;     /* "" = /proc/self/mounts */
};

struct latact_counters {
	uint64_t applied;      /* tasks and cgroups given a value */
	uint64_t restored;     /* knobs given back */
	uint64_t left_alone;   /* knobs not restored: changed since by someone else */
	uint64_t gone;         /* entries dropped because the task exited */
	uint64_t refused;      /* real-time tasks and the like */
	uint64_t errors;
};

#define LATACT_GIVEN_MAX 256

struct latact_mover;

struct latact {
	const struct act_ops *ops;   /* opens the journal and tasks, makes every write */
	struct journal *journal;     /* NULL where the driver opens none */
	struct latact_opts o;
	char proc_root[PATH_MAX];
	struct lat_classes cls;
	struct lat_conf lc;
	uint64_t default_slice_ns;   /* what sched_getattr says for "no slice of its own" */
	uint64_t was_default_slice_ns; /* the one before the CPUs or the tunable changed */
	size_t n, cap;
	struct lat_entry **e;        /* sorted by tid; each its own allocation, so that a
					change moves pointers, not entries */
	/*
	 * What the last given_cap tasks given back had from rqbalance (a ring, the oldest
	 * replaced first; LATACT_GIVEN_MAX while running, every entry at stop): a task
	 * created before its creator was given back inherited that, and the fork event
	 * may be read only after (latact_given_find).
	 */
	struct lat_entry *given;
	size_t ngiven, given_next, given_cap;
	bool given_all;              /* stopping: the ring grows instead of replacing */
	size_t ncg, capcg;
	struct lat_cg_entry *cg;
	struct latact_counters cnt;
	void *bus;                   /* sd_bus *, opened at the first unit target */
	struct latact_mover *mv;     /* the class moves' worker (latact_move.c); NULL: none */
	/* Told of each task entry added or changed (managed) and dropped; may be NULL. */
	void (*on_task)(void *ctx, pid_t tid, int value, bool managed);
	void *on_task_ctx;
	/* Shown each plan before it is carried out (tests compare them); may be NULL. */
	void (*on_plan)(void *ctx, const struct plan *p);
	void *on_plan_ctx;
	/*
	 * The threads a request's judge read, for the plan being carried out (latact_hand):
	 * the caller's. hand_next: where the next is looked for first (plans and walks
	 * both go up by tid). hand_cg: their cgroups still hold (no move made since).
	 */
	const struct lat_thread *hand;
	size_t nhand, hand_next;
	bool hand_cg;
};

/*
 * Opens the journal, gives back what a previous run left in it, and finds the class
 * hierarchy. ops opens the journal and tasks and makes every write (act_linux_ops,
 * act_dryrun_ops, a test's). 0 or -errno (-EBUSY: another daemon holds the journal).
 */
int latact_init(struct latact *la, const struct act_ops *ops, const struct latact_opts *o,
		const struct lat_conf *lc);
/*
 * Class moves asked with lat_req.async_move are made by a worker thread from now on,
 * in order, so that the loop does not wait out the RCU grace period a cgroup write
 * can take (latact_move.c). Start it once the daemon's capabilities are what they
 * will stay: the thread inherits them. Returns an fd that becomes readable as moves
 * end (call latact_moves_done then), or -errno: moves stay inline.
 */
int latact_moves_start(struct latact *la);
/* Collects the moves that ended: one that failed is recorded as the task is. */
void latact_moves_done(struct latact *la);
/* Waits until every queued move has ended, and collects them. */
void latact_moves_wait(struct latact *la);
/* Whether a move of task tid is queued or being made. */
bool latact_move_pending(const struct latact *la, pid_t tid);
/* Whether no move is queued, being made, or ended and not yet collected. */
bool latact_moves_idle(const struct latact *la);
/* Waits for the queue, stops the worker: moves are made inline again. */
void latact_moves_stop(struct latact *la);
/* Restores everything still as rqbalance set it, removes its class cgroups, closes. */
void latact_fini(struct latact *la);
/* The mapping's settings changed (reload). */
void latact_set_conf(struct latact *la, const struct lat_conf *lc);

/*
 * Gives task rq->tid (of process rq->tgid, started at rq->start_time) rq->value from
 * rq->source. from, if not NULL, is the entry of the task that created it, whose
 * settings it inherited: what that one had before rqbalance is what the new task had,
 * and its cgroup is rqbalance's to move only if the kernel put it where rqbalance put
 * the creator. A task rqbalance did not put where it is now (someone else moved it,
 * or its cgroup limits its CPU) keeps its cgroup (latency_cg_decide). 0, or -errno with
 * *ret_why set to a reason for the caller.
 */
int latact_task(struct latact *la, const struct lat_req *rq, const struct lat_entry *from,
		const char **ret_why);
/*
 * Whether task tid still has what rqbalance gave it: a knob someone else changed
 * since (its policy, nice, slice, uclamp, or its cgroup: moved elsewhere) is theirs
 * from now on, logged once.
 */
void latact_check(struct latact *la, pid_t tid);
/*
 * The decide step latact_task and a give-back take for a task's knobs (latknob.h),
 * pure, for the permission rule: what a set of value v (LAT_NONE: a reset) would leave
 * a task that holds cur and has entry old (NULL: none). A knob someone else changed
 * since rqbalance set it stays as it is now.
 */
void latact_decide_knobs(const struct latact *la, int v, const struct lat_entry *old,
			 const struct lat_state *cur, struct lat_state *ret);
/* Gives a task back what it had (where still as set); -ENOENT if not managed. */
int latact_task_reset(struct latact *la, pid_t tid, uint64_t start_time);
/* The task exited: forget it. */
void latact_task_gone(struct latact *la, pid_t tid);
/*
 * What task tid had from rqbalance when it was given back, where that was one of the
 * last give-backs the ring holds and the task has not exited since; else NULL.
 */
const struct lat_entry *latact_given_find(const struct latact *la, pid_t tid);
/* The give-backs the ring holds, and the k-th of them (0: the oldest). */
size_t latact_given_count(const struct latact *la);
const struct lat_entry *latact_given_nth(const struct latact *la, size_t k);
/* Remembers what e had from rqbalance, as it is given back (latact_given_find). */
void latact_given_note(struct latact *la, const struct lat_entry *e);
/* Makes the give-back ring hold at least cap, keeping what it holds. 0 or -ENOMEM. */
int latact_given_reserve(struct latact *la, size_t cap);
/* Forgets tid's give-back record: it exited, and its tid may go to another task. */
void latact_given_forget(struct latact *la, pid_t tid);
/*
 * Task tid (of tgid, started at start_time) was created by a task since given back,
 * whose record is from (latact_given_find): where the kernel gave it what rqbalance had set
 * on from (nice, policy, and a class cgroup of rqbalance's), it gets what from had
 * before rqbalance, and is itself remembered as given back, for the tasks it made in
 * turn. 1 if it had inherited, 0 if not (made after the give-back, or changed since),
 * or -errno.
 */
int latact_give_back_inherited(struct latact *la, pid_t tid, pid_t tgid, uint64_t start_time,
			       const struct lat_entry *from);
/* A temporary grant's front: what the grant wrote on its leader, and whose it is. */
struct latact_front {
	const struct lat_entry *rec;  /* the leader's entry as the grant left it */
	uid_t uid;                    /* its owner (latact_owner) when it was put in front */
};
/*
 * The end of grant end by state (latact_offspring.c): every process descended from its
 * front (where the front still runs), and every process of the front's owner in the
 * grant's class started at or after the front, that holds exactly what the grant wrote
 * (nice, policy, slice, uclamp; the class cgroup) gets back what the front had before
 * rqbalance, knob by knob; a task with an entry (a value someone gave it since) is left
 * alone, and so is what a grant that goes on (live) stands for: its front's
 * descendants, and its owner's processes of the same value not started before it. For
 * the copies whose forks no event told of (lost to an overflow). /proc read once, and
 * each task in the class once.
 */
void latact_give_back_grant(struct latact *la, const struct latact_front *end,
			    const struct latact_front *live, size_t nlive);
/* The uid that owns process pid's /proc directory (its effective uid). 0 or -errno. */
int latact_owner(const struct latact *la, pid_t pid, uid_t *ret);
const struct lat_entry *latact_find(const struct latact *la, pid_t tid);
/* The tasks with a value, and the k-th of them by tid (0: the lowest). */
size_t latact_ntasks(const struct latact *la);
const struct lat_entry *latact_task_nth(const struct latact *la, size_t k);

/* A cgroup target (path in the cpu hierarchy, or a systemd unit's cgroup). */
int latact_cgroup(struct latact *la, const char *path, int v, const char *source,
		  const char **ret_why);
int latact_cgroup_reset(struct latact *la, const char *path);
/*
 * The unit that owns cgroup path (a systemd host only) gets the weight of value v for
 * the processes in it, which all carry v (latency_unit_decide): journalled, and given back
 * as a cgroup target's is. A cgroup given a value of its own (latact_cgroup) keeps it:
 * -EEXIST. 0 or -errno with *ret_why.
 */
int latact_unit(struct latact *la, const char *path, int v, const char *source,
		const char **ret_why);
/*
 * Class v weighs its value's weight times k over div from now on
 * (latweigh_class_weight): its weight file is written where the class exists and holds
 * another weight. 0 or -errno.
 */
int latact_class_scale(struct latact *la, int v, unsigned k, unsigned div);
/*
 * Class v's busy tasks weighed for (1 or more), the kernel's multiplier undone in
 * *ret_div (1 or more), and the weight they give, in the file's unit.
 */
unsigned latact_class_k(const struct latact *la, int v, unsigned *ret_div,
			uint64_t *ret_weight);
/* Gives back what latact_unit set on path; -ENOENT if it set nothing there. */
int latact_unit_release(struct latact *la, const char *path);
/* An absolute path, no . or .. components, no blanks, short enough. */
bool latact_cgroup_path_ok(const char *path);
const struct lat_cg_entry *latact_find_cgroup(const struct latact *la, const char *path);
/*
 * The CPUWeight systemd unit `unit` (of cgroup path) had before rqbalance set it, or has
 * now where it has not: 0 where none is set, else 1…10000; *ret_idle for idle. 0, or
 * -errno where systemd cannot be asked.
 */
int latact_unit_before(struct latact *la, const char *path, const char *unit,
		       uint64_t *ret_w, bool *ret_idle);
/* Whether someone else changed cgroup path's weight since rqbalance set it (notes it). */
void latact_check_cg(struct latact *la, const char *path);

/* What one plan action came to. */
struct latact_result {
	int r;                       /* 0, or -errno (-ECANCELED: its process was refused) */
	const char *why;             /* a reason for the caller, or NULL */
};
/*
 * Carries out the PLAN_LAT_* actions of p in its order (pins are act_apply's), each
 * through latact_task, latact_task_reset, latact_cgroup or latact_cgroup_reset; a SET
 * with from_tid inherits from that task's entry as it was before the plan. A whole
 * process's SET of its first thread that fails with -ESRCH or -EPERM cancels (-ECANCELED)
 * the SETs of its other threads. ret (p->n results, may be NULL) gets each action's result.
 * Returns how many took, or -ENOMEM (nothing done). The driver logs each action.
 */
int latact_apply_plan(struct latact *la, const struct plan *p, struct latact_result *ret);

/* Drops entries whose task is gone; notes knobs someone else changed (latact_check). */
void latact_verify(struct latact *la);
/*
 * The same for at most count entries from index from on, wrapping round: a share of
 * them each tick. Returns where the next share starts.
 */
size_t latact_verify_some(struct latact *la, size_t from, size_t count);
/* Gives back everything. Returns the knobs restored. */
int latact_restore_all(struct latact *la);

/* The records of the latency journal, as latact_parse_line names them. */
enum latact_rec {
	/*
	 * PATH, UNIT and the cgroup in PREV and SET are escaped: \xHH for bytes up to
	 * space, DEL and '\\', "-" for none, so that any name the kernel allows round-trips.
	 */
	LATACT_REC_TASK = 1, /* "lat TID TGID START VALUE PREV... SET...": all of *ret_e */
	LATACT_REC_UNTASK,   /* "unlat TID START": ret_e's task.tid and task.start_time only */
	LATACT_REC_CG,       /* "cg VALUE PATH UNIT PREV_W PREV_IDLE SET_W SET_IDLE": *ret_c */
	LATACT_REC_UNCG,     /* "uncg PATH": ret_c->path only */
	LATACT_REC_ROOT,     /* "root": rqbalance made the classes' parent */
};
/*
 * Parses one latency journal line (its newline cut; a "lat" line is cut into tokens in
 * place). Pure, for the journal replay and the fuzzer. Returns its enum latact_rec,
 * or -EINVAL for a malformed line (ret_e and ret_c then untouched).
 */
int latact_parse_line(char *line, struct lat_entry *ret_e, struct lat_cg_entry *ret_c);

/* Reads what task tid has now. 0 or -errno. */
int latact_read(const struct latact *la, pid_t tid, struct lat_state *ret);
/*
 * The n threads th a request's judge read (lat_thread: a pidfd and the cgroup, read
 * once), for the plan carried out next: latact_task opens a task of th from its pidfd
 * and takes its cgroup from there instead of reading /proc again. th stays the
 * caller's and must outlive the plan; latact_hand(la, NULL, 0) after it.
 */
void latact_hand(struct latact *la, const struct lat_thread *th, size_t n);
/* Whether a task's cgroup is read for the class moves (a judge reads it along). */
bool latact_reads_cgroup(const struct latact *la);

#endif
