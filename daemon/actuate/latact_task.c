/*
 * Actuate stage, latency: tasks. It changes a task's policy, slice, uclamp or class
 * cgroup only after checking its identity (pid and start time) and journalling, and
 * gives back only what still holds the value rqbalance wrote.
 */
#include <errno.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "actuate/latact.h"
#include "actuate/latact_int.h"
#include "actuate/latknob.h"
#include "util/log.h"
#include "util/schedattr.h"
#include "util/sorted.h"
#include "util/util.h"

static bool policy_is_rt(int policy)
{
	return policy == SCHED_FIFO || policy == SCHED_RR || policy == 6;
}

/* What task tid has of the sched knobs (sched_getattr), its cgroup left empty. */
static int read_attr(const struct latact *la, pid_t tid, struct lat_state *ret)
{
	struct rqb_sched_attr a;
	int r = la->ops->get_attr(tid, &a);

	if (r < 0)
		return r;
	latknob_init(ret);
	latknob_from_attr(la, &a, ret);
	return 0;
}

int latact_read(const struct latact *la, pid_t tid, struct lat_state *ret)
{
	struct lat_state s;
	int r = read_attr(la, tid, &s);

	if (r < 0)
		return r;
	r = latact_read_task_cgroup(la, tid, s.cgroup, sizeof(s.cgroup));
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	*ret = s;
	return 0;
}

void latact_hand(struct latact *la, const struct lat_thread *th, size_t n)
{
	la->hand = th;
	la->nhand = th ? n : 0;
	la->hand_next = 0;
	/*
	 * A move the worker makes may change a cgroup after the judge read it: only where
	 * none is queued or unseen are the cgroups read as good as read now (nothing is
	 * queued between the judge and here: the loop does both in one turn).
	 */
	la->hand_cg = th && latact_moves_idle(la);
}

/* The thread handed for task tid of start_time (latact_hand); NULL: none. */
static const struct lat_thread *handed(struct latact *la, pid_t tid, uint64_t start_time)
{
	for (size_t k = 0; k < la->nhand; k++) {
		size_t i = (la->hand_next + k) % la->nhand;

		if (la->hand[i].tid == tid && la->hand[i].start_time == start_time) {
			la->hand_next = i + 1;
			return &la->hand[i];
		}
	}
	return NULL;
}

/*
 * Opens task rq->tid: from the pidfd its judge opened (h), whose start time read after
 * proved it the task of rq->start_time, else as any task is opened (ops->open).
 */
static int task_open(struct latact *la, const struct lat_req *rq, const struct lat_thread *h,
		     struct act_task *ret)
{
	if (h && h->pidfd >= 0 && la->ops->adopt)
		return la->ops->adopt(h->pidfd, rq->tid, rq->start_time, ret);
	return la->ops->open(rq->tid, rq->tgid, rq->start_time, ret);
}

/*
 * Writes every knob of want (latknob.h) to t in one call: the driver's checked write
 * (act.h), -ESTALE where it may have reached a task that took t's number.
 */
int latact_write_sched(const struct latact *la, const struct act_task *t,
		       const struct lat_state *want)
{
	struct rqb_sched_attr a = { .size = sizeof(a) };

	latknob_to_attr(la, want, &a);
	return la->ops->set_attr(t, &a);
}

/* latact_write_sched, and what reached a task that took t's number undone: -ESRCH. */
static int write_sched(struct latact *la, const struct act_task *t, const struct lat_state *want)
{
	int r = latact_write_sched(la, t, want);

	if (r == -ESTALE) {
		latact_undo_sched(la, t, want);
		r = -ESRCH;
	}
	return r;
}

/*
 * The decide step of a value's knobs: what value v asks of a task that had prev
 * (*ret_set, what rqbalance gives), and what is written (*ret_want): the same but for
 * the knobs in left, someone else's, which keep what the task holds now (cur). Both
 * keep prev's cgroup. A value not handed down (no_inherit) also sets the kernel's
 * reset on fork, whatever [latency] says: the kernel then gives a child no negative
 * nice, no real-time policy and no slice of it before the daemon reads the fork. Pure.
 */
