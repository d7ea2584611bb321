/*
 * Policy stage: the LLC spread policy. Pure: a snapshot, the config and the
 * policy's own memory in, a plan out. No I/O, no clock, no randomness.
 *
 * Rules, each from a kernel patch that the stock scheduler argued over:
 *  (a) While some LLC has an idle CPU, count runnable tasks, not utilization: an LLC
 *      with more runnable tasks than CPUs sends work to the least-loaded LLC that has an
 *      idle CPU, the nearest of equals (same NUMA node, package) first ("sched/fair:
 *      ensure tasks spreading in LLC during LB").
 *  (b) Never take a task from a CPU that runs only that task, whatever its
 *      utilization ("sched/fair: improve spreading of utilization").
 *  (c) Move only if the target, after the move, is clearly less loaded per CPU than
 *      the source now: src * 100 > dst_after * imbalance_pct ("sched: use load_avg for
 *      selecting idlest group").
 *  (d) No churn: a moved task is not moved again within min_residency_ms, nor one that
 *      started less than min_residency_ms ago (the kernel placed it then, at fork or
 *      exec), which neither counts as load to move away; at most
 *      max_moves_per_tick actions a tick; and hysteresis: a pin is made when its LLC
 *      has at least one task more than CPUs, and released early only when that LLC
 *      could take back every task pinned away from it without exceeding its CPUs,
 *      and has been able to for min_residency_ms. Over time too: an
 *      overload of one task, or an idle CPU, counts only when two ticks in a row show
 *      it, so a short task caught running in one sample moves nothing; an overload
 *      of two or more is acted on at once.
 *  (e) Never touch kernel threads, tasks with narrowed affinity, excluded comms or
 *      cgroups, or the daemon; and move only tasks that used CPU time since the last
 *      sample (one caught runnable for an instant counts as load, but is no load to
 *      move).
 * With keep_pairs, two tasks that wake each other and share an LLC leave it only
 * together, for an LLC with two idle CPUs ("don't depend on wake_wide if waker and
 * wakee are already in same LLC"); the simulator measures what that gains and costs.
 * The pins' memory, rule (e) and planning a pin are in spread_tick.c (the per-task
 * predicates inline in spread_int.h), which the placement rules (place.c's table, run
 * between spread's releases and its pins) share.
 * Cost: O(tasks + CPUs + moves * (LLCs + CPUs per LLC)) a tick.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "policy/spread.h"
#include "policy/spread_int.h"
#include "rqbalance.h"
#include "util/sorted.h"
#include "util/util.h"

void spread_init(struct spread_state *st)
{
	memset(st, 0, sizeof(*st));
}

static void free_scratch(struct spread_state *st)
{
	free(st->cpu_nr);
	free(st->raw_nr);
	free(st->raw_idle);
	free(st->raw_young);
	st->raw_young = NULL;
	free(st->llc_nr);
	free(st->llc_load);
	free(st->llc_idle);
	free(st->bucket_start);
	free(st->bucket);
	free(st->llc_done);
	free(st->llc_away);
	st->llc_away = NULL;
	free(st->byid);
	st->byid = NULL;
	free(st->reserved);
	st->reserved = NULL;
	free(st->bytg);
	st->bytg = NULL;
	free(st->bytgllc);
	st->bytgllc = NULL;
	st->cpu_nr = st->llc_nr = st->llc_idle = st->bucket_start = st->bucket = NULL;
	st->raw_nr = st->raw_idle = st->llc_load = NULL;
	st->llc_done = NULL;
}

void spread_fini(struct spread_state *st)
{
	free(st->pins);
	free(st->recent);
	free(st->procs);
	free(st->lats);
	free(st->prev_nr);
	free(st->prev_idle);
	free_scratch(st);
	memset(st, 0, sizeof(*st));
}

static void expire_recent(struct spread_state *st, uint64_t now_ns, uint64_t residency_ns)
{
	size_t out = 0;

	for (size_t i = 0; i < st->nrecent; i++)
		if (now_ns - st->recent[i].moved_ns < residency_ns)
			st->recent[out++] = st->recent[i];
	st->nrecent = out;
}

void spread_forget(struct spread_state *st, pid_t tid, uint64_t start_time, bool failed)
{
	ssize_t i = spread_pin_idx(st, tid, start_time);

	if (i < 0)
		return;
	if (failed)
		place_pin_lost(st, &st->pins[i]);
	spread_del_pin(st, (size_t)i);
}

/* ---- counting ---- */

