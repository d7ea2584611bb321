/*
 * Latency management: who has a latency-nice value and why. It turns ctl requests,
 * rules and fork, exec and exit events into calls on the latency actuator: a process
 * target covers its threads now and later, and the child processes it starts; a rule
 * applies at exec and to what already runs at start and at reload.
 */
#ifndef RQB_LATMGR_H
#define RQB_LATMGR_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

#include "actuate/latact.h"
#include "conf/conf.h"
#include "latmgr/latmgr_door.h"
#include "policy/latweigh.h"
struct rqb_sched_attr;

struct daemon_stats;
struct evsrc;
struct evsrc_exe;
struct ident_exetab;

/* A process given a value: all its threads, now and later. */
struct latmgr_proc {
	pid_t tgid;
	uint64_t start_time;
	int value;
	bool from_rule;         /* a rule's: re-checked at exec and reload; ctl's win over it */
	bool trusted;           /* given by a rule or a privileged caller (lat_member) */
	bool no_inherit;        /* its threads have it, the processes it starts do not */
	bool grant;             /* a temporary grant (the foreground): ends with it, and a
				   caller's change is judged as if it did not hold it */
	uint32_t unit;          /* its unit's slot + 1 in latmgr.u (latmgr_units.c); 0: none */
	char source[48];
};

/*
 * A unit that holds a managed process, on a systemd host: whether its processes all
 * carry one value, and so whether it has that value's CPUWeight (latency_unit_decide).
 * A record keeps its slot while a managed process is in it (latmgr_proc.unit).
 */
struct latmgr_unit {
	char cgroup[LAT_PATH_MAX];     /* the processes' cgroup, as /proc/PID/cgroup says */
	char unit[LAT_PATH_MAX];       /* the unit that owns it; "" for none */
	struct lat_unit_decision d;
	pid_t pid;                     /* a managed process in it, for the log */
	int act_r;                     /* the actuator's answer for OWN: 0 or -errno */
	char act_why[96];              /* and its reason */
	size_t nproc;                  /* managed processes in it; 0: the slot is free */
	bool used;                     /* the slot holds a unit */
	bool dirty;                    /* to be decided again at the next refresh */
	bool logged;                   /* the decision in d was logged */
};

/* What a search of the units reads, apart (latmgr_units.c): a slot's key. */
struct latmgr_ukey {
	uint32_t hash;                 /* of the cgroup path; 0: the slot is free */
	pid_t blocker;                 /* a process without a value that keeps it SHARED */
};

/* A rule's value that could not be given to a process, kept for rqctl explain. */
#define LATMGR_FAILS 32
#define LATMGR_EXEC_TIMES 1024 /* the last execs a rule matched, timed (rqctl status) */
struct latmgr_fail {
	pid_t tgid;
	uint64_t start_time;
	int64_t when;                  /* CLOCK_REALTIME, seconds */
	int r;                         /* -errno */
	char source[48];               /* "rule NAME" */
	char why[96];
};

/*
 * The process a caller put in front (latmgr_foreground), and what it had before: one
 * per caller uid, given its own back when the caller puts another in front, or when
 * the front exits.
 */
#define LATMGR_FG_MAX 64
#define LATMGR_CONN_MAX 32 /* a bus connection's unique name (":1.42"), with its NUL */
struct latmgr_fg {
	uid_t uid;                     /* the caller's share of the callers (its person) */
	pid_t tgid;                    /* 0: nothing of this caller's is in front */
	uint64_t start_time;
	int value;                     /* what the call gave it */
	char source[48];               /* ... and as whose */
	bool had;                      /* it had a value before: prev */
	struct latmgr_proc prev;
	bool has_rec;                  /* rec and owner were read when the grant was given */
	struct lat_entry rec;          /* what the grant wrote on the front's leader, for the
					  copies no event told of (latact_give_back_grant) */
	uid_t owner;                   /* the front's owner then (latact_owner) */
	char conn[LATMGR_CONN_MAX];    /* a game's: the bus connection that registered it */
};

/*
 * The games session agents registered (latmgr_game): at most LATMGR_GAMES_PER_USER of
 * one person's at once, LATMGR_GAMES_MAX in all. Each is a grant as the foreground's
 * (struct latmgr_fg), but many a caller, and it belongs to the bus connection that
 * registered it, not to the person: it ends when that connection leaves the bus.
 */
#define LATMGR_GAMES_PER_USER 16
#define LATMGR_GAMES_MAX 256

struct latmgr_counters {
	uint64_t events;        /* fork/exec/exit events handled (BPF or connector) */
	uint64_t overflows;     /* times events were lost, each followed by a rescan */
	uint64_t rescans;       /* full /proc walks */
	uint64_t rule_matches;  /* processes a rule gave a value */
	uint64_t threads;       /* threads and children that joined a managed process */
	uint64_t inherited_back; /* tasks given back what they inherited from a task given
				    back before their fork event was read */
};