static void decide_knobs(const struct latact *la, int v, bool no_inherit,
			 const struct lat_state *prev, unsigned left, const struct lat_state *cur,
			 struct lat_state *ret_set, struct lat_state *ret_want)
{
	struct lat_knobs k;

	latency_map(&la->lc, v, &k);
	if (no_inherit)
		k.reset_on_fork = 1;
	*ret_set = *prev;
	latknob_want(la, v, &k, ret_set);
	*ret_want = *ret_set;
	latknob_copy(left, cur, ret_want);
}

/* The class cgroup value v asks of task tid (of tgid) that was in prev; prev's if none. */
static void class_for(struct latact *la, int v, pid_t tid, pid_t tgid, const char *prev,
		      char *ret, size_t size)
{
	struct lat_knobs k;

	latency_map(&la->lc, v, &k);
	/* cgroup2 moves whole processes: a lone thread keeps its process's group. */
	if (!k.use_class || !la->cls.on || (la->cls.v2 && tid != tgid) ||
	    latact_class_ensure(la, v, ret, size) < 0)
		snprintf(ret, size, "%s", prev);
}

/* key: a pid_t; elem: one of la->e, which are sorted by tid, one entry each. */
static int cmp_tid(const void *key, const void *elem)
{
	pid_t k = *(const pid_t *)key, t = (*(struct lat_entry *const *)elem)->task.tid;

	return (k > t) - (k < t);
}

static size_t find_index(const struct latact *la, pid_t tid, bool *found)
{
	size_t i = sorted_lower(la->e, la->n, sizeof(*la->e), &tid, cmp_tid);

	*found = i < la->n && la->e[i]->task.tid == tid;
	return i;
}

const struct lat_entry *latact_find(const struct latact *la, pid_t tid)
{
	bool found;
	size_t i = find_index(la, tid, &found);

	return found ? la->e[i] : NULL;
}

size_t latact_ntasks(const struct latact *la)
{
	return la->n;
}

const struct lat_entry *latact_task_nth(const struct latact *la, size_t k)
{
	return k < la->n ? la->e[k] : NULL;
}

struct lat_entry *latact_entry_of(struct latact *la, pid_t tid)
{
	bool found;
	size_t i = find_index(la, tid, &found);

	return found ? la->e[i] : NULL;
}

static struct lat_entry *entry_add(struct latact *la, const struct lat_entry *e)
{
	bool found;
	size_t i = find_index(la, e->task.tid, &found);
	struct lat_entry **arr, *ne;

	if (found) {
		*la->e[i] = *e;
		goto told;
	}
	arr = util_grow(la->e, &la->cap, la->n, sizeof(*arr));
	if (!arr)
		return NULL;
	la->e = arr;
	ne = malloc(sizeof(*ne));
	if (!ne)
		return NULL;
	*ne = *e;
	if (sorted_insert(la->e, &la->n, la->cap, sizeof(*la->e), i, &ne) < 0) {
		free(ne);
		return NULL;
	}
told:
	if (la->on_task)
		la->on_task(la->on_task_ctx, e->task.tid, e->value, true);
	return la->e[i];
}

static void entry_del(struct latact *la, pid_t tid)
{
	bool found;
	size_t i = find_index(la, tid, &found);

	if (!found)
		return;
	la->ops->close(&la->e[i]->task);
	if (la->on_task)
		la->on_task(la->on_task_ctx, tid, 0, false);
	free(la->e[i]);
	sorted_remove(la->e, &la->n, sizeof(*la->e), i);
	la->e = util_shrink(la->e, &la->cap, la->n, sizeof(*la->e));
}

/*
 * Writes want over cur to task t: the sched knobs in one call, then the cgroup. On
 * cgroup2 a move takes the whole process: only its first thread (tid == tgid) moves
 * it. With async (the move may wait) the move goes to the worker where one runs, and
 * *ret_queued says so.
 */