/*
 * A kernel thread caught runnable: the kernel's work of an instant (the RCU thread,
 * ksoftirqd, a kworker, woken by a tick or for a task), whether or not it used CPU
 * since the last sample, and the kernel's to place. Like a young task it is load on a
 * target, but as a source no reason to move another task. Counted as a source, two of
 * them beside the test's busy shell once made an LLC of two hogs look overloaded by
 * two, and later the RCU thread alone, having run since the last sample, did the same;
 * each time a third hog was pinned away (the qemu tier's t_spread).
 */
static bool kernel_thread(const struct snap_task *t)
{
	return t->flags & SNAP_TASK_KTHREAD;
}

static int size_scratch(const struct spread_tick *tk)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	int ncpu = s->nr_cpu_ids, nllc = tk->tp->nllcs;

	if (ncpu > st->nscratch_cpus || nllc > st->nscratch_llcs || s->ntasks > st->scratch_tasks) {
		free_scratch(st);
		st->nscratch_cpus = ncpu;
		st->nscratch_llcs = nllc;
		st->scratch_tasks = s->ntasks > 64 ? s->ntasks * 2 : 128;
		st->cpu_nr = calloc((size_t)ncpu, sizeof(int));
		st->bucket_start = calloc((size_t)ncpu + 1, sizeof(int));
		st->raw_nr = calloc((size_t)nllc, sizeof(int));
		st->raw_idle = calloc((size_t)nllc, sizeof(int));
		st->raw_young = calloc((size_t)nllc, sizeof(int));
		st->llc_nr = calloc((size_t)nllc, sizeof(int));
		st->llc_load = calloc((size_t)nllc, sizeof(int));
		st->llc_idle = calloc((size_t)nllc, sizeof(int));
		st->llc_away = calloc((size_t)nllc, sizeof(int));
		st->llc_done = calloc((size_t)nllc, 1);
		st->bucket = calloc(st->scratch_tasks, sizeof(int));
		st->byid = calloc(st->scratch_tasks, sizeof(*st->byid));
		st->reserved = calloc((size_t)nllc, 1);
		st->bytg = calloc(st->scratch_tasks, sizeof(*st->bytg));
		st->bytgllc = calloc(st->scratch_tasks, sizeof(*st->bytgllc));
		if (!st->reserved || !st->bytg || !st->bytgllc ||
		    !st->cpu_nr || !st->bucket_start || !st->llc_nr || !st->llc_idle ||
		    !st->llc_done || !st->bucket || !st->raw_nr || !st->raw_idle || !st->raw_young ||
		    !st->llc_load || !st->byid || !st->llc_away) {
			free_scratch(st);
			st->nscratch_cpus = st->nscratch_llcs = 0;
			st->scratch_tasks = 0;
			return -ENOMEM;
		}
	}
	return 0;
}

/*
 * A pinned task sampled outside its pin is stale (sched_setaffinity moves it at once):
 * it is counted on its pin's LLC, and on no CPU.
 */
static const struct spread_pin *stale_pin(const struct spread_state *st, const struct snap_task *t)
{
	ssize_t i = spread_pin_idx(st, t->tid, t->start_time);

	return i >= 0 && !CPU_ISSET(t->cpu, &st->pins[i].mask) ? &st->pins[i] : NULL;
}

/*
 * A pinned task listed nowhere while a CPU of its pin shows counts taken no later than
 * the pin, or before the last tick (a silent CPU's last record: a vCPU the host did not
 * run), may well run there unseen: it counts on that CPU, the least loaded such. Taken
 * for idle, or for running one hog where the kernel had put two, that CPU drew a third
 * hog to an LLC that two balance (the qemu tier's t_spread, under host load). A pinned
 * task listed nowhere while its CPUs' counts are newer sleeps, and is no load.
 */
/* Whether CPU c's counts may predate pin p: taken no later than it, or before the last tick. */
static bool counts_predate(const struct spread_tick *tk, int c, const struct spread_pin *p)
{
	uint64_t at = snap_cpu_sampled(tk->s, c);

	return at <= p->since_ns || (tk->st->prev_now_ns && at < tk->st->prev_now_ns);
}

