/*
 * Policy stage: placement beyond spreading, three rules, each off by default
 * ([balance] keep_together, latency_apart, fast_cores). Pure, as spread.c: the
 * snapshot, the config and the policy's memory in, pins and releases out, within the
 * tick's budget of moves.
 *
 * keep_together, after the kernel's cache-aware scheduling (Peter Zijlstra's RFC of
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
 * latency_apart: the spreadable LLCs where tasks with a negative latency-nice value
 * ran in the last APART_IDLE_NS are kept for them, all but one LLC at most (those with
 * most such tasks first): those tasks are pinned to the kept LLCs, and tasks with a
 * positive value listed there are pinned to the others. A batch task goes back when
 * no latency task is kept any more (each exited, lost its value, or slept for
 * APART_IDLE_NS), or when batch work has outnumbered the CPUs left to it for
 * min_residency_ms while a kept LLC had an idle CPU: the rule never makes work wait
 * for a CPU that is there; it pins nothing more until the work fits again.
 *
 * fast_cores, for parts with two kinds of core (Intel's P- and E-cores, an AMD X3D
 * part's two CCDs): the tasks with a negative value are pinned to the fast CPUs
 * (place_fast_cpus), and tasks with a positive value listed there are pinned to the
 * others while a latency task lives (ran in the last APART_IDLE_NS). Soft pins, given
 * back: a latency task's when it sleeps or exits (as latency_apart's) or when more
 * latency tasks are busy (listed runnable, having used CPU, this tick or the last,
 * keep_together's test) than the fast CPUs have cores: such a game loses when squeezed
 * onto them (GameMode's pinning of a whole game to one CCD, its issue 453), so then
 * none is held there until they fit for min_residency_ms; a batch task's when no
 * latency task lives, or when batch work outnumbers the other CPUs while a fast CPU is
 * idle, as latency_apart's. Where the fast CPUs are whole LLCs, spread sends no batch
 * task there while a latency task lives. With latency_apart also on, its pins come
 * first: a task has one pin at a time.
 *
 * Cost: O(tasks log tasks + processes + pins + CPUs) a tick.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "policy/spread.h"
#include "policy/spread_int.h"
#include "rqbalance.h"
#include "util/sorted.h"
#include "util/util.h"

#define TOGETHER_IMB_PCT 120
#define TOGETHER_FAILURES 3
#define APART_IDLE_NS (5 * NSEC_PER_SEC)
#define SCORE_STEP 64 /* a thread seen on an LLC; a score decays by a quarter a tick */

/* ---- memory: processes by tgid, latency tasks by tid ---- */

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

void place_pin_lost(struct spread_state *st, pid_t tgid)
{
	struct place_proc *p = find_proc(st, tgid);

	if (!p)
		return;
	if (!p->failures)
		p->fail_ns = st->prev_now_ns;
	p->failures++;
}

static struct place_lat *find_lat(struct spread_state *st, pid_t tid, uint64_t start)
{
	size_t lo = util_pid_lower_bound(st->lats, st->nlats, sizeof(*st->lats),
					 offsetof(struct place_lat, tid), tid);

	for (; lo < st->nlats && st->lats[lo].tid == tid; lo++)
		if (st->lats[lo].start_time == start)
			return &st->lats[lo];
	return NULL;
}

/*
 * The latency tasks the snapshot names, each with where it last ran and when, kept
 * from the last tick: both lists are sorted by tid, so a merge. 0 or -ENOMEM.
 */
