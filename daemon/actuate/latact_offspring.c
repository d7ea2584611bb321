/*
 * Actuate stage, latency: the end of a favour by state. The kernel copies a task's nice,
 * policy, slice and class cgroup into every thread and child it makes, events or none
 * (the daemon down after a crash, a fork read after the stop): this finds those copies
 * and gives them back. It reads /proc and the class cgroups once, and writes only a
 * knob that still holds exactly what rqbalance wrote.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "actuate/latact.h"
#include "actuate/latact_int.h"
#include "actuate/latknob.h"
#include "proc/procfs.h"
#include "util/log.h"
#include "util/util.h"

/* One process of the walk: its parent, and the record that stands for it (see resolve). */
struct node {
	pid_t pid, ppid;
	uint64_t start;             /* clock ticks after boot */
	int rec;                    /* index into the walk's recs; -1: none; -2: not yet known */
};

struct walk {
	struct latact *la;
	const struct lat_entry **recs; /* sorted by tgid, a process's leader first */
	size_t nrecs;
	const struct lat_entry *only; /* a grant's end: only what stands for this record goes
					 back; the others (grants that go on) keep theirs */
	struct node *nodes;         /* sorted by pid */
	size_t nn, capn;
	unsigned given;             /* tasks a knob or the cgroup of which went back */
};

static int cmp_rec(const void *a, const void *b)
{
	const struct lat_entry *x = *(const struct lat_entry *const *)a;
	const struct lat_entry *y = *(const struct lat_entry *const *)b;
	bool xl = x->task.tid == x->tgid, yl = y->task.tid == y->tgid;

	if (x->tgid != y->tgid)
		return (x->tgid > y->tgid) - (x->tgid < y->tgid);
	if (xl != yl)
		return xl ? -1 : 1;
	return (x->task.tid > y->task.tid) - (x->task.tid < y->task.tid);
}

static int cmp_node(const void *a, const void *b)
{
	pid_t x = ((const struct node *)a)->pid, y = ((const struct node *)b)->pid;

	return (x > y) - (x < y);
}

/* The first record of process tgid (its leader's where there is one), or -1. */
static int rec_of(const struct walk *w, pid_t tgid)
{
	size_t lo = 0, hi = w->nrecs;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->recs[mid]->tgid < tgid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < w->nrecs && w->recs[lo]->tgid == tgid ? (int)lo : -1;
}

/* Whether task tid has a record of its own: given back as itself, not as a copy. */
static bool has_record(const struct walk *w, pid_t tgid, pid_t tid)
{
	int i = rec_of(w, tgid);

	for (size_t k = i < 0 ? w->nrecs : (size_t)i; k < w->nrecs && w->recs[k]->tgid == tgid; k++)
		if (w->recs[k]->task.tid == tid)
			return true;
	return false;
}

static struct node *node_of(struct walk *w, pid_t pid)
{
	struct node key = { .pid = pid };

	return bsearch(&key, w->nodes, w->nn, sizeof(*w->nodes), cmp_node);
}

/* Every process there is, read once: pid, parent, start time. */
static int read_nodes(struct walk *w)
{
	DIR *d = opendir(w->la->proc_root);
	struct dirent *de;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		struct parse_stat_line l;
		pid_t pid = (pid_t)atoi(de->d_name);
		struct node *arr;

		if (pid <= 0 || procfs_stat(w->la->proc_root, pid, pid, &l) < 0)
			continue;
		arr = util_grow(w->nodes, &w->capn, w->nn, sizeof(*arr));
		if (!arr)
			break;
		w->nodes = arr;
		w->nodes[w->nn++] = (struct node){ pid, l.ppid, l.start_time, -2 };
	}
	closedir(d);
	if (w->nn)
		qsort(w->nodes, w->nn, sizeof(*w->nodes), cmp_node);
	return 0;
}

/*
 * A process's own record, where the process is the one the record was about (not one
 * that took its number since: it started no later than the recorded task).
 */
static int own_rec(const struct walk *w, const struct node *n)
{
	int i = rec_of(w, n->pid);

	if (i < 0)
		return -1;
	for (size_t k = (size_t)i; k < w->nrecs && w->recs[k]->tgid == n->pid; k++) {
		const struct lat_entry *e = w->recs[k];

		if (e->task.tid == e->tgid ? e->task.start_time == n->start :
					     e->task.start_time >= n->start)
			return (int)k;
	}
	return -1;
}