static void count_unlisted_pins(const struct spread_tick *tk)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;

	for (size_t i = 0; i < st->npins; i++) {
		struct spread_pin *p = &st->pins[i];
		int best = -1, best_nr = 0;

		if (p->listed)
			continue;
		for (int c = 0; c < s->nr_cpu_ids; c++) {
			int nr;

			if (!CPU_ISSET(c, &p->mask) || !spread_on_cpu(s, c) ||
			    !counts_predate(tk, c, p))
				continue;
			nr = (int)s->cpus[c].nr_running + st->cpu_nr[c];
			if (best < 0 || nr < best_nr) {
				best = c;
				best_nr = nr;
			}
		}
		if (best >= 0) {
			st->cpu_nr[best]++;
			p->counted_away = true;
		}
	}
}

/*
 * A pinned task counted on a CPU of its pin is not also load on the CPU it left, whose
 * counts, where they predate the pin, still hold it (its vCPU not run since, or idle
 * and silent). Counted twice, the hog that left made its LLC look overloaded by one
 * more, and a third hog, alone on its CPU, was pinned away (the qemu tier's t_spread,
 * on a quiet host). A task listed where it left is stale, and count_tasks() takes it there.
 */
static void uncount_left_behind(const struct spread_tick *tk)
{
	struct spread_state *st = tk->st;

	for (size_t i = 0; i < st->npins; i++) {
		const struct spread_pin *p = &st->pins[i];
		int c = p->from_cpu;

		if (p->counted_away && spread_on_cpu(tk->s, c) && !CPU_ISSET(c, &p->mask) &&
		    counts_predate(tk, c, p))
			st->cpu_nr[c]--;
	}
}

/*
 * Per-CPU and per-LLC runnable counts, idle CPUs per LLC, tasks bucketed by CPU, and
 * the listed tasks per LLC that are not settled yet.
 */
static void count_tasks(const struct spread_tick *tk)
{
	const struct snapshot *s = tk->s;
	const struct topo *tp = tk->tp;
	struct spread_state *st = tk->st;
	int *listed = st->bucket_start; /* reused: counts first, then bucket offsets */

	memset(listed, 0, ((size_t)s->nr_cpu_ids + 1) * sizeof(int));
	memset(st->raw_nr, 0, (size_t)tp->nllcs * sizeof(int));
	memset(st->raw_idle, 0, (size_t)tp->nllcs * sizeof(int));
	memset(st->raw_young, 0, (size_t)tp->nllcs * sizeof(int));
	memset(st->llc_done, 0, (size_t)tp->nllcs);
	memset(st->cpu_nr, 0, (size_t)s->nr_cpu_ids * sizeof(int));
	for (size_t i = 0; i < st->npins; i++)
		st->pins[i].listed = st->pins[i].counted_away = false;
	for (size_t i = 0; i < s->ntasks; i++) {
		const struct snap_task *t = &s->tasks[i];
		ssize_t pi;

		if (!spread_on_cpu(s, t->cpu))
			continue;
		pi = spread_pin_idx(st, t->tid, t->start_time);
		if (pi >= 0)
			st->pins[pi].listed = true;
		if (pi >= 0 && !CPU_ISSET(t->cpu, &st->pins[pi].mask)) {
			/* Stale (see stale_pin()): on its pin's LLC, and on no CPU. */
			st->raw_nr[st->pins[pi].to_llc]++;
			st->raw_idle[st->pins[pi].to_llc]--;
			st->cpu_nr[t->cpu]--; /* the sampler counted it where it no longer is */
			continue;
		}
		if (pi >= 0)
			st->pins[pi].counted_away = true;
		listed[t->cpu]++;
		st->raw_young[tp->cpus[t->cpu].llc] += !spread_settled(tk, t) || kernel_thread(t);
	}
	count_unlisted_pins(tk);
	uncount_left_behind(tk);
	for (int c = 0; c < s->nr_cpu_ids; c++) {
		int nr;

		if (!tp->cpus[c].present)
			continue;
		nr = (int)s->cpus[c].nr_running + st->cpu_nr[c];
		st->cpu_nr[c] = nr > listed[c] ? nr : listed[c];
		st->raw_nr[tp->cpus[c].llc] += st->cpu_nr[c];
		if (st->cpu_nr[c] == 0)
			st->raw_idle[tp->cpus[c].llc]++;
	}
	/* Bucket the tasks not stale by CPU: prefix sums, then fill. */
	for (int c = 0, sum = 0; c <= s->nr_cpu_ids; c++) {
		int n = c < s->nr_cpu_ids ? listed[c] : 0;

		listed[c] = sum;
		sum += n;
	}
	for (size_t i = 0; i < s->ntasks; i++) {
		const struct snap_task *t = &s->tasks[i];

		if (spread_on_cpu(s, t->cpu) && !stale_pin(st, t))
			st->bucket[listed[t->cpu]++] = (int)i;
	}
	/* listed[c] now ends CPU c's bucket; it starts where CPU c-1's ended. */
}

