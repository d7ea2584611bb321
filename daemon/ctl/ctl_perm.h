/*
 * Who may do what, and see what, through the ctl socket and the D-Bus API: the
 * kernel's own rules for changing another task and for showing it in /proc, applied
 * to the caller's credentials, so that the daemon never lends its privilege nor its
 * view. Pure: the facts are read elsewhere (ctl_peer.c, ctl_req.c) and passed in.
 */
#ifndef RQB_CTL_PERM_H
#define RQB_CTL_PERM_H

#include <stdbool.h>
#include <sys/types.h>

#include "ctl/ctl_peer.h"
#include "model/model.h"

struct ctl_perm_facts {
	bool admin;          /* root, or a member of ctl_group */
	bool cap_sys_nice;   /* CAP_SYS_NICE effective, in the daemon's user namespace */
	bool owner_only;     /* only whether the peer may act on the target at all */
	uid_t peer_euid;
	uid_t target_ruid;   /* for a cgroup: the owner of its weight file */
	uid_t target_euid;
	long rlim_nice;      /* the target's RLIMIT_NICE soft limit (as setrlimit: 0…40) */
	/* A task target: every thread, judged on the kernel's state. */
	/*
	 * Each thread of a task target, as the kernel holds it now and as the request
	 * would leave it (a set: the value's; a reset: what it had before rqbalance): the
	 * kernel judges setpriority(2) and sched_setattr(2) thread by thread, and each
	 * knob by its row's rule in the knob table.
	 */
	const struct lat_perm_thread *th;
	size_t nth;
	/* A cgroup target (nth 0): its value now (0 for none) and the one asked for. */
	int cur;
	int want;
};

/*
 * 0 if the peer may, else -EPERM with *ret_why:
 * - root and ctl_group may do anything;
 * - others only to tasks they could renice themselves: their euid is the target's
 *   real or effective uid, or they have CAP_SYS_NICE;
 * - without CAP_SYS_NICE, as the kernel rules on each thread's nice and policy now
 *   (never on rqbalance's record of them): a thread's nice may only go up, except
 *   down to 20 - RLIMIT_NICE; a SCHED_IDLE thread may leave SCHED_IDLE only where
 *   its nice is within that bound; a flag the kernel lets only CAP_SYS_NICE clear
 *   (SCHED_RESET_ON_FORK) is not cleared; a cgroup's value likewise only up, or down
 *   to the bound.
 */
int ctl_perm_check(const struct ctl_perm_facts *f, const char **ret_why);

/*
 * At accept: whether a connection may be served on the peer's credentials p, read
 * just after SO_PEERCRED gave euid and egid (taken by the kernel at connect). 0, or
 * -EPERM with *ret_why when the euid or egid differ (the peer changed its credentials
 * before the daemon took the connection). *ret_cap_sys_nice: the peer counts as
 * holding CAP_SYS_NICE: effective, in the daemon's user namespace, and dumpable
 * (/proc/PID owned by its euid): an exec that raised its capabilities (a file with
 * capabilities, set-user-ID root) or any other raise of its permitted set makes it
 * non-dumpable, so a capability gained between connect and accept is never counted.
 */
int ctl_perm_peer_accept(uid_t euid, gid_t egid, const struct ctl_peer *p, bool *ret_cap_sys_nice,
		     const char **ret_why);
/*
 * Before each request: 0 if now (read again) is the peer as it was at accept, else
 * -EPERM with *ret_why. A set-user-ID or set-group-ID exec that grants anything
 * changes the effective and saved IDs (Uid/Gid), one that grants capabilities
 * CapPrm, and either makes the process non-dumpable (the owner of /proc/PID); an
 * exec that changes none of them (nosuid, no_new_privs) grants nothing either.
 */
int ctl_perm_peer_same(const struct ctl_peer *then, const struct ctl_peer *now, const char **ret_why);

/*
 * Whether the peer, as read at accept, counts as holding capability cap (its bit
 * number): effective, in the daemon's own user namespace, and dumpable (/proc/PID
 * owned by its euid), as ctl_perm_peer_accept counts CAP_SYS_NICE.
 */
bool ctl_perm_peer_cap(uid_t euid, const struct ctl_peer *p, unsigned cap);

/*
 * What one proc mount shows whom: its hidepid= and gid= options (proc(5)). hidepid
 * 1 (noaccess) and 2 (invisible) hide another user's processes' details from all but
 * the members of group gid (root's group 0 where the mount names none) and those who
 * may ptrace-read them; 4 (ptraceable) from all but the latter.
 */
enum { CTL_HIDEPID_OFF = 0, CTL_HIDEPID_NOACCESS = 1, CTL_HIDEPID_INVISIBLE = 2,
       CTL_HIDEPID_PTRACEABLE = 4 };
struct ctl_view {
	unsigned hidepid;    /* CTL_HIDEPID_* */
	bool by_group;       /* the members of gid see everything (not for ptraceable) */
	gid_t gid;
};

/* Who looks: a caller's credentials as the transport took them. */
struct ctl_perm_seer {
	uid_t uid;           /* its effective uid */
	gid_t gid;           /* its effective gid; (gid_t)-1 where unknown (the bus) */
	const gid_t *groups; /* its supplementary groups */
	int ngroups;
	bool cap_sys_ptrace; /* counts as holding CAP_SYS_PTRACE (ctl_perm_peer_cap) */
};

/*
 * Whether a proc mount with options v shows seer s the process t (its credentials
 * read from /proc/PID/status, and the owner of /proc/PID), as the kernel's
 * has_pid_permissions() decides for a read of /proc/PID: with hidepid on, only to the
 * members of its group and to whom may read t as ptrace_may_access(PTRACE_MODE_READ)
 * allows: CAP_SYS_PTRACE, or the same user: s's uid is t's real, effective and saved
 * uid, its gid t's real, effective and saved gid (where s's gid is unknown, one of
 * its groups stands for it), and t is dumpable (the owner of /proc/PID is its euid:
 * the kernel makes it root once a set-user-ID exec or prctl made t not dumpable).
 */
bool ctl_perm_visible(const struct ctl_view *v, const struct ctl_perm_seer *s,
		      const struct ctl_peer *t);

#endif
