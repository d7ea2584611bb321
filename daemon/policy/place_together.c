/*
 * Policy stage: the placement rule keep_together ([balance] keep_together, off by
 * default; one row of place.c's table). Pure: no I/O.
 *
 * After the kernel's cache-aware scheduling (Peter Zijlstra's RFC of
 * March 2025, then Chen Yu and Tim Chen's series): a process whose busy threads fit
 * one LLC is held in the LLC where most of its threads were seen, so that the data they
 * share stays in one cache. The gates are the series':
 *  - its busy threads (seen runnable, having used CPU, this tick or the last) number
 *    two or more (one thread is the kernel's to place) and at most the LLC's cores;
 *  - its resident set, the first proxy of its working set (the series later weighed
 *    its NUMA faults), is at most the LLC's size; where either is not known, nothing
 *    is held;
 *  - to be held, the LLC must have room once its threads are there: no more runnable
 *    tasks than CPUs, and the resident sets of the processes held there, its own
 *    added, no more than the cache (the simulator showed processes that each fit
 *    held together until they evicted each other);
 *  - the LLC does not stay too busy: it is released when its LLC has run more tasks
 *    than CPUs, and more than TOGETHER_IMB_PCT per CPU over the least busy LLC (the
 *    series' 20 %, a little above the LLC domain's imbalance_pct of 117), for
 *    min_residency_ms (spread first moves what else is there), which counts as a
 *    failure;
 *  - after TOGETHER_FAILURES pins lost within max_pin_ms (refused, undone by someone
 *    else, or the thread gone) it gives up for max_pin_ms, as the series gives up
 *    after repeated balance failures.
 * A held process's new busy threads are pinned there too. Its threads are pinned
 * whether or not each runs alone on its CPU: for a process's own threads this rule
 * overrides rule (b), which is its point.
 *
 * Cost: O(tasks log tasks + processes + pins) a tick.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "policy/place_int.h"
#include "policy/spread.h"
#include "policy/spread_int.h"
#include "rqbalance.h"
#include "util/sorted.h"
#include "util/util.h"

#define TOGETHER_IMB_PCT 120
#define TOGETHER_FAILURES 3
#define SCORE_STEP 64 /* a thread seen on an LLC; a score decays by a quarter a tick */

/* ---- memory: processes by tgid ---- */

static size_t proc_lower(const struct spread_state *st, pid_t tgid)
{
	return util_pid_lower_bound(st->procs, st->nprocs, sizeof(*st->procs),
				    offsetof(struct place_proc, tgid), tgid);
}

static struct place_proc *find_proc(struct spread_state *st, pid_t tgid)
{
	size_t i = proc_lower(st, tgid);

	return i < st->nprocs && st->procs[i].tgid == tgid ? &st->procs[i] : NULL;
}

static struct place_proc *add_proc(struct spread_state *st, pid_t tgid)
{
	size_t i = proc_lower(st, tgid);
	struct place_proc *p = util_grow(st->procs, &st->procs_cap, st->nprocs, sizeof(*p));
	struct place_proc np = { .tgid = tgid, .held = -1 };

	if (!p)
		return NULL;
	st->procs = p;
	if (sorted_insert(st->procs, &st->nprocs, st->procs_cap, sizeof(np), i, &np) < 0)
		return NULL;
	return &st->procs[i];
}

void place_together_pin_lost(struct spread_state *st, pid_t tgid)
{
	struct place_proc *p = find_proc(st, tgid);

	if (!p)
		return;
	if (!p->failures)
		p->fail_ns = st->prev_now_ns;
	p->failures++;
}

static int cmp_tg(const void *a, const void *b)
{
	const struct place_slot *x = a, *y = b;

	if (x->tgid != y->tgid)
		return (x->tgid > y->tgid) - (x->tgid < y->tgid);
	return (x->slot > y->slot) - (x->slot < y->slot);
}

/* The bucketed tasks, by process; returns how many. */
static size_t group_by_process(const struct spread_tick *tk)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	int nslots = s->nr_cpu_ids ? st->bucket_start[s->nr_cpu_ids - 1] : 0;
	size_t n = 0;

	for (int b = 0; b < nslots; b++) {
		const struct snap_task *t;

		if (st->bucket[b] < 0)
			continue;
		t = &s->tasks[st->bucket[b]];
		if (!(t->flags & SNAP_TASK_KTHREAD) && t->tgid != s->self_tgid)
			st->bytg[n++] = (struct place_slot){ t->tgid, b };
	}
	if (n > 1)
		qsort(st->bytg, n, sizeof(*st->bytg), cmp_tg);
	return n;
}

/*
 * LLC l too busy to hold a process: more tasks than CPUs, and more than
 * TOGETHER_IMB_PCT per CPU over the least busy other LLC.
 */
