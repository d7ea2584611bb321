/*
 * The ctl permission and visibility rules, pure. They must never allow through the
 * daemon what the kernel would refuse the caller directly (see ctl_perm.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "ctl/ctl_perm.h"

/*
 * What a value sets besides nice and policy asks nothing more of the caller than the
 * kernel would ask for the same sched_setattr. uclamp: Linux 6.1's
 * user_check_sched_setscheduler() (kernel/sched/core.c) lets a caller without
 * CAP_SYS_NICE change a task's clamps when check_same_owner() passes, with no further
 * test; uclamp_validate() only checks the range (0 to 1024) and min <= max. What the
 * task then gets is bounded by the kernel itself: the sysctls sched_util_clamp_min and
 * sched_util_clamp_max, and its cgroup's cpu.uclamp.min and .max (uclamp_eff_value()).
 * So the owner check below covers the clamps; the nice, SCHED_IDLE and
 * SCHED_RESET_ON_FORK checks are what the kernel adds. Which knob each applies to is
 * its row's rule in the knob table (latknob.c); this file only says what each rule asks.
 */

/* Whether the kernel lets an owner without CAP_SYS_NICE take nice to want (can_nice()). */
static bool nice_ok(int nice, int want, long rlim_nice)
{
	return want >= nice || want >= 20 - rlim_nice;
}

/* The thread's nice now, which LAT_PERM_LEAVE_IDLE measures RLIMIT_NICE against. */
static int64_t nice_now(const struct lat_perm_thread *t)
{
	for (unsigned i = 0; i < t->n; i++)
		if (t->k[i].rule == LAT_PERM_NICE_DOWN)
			return t->k[i].now;
	return 0;
}

/* Whether the kernel lets an owner without CAP_SYS_NICE take knob k as the request would. */
static bool knob_ok(const struct lat_perm_knob *k, int64_t nice, long rlim_nice)
{
	switch (k->rule) {
	case LAT_PERM_NICE_DOWN:
		return nice_ok((int)k->now, (int)k->after, rlim_nice);
	case LAT_PERM_LEAVE_IDLE:
		return !k->now || k->after || nice >= 20 - rlim_nice;
	case LAT_PERM_CLEAR:
		return !k->now || k->after;
	default:
		return true;
	}
}

/* A rule's refusal, in the order the kernel tests them (nice, then policy, then flags). */
static const struct {
	enum lat_perm rule;
	const char *why;
} refusals[] = {
	{ LAT_PERM_NICE_DOWN, "permission denied: a thread's nice would go below what it has "
			      "now, which needs CAP_SYS_NICE (or RLIMIT_NICE)" },
	{ LAT_PERM_LEAVE_IDLE, "permission denied: a thread would leave SCHED_IDLE, which needs "
			       "CAP_SYS_NICE (or an RLIMIT_NICE that covers its nice)" },
	{ LAT_PERM_CLEAR, "permission denied: a thread's flag would be cleared "
			  "(SCHED_RESET_ON_FORK), which needs CAP_SYS_NICE" },
};

/* Each knob of the thread by its rule (the knob table's row): 0 or -EPERM. */
static int thread_check(const struct lat_perm_thread *t, long rlim_nice, const char **ret_why)
{
	int64_t nice = nice_now(t);

	for (size_t r = 0; r < sizeof(refusals) / sizeof(refusals[0]); r++)
		for (unsigned i = 0; i < t->n; i++)
			if (t->k[i].rule == refusals[r].rule &&
			    !knob_ok(&t->k[i], nice, rlim_nice)) {
				*ret_why = refusals[r].why;
				return -EPERM;
			}
	return 0;
}

int ctl_perm_check(const struct ctl_perm_facts *f, const char **ret_why)
{
	if (f->admin)
		return 0;
	if (!f->cap_sys_nice && f->peer_euid != f->target_ruid && f->peer_euid != f->target_euid) {
		*ret_why = "permission denied: not yours (needs the same uid or CAP_SYS_NICE)";
		return -EPERM;
	}
	if (f->owner_only || f->cap_sys_nice)
		return 0;
	for (size_t i = 0; i < f->nth; i++)
		if (thread_check(&f->th[i], f->rlim_nice, ret_why) < 0)
			return -EPERM;
	if (f->nth || nice_ok(f->cur, f->want, f->rlim_nice))
		return 0;
	*ret_why = "permission denied: lowering a value needs CAP_SYS_NICE (or RLIMIT_NICE)";
	return -EPERM;
}

#define CAP_SYS_NICE_BIT 23

bool ctl_perm_peer_cap(uid_t euid, const struct ctl_peer *p, unsigned cap)
{
	return cap < 64 && (p->cap_eff & (1ULL << cap)) && p->same_userns && p->owner == euid;
}

int ctl_perm_peer_accept(uid_t euid, gid_t egid, const struct ctl_peer *p, bool *ret_cap_sys_nice,
		     const char **ret_why)
{
	unsigned ids[4];

	if (sscanf(p->uid, "%u %u", &ids[0], &ids[1]) != 2 || ids[1] != euid ||
	    sscanf(p->gid, "%u %u", &ids[2], &ids[3]) != 2 || ids[3] != egid) {
		*ret_why = "its credentials changed between connect and accept";
		return -EPERM;
	}
	*ret_cap_sys_nice = ctl_perm_peer_cap(euid, p, CAP_SYS_NICE_BIT);
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

static bool seer_in_group(const struct ctl_perm_seer *s, gid_t gid)
{
	if (s->gid != (gid_t)-1 && s->gid == gid)
		return true;
	for (int i = 0; i < s->ngroups; i++)
		if (s->groups[i] == gid)
			return true;
	return false;
}

/* ptrace_may_access(t, PTRACE_MODE_READ_FSCREDS) for s, short of the LSMs. */
static bool ptrace_read(const struct ctl_perm_seer *s, const struct ctl_peer *t)
{
	unsigned u[4], g[4];

	if (s->cap_sys_ptrace)
		return true;
	if (sscanf(t->uid, "%u %u %u %u", &u[0], &u[1], &u[2], &u[3]) != 4 ||
	    sscanf(t->gid, "%u %u %u %u", &g[0], &g[1], &g[2], &g[3]) != 4)
		return false;
	if (u[0] != s->uid || u[1] != s->uid || u[2] != s->uid)
		return false;
	if (g[0] != g[1] || g[1] != g[2])
		return false;
	if (s->gid != (gid_t)-1 ? g[0] != s->gid : !seer_in_group(s, g[0]))
		return false;
	return t->owner == u[1];
}

bool ctl_perm_visible(const struct ctl_view *v, const struct ctl_perm_seer *s,
		      const struct ctl_peer *t)
{
	if (v->hidepid == CTL_HIDEPID_OFF)
		return true;
	if (v->hidepid != CTL_HIDEPID_PTRACEABLE && v->by_group && seer_in_group(s, v->gid))
		return true;
	return ptrace_read(s, t);
}