static int write_state(struct latact *la, const struct act_task *t, pid_t tgid,
		       const struct lat_state *cur, const struct lat_state *want, bool async,
		       bool *ret_queued, bool *ret_moved)
{
	int r = 0;

	*ret_queued = false;
	*ret_moved = false;
	/* A task that made itself real-time since: its policy and parameters are its own. */
	if (latknob_differ(cur, want) && !policy_is_rt(cur->policy))
		r = write_sched(la, t, want);
	if (r == 0 && la->cls.on && want->cgroup[0] && strcmp(cur->cgroup, want->cgroup) != 0 &&
	    (!la->cls.v2 || t->tid == tgid)) {
		if (async && latact_move_async(la, want->cgroup, t->tid, tgid, t->start_time) == 0) {
			*ret_queued = true;
		} else {
			r = latact_cls_attach(la, want->cgroup, t);
			*ret_moved = true;
		}
		/* On cgroup2 it took the process's other threads along (v1 moves one). */
		if (la->cls.v2)
			la->hand_cg = false;
	}
	return r;
}

/* Whether what was left to others is said in the log: a process once, not each thread. */
static bool cg_says(const struct latact *la, const struct lat_entry *e)
{
	const struct lat_entry *lead = latact_find(la, e->tgid);

	return e->task.tid == e->tgid || !lead || lead->task.tid == e->task.tid;
}

/*
 * Whether the task's cgroup is rqbalance's to move (into e->cg and e->cg_left): where
 * rqbalance put it (old), where the kernel put it after its creator (from), be it the
 * creator's class or, for a task made before the creator's move landed, where the
 * creator was before it, or, for a first value, a cgroup rqbalance may move a task out
 * of (the top, a class, [latency] move_from). Said once, when it stops being so.
 */
static void cg_decide(struct latact *la, const struct lat_entry *old,
		      const struct lat_entry *from, const struct lat_state *cur, struct lat_entry *e)
{
	const struct lat_entry *held = old ? old : from;
	struct lat_cg_view v = { .cur = cur->cgroup };

	e->cg = LAT_CG_OURS;
	e->cg_left[0] = '\0';
	if (!la->cls.on)
		return;
	if (held && held->cg != LAT_CG_OURS) {
		/* Still left, or a new task of a creator whose cgroup was left: no new word. */
		e->cg = held->cg;
	} else {
		v.held = held ? held->set.cgroup : NULL;
		/* A new task made before its creator's move into a class landed. */
		v.held_before = !old && from ? from->prev.cgroup : NULL;
		v.movable = !held && latact_cls_movable(la, cur->cgroup);
		e->cg = latency_cg_decide(&v);
		if (e->cg != LAT_CG_OURS && cg_says(la, e))
			log_notice("latency: task %d is in cgroup \"%s\": %s", (int)e->task.tid,
				   cur->cgroup, latency_cg_why(e->cg));
	}
	if (e->cg != LAT_CG_OURS)
		snprintf(e->cg_left, sizeof(e->cg_left), "%s", cur->cgroup);
}

/* Says once, for a process, which knobs of task e someone else changed (newly). */
static void left_says(const struct latact *la, const struct lat_entry *e, unsigned newly)
{
	char names[64];

	if (!newly || !cg_says(la, e))
		return;
	latknob_names(newly, names, sizeof(names));
	log_notice("latency: task %d: someone else changed its %s since rqbalance set it: "
		   "left as it is", (int)e->task.tid, names);
}

/*
 * Which knobs of the task are someone else's (into e->left): those left before (old),
 * those that differ from what rqbalance set (old) or, for a task that inherited them,
 * the creator's left ones and the nice and policy the kernel gave it that differ from
 * what rqbalance set on the creator (the only knobs every kernel passes on at fork),
 * unless they are what the creator had before rqbalance: a task made before the
 * creator's change landed was made with those, by no one's choice.
 */
static unsigned knobs_left(const struct lat_entry *old, const struct lat_entry *from,
			   const struct lat_state *cur)
{
	if (old)
		return old->left | latknob_differ(cur, &old->set);
	if (from)
		return from->left | (latknob_differ(cur, &from->set) &
				     latknob_differ(cur, &from->prev) & (LAT_K_POLICY | LAT_K_NICE));
	return 0;
}

/*
 * What task tid has now; a real-time task is refused unless rqbalance manages it
 * already. Its cgroup is the one its judge read with the rest (h), where one did and
 * no move was made since, so that a request reads each thread's /proc files once.
 */
