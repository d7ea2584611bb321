/*
 * Latency management, the foreground: the process each caller put in front (a
 * desktop's focused window), a grant that ends at the caller's next call, or at the
 * front's exit, for all that holds it. It never takes back a value someone set after
 * the call, and never takes a record an earlier owner of a number left for the
 * process's own.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "latmgr/latmgr_int.h"
#include "util/log.h"

/*
 * Whether process q holds what foreground record f granted: f's process, or one
 * started since under it (the kernel copies the nice into a child, and on_fork the
 * record), that still has exactly the grant's value, as the grant's, not a value
 * someone gave it since. The source names the caller, and a caller has one record:
 * what holds it is this grant's, whether or not f's own process is still there.
 */
static bool fg_holds(const struct latmgr_fg *f, const struct latmgr_proc *q)
{
	return q->grant && !q->from_rule && q->value == f->value &&
	       strcmp(q->source, f->source) == 0 && q->start_time >= f->start_time;
}

/*
 * Process q, which still holds what f granted, gets its own back: f's process the
 * value it had before the call (f->prev, a record the call pinned by start time), the
 * others, started under the grant, none.
 */
static int fg_restore(struct latmgr *m, const struct latmgr_fg *f, const struct latmgr_proc *q)
{
	struct lat_req rq = { .tid = q->tgid, .tgid = q->tgid, .start_time = q->start_time,
			      .value = f->prev.value, .source = f->prev.source,
			      .trusted = f->prev.trusted, .no_inherit = f->prev.no_inherit };
	const char *why;

	if (!f->had || q->tgid != f->tgid || q->start_time != f->start_time)
		return latmgr_take_back(m, q->tgid, q->start_time);
	return latmgr_give_process(m, &rq, f->prev.from_rule, &why);
}

/*
 * The tasks of the processes that hold what f granted. The give-back remembers each
 * as given back (latact_given), and the rest must not push out the first, f's process,
 * whose children's forks may still be unread (a front that forked 300 children).
 */
static size_t fg_tasks(const struct latmgr *m, const struct latmgr_fg *f)
{
	size_t n = 0;

	for (size_t k = 0, nt = latmgr_ntasks(m); k < nt; k++) {
		const struct latmgr_proc *q = latmgr_event_process(m, latmgr_task_nth(m, k)->tgid);

		n += q && fg_holds(f, q);
	}
	return n;
}

/*
 * What the kernel copied of f's grant that the table does not hold: a child whose
 * fork event was lost (an overflow under a fork storm; the rescan that follows adopts
 * no child of a parent given back), or is read only after, found by state. What the
 * other grants stand for is theirs.
 */
static void fg_give_back_state(struct latmgr *m, const struct latmgr_fg *f)
{
	struct latact_front end = { .rec = &f->rec, .uid = f->owner }, live[LATMGR_FG_MAX];
	size_t n = 0;

	if (!f->has_rec || m->stopping)
		return;
	for (size_t i = 0; i < m->nfg; i++)
		if (&m->fg[i] != f && m->fg[i].tgid && m->fg[i].has_rec)
			live[n++] = (struct latact_front){ .rec = &m->fg[i].rec,
							   .uid = m->fg[i].owner };
	latact_give_back_grant(m->la, &end, live, n);
}

/*
 * Ends f's grant: every process that holds it is given its own back (fg_restore),
 * whether or not f's process is still there; a value someone set since stays.
 */
static void fg_give_back(struct latmgr *m, struct latmgr_fg *f)
{
	size_t i = 0, n = 0;

	if (!f->tgid)
		return;
	latact_given_reserve(m->la, fg_tasks(m, f) + LATACT_GIVEN_MAX);
	while (i < m->np) {
		struct latmgr_proc q = *m->p[i];
		size_t before = m->np;
		int r;

		if (!fg_holds(f, &q)) {
			i++;
			continue;
		}
		r = fg_restore(m, f, &q);
		n++;
		if (r < 0 && m->np == before)
			latmgr_proc_del(m, q.tgid); /* gone meanwhile, or it would not take it */
		else if (i < m->np && m->p[i]->tgid == q.tgid)
			i++; /* a set replaced it (a reset removed it) */
	}
	log_info("latency: the grant of caller %u ended (process %d was in front): %zu "
		 "process%s given back", (unsigned)f->uid, (int)f->tgid, n, n == 1 ? "" : "es");
	fg_give_back_state(m, f);
	f->tgid = 0;
}

