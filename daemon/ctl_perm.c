/*
 * The ctl permission rule, pure. It must never allow through the daemon what the
 * kernel would refuse the peer directly (see ctl_perm.h for the rule).
 */
#include <errno.h>

#include "ctl_perm.h"

int perm_check(const struct perm_facts *f, const char **ret_why)
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