static int task_read(struct latact *la, pid_t tid, bool managed, const struct lat_thread *h,
		     struct lat_state *cur, const char **ret_why)
{
	bool given = h && h->has_cgroup && la->hand_cg;
	int r = given ? read_attr(la, tid, cur) : latact_read(la, tid, cur);

	if (r == 0 && given && la->cls.on)
		snprintf(cur->cgroup, sizeof(cur->cgroup), "%s", h->cgroup);

	if (r == 0 && policy_is_rt(cur->policy) && !managed) {
		*ret_why = "the task has a real-time policy";
		r = -EPERM;
	}
	return r;
}

/*
 * What e will hold, and *want what to write: what it had before rqbalance, the
 * value's knobs but those left to others (which keep what they have now, cur), the
 * task it inherited from and since when.
 */
static void task_decide(struct latact *la, const struct lat_req *rq, const struct lat_entry *old,
			const struct lat_entry *from, const struct lat_state *cur,
			struct lat_entry *e, struct lat_state *want)
{
	e->prev = old ? old->prev : from ? from->prev : *cur;
	cg_decide(la, old, from, cur, e);
	e->left = knobs_left(old, from, cur);
	if (old)
		left_says(la, e, e->left & ~old->left);
	/* Knobs left to others keep what they have; set keeps what rqbalance would give. */
	e->no_inherit = rq->no_inherit;
	decide_knobs(la, rq->value, rq->no_inherit, &e->prev, e->left, cur, &e->set, want);
	class_for(la, rq->value, rq->tid, rq->tgid, e->prev.cgroup, want->cgroup,
		  sizeof(want->cgroup));
	/* A raise's class below a parent must not weigh more than the task's own nice. */
	if (latency_class_gains(rq->value, e->left & LAT_K_NICE ? cur->nice : e->prev.nice,
			    la->cls.root_shares))
		snprintf(want->cgroup, sizeof(want->cgroup), "%s", e->prev.cgroup);
	/* A cgroup left to others stays as it is, and is not rqbalance's to give back. */
	if (e->cg != LAT_CG_OURS)
		snprintf(want->cgroup, sizeof(want->cgroup), "%s", cur->cgroup);
	snprintf(e->set.cgroup, sizeof(e->set.cgroup), "%s",
		 e->cg != LAT_CG_OURS ? "" : want->cgroup);
	e->from_tid = from ? from->task.tid : old && old->value == rq->value ? old->from_tid : 0;
	e->since = old && old->value == rq->value ? old->since : (int64_t)time(NULL);
}

/*
 * Journal, write, read back: e->set becomes what the task has now. 0, or -errno with
 * *ret_why (-ESRCH: it exited meanwhile, as short tasks do: counted as gone, and the
 * record of a task not managed before is closed).
 */
static int task_write(struct latact *la, const struct lat_req *rq, bool was_managed,
		      const struct lat_state *cur, const struct lat_state *want,
		      struct lat_entry *e, const char **ret_why)
{
	struct lat_state mapped;
	bool queued, moved;
	int r = latact_journal_task(la, e);

	if (r < 0) {
		*ret_why = strerror(-r);
		la->cnt.errors++;
		return r;
	}
	r = write_state(la, &e->task, rq->tgid, cur, want, rq->async_move, &queued, &moved);
	mapped = e->set;
	/*
	 * The read-back checks what the kernel made of the write: the sched knobs always
	 * (sched_getattr), the cgroup only where it was moved; one not moved is as just read.
	 */
	if (r == 0)
		r = moved ? latact_read(la, rq->tid, &e->set) : read_attr(la, rq->tid, &e->set);
	if (r == 0 && !moved)
		snprintf(e->set.cgroup, sizeof(e->set.cgroup), "%s", cur->cgroup);
	/* A queued move is recorded as made; latact_moves_done corrects one that failed. */
	if (r == 0 && queued)
		snprintf(e->set.cgroup, sizeof(e->set.cgroup), "%s", want->cgroup);
	if (r == 0 && e->cg != LAT_CG_OURS)
		e->set.cgroup[0] = '\0';
	latknob_copy(e->left, &mapped, &e->set);
	/* The kernel made something else of a knob: the journal says what the task holds. */
	if (r == 0 && (latknob_differ(&e->set, &mapped) || strcmp(e->set.cgroup, mapped.cgroup) != 0) &&
	    latact_journal_task(la, e) < 0)
		log_warn("latency: cannot journal what task %d holds after the write", (int)rq->tid);
	if (r == 0)
		r = la->ops->alive(&e->task);
	if (r == -ESRCH) {
		*ret_why = "the task exited";
		la->cnt.gone++;
		if (!was_managed) {
			latact_journal_untask(la, rq->tid, rq->start_time);
			latact_compact(la);
		}
	} else if (r < 0) {
		*ret_why = strerror(-r);
		la->cnt.errors++;
	}
	return r;
}