static int update_lats(const struct spread_tick *tk)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	struct place_lat *n = NULL;
	size_t j = 0;

	if (s->nlat) {
		n = calloc(s->nlat, sizeof(*n));
		if (!n)
			return -ENOMEM;
	}
	for (size_t i = 0; i < s->nlat; i++) {
		const struct snap_lat *l = &s->lat[i];

		while (j < st->nlats && st->lats[j].tid < l->tid)
			j++;
		n[i] = (struct place_lat){ .tid = l->tid, .start_time = l->start_time, .llc = -1 };
		for (size_t k = j; k < st->nlats && st->lats[k].tid == l->tid; k++)
			if (st->lats[k].start_time == l->start_time)
				n[i] = st->lats[k];
	}
	free(st->lats);
	st->lats = n;
	st->nlats = st->lats_cap = s->nlat;
	for (size_t i = 0; i < s->ntasks; i++) {
		const struct snap_task *t = &s->tasks[i];
		struct place_lat *l;

		if (t->lat_nice >= 0 || !spread_on_cpu(s, t->cpu))
			continue;
		l = find_lat(st, t->tid, t->start_time);
		if (l) {
			l->llc = tk->tp->cpus[t->cpu].llc;
			l->seen_ns = s->now_ns;
			if (!(t->flags & SNAP_TASK_NO_CPU))
				l->busy_ns = s->now_ns;
		}
	}
	/* Seen to run since the last look (latseen.c), where it was not listed. */
	for (size_t i = 0; i < s->nlat; i++) {
		const struct snap_lat *sl = &s->lat[i];
		struct place_lat *l;

		if (sl->ran_cpu < 0 || !spread_on_cpu(s, sl->ran_cpu))
			continue;
		l = find_lat(st, sl->tid, sl->start_time);
		if (l && l->seen_ns != s->now_ns) {
			l->llc = tk->tp->cpus[sl->ran_cpu].llc;
			l->seen_ns = s->now_ns;
		}
	}
	return 0;
}

/* ---- shared ---- */

/* Why a pin of one rule goes back now, arg the rule's own; NULL to keep it. */
typedef const char *keep_fn(const struct spread_tick *tk, const struct spread_pin *p,
			    const void *arg);

/* Gives back every pin of kind that keep() refuses, within the budget. 0 or -ENOMEM. */
static int release_where(struct spread_tick *tk, enum spread_pin_kind kind, keep_fn *keep,
			 const void *arg)
{
	struct spread_state *st = tk->st;

	for (size_t i = 0; i < st->npins && tk->budget > 0;) {
		const char *why;

		if (st->pins[i].kind != kind || !(why = keep(tk, &st->pins[i], arg))) {
			i++;
			continue;
		}
		if (spread_plan_unpin(tk, i, why) < 0)
			return -ENOMEM;
		tk->budget--;
	}
	return 0;
}

static const char *off_why(const struct spread_tick *tk, const struct spread_pin *p,
			   const void *arg)
{
	return arg;
}

/*
 * A task the rules may pin: eligible, not pinned by any rule yet, and not moved
 * within min_residency_ms (rule d: a pin given back is not made again at once); and
 * one that used CPU since the last sample, but for a latency task, which runs in
 * bursts too short to show in one (it is pinned to keep it on its LLC, not to move
 * load).
 */
static bool pinnable(const struct spread_tick *tk, const struct snap_task *t)
{
	return (!(t->flags & SNAP_TASK_NO_CPU) || t->lat_nice < 0) &&
	       !spread_ineligible(tk->s, tk->c, t) &&
	       spread_pin_idx(tk->st, t->tid, t->start_time) < 0 &&
	       !spread_recently_moved(tk->st, t->tid, t->start_time);
}

static void mask_of(const struct topo *tp, const unsigned char *llcs, bool in, cpu_set_t *ret)
{
	CPU_ZERO(ret);
	for (int l = 0; l < tp->nllcs; l++)
		if (!llcs[l] == !in)
			CPU_OR(ret, ret, &tp->llcs[l].cpus);
}

/* ---- keep_together ---- */

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

/* The least loaded spreadable LLC per CPU other than not; -1 if none. */
static int least_loaded(const struct spread_tick *tk, int not, const unsigned char *skip)
{
	const struct topo *tp = tk->tp;
	const struct spread_state *st = tk->st;
	int best = -1;

	for (int l = 0; l < tp->nllcs; l++) {
		if (l == not || !spread_llc_ok(tk, l) || (skip && skip[l]))
			continue;
		if (best < 0 || spread_load_less(st->llc_load[l], tp->llcs[l].ncpus,
						 st->llc_load[best], tp->llcs[best].ncpus))
			best = l;
	}
	return best;
}

/*
 * LLC l too busy to hold a process: more tasks than CPUs, and more than
 * TOGETHER_IMB_PCT per CPU over the least busy other LLC.
 */
