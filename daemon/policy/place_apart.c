/*
 * Policy stage: the placement rule latency_apart ([balance] latency_apart, off by
 * default; one row of place.c's table). Pure: no I/O.
 *
 * The spreadable LLCs where tasks with a negative latency-nice value
 * ran in the last APART_IDLE_NS are kept for them, all but one LLC at most (those with
 * most such tasks first): those tasks are pinned to the kept LLCs, and tasks with a
 * positive value listed there are pinned to the others. A batch task goes back when
 * no latency task is kept any more (each exited, lost its value, or slept for
 * APART_IDLE_NS), or when batch work has outnumbered the CPUs left to it for
 * min_residency_ms while a kept LLC had an idle CPU: the rule never makes work wait
 * for a CPU that is there; it pins nothing more until the work fits again.
 */
#include <string.h>

#include "policy/place_int.h"
#include "policy/spread.h"
#include "policy/spread_int.h"
#include "rqbalance.h"

static void mask_of(const struct topo *tp, const unsigned char *llcs, bool in, cpu_set_t *ret)
{
	CPU_ZERO(ret);
	for (int l = 0; l < tp->nllcs; l++)
		if (!llcs[l] == !in)
			CPU_OR(ret, ret, &tp->llcs[l].cpus);
}

/* Keeps for latency tasks the LLCs with most of them, all but one spreadable LLC at most. */
static void apart_reserve(const struct spread_tick *tk)
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
	place_kit_settle(tk, now, &st->apart_short, &st->short_since_ns);
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
		const struct place_lat *l = place_kit_find_lat(tk->st, p->tid, p->start_time);

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
		if (!t->lat_nice || !place_kit_pinnable(tk, t))
			continue;
		if (t->lat_nice < 0 && st->reserved[l]) {
			r = spread_plan_pin(tk, b, l, kept, PIN_APART, "latency");
		} else if (t->lat_nice > 0 && st->reserved[l] && !st->apart_short) {
			dst = place_kit_least_loaded(tk, -1, st->reserved);
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

void place_apart_forget(struct spread_state *st)
{
	st->apart_short = false;
}

int place_apart_decide(struct spread_tick *tk)
{
	struct spread_state *st = tk->st;
	cpu_set_t kept, rest;
	int r;

	apart_reserve(tk);
	mask_of(tk->tp, st->reserved, true, &kept);
	mask_of(tk->tp, st->reserved, false, &rest);
	CPU_AND(&rest, &rest, &tk->tp->online);
	short_of_cpus(tk);
	r = place_kit_release(tk, PIN_APART, apart_keep, &kept);
	if (r == 0 && st->nreserved)
		r = apart_pins(tk, &kept, &rest);
	return r;
}
