/*
 * Latency management, units on a systemd host: the unit of each managed process, and
 * whether all its processes carry one value, which gives the unit that value's
 * CPUWeight (lat_unit_decide). It weighs no unit whose processes do not all agree.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actuate/cgsd.h"
#include "latmgr/latmgr_int.h"
#include "sample/cgm.h"
#include "sample/procfs.h"
#include "util/log.h"
#include "util/util.h"

static struct latmgr_unit *unit_find(const struct latmgr *m, const char *cgroup)
{
	for (size_t i = 0; i < m->nu; i++)
		if (strcmp(m->u[i].cgroup, cgroup) == 0)
			return &m->u[i];
	return NULL;
}

const struct latmgr_unit *latmgr_unit_of(const struct latmgr *m, pid_t tgid)
{
	char cg[LAT_PATH_MAX];

	if (!m->units_on || procfs_cgroup(m->proc_root, 0, tgid, cg, sizeof(cg)) < 0)
		return NULL;
	return unit_find(m, cg);
}

/* A new unit record for cgroup cg, decided nothing yet; NULL without memory. */
static struct latmgr_unit *unit_add(struct latmgr *m, const char *cg)
{
	struct latmgr_unit *u, *arr = util_grow(m->u, &m->capu, m->nu, sizeof(*arr));

	if (!arr)
		return NULL;
	m->u = arr;
	u = &m->u[m->nu++];
	memset(u, 0, sizeof(*u));
	snprintf(u->cgroup, sizeof(u->cgroup), "%s", cg);
	u->d.verdict = LAT_UNIT_SHARED;
	u->d.value = LAT_NONE;
	return u;
}

/* The unit of each managed process, found anew: those no longer holding one are unseen. */
static void units_collect(struct latmgr *m)
{
	char cg[LAT_PATH_MAX];

	for (size_t i = 0; i < m->nu; i++)
		m->u[i].seen = false;
	for (size_t i = 0; i < m->np; i++) {
		struct latmgr_unit *u;

		if (procfs_cgroup(m->proc_root, 0, m->p[i].tgid, cg, sizeof(cg)) < 0)
			continue;
		u = unit_find(m, cg);
		if (!u && !(u = unit_add(m, cg)))
			continue;
		if (!u->seen)
			u->pid = m->p[i].tgid;
		u->seen = true;
	}
}

/*
 * The value a process in a unit carries. A child whose fork the connector has not
 * yet reported (it started after the last event handled) is its managed parent's, as
 * on_fork will make it: a forking workload does not flip its unit's weight.
 */
static void member_value(const struct latmgr *m, const struct cgm_proc *c, struct lat_member *ret)
{
	const struct latmgr_proc *p = latmgr_find_process(m, c->pid);
	uint64_t start, t = latmgr_mono_ticks(m->last_event_ns);
	bool kthread;

	*ret = (struct lat_member){ .pid = c->pid, .ruid = c->ruid, .euid = c->euid,
				    .value = LAT_NONE };
	/* Within a clock tick of the last event counts as after it. */
	if (!p && latmgr_has_events(m) && (p = latmgr_find_process(m, c->ppid)) != NULL &&
	    (!t || latmgr_task_info(m, c->pid, &start, &kthread) < 0 || start + 1 < t))
		p = NULL;
	if (p) {
		ret->value = p->value;
		ret->trusted = p->trusted;
	}
}

