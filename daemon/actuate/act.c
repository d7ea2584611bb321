/*
 * Actuate stage: the only code that changes the system. It journals before it
 * writes, reads back, writes only on difference, restores only values that are still
 * what it set, and sorts errors into transient and permanent. It never decides what
 * to move: that is the plan's.
 */
#include <errno.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>

#include "actuate/act.h"
#include "actuate/journal.h"
#include "rqbalance.h"
#include "util/cpumask.h"
#include "util/log.h"
#include "util/sorted.h"
#include "util/util.h"

/* Compact the journal when it holds this many more lines than live entries. */
#define JOURNAL_SLACK 1024

bool act_error_is_transient(int err)
{
	return err == -EAGAIN || err == -EINTR || err == -EBUSY || err == -ENOMEM;
}

static ssize_t find(const struct act *a, pid_t tid, uint64_t start)
{
	size_t lo = util_pid_lower_bound(a->e, a->n, sizeof(*a->e),
					offsetof(struct act_entry, task.tid), tid);

	for (; lo < a->n && a->e[lo].task.tid == tid; lo++)
		if (a->e[lo].task.start_time == start)
			return (ssize_t)lo;
	return -1;
}

/*
 * A mask written through t's number after t was released (-ESTALE): the task that took
 * the number gets its creator's mask back, where it has exactly the mask written and
 * its creator has not (made from a creator with that mask, it kept what it had).
 */
static void undo_reused(struct act *a, const struct act_task *t, const cpu_set_t *mask)
{
	char text[CPUMASK_STRLEN];
	struct act_task h, c;
	cpu_set_t hm, cm;
	pid_t htgid;
	int r;

	if (act_reuse_find(a->ops, t, false, &h, &htgid, &c) < 0)
		return;
	if (a->ops->get_affinity(&h, &hm) == 0 && CPU_EQUAL(&hm, mask) &&
	    a->ops->get_affinity(&c, &cm) == 0 && !CPU_EQUAL(&cm, mask)) {
		r = a->ops->set_affinity(&h, &cm);
		if (r == 0)
			log_notice("tid %d exited while rqbalance set its affinity, and tid %d "
				   "took its number: given its creator's cpus %s back", (int)t->tid,
				   (int)h.tid, cpumask_format(&cm, text, sizeof(text)));
		else
			log_warn("tid %d exited while rqbalance set its affinity, and tid %d took "
				 "its number: cannot give it its creator's mask back: %s",
				 (int)t->tid, (int)h.tid, strerror(-r));
	}
	a->ops->close(&h);
	a->ops->close(&c);
}

/* Sets t's mask; a task that exited meanwhile is -ESRCH, its number checked (act.h). */
static int set_mask(struct act *a, const struct act_task *t, const cpu_set_t *mask)
{
	int r = a->ops->set_affinity(t, mask);

	if (r == -ESTALE) {
		undo_reused(a, t, mask);
		r = -ESRCH;
	}
	return r;
}

/* The entries are sorted by tid: find() bisects them. */
static int cmp_tid(const void *key, const void *elem)
{
	pid_t k = ((const struct act_entry *)key)->task.tid;
	pid_t t = ((const struct act_entry *)elem)->task.tid;

	return (k > t) - (k < t);
}

/* After any entries of the same tid (its number reused): the older stay first. */
static int insert(struct act *a, const struct act_entry *e)
{
	struct act_entry *arr = util_grow(a->e, &a->cap, a->n, sizeof(*arr));

	if (!arr)
		return -ENOMEM;
	a->e = arr;
	return sorted_add(a->e, &a->n, a->cap, sizeof(*a->e), e, cmp_tid);
}

/* Records what e's task had and was given; with no journal there is nothing to record. */
static int journal_entry(struct act *a, const struct act_entry *e)
{
	struct journal_rec rec = { .tid = e->task.tid, .tgid = e->tgid,
				   .start_time = e->task.start_time, .prev = e->prev, .set = e->set,
				   .since = e->since };

	return a->journal ? journal_set(a->journal, &rec) : 0;
}

static int unjournal(struct act *a, pid_t tid, uint64_t start_time)
{
	return a->journal ? journal_clear(a->journal, tid, start_time) : 0;
}

/* A pinned task's record, as far as what it passed on is concerned. */
struct pin_rec {
	pid_t tid, tgid;
	uint64_t since;          /* clock ticks after boot of the pin; 0 if unknown */
	cpu_set_t prev, set;
};

/* What restore_offspring() hands to each task it finds: the records of one process. */
struct offspring {
	struct act *a;
	const struct pin_rec *r;
	size_t n;
};

