/*
 * Latency management, its face: the ctl requests on the table of processes given a
 * value (set, reset; the table is latmgr_procs.c), and the manager's start and end. It
 * decides whom; the latency actuator is what changes a task. It never gives a value
 * to the daemon itself or a kernel thread.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "latmgr/latmgr_int.h"
#include "proc/procfs.h"
#include "taskev/ident.h"
#include "util/log.h"
#include "util/sorted.h"
#include "util/util.h"
#include "testonly.h"

int latmgr_tgid_of(const struct latmgr *m, pid_t tid, pid_t *ret)
{
	struct parse_status s;
	int r = procfs_status(m->proc_root, 0, tid, &s);

	if (r < 0 || !(r & PARSE_STATUS_TGID))
		return -ESRCH;
	*ret = s.tgid;
	return 0;
}

int latmgr_parse_value(const char *s, int *ret, const char **ret_why)
{
	return latency_parse(s, ret, ret_why);
}

bool latmgr_cgroup_path_ok(const char *path)
{
	return latact_cgroup_path_ok(path);
}

/*
 * The plan for target t to have rq's value, into pl: each thread of a process (read
 * now), one thread (its process read), or a cgroup. Its count of actions, 0 where
 * nothing is to change, or -errno with *ret_why; a process's start time in *ret_start.
 */
static int plan_set(struct latmgr *m, const struct lat_target *t, const struct lat_req *rq,
		    struct plan *pl, uint64_t *ret_start, const char **ret_why)
{
	struct latpol_task task;
	pid_t tgid;

	switch (t->kind) {
	case LAT_T_PROCESS:
		return latmgr_plan_threads(m, rq, pl, ret_start, ret_why);
	case LAT_T_THREAD:
		if (latmgr_tgid_of(m, rq->tid, &tgid) < 0) {
			*ret_why = "no such task";
			return -ESRCH;
		}
		latmgr_read_task(m, rq->tid, tgid, &task);
		return latpol_task(&task, rq, m->self, pl, ret_why);
	default:
		return latpol_cgroup(t->path, rq->value, rq->source, pl);
	}
}

/*
 * Whether an untrusted caller's request for the value t already has from another
 * source leaves that source: re-asserting a value it did not give never makes it the
 * caller's (root's foreground value or a rule's would then no longer be given back,
 * and would follow exec and children as the caller's own).
 */
static bool keeps_its_source(const struct latmgr *m, const struct lat_target *t, int v,
			     const char *source)
{
	const char *cur_source;
	int cur;

	return latmgr_value(m, t, &cur, &cur_source) == 0 && cur == v &&
	       strcmp(cur_source, source) != 0;
}

/*
 * Read, decide, apply, record: the plan for t goes to the actuator from here, the one
 * place a request's value is carried out; a process's record follows.
 */
int latmgr_set(struct latmgr *m, const struct lat_target *t, int value, const char *source,
	       bool trusted, const char **ret_why)
{
	bool proc = t->kind == LAT_T_PROCESS;
	struct lat_req rq = { .tid = t->pid, .tgid = proc ? t->pid : 0,
			      .start_time = t->start_time, .value = value, .source = source,
			      .trusted = proc && trusted, .threads = proc ? t->threads : NULL,
			      .nthreads = proc ? t->nthreads : 0 };
	struct latact_result *res;
	uint64_t start = 0;
	struct plan pl;
	int r;

	*ret_why = NULL;
	if (!trusted && keeps_its_source(m, t, value, source))
		return t->kind == LAT_T_THREAD;
	plan_init(&pl);
	r = plan_set(m, t, &rq, &pl, &start, ret_why);
	if (r > 0) {
		res = latmgr_apply_judged(m, &pl, &rq);
		if (!res)
			r = -ENOMEM;
		else if (proc)
			r = latmgr_threads_result(&pl, res, ret_why);
		else {
			r = res[0].r;
			*ret_why = res[0].why;
		}
		free(res);
	}
	plan_fini(&pl);
	if (proc && r >= 0) {
		int rr = latmgr_proc_record(m, &rq, start, false);

		if (rr < 0)
			return rr;
		latmgr_units_refresh(m);
	}
	return t->kind == LAT_T_THREAD && r == 0 ? 1 : r;
}

static int reset_thread(struct latmgr *m, pid_t tid, uint64_t expect)
{
	const struct lat_entry *e = latact_find(m->la, tid);
	struct latpol_task t;
	struct plan pl;

	if (e)
		t = (struct latpol_task){ .tid = tid, .tgid = e->tgid,
					  .start_time = e->task.start_time };
	plan_init(&pl);
	return latmgr_apply_one(m, &pl, latpol_reset_task(e ? &t : NULL, expect, &pl), NULL);
}

