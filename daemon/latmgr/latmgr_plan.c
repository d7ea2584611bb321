/*
 * Latency management, between the policy and the actuator: reads what the latency
 * policy decides on (tasks through proc/procfs, the actuator's entries, the manager's
 * records) and hands the policy's plans to the actuator. It decides nothing itself.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latmgr/latmgr_int.h"
#include "proc/procfs.h"
#include "util/util.h"

/*
 * Start time and kernel-thread flag of task tid, read under process dir's task
 * directory (0: tid's own, PROC_ROOT/TID/task/TID, never PROC_ROOT/TID/stat, whose read
 * costs a step for every thread of the group), as procfs_stat reads it; -ESRCH when it
 * is gone.
 */
static int task_info_in(const struct latmgr *m, pid_t dir, pid_t tid, uint64_t *ret_start,
			bool *ret_kthread)
{
	struct parse_stat_line l;

	if (procfs_stat(m->proc_root, dir ? dir : tid, tid, &l) < 0)
		return -ESRCH;
	*ret_start = l.start_time;
	*ret_kthread = (l.flags & PARSE_PF_KTHREAD) != 0;
	return 0;
}

int latmgr_task_info(const struct latmgr *m, pid_t tid, uint64_t *ret_start, bool *ret_kthread)
{
	return task_info_in(m, 0, tid, ret_start, ret_kthread);
}

/* Task tid of tgid as it is now, read under dir (task_info_in), with rqbalance's value. */
static void read_task_in(const struct latmgr *m, pid_t dir, pid_t tid, pid_t tgid,
			 struct latpol_task *ret)
{
	const struct lat_entry *e = latact_find(m->la, tid);

	*ret = (struct latpol_task){ .tid = tid, .tgid = tgid, .value = e ? e->value : LAT_NONE,
				     .source = e ? e->source : "",
				     .no_inherit = e && e->no_inherit };
	ret->gone = task_info_in(m, dir, tid, &ret->start_time, &ret->kthread) < 0;
}

void latmgr_read_task(const struct latmgr *m, pid_t tid, pid_t tgid, struct latpol_task *ret)
{
	read_task_in(m, 0, tid, tgid, ret);
}

/*
 * Thread tid of process tgid as it is now, read under tgid's task directory: a tid that
 * has left tgid, even one reused since by another process, is not found there (gone).
 */
static void read_thread(const struct latmgr *m, pid_t tid, pid_t tgid, struct latpol_task *ret)
{
	read_task_in(m, tgid, tid, tgid, ret);
}

/*
 * Task tid of process rq->tgid, for read_proc. A thread that has rq's value from rq's
 * source already is left as it is (latpol_process): its stat is not read, so that a
 * walk costs no read for a thread that already has what is set.
 */
static void read_member(const struct latmgr *m, const struct lat_req *rq, pid_t tid,
			struct latpol_task *ret)
{
	const struct lat_entry *e = latact_find(m->la, tid);
	pid_t tgid = rq->tgid;

	if (tid != tgid && e && e->value == rq->value && e->no_inherit == rq->no_inherit &&
	    strcmp(e->source, rq->source) == 0)
		*ret = (struct latpol_task){ .tid = tid, .tgid = tgid, .value = rq->value,
					     .source = e->source, .no_inherit = e->no_inherit,
					     .start_time = e->task.start_time };
	else if (tid == tgid)
		latmgr_read_task(m, tid, tgid, ret);
	else
		read_thread(m, tid, tgid, ret);
}

/*
 * Thread th of process rq->tgid as the request's judge read it (lat_req.threads): not
 * read again, so that the start time the actuator pins is the one judged.
 */
static void judged_member(const struct latmgr *m, const struct lat_req *rq,
			  const struct lat_thread *th, struct latpol_task *ret)
{
	const struct lat_entry *e = latact_find(m->la, th->tid);

	*ret = (struct latpol_task){ .tid = th->tid, .tgid = rq->tgid,
				     .start_time = th->start_time, .kthread = th->kthread,
				     .value = e ? e->value : LAT_NONE,
				     .source = e ? e->source : "" };
}

/* The process's first thread among those judged, else read now. */
static void read_lead(const struct latmgr *m, const struct lat_req *rq, struct latpol_task *ret)
{
	for (size_t i = 0; rq->threads && i < rq->nthreads; i++)
		if (rq->threads[i].tid == rq->tgid) {
			judged_member(m, rq, &rq->threads[i], ret);
			return;
		}
	latmgr_read_task(m, rq->tgid, rq->tgid, ret);
}

/*
 * Process rq->tgid and its threads (those that exit meanwhile left out, those that
 * have its value as read_member says), as judged where the request carries them;
 * *ret_t to free.
 */
static void read_proc(const struct latmgr *m, const struct lat_req *rq, struct latpol_proc *ret,
		      struct latpol_task **ret_t)
{
	struct latpol_task *t = NULL, *arr;
	struct procfs_threads it = { 0 };
	pid_t tgid = rq->tgid, tid;
	size_t n = 0, cap = 0;