/*
 * What a decision may trust. A task that started less than min_residency_ms ago is the
 * kernel's (it placed it at fork or exec), and so is a kernel thread
 * (kernel_thread): it is load on a target, but as a source it neither moves nor makes
 * another task move. One settled task more than CPUs could be
 * a short task caught running: as a source, such an LLC counts the lower of this
 * tick's and the last one's settled tasks; two or more over its CPUs are load at once.
 * A target counts the higher of its runnable tasks now and its settled ones then, and
 * an idle CPU is one idle in both ticks. With no last tick (at start) an overload of
 * one task is not trusted yet, and idle CPUs are.
 */
static void persist(const struct spread_tick *tk)
{
	struct spread_state *st = tk->st;
	bool have_prev = st->nprev_llcs == tk->tp->nllcs;

	for (int l = 0; l < tk->tp->nllcs; l++) {
		int raw = st->raw_nr[l], cap = tk->tp->llcs[l].ncpus;
		int src = raw - st->raw_young[l];
		int pn = have_prev ? st->prev_nr[l] : 0;
		int pi = have_prev ? st->prev_idle[l] : st->raw_idle[l];

		st->llc_nr[l] = src - cap >= 2 || src < pn ? src : pn;
		st->llc_load[l] = raw > pn ? raw : pn;
		st->llc_idle[l] = st->raw_idle[l] < pi ? st->raw_idle[l] : pi;
	}
}

/* Keeps this tick's settled and idle counts, moves applied, for the next. 0 or -ENOMEM. */
static int remember_counts(const struct spread_tick *tk)
{
	struct spread_state *st = tk->st;
	int n = tk->tp->nllcs;

	if (st->nprev_llcs != n) {
		int *a = realloc(st->prev_nr, (size_t)n * sizeof(int));
		int *b = a ? realloc(st->prev_idle, (size_t)n * sizeof(int)) : NULL;

		if (a)
			st->prev_nr = a;
		if (!b)
			return -ENOMEM;
		st->prev_idle = b;
		st->nprev_llcs = n;
	}
	for (int l = 0; l < n; l++)
		st->prev_nr[l] = st->raw_nr[l] - st->raw_young[l];
	memcpy(st->prev_idle, st->raw_idle, (size_t)n * sizeof(int));
	st->prev_now_ns = tk->s->now_ns;
	return 0;
}

int spread_bucket_begin(const struct spread_state *st, int cpu)
{
	return cpu == 0 ? 0 : st->bucket_start[cpu - 1];
}

/* ---- rules (a), (c): choosing source and target LLCs ---- */

static int pick_source(const struct spread_tick *tk)
{
	const struct topo *tp = tk->tp;
	const struct spread_state *st = tk->st;
	int best = -1;

	for (int l = 0; l < tp->nllcs; l++) {
		if (st->llc_done[l] || !spread_llc_ok(tk, l) || st->llc_nr[l] <= tp->llcs[l].ncpus)
			continue;
		if (best < 0 || spread_load_less(st->llc_nr[best], tp->llcs[best].ncpus, st->llc_nr[l],
					  tp->llcs[l].ncpus))
			best = l;
	}
	return best;
}

static int closeness(const struct topo *tp, int a, int b)
{
	return (tp->llcs[a].numa == tp->llcs[b].numa) + (tp->llcs[a].package == tp->llcs[b].package);
}

