/*
 * Latency management: keeps the set of processes and threads that have a value, and
 * follows them through fork, exec and exit. It decides whom; the latency actuator is
 * what changes a task. It never gives a value to the daemon itself or a kernel thread.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "actuate/act.h"
#include "actuate/cgsd.h"
#include "latmgr/latmgr.h"
#include "policy/latpol.h"
#include "policy/rules.h"
#include "rqbalance.h"
#include "sample/cgm.h"
#include "sample/evsrc.h"
#include "sample/ident.h"
#include "sample/procfs.h"
#include "sample/sampler.h"
#include "util/log.h"
#include "util/util.h"

#define LATMGR_SWEEP_TICKS 50 /* ticks between sweeps for exits when events arrive */
#define LATMGR_RESYNC_TICKS 10 /* a resync waits this long for the connector to empty */

static size_t proc_index(const struct latmgr *m, pid_t tgid, bool *found)
{
	size_t lo = util_pid_lower_bound(m->p, m->np, sizeof(*m->p), offsetof(struct latmgr_proc, tgid),
					tgid);

	*found = lo < m->np && m->p[lo].tgid == tgid;
	return lo;
}

const struct latmgr_proc *latmgr_find_process(const struct latmgr *m, pid_t tgid)
{
	bool found;
	size_t i = proc_index(m, tgid, &found);

	return found ? &m->p[i] : NULL;
}

static int proc_put(struct latmgr *m, const struct latmgr_proc *p)
{
	bool found;
	size_t i = proc_index(m, p->tgid, &found);
	struct latmgr_proc *arr;

	if (found) {
		m->p[i] = *p;
		return 0;
	}
	arr = util_grow(m->p, &m->capp, m->np, sizeof(*arr));
	if (!arr)
		return -ENOMEM;
	m->p = arr;
	memmove(&m->p[i + 1], &m->p[i], (m->np - i) * sizeof(*m->p));
	m->p[i] = *p;
	m->np++;
	return 0;
}

static void proc_del(struct latmgr *m, pid_t tgid)
{
	bool found;
	size_t i = proc_index(m, tgid, &found);

	if (!found)
		return;
	memmove(&m->p[i], &m->p[i + 1], (m->np - i - 1) * sizeof(*m->p));
	m->np--;
	m->p = util_shrink(m->p, &m->capp, m->np, sizeof(*m->p));
}

int latmgr_tgid_of(const struct latmgr *m, pid_t tid, pid_t *ret)
{
	return procfs_tgid(m->proc_root, tid, ret) < 0 ? -ESRCH : 0;
}

/*
 * Start time and kernel-thread flag of task tid, read under process dir's task
 * directory (0: PROC_ROOT/TID), as procfs_stat reads it; -ESRCH when it is gone.
 */
static int task_info_in(const struct latmgr *m, pid_t dir, pid_t tid, uint64_t *ret_start,
			bool *ret_kthread)
{
	struct parse_stat_line l;

	if (procfs_stat(m->proc_root, dir, tid, &l) < 0)
		return -ESRCH;
	*ret_start = l.start_time;
	*ret_kthread = (l.flags & PARSE_PF_KTHREAD) != 0;
	return 0;
}

/* Start time and kernel-thread flag of a task; -ESRCH when it is gone. */
static int task_info(const struct latmgr *m, pid_t tid, uint64_t *ret_start, bool *ret_kthread)
{
	return task_info_in(m, 0, tid, ret_start, ret_kthread);
}

/* ---- the inputs the policy decides on, and its plans to the actuator ---- */

/* Task tid of tgid as it is now, read under dir (task_info_in), with rqbalance's value. */
static void read_task_in(const struct latmgr *m, pid_t dir, pid_t tid, pid_t tgid,
			 struct latpol_task *ret)
{
	const struct lat_entry *e = latact_find(m->la, tid);

	*ret = (struct latpol_task){ .tid = tid, .tgid = tgid, .value = e ? e->value : LAT_NONE,
				     .source = e ? e->source : "" };
	ret->gone = task_info_in(m, dir, tid, &ret->start_time, &ret->kthread) < 0;
}

/* Task tid as it is now, with the value rqbalance gave it. */
static void read_task(const struct latmgr *m, pid_t tid, pid_t tgid, struct latpol_task *ret)
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
 * Process rq->tgid and its threads (those that exit meanwhile left out); *ret_t to
 * free. A thread that has rq's value from rq's source already is left as it is
 * (latpol_process): its stat is not read, so that a walk costs no read a thread for
 * what is set.
 */
static void read_proc(const struct latmgr *m, const struct lat_req *rq, struct latpol_proc *ret,
		      struct latpol_task **ret_t)
{
	struct latpol_task *t = NULL, *arr;
	const struct lat_entry *e;
	pid_t tgid = rq->tgid;
	size_t n = 0, cap = 0;
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	*ret = (struct latpol_proc){ 0 };
	read_task(m, tgid, tgid, &ret->lead);
	snprintf(path, sizeof(path), "%s/%d/task", m->proc_root, (int)tgid);
	d = opendir(path);
	ret->no_threads = !d;
	while (d && (de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0 || !(arr = util_grow(t, &cap, n, sizeof(*t))))
			continue;
		t = arr;
		e = latact_find(m->la, tid);
		if (tid != tgid && e && e->value == rq->value && strcmp(e->source, rq->source) == 0)
			t[n] = (struct latpol_task){ .tid = tid, .tgid = tgid, .value = rq->value,
						     .source = e->source,
						     .start_time = e->task.start_time };
		else if (tid == tgid)
			read_task(m, tid, tgid, &t[n]);
		else
			read_thread(m, tid, tgid, &t[n]);
		n += !t[n].gone;
	}
	if (d)
		closedir(d);
	ret->t = t;
	ret->nt = n;
	*ret_t = t;
}

/* The manager's record of a process, as the policy reads it. */
static struct latpol_rec rec_of(const struct latmgr_proc *p)
{
	if (!p)
		return (struct latpol_rec){ .value = LAT_NONE, .source = "" };
	return (struct latpol_rec){ .managed = true, .start_time = p->start_time,
				    .value = p->value, .source = p->source,
				    .from_rule = p->from_rule };
}