int latmgr_reset(struct latmgr *m, const struct lat_target *t)
{
	struct plan pl;
	int r;

	switch (t->kind) {
	case LAT_T_PROCESS:
		return latmgr_take_back(m, t->pid, t->start_time);
	case LAT_T_THREAD:
		r = reset_thread(m, t->pid, t->start_time);
		break;
	default:
		plan_init(&pl);
		r = latmgr_apply_one(m, &pl, latpol_cgroup_reset(t->path, &pl), NULL);
		break;
	}
	return r == 0 ? 1 : r;
}

int latmgr_value_of(const struct latmgr *m, pid_t tid, pid_t tgid)
{
	const struct lat_entry *e = latact_find(m->la, tid);
	const struct latmgr_proc *p;

	if (e)
		return e->value;
	p = latmgr_find_process(m, tgid, LATMGR_START_NOW);
	return p ? p->value : LAT_NONE;
}

int latmgr_init(struct latmgr *m, struct latact *la, const struct rqb_conf *c, sd_event *e,
	    const char *proc_root)
{
	int r;

	memset(m, 0, sizeof(*m));
	m->la = la;
	m->conf = c;
	m->event = e;
	latmgr_exetab_build(m);
	latmgr_exe_watch(m);
	m->self = getpid();
	snprintf(m->proc_root, sizeof(m->proc_root), "%s", util_proc_root(proc_root));
	r = latmgr_source_open(m, e, &latmgr_event_callbacks, latmgr_events_ready);
	if (r < 0)
		return r;
	m->units_on = la->o.systemd && la->cls.mount[0];
	latmgr_rescan(m); /* each record it adds is placed in its unit, which is marked */
	latmgr_units_refresh(m);
	return 0;
}

int latmgr_open(struct latmgr *m, const struct latmgr_setup *s)
{
	struct latact *la = calloc(1, sizeof(*la));
	int r;

	if (!la)
		return -ENOMEM;
	r = latact_init(la, s->driver, &s->opts, &s->lc);
	if (r < 0) {
		log_err("latency journal in %s: %s", s->opts.journal_dir,
			r == -EBUSY ? "locked by another rqbalanced" : strerror(-r));
		free(la);
		return r;
	}
	r = latmgr_init(m, la, s->conf, s->event, s->proc_root);
	m->own = la;
	return r;
}

int latmgr_close(struct latmgr *m)
{
	struct latact *la = m->own;
	int n;

	if (!la)
		return 0;
	latact_moves_stop(la);
	n = latact_restore_all(la);
	latmgr_stopped(m);
	latmgr_fini(m);
	latact_fini(la);
	free(la);
	return n;
}

void latmgr_set_conf(struct latmgr *m, const struct lat_conf *lc)
{
	latact_set_conf(m->la, lc);
}

int latmgr_moves_start(struct latmgr *m)
{
	return m->la->cls.on ? latact_moves_start(m->la) : -EOPNOTSUPP;
}

void latmgr_moves_done(struct latmgr *m)
{
	latact_moves_done(m->la);
}

void latmgr_moves_stop(struct latmgr *m)
{
	latact_moves_stop(m->la);
}

size_t latmgr_cgroup_paths(const struct latmgr *m, const char **paths, size_t max,
			   const char **ret_mount)
{
	size_t n = 0;

	*ret_mount = NULL;
	if (!latmgr_on(m) || !m->la->cls.mount[0])
		return 0;
	for (size_t i = 0; i < m->la->ncg && n < max; i++)
		paths[n++] = m->la->cg[i].path;
	*ret_mount = m->la->cls.mount;
	return n;
}

void latmgr_follow_tasks(struct latmgr *m, void (*fn)(void *ctx, pid_t tid, int value,
						       bool managed),
			 void *ctx)
{
	m->la->on_task = fn;
	m->la->on_task_ctx = ctx;
	for (size_t k = 0, n = latact_ntasks(m->la); k < n; k++) {
		const struct lat_entry *e = latact_task_nth(m->la, k);

		fn(ctx, e->task.tid, e->value, true);
	}
}

void latmgr_fini(struct latmgr *m)
{
	latmgr_source_close(m);
	latmgr_exe_unwatch(m);
	ident_exetab_free(m->exetab);
	for (size_t i = 0; i < m->np; i++)
		free(m->p[i]);
	free(m->p);
	free(m->u);
	free(m->uk);
	free(m->games);
	free(m->fg);
	memset(m, 0, sizeof(*m));
}
