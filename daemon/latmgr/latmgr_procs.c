/*
 * Latency management, the table of processes given a value: find, put and delete a
 * record, give a process its value with its record, take both back. It calls the
 * plan, the units and the actuator below it, never the events, the rules or the doors.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latmgr/latmgr_int.h"
#include "proc/procfs.h"
#include "util/sorted.h"
#include "util/util.h"

static size_t proc_index(const struct latmgr *m, pid_t tgid, bool *found)
{
	size_t lo = 0, hi = m->np;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->p[mid]->tgid < tgid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < m->np && m->p[lo]->tgid == tgid;
	return lo;
}

const struct latmgr_proc *latmgr_event_process(const struct latmgr *m, pid_t tgid)
{
	bool found;
	size_t i = proc_index(m, tgid, &found);

	return found ? m->p[i] : NULL;
}

const struct latmgr_proc *latmgr_find_process(const struct latmgr *m, pid_t tgid,
					      uint64_t start_time)
{
	const struct latmgr_proc *p = latmgr_event_process(m, tgid);

	if (p && start_time == LATMGR_START_NOW &&
	    procfs_start_time(m->proc_root, tgid, &start_time) < 0)
		return NULL;
	return p && p->start_time == start_time ? p : NULL;
}

int latmgr_proc_put(struct latmgr *m, const struct latmgr_proc *p)
{
	bool found;
	size_t i = proc_index(m, p->tgid, &found);
	struct latmgr_proc **arr, *q;

	if (found) {
		q = m->p[i];
		bool changed = q->value != p->value || q->trusted != p->trusted,
		     other = q->start_time != p->start_time; /* the pid was reused */
		uint32_t unit = q->unit;

		*q = *p;
		q->unit = unit;
		if (other)
			latmgr_unit_place(m, q);
		if (changed || other)
			latmgr_unit_touch(m, q);
		return 0;
	}
	arr = util_grow(m->p, &m->capp, m->np, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	m->p = arr;
	q = malloc(sizeof(*q));
	if (!q)
		return -ENOMEM;
	*q = *p;
	q->unit = 0;
	if (sorted_insert(m->p, &m->np, m->capp, sizeof(*m->p), i, &q) < 0) {
		free(q);
		return -ENOMEM;
	}
	latmgr_unit_place(m, q);
	return 0;
}

void latmgr_proc_del(struct latmgr *m, pid_t tgid)
{
	bool found;
	size_t i = proc_index(m, tgid, &found);

	if (!found)
		return;
	latmgr_unit_leave(m, m->p[i]);
	free(m->p[i]);
	sorted_remove(m->p, &m->np, sizeof(*m->p), i);
	m->p = util_shrink(m->p, &m->capp, m->np, sizeof(*m->p));
}

int latmgr_refill_threads(struct latmgr *m, const struct latmgr_proc *p,
			  const struct lat_entry *from)
{
	struct lat_req rq = { .tid = p->tgid, .tgid = p->tgid, .start_time = p->start_time,
			      .value = p->value, .source = p->source, .trusted = p->trusted,
			      .from_tid = from ? from->task.tid : 0, .no_inherit = p->no_inherit };
	const char *why;

	return latmgr_set_threads(m, &rq, NULL, &why);
}

int latmgr_proc_record(struct latmgr *m, const struct lat_req *rq, uint64_t start,
		       bool from_rule)
{
	struct latmgr_proc p = { .tgid = rq->tgid, .start_time = start, .value = rq->value,
				 .from_rule = from_rule, .trusted = rq->trusted,
				 .no_inherit = rq->no_inherit };

	snprintf(p.source, sizeof(p.source), "%s", rq->source);
	return latmgr_proc_put(m, &p);
}

int latmgr_give_process(struct latmgr *m, const struct lat_req *rq, bool from_rule,
			const char **ret_why)
{
	uint64_t start = 0;
	int n, r;

	*ret_why = NULL;
	n = latmgr_set_threads(m, rq, &start, ret_why);
	if (n < 0)
		return n;
	r = latmgr_proc_record(m, rq, start, from_rule);
	return r < 0 ? r : n;
}

int latmgr_take_back(struct latmgr *m, pid_t tgid, uint64_t expect)
{
	struct latpol_rec rec = latmgr_rec_of(latmgr_find_process(m, tgid, expect));
	struct latact_result *res = NULL;
	size_t ne;
	struct latpol_task *e = latmgr_entries_of(m, tgid, &ne);
	struct plan pl;
	int r, n = 0;

	plan_init(&pl);
	/* Each is remembered as given back: none pushes out another of the same give-back. */
	if (e)
		latact_given_reserve(m->la, ne + LATACT_GIVEN_MAX);
	r = e ? latpol_reset_process(tgid, &rec, expect, e, ne, &pl) : -ENOMEM;
	free(e);
	if (r < 0) {
		plan_fini(&pl);
		return r;
	}
	latmgr_proc_del(m, tgid);
	if (pl.n)
		res = latmgr_apply(m, &pl);
	for (size_t i = 0; res && i < pl.n; i++)
		n += res[i].r == 0;
	free(res);
	plan_fini(&pl);
	if (rec.managed)
		latmgr_units_refresh(m);
	return rec.managed || n ? n : -ENOENT;
}

bool latmgr_on(const struct latmgr *m)
{
	return m->la && m->la->ops;
}

bool latmgr_class_cgroups_on(const struct latmgr *m)
{
	return latmgr_on(m) && m->la->cls.on;
}

size_t latmgr_ntasks(const struct latmgr *m)
{
	return latmgr_on(m) ? latact_ntasks(m->la) : 0;
}

const struct lat_entry *latmgr_task_nth(const struct latmgr *m, size_t k)
{
	return latact_task_nth(m->la, k);
}

const struct lat_entry *latmgr_entry(const struct latmgr *m, pid_t tid)
{
	return latmgr_on(m) ? latact_find(m->la, tid) : NULL;
}