/* The tasks that have a value (of process tgid; 0: all), as the policy reads them. */
static struct latpol_task *entries_of(const struct latmgr *m, pid_t tgid, size_t *ret_n)
{
	struct latpol_task *t = calloc(m->la->n ? m->la->n : 1, sizeof(*t));
	size_t n = 0;

	for (size_t i = 0; t && i < m->la->n; i++) {
		const struct lat_entry *e = &m->la->e[i];

		if (tgid && e->tgid != tgid)
			continue;
		t[n++] = (struct latpol_task){ .tid = e->task.tid, .tgid = e->tgid,
					       .start_time = e->task.start_time,
					       .value = e->value, .source = e->source };
	}
	*ret_n = n;
	return t;
}

/* Hands a plan to the actuator: one result an action, or NULL (nothing was done). */
static struct latact_result *apply(struct latmgr *m, const struct plan *pl)
{
	struct latact_result *res = calloc(pl->n ? pl->n : 1, sizeof(*res));

	if (m->on_plan)
		m->on_plan(m->on_plan_ctx, pl);
	if (res && latact_apply_plan(m->la, pl, res) < 0) {
		free(res);
		res = NULL;
	}
	return res;
}

/* The one result of a plan of one action (or the policy's refusal r, or none). */
static int apply_one(struct latmgr *m, struct plan *pl, int r, const char **ret_why)
{
	struct latact_result *res;

	if (r <= 0) {
		plan_fini(pl);
		return r;
	}
	res = apply(m, pl);
	r = res ? res[0].r : -ENOMEM;
	if (res && ret_why)
		*ret_why = res[0].why;
	free(res);
	plan_fini(pl);
	return r;
}

/*
 * What a process's plan came to: its first thread's refusal (-ESRCH, -EPERM), else
 * the tasks given the value, or an error where none was (a thread that exited
 * meanwhile is no failure).
 */
