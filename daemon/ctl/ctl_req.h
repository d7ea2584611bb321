/*
 * The request layer behind both doors, the ctl socket (ctl.c) and the D-Bus API
 * (ctl_bus.c): the latency requests (set, get, reset, foreground, explain), judged for a
 * caller whose credentials the door took once (SO_PEERCRED at accept; the bus's
 * record of the sender's connection) by one rule (ctl_perm.h) and carried out through
 * the latency manager; what a caller may be shown of other users' processes (as its
 * /proc would show them); and the limits that keep one user from taking the daemon
 * from the others: one pool of callers with a share for each user and a reserve for
 * root and ctl_group, and one pool of calls waiting for their caller's credentials.
 */
#ifndef RQB_CTL_REQ_H
#define RQB_CTL_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "ctl/ctl_peer.h"
#include "ctl/ctl_perm.h"
#include "latmgr/latmgr.h"

struct ctl_ops;
struct rqb_conf;
struct peers_finding;

struct ctl_req_lim;

/*
 * What the doors (ctl.c, ctl_bus.c) see of the daemon: latency-nice through the latency
 * manager's public API (latmgr.h), the limits both doors share, the config, and what
 * the daemon does for them (struct ctl_ops, ctl.h). Nothing else of it.
 */
struct ctl_env {
	struct latmgr *lm;
	struct ctl_req_lim *req;
	const struct rqb_conf *conf;    /* the daemon's, changed in place by a reload */
	const struct ctl_ops *ops;
	void *daemon;                   /* passed back to ops; never read here */
};

#define CTL_CALLER_GROUPS 64  /* supplementary groups kept; more fail closed */

struct ctl_caller {
	uid_t uid;             /* effective uid when it connected */
	uid_t share;           /* whose share of the callers it counts in (ctl_req_share) */
	gid_t gid;             /* effective gid then; (gid_t)-1 where unknown (the bus) */
	gid_t groups[CTL_CALLER_GROUPS];
	int ngroups;
	pid_t pid;             /* its process, as the door named it; 0 where unknown */
	bool cap_sys_nice;     /* counts as holding CAP_SYS_NICE (ctl_perm_peer_accept) */
	bool cap_sys_ptrace;   /* counts as holding CAP_SYS_PTRACE, by the same rule */
	/*
	 * What /proc shows it (ctl_req_caller_view): [0] the proc mount the daemon reads,
	 * [1] the caller's own /proc. A process is shown to it only where both would.
	 */
	struct ctl_view view[2];
	const char *via;       /* "ctl" or "dbus": for logs, and the source of its values */
};

/* ---- limits: one set for both doors ---- */

#define CTL_REQ_SLOTS 64          /* callers served at once, whichever door */
#define CTL_REQ_RESERVED 8        /* ...of which only root and ctl_group may use these */
#define CTL_REQ_PER_UID 16        /* ...and one other uid at most this many */
/*
 * Calls held while the caller's credentials are asked for (the bus: its driver
 * answers GetConnectionCredentials later), at most CTL_REQ_WAITING_SOURCE of one
 * source (a bus connection). Who sent them is not known yet, so no share of a user
 * can bound them: the pool is larger than one user can fill within the system bus's
 * own limits (256 connections a user by default, times CTL_REQ_WAITING_SOURCE), and
 * a source whose credentials are known waits no more.
 */
#define CTL_REQ_WAITING 2048
#define CTL_REQ_WAITING_SOURCE 4
/* Refusals logged in one window; the rest are counted in one line. */
#define CTL_REQ_LOG_BURST 20
#define CTL_REQ_LOG_WINDOW_NS (10 * 1000000000ull)

struct ctl_req_slot {
	bool used;
	bool admin;            /* root or ctl_group: may use the reserved slots */
	uid_t share;           /* its caller's share (ctl_caller.share) */
};

/* The share of every caller from a user namespace that no one person's ids map. */
#define CTL_SHARE_FOREIGN ((uid_t)-2)
#define CTL_SUBUID_FILE "/etc/subuid"


/*
 * The loop's time, charged to shares: a share owes what its requests took, and pays
 * it back at CTL_REQ_LOOP_PCT of the time that passes; while it owes more than
 * CTL_REQ_OWED_NS its requests wait (the ctl socket) or are refused (D-Bus). So no
 * person takes more than about that part of the one loop, whatever the number of its
 * connections or the size of its targets. Root's and ctl_group's are not charged.
 */
#define CTL_REQ_LOOP_PCT 25
#define CTL_REQ_OWED_NS (100 * 1000000ull)
#define CTL_REQ_DEBTORS 64         /* shares owing at once; the one owing least goes first */