/* What the unit's processes are, and what that decides for it. */
static void unit_decide(struct latmgr *m, struct latmgr_unit *u, struct lat_unit_decision *ret)
{
	struct lat_unit_view v = { .cgroup = u->cgroup, .unit = "" };
	struct lat_conf lc = m->la->lc;
	struct lat_member *mem = NULL;
	struct cgm_proc *procs = NULL;
	size_t n = 0;
	int r = cgsd_unit_for_cgroup(u->cgroup, u->unit, sizeof(u->unit));

	if (r < 0)
		u->unit[0] = '\0';
	v.unit = u->unit;
	v.delegated = r == -EPERM;
	if (u->unit[0] && cgm_read(m->la->cls.mount, u->cgroup, m->proc_root, CGM_MAX_PROCS,
				   &procs, &n, &v.truncated) == 0 &&
	    (mem = calloc(n ? n : 1, sizeof(*mem))) != NULL) {
		for (size_t i = 0; i < n; i++)
			member_value(m, &procs[i], &mem[i]);
		v.m = mem;
		v.n = n;
	}
	lat_unit_decide(&lc, &v, ret);
	free(procs);
	free(mem);
}

static void unit_log(struct latmgr_unit *u, const struct lat_unit_decision *d)
{
	bool changed = !u->logged || u->d.verdict != d->verdict || u->d.value != d->value ||
		       strcmp(u->d.why, d->why) != 0;

	u->logged = true;
	if (!changed)
		return;
	if (d->verdict == LAT_UNIT_OWN && u->act_r == 0 && d->weight)
		log_info("latency: unit %s: its processes all have value %d: CPUWeight %" PRIu64,
			 u->unit, d->value, d->weight);
	else if (d->verdict == LAT_UNIT_OWN && u->act_r == 0)
		log_info("latency: unit %s: its processes all have value %d: CPUWeight idle",
			 u->unit, d->value);
	else if (d->verdict == LAT_UNIT_OWN)
		log_info("latency: unit %s: CPUWeight not set: %s", u->unit, u->act_why);
	else
		log_info("latency: process %d: %s", (int)u->pid, d->why);
}

/* The value rqbalance gave the unit at path for its processes, LAT_NONE if none. */
static int unit_held(const struct latmgr *m, const char *path)
{
	const struct lat_cg_entry *c = latact_find_cgroup(m->la, path);

	return c && c->by_procs ? c->value : LAT_NONE;
}

/*
 * The policy's plan for the unit at path (d: its decision, NULL once no managed
 * process is left in it), carried out: 0 with nothing to do, else the action's result.
 */
static int unit_plan(struct latmgr *m, const char *path, const struct lat_unit_decision *d,
		     const char *source, const char **ret_why)
{
	struct plan pl;

	plan_init(&pl);
	return latmgr_apply_one(m, &pl, latpol_unit(path, d, unit_held(m, path), source, &pl),
			 ret_why);
}

static void unit_apply(struct latmgr *m, struct latmgr_unit *u)
{
	struct lat_unit_decision d;
	const struct latmgr_proc *p = latmgr_find_process(m, u->pid);
	const char *why = NULL;
	char source[48];
	int r;

	unit_decide(m, u, &d);
	snprintf(source, sizeof(source), "unit of %s", p ? p->source : "processes");
	r = unit_plan(m, u->cgroup, &d, source, &why);
	u->act_r = d.verdict == LAT_UNIT_OWN ? r : 0;
	u->act_why[0] = '\0';
	if (u->act_r < 0)
		snprintf(u->act_why, sizeof(u->act_why), "%s", why ? why : strerror(-u->act_r));
	unit_log(u, &d);
	u->d = d;
}

void latmgr_units_refresh(struct latmgr *m)
{
	if (!m->units_on)
		return;
	m->units_dirty = false;
	units_collect(m);
	for (size_t i = m->nu; i-- > 0;) {
		struct latmgr_unit *u = &m->u[i];

		if (u->seen) {
			unit_apply(m, u);
			continue;
		}
		/* No managed process left in it: what rqbalance set goes back. */
		if (unit_held(m, u->cgroup) != LAT_NONE &&
		    unit_plan(m, u->cgroup, NULL, "", NULL) == 0)
			log_info("latency: unit %s: no process with a value left: CPUWeight given back",
				 u->unit[0] ? u->unit : u->cgroup);
		m->u[i] = m->u[--m->nu];
	}
}