static int pick_target(const struct spread_tick *tk, int src)
{
	const struct topo *tp = tk->tp;
	const struct spread_state *st = tk->st;
	int best = -1;

	for (int l = 0; l < tp->nllcs; l++) {
		if (l == src || st->llc_idle[l] <= 0 || !spread_llc_ok(tk, l))
			continue;
		if (best < 0)
			best = l;
		else if (spread_load_less(st->llc_load[l], tp->llcs[l].ncpus, st->llc_load[best],
				   tp->llcs[best].ncpus))
			best = l;
		else if (!spread_load_less(st->llc_load[best], tp->llcs[best].ncpus, st->llc_load[l],
				    tp->llcs[l].ncpus) &&
			 closeness(tp, src, l) > closeness(tp, src, best))
			best = l;
	}
	return best;
}

static bool clearly_less_loaded(const struct spread_tick *tk, int src, int dst)
{
	const struct topo *tp = tk->tp;
	const struct spread_state *st = tk->st;

	return (long long)st->llc_nr[src] * tp->llcs[dst].ncpus * 100 >
	       (long long)(st->llc_load[dst] + 1) * tp->llcs[src].ncpus * tk->c->imbalance_pct;
}

/* ---- rules (b), (d), (e): choosing the task ---- */

bool spread_movable(const struct spread_tick *tk, const struct snap_task *t)
{
	/* A task that used no CPU since the last sample was caught running for an instant. */
	return !(t->flags & SNAP_TASK_NO_CPU) && spread_settled(tk, t) &&
	       !spread_ineligible(tk->s, tk->c, t) &&
	       spread_pin_idx(tk->st, t->tid, t->start_time) < 0 &&
	       !spread_recently_moved(tk->st, t->tid, t->start_time);
}

/* ---- whole_processes: the kernel's cache-aware scheduling keeps a process together ---- */

static int cmp_tgllc(const void *a, const void *b)
{
	const struct spread_tgllc *x = a, *y = b;

	if (x->tgid != y->tgid)
		return (x->tgid > y->tgid) - (x->tgid < y->tgid);
	return (x->llc > y->llc) - (x->llc < y->llc);
}

/* Every bucketed user task's (tgid, LLC), sorted, for together_in(). */
static void index_processes(const struct spread_tick *tk)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	int nslots = s->nr_cpu_ids ? st->bucket_start[s->nr_cpu_ids - 1] : 0;

	st->nbytgllc = 0;
	for (int b = 0; b < nslots; b++) {
		const struct snap_task *t;

		if (st->bucket[b] < 0)
			continue;
		t = &s->tasks[st->bucket[b]];
		if (!kernel_thread(t) && t->cpu >= 0 && t->cpu < s->nr_cpu_ids)
			st->bytgllc[st->nbytgllc++] =
				(struct spread_tgllc){ t->tgid, tk->tp->cpus[t->cpu].llc };
	}
	if (st->nbytgllc > 1)
		qsort(st->bytgllc, st->nbytgllc, sizeof(*st->bytgllc), cmp_tgllc);
}

/* Whether another runnable task of t's process is bucketed in LLC llc too. */
static bool together_in(const struct spread_state *st, const struct snap_task *t, int llc)
{
	struct spread_tgllc key = { t->tgid, llc };
	const struct spread_tgllc *e =
		bsearch(&key, st->bytgllc, st->nbytgllc, sizeof(key), cmp_tgllc);
	size_t i;

	if (!e)
		return false;
	i = (size_t)(e - st->bytgllc);
	while (i > 0 && cmp_tgllc(&st->bytgllc[i - 1], &key) == 0)
		i--;
	return i + 1 < st->nbytgllc && cmp_tgllc(&st->bytgllc[i + 1], &key) == 0;
}

/* ---- keep_pairs: tasks that wake each other move together or not at all ---- */

static int cmp_slot(const void *a, const void *b)
{
	const struct spread_slot *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

/*
 * Indexes the bucketed tasks by tid, so a task's partner is found in O(log n). When no
 * task names a partner (the proc sampler never does) the index stays empty: the sort
 * would cost more than all the rest of the tick.
 */
static void index_tasks(const struct spread_tick *tk)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	int nslots = s->nr_cpu_ids ? st->bucket_start[s->nr_cpu_ids - 1] : 0;
	bool partners = false;

	st->nbyid = 0;
	for (size_t i = 0; i < s->ntasks && !partners; i++)
		partners = s->tasks[i].partner != 0;
	if (!partners)
		return;
	for (int b = 0; b < nslots; b++)
		st->byid[st->nbyid++] = (struct spread_slot){ s->tasks[st->bucket[b]].tid, b };
	if (st->nbyid > 1)
		qsort(st->byid, st->nbyid, sizeof(*st->byid), cmp_slot);
}