int latact_task(struct latact *la, const struct lat_req *rq, const struct lat_entry *from,
		const char **ret_why)
{
	const struct lat_entry *old;
	struct lat_entry e = { .tgid = rq->tgid, .value = rq->value }, fr;
	const struct lat_thread *h = handed(la, rq->tid, rq->start_time);
	struct lat_state cur, want;
	int r;

	/*
	 * Its cgroup is read below: a move of it still queued ends first (on cgroup2 its
	 * process's, which takes its threads along).
	 */
	if (latact_move_pending(la, rq->tid) ||
	    (la->cls.v2 && rq->tgid && rq->tgid != rq->tid && latact_move_pending(la, rq->tgid))) {
		latact_moves_wait(la);
		la->hand_cg = false;
	}
	old = latact_find(la, rq->tid);
	*ret_why = NULL;
	snprintf(e.source, sizeof(e.source), "%s", rq->source ? rq->source : "");
	/* from may be an entry, which dropping it below frees. */
	if (from) {
		fr = *from;
		from = &fr;
	}
	if (old && old->task.start_time != rq->start_time) {
		latact_task_gone(la, rq->tid); /* the pid was reused */
		old = NULL;
	}
	r = old ? 0 : task_open(la, rq, h, &e.task);
	if (r < 0) {
		*ret_why = r == -ESRCH ? "no such task (or its pid was reused)" : strerror(-r);
		return r;
	}
	if (old)
		e.task = old->task;
	r = task_read(la, rq->tid, old != NULL, h, &cur, ret_why);
	if (r == 0) {
		task_decide(la, rq, old, from, &cur, &e, &want);
		r = task_write(la, rq, old != NULL, &cur, &want, &e, ret_why);
	}
	/*
	 * As act.c: kept only where the journal holds it. Without a journal (the driver
	 * writes nothing) the read-back shows what the task already had: the manager is
	 * not told it is managed, and nothing is counted as applied.
	 */
	if (r == 0 && la->journal && !entry_add(la, &e))
		r = -ENOMEM;
	if (r == 0 && la->journal) {
		la->cnt.applied++;
		latact_compact(la);
		return 0;
	}
	if (!old)
		la->ops->close(&e.task);
	return r;
}

/*
 * The decide step of a give-back: what a task that holds cur gets back of e's knobs
 * (*ret: prev's where still as rqbalance set it, set's or was's where not NULL, and
 * not left to others; cur's elsewhere). Returns the knobs found someone else's. Pure.
 */
static unsigned restore_knobs(const struct lat_entry *e, const struct lat_state *cur,
			      const struct lat_state *was, struct lat_state *ret)
{
	unsigned theirs = latknob_differ(cur, &e->set) & (was ? latknob_differ(cur, was) : ~0u);

	*ret = *cur;
	latknob_copy(~(theirs | e->left), &e->prev, ret);
	return theirs;
}

void latact_decide_knobs(const struct latact *la, int v, const struct lat_entry *old,
			 const struct lat_state *cur, struct lat_state *ret)
{
	struct lat_state set;

	if (v == LAT_NONE && old)
		restore_knobs(old, cur, NULL, ret);
	else if (v == LAT_NONE)
		*ret = *cur;
	else
		decide_knobs(la, v, old && old->no_inherit, old ? &old->prev : cur,
			     knobs_left(old, NULL, cur), cur, &set, ret);
}