static int threads_result(const struct plan *pl, const struct latact_result *res,
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

/*
 * Gives every thread of process rq->tgid rq's value; rq->from_tid: the task whose
 * settings they inherited (0: none). rq->start_time: the start time the decision was
 * made on (0: as it is now); if the pid now names another process, nothing is done.
 * ret_start, if not NULL, gets the process's. Returns the tasks given the value, or
 * -errno with *ret_why.
 */
static int set_threads(struct latmgr *m, const struct lat_req *rq, uint64_t *ret_start,
		       const char **ret_why)
{
	struct latpol_task *t;
	struct latpol_proc p;
	struct latact_result *res;
	struct plan pl;
	int r;

	read_proc(m, rq, &p, &t);
	plan_init(&pl);
	r = latpol_process(&p, rq, m->self, &pl, ret_why);
	free(t);
	if (r > 0) {
		res = apply(m, &pl);
		r = res ? threads_result(&pl, res, ret_why) : -ENOMEM;
		free(res);
	}
	plan_fini(&pl);
	if (r >= 0 && ret_start)
		*ret_start = p.lead.start_time;
	return r;
}

/*
 * Every thread of managed process p gets its value; from: the entry of the task they
 * inherited their settings from, or NULL. As set_threads.
 */
static int proc_threads(struct latmgr *m, const struct latmgr_proc *p,
			const struct lat_entry *from)
{
	struct lat_req rq = { .tid = p->tgid, .tgid = p->tgid, .start_time = p->start_time,
			      .value = p->value, .source = p->source, .trusted = p->trusted,
			      .from_tid = from ? from->task.tid : 0 };
	const char *why;

	return set_threads(m, &rq, NULL, &why);
}

/* Process rq->tgid gets rq's value (set_threads) and a record; from_rule: a rule's. */
static int set_process(struct latmgr *m, const struct lat_req *rq, bool from_rule,
		       const char **ret_why)
{
	struct latmgr_proc p = { .tgid = rq->tgid, .value = rq->value, .from_rule = from_rule,
				 .trusted = rq->trusted };
	int n, r;

	*ret_why = NULL;
	snprintf(p.source, sizeof(p.source), "%s", rq->source);
	n = set_threads(m, rq, &p.start_time, ret_why);
	if (n < 0)
		return n;
	r = proc_put(m, &p);
	m->units_dirty = true;
	return r < 0 ? r : n;
}

int latmgr_set_process(struct latmgr *m, const struct lat_req *rq, const char **ret_why)
{
	int r = set_process(m, rq, false, ret_why);

	if (r >= 0)
		latmgr_units_refresh(m);
	return r;
}

/* Whether process q still has what foreground record f gave (f's process or a child). */
static bool fg_holds(const struct latmgr_fg *f, const struct latmgr_proc *q)
{
	return q->value == f->value && strcmp(q->source, f->source) == 0 && !q->from_rule;
}

/*
 * Gives f's process, and the processes started under it that still carry its value,
 * their own back: the value the process had before the call, or none.
 */
static void fg_give_back(struct latmgr *m, struct latmgr_fg *f)
{
	const struct latmgr_proc *p = latmgr_find_process(m, f->tgid);
	const char *why;
	size_t i = 0;

	if (!p || p->start_time != f->start_time || !fg_holds(f, p)) {
		f->tgid = 0;
		return;
	}
	while (i < m->np) {
		struct latmgr_proc q = m->p[i];
		size_t before = m->np;
		int r;

		if (!fg_holds(f, &q)) {
			i++;
			continue;
		}
		if (f->had)
			r = set_process(m, &(struct lat_req){ .tid = q.tgid, .tgid = q.tgid,
							      .start_time = q.start_time,
							      .value = f->prev.value,
							      .source = f->prev.source,
							      .trusted = f->prev.trusted },
					f->prev.from_rule, &why);
		else
			r = latmgr_reset_process(m, q.tgid, q.start_time);
		if (r < 0 && m->np == before)
			proc_del(m, q.tgid); /* gone meanwhile, or it would not take it */
		else if (i < m->np && m->p[i].tgid == q.tgid)
			i++; /* a set replaced it (a reset removed it) */
	}
	log_info("latency: process %d is no longer in front for uid %u: %s", (int)f->tgid,
		 (unsigned)f->uid, f->had ? "its value back" : "none again");
	f->tgid = 0;
	m->units_dirty = true;
}

int latmgr_foreground(struct latmgr *m, uid_t uid, const struct lat_req *rq, int *ret_value,
		      const char **ret_why)
{
	pid_t tgid = rq->tgid;
	const struct latmgr_proc *p;
	struct latmgr_fg *f = NULL;
	int r = 0;

	*ret_why = NULL;
	for (size_t i = 0; i < m->nfg && !f; i++)
		if (m->fg[i].uid == uid)
			f = &m->fg[i];
	p = tgid ? latmgr_find_process(m, tgid) : NULL;
	if (f && f->tgid && f->tgid == tgid && p && p->start_time == f->start_time &&
	    fg_holds(f, p)) {
		*ret_value = p->value;
		return 0;
	}
	if (!f && tgid) {
		/* A slot whose caller has nothing in front, or whose process is gone, is free. */
		for (size_t i = 0; i < m->nfg && !f; i++) {
			const struct latmgr_proc *q = latmgr_find_process(m, m->fg[i].tgid);

			if (!m->fg[i].tgid || !q || q->start_time != m->fg[i].start_time)
				f = &m->fg[i];
		}
		if (!f && m->nfg == LATMGR_FG_MAX) {
			*ret_why = "too many callers have a process in front";
			return -EUSERS;
		}
		if (!f)
			f = &m->fg[m->nfg++];
		memset(f, 0, sizeof(*f));
		f->uid = uid;
	}
	if (f && f->tgid)
		fg_give_back(m, f);
	*ret_value = LAT_NONE;
	if (!tgid)
		goto out;
	p = latmgr_find_process(m, tgid);
	if (p && (!rq->start_time || p->start_time == rq->start_time) &&
	    p->value <= rq->value) {
		*ret_value = p->value;
		goto out;
	}
	f->had = p != NULL;
	if (p)
		f->prev = *p;
	r = set_process(m, rq, false, ret_why);
	p = latmgr_find_process(m, tgid);
	if (r < 0 || !p)
		goto out;
	f->tgid = tgid;
	f->start_time = p->start_time;
	f->value = rq->value;
	snprintf(f->source, sizeof(f->source), "%s", rq->source);
	*ret_value = rq->value;
	r = 0;
out:
	latmgr_units_refresh(m);
	return tgid && *ret_value == LAT_NONE ? (r < 0 ? r : -ESRCH) : 0;
}

int latmgr_set_thread(struct latmgr *m, const struct lat_req *rq, const char **ret_why)
{
	struct latpol_task t;
	struct plan pl;
	pid_t tgid;

	*ret_why = NULL;
	if (latmgr_tgid_of(m, rq->tid, &tgid) < 0) {
		*ret_why = "no such task";
		return -ESRCH;
	}
	read_task(m, rq->tid, tgid, &t);
	plan_init(&pl);
	return apply_one(m, &pl, latpol_task(&t, rq, m->self, &pl, ret_why), ret_why);
}

int latmgr_reset_thread(struct latmgr *m, pid_t tid, uint64_t expect)
{
	const struct lat_entry *e = latact_find(m->la, tid);
	struct latpol_task t;
	struct plan pl;

	if (e)
		t = (struct latpol_task){ .tid = tid, .tgid = e->tgid,
					  .start_time = e->task.start_time };
	plan_init(&pl);
	return apply_one(m, &pl, latpol_reset_task(e ? &t : NULL, expect, &pl), NULL);
}

int latmgr_reset_process(struct latmgr *m, pid_t tgid, uint64_t expect)
{
	struct latpol_rec rec = rec_of(latmgr_find_process(m, tgid));
	struct latact_result *res = NULL;
	size_t ne;
	struct latpol_task *e = entries_of(m, tgid, &ne);
	struct plan pl;
	int r, n = 0;

	plan_init(&pl);
	r = e ? latpol_reset_process(tgid, &rec, expect, e, ne, &pl) : -ENOMEM;
	free(e);
	if (r < 0) {
		plan_fini(&pl);
		return r;
	}
	proc_del(m, tgid);
	if (pl.n)
		res = apply(m, &pl);
	for (size_t i = 0; res && i < pl.n; i++)
		n += res[i].r == 0;
	free(res);
	plan_fini(&pl);
	if (rec.managed)
		latmgr_units_refresh(m);
	return rec.managed || n ? n : -ENOENT;
}

int latmgr_set_cgroup(struct latmgr *m, const char *path, int v, const char *source,
		  const char **ret_why)
{
	struct plan pl;

	*ret_why = NULL;
	plan_init(&pl);
	return apply_one(m, &pl, latpol_cgroup(path, v, source, &pl), ret_why);
}

int latmgr_reset_cgroup(struct latmgr *m, const char *path)
{
	struct plan pl;

	plan_init(&pl);
	return apply_one(m, &pl, latpol_cgroup_reset(path, &pl), NULL);
}

int latmgr_value_of(const struct latmgr *m, pid_t tid, pid_t tgid)
{
	const struct lat_entry *e = latact_find(m->la, tid);
	const struct latmgr_proc *p;

	if (e)
		return e->value;
	p = latmgr_find_process(m, tgid);
	return p ? p->value : LAT_NONE;
}

/* ---- rules ---- */

/* What the kernel said a process runs (BPF): from its exec event, or a task walk. */
struct latmgr_exe {
	uint64_t start_ns;      /* the process's start, CLOCK_BOOTTIME ns */
	struct ident_exe id;
};

/* CLOCK_BOOTTIME ns in the clock ticks of /proc/PID/stat's start time, as the kernel rounds. */
static uint64_t boot_ticks(uint64_t ns)
{
	long hz = sysconf(_SC_CLK_TCK);

	return hz > 0 ? ns / (NSEC_PER_SEC / (uint64_t)hz) : 0;
}

/*
 * What the rules say of process pid, which has rec (latpol_rule): APPLY sets *ret_rule
 * and ret_source. ret_start: its start time before the read. kx, where known, is what
 * the kernel said the process runs: believed only if the pid still names the process
 * it was said of.
 */
static enum latpol_rule_verdict rule_for(const struct latmgr *m, pid_t pid,
					 const struct latmgr_exe *kx, const struct latpol_rec *rec,
					 uint64_t *ret_start, int *ret_rule, char *ret_source)
{
	bool kthread, known = false;
	struct ident_buf *buf = NULL;
	struct proc_ident id;
	enum latpol_rule_verdict v;

	if (m->conf->rules.n && task_info(m, pid, ret_start, &kthread) == 0 && !kthread) {
		if (kx && boot_ticks(kx->start_ns) != *ret_start)
			kx = NULL;
		buf = malloc(sizeof(*buf));
		/* Without memory to read it, the process is taken as it was. */
		if (!buf)
			return LATPOL_RULE_KEEP;
		known = ident_read_known(m->proc_root, pid, kx ? &kx->id : NULL, &m->conf->rules,
					 buf, &id) == 0;
	}
	v = latpol_rule(&m->conf->rules, known ? &id : NULL, rec, ret_rule, ret_source);
	free(buf);
	return v;
}

static void fail_note(struct latmgr *m, pid_t tgid, uint64_t start, int r, const char *source,
		      const char *why)
{
	struct latmgr_fail *f = &m->fails[m->nfails++ % LATMGR_FAILS];

	f->tgid = tgid;
	f->start_time = start;
	f->when = (int64_t)time(NULL);
	f->r = r;
	snprintf(f->source, sizeof(f->source), "%s", source);
	snprintf(f->why, sizeof(f->why), "%s", why ? why : strerror(-r));
}

const struct latmgr_fail *latmgr_failure_of(const struct latmgr *m, pid_t tgid,
					    uint64_t start_time)
{
	unsigned n = m->nfails < LATMGR_FAILS ? m->nfails : LATMGR_FAILS;

	/* The newest first. */
	for (unsigned k = 1; k <= n; k++) {
		const struct latmgr_fail *f = &m->fails[(m->nfails - k) % LATMGR_FAILS];

		if (f->tgid == tgid && f->start_time == start_time)
			return f;
	}
	return NULL;
}

/* Applies the rules to process pid; a ctl value is left as it is. kx: as rule_for's. */
/* True if a rule's value was given just now (to every thread the process has). */
static bool apply_rules(struct latmgr *m, pid_t pid, const struct latmgr_exe *kx)
{
	const struct latmgr_proc *p = latmgr_find_process(m, pid);
	struct latpol_rec rec = rec_of(p);
	const struct rule *rule;
	char source[PLAN_SOURCE_MAX];
	const char *why;
	uint64_t start = 0;
	int i = -1, r;

	if (!latpol_rules_may_change(&rec, pid == m->self))
		return false;
	switch (rule_for(m, pid, kx, &rec, &start, &i, source)) {
	case LATPOL_RULE_KEEP:
		return false;
	case LATPOL_RULE_GIVE_BACK:
		log_info("latency: process %d no longer matches rule %s: given back", (int)pid,
			 p->source + 5);
		latmgr_reset_process(m, pid, 0);
		return false;
	case LATPOL_RULE_APPLY:
		break;
	}
	rule = &m->conf->rules.r[i];
	r = set_process(m, &(struct lat_req){ .tid = pid, .tgid = pid, .start_time = start,
					      .value = rule->latency_nice, .source = source,
					      .trusted = true },
			true, &why);
	if (r < 0) {
		log_info("latency: rule %s matches process %d, not applied: %s", rule->name,
			 (int)pid, why ? why : "failed");
		fail_note(m, pid, start, r, source, why);
		return false;
	}
	m->cnt.rule_matches++;
	log_debug("latency: rule %s gives process %d value %d", rule->name, (int)pid,
		  rule->latency_nice);
	return true;
}

/* ---- fork, exec, exit ---- */

/* The entry of the task a new one came from: that thread's, else its process's first. */
static const struct lat_entry *from_of(const struct latmgr *m, pid_t tid, pid_t tgid)
{
	const struct lat_entry *e = latact_find(m->la, tid);

	return e ? e : latact_find(m->la, tgid);
}

/*
 * Whether the kernel gave task tid what rqbalance set on from: the nice and policy it
 * inherits at fork from the task that created it, and the class cgroup where
 * rqbalance holds from's. Where the source does not name the creator (the connector,
 * a walk of /proc: the parent of record is not the creator after a clone with
 * CLONE_PARENT, nor after the creator exited), this says the creator held the value.
 * A creator that had the same nice, policy and class without rqbalance could do the
 * same itself: lowering nice needs the privilege a negative value would give.
 */
static bool kernel_inherited(const struct latmgr *m, pid_t tid, const struct lat_entry *from)
{
	struct lat_state cur;
	bool same;

	if (!from) {
		log_debug("latency: process %d: its parent holds nothing of rqbalance's", (int)tid);
		return false;
	}
	if (latact_read(m->la, tid, &cur) < 0) {
		log_debug("latency: process %d: its nice, policy and cgroup cannot be read", (int)tid);
		return false;
	}
	same = cur.nice == from->set.nice && cur.policy == from->set.policy &&
	       (!from->set.cgroup[0] || strcmp(cur.cgroup, from->set.cgroup) == 0);
	/* What differed, for the log: a child that did not inherit is rare, and a puzzle. */
	if (!same)
		log_debug("latency: process %d has nice %d, policy %d and %s class cgroup; "
			  "rqbalance set nice %d and policy %d on %d", (int)tid, cur.nice,
			  cur.policy,
			  !from->set.cgroup[0] || strcmp(cur.cgroup, from->set.cgroup) == 0
				  ? "its" : "another",
			  from->set.nice, from->set.policy, (int)from->task.tid);
	return same;
}

/*
 * An event's time in the clock ticks after boot that /proc/PID/stat gives start times
 * in: the event has CLOCK_MONOTONIC, start times count CLOCK_BOOTTIME (which runs on
 * through suspend). 0 when the event has no time.
 */
static uint64_t event_ticks(const struct evsrc_event *ev)
{
	struct timespec mono, boot;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t off;

	if (!ev->ts_ns || hz <= 0 || clock_gettime(CLOCK_MONOTONIC, &mono) < 0 ||
	    clock_gettime(CLOCK_BOOTTIME, &boot) < 0)
		return 0;
	off = ((uint64_t)boot.tv_sec - (uint64_t)mono.tv_sec) * NSEC_PER_SEC +
	      (uint64_t)boot.tv_nsec - (uint64_t)mono.tv_nsec;
	return (ev->ts_ns + off) / (NSEC_PER_SEC / (uint64_t)hz);
}

/*
 * Whether the task that has the event's pid now is the one the event is about. An
 * event read late (a busy or descheduled daemon, a backlog after a fork storm) may
 * name a pid whose task has exited and whose pid went to another since. Where the
 * event carries the task's start time (BPF), it must be the same; otherwise (the
 * connector) a start time within a tick of the event's time says it is the same, and
 * two tasks that share a pid within one tick cannot be told apart.
 */
static bool event_is_about(const struct evsrc_event *ev, uint64_t start)
{
	uint64_t t;

	if (ev->start_ns)
		return boot_ticks(ev->start_ns) == start;
	t = event_ticks(ev);
	return !t || (start + 1 >= t && start <= t + 1);
}

/*
 * Whether an exit event is about the entry of a task that started at start: not if
 * that task started after the event (a late exit is about the pid's last owner).
 */
static bool exit_is_about(const struct evsrc_event *ev, uint64_t start)
{
	uint64_t t;

	if (ev->start_ns)
		return boot_ticks(ev->start_ns) == start;
	t = event_ticks(ev);
	return !t || start <= t + 1;
}

/*
 * The task a new one came from, as far as the event says: BPF names it; the connector
 * names a new thread's process and a new process's real parent.
 */
static pid_t creator_of(const struct evsrc_event *ev)
{
	if (ev->creator_tgid > 0)
		return ev->creator_tid;
	return ev->tid != ev->tgid ? ev->tgid : ev->parent_tid;
}

/*
 * A task whose creator is not managed, read after the creator was given back: the
 * kernel may have given it what rqbalance had set on the creator (it was made before
 * the give-back, or between the exec that ended a rule's hold and the give-back that
 * followed; its fork event is read later). That goes back too, and nothing rqbalance
 * set outlives its management (the second review: 12 of 20 grandchildren of a boosted
 * program kept its nice and class). Where the source names no creator (the
 * connector), the real parent stands for it; the give-back checks the task has what
 * rqbalance set in any case.
 */
static void inherited_given_back(struct latmgr *m, const struct evsrc_event *ev, pid_t ctid)
{
	const struct lat_entry *from = latact_given(m->la, ctid);
	struct latpol_task child;
	int r;

	if (!from)
		return;
	read_task(m, ev->tid, ev->tgid, &child);
	if (child.gone || !event_is_about(ev, child.start_time)) {
		log_debug("latency: task %d, made by task %d given back: %s", (int)ev->tid,
			  (int)ctid, child.gone ? "gone" : "its pid was reused");
		return;
	}
	r = latact_give_back_inherited(m->la, ev->tid, ev->tgid, child.start_time, from);
	if (r > 0)
		m->cnt.inherited_back++;
	else
		log_debug("latency: task %d, made by task %d given back: %s", (int)ev->tid,
			  (int)ctid, r == 0 ? "inherited nothing of rqbalance's" : strerror(-r));
}

/*
 * A new thread (tid != tgid) of a managed process gets the process's value; a new
 * process gets the value of the process that created it, as the kernel gives it the
 * creator's nice, policy and cgroup. BPF names the creator (the tracepoint's current
 * task); the connector names only the real parent, which after clone(CLONE_PARENT)
 * is the creator's parent: there the child is managed only if the kernel gave it what
 * rqbalance set on that parent (kernel_inherited). The creator's cgroup is checked
 * first: one someone else moved is theirs, and so is the child's. The task is acted on
 * only if it is still the one the event is about.
 */
static void on_fork(struct latmgr *m, const struct evsrc_event *ev)
{
	bool thread = ev->tid != ev->tgid, known = ev->creator_tgid > 0;
	pid_t ctid = creator_of(ev);
	pid_t ctgid = thread ? ev->tgid : known ? ev->creator_tgid : ev->parent_tgid;
	const struct latmgr_proc *p = latmgr_find_process(m, ctgid);
	struct latpol_fork f = { .creator = rec_of(p), .thread = thread, .creator_known = known,
				 .inherited = true };
	const struct lat_entry *from;
	struct latmgr_proc child;
	struct plan pl;
	const char *why;
	int r;

	if (!p) {
		inherited_given_back(m, ev, ctid);
		return;
	}
	read_task(m, ev->tid, ev->tgid, &f.child);
	if (f.child.gone || !event_is_about(ev, f.child.start_time))
		return;
	latact_check(m->la, ctid);
	from = from_of(m, ctid, ctgid);
	f.from_tid = from ? from->task.tid : 0;
	if (!thread && !known)
		f.inherited = kernel_inherited(m, ev->tid, from);
	child = *p;
	child.tgid = ev->tgid;
	child.start_time = f.child.start_time;
	plan_init(&pl);
	r = latpol_fork(&f, m->self, &pl, &why);
	if (r == 0 && why)
		log_debug("latency: process %d, forked under %d, %s: not managed", (int)ev->tid,
			  (int)ev->parent_tgid, why);
	if (apply_one(m, &pl, r, &why) != 0 || r <= 0)
		return;
	if (!thread)
		proc_put(m, &child);
	m->cnt.threads++;
}

static void on_exit_event(struct latmgr *m, const struct evsrc_event *ev)
{
	const struct lat_entry *e = latact_find(m->la, ev->tid);
	const struct latmgr_proc *p = latmgr_find_process(m, ev->tgid);

	if (e && exit_is_about(ev, e->task.start_time))
		latact_task_gone(m->la, ev->tid);
	else if (!e)
		latact_given_gone(m->la, ev->tid);
	if (ev->tid == ev->tgid && p && exit_is_about(ev, p->start_time))
		proc_del(m, ev->tgid);
	/* Any process that leaves may leave a unit whose other processes share a value. */
	if (ev->tid == ev->tgid)
		m->units_dirty = true;
}

static void on_event(void *ctx, const struct evsrc_event *ev)
{
	struct latmgr *m = ctx;

	m->cnt.events++;
	if (ev->ts_ns > m->last_event_ns)
		m->last_event_ns = ev->ts_ns;
	switch (ev->kind) {
	case EVSRC_FORK:
		if (m->stopping)
			inherited_given_back(m, ev, creator_of(ev));
		else
			on_fork(m, ev);
		break;
	case EVSRC_EXEC:
		if (ev->tid == ev->tgid && !m->stopping) {
			struct latmgr_exe kx = { .start_ns = ev->start_ns,
					     .id = { .dev = ev->exe_dev, .ino = ev->exe_ino } };

			apply_rules(m, ev->tgid, ev->has_exe && ev->start_ns ? &kx : NULL);
		}
		break;
	case EVSRC_EXIT:
		on_exit_event(m, ev);
		break;
	}
}

static void on_overflow(void *ctx)
{
	struct latmgr *m = ctx;

	if (m->cnt.overflows++ == 0)
		log_warn("latency: %s: events lost, rescanning /proc (counted in rqctl status)",
			 m->ev->ops->lost);
	m->resync = true;
	m->drained = false;
}

bool latmgr_has_events(const struct latmgr *m)
{
	return m->ev != NULL;
}

const char *latmgr_events_source(const struct latmgr *m)
{
	return m->ev ? m->ev->ops->name : "none";
}

/* One bounded batch of events; notes when the source was read to empty. */
static void dispatch(struct latmgr *m)
{
	int r = evsrc_dispatch(m->ev);

	if (r < 0 && r != -EAGAIN)
		log_debug("latency: %s: %s", m->pc_state, strerror(-r));
	if (!evsrc_empty(m->ev))
		return;
	m->empty_reads++;
	if (m->resync)
		m->drained = true;
}

static int on_ev_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	(void)s;
	(void)fd;
	(void)revents;
	dispatch(userdata);
	return 0;
}