struct ctl_req_debt {
	uid_t share;
	uint64_t owed_ns;       /* loop time not paid back yet, as of at_ns */
	uint64_t at_ns;         /* CLOCK_MONOTONIC; 0: an unused entry */
};

struct ctl_req_lim {
	struct ctl_req_slot slot[CTL_REQ_SLOTS];
	struct ctl_req_debt debt[CTL_REQ_DEBTORS];
	unsigned long waited;   /* requests that waited, or were refused, for their share's time */
	unsigned held;          /* slots in use */
	unsigned waiting;       /* calls waiting for their caller's credentials */
	unsigned long refused;  /* callers refused a slot: none free, or over a share */
	unsigned long refused_waiting; /* calls refused a place to wait */
	uint64_t log_window_ns; /* when the current window of logged refusals began */
	unsigned logged;        /* refusals logged in it, at most CTL_REQ_LOG_BURST */
	unsigned long unlogged; /* ... and refused beyond that, counted, not logged */
	const char *subuid_path; /* who holds which subordinate uids; NULL: CTL_SUBUID_FILE */
	struct ctl_subids subids; /* ...as read last (ctl_peer_subids) */
};

/* Charges cost_ns of the loop's time, at now_ns, to share. */
void ctl_req_lim_charge(struct ctl_req_lim *l, uid_t share, uint64_t cost_ns, uint64_t now_ns);
/*
 * How long, from now_ns, a request of share must wait until the share owes no more
 * than CTL_REQ_OWED_NS: 0 to go now.
 */
uint64_t ctl_req_lim_owed(struct ctl_req_lim *l, uid_t share, uint64_t now_ns);

/* Frees what the limits read (the subordinate uids' table). */
void ctl_req_lim_fini(struct ctl_req_lim *l);

/*
 * Whose share of the callers a caller of uid counts in, one share a person whoever
 * many uids it holds: the owner of the subordinate uids (s, /etc/subuid) that uid is
 * among, else uid itself. Where the caller's user namespace is not the daemon's (map,
 * as ctl_peer_idmap read it; NULL where not read), its uid may be one of many the
 * namespace's maker was given: the owner of the subordinate uids the namespace maps,
 * else, for a namespace that maps one uid (all a user may map without privilege), that
 * uid, else CTL_SHARE_FOREIGN, one share for all such callers (a container's uids that
 * root mapped). Pure.
 */
uid_t ctl_req_lim_share_of(const struct ctl_subids *s, uid_t uid, const struct ctl_idmap *map);

/*
 * Takes a slot for caller k (admin: root or ctl_group, ctl_req_admin) for as long as
 * the door serves it, until ctl_req_lim_leave: 0 and *ret_slot, or -EBUSY when every slot
 * it may use is taken, -EUSERS when its share (k->share) holds CTL_REQ_PER_UID. A
 * zeroed struct is an empty pool.
 */
int ctl_req_lim_admit(struct ctl_req_lim *l, const struct ctl_caller *k, bool admin, int *ret_slot);
void ctl_req_lim_leave(struct ctl_req_lim *l, int slot);
/*
 * A place for one call to wait for its caller's credentials, beside the source's
 * source_waiting already waiting: 0, or -EUSERS (the source's share) or -EBUSY (none
 * left). ctl_req_lim_unwait gives it back.
 */
int ctl_req_lim_wait(struct ctl_req_lim *l, unsigned source_waiting);
void ctl_req_lim_unwait(struct ctl_req_lim *l);
/*
 * Logs a refusal unless CTL_REQ_LOG_BURST were logged in this CTL_REQ_LOG_WINDOW_NS:
 * one user's refused requests must not flood the journal, through either door.
 * ctl_req_lim_after_tick counts the rest.
 */
