/*
 * Policy stage: the placement rule fast_cores ([balance] fast_cores, off by default;
 * one row of place.c's table), and place_fast_cpus, which the daemon, ctl and the
 * simulator ask too. Pure: no I/O.
 *
 * For parts with two kinds of core (Intel's P- and E-cores, an AMD X3D
 * part's two CCDs): the tasks with a negative value are pinned to the fast CPUs
 * (place_fast_cpus), and tasks with a positive value listed there are pinned to the
 * others while a latency task lives (ran in the last APART_IDLE_NS). Soft pins, given
 * back: a latency task's when it sleeps or exits (as latency_apart's) or when more
 * latency tasks are busy (listed runnable, having used CPU, at a tick of the last
 * min_residency_ms, or running since: place_kit.c) than the fast CPUs have cores:
 * such a game loses when squeezed
 * onto them (GameMode's pinning of a whole game to one CCD, its issue 453), so then
 * none is held there until they fit for min_residency_ms; a batch task's when no
 * latency task lives, or when batch work outnumbers the other CPUs while a fast CPU is
 * idle, as latency_apart's. Where the fast CPUs are whole LLCs, spread sends no batch
 * task there while a latency task lives. With latency_apart also on, its pins come
 * first: a task has one pin at a time.
 */
#include <stddef.h>

#include "policy/place_int.h"
#include "policy/spread.h"
#include "policy/spread_int.h"
#include "rqbalance.h"

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
	int busy;               /* of them, listed runnable with CPU within min_residency_ms */
};

/*
 * Busy counts a latency task listed runnable with CPU at any tick of the last
 * min_residency_ms (at least this tick or the last), not at one: a tick samples an
 * instant, and a frame loop's workers, a few ms of each frame side by side, are caught
 * at once seldom while apart, but every tick once held on too few cores, one after the
 * other. A count of one instant thus flips with the rule's own pins (fitting while
 * apart, crowded while held); over the window each busy worker counts wherever it runs.
 */
static void fast_look(const struct spread_tick *tk, struct fast_seen *w)
{
	const struct spread_state *st = tk->st;
	uint64_t now = tk->s->now_ns, window = tk->c->min_residency_ms * NSEC_PER_MSEC;

	w->live = w->busy = 0;
	for (size_t i = 0; i < st->nlats; i++) {
		const struct place_lat *l = &st->lats[i];

		if (l->llc < 0 || now - l->seen_ns >= APART_IDLE_NS)
			continue;
		w->live++;
		w->busy += l->busy_ns && (l->busy_ns == now || l->busy_ns >= st->place_prev_ns ||
					  now - l->busy_ns < window);
	}
}

/*
 * Crowded: more busy latency tasks than fast cores (the game loses now); fitting
 * again counts after min_residency_ms, so a crowded verdict lasts until no more tasks
 * than cores were busy for two windows running. Short: batch work outnumbers the
 * other CPUs while a fast CPU is idle, settled as latency_apart's.
 */
static void fast_states(const struct spread_tick *tk, const struct fast_seen *w)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	int demand = 0, idle = 0;

	if (w->busy > cores_in(tk->tp, &w->fast))
		st->fast_crowded = true, st->crowded_since_ns = 0;
	else
		place_kit_settle(tk, false, &st->fast_crowded, &st->crowded_since_ns);
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
	place_kit_settle(tk, demand > CPU_COUNT(&w->rest) && (idle > 0 || st->fast_short), &st->fast_short,
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
		const struct place_lat *l = place_kit_find_lat(tk->st, p->tid, p->start_time);
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
		if (!t->lat_nice || !place_kit_pinnable(tk, t))
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

void place_fast_forget(struct spread_state *st)
{
	st->fast_crowded = st->fast_short = false;
	st->crowded_since_ns = st->fast_short_since_ns = 0;
}

int place_fast_decide(struct spread_tick *tk)
{
	struct fast_seen w;
	int r;

	if (!place_fast_cpus(tk->tp, &w.fast))
		return PLACE_STAND_DOWN; /* one kind of core: as off */
	CPU_XOR(&w.rest, &tk->tp->online, &w.fast);
	fast_look(tk, &w);
	fast_states(tk, &w);
	r = place_kit_release(tk, PIN_FAST, fast_keep, &w);
	if (r == 0 && w.live)
		r = fast_pins(tk, &w);
	fast_reserve(tk, &w);
	return r;
}