void latmgr_mark(struct latmgr *m, uint64_t now_ns, uint64_t margin_ns, struct latmgr_mark *ret)
{
	*ret = (struct latmgr_mark){ .ns = now_ns, .margin_ns = margin_ns,
				 .empty_reads = m->empty_reads, .overflows = m->cnt.overflows,
				 .lost = m->resync };
	if (latmgr_has_events(m))
		dispatch(m);
}

bool latmgr_passed(const struct latmgr *m, const struct latmgr_mark *mk)
{
	bool lost = mk->lost || m->cnt.overflows != mk->overflows;

	/* Without events nothing is queued: each tick walks /proc instead. */
	if (!latmgr_has_events(m))
		return true;
	if (m->empty_reads == mk->empty_reads && m->last_event_ns < mk->ns + mk->margin_ns)
		return false;
	return !lost || m->rescan_ns >= mk->ns;
}


/* ---- walking /proc ---- */

/* New threads and children of managed processes, missed while events were lost. */
static void rescan_process(struct latmgr *m, pid_t pid, pid_t ppid)
{
	const struct latmgr_proc *p = latmgr_find_process(m, pid), *parent;
	const struct lat_entry *from;
	bool given = false;

	/*
	 * A child missed while events were lost. Its parent of record may not be the task
	 * that created it (clone(CLONE_PARENT), an orphan adopted by a subreaper): it gets
	 * the parent's value only if the kernel gave it what rqbalance set there, and a
	 * rule's value only by matching the rule itself, below.
	 */
	if (!p && (parent = latmgr_find_process(m, ppid)) != NULL && !parent->from_rule) {
		struct latpol_rec rec = rec_of(parent);
		struct latmgr_proc child = *parent;
		struct latpol_task t;

		from = from_of(m, ppid, ppid);
		read_task(m, pid, pid, &t);
		if (t.gone || !latpol_adopt(&rec, t.start_time,
					    t.start_time >= rec.start_time &&
					    kernel_inherited(m, pid, from)))
			return;
		child.tgid = pid;
		child.start_time = t.start_time;
		if (proc_put(m, &child) < 0)
			return;
		p = latmgr_find_process(m, pid);
		if (proc_threads(m, p, from) > 0)
			m->cnt.threads++;
		return;
	}
	p = latmgr_find_process(m, pid);
	/* A rule's value is checked again: the rules, or the process, may have changed. */
	if (!p || p->from_rule) {
		const struct evsrc_exe *x = evsrc_exe_find(m->exes, m->nexes, pid);
		struct latmgr_exe kx = { .start_ns = x ? x->start_ns : 0,
				     .id = { .dev = x ? x->dev : 0, .ino = x ? x->ino : 0 } };

		given = apply_rules(m, pid, x && x->has_exe ? &kx : NULL);
	}
	/* Threads missed meanwhile; not those a rule gave its value to just now. */
	p = given ? NULL : latmgr_find_process(m, pid);
	from = p ? from_of(m, pid, pid) : NULL;
	if (p && proc_threads(m, p, from) > 0)
		m->cnt.threads++;
}

