/*
 * Policy stage, latency: decides who gets which latency-nice value from what the
 * manager read, and says it as plan actions. Pure: no I/O, no clock; its only calls
 * are string functions, the rules' match and plan_add.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/latency.h"
#include "policy/latpol.h"

static const char *const why_reused = "no such process (or its pid was reused)";

static int add_set(struct plan *ret, const struct latpol_task *t, const struct lat_req *rq,
		   bool whole)
{
	struct plan_action a = { .op = PLAN_LAT_SET, .tid = t->tid, .tgid = t->tgid,
				 .start_time = t->start_time, .value = rq->value,
				 .from_tid = rq->from_tid, .whole = whole,
				 .async_move = rq->async_move, .no_inherit = rq->no_inherit,
				 .from_llc = -1, .to_llc = -1 };

	snprintf(a.source, sizeof(a.source), "%s", rq->source ? rq->source : "");
	return plan_add(ret, &a);
}

static int add_reset(struct plan *ret, const struct latpol_task *t)
{
	struct plan_action a = { .op = PLAN_LAT_RESET, .tid = t->tid, .tgid = t->tgid,
				 .start_time = t->start_time, .from_llc = -1, .to_llc = -1 };

	return plan_add(ret, &a);
}

/* Whether t has rq's value from its source already, handed down or not as rq says. */
static bool has(const struct latpol_task *t, const struct lat_req *rq)
{
	return t->value == rq->value && t->value != LAT_NONE &&
	       t->no_inherit == rq->no_inherit &&
	       strcmp(t->source ? t->source : "", rq->source ? rq->source : "") == 0;
}

/* Why a task is never given a value, or NULL. */
static const char *refusal(const struct latpol_task *t, pid_t self)
{
	if (t->kthread)
		return "a kernel thread";
	return t->tgid == self ? "rqbalanced itself" : NULL;
}

int latpol_task(const struct latpol_task *t, const struct lat_req *rq, pid_t self,
		struct plan *ret, const char **ret_why)
{
	if (t->gone || (rq->start_time && t->start_time != rq->start_time)) {
		*ret_why = "no such task (or its pid was reused)";
		return -ESRCH;
	}
	*ret_why = refusal(t, self);
	if (*ret_why)
		return -EPERM;
	return add_set(ret, t, rq, false) < 0 ? -ENOMEM : 1;
}

/* The first thread as the thread list has it (its value), else as the process was read. */
static struct latpol_task lead_of(const struct latpol_proc *p)
{
	struct latpol_task l = p->lead;

	l.value = LAT_NONE;
	l.source = "";
	for (size_t i = 0; i < p->nt; i++) {
		if (p->t[i].tid == l.tid) {
			l.value = p->t[i].value;
			l.source = p->t[i].source;
		}
	}
	return l;
}

int latpol_process(const struct latpol_proc *p, const struct lat_req *rq, pid_t self,
		   struct plan *ret, const char **ret_why)
{
	struct latpol_task lead = lead_of(p);
	int n = 0;

	*ret_why = NULL;
	if (lead.gone || (rq->start_time && lead.start_time != rq->start_time) ||
	    p->no_threads) {
		*ret_why = why_reused;
		return -ESRCH;
	}
	*ret_why = refusal(&lead, self);
	if (*ret_why)
		return -EPERM;
	if (!has(&lead, rq)) {
		if (add_set(ret, &lead, rq, true) < 0)
			return -ENOMEM;
		n++;
	}
	for (size_t i = 0; i < p->nt; i++) {
		const struct latpol_task *t = &p->t[i];

		if (t->tid <= 0 || t->tid == lead.tid || t->gone || t->kthread ||
		    has(t, rq))
			continue;
		if (add_set(ret, t, rq, true) < 0)
			return -ENOMEM;
		n++;
	}
	plan_finish(ret);
	return n;
}

int latpol_reset_process(pid_t tgid, const struct latpol_rec *rec, uint64_t expect,
			 const struct latpol_task *e, size_t n, struct plan *ret)
{
	int added = 0;

	if (rec && rec->managed && expect && rec->start_time != expect)
		return -ENOENT;
	for (size_t i = 0; i < n; i++) {
		if (e[i].tgid != tgid || (e[i].tid == tgid && expect && e[i].start_time != expect))
			continue;
		if (add_reset(ret, &e[i]) < 0)
			return -ENOMEM;
		added++;
	}
	plan_finish(ret);
	return added || (rec && rec->managed) ? added : -ENOENT;
}

