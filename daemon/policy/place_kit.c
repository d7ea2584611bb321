/*
 * Policy stage: the kit the placement rules share (place_int.h): the memory of the
 * latency tasks, which latency_apart and fast_cores read, and the steps every rule
 * takes (which task it may pin, how it gives its pins back). Pure: no I/O.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>

#include "policy/place_int.h"
#include "policy/spread.h"
#include "policy/spread_int.h"
#include "rqbalance.h"
#include "util/util.h"

/* ---- memory: latency tasks by tid ---- */

struct place_lat *place_kit_find_lat(struct spread_state *st, pid_t tid, uint64_t start)
{
	size_t lo = util_pid_lower_bound(st->lats, st->nlats, sizeof(*st->lats),
					 offsetof(struct place_lat, tid), tid);

	for (; lo < st->nlats && st->lats[lo].tid == tid; lo++)
		if (st->lats[lo].start_time == start)
			return &st->lats[lo];
	return NULL;
}

/*
 * A task seen busy stays busy while it runs again within min_residency_ms (listed, or
 * its CPU time grown, latseen.c): a sample of instants sees a frame loop's workers
 * runnable every tick when they share a CPU, one after the other, but seldom or never
 * when each has one, though they work as much (fast_cores would else find them fitting
 * one core once apart, and crowded once held there).
 */
static void keep_busy(const struct spread_tick *tk)
{
	uint64_t now = tk->s->now_ns, window = tk->c->min_residency_ms * NSEC_PER_MSEC;
	struct spread_state *st = tk->st;

	for (size_t i = 0; i < st->nlats; i++) {
		struct place_lat *l = &st->lats[i];

		if (l->seen_ns == now && l->busy_ns && now - l->busy_ns < window)
			l->busy_ns = now;
	}
}

/*
 * The latency tasks the snapshot names, each with where it last ran and when, kept
 * from the last tick: both lists are sorted by tid, so a merge. 0 or -ENOMEM.
 */
int place_kit_update_lats(const struct spread_tick *tk)
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
		l = place_kit_find_lat(st, t->tid, t->start_time);
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
		l = place_kit_find_lat(st, sl->tid, sl->start_time);
		if (l && l->seen_ns != s->now_ns) {
			l->llc = tk->tp->cpus[sl->ran_cpu].llc;
			l->seen_ns = s->now_ns;
		}
	}
	keep_busy(tk);
	return 0;
}

/* ---- what every rule does ---- */

/* Gives back every pin of kind that keep() refuses, within the budget. 0 or -ENOMEM. */
int place_kit_release(struct spread_tick *tk, enum spread_pin_kind kind, place_keep_fn *keep,
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

/*
 * A task the rules may pin: eligible, not pinned by any rule yet, and not moved
 * within min_residency_ms (rule d: a pin given back is not made again at once); and
 * one that used CPU since the last sample, but for a latency task, which runs in
 * bursts too short to show in one (it is pinned to keep it on its LLC, not to move
 * load).
 */
bool place_kit_pinnable(const struct spread_tick *tk, const struct snap_task *t)
{
	return (!(t->flags & SNAP_TASK_NO_CPU) || t->lat_nice < 0) &&
	       !spread_ineligible(tk->s, tk->c, t) &&
	       spread_pin_idx(tk->st, t->tid, t->start_time) < 0 &&
	       !spread_recently_moved(tk->st, t->tid, t->start_time);
}

/* The least loaded spreadable LLC per CPU other than not; -1 if none. */
int place_kit_least_loaded(const struct spread_tick *tk, int not, const unsigned char *skip)
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

/* A state that changes only after the opposite has held for min_residency_ms. */
void place_kit_settle(const struct spread_tick *tk, bool now, bool *state, uint64_t *since_ns)
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