static bool too_busy(const struct spread_tick *tk, int l)
{
	const struct topo *tp = tk->tp;
	const struct spread_state *st = tk->st;
	int m = place_kit_least_loaded(tk, l, NULL);

	return m >= 0 && st->llc_nr[l] > tp->llcs[l].ncpus &&
	       (long long)st->llc_nr[l] * tp->llcs[m].ncpus * 100 >
		       (long long)st->llc_load[m] * tp->llcs[l].ncpus * TOGETHER_IMB_PCT;
}

/* Its preferred LLC: the highest score among spreadable LLCs, the least loaded of equals. */
static int preferred(const struct spread_tick *tk, const struct place_proc *p)
{
	const struct topo *tp = tk->tp;
	const struct spread_state *st = tk->st;
	int best = -1;

	for (int l = 0; l < tp->nllcs && l < PLACE_MAX_LLCS; l++) {
		if (!spread_llc_ok(tk, l) || !p->score[l] || st->reserved[l])
			continue;
		if (best < 0 || p->score[l] > p->score[best] ||
		    (p->score[l] == p->score[best] &&
		     spread_load_less(st->llc_load[l], tp->llcs[l].ncpus, st->llc_load[best],
				      tp->llcs[best].ncpus)))
			best = l;
	}
	return best;
}

/* What one tick saw of a process: its busy threads, in all and per LLC, and its RSS. */
struct seen {
	int busy;
	uint64_t rss_kb;
	int per_llc[PLACE_MAX_LLCS];
	uint64_t oldest_start;   /* the earliest start time among its threads listed */
};

static void together_look(const struct spread_tick *tk, size_t from, size_t to, struct seen *ret)
{
	const struct spread_state *st = tk->st;

	memset(ret, 0, sizeof(*ret));
	ret->oldest_start = UINT64_MAX;
	for (size_t k = from; k < to; k++) {
		const struct snap_task *t = &tk->s->tasks[st->bucket[st->bytg[k].slot]];
		int l = tk->tp->cpus[t->cpu].llc;

		if (t->start_time < ret->oldest_start)
			ret->oldest_start = t->start_time;
		if (t->rss_kb)
			ret->rss_kb = t->rss_kb;
		if (t->flags & SNAP_TASK_NO_CPU)
			continue;
		ret->busy++;
		if (l < PLACE_MAX_LLCS)
			ret->per_llc[l]++;
	}
}

/* Why process p, seen as w this tick, may not be held in LLC l; NULL if it may. */
static const char *unfit(const struct spread_tick *tk, const struct place_proc *p,
			 const struct seen *w, int busy, int l)
{
	const struct snapshot *s = tk->s;
	const struct spread_conf *c = tk->c;
	const struct topo_llc *llc = &tk->tp->llcs[l];
	uint64_t max_ns = (uint64_t)c->max_pin_ms * NSEC_PER_MSEC;

	if (p->gave_up_ns && s->now_ns - p->gave_up_ns < max_ns)
		return "failures";
	if (busy > llc->ncores)
		return "threads";
	if (!w->rss_kb || !llc->size_kb || w->rss_kb > llc->size_kb)
		return "rss";
	if (p->busy_since_ns && s->now_ns - p->busy_since_ns >= c->min_residency_ms * NSEC_PER_MSEC)
		return "busy_llc";
	if (s->now_ns - p->seen_ns >= max_ns)
		return "idle";
	return NULL;
}

/*
 * Whether LLC l has room to take process p, seen as w, as the series' gates weigh it
 * once the threads are there: its threads listed elsewhere moved in leave the LLC no
 * more runnable tasks than CPUs, and its resident set and those of the processes held
 * there already add up to no more than the cache (each fitting alone is not enough:
 * held together, they would evict each other).
 */
static bool room(const struct spread_tick *tk, const struct place_proc *p, const struct seen *w,
		 int l)
{
	const struct spread_state *st = tk->st;
	const struct topo_llc *llc = &tk->tp->llcs[l];
	uint64_t rss = w->rss_kb;
	int in = l < PLACE_MAX_LLCS ? w->per_llc[l] : 0;

	if (st->llc_load[l] + (w->busy - in) > llc->ncpus)
		return false;
	for (size_t i = 0; i < st->nprocs; i++)
		if (st->procs[i].held == l && &st->procs[i] != p)
			rss += st->procs[i].rss_kb;
	return rss <= llc->size_kb;
}

/* Pins process p's listed threads that are not pinned yet to its LLC. 0 or -ENOMEM. */
static int hold(struct spread_tick *tk, const struct place_proc *p, size_t from, size_t to)
{
	const struct spread_state *st = tk->st;

	for (size_t k = from; k < to && tk->budget > 0; k++) {
		int slot = st->bytg[k].slot;
		const struct snap_task *t = &tk->s->tasks[st->bucket[slot]];

		if (!place_kit_pinnable(tk, t) || !spread_settled(tk, t))
			continue;
		if (spread_plan_pin(tk, slot, p->held, &tk->tp->llcs[p->held].cpus, PIN_TOGETHER,
				    "together") < 0)
			return -ENOMEM;
		tk->budget--;
	}
	return 0;
}

