/*
 * The ctl permission rule, pure. It must never allow through the daemon what the
 * kernel would refuse the peer directly (see ctl_perm.h for the rule).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl_perm.h"

int ctl_perm_check(const struct ctl_perm_facts *f, const char **ret_why)
{
	if (f->admin)
		return 0;
	if (!f->cap_sys_nice && f->peer_euid != f->target_ruid && f->peer_euid != f->target_euid) {
		*ret_why = "permission denied: not yours (needs the same uid or CAP_SYS_NICE)";
		return -EPERM;
	}
	if (f->want >= f->cur || f->cap_sys_nice)
		return 0;
	if (f->want >= 20 - f->rlim_nice)
		return 0;
	*ret_why = "permission denied: lowering a value needs CAP_SYS_NICE (or RLIMIT_NICE)";
	return -EPERM;
}

#define CAP_SYS_NICE_BIT 23

int ctl_perm_peer_accept(uid_t euid, gid_t egid, const struct ctl_peer *p, bool *ret_cap_sys_nice,
		     const char **ret_why)
{
	unsigned ids[4];

	if (sscanf(p->uid, "%u %u", &ids[0], &ids[1]) != 2 || ids[1] != euid ||
	    sscanf(p->gid, "%u %u", &ids[2], &ids[3]) != 2 || ids[3] != egid) {
		*ret_why = "its credentials changed between connect and accept";
		return -EPERM;
	}
	*ret_cap_sys_nice = (p->cap_eff & (1ULL << CAP_SYS_NICE_BIT)) && p->same_userns &&
			    p->owner == euid;
	return 0;
}

int ctl_perm_peer_same(const struct ctl_peer *then, const struct ctl_peer *now, const char **ret_why)
{
	if (now->start_time != then->start_time) {
		*ret_why = "the process that connected is gone";
		return -EPERM;
	}
	if (strcmp(now->uid, then->uid) != 0 || strcmp(now->gid, then->gid) != 0 ||
	    now->cap_eff != then->cap_eff || now->cap_prm != then->cap_prm ||
	    now->owner != then->owner || now->same_userns != then->same_userns) {
		*ret_why = "the process that connected has changed its credentials or executed "
			   "a privileged program since";
		return -EPERM;
	}
	return 0;
}