/* The bucket slot of t's partner when it is runnable and bucketed, else -1. */
static int partner_bucketed(const struct spread_state *st, const struct snap_task *t)
{
	struct spread_slot key = { .tid = t->partner }, *hit;

	if (!t->partner || !st->nbyid)
		return -1;
	hit = bsearch(&key, st->byid, st->nbyid, sizeof(key), cmp_slot);
	return hit && st->bucket[hit->slot] >= 0 ? hit->slot : -1;
}

/* The bucket slot of t's partner when it is runnable and bucketed in LLC l, else -1. */
static int partner_slot(const struct spread_tick *tk, const struct snap_task *t, int l)
{
	int slot = partner_bucketed(tk->st, t);

	if (slot < 0)
		return -1;
	return topo_llc_of(tk->tp, tk->s->tasks[tk->st->bucket[slot]].cpu) == l ? slot : -1;
}

/*
 * The LLC t's partner is in: where it is listed runnable, else where the sampler saw
 * it last run (a partner asleep); -1 where unknown.
 */
static int partner_llc(const struct spread_tick *tk, const struct snap_task *t)
{
	int slot = partner_bucketed(tk->st, t);

	if (slot >= 0)
		return topo_llc_of(tk->tp, tk->s->tasks[tk->st->bucket[slot]].cpu);
	return t->partner && t->partner_placed ? topo_llc_of(tk->tp, t->partner_cpu) : -1;
}

/*
 * With keep_pairs, a task whose partner runs in the same LLC may leave only with it:
 * the target needs two idle CPUs, the budget two moves, the partner must be movable,
 * and its CPU must keep a task after both go (rule b holds for the partner too). A
 * task whose partner is not runnable with it may go alone only to the partner's LLC
 * (where they meet again); one whose partner sleeps in its own LLC stays.
 */
static bool pair_may_leave(const struct spread_tick *tk, const struct snap_task *t, int src,
			   int dst)
{
	const struct spread_state *st = tk->st;
	const struct snap_task *p;
	int ps, pl;

	if (!tk->c->keep_pairs || !t->partner)
		return true;
	ps = partner_slot(tk, t, src);
	if (ps < 0) {
		pl = partner_llc(tk, t);
		return pl < 0 || pl == dst;
	}
	p = &tk->s->tasks[st->bucket[ps]];
	return st->llc_idle[dst] >= 2 && tk->budget >= 2 && spread_movable(tk, p) &&
	       st->cpu_nr[p->cpu] - (p->cpu == t->cpu) >= 2;
}

/*
 * On the CPUs of src that run two or more tasks (b), busiest CPU first, the eligible
 * task with the highest tid: the youngest settled thread, likely the least cache in
 * the LLC. Returns the bucket slot, or -1.
 */
static int pick_task(const struct spread_tick *tk, int src, int dst)
{
	const struct snapshot *s = tk->s;
	const struct topo *tp = tk->tp;
	const struct spread_state *st = tk->st;
	int best_slot = -1, best_nr = 1;

	for (int cpu = 0; cpu < s->nr_cpu_ids; cpu++) {
		int slot = -1;

		if (!tp->cpus[cpu].present || tp->cpus[cpu].llc != src || st->cpu_nr[cpu] <= best_nr)
			continue;
		for (int b = spread_bucket_begin(st, cpu); b < st->bucket_start[cpu]; b++) {
			const struct snap_task *t;

			if (st->bucket[b] < 0)
				continue;
			t = &s->tasks[st->bucket[b]];
			if (t->lat_nice > 0 && st->reserved[dst])
				continue; /* latency_apart keeps dst for latency tasks */
			if (tk->c->whole_processes && together_in(st, t, src))
				continue; /* the kernel keeps it with its process */
			if (spread_movable(tk, t) && pair_may_leave(tk, t, src, dst) &&
			    (slot < 0 || t->tid > s->tasks[st->bucket[slot]].tid))
				slot = b;
		}
		if (slot >= 0) {
			best_slot = slot;
			best_nr = st->cpu_nr[cpu];
		}
	}
	return best_slot;
}