int latpol_reset_task(const struct latpol_task *e, uint64_t expect, struct plan *ret)
{
	if (!e || (expect && e->start_time != expect))
		return -ENOENT;
	return add_reset(ret, e) < 0 ? -ENOMEM : 1;
}

static int add_cgroup(enum plan_op op, const char *path, int v, const char *source,
		      struct plan *ret)
{
	struct plan_action a = { .op = op, .value = v, .from_llc = -1, .to_llc = -1 };

	snprintf(a.path, sizeof(a.path), "%s", path);
	snprintf(a.source, sizeof(a.source), "%s", source ? source : "");
	return plan_add(ret, &a) < 0 ? -ENOMEM : 1;
}

int latpol_cgroup(const char *path, int v, const char *source, struct plan *ret)
{
	return add_cgroup(PLAN_LAT_CG_SET, path, v, source, ret);
}

int latpol_cgroup_reset(const char *path, struct plan *ret)
{
	return add_cgroup(PLAN_LAT_CG_RESET, path, LAT_NONE, "", ret);
}

int latpol_unit(const char *path, const struct lat_unit_decision *d, int held,
		const char *source, struct plan *ret)
{
	if (d && d->verdict == LAT_UNIT_OWN)
		return held == d->value ? 0 : add_cgroup(PLAN_LAT_UNIT_SET, path, d->value, source, ret);
	return held == LAT_NONE ? 0 : add_cgroup(PLAN_LAT_UNIT_RESET, path, LAT_NONE, "", ret);
}

bool latpol_rules_may_change(const struct latpol_rec *rec, bool self)
{
	return !self && !(rec->managed && !rec->from_rule);
}

enum latpol_rule_verdict latpol_rule(const struct rule_set *rs, const struct proc_ident *id,
				     const struct latpol_rec *rec, int *ret_rule,
				     char *ret_source)
{
	int i = id && rs->n ? rules_match(rs, id) : -1;
	char source[PLAN_SOURCE_MAX];

	if (i < 0)
		return rec->managed ? LATPOL_RULE_GIVE_BACK : LATPOL_RULE_KEEP;
	snprintf(source, sizeof(source), "rule %s", rs->r[i].name);
	if (rec->managed && rec->value == rs->r[i].latency_nice &&
	    rec->no_inherit == !rs->r[i].inherit && strcmp(rec->source, source) == 0)
		return LATPOL_RULE_KEEP;
	*ret_rule = i;
	memcpy(ret_source, source, sizeof(source));
	return LATPOL_RULE_APPLY;
}

int latpol_fork(const struct latpol_fork *f, pid_t self, struct plan *ret, const char **ret_why)
{
	struct lat_req rq = { .tid = f->child.tid, .tgid = f->child.tgid,
			      .start_time = f->child.start_time, .value = f->creator.value,
			      .source = f->creator.source, .from_tid = f->from_tid,
			      .no_inherit = f->creator.no_inherit };

	*ret_why = NULL;
	if (!f->creator.managed)
		return 0;
	if (!latpol_hands_down(&f->creator, f->thread)) {
		*ret_why = "its creator's value is not handed down (inherit = no)";
		return 0;
	}
	if (!f->thread && !f->creator_known && !f->inherited) {
		*ret_why = "did not inherit what rqbalance set there (cloned by another task)";
		return 0;
	}
	return latpol_task(&f->child, &rq, self, ret, ret_why);
}

bool latpol_adopt(const struct latpol_rec *parent, uint64_t start, bool inherited)
{
	return parent->managed && !parent->from_rule && start >= parent->start_time && inherited;
}

bool latpol_hands_down(const struct latpol_rec *creator, bool thread)
{
	return creator->managed && (thread || !creator->no_inherit);
}

int latpol_reapply(const struct latpol_task *e, size_t n, struct plan *ret)
{
	for (size_t i = 0; i < n; i++) {
		struct lat_req rq = { .tid = e[i].tid, .tgid = e[i].tgid,
				      .start_time = e[i].start_time, .value = e[i].value,
				      .source = e[i].source, .no_inherit = e[i].no_inherit };

		if (add_set(ret, &e[i], &rq, false) < 0)
			return -ENOMEM;
	}
	plan_finish(ret);
	return (int)n;
}