/* Whether the task's cgroup cur is one rqbalance put it in: set's, or was's. */
static bool cgroup_ours(const char *cur, const struct lat_entry *e, const struct lat_state *was)
{
	return strcmp(cur, e->set.cgroup) == 0 ||
	       (was && was->cgroup[0] && strcmp(cur, was->cgroup) == 0);
}

void latact_restore_entry(struct latact *la, const struct lat_entry *e)
{
	latact_restore_crashed(la, e, NULL);
}

/* Gives back each knob that is still what rqbalance set (set, or was where not NULL). */
void latact_restore_crashed(struct latact *la, const struct lat_entry *e,
			    const struct lat_state *was)
{
	struct lat_state cur, want;
	pid_t tid = e->task.tid;
	unsigned theirs;
	bool queued, moved;

	if (latact_move_pending(la, tid))
		latact_moves_wait(la);
	if (la->ops->alive(&e->task) < 0 || latact_read(la, tid, &cur) < 0) {
		la->cnt.gone++;
		return;
	}
	theirs = restore_knobs(e, &cur, was, &want);
	/* A cgroup left to others (set.cgroup "") is theirs: it stays where it is. */
	if (cgroup_ours(cur.cgroup, e, was))
		snprintf(want.cgroup, sizeof(want.cgroup), "%s", e->prev.cgroup);
	if (theirs || (e->set.cgroup[0] && !cgroup_ours(cur.cgroup, e, was)))
		la->cnt.left_alone++;
	if (write_state(la, &e->task, e->tgid, &cur, &want, false, &queued, &moved) == 0) {
		if (latknob_differ(&cur, &want) || strcmp(cur.cgroup, want.cgroup) != 0)
			la->cnt.restored++;
	} else if (want.cgroup[0] && strcmp(cur.cgroup, want.cgroup) != 0 &&
		   latact_cls_attach(la, "/", &e->task) == 0) {
		log_warn("latency: task %d: cgroup \"%s\" is gone; moved to /", (int)tid,
			 want.cgroup);
	} else {
		la->cnt.errors++;
	}
	if (la->ops->alive(&e->task) < 0)
		log_debug("latency: task %d exited while being restored", (int)tid);
}

/* Makes the ring hold at least cap give-backs, the ones it has kept in order. */
int latact_given_reserve(struct latact *la, size_t cap)
{
	struct lat_entry *g;

	if (la->given && la->given_cap >= cap)
		return 0;
	g = calloc(cap, sizeof(*g));
	if (!g)
		return -ENOMEM;
	for (size_t k = 0; k < la->ngiven; k++)
		g[k] = *latact_given_nth(la, k);
	free(la->given);
	la->given = g;
	la->given_cap = cap;
	la->given_next = la->ngiven;
	return 0;
}

void latact_given_note(struct latact *la, const struct lat_entry *e)
{
	if (!la->given && latact_given_reserve(la, LATACT_GIVEN_MAX) < 0)
		return; /* its children's inheritance goes unnoticed: logged by none */
	if (la->given_all && la->ngiven == la->given_cap)
		latact_given_reserve(la, 2 * la->given_cap);
	la->given[la->given_next] = *e;
	la->given[la->given_next].task.pidfd = -1; /* closed with e */
	la->given_next = (la->given_next + 1) % la->given_cap;
	if (la->ngiven < la->given_cap)
		la->ngiven++;
}

size_t latact_given_count(const struct latact *la)
{
	return la->ngiven;
}

const struct lat_entry *latact_given_nth(const struct latact *la, size_t k)
{
	return &la->given[(la->given_next + la->given_cap - la->ngiven + k) % la->given_cap];
}

const struct lat_entry *latact_given_find(const struct latact *la, pid_t tid)
{
	/* The newest first: a tid given back twice is the later task's. */
	for (size_t k = la->ngiven; k > 0; k--) {
		const struct lat_entry *g = latact_given_nth(la, k - 1);

		if (g->task.tid == tid)
			return g;
	}
	return NULL;
}

void latact_given_forget(struct latact *la, pid_t tid)
{
	for (size_t i = 0; i < la->ngiven; i++)
		if (la->given[i].task.tid == tid)
			la->given[i].task.tid = 0;
}