struct latmgr {
	struct latact *la;             /* the actuator */
	struct latact *own;            /* la, where latmgr_open made it (else a test's) */
	const struct rqb_conf *conf;   /* the daemon's; its rules */
	struct ident_exetab *exetab;   /* its exe rules' files (taskev/ident.h); NULL: none yet */
	sd_event *event;               /* the loop, for the watch below */
	sd_event_source *exe_src;      /* an inotify fd on the exe rules' folders; NULL: none */
	bool exe_watched;              /* every folder is watched: no periodic rebuild */
	/* The event source: BPF where it loads, else the connector, else none (walks). */
	struct evsrc *ev;              /* NULL: none */
	bool exec_lazy;                /* told ev that an exec need not wake (latmgr_source_pace) */
	sd_event_source *ev_src;       /* its fd in the loop */
	struct evsrc_exe *exes;        /* during a rescan: a task walk's, sorted by tgid */
	size_t nexes;
	bool resync;                   /* events were lost: rescan */
	bool drained;                  /* the source was read empty since the last loss */
	unsigned resync_wait;          /* ticks a resync has waited for that */
	uint64_t empty_reads;          /* times the source was read to empty */
	uint64_t last_event_ns;        /* kernel timestamp of the last event handled */
	uint64_t rescan_ns;            /* when the last /proc walk began */
	uint64_t ticks;
	pid_t self;
	char proc_root[PATH_MAX];
	struct latmgr_proc **p;            /* sorted by tgid; each its own allocation */
	size_t np, capp;
	struct latmgr_counters cnt;
	/*
	 * From an exec event's kernel time to its rule's value written, in µs, for the last
	 * LATMGR_EXEC_TIMES execs a rule matched: the daemon's own part of exec to value.
	 */
	uint32_t exec_us[LATMGR_EXEC_TIMES];
	uint64_t nexec_us;             /* timed in all: the next goes at nexec_us % the size */
	struct latmgr_fail fails[LATMGR_FAILS]; /* the last ones, a ring */
	unsigned nfails;               /* recorded in all: the next goes at nfails % LATMGR_FAILS */
	struct latmgr_fg *fg;          /* the processes callers put in front: LATMGR_FG_MAX
					 * slots allocated at the first, as games */
	size_t nfg;
	/*
	 * The games agents registered, LATMGR_GAMES_MAX slots allocated at the first
	 * (calloc: a page is resident once a game is written there; inline, the 290 KB
	 * were resident in every daemon from its start); tgid 0: free. NULL: none yet.
	 */
	struct latmgr_fg *games;
	size_t ngames;                 /* the slots up to the last used one */
	char pc_state[96];             /* "bpf", "connector", or "none (why)" */
	char events_why[320];          /* what the source is and why, for --features */
	bool units_on;                 /* systemd owns the cgroups: units are weighed */
	bool units_dirty;              /* some unit is dirty: refresh */
	bool stopping;                 /* everything was given back (latmgr_stopped) */
	struct latmgr_unit *u;             /* the units of managed processes, by slot */
	struct latmgr_ukey *uk;            /* their keys, slot for slot */
	size_t nu, capu;                   /* slots in use or freed, and allocated */
	size_t sweep_at, verify_at, decide_at; /* where the next tick's share of checks starts */
	/* The classes' weights by what they run (latmgr_weigh, latweigh.h). */
	struct latweigh_state weigh;
	enum latweigh_kernel weigh_kind;   /* what the kernel gives a group on each CPU */
	char weigh_mode[16];               /* cgroup_mode when last weighed; "" before */
};

/*
 * The event source conf's [latency] events chooses, probed as latmgr_init would open it,
 * and closed again: true and what it would be, or false and why there is none
 * (--features).
 */
bool latmgr_probe_events(const struct rqb_conf *c, char *ret_detail, size_t len);
/* Whether fork/exec/exit events arrive (from BPF or the connector). */
bool latmgr_has_events(const struct latmgr *m);
/* Where they come from: "bpf", "connector" (evsrc_ops.name), or "none". */
const char *latmgr_source_name(const struct latmgr *m);
/* Whether a rescan's task walk works without CAP_BPF effective (true without BPF). */
bool latmgr_walks_unprivileged(struct latmgr *m);

/* What latmgr_open needs: the actuator's setup, and the manager's. */
struct latmgr_setup {
	const struct act_ops *driver;  /* the Linux driver, or the dry run's */
	struct latact_opts opts;       /* journal, cgroup root, what the kernel offers */
	struct lat_conf lc;            /* the mapping's settings */
	const struct rqb_conf *conf;   /* the daemon's; its rules */
	sd_event *event;
	const char *proc_root;
};

/*
 * The daemon's way in: opens the latency actuator (its journal first, which gives
 * back what a crashed run left) and the manager on it. 0, or -errno, logged (-EBUSY:
 * another rqbalanced holds the journal).
 */
int latmgr_open(struct latmgr *m, const struct latmgr_setup *s);
/*
 * After latmgr_stop: the class-move worker stopped, every setting given back, the
 * manager and its actuator closed. Returns the settings given back.
 */