static void restore_one(void *ctx, pid_t tid, pid_t tgid, uint64_t start)
{
	struct offspring *o = ctx;
	struct act *a = o->a;
	struct act_task t;
	cpu_set_t cur;

	/* The pinned tasks themselves, and tasks with an entry of their own, are not offspring. */
	for (size_t k = 0; k < o->n; k++)
		if (o->r[k].tid == tid)
			return;
	if (find(a, tid, start) >= 0 || a->ops->open(tid, tgid, start, &t) < 0)
		return;
	if (a->ops->get_affinity(&t, &cur) == 0)
		for (size_t k = 0; k < o->n; k++) {
			const struct pin_rec *r = &o->r[k];

			/* Started since that pin, with exactly its mask: the kernel copied it. */
			if (!r->since || start < r->since || !CPU_EQUAL(&cur, &r->set))
				continue;
			if (set_mask(a, &t, &r->prev) == 0) {
				a->cnt.restores++;
				a->cnt.inherited++;
				log_info("restored tid %d, which inherited the affinity set on tid %d",
					 (int)tid, (int)r->tid);
			}
			break;
		}
	a->ops->close(&t);
}

static int cmp_pin_rec(const void *x, const void *y)
{
	pid_t a = ((const struct pin_rec *)x)->tgid, b = ((const struct pin_rec *)y)->tgid;

	return (a > b) - (a < b);
}

/*
 * Threads and descendant processes that pinned tasks started since their pins
 * inherited rqbalance's mask: give back those that still have exactly that mask. One
 * walk a process, however many of its threads were pinned (r is sorted in place).
 */
static void restore_offspring(struct act *a, struct pin_rec *r, size_t n)
{
	if (!a->ops->offspring || !n)
		return;
	qsort(r, n, sizeof(*r), cmp_pin_rec);
	for (size_t i = 0, j; i < n; i = j) {
		struct offspring o = { a, &r[i], 0 };
		uint64_t since = 0;

		for (j = i; j < n && r[j].tgid == r[i].tgid; j++)
			if (r[j].since && (!since || r[j].since < since))
				since = r[j].since;
		o.n = j - i;
		if (since)
			a->ops->offspring(r[i].tgid, since, restore_one, &o);
	}
}

static struct pin_rec pin_rec_of(const struct act_entry *e)
{
	return (struct pin_rec){ e->task.tid, e->tgid, e->since, e->prev, e->set };
}

/*
 * Forgets entry i: closes it, clears its record and, where passed_on, restores what
 * its task passed on (else the caller does, for many entries at once).
 */
static void remove_at(struct act *a, size_t i, int err, act_dropped_fn dropped, void *ctx,
		      bool passed_on)
{
	struct act_entry e = a->e[i];
	struct pin_rec pr = pin_rec_of(&e);
	int r;

	sorted_remove(a->e, &a->n, sizeof(*a->e), i);
	if (passed_on)
		restore_offspring(a, &pr, 1);
	r = unjournal(a, e.task.tid, e.task.start_time);
	if (r < 0)
		log_warn("journal %s: cannot clear record of tid %d: %s", journal_path(a->journal),
			 (int)e.task.tid, strerror(-r));
	if (dropped)
		dropped(ctx, e.task.tid, e.task.start_time, err);
	a->ops->close(&e.task);
}

static void count_error(struct act *a, int err)
{
	if (act_error_is_transient(err))
		a->cnt.transient++;
	else
		a->cnt.permanent++;
}

/*
 * Gives back prev if the task still has set, or was (NULL: none; a crash's journal: what
 * rqbalance had set before its last record, which the crash may have kept it from
 * writing). Returns 1 if restored, 0 if the task has since chosen otherwise (its
 * choice stands), or -errno.
 */
static int restore(struct act *a, const struct act_task *t, const cpu_set_t *prev,
		   const cpu_set_t *set, const cpu_set_t *was)
{
	char mask[CPUMASK_STRLEN];
	cpu_set_t cur;
	int r = a->ops->get_affinity(t, &cur);

	if (r < 0)
		return r;
	if (!CPU_EQUAL(&cur, set) &&
	    !(was && !CPU_EQUAL(was, prev) && CPU_EQUAL(&cur, was))) {
		a->cnt.left_alone++;
		log_info("tid %d changed its own affinity (now %s): left as it chose", (int)t->tid,
			 cpumask_format(&cur, mask, sizeof(mask)));
		return 0;
	}
	r = set_mask(a, t, prev);
	if (r < 0)
		return r;
	a->cnt.restores++;
	log_info("restored tid %d to cpus %s", (int)t->tid, cpumask_format(prev, mask, sizeof(mask)));
	return 1;
}