/*
 * The record that stands for process n: its own, else its nearest ancestor's. Each
 * process is resolved once: the chain up is followed only to the first one known, and
 * every process on it learns the answer (linear in the processes, however deep).
 */
static int resolve(struct walk *w, struct node *n, struct node **stack)
{
	size_t depth = 0;
	int rec = -1;

	while (n && n->rec == -2 && depth < w->nn) {
		stack[depth++] = n;
		n->rec = -1; /* a loop of parents (a pid reused mid-walk) ends here */
		rec = own_rec(w, n);
		if (rec >= 0)
			break;
		n = n->ppid > 0 ? node_of(w, n->ppid) : NULL;
		/* A parent that started after its child took the real parent's number. */
		if (n && n->start > stack[depth - 1]->start)
			n = NULL;
	}
	if (rec < 0 && n && n->rec >= 0)
		rec = n->rec;
	while (depth > 0)
		stack[--depth]->rec = rec;
	return rec;
}

/* Whether a and b hold the same knobs, every row of latknob.h's table. */
static bool sched_same(const struct lat_state *a, const struct lat_state *b)
{
	return !latknob_differ(a, b);
}

/*
 * Gives task tid of process tgid back what rec had before rqbalance, knob by knob where
 * it still holds what rqbalance set on rec: the sched knobs where sched, the class
 * cgroup (to rec's own) where cgroup.
 */
static bool give(struct walk *w, const struct lat_entry *rec, pid_t tid, pid_t tgid,
		 bool sched, bool cgroup)
{
	struct latact *la = w->la;
	struct lat_entry e = *rec;
	struct parse_stat_line l;
	uint64_t before = la->cnt.restored;

	if (procfs_stat(la->proc_root, tgid, tid, &l) < 0 ||
	    la->ops->open(tid, tgid, l.start_time, &e.task) < 0)
		return false;
	e.tgid = tgid;
	e.from_tid = rec->task.tid;
	if (!sched)
		e.left |= latknob_all();
	if (!cgroup)
		e.set.cgroup[0] = '\0';
	latact_restore_entry(la, &e);
	la->ops->close(&e.task);
	return la->cnt.restored != before;
}

/* Moves process pid out of rec's class, whole, to the cgroup rec's task came from. */
static int give_process_cgroup(struct walk *w, const struct lat_entry *rec, pid_t pid)
{
	struct latact *la = w->la;
	struct parse_stat_line l;
	struct act_task t;
	int r;

	r = procfs_stat(la->proc_root, pid, pid, &l);
	if (r == 0)
		r = la->ops->open(pid, pid, l.start_time, &t);
	if (r < 0)
		return r;
	r = latact_cls_attach_process(la, rec->prev.cgroup[0] ? rec->prev.cgroup : "/", &t);
	la->ops->close(&t);
	return r;
}

/*
 * The threads of process pid that hold a copy of what rqbalance wrote on rec: each is
 * read once; the sched knobs go back to the threads that hold exactly what was written
 * (nice, policy, slice, uclamp); the class, where rec's own cgroup holds every other
 * thread, in one write for the whole process (a thread at a time would wait out a grace
 * period each: a process of 10,000 threads, tens of seconds), else a thread at a time.
 */
static void give_process(struct walk *w, pid_t pid, const struct lat_entry *rec)
{
	struct latact *la = w->la;
	bool cls = la->cls.on && rec->set.cgroup[0] && strcmp(rec->set.cgroup, rec->prev.cgroup) != 0;
	bool sched = !sched_same(&rec->set, &rec->prev), elsewhere = false;
	pid_t *in = NULL;
	size_t nin = 0, cap = 0, counted = 0;
	struct procfs_threads it;
	pid_t tid;

	if (procfs_threads_open(la->proc_root, pid, &it) < 0)
		return;
	while ((tid = procfs_threads_next(&it)) > 0) {
		bool in_cls, given = false;
		struct lat_state cur;
		pid_t *arr;

		if (latact_read(la, tid, &cur) < 0)
			continue;
		in_cls = cls && strcmp(cur.cgroup, rec->set.cgroup) == 0;
		/* A value someone gave it since the grant (the daemon runs) is theirs. */
		if (latact_find(la, tid)) {
			elsewhere = true; /* it stays in its group: a thread at a time */
			continue;
		}
		/* A task with a record of its own was given back as itself. */
		if (sched && sched_same(&cur, &rec->set) && !has_record(w, pid, tid))
			given = give(w, rec, tid, pid, true, false);
		w->given += given;
		if (!in_cls) {
			elsewhere |= strcmp(cur.cgroup, rec->prev.cgroup) != 0;
		} else if ((arr = util_grow(in, &cap, nin, sizeof(*arr)))) {
			in = arr;
			in[nin++] = tid;
			counted += given;
		}
	}
	procfs_threads_close(&it);
	if (nin && !elsewhere && give_process_cgroup(w, rec, pid) == 0) {
		w->given += (unsigned)(nin - counted);
		la->cnt.restored += nin;
	} else {
		/* Threads someone else put in another group stay there: a thread at a time. */
		for (size_t k = 0; k < nin; k++)
			give(w, rec, in[k], pid, false, true);
	}
	free(in);
}

