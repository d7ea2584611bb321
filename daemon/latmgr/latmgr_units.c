/*
 * Latency management, units on a systemd host: the unit of each managed process, and
 * whether all its processes carry one value, which gives the unit that value's
 * CPUWeight (latency_unit_decide). It weighs no unit whose processes do not all agree.
 *
 * What it costs follows what changed, not what is managed: each process record keeps
 * the slot of its unit, read once when it joins the table; a record that comes, goes
 * or changes value marks that unit, and an exit the unit it kept SHARED (its blocker).
 * Only marked units are decided again. What no event tells (a process moved to another
 * cgroup, one that joined a unit) is checked a share at a time: each tick re-reads the
 * cgroup of 1/LATMGR_SWEEP_TICKS of the processes and re-decides as many units.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actuate/cgsd.h"
#include "latmgr/latmgr_int.h"
#include "proc/procfs.h"
#include "taskev/cgm.h"
#include "util/log.h"
#include "util/util.h"

/* FNV-1a of a cgroup path, never 0 (a free slot's key). */
static uint32_t path_hash(const char *s)
{
	uint32_t h = 2166136261u;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return h | 1;
}

static struct latmgr_unit *unit_find(const struct latmgr *m, const char *cgroup)
{
	uint32_t h = path_hash(cgroup);

	for (size_t i = 0; i < m->nu; i++)
		if (m->uk[i].hash == h && strcmp(m->u[i].cgroup, cgroup) == 0)
			return &m->u[i];
	return NULL;
}

static struct latmgr_unit *unit_at(const struct latmgr *m, uint32_t slot1)
{
	return slot1 && slot1 <= m->nu && m->u[slot1 - 1].used ? &m->u[slot1 - 1] : NULL;
}

const struct latmgr_unit *latmgr_unit_of(const struct latmgr *m, pid_t tgid)
{
	char cg[LAT_PATH_MAX];

	if (!m->units_on || procfs_cgroup(m->proc_root, 0, tgid, cg, sizeof(cg)) < 0)
		return NULL;
	return unit_find(m, cg);
}

static void unit_mark(struct latmgr *m, struct latmgr_unit *u)
{
	u->dirty = true;
	m->units_dirty = true;
}

/* A new unit record for cgroup cg, in a free slot; NULL without memory. */
static struct latmgr_unit *unit_add(struct latmgr *m, const char *cg)
{
	struct latmgr_unit *u = NULL;
	size_t i;

	for (i = 0; i < m->nu && m->u[i].used; i++)
		;
	if (i == m->nu) {
		size_t cap = m->capu;
		struct latmgr_unit *arr = util_grow(m->u, &cap, m->nu, sizeof(*arr));
		struct latmgr_ukey *keys;

		if (!arr)
			return NULL;
		m->u = arr;
		keys = realloc(m->uk, cap * sizeof(*keys));
		if (!keys)
			return NULL; /* the units grew: their capacity stays, to grow again */
		m->uk = keys;
		m->capu = cap;
		m->nu++;
	}
	u = &m->u[i];
	memset(u, 0, sizeof(*u));
	snprintf(u->cgroup, sizeof(u->cgroup), "%s", cg);
	u->used = true;
	u->d.verdict = LAT_UNIT_SHARED;
	u->d.value = LAT_NONE;
	m->uk[i] = (struct latmgr_ukey){ .hash = path_hash(u->cgroup) };
	return u;
}

static void unit_free(struct latmgr *m, struct latmgr_unit *u)
{
	size_t i = (size_t)(u - m->u);

	u->used = false;
	m->uk[i] = (struct latmgr_ukey){ 0 };
	while (m->nu && !m->u[m->nu - 1].used)
		m->nu--;
}

/* Process p counts in unit slot (0: none) instead of its last one; both are marked. */
static void unit_move(struct latmgr *m, struct latmgr_proc *p, struct latmgr_unit *to)
{
	struct latmgr_unit *from = unit_at(m, p->unit);

	if (from == to)
		return;
	if (from) {
		from->nproc--;
		unit_mark(m, from);
	}
	p->unit = to ? (uint32_t)(to - m->u) + 1 : 0;
	if (to) {
		to->nproc++;
		to->pid = p->tgid;
		unit_mark(m, to);
	}
}

void latmgr_unit_place(struct latmgr *m, struct latmgr_proc *p)
{
	char cg[LAT_PATH_MAX];
	struct latmgr_unit *u = NULL;

	if (!m->units_on)
		return;
	if (procfs_cgroup(m->proc_root, 0, p->tgid, cg, sizeof(cg)) == 0 &&
	    !(u = unit_find(m, cg)))
		u = unit_add(m, cg);
	unit_move(m, p, u);
}

void latmgr_unit_leave(struct latmgr *m, struct latmgr_proc *p)
{
	unit_move(m, p, NULL);
}

void latmgr_unit_touch(struct latmgr *m, const struct latmgr_proc *p)
{
	struct latmgr_unit *u = unit_at(m, p->unit);

	if (u)
		unit_mark(m, u);
}