/* A previous run's records, replayed: what their tasks passed on is restored after. */
struct replay {
	struct act *a;
	struct pin_rec *r;
	size_t n, cap;
};

static void restore_record(void *ctx, const struct journal_rec *rec)
{
	struct replay *rp = ctx;
	struct act *a = rp->a;
	struct pin_rec *arr;
	struct act_task t;
	int r = a->ops->open(rec->tid, rec->tgid, rec->start_time, &t);

	if (r < 0) {
		a->cnt.gone++;
		log_debug("journal: tid %d is gone", (int)rec->tid);
	} else {
		r = restore(a, &t, &rec->prev, &rec->set, &rec->was);
		if (r < 0) {
			count_error(a, r);
			log_warn("journal: cannot restore tid %d: %s", (int)rec->tid,
				 strerror(-r));
		}
		a->ops->close(&t);
	}
	/* Whatever became of the task, what it passed on may still be there. */
	arr = util_grow(rp->r, &rp->cap, rp->n, sizeof(*arr));
	if (!arr)
		return;
	rp->r = arr;
	rp->r[rp->n++] = (struct pin_rec){ rec->tid, rec->tgid, rec->since, rec->prev, rec->set };
}

int act_init(struct act *a, const struct act_ops *ops, const char *journal_dir)
{
	struct replay rp = { .a = a };
	unsigned bad = 0;
	int r;

	memset(a, 0, sizeof(*a));
	a->ops = ops;
	r = ops->journal(journal_dir, JOURNAL_NAME, &a->journal);
	if (r < 0 || !a->journal)
		return r; /* none kept: no previous run's changes to give back either */
	r = journal_replay(a->journal, restore_record, &rp, &bad);
	if (r < 0)
		log_warn("journal %s: cannot read: %s", journal_path(a->journal), strerror(-r));
	restore_offspring(a, rp.r, rp.n);
	free(rp.r);
	if (a->cnt.restores || a->cnt.left_alone || a->cnt.gone || bad)
		log_notice("journal %s: a previous run left changes: %llu restored, %llu left as "
			   "the task chose, %llu gone, %u malformed line%s skipped",
			   journal_path(a->journal), (unsigned long long)a->cnt.restores,
			   (unsigned long long)a->cnt.left_alone, (unsigned long long)a->cnt.gone,
			   bad, bad == 1 ? "" : "s");
	r = journal_rewrite(a->journal, NULL, 0);
	if (r < 0) {
		log_err("journal %s: cannot start afresh: %s", journal_path(a->journal), strerror(-r));
		journal_close(a->journal);
		a->journal = NULL;
		return r;
	}
	return 0;
}

int act_restore_all(struct act *a)
{
	struct pin_rec *recs = calloc(a->n ? a->n : 1, sizeof(*recs));
	size_t nrecs = 0;
	int restored = 0;

	while (a->n) {
		struct act_entry *e = &a->e[a->n - 1];
		int r = restore(a, &e->task, &e->prev, &e->set, NULL);

		if (r > 0)
			restored++;
		else if (r == -ESRCH)
			a->cnt.gone++;
		else if (r < 0) {
			count_error(a, r);
			log_warn("cannot restore tid %d: %s", (int)e->task.tid, strerror(-r));
		}
		if (recs)
			recs[nrecs++] = pin_rec_of(e);
		remove_at(a, a->n - 1, 0, NULL, NULL, !recs);
	}
	restore_offspring(a, recs, nrecs);
	free(recs);
	return restored;
}

void act_fini(struct act *a)
{
	act_restore_all(a);
	if (a->journal) {
		int r = journal_rewrite(a->journal, NULL, 0);

		if (r < 0)
			log_warn("journal %s: cannot empty: %s", journal_path(a->journal), strerror(-r));
		journal_close(a->journal);
	}
	free(a->e);
	a->e = NULL;
	a->n = a->cap = 0;
	a->journal = NULL;
}

