/*
 * Who may do what through the ctl socket: the kernel's own rules for changing
 * another task, applied to the peer's credentials, so that the daemon never lends
 * its privilege. Pure: the facts are read elsewhere (ctl.c) and passed in.
 */
#ifndef RQB_CTL_PERM_H
#define RQB_CTL_PERM_H

#include <stdbool.h>
#include <sys/types.h>

struct perm_facts {
	bool admin;          /* root, or a member of ctl_group */
	bool cap_sys_nice;   /* CAP_SYS_NICE effective, in the initial user namespace */
	uid_t peer_euid;
	uid_t target_ruid;   /* for a cgroup: the owner of its weight file */
	uid_t target_euid;
	long rlim_nice;      /* the target's RLIMIT_NICE soft limit (as setrlimit: 0…40) */
	int cur;             /* the value it has now; 0 when it has none */
	int want;            /* the value asked for; 0 for a reset */
};

/*
 * 0 if the peer may, else -EPERM with *ret_why:
 * - root and ctl_group may do anything;
 * - others only to tasks they could renice themselves: their euid is the target's
 *   real or effective uid, or they have CAP_SYS_NICE;
 * - without CAP_SYS_NICE a value may only go up, except down to 20 - RLIMIT_NICE
 *   (the bound the kernel puts on lowering nice).
 */
int perm_check(const struct perm_facts *f, const char **ret_why);

#endif