/*
 * A record for process tgid, which has a task left in class v that no walk reached (its
 * creator exited, and it was handed to another parent): one of its own, else one of
 * that value whose written knobs it holds exactly, else any of that value.
 */
static const struct lat_entry *class_rec(const struct walk *w, int v, pid_t tgid,
					 const struct lat_state *cur)
{
	const struct lat_entry *any = NULL;
	int i = rec_of(w, tgid);

	if (i >= 0)
		return w->recs[i];
	for (size_t k = 0; k < w->nrecs; k++) {
		const struct lat_entry *e = w->recs[k];

		if (e->value != v || !e->set.cgroup[0])
			continue;
		if (sched_same(cur, &e->set))
			return e;
		any = any ? any : e;
	}
	return any;
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

static size_t lower(const pid_t *arr, size_t n, pid_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (arr[mid] < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * The tasks still in a class of rqbalance's (no walk found them from a record), a
 * process at a time: its first task listed picks the record.
 */
static void give_class_members(struct walk *w)
{
	struct latact *la = w->la;

	for (int v = LAT_MIN; v <= LAT_MAX; v++) {
		pid_t *tids = NULL, *done;
		size_t n = 0, ndone = 0;

		if (!la->cls.on || !la->cls.made[v - LAT_MIN] ||
		    latact_class_members(la, v, &tids, &n) < 0)
			continue;
		done = calloc(n ? n : 1, sizeof(*done));
		for (size_t k = 0; done && k < n; k++) {
			const struct lat_entry *rec;
			struct lat_state cur;
			struct act_who who;
			size_t pos;

			if (la->ops->who(tids[k], &who) < 0 ||
			    bsearch(&who.tgid, done, ndone, sizeof(*done), cmp_pid) ||
			    latact_read(la, tids[k], &cur) < 0)
				continue;
			pos = lower(done, ndone, who.tgid);
			memmove(done + pos + 1, done + pos, (ndone++ - pos) * sizeof(*done));
			done[pos] = who.tgid;
			rec = class_rec(w, v, who.tgid, &cur);
			if (rec && strcmp(cur.cgroup, rec->set.cgroup) == 0)
				give_process(w, who.tgid, rec);
		}
		free(done);
		free(tids);
	}
}

/* The walk over recs: 0, or -ENOMEM. */
static int walk_init(struct walk *w, struct latact *la, const struct lat_entry *const *recs,
		     size_t n)
{
	*w = (struct walk){ .la = la };
	w->recs = calloc(n ? n : 1, sizeof(*w->recs));
	if (!w->recs)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (recs[i]->task.tid > 0 && recs[i]->tgid > 0)
			w->recs[w->nrecs++] = recs[i];
	qsort(w->recs, w->nrecs, sizeof(*w->recs), cmp_rec);
	return 0;
}

/*
 * Every process read once, each given back what it holds of the record that stands
 * for it (resolve); with w->only, only where that is w->only.
 */
static void walk_processes(struct walk *w)
{
	struct node **stack;

	if (!w->nrecs || read_nodes(w) < 0 || !w->nn || !(stack = calloc(w->nn, sizeof(*stack))))
		return;
	for (size_t i = 0; i < w->nn; i++) {
		int rec = resolve(w, &w->nodes[i], stack);

		if (rec >= 0 && (!w->only || w->recs[rec] == w->only))
			give_process(w, w->nodes[i].pid, w->recs[rec]);
	}
	free(stack);
}

static void walk_fini(struct walk *w, const char *why, uint64_t t0)
{
	if (w->given)
		log_notice("latency: %s: %u task%s made by tasks rqbalance gave a value (threads, "
			   "children) held it: given back (%zu processes read in %llu ms)", why,
			   w->given, w->given == 1 ? "" : "s", w->nn,
			   (unsigned long long)((util_now_ns() - t0) / 1000000));
	free(w->nodes);
	free(w->recs);
}

void latact_give_back_offspring(struct latact *la, const struct lat_entry *const *recs,
				size_t n, const char *why)
{
	struct walk w;
	uint64_t t0 = util_now_ns();

	if (!la->journal)
		return; /* a driver that writes nothing kept no records */
	if (walk_init(&w, la, recs, n) < 0)
		return;
	walk_processes(&w);
	give_class_members(&w);
	walk_fini(&w, why, t0);
}

int latact_owner(const struct latact *la, pid_t pid, uid_t *ret)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%d", la->proc_root, (int)pid);
	if (stat(path, &st) < 0)
		return -errno;
	*ret = st.st_uid;
	return 0;
}

/*
 * Whether a process of uid that started at start (not under any front) may hold what
 * a grant that goes on gave: one of that owner's, of the same value, started no later.
 * Its copies are that grant's to give back, when it ends.
 */
static bool other_grants(const struct latact_front *live, size_t nlive, uid_t uid, int v,
			 uint64_t start)
{
	for (size_t i = 0; i < nlive; i++)
		if (live[i].uid == uid && live[i].rec->value == v &&
		    live[i].rec->task.start_time <= start)
			return true;
	return false;
}

/* The start time of process pid, from the walk where it was read. */
static int start_of(struct walk *w, pid_t pid, int *ret_rec, uint64_t *ret)
{
	const struct node *n = node_of(w, pid);
	struct parse_stat_line l;

	*ret_rec = n && n->rec != -2 ? n->rec : -1;
	if (n) {
		*ret = n->start;
		return 0;
	}
	if (procfs_stat(w->la->proc_root, pid, pid, &l) < 0)
		return -ESRCH;
	*ret = l.start_time;
	return 0;
}

/*
 * The processes in the grant's class that no walk from a front reached (their creator
 * exited: they were handed to another parent), where each is the front's owner's,
 * started at or after the front, and no grant that goes on may have made it; a
 * process at a time (cgroup.procs: a user's 10,000 threads in the class are not read
 * one by one to find their process). give_process then gives back only the threads
 * that hold exactly what the grant wrote.
 */
static void give_grant_class(struct walk *w, const struct latact_front *end,
			     const struct latact_front *live, size_t nlive)
{
	struct latact *la = w->la;
	const struct lat_entry *rec = end->rec;
	int v = rec->value;
	pid_t *pids = NULL;
	size_t n = 0;

	if (!la->cls.on || !rec->set.cgroup[0] || v < LAT_MIN || v > LAT_MAX ||
	    !la->cls.made[v - LAT_MIN] || latact_class_procs(la, v, &pids, &n) < 0)
		return;
	for (size_t k = 0; k < n; k++) {
		uint64_t start;
		uid_t uid;
		int r;

		/* One a front stands for was given back by the walk, or is another grant's. */
		if (start_of(w, pids[k], &r, &start) < 0 || r >= 0 ||
		    start < rec->task.start_time || latact_owner(la, pids[k], &uid) < 0 ||
		    uid != end->uid || other_grants(live, nlive, uid, v, start))
			continue;
		give_process(w, pids[k], rec);
	}
	free(pids);
}

void latact_give_back_grant(struct latact *la, const struct latact_front *end,
			    const struct latact_front *live, size_t nlive)
{
	const struct lat_entry **recs;
	uint64_t t0 = util_now_ns();
	struct walk w;
	int r;

	if (!la->journal)
		return;
	recs = calloc(nlive + 1, sizeof(*recs));
	if (!recs)
		return;
	recs[0] = end->rec;
	for (size_t i = 0; i < nlive; i++)
		recs[i + 1] = live[i].rec;
	r = walk_init(&w, la, recs, nlive + 1);
	free(recs);
	if (r < 0)
		return;
	w.only = end->rec;
	walk_processes(&w);
	give_grant_class(&w, end, live, nlive);
	walk_fini(&w, "the end of a grant", t0);
}