void latmgr_fg_exited(struct latmgr *m, struct latmgr_fg *f)
{
	log_info("latency: process %d, in front for caller %u, exited", (int)f->tgid,
		 (unsigned)f->uid);
	fg_give_back(m, f);
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
 * A new record for caller uid: a slot whose caller has nothing in front, else one
 * whose process is gone, whose grant ends first. NULL when LATMGR_FG_MAX callers hold
 * one.
 */
static struct latmgr_fg *fg_new(struct latmgr *m, uid_t uid)
{
	struct latmgr_fg *f = NULL;

	for (size_t i = 0; i < m->nfg && !f; i++)
		if (!m->fg[i].tgid)
			f = &m->fg[i];
	for (size_t i = 0; i < m->nfg && !f; i++)
		if (!latmgr_find_process(m, m->fg[i].tgid, m->fg[i].start_time))
			f = &m->fg[i];
	if (!f && m->nfg == LATMGR_FG_MAX)
		return NULL;
	if (f)
		fg_give_back(m, f);
	else
		f = &m->fg[m->nfg++];
	memset(f, 0, sizeof(*f));
	f->uid = uid;
	return f;
}

/*
 * What the grant wrote on f's front, kept for its end: its copies that no event told
 * of hold exactly that, whether or not the front still runs then.
 */
static void fg_keep_rec(struct latmgr *m, struct latmgr_fg *f)
{
	const struct lat_entry *e = latact_find(m->la, f->tgid);

	f->has_rec = e && e->task.start_time == f->start_time &&
		     latact_owner(m->la, f->tgid, &f->owner) == 0;
	if (!f->has_rec)
		return;
	f->rec = *e;
	f->rec.task.pidfd = -1; /* a copy: the entry keeps its own */
}

/*
 * Puts process rq->tgid in front for f: it gets rq's value, unless it has a value at
 * most that already, which it keeps. Returns the value it has then, or LAT_NONE with
 * *ret_r: -errno with *ret_why, or not below 0 when it is gone.
 */
static int fg_put(struct latmgr *m, struct latmgr_fg *f, const struct lat_req *rq, int *ret_r,
		  const char **ret_why)
{
	const struct latmgr_proc *p = latmgr_find_process(m, rq->tgid, rq->start_time);
	struct latmgr_proc granted;

	if (p && p->value <= rq->value)
		return p->value;
	/* What the process had: only its own record, never one an earlier owner left. */
	f->had = p != NULL;
	if (p)
		f->prev = *p;
	*ret_r = latmgr_give_process(m, rq, false, ret_why);
	p = latmgr_event_process(m, rq->tgid);
	if (*ret_r < 0 || !p)
		return LAT_NONE;
	granted = *p;
	granted.grant = true;
	if (latmgr_proc_put(m, &granted) < 0)
		return LAT_NONE;
	f->tgid = rq->tgid;
	f->start_time = granted.start_time;
	fg_keep_rec(m, f);
	f->value = rq->value;
	snprintf(f->source, sizeof(f->source), "%s", rq->source);
	return rq->value;
}

int latmgr_foreground(struct latmgr *m, uid_t caller, const struct lat_req *rq, int *ret_value,
		      const char **ret_why)
{
	const struct latmgr_proc *p =
		rq->tgid ? latmgr_find_process(m, rq->tgid, rq->start_time) : NULL;
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
	if (f)
		fg_give_back(m, f);
	*ret_value = rq->tgid ? fg_put(m, f, rq, &r, ret_why) : LAT_NONE;
	latmgr_units_refresh(m);
	return rq->tgid && *ret_value == LAT_NONE ? (r < 0 ? r : -ESRCH) : 0;
}