void latmgr_rescan(struct latmgr *m)
{
	struct dirent *de;
	DIR *d = opendir(m->proc_root);

	if (!d)
		return;
	m->cnt.rescans++;
	m->rescan_ns = util_now_ns();
	/* What every process runs, from the kernel: exe rules need no /proc/PID/exe then. */
	if (m->ev && m->conf->rules.n) {
		int r = evsrc_exes(m->ev, &m->exes, &m->nexes);

		/* The connector cannot say: exe rules read /proc/PID/exe then. */
		if (r < 0 && r != -EOPNOTSUPP)
			log_debug("latency: task walk for exe identities failed: %s", strerror(-r));
	}
	while ((de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name);
		struct parse_stat_line l;

		if (pid <= 0 || pid == m->self || procfs_stat(m->proc_root, 0, pid, &l) < 0 ||
		    (l.flags & PARSE_PF_KTHREAD))
			continue;
		rescan_process(m, pid, l.ppid);
	}
	closedir(d);
	free(m->exes);
	m->exes = NULL;
	m->nexes = 0;
	m->resync = false;
}

void latmgr_rules_changed(struct latmgr *m)
{
	struct latact_result *res = NULL;
	size_t n;
	/* The mapping's settings may have changed too: every task gets its value anew. */
	struct latpol_task *e = entries_of(m, 0, &n);
	struct plan pl;

	plan_init(&pl);
	if (e && latpol_reapply(e, n, &pl) > 0)
		res = apply(m, &pl);
	free(e);
	for (size_t i = 0; res && i < pl.n; i++)
		if (res[i].r < 0)
			log_debug("latency: task %d kept its settings at reload: %s",
				  (int)pl.a[i].tid, res[i].why ? res[i].why : "failed");
	free(res);
	plan_fini(&pl);
	latmgr_rescan(m);
}

