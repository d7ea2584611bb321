/*
 * Latency management, the foreground: the process each caller put in front (a
 * desktop's focused window), and giving the one before its own back. It never takes
 * back a value someone set after the call.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "latmgr/latmgr_int.h"
#include "util/log.h"

/* Whether process q still has what foreground record f gave (f's process or a child). */
static bool fg_holds(const struct latmgr_fg *f, const struct latmgr_proc *q)
{
	return q->value == f->value && strcmp(q->source, f->source) == 0 && !q->from_rule;
}

/* Process q, which still has what f gave, gets its own back: f's prev, or none. */
static int fg_restore(struct latmgr *m, const struct latmgr_fg *f, const struct latmgr_proc *q)
{
	struct lat_req rq = { .tid = q->tgid, .tgid = q->tgid, .start_time = q->start_time,
			      .value = f->prev.value, .source = f->prev.source,
			      .trusted = f->prev.trusted };
	const char *why;

	if (!f->had)
		return latmgr_take_back(m, q->tgid, q->start_time);
	return latmgr_give_process(m, &rq, f->prev.from_rule, &why);
}

/*
 * Gives f's process, and the processes started under it that still carry its value,
 * their own back: the value the process had before the call, or none.
 */
static void fg_give_back(struct latmgr *m, struct latmgr_fg *f)
{
	const struct latmgr_proc *p = latmgr_find_process(m, f->tgid);
	size_t i = 0;

	if (!p || p->start_time != f->start_time || !fg_holds(f, p)) {
		f->tgid = 0;
		return;
	}
	while (i < m->np) {
		struct latmgr_proc q = *m->p[i];
		size_t before = m->np;
		int r;

		if (!fg_holds(f, &q)) {
			i++;
			continue;
		}
		r = fg_restore(m, f, &q);
		if (r < 0 && m->np == before)
			latmgr_proc_del(m, q.tgid); /* gone meanwhile, or it would not take it */
		else if (i < m->np && m->p[i]->tgid == q.tgid)
			i++; /* a set replaced it (a reset removed it) */
	}
	log_info("latency: process %d is no longer in front for caller %u: %s", (int)f->tgid,
		 (unsigned)f->uid, f->had ? "its value back" : "none again");
	f->tgid = 0;
}

/* Caller uid's record, or NULL. */
static struct latmgr_fg *fg_of(struct latmgr *m, uid_t uid)
{
	for (size_t i = 0; i < m->nfg; i++)
		if (m->fg[i].uid == uid)
			return &m->fg[i];
	return NULL;
}

/*
 * A new record for caller uid: a slot whose caller has nothing in front, or whose
 * process is gone, is free. NULL when LATMGR_FG_MAX callers hold one.
 */
static struct latmgr_fg *fg_new(struct latmgr *m, uid_t uid)
{
	struct latmgr_fg *f = NULL;

	for (size_t i = 0; i < m->nfg && !f; i++) {
		const struct latmgr_proc *q = latmgr_find_process(m, m->fg[i].tgid);

		if (!m->fg[i].tgid || !q || q->start_time != m->fg[i].start_time)
			f = &m->fg[i];
	}
	if (!f && m->nfg == LATMGR_FG_MAX)
		return NULL;
	if (!f)
		f = &m->fg[m->nfg++];
	memset(f, 0, sizeof(*f));
	f->uid = uid;
	return f;
}

/*
 * Puts process rq->tgid in front for f: it gets rq's value, unless it has a value at
 * most that already, which it keeps. Returns the value it has then, or LAT_NONE with
 * *ret_r: -errno with *ret_why, or not below 0 when it is gone.
 */
static int fg_put(struct latmgr *m, struct latmgr_fg *f, const struct lat_req *rq, int *ret_r,
		  const char **ret_why)
{
	const struct latmgr_proc *p = latmgr_find_process(m, rq->tgid);

	if (p && (!rq->start_time || p->start_time == rq->start_time) && p->value <= rq->value)
		return p->value;
	f->had = p != NULL;
	if (p)
		f->prev = *p;
	*ret_r = latmgr_give_process(m, rq, false, ret_why);
	p = latmgr_find_process(m, rq->tgid);
	if (*ret_r < 0 || !p)
		return LAT_NONE;
	f->tgid = rq->tgid;
	f->start_time = p->start_time;
	f->value = rq->value;
	snprintf(f->source, sizeof(f->source), "%s", rq->source);
	return rq->value;
}

int latmgr_foreground(struct latmgr *m, uid_t caller, const struct lat_req *rq, int *ret_value,
		      const char **ret_why)
{
	const struct latmgr_proc *p = rq->tgid ? latmgr_find_process(m, rq->tgid) : NULL;
	struct latmgr_fg *f = fg_of(m, caller);
	int r = 0;

	*ret_why = NULL;
	/* Asked again: nothing changes, nothing is given back. */
	if (f && f->tgid && f->tgid == rq->tgid && p && p->start_time == f->start_time &&
	    fg_holds(f, p)) {
		*ret_value = p->value;
		return 0;
	}
	if (!f && rq->tgid && !(f = fg_new(m, caller))) {
		*ret_why = "too many callers have a process in front";
		return -EUSERS;
	}
	if (f && f->tgid)
		fg_give_back(m, f);
	*ret_value = rq->tgid ? fg_put(m, f, rq, &r, ret_why) : LAT_NONE;
	latmgr_units_refresh(m);
	return rq->tgid && *ret_value == LAT_NONE ? (r < 0 ? r : -ESRCH) : 0;
}