static bool too_busy(const struct spread_tick *tk, int l)
{
	const struct topo *tp = tk->tp;
	const struct spread_state *st = tk->st;
	int m = least_loaded(tk, l, NULL);

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

static void look(const struct spread_tick *tk, size_t from, size_t to, struct seen *ret)
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

		if (!pinnable(tk, t) || !spread_settled(tk, t))
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

	look(tk, from, to, &w);
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
		return 0; /* release_together gives its pins back */
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

static int keep_together(struct spread_tick *tk)
{
	struct spread_state *st = tk->st;
	size_t n;
	int r = 0;

	if (!tk->c->keep_together) {
		st->nprocs = 0;
		return release_where(tk, PIN_TOGETHER, off_why, "off");
	}
	n = group_by_process(tk);
	for (size_t i = 0, j; i < n && r == 0; i = j) {
		for (j = i + 1; j < n && st->bytg[j].tgid == st->bytg[i].tgid; j++)
			;
		r = together_one(tk, i, j);
	}
	if (r < 0)
		return r;
	expire_procs(tk);
	return release_where(tk, PIN_TOGETHER, together_keep, NULL);
}

/* ---- latency_apart ---- */

/* Keeps for latency tasks the LLCs with most of them, all but one spreadable LLC at most. */
static void reserve(const struct spread_tick *tk)
{
	const struct topo *tp = tk->tp;
	struct spread_state *st = tk->st;
	int *cnt = st->llc_away, ok = 0; /* release() is done with it */

	memset(cnt, 0, (size_t)tp->nllcs * sizeof(int));
	for (size_t i = 0; i < st->nlats; i++) {
		const struct place_lat *l = &st->lats[i];

		if (l->llc >= 0 && l->llc < tp->nllcs && tk->s->now_ns - l->seen_ns < APART_IDLE_NS)
			cnt[l->llc]++;
	}
	for (int l = 0; l < tp->nllcs; l++)
		ok += spread_llc_ok(tk, l);
	for (st->nreserved = 0; st->nreserved < ok - 1; st->nreserved++) {
		int best = -1;

		for (int l = 0; l < tp->nllcs; l++)
			if (!st->reserved[l] && cnt[l] > 0 && spread_llc_ok(tk, l) &&
			    (best < 0 || cnt[l] > cnt[best]))
				best = l;
		if (best < 0)
			break;
		st->reserved[best] = 1;
	}
}

/* A state that changes only after the opposite has held for min_residency_ms. */
static void settle(const struct spread_tick *tk, bool now, bool *state, uint64_t *since_ns)
{
	uint64_t now_ns = tk->s->now_ns;

	if (now == *state) {
		*since_ns = 0;
		return;
	}
	if (!*since_ns)
		*since_ns = now_ns;
	if (now_ns - *since_ns >= tk->c->min_residency_ms * NSEC_PER_MSEC) {
		*state = now;
		*since_ns = 0;
	}
}

/*
 * Whether batch work outnumbers the CPUs left to it while a kept LLC has an idle
 * CPU, for min_residency_ms: then its pins go back until it fits again.
 */
static void short_of_cpus(const struct spread_tick *tk)
{
	const struct snapshot *s = tk->s;
	const struct topo *tp = tk->tp;
	struct spread_state *st = tk->st;
	int demand = 0, cpus = 0, idle = 0;
	bool now;

	for (int l = 0; l < tp->nllcs; l++) {
		if (!spread_llc_ok(tk, l))
			continue;
		if (st->reserved[l]) {
			idle += st->llc_idle[l];
			continue;
		}
		demand += st->llc_load[l];
		cpus += tp->llcs[l].ncpus;
	}
	for (size_t i = 0; i < s->ntasks; i++) {
		const struct snap_task *t = &s->tasks[i];

		if (t->lat_nice > 0 && spread_on_cpu(s, t->cpu) &&
		    st->reserved[tp->cpus[t->cpu].llc] && !(t->flags & SNAP_TASK_NO_CPU))
			demand++;
	}
	now = demand > cpus && (idle > 0 || st->apart_short);
	settle(tk, now, &st->apart_short, &st->short_since_ns);
}

/* Why an apart pin goes back now; NULL to keep it. arg: the kept LLCs' mask. */
static const char *apart_keep(const struct spread_tick *tk, const struct spread_pin *p,
			      const void *arg)
{
	const struct spread_state *st = tk->st;
	const cpu_set_t *kept = arg;
	cpu_set_t both;

	if (!st->nreserved)
		return "latency_gone";
	if (p->lat_task) {
		const struct place_lat *l = find_lat(tk->st, p->tid, p->start_time);

		if (!l || tk->s->now_ns - l->seen_ns >= APART_IDLE_NS)
			return "latency_gone";
		return CPU_EQUAL(&p->mask, kept) || !CPU_EQUAL(&p->orig, &tk->tp->online) ? NULL
											  : "moved";
	}
	if (st->apart_short)
		return "short";
	CPU_AND(&both, &p->mask, kept);
	return CPU_COUNT(&both) ? "moved" : NULL;
}

/* Latency tasks onto the kept LLCs, batch tasks off them. 0 or -ENOMEM. */
static int apart_pins(struct spread_tick *tk, const cpu_set_t *kept, const cpu_set_t *rest)
{
	const struct snapshot *s = tk->s;
	const struct topo *tp = tk->tp;
	struct spread_state *st = tk->st;
	int nslots = s->nr_cpu_ids ? st->bucket_start[s->nr_cpu_ids - 1] : 0;

	for (int b = 0; b < nslots && tk->budget > 0; b++) {
		const struct snap_task *t;
		int l, dst, r;

		if (st->bucket[b] < 0)
			continue;
		t = &s->tasks[st->bucket[b]];
		l = tp->cpus[t->cpu].llc;
		if (!t->lat_nice || !pinnable(tk, t))
			continue;
		if (t->lat_nice < 0 && st->reserved[l]) {
			r = spread_plan_pin(tk, b, l, kept, PIN_APART, "latency");
		} else if (t->lat_nice > 0 && st->reserved[l] && !st->apart_short) {
			dst = least_loaded(tk, -1, st->reserved);
			if (dst < 0)
				continue;
			r = spread_plan_pin(tk, b, dst, rest, PIN_APART, "apart");
		} else {
			continue;
		}
		if (r < 0)
			return r;
		if (t->lat_nice < 0)
			st->pins[spread_pin_idx(st, t->tid, t->start_time)].lat_task = true;
		tk->budget--;
	}
	return 0;
}

static int latency_apart(struct spread_tick *tk)
{
	struct spread_state *st = tk->st;
	cpu_set_t kept, rest;
	int r;

	if (!tk->c->latency_apart) {
		st->apart_short = false;
		return release_where(tk, PIN_APART, off_why, "off");
	}
	reserve(tk);
	mask_of(tk->tp, st->reserved, true, &kept);
	mask_of(tk->tp, st->reserved, false, &rest);
	CPU_AND(&rest, &rest, &tk->tp->online);
	short_of_cpus(tk);
	r = release_where(tk, PIN_APART, apart_keep, &kept);
	if (r == 0 && st->nreserved)
		r = apart_pins(tk, &kept, &rest);
	return r;
}

/* ---- fast_cores ---- */

/* The kind hwloc ranks fastest, or -1 where it ranks none. */
static int fastest_kind(const struct topo *tp)
{
	int best = -1;

	for (int k = 0; k < tp->nkinds && tp->nkinds >= 2; k++)
		if (tp->kinds[k].efficiency >= 0 &&
		    (best < 0 || tp->kinds[k].efficiency > tp->kinds[best].efficiency))
			best = k;
	return best;
}

/* The LLC whose cache is larger than every other's, or -1 where none is. */
static int largest_llc(const struct topo *tp)
{
	int best = -1;
	bool tie = false;

	for (int l = 0; l < tp->nllcs; l++) {
		if (!tp->llcs[l].ncpus || !tp->llcs[l].size_kb)
			continue;
		if (best >= 0 && tp->llcs[l].size_kb == tp->llcs[best].size_kb)
			tie = true;
		else if (best < 0 || tp->llcs[l].size_kb > tp->llcs[best].size_kb)
			best = l, tie = false;
	}
	return tie ? -1 : best;
}

const char *place_fast_cpus(const struct topo *tp, cpu_set_t *ret)
{
	const char *why = NULL;
	int k = fastest_kind(tp), l = largest_llc(tp);

	CPU_ZERO(ret);
	if (tp->x3d_mode == TOPO_X3D_CACHE && l >= 0) {
		*ret = tp->llcs[l].cpus;
		why = "the CCD with the larger L3 (amd_x3d_mode cache)";
	} else if (k >= 0) {
		*ret = tp->kinds[k].cpus;
		why = tp->x3d_mode == TOPO_X3D_FREQUENCY
			      ? "the faster CCD (amd_x3d_mode frequency)"
			      : "the fastest kind of core";
	}
	CPU_AND(ret, ret, &tp->online);
	if (!CPU_COUNT(ret) || CPU_EQUAL(ret, &tp->online)) {
		CPU_ZERO(ret);
		return NULL;
	}
	return why;
}

/* Cores with a CPU in set: SMT siblings share one (core numbers are below CPU_SETSIZE). */
static int cores_in(const struct topo *tp, const cpu_set_t *set)
{
	cpu_set_t cores;

	CPU_ZERO(&cores);
	for (int c = 0; c < tp->nr_cpu_ids; c++)
		if (CPU_ISSET(c, set) && tp->cpus[c].present && tp->cpus[c].core >= 0 &&
		    tp->cpus[c].core < CPU_SETSIZE)
			CPU_SET(tp->cpus[c].core, &cores);
	return CPU_COUNT(&cores);
}

/* What one tick saw of the fast CPUs and their work. */
struct fast_seen {
	cpu_set_t fast, rest;   /* the fast CPUs, the other online ones */
	int live;               /* latency tasks that ran in the last APART_IDLE_NS */
	int busy;               /* of them, listed runnable with CPU this tick or the last */
};

static void fast_look(const struct spread_tick *tk, struct fast_seen *w)
{
	const struct spread_state *st = tk->st;
	uint64_t now = tk->s->now_ns;

	w->live = w->busy = 0;
	for (size_t i = 0; i < st->nlats; i++) {
		const struct place_lat *l = &st->lats[i];

		if (l->llc < 0 || now - l->seen_ns >= APART_IDLE_NS)
			continue;
		w->live++;
		w->busy += l->busy_ns && (l->busy_ns == now || l->busy_ns >= st->place_prev_ns);
	}
}

/*
 * Crowded: more busy latency tasks than fast cores, at once (the game loses now);
 * fitting again counts after min_residency_ms. Short: batch work outnumbers the other
 * CPUs while a fast CPU is idle, settled as latency_apart's.
 */
static void fast_states(const struct spread_tick *tk, const struct fast_seen *w)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	int demand = 0, idle = 0;

	if (w->busy > cores_in(tk->tp, &w->fast))
		st->fast_crowded = true, st->crowded_since_ns = 0;
	else
		settle(tk, false, &st->fast_crowded, &st->crowded_since_ns);
	for (int c = 0; c < s->nr_cpu_ids; c++) {
		if (!spread_on_cpu(s, c))
			continue;
		if (CPU_ISSET(c, &w->rest))
			demand += st->cpu_nr[c];
		else if (CPU_ISSET(c, &w->fast))
			idle += !st->cpu_nr[c];
	}
	for (size_t i = 0; i < s->ntasks; i++) {
		const struct snap_task *t = &s->tasks[i];

		if (t->lat_nice > 0 && spread_on_cpu(s, t->cpu) && CPU_ISSET(t->cpu, &w->fast) &&
		    !(t->flags & SNAP_TASK_NO_CPU))
			demand++;
	}
	settle(tk, demand > CPU_COUNT(&w->rest) && (idle > 0 || st->fast_short), &st->fast_short,
	       &st->fast_short_since_ns);
}