/* ---- the tick ---- */

static int release(struct spread_tick *tk)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	const uint64_t min_ns = tk->c->min_residency_ms * NSEC_PER_MSEC;
	const uint64_t max_ns = (uint64_t)tk->c->max_pin_ms * NSEC_PER_MSEC;
	int *away = st->llc_away;

	memset(away, 0, (size_t)tk->tp->nllcs * sizeof(int));
	for (size_t i = 0; i < st->npins; i++)
		away[st->pins[i].from_llc] += st->pins[i].kind == PIN_SPREAD;
	for (size_t i = 0; i < st->npins && tk->budget > 0;) {
		struct spread_pin *p = &st->pins[i];
		uint64_t age = s->now_ns - p->since_ns;
		const char *why = NULL;
		int from = p->from_llc;

		if (p->kind != PIN_SPREAD) {
			i++;
			continue; /* place.c's: it releases them */
		}
		/*
		 * Room means the LLC of origin could take back every task pinned away from it,
		 * not just this one (else they return one by one and are pinned again), and
		 * for min_residency: a bursty LLC that dips for a tick has no room.
		 */
		if (st->llc_load[p->from_llc] + away[p->from_llc] > tk->tp->llcs[p->from_llc].ncpus)
			p->room_ns = 0;
		else if (!p->room_ns)
			p->room_ns = s->now_ns;
		if (!spread_llc_ok(tk, p->to_llc) || !spread_llc_ok(tk, p->from_llc))
			why = "small_llc"; /* a reload raised min_llc_cores, or a core went offline */
		else if (age >= max_ns)
			why = "max_pin";
		else if (age >= min_ns && p->room_ns && s->now_ns - p->room_ns >= min_ns)
			why = "balanced";
		if (!why) {
			i++;
			continue;
		}
		if (spread_plan_unpin(tk, i, why) < 0)
			return -ENOMEM;
		away[from]--;
		st->llc_load[from]++; /* it may well go back */
		tk->budget--;
	}
	return 0;
}

static int overload_pin(struct spread_tick *tk, int slot, int dst)
{
	return spread_plan_pin(tk, slot, dst, &tk->tp->llcs[dst].cpus, PIN_SPREAD, "overload");
}

static int spread(struct spread_tick *tk)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;

	while (tk->budget > 0) {
		int src = pick_source(tk), dst, slot, pslot;

		if (src < 0)
			break;
		dst = pick_target(tk, src);
		if (dst < 0)
			break; /* no LLC has an idle CPU: nothing to spread to for anyone */
		slot = clearly_less_loaded(tk, src, dst) ? pick_task(tk, src, dst) : -1;
		if (slot < 0) {
			st->llc_done[src] = 1;
			continue;
		}
		pslot = tk->c->keep_pairs ? partner_slot(tk, &s->tasks[st->bucket[slot]], src) : -1;
		if (overload_pin(tk, slot, dst) < 0)
			return -ENOMEM;
		tk->budget--;
		if (pslot >= 0) {
			if (overload_pin(tk, pslot, dst) < 0)
				return -ENOMEM;
			tk->budget--;
		}
	}
	return 0;
}

int spread_decide(const struct snapshot *s, const struct spread_conf *c, struct spread_state *st,
	       struct plan *plan)
{
	struct spread_tick tk = { .s = s, .tp = s->topo, .c = c, .st = st, .plan = plan,
				  .budget = c->max_moves_per_tick };
	size_t before = plan->n;
	int r;

	if (size_scratch(&tk) < 0)
		return -ENOMEM;
	expire_recent(st, s->now_ns, c->min_residency_ms * NSEC_PER_MSEC);
	count_tasks(&tk);
	if (c->keep_pairs)
		index_tasks(&tk);
	if (c->whole_processes)
		index_processes(&tk);
	persist(&tk);
	r = release(&tk);
	if (r == 0)
		r = place_decide(&tk);
	if (r == 0)
		r = spread(&tk);
	if (r == 0)
		r = remember_counts(&tk);
	if (r < 0)
		return r;
	plan_finish(plan);
	return (int)(plan->n - before);
}