/*
 * Whether to rescan for lost events now. Until the connector has been read empty after
 * the loss the kernel drops more without a word: the rescan waits for that point, so
 * that it covers them too. A socket that never empties still gets one every
 * LATMGR_RESYNC_TICKS ticks, and the resync stays due.
 */
static bool resync_now(struct latmgr *m, bool *ret_again)
{
	*ret_again = false;
	if (!m->resync)
		return false;
	if (m->drained || !latmgr_has_events(m)) {
		m->resync_wait = 0;
		return true;
	}
	*ret_again = true;
	return ++m->resync_wait % LATMGR_RESYNC_TICKS == 0;
}

static void sweep(struct latmgr *m, bool resync)
{
	latact_verify(m->la);
	for (size_t i = m->np; i-- > 0;) {
		uint64_t start;
		bool kthread;

		if (task_info(m, m->p[i].tgid, &start, &kthread) < 0 || start != m->p[i].start_time)
			proc_del(m, m->p[i].tgid);
	}
	/* Without events, new threads are found by walking; with them, after losses. */
	if (resync || (!latmgr_has_events(m) && m->np))
		latmgr_rescan(m);
}

void latmgr_tick(struct latmgr *m)
{
	bool again, resync, swept;

	/* Events that wake nobody (BPF's forks and exits) are read here at the latest. */
	if (m->ev && m->ev->ops->tick_read)
		dispatch(m);
	resync = resync_now(m, &again);
	/* With events, exits arrive as such: a sweep now and then is enough. */
	swept = !latmgr_has_events(m) || resync || ++m->ticks % LATMGR_SWEEP_TICKS == 0;

	if (swept)
		sweep(m, resync);
	if (again)
		m->resync = true;
	/* The sweep also finds processes moved into or out of a unit: no event tells. */
	if (swept || m->units_dirty)
		latmgr_units_refresh(m);
}