/* Why a fast_cores pin goes back now; NULL to keep it. arg: the tick's fast_seen. */
static const char *fast_keep(const struct spread_tick *tk, const struct spread_pin *p,
			     const void *arg)
{
	const struct spread_state *st = tk->st;
	const struct fast_seen *w = arg;
	cpu_set_t both;

	if (p->lat_task) {
		const struct place_lat *l = find_lat(tk->st, p->tid, p->start_time);
		cpu_set_t want;

		if (!l || tk->s->now_ns - l->seen_ns >= APART_IDLE_NS)
			return "latency_gone";
		if (st->fast_crowded)
			return "crowded";
		CPU_AND(&want, &w->fast, &p->orig);
		return CPU_EQUAL(&p->mask, &want) ? NULL : "moved";
	}
	if (!w->live)
		return "latency_gone";
	if (st->fast_short)
		return "short";
	CPU_AND(&both, &p->mask, &w->fast);
	return CPU_COUNT(&both) ? "moved" : NULL;
}

/* The LLC a pin to set is counted on: the task's own where set meets it, else set's first. */
static int llc_within(const struct topo *tp, int cpu, const cpu_set_t *set)
{
	int l = tp->cpus[cpu].llc;
	cpu_set_t both;

	CPU_AND(&both, set, &tp->llcs[l].cpus);
	if (CPU_COUNT(&both))
		return l;
	for (int c = 0; c < tp->nr_cpu_ids; c++)
		if (CPU_ISSET(c, set) && tp->cpus[c].present)
			return tp->cpus[c].llc;
	return -1;
}