void ctl_req_lim_log_refusal(struct ctl_req_lim *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* After each tick: once a window has passed, how many refusals it did not log. */
void ctl_req_lim_after_tick(struct ctl_req_lim *l);

/* ---- what a caller is shown ---- */

/*
 * k->share, from k->uid and, where map is not NULL, k's user namespace's map: the
 * subordinate uids' table read again first where /etc/subuid changed.
 */
void ctl_req_share(struct ctl_env *x, struct ctl_caller *k, const struct ctl_idmap *map);
/*
 * Reads what /proc shows k (k->view): the daemon's proc mount, and k->pid's own /proc
 * (ctl_peer_view), and k's share of the callers (ctl_req_share, with its namespace's
 * map). Where k's own cannot be read (no pid: a door that named none, a
 * process in a pid namespace below the daemon's; one gone, or with no /proc mounted)
 * it fails closed: every process but those it could ptrace-read is hidden from it.
 * With pidfd >= 0 (else start_time, when not 0) the read is proven to be of the
 * process the door named: -ESRCH when it is gone. 0 otherwise.
 */
int ctl_req_caller_view(struct ctl_env *x, struct ctl_caller *k, int pidfd, uint64_t start_time);
/*
 * Whether k may see task tid (with start_time not 0: and that it is still the task of
 * that start time): what its /proc would show it of another user's processes, as
 * hidepid= and gid= on both views decide (ctl_perm_visible), judged on the task's
 * credentials read now. Root and ctl_group see everything; so does anyone where
 * neither view hides.
 */
bool ctl_req_visible(struct ctl_env *x, const struct ctl_caller *k, pid_t tid, uint64_t start_time);
/* Caller k's eyes, for the latency manager's views (latmgr_visible_fn). */
struct ctl_req_eyes {
	struct ctl_env *x;
	const struct ctl_caller *k;
	unsigned judged; /* tasks judged for k by reading /proc (a caller who sees all: none) */
	bool cut;        /* a task was left unjudged, and so not shown: over CTL_REQ_JUDGED */
};
/*
 * At most this many tasks are judged (a few /proc reads each) for one request of a
 * caller whose /proc hides others' processes: the managed tasks are as many as users
 * make them, and one list must not read them all on the loop.
 */
#define CTL_REQ_JUDGED 2048
/* ctl_req_visible, for eyes, a struct ctl_req_eyes, within CTL_REQ_JUDGED. */
bool ctl_req_sees(void *eyes, pid_t tid, uint64_t start_time);
/*
 * f as k may see it (status's "what else shapes scheduling"): false when f names
 * only processes hidden from k; else *ret is f with the pids hidden from k left out.
 */
bool ctl_req_finding(struct ctl_env *x, const struct ctl_caller *k, const struct peers_finding *f,
		     struct peers_finding *ret);

/* Whether the caller holds gid, as its effective or a supplementary group. */
bool ctl_req_in_group(const struct ctl_caller *k, gid_t gid);
/* Root, or a member of ctl_group: may change what the daemon does, to any task. */
bool ctl_req_admin(const struct ctl_caller *k, const struct rqb_conf *conf);
/*
 * ---- the one procedure for a latency request, from either door ----
 *
 * The doors decode a request into a struct ctl_request and encode the answer; every
 * step between is ctl_req_run's, in one order: the target (a thread's process found,
 * a path checked), what the caller may see of it (a task its /proc hides is one that
 * does not exist, for a request that reads), whether it may do the request to it
 * (judged as the kernel would judge its own setpriority(2) and sched_setattr(2) on
 * each thread now, ctl_perm.h), the action through the latency manager, and the log
 * of a refusal (rate-limited) or of a change.
 */
enum ctl_req_op {
	CTL_REQ_OP_GET,        /* the value and who gave it */
	CTL_REQ_OP_EXPLAIN,    /* why the target has what it has */
	CTL_REQ_OP_SET,        /* give it value */
	CTL_REQ_OP_RESET,      /* give back what it had before rqbalance */
	CTL_REQ_OP_FOREGROUND, /* [latency] foreground for a process (pid 0: none) */
	CTL_REQ_OP_GAME,       /* [latency] game for a process, the connection's grant */
	CTL_REQ_OP_UNGAME,     /* ends a grant CTL_REQ_OP_GAME gave the same connection */
};

struct ctl_request {
	enum ctl_req_op op;
	const char *name;        /* the door's name for it, for the log: "set", "SetProcess" */
	struct lat_target t;     /* as named; its tgid and start time once checked */
	int value;               /* CTL_REQ_OP_SET's value */
	const char *conn;        /* GAME, UNGAME: the caller's bus connection's unique name */
};

struct ctl_answer {
	int n;                   /* SET, RESET: the tasks that have it now (0: a cgroup) */
	int value;               /* GET, FOREGROUND, GAME: the value (0: nothing in front) */
	const char *source;      /* GET: who gave it */
	char text[2048];         /* GET: the target's lines; SET: what rqctl shows */
	char *explain;           /* EXPLAIN: the text, for the door to free */
	const char *why;         /* on failure: why; NULL with -ENOENT: not managed */
};

/*
 * Carries out q for caller k: 0 and *ret, or -errno with ret->why: -EINVAL (a bad
 * target), -ESRCH or -ENOENT (gone, hidden, not managed), -EPERM (refused, logged).
 */
int ctl_req_run(struct ctl_env *x, const struct ctl_caller *k, struct ctl_request *q,
		struct ctl_answer *ret);
/*
 * Bus connection conn left the bus (NULL: the daemon's own bus went away): the games it
 * registered are given back.
 */
void ctl_req_conn_gone(struct ctl_env *x, const char *conn);

#endif
