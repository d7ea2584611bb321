/*
 * The latency requests (set, get, reset, foreground) as the ctl socket and the D-Bus
 * API both serve them: a target, judged for a caller whose credentials the transport
 * took once (SO_PEERCRED at accept; the bus's record of the sender's connection), by
 * one rule (ctl_perm.h), and carried out through the latency manager.
 */
#ifndef RQB_CTL_REQ_H
#define RQB_CTL_REQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "actuate/latact.h"

struct daemon;
struct rqb_conf;

#define CTL_CALLER_GROUPS 64  /* supplementary groups kept; more fail closed */

struct ctl_caller {
	uid_t uid;             /* effective uid when it connected */
	gid_t gid;             /* effective gid then; (gid_t)-1 where unknown (the bus) */
	gid_t groups[CTL_CALLER_GROUPS];
	int ngroups;
	bool cap_sys_nice;     /* counts as holding CAP_SYS_NICE (ctl_perm_peer_accept) */
	const char *via;       /* "ctl" or "dbus": for logs, and the source of its values */
};

enum ctl_target_kind { TGT_PID, TGT_TID, TGT_CGROUP };

struct ctl_target {
	enum ctl_target_kind kind;
	pid_t pid;                /* TGT_PID: a process; TGT_TID: a thread */
	pid_t tgid;               /* its process */
	uint64_t start_time;      /* of pid, when judged: the write is refused if it changed */
	char path[LAT_PATH_MAX];  /* TGT_CGROUP */
};

/* Whether the caller holds gid, as its effective or a supplementary group. */
bool ctl_req_in_group(const struct ctl_caller *k, gid_t gid);
/* Root, or a member of ctl_group: may change what the daemon does, to any task. */
bool ctl_req_admin(const struct ctl_caller *k, const struct rqb_conf *conf);
/*
 * Checks a target named by kind and pid or path, and finds a thread's process: 0, or
 * -EINVAL (a thread named as a process, a bad path) or -ESRCH with *why.
 */
int ctl_req_target(struct daemon *d, struct ctl_target *t, const char **why);
/* What a request would do to its target, for ctl_req_permitted(). */
enum ctl_req_act {
	CTL_REQ_SET,    /* give it a value */
	CTL_REQ_RESET,  /* give back what it had before rqbalance */
	CTL_REQ_OWNER,  /* nothing yet: whether the caller may act on it at all */
};

/*
 * 0 if the caller may do act to t (for a set, give it the value want), else -EPERM,
 * or -ESRCH / -ENOENT when the target is gone, with *why: judged as the kernel would
 * judge the caller's own setpriority(2) and sched_setattr(2) on each of its threads
 * now (ctl_perm.h). *ret_trusted: it may give any task any value (root, ctl_group,
 * CAP_SYS_NICE). Sets t's start time, which the write must find again.
 */
int ctl_req_permitted(struct daemon *d, const struct ctl_caller *k, struct ctl_target *t,
		      enum ctl_req_act act, int want, bool *ret_trusted, const char **why);
/*
 * Gives t the value v (permitted first): the number of tasks that have it now (0 for
 * a cgroup), or -errno with *why. out: what rqctl shows ("tasks N", the unit).
 */
int ctl_req_set(struct daemon *d, const struct ctl_caller *k, const struct ctl_target *t, int v,
		bool trusted, char *out, size_t size, const char **why);
/* What t has from rqbalance, for rqctl get; -ENOENT when it has nothing. */
int ctl_req_get(struct daemon *d, const struct ctl_target *t, char *out, size_t size);
/* The value t has and where it came from; -ENOENT when it has none. */
int ctl_req_value(struct daemon *d, const struct ctl_target *t, int *ret_value,
		  const char **ret_source);
/* Gives back what t had: how many tasks, or -ENOENT when it was not managed. */
int ctl_req_reset(struct daemon *d, const struct ctl_target *t);

#endif