/* Pins a task to set (where its own affinity meets it). 0, 1 when not pinned, or -ENOMEM. */
static int fast_pin(struct spread_tick *tk, int slot, const cpu_set_t *set, bool lat)
{
	const struct snap_task *t = &tk->s->tasks[tk->st->bucket[slot]];
	int dst = llc_within(tk->tp, t->cpu, set);
	cpu_set_t both;
	int r;

	CPU_AND(&both, set, &t->allowed);
	if (dst < 0 || !CPU_COUNT(&both))
		return 1;
	r = spread_plan_pin(tk, slot, dst, set, PIN_FAST, lat ? "fast" : "off_fast");
	if (r < 0)
		return r;
	if (lat)
		tk->st->pins[spread_pin_idx(tk->st, t->tid, t->start_time)].lat_task = true;
	tk->budget--;
	return 0;
}

/* Latency tasks onto the fast CPUs, batch tasks off them. 0 or -ENOMEM. */
static int fast_pins(struct spread_tick *tk, const struct fast_seen *w)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	int nslots = s->nr_cpu_ids ? st->bucket_start[s->nr_cpu_ids - 1] : 0;

	for (int b = 0; b < nslots && tk->budget > 0; b++) {
		const struct snap_task *t;
		int r = 1;

		if (st->bucket[b] < 0)
			continue;
		t = &s->tasks[st->bucket[b]];
		if (!t->lat_nice || !pinnable(tk, t))
			continue;
		if (t->lat_nice < 0 && !st->fast_crowded)
			r = fast_pin(tk, b, &w->fast, true);
		else if (t->lat_nice > 0 && !st->fast_short && CPU_ISSET(t->cpu, &w->fast))
			r = fast_pin(tk, b, &w->rest, false);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The LLCs wholly fast are kept from spread's batch moves while a latency task lives. */
static void fast_reserve(const struct spread_tick *tk, const struct fast_seen *w)
{
	const struct topo *tp = tk->tp;
	cpu_set_t both;

	for (int l = 0; l < tp->nllcs && w->live; l++) {
		CPU_AND(&both, &tp->llcs[l].cpus, &w->fast);
		if (tp->llcs[l].ncpus && CPU_EQUAL(&both, &tp->llcs[l].cpus))
			tk->st->reserved[l] = 1;
	}
}

static int fast_cores(struct spread_tick *tk)
{
	struct spread_state *st = tk->st;
	struct fast_seen w;
	int r;

	if (!tk->c->fast_cores || !place_fast_cpus(tk->tp, &w.fast)) {
		st->fast_crowded = st->fast_short = false;
		st->crowded_since_ns = st->fast_short_since_ns = 0;
		return release_where(tk, PIN_FAST, off_why, "off");
	}
	CPU_XOR(&w.rest, &tk->tp->online, &w.fast);
	fast_look(tk, &w);
	fast_states(tk, &w);
	r = release_where(tk, PIN_FAST, fast_keep, &w);
	if (r == 0 && w.live)
		r = fast_pins(tk, &w);
	fast_reserve(tk, &w);
	return r;
}

int place_decide(struct spread_tick *tk)
{
	int r = 0;

	memset(tk->st->reserved, 0, (size_t)tk->tp->nllcs);
	tk->st->nreserved = 0;
	if (tk->c->latency_apart || tk->c->fast_cores)
		r = update_lats(tk);
	else
		tk->st->nlats = 0;
	if (r == 0)
		r = latency_apart(tk);
	if (r == 0)
		r = fast_cores(tk);
	if (r == 0)
		r = keep_together(tk);
	tk->st->place_prev_ns = tk->s->now_ns;
	return r;
}
