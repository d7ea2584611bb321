/*
 * Inside the spread policy: what spread.c and the placement rules (place*.c) share,
 * most of it in spread_tick.c, which calls no other policy file.
 * Nothing outside daemon/policy/ includes this.
 */
#ifndef RQB_SPREAD_INT_H
#define RQB_SPREAD_INT_H

#include <stddef.h>
#include <sys/types.h>

#include "policy/spread.h"
#include "util/util.h"

/*
 * One decision tick, made once by spread_decide and handed to the rules as one pointer:
 * what every rule of spread.c and place*.c reads (the snapshot, its topology, the config)
 * and what it builds (the policy's memory, the plan, the moves left). A function that
 * takes it const changes neither st, plan nor budget.
 */
struct spread_tick {
	const struct snapshot *s;       /* this tick's, immutable */
	const struct topo *tp;          /* s->topo */
	const struct spread_conf *c;
	struct spread_state *st;        /* updated as if the plan is carried out */
	struct plan *plan;              /* appended to */
	unsigned budget;                /* moves (pins plus releases) left this tick */
};

/*
 * The pins and recent moves, sorted by tid (spread_tick.c). The index of a task's pin,
 * or -1, is inline: spread.c looks up every listed task's each tick.
 */
static inline ssize_t spread_pin_idx(const struct spread_state *st, pid_t tid, uint64_t start)
{
	size_t i = util_pid_lower_bound(st->pins, st->npins, sizeof(*st->pins),
					offsetof(struct spread_pin, tid), tid);

	for (; i < st->npins && st->pins[i].tid == tid; i++)
		if (st->pins[i].start_time == start)
			return (ssize_t)i;
	return -1;
}

int spread_add_pin(struct spread_state *st, const struct spread_pin *p);
void spread_del_pin(struct spread_state *st, size_t i);
bool spread_recently_moved(const struct spread_state *st, pid_t tid, uint64_t start);
int spread_note_move(struct spread_state *st, pid_t tid, uint64_t start, uint64_t now_ns);

/* Rules (d) and (e): may be moved at all (spread.c). */
bool spread_movable(const struct spread_tick *tk, const struct snap_task *t);

/*
 * Asked for every task or LLC of every tick, by spread.c and the rules alike: inline,
 * so that a call across files does not slow the tick's loops.
 */

/*
 * Rule (d): started at least min_residency_ms ago: the kernel placed a task when it
 * started (fork and exec balancing), and such a task has stayed where it was put as
 * long as a moved one must. Unknown ages (a replay written without them) count as
 * settled.
 */
static inline bool spread_settled(const struct spread_tick *tk, const struct snap_task *t)
{
	const struct snapshot *s = tk->s;
	uint64_t min_ticks = (uint64_t)tk->c->min_residency_ms * s->tick_hz / 1000;

	return !s->tick_hz || t->start_time + min_ticks <= s->uptime_ticks;
}

static inline bool spread_on_cpu(const struct snapshot *s, int cpu)
{
	return cpu >= 0 && cpu < s->nr_cpu_ids && s->topo->cpus[cpu].present;
}

/* Whether LLC l is big enough to spread across (min_llc_cores), from or to. */
static inline bool spread_llc_ok(const struct spread_tick *tk, int l)
{
	return tk->tp->llcs[l].ncores >= (int)tk->c->min_llc_cores;
}

/* a/b < c/d for loads per CPU, without division. */
static inline bool spread_load_less(int a, int b, int c, int d)
{
	return (long long)a * d < (long long)c * b;
}
/* Where CPU cpu's bucket of task slots begins; it ends at st->bucket_start[cpu] (spread.c). */
int spread_bucket_begin(const struct spread_state *st, int cpu);

/*
 * Pins the task in bucket slot to mask (with its own allowed CPUs), counted on LLC dst
 * where it has to move; a pin of kind with why in the plan. 0 or -ENOMEM.
 */
int spread_plan_pin(struct spread_tick *tk, int slot, int dst, const cpu_set_t *mask,
		    enum spread_pin_kind kind, const char *why);
/* Gives pin i back (its task's affinity before the pin), why in the plan. 0 or -ENOMEM. */
int spread_plan_unpin(struct spread_tick *tk, size_t i, const char *why);

/*
 * place.c: the placement rules for one tick, after spread's releases and before its
 * pins, within the tick's budget of moves. 0 or -ENOMEM.
 */
int place_decide(struct spread_tick *tk);
/* Pin p of a placement rule was lost (refused or undone): told to the rule that made it. */
void place_pin_lost(struct spread_state *st, const struct spread_pin *p);

#endif