/* One process seen this tick: its memory updated, then held, kept or let go. */
static int together_one(struct spread_tick *tk, size_t from, size_t to)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	pid_t tgid = st->bytg[from].tgid;
	struct place_proc *p = find_proc(st, tgid);
	struct seen w;
	int busy, l;

	together_look(tk, from, to, &w);
	/*
	 * A process number is its process's only while one of the threads listed now was
	 * there when the record last saw it: a process whose threads all started since is
	 * taken for a new one (the number reused, or a process seen afresh), and judged by
	 * every gate as one, not held where another process was (the third review).
	 */
	if (p && p->seen_ticks && s->uptime_ticks && w.oldest_start >= p->seen_ticks) {
		memset(p, 0, sizeof(*p));
		p->tgid = tgid;
		p->held = -1;
	}
	if (p && s->uptime_ticks)
		p->seen_ticks = s->uptime_ticks;
	if (!p && w.busy < 2)
		return 0;
	if (!p && !(p = add_proc(st, tgid)))
		return -ENOMEM;
	p->seen_ticks = s->uptime_ticks;
	busy = w.busy > p->busy_prev ? w.busy : p->busy_prev;
	p->busy_prev = w.busy;
	if (w.busy >= 2)
		p->seen_ns = s->now_ns;
	for (l = 0; l < tk->tp->nllcs && l < PLACE_MAX_LLCS; l++) {
		unsigned v = p->score[l] - p->score[l] / 4 + (unsigned)w.per_llc[l] * SCORE_STEP;

		p->score[l] = (uint16_t)(v > UINT16_MAX ? UINT16_MAX : v);
	}
	if (p->failures >= TOGETHER_FAILURES && !p->gave_up_ns)
		p->gave_up_ns = s->now_ns;
	l = p->held >= 0 ? p->held : preferred(tk, p);
	if (l < 0)
		return 0;
	if (too_busy(tk, l)) {
		if (!p->busy_since_ns)
			p->busy_since_ns = s->now_ns;
	} else {
		p->busy_since_ns = 0;
	}
	if (p->held < 0 && (busy < 2 || p->busy_since_ns || unfit(tk, p, &w, busy, l) ||
			    !room(tk, p, &w, l)))
		return 0;
	if (p->held >= 0 && (p->why = unfit(tk, p, &w, busy, l)) != NULL) {
		/* Let go for a busy LLC counts as a failure: held and let go three times
		 * over, it gives up rather than come back each min_residency_ms. */
		if (strcmp(p->why, "busy_llc") == 0 && !p->failures++)
			p->fail_ns = s->now_ns;
		p->held = -1;
		return 0; /* together_keep gives its pins back */
	}
	p->rss_kb = w.rss_kb;
	p->held = l;
	return hold(tk, p, from, to);
}

static const char *together_keep(const struct spread_tick *tk, const struct spread_pin *pin,
				 const void *arg)
{
	const struct place_proc *p = find_proc(tk->st, pin->tgid);

	if (!p)
		return "idle";
	if (p->held != pin->to_llc)
		return p->why ? p->why : "moved";
	return NULL;
}

/*
 * Forgets processes neither held nor seen busy for max_pin_ms, and gives up
 * failures older than that: the memory stays the size of what is busy now.
 */
static void expire_procs(const struct spread_tick *tk)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	uint64_t max_ns = (uint64_t)tk->c->max_pin_ms * NSEC_PER_MSEC;
	size_t out = 0;

	for (size_t i = 0; i < st->nprocs; i++) {
		struct place_proc *p = &st->procs[i];

		if (p->held >= 0 && s->now_ns - p->seen_ns >= max_ns) {
			p->held = -1;
			p->why = "idle";
		}
		if (p->failures && s->now_ns - p->fail_ns >= max_ns &&
		    (!p->gave_up_ns || s->now_ns - p->gave_up_ns >= max_ns)) {
			p->failures = 0;
			p->gave_up_ns = 0;
		}
		if (p->held < 0 && s->now_ns - p->seen_ns >= max_ns && !p->failures)
			continue;
		st->procs[out++] = *p;
	}
	st->nprocs = out;
}

void place_together_forget(struct spread_state *st)
{
	st->nprocs = 0;
}

int place_together_decide(struct spread_tick *tk)
{
	struct spread_state *st = tk->st;
	size_t n;
	int r = 0;

	n = group_by_process(tk);
	for (size_t i = 0, j; i < n && r == 0; i = j) {
		for (j = i + 1; j < n && st->bytg[j].tgid == st->bytg[i].tgid; j++)
			;
		r = together_one(tk, i, j);
	}
	if (r < 0)
		return r;
	expire_procs(tk);
	return place_kit_release(tk, PIN_TOGETHER, together_keep, NULL);
}