static const struct evsrc_callbacks callbacks = { .event = on_event, .overflow = on_overflow };

static const char *const bpf_what =
	"bpf: sched_process_fork/exec/exit tracepoints into a ring buffer; exe rules match "
	"the device and inode the kernel reports, with no access to /proc/PID/exe";

/* What the choice of event source came to, in the words of the log, --features and status. */
struct events_pick {
	struct evsrc *ev;              /* the source opened, NULL for none */
	sd_event_source *src;          /* its fd in the loop; NULL without a loop */
	int r;                         /* -errno: events = bpf, and BPF does not load */
	int level;                     /* the log line's syslog level */
	char state[96];                /* as latmgr.pc_state */
	char detail[320];              /* as latmgr.events_why */
	char log[512];                 /* the line to log at the daemon's start */
};

/*
 * Opens the source ops drives with m's callbacks (m NULL: a probe, which delivers
 * nothing) and, given a loop e, reads its fd there. 0, or -errno with why.
 */
static int try_source(const struct evsrc_ops *ops, struct latmgr *m, sd_event *e,
		      struct events_pick *ret, char *why, size_t len)
{
	int r = evsrc_open(ops, &callbacks, m, &ret->ev, why, len);

	if (r < 0 || !e)
		return r;
	r = sd_event_add_io(e, &ret->src, evsrc_fd(ret->ev), EPOLLIN, on_ev_io, m);
	if (r < 0) {
		evsrc_close(ret->ev);
		ret->ev = NULL;
		snprintf(why, len, "event loop: %s", strerror(-r));
	}
	return r;
}

static void say_bpf(struct events_pick *pk)
{
	pk->level = LOG_INFO;
	snprintf(pk->state, sizeof(pk->state), "bpf");
	snprintf(pk->detail, sizeof(pk->detail), "%s", bpf_what);
	snprintf(pk->log, sizeof(pk->log), "latency: fork, exec and exit events from BPF "
		 "tracepoints; exe rules match on the device and inode the kernel reports");
}

/* [latency] events = bpf, and BPF (why) does not load: the daemon does not start. */
static void say_bpf_required(struct events_pick *pk, int r, const char *why)
{
	pk->r = r;
	pk->level = LOG_ERR;
	snprintf(pk->detail, sizeof(pk->detail), "events = bpf, and BPF does not load: %s", why);
	snprintf(pk->log, sizeof(pk->log), "latency: [latency] events = bpf: BPF does not load: %s",
		 why);
}

/* No BPF (why) and no connector (r): /proc is walked each tick. */
static void say_none(struct events_pick *pk, const char *why, int r)
{
	pk->level = LOG_WARNING;
	snprintf(pk->state, sizeof(pk->state), "none (%s): walking /proc each tick",
		 strerror(-r));
	snprintf(pk->detail, sizeof(pk->detail), "no BPF (%s) and no proc connector (%s): /proc "
		 "is walked each tick, rules apply at start and reload only", why, strerror(-r));
	snprintf(pk->log, sizeof(pk->log), "latency: no BPF events (%s) and no proc connector: "
		 "%s; new threads are found by walking /proc each tick, and rules apply only at "
		 "start and reload", why, strerror(-r));
}