/*
 * Whether a task created by the one e was about holds any knob of what rqbalance set
 * there (where that differs from what e had before). Knob by knob, not all of them: a
 * fork that copied the nice before the give-back may take its cgroup after the
 * creator was moved back (the kernel copies the nice early in a fork, the cgroup
 * late), and then has rqbalance's nice in the creator's own cgroup.
 */
static bool holds_any(const struct lat_state *cur, const struct lat_entry *e)
{
	unsigned set = ~latknob_differ(cur, &e->set) & latknob_differ(&e->prev, &e->set) & ~e->left;

	return set || (e->set.cgroup[0] && strcmp(e->set.cgroup, e->prev.cgroup) != 0 &&
		       strcmp(cur->cgroup, e->set.cgroup) == 0);
}

int latact_give_back_inherited(struct latact *la, pid_t tid, pid_t tgid, uint64_t start_time,
			       const struct lat_entry *from)
{
	struct lat_entry e = *from;
	struct lat_state cur;
	int r;

	if (latact_find(la, tid))
		return 0; /* managed: given back, if at all, as its own */
	r = la->ops->open(tid, tgid, start_time, &e.task);
	if (r < 0)
		return r;
	r = latact_read(la, tid, &cur);
	if (r == 0 && !holds_any(&cur, from))
		r = 1; /* not inherited: nothing of rqbalance's */
	if (r == 0) {
		e.tgid = tgid;
		e.from_tid = from->task.tid;
		latact_restore_entry(la, &e);
		latact_given_note(la, &e);
		log_debug("latency: task %d, made by task %d before it was given back, had "
			  "what rqbalance set on it: given back too", (int)tid, (int)from->task.tid);
	}
	la->ops->close(&e.task);
	return r < 0 ? r : r == 0;
}

int latact_task_reset(struct latact *la, pid_t tid, uint64_t start_time)
{
	const struct lat_entry *e = latact_find(la, tid);

	if (!e || (start_time && e->task.start_time != start_time))
		return -ENOENT;
	latact_restore_entry(la, e);
	latact_given_note(la, e);
	latact_journal_untask(la, tid, e->task.start_time);
	entry_del(la, tid);
	latact_compact(la);
	return 0;
}

void latact_task_gone(struct latact *la, pid_t tid)
{
	const struct lat_entry *e = latact_find(la, tid);

	latact_given_forget(la, tid);
	if (!e)
		return;
	latact_journal_untask(la, tid, e->task.start_time);
	entry_del(la, tid);
	la->cnt.gone++;
	latact_compact(la);
}

void latact_check(struct latact *la, pid_t tid)
{
	bool found;
	size_t i = find_index(la, tid, &found);
	struct lat_entry *e;
	struct lat_state cur;
	unsigned newly;

	/* A move still queued is not someone else's: checked once it has ended. */
	if (!found || latact_move_pending(la, tid))
		return;
	e = la->e[i];
	if (latact_read(la, tid, &cur) < 0 || la->ops->alive(&e->task) < 0)
		return;
	newly = latknob_differ(&cur, &e->set) & ~e->left;
	e->left |= newly;
	left_says(la, e, newly);
	if (!la->cls.on || e->cg != LAT_CG_OURS || strcmp(cur.cgroup, e->set.cgroup) == 0)
		return;
	cg_decide(la, e, NULL, &cur, e);
	/* Nothing to give back there: the record says so too, should rqbalance crash. */
	e->set.cgroup[0] = '\0';
	if (latact_journal_task(la, e) < 0)
		la->cnt.errors++;
}

void latact_verify(struct latact *la)
{
	latact_verify_some(la, 0, la->n);
}

size_t latact_verify_some(struct latact *la, size_t from, size_t count)
{
	size_t i = from;

	while (count-- > 0 && la->n) {
		pid_t tid;

		if (i >= la->n)
			i = 0;
		tid = la->e[i]->task.tid;
		if (la->ops->alive(&la->e[i]->task) < 0)
			latact_task_gone(la, tid);
		else
			latact_check(la, tid);
		/* A gone entry's place holds the next one now. */
		if (i < la->n && la->e[i]->task.tid == tid)
			i++;
	}
	return i;
}