void latmgr_units_exit(struct latmgr *m, pid_t tgid)
{
	for (size_t i = 0; i < m->nu; i++)
		if (m->uk[i].blocker == tgid && m->u[i].used)
			unit_mark(m, &m->u[i]);
}

void latmgr_units_check_some(struct latmgr *m, size_t count)
{
	for (size_t k = 0; k < count && m->nu; k++) {
		size_t i = m->decide_at++ % m->nu;

		if (m->u[i].used)
			unit_mark(m, &m->u[i]);
	}
}

void latmgr_units_check_all(struct latmgr *m)
{
	for (size_t i = 0; i < m->np; i++)
		latmgr_unit_place(m, m->p[i]);
	latmgr_units_check_some(m, m->nu);
}

/*
 * The value a process in a unit carries. A child whose fork the connector has not
 * yet reported (it started after the last event handled) is its managed parent's, as
 * on_fork will make it: a forking workload does not flip its unit's weight.
 */
static void member_value(const struct latmgr *m, const struct cgm_proc *c, struct lat_member *ret)
{
	const struct latmgr_proc *p = latmgr_find_process(m, c->pid, LATMGR_START_NOW);
	uint64_t start, t = latmgr_mono_ticks(m->last_event_ns);
	bool kthread;

	*ret = (struct lat_member){ .pid = c->pid, .ruid = c->ruid, .euid = c->euid,
				    .value = LAT_NONE };
	/* Within a clock tick of the last event counts as after it. */
	if (!p && latmgr_has_events(m) &&
	    (p = latmgr_find_process(m, c->ppid, LATMGR_START_NOW)) != NULL &&
	    (!t || latmgr_task_info(m, c->pid, &start, &kthread) < 0 || start + 1 < t))
		p = NULL;
	if (p) {
		ret->value = p->value;
		ret->trusted = p->trusted;
	}
}

/*
 * What the unit's processes are, and what that decides for it; *ret_blocker: a
 * process without a value among them (0: none), whose exit is worth deciding again for.
 * Processes with a value are managed: their records mark the unit when they change.
 */
static void unit_decide(struct latmgr *m, struct latmgr_unit *u, struct lat_unit_decision *ret,
			pid_t *ret_blocker)
{
	struct lat_unit_view v = { .cgroup = u->cgroup, .unit = "" };
	struct lat_conf lc = m->la->lc;
	struct lat_member *mem = NULL;
	struct cgm_proc *procs = NULL;
	size_t n = 0;
	int r = cgsd_unit_for_cgroup(u->cgroup, u->unit, sizeof(u->unit));

	*ret_blocker = 0;
	if (r < 0)
		u->unit[0] = '\0';
	v.unit = u->unit;
	v.delegated = r == -EPERM;
	if (u->unit[0] && cgm_read(m->la->cls.mount, u->cgroup, m->proc_root, CGM_MAX_PROCS,
				   &procs, &n, &v.truncated) == 0 &&
	    (mem = calloc(n ? n : 1, sizeof(*mem))) != NULL) {
		for (size_t i = 0; i < n; i++) {
			member_value(m, &procs[i], &mem[i]);
			if (!*ret_blocker && mem[i].value == LAT_NONE)
				*ret_blocker = mem[i].pid;
		}
		v.m = mem;
		v.n = n;
	}
	latency_unit_decide(&lc, &v, ret);
	/*
	 * A unit it would weigh: what someone else left its weight at decides too. Asked of
	 * systemd only then, as each ask is a call over D-Bus (where it cannot be asked, the
	 * write fails too, and says so).
	 */
	if (ret->verdict == LAT_UNIT_OWN &&
	    latact_unit_before(m->la, u->cgroup, u->unit, &v.before_weight, &v.before_idle) == 0)
		latency_unit_decide(&lc, &v, ret);
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
	const struct latmgr_proc *p = latmgr_find_process(m, u->pid, LATMGR_START_NOW);
	const char *why = NULL;
	char source[48];
	pid_t blocker;
	int r;

	unit_decide(m, u, &d, &blocker);
	m->uk[u - m->u].blocker = d.verdict == LAT_UNIT_SHARED ? blocker : 0;
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
	if (!m->units_on || !m->units_dirty)
		return;
	m->units_dirty = false;
	for (size_t i = 0; i < m->nu; i++) {
		struct latmgr_unit *u = &m->u[i];

		if (!u->used || !u->dirty)
			continue;
		u->dirty = false;
		if (u->nproc) {
			unit_apply(m, u);
			continue;
		}
		/* No managed process left in it: what rqbalance set goes back. */
		if (unit_held(m, u->cgroup) != LAT_NONE &&
		    unit_plan(m, u->cgroup, NULL, "", NULL) == 0)
			log_info("latency: unit %s: no process with a value left: CPUWeight given back",
				 u->unit[0] ? u->unit : u->cgroup);
		unit_free(m, u);
	}
}