/* The connector, without BPF (why); asked: [latency] events = connector. */
static void say_connector(struct events_pick *pk, const char *why, bool asked)
{
	pk->level = asked ? LOG_INFO : LOG_NOTICE;
	snprintf(pk->state, sizeof(pk->state), "connector");
	snprintf(pk->detail, sizeof(pk->detail), "proc connector (no BPF: %s); exe rules read "
		 "/proc/PID/exe (CAP_SYS_PTRACE for other users' processes)", why);
	if (asked)
		snprintf(pk->log, sizeof(pk->log), "latency: fork, exec and exit events from the "
			 "proc connector ([latency] events = connector)");
	else
		snprintf(pk->log, sizeof(pk->log), "latency: no BPF events (%s): using the proc "
			 "connector; exe rules read /proc/PID/exe, which needs CAP_SYS_PTRACE for "
			 "other users' processes", why);
}

/*
 * The one choice of event source, for the daemon (m, in loop e) and for a probe (both
 * NULL): BPF where it loads and [latency] events allows it, else the connector unless
 * events = bpf, else none.
 */
static void pick_events(const struct rqb_conf *c, struct latmgr *m, sd_event *e,
			struct events_pick *ret)
{
	char why[256] = "", cwhy[256];
	int r = -ENOENT;

	*ret = (struct events_pick){ 0 };
	if (c->lat_events == CONF_EVENTS_CONNECTOR)
		snprintf(why, sizeof(why), "[latency] events = connector");
	else
		r = try_source(&bpfev_ops, m, e, ret, why, sizeof(why));
	if (r == 0)
		say_bpf(ret);
	else if (c->lat_events == CONF_EVENTS_BPF)
		say_bpf_required(ret, r, why);
	else if ((r = try_source(&procconn_ops, m, e, ret, cwhy, sizeof(cwhy))) < 0)
		say_none(ret, why, r);
	else
		say_connector(ret, why, c->lat_events == CONF_EVENTS_CONNECTOR);
}

bool latmgr_probe_events(const struct rqb_conf *c, char *ret_detail, size_t len)
{
	struct events_pick pk;
	bool on;

	pick_events(c, NULL, NULL, &pk);
	on = pk.ev != NULL;
	evsrc_close(pk.ev);
	snprintf(ret_detail, len, "%s", pk.detail);
	return on;
}

/* Opens the event source pick_events chooses, and says which; -errno: none it may use. */
static int open_events(struct latmgr *m, sd_event *e)
{
	struct events_pick pk;

	pick_events(m->conf, m, e, &pk);
	m->ev = pk.ev;
	m->ev_src = pk.src;
	snprintf(m->pc_state, sizeof(m->pc_state), "%s", pk.state);
	snprintf(m->events_why, sizeof(m->events_why), "%s", pk.detail);
	log_msg(pk.level, "%s", pk.log);
	return pk.r;
}

int latmgr_init(struct latmgr *m, struct latact *la, const struct rqb_conf *c, sd_event *e,
	    const char *proc_root)
{
	int r;

	memset(m, 0, sizeof(*m));
	m->la = la;
	m->conf = c;
	m->self = getpid();
	snprintf(m->proc_root, sizeof(m->proc_root), "%s", util_proc_root(proc_root));
	r = open_events(m, e);
	if (r < 0)
		return r;
	m->units_on = la->o.systemd && la->cls.mount[0];
	latmgr_rescan(m);
	latmgr_units_refresh(m);
	return 0;
}

bool latmgr_walks_unprivileged(struct latmgr *m)
{
	return !m->ev || evsrc_walks_unprivileged(m->ev);
}

/* Reads the events queued so far (a bounded number of reads). */
static void drain(struct latmgr *m)
{
	for (int i = 0; m->ev && i < 64; i++) {
		dispatch(m);
		if (evsrc_empty(m->ev))
			break;
	}
}

void latmgr_stop(struct latmgr *m)
{
	/* Forks not read yet are children to give back what they inherited. */
	drain(m);
}

void latmgr_stopped(struct latmgr *m)
{
	m->np = 0;
	m->stopping = true;
	drain(m);
}

void latmgr_fini(struct latmgr *m)
{
	sd_event_source_disable_unref(m->ev_src);
	evsrc_close(m->ev);
	free(m->p);
	free(m->u);
	memset(m, 0, sizeof(*m));
}

/* ---- units on a systemd host ---- */

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

/* The unit of each managed process, found anew: those no longer holding one are unseen. */
static void units_collect(struct latmgr *m)
{
	char cg[LAT_PATH_MAX];

	for (size_t i = 0; i < m->nu; i++)
		m->u[i].seen = false;
	for (size_t i = 0; i < m->np; i++) {
		struct latmgr_unit *u, *arr;

		if (procfs_cgroup(m->proc_root, 0, m->p[i].tgid, cg, sizeof(cg)) < 0)
			continue;
		u = unit_find(m, cg);
		if (!u) {
			arr = util_grow(m->u, &m->capu, m->nu, sizeof(*arr));
			if (!arr)
				continue;
			m->u = arr;
			u = &m->u[m->nu++];
			memset(u, 0, sizeof(*u));
			snprintf(u->cgroup, sizeof(u->cgroup), "%s", cg);
			u->d.verdict = LAT_UNIT_SHARED;
			u->d.value = LAT_NONE;
		}
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
	struct evsrc_event ev = { .ts_ns = m->last_event_ns };
	uint64_t start, t = event_ticks(&ev);
	bool kthread;

	*ret = (struct lat_member){ .pid = c->pid, .ruid = c->ruid, .euid = c->euid,
				    .value = LAT_NONE };
	/* Within a clock tick of the last event counts as after it. */
	if (!p && latmgr_has_events(m) && (p = latmgr_find_process(m, c->ppid)) != NULL &&
	    (!t || task_info(m, c->pid, &start, &kthread) < 0 || start + 1 < t))
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
	return apply_one(m, &pl, latpol_unit(path, d, unit_held(m, path), source, &pl),
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