int latmgr_close(struct latmgr *m);
/* The mapping's settings again (a reload); latmgr_rules_changed follows. */
void latmgr_set_conf(struct latmgr *m, const struct lat_conf *lc);
/*
 * An exec's class move goes to a worker thread: its fd to watch (readable when a move
 * ended; call latmgr_moves_done then), -EOPNOTSUPP where no class cgroups are used,
 * or -errno: moves stay in the loop.
 */
int latmgr_moves_start(struct latmgr *m);
void latmgr_moves_done(struct latmgr *m);
void latmgr_moves_stop(struct latmgr *m);
/* Whether values move tasks into class cgroups. */
bool latmgr_class_cgroups_on(const struct latmgr *m);
/*
 * The cgroups the actuator holds values on, at most max into paths, under *ret_mount
 * (the cpu hierarchy's mount; NULL: none): the count.
 */
size_t latmgr_cgroup_paths(const struct latmgr *m, const char **paths, size_t max,
			   const char **ret_mount);
/*
 * fn(ctx, tid, value, true) for each task that has a value now, and from now on for
 * each value given (true) or taken back (false).
 */
void latmgr_follow_tasks(struct latmgr *m, void (*fn)(void *ctx, pid_t tid, int value,
						       bool managed),
			 void *ctx);
/* The tasks that have a value, by index; and one task's entry, or NULL. */
size_t latmgr_ntasks(const struct latmgr *m);
const struct lat_entry *latmgr_task_nth(const struct latmgr *m, size_t k);
const struct lat_entry *latmgr_entry(const struct latmgr *m, pid_t tid);

/*
 * Starts the event source on e (if it can: without one, managed processes are
 * rescanned every tick) and adopts what the rules match among the running processes.
 * -errno only when [latency] events = bpf and BPF does not load.
 */
int latmgr_init(struct latmgr *m, struct latact *la, const struct rqb_conf *c, sd_event *e,
	    const char *proc_root);
/*
 * The stop, in three steps around the actuator's give-back of everything: latmgr_stop
 * reads the events queued so far (a child forked from a managed task is managed, and
 * given back with the rest); latmgr_stopped, after the give-back, forgets every
 * process and reads the events queued since, where a fork only gives back what the
 * child inherited from a task just given back (nothing is given a value), until each
 * task given back has been seen out of any fork it was in (at most 250 ms for one that
 * keeps running); then latmgr_fini closes the event source.
 */
void latmgr_stop(struct latmgr *m);
void latmgr_stopped(struct latmgr *m);
void latmgr_fini(struct latmgr *m);

/*
 * The record of process tgid, only where it is the record of the process that started
 * at start_time (clock ticks after boot): a record left by an earlier process that had
 * the number (its exit not read yet) is none, so that nothing it holds (a value, a
 * trusted source) goes to the number's next owner. LATMGR_START_NOW: the process that
 * has the number now, its start time read from /proc (gone: none). The event handlers,
 * which read the kernel's events in order and so see a number's exit before its next
 * owner's fork, find a process's record as of the event (latmgr_int.h).
 */
#define LATMGR_START_NOW 0
const struct latmgr_proc *latmgr_find_process(const struct latmgr *m, pid_t tgid,
					      uint64_t start_time);

/*
 * Once a sampled tick, after latmgr_tick: weighs each class cgroup for the busy tasks
 * it runs in snapshot s (latweigh_decide), where kind says what the kernel gives a
 * group on each CPU (latweigh_kernel_of of mode, cgroup_mode's word, which explain
 * names).
 */
struct snapshot;
void latmgr_weigh(struct latmgr *m, const struct snapshot *s, enum latweigh_kernel kind,
		  const char *mode);

/* Once a tick: rescans after an overflow, drops what exited. */
void latmgr_tick(struct latmgr *m);
/* The rules changed: undo rule values that no longer match, apply new matches. */
void latmgr_rules_changed(struct latmgr *m);
/* Walks /proc: threads of managed processes, and processes the rules match. */
void latmgr_rescan(struct latmgr *m);

/*
 * Units on a systemd host: decides again each unit whose processes changed since
 * (latency_unit_decide) and gives it, or takes back, its processes' weight. Each managed
 * process's unit is kept with its record: a process that comes, goes or changes value
 * marks its own unit, an exit the unit it kept shared; the rest (moves between cgroups,
 * which no event tells) is checked a share each tick. The ctl requests call it at once;
 * events at the next tick.
 */
void latmgr_units_refresh(struct latmgr *m);
/* The unit record of process tgid's cgroup, NULL if none. */
const struct latmgr_unit *latmgr_unit_of(const struct latmgr *m, pid_t tgid);

/* The last failure to give process tgid (started at start_time) a rule's value, or NULL. */
const struct latmgr_fail *latmgr_failure_of(const struct latmgr *m, pid_t tgid,
					    uint64_t start_time);

/* Fills the latency fields of ret (lat_*, events*, class_*): rqctl status, metrics. */
void latmgr_stats(const struct latmgr *m, struct daemon_stats *ret);

#endif