	*ret = (struct latpol_proc){ 0 };
	/*
	 * A process that has just exec'd has one thread, its first, which the rules read a
	 * moment ago: exec ends every other, and a thread it makes from now on comes as a
	 * fork event after the exec's (a lost one is followed by a walk of /proc). Nothing
	 * is read again here, as each read delays its value; the actuator checks the start
	 * time when it opens the task.
	 */
	if (rq->at_exec && rq->start_time && rq->tid == tgid && (t = calloc(1, sizeof(*t)))) {
		const struct lat_entry *e = latact_find(m->la, tgid);

		t[0] = (struct latpol_task){ .tid = tgid, .tgid = tgid,
					     .start_time = rq->start_time,
					     .value = e ? e->value : LAT_NONE,
					     .source = e ? e->source : "",
					     .no_inherit = e && e->no_inherit };
		ret->lead = t[0];
		ret->t = t;
		ret->nt = 1;
		*ret_t = t;
		return;
	}
	read_lead(m, rq, &ret->lead);
	/* The threads a request was judged on, read once by the judge's one walk. */
	for (size_t i = 0; rq->threads && i < rq->nthreads; i++) {
		if (!(arr = util_grow(t, &cap, n, sizeof(*t))))
			continue;
		t = arr;
		judged_member(m, rq, &rq->threads[i], &t[n++]);
	}
	ret->no_threads = !rq->threads && procfs_threads_open(m->proc_root, tgid, &it) < 0;
	while (!rq->threads && !ret->no_threads && (tid = procfs_threads_next(&it)) > 0) {
		if (!(arr = util_grow(t, &cap, n, sizeof(*t))))
			continue;
		t = arr;
		read_member(m, rq, tid, &t[n]);
		n += !t[n].gone;
	}
	if (!rq->threads && !ret->no_threads)
		procfs_threads_close(&it);
	ret->t = t;
	ret->nt = n;
	*ret_t = t;
}

struct latpol_rec latmgr_rec_of(const struct latmgr_proc *p)
{
	if (!p)
		return (struct latpol_rec){ .value = LAT_NONE, .source = "" };
	return (struct latpol_rec){ .managed = true, .start_time = p->start_time,
				    .value = p->value, .source = p->source,
				    .from_rule = p->from_rule, .no_inherit = p->no_inherit };
}

struct latpol_task *latmgr_entries_of(const struct latmgr *m, pid_t tgid, size_t *ret_n)
{
	struct latpol_task *t = calloc(m->la->n ? m->la->n : 1, sizeof(*t));
	size_t n = 0;

	for (size_t i = 0; t && i < m->la->n; i++) {
		const struct lat_entry *e = m->la->e[i];

		if (tgid && e->tgid != tgid)
			continue;
		t[n++] = (struct latpol_task){ .tid = e->task.tid, .tgid = e->tgid,
					       .start_time = e->task.start_time,
					       .value = e->value, .source = e->source,
					       .no_inherit = e->no_inherit };
	}
	*ret_n = n;
	return t;
}

struct latact_result *latmgr_apply(struct latmgr *m, const struct plan *pl)
{
	struct latact_result *res = calloc(pl->n ? pl->n : 1, sizeof(*res));

	if (res && latact_apply_plan(m->la, pl, res) < 0) {
		free(res);
		res = NULL;
	}
	latmgr_source_pace(m);
	return res;
}

struct latact_result *latmgr_apply_judged(struct latmgr *m, const struct plan *pl,
					  const struct lat_req *rq)
{
	struct latact_result *res;

	latact_hand(m->la, rq->threads, rq->nthreads);
	res = latmgr_apply(m, pl);
	latact_hand(m->la, NULL, 0);
	return res;
}

int latmgr_apply_one(struct latmgr *m, struct plan *pl, int r, const char **ret_why)
{
	struct latact_result *res;

	if (r <= 0) {
		plan_fini(pl);
		return r;
	}
	res = latmgr_apply(m, pl);
	r = res ? res[0].r : -ENOMEM;
	if (res && ret_why)
		*ret_why = res[0].why;
	free(res);
	plan_fini(pl);
	return r;
}

int latmgr_threads_result(const struct plan *pl, const struct latact_result *res,
			  const char **ret_why)
{
	int done = 0, r = 0;

	for (size_t i = 0; i < pl->n; i++) {
		const struct plan_action *pa = &pl->a[i];
		bool lead = pa->tid == pa->tgid;

		if (res[i].r == 0) {
			done++;
			continue;
		}
		if (res[i].r == -ECANCELED || (!lead && res[i].r == -ESRCH) || r < 0)
			continue;
		*ret_why = res[i].why;
		if (lead && (res[i].r == -ESRCH || res[i].r == -EPERM))
			return res[i].r;
		r = res[i].r;
	}
	return r < 0 && done == 0 ? r : done;
}

int latmgr_plan_threads(struct latmgr *m, const struct lat_req *rq, struct plan *pl,
			uint64_t *ret_start, const char **ret_why)
{
	struct latpol_task *t;
	struct latpol_proc p;
	int r;

	read_proc(m, rq, &p, &t);
	r = latpol_process(&p, rq, m->self, pl, ret_why);
	free(t);
	if (r >= 0 && ret_start)
		*ret_start = p.lead.start_time;
	return r;
}

int latmgr_set_threads(struct latmgr *m, const struct lat_req *rq, uint64_t *ret_start,
			  const char **ret_why)
{
	struct latact_result *res;
	struct plan pl;
	int r;

	plan_init(&pl);
	r = latmgr_plan_threads(m, rq, &pl, ret_start, ret_why);
	if (r > 0) {
		res = latmgr_apply_judged(m, &pl, rq);
		r = res ? latmgr_threads_result(&pl, res, ret_why) : -ENOMEM;
		free(res);
	}
	plan_fini(&pl);
	return r;
}