/* Narrows a task to the plan's mask: journal first, write only if different, read back. */
static int pin(struct act *a, const struct plan_action *pa)
{
	ssize_t i = find(a, pa->tid, pa->start_time);
	struct act_entry e = { 0 };
	cpu_set_t cur;
	int r;

	if (i >= 0)
		e = a->e[i];
	else if ((r = a->ops->open(pa->tid, pa->tgid, pa->start_time, &e.task)) < 0)
		return r;
	r = a->ops->get_affinity(&e.task, &cur);
	if (r < 0 || CPU_EQUAL(&cur, &pa->mask))
		goto out;
	if (i < 0) {
		e.prev = cur;
		e.since = act_boot_ticks();
	}
	e.tgid = pa->tgid;
	e.set = pa->mask;
	r = journal_entry(a, &e);
	if (r < 0)
		goto out; /* nothing written: what the journal held before still holds */
	r = set_mask(a, &e.task, &pa->mask);
	if (r < 0) {
		/* Not changed: put the journal back in step with what the task still has. */
		if (i < 0)
			unjournal(a, e.task.tid, e.task.start_time);
		else
			journal_entry(a, &a->e[i]);
		goto out;
	}
	/* The kernel may narrow the mask further (cpusets): keep what it holds now. */
	if (a->ops->get_affinity(&e.task, &cur) == 0 && !CPU_EQUAL(&cur, &e.set)) {
		e.set = cur;
		if (journal_entry(a, &e) < 0)
			log_warn("journal %s: cannot record what tid %d holds after the write",
				 journal_path(a->journal), (int)e.task.tid);
	}
	a->cnt.moves++;
	/*
	 * An entry is kept only where the journal holds it, so that no crash can lose
	 * it. Without a journal (the driver writes nothing) the move is counted, not kept.
	 */
	if (!a->journal)
		goto out;
	if (i >= 0) {
		a->e[i] = e;
		return 0;
	}
	r = insert(a, &e);
	if (r == 0)
		return 0;
	/* A change that cannot be tracked must not stand: undo it. */
	set_mask(a, &e.task, &e.prev);
	unjournal(a, e.task.tid, e.task.start_time);
out:
	if (i < 0)
		a->ops->close(&e.task);
	return r;
}

static int unpin(struct act *a, const struct plan_action *pa)
{
	ssize_t i = find(a, pa->tid, pa->start_time);
	int r;

	if (i < 0)
		return 0; /* never written (it had the mask already), or not kept */
	r = restore(a, &a->e[i].task, &a->e[i].prev, &a->e[i].set, NULL);
	remove_at(a, (size_t)i, 0, NULL, NULL, true);
	return r < 0 ? r : 0;
}

static void compact(struct act *a)
{
	struct journal_rec *recs;
	int r;

	if (!a->journal || journal_lines(a->journal) < a->n + JOURNAL_SLACK)
		return;
	recs = calloc(a->n ? a->n : 1, sizeof(*recs));
	if (!recs)
		return;
	for (size_t i = 0; i < a->n; i++)
		recs[i] = (struct journal_rec){ .tid = a->e[i].task.tid, .tgid = a->e[i].tgid,
						.start_time = a->e[i].task.start_time,
						.prev = a->e[i].prev, .set = a->e[i].set,
						.since = a->e[i].since };
	r = journal_rewrite(a->journal, recs, a->n);
	if (r < 0)
		log_warn("journal %s: cannot compact: %s", journal_path(a->journal), strerror(-r));
	free(recs);
}

int act_apply(struct act *a, const struct plan *p, act_dropped_fn dropped, void *ctx)
{
	int done = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct plan_action *pa = &p->a[i];
		int r;

		/* Latency actions are the latency actuator's (latact_apply_plan). */
		if (plan_op_is_latency(pa->op))
			continue;
		r = pa->op == PLAN_PIN ? pin(a, pa) : unpin(a, pa);

		a->ops->log_action(pa, r, NULL);
		if (r < 0) {
			if (r != -ESRCH)
				count_error(a, r);
			if (pa->op == PLAN_PIN && dropped)
				dropped(ctx, pa->tid, pa->start_time, r);
			continue;
		}
		done++;
	}
	compact(a);
	return done;
}

void act_verify(struct act *a, act_dropped_fn dropped, void *ctx)
{
	for (size_t i = 0; i < a->n;) {
		struct act_entry *e = &a->e[i];
		char mask[CPUMASK_STRLEN];
		cpu_set_t cur;
		int r = a->ops->get_affinity(&e->task, &cur);

		if (r == 0 && CPU_EQUAL(&cur, &e->set)) {
			i++;
			continue;
		}
		if (r == -ESRCH || r == -ENOENT) {
			a->cnt.gone++;
			log_debug("tid %d exited: forgotten", (int)e->task.tid);
		} else if (r < 0) {
			if (act_error_is_transient(r)) {
				i++;
				continue;
			}
			count_error(a, r);
			log_warn("tid %d: cannot read affinity: %s: forgotten", (int)e->task.tid,
				 strerror(-r));
		} else {
			a->cnt.left_alone++;
			log_info("tid %d changed its own affinity (now %s): left as it chose",
				 (int)e->task.tid, cpumask_format(&cur, mask, sizeof(mask)));
		}
		remove_at(a, i, r, dropped, ctx, true);
	}
}
