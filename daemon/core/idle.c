/*
 * Idle backoff (core): the next tick's interval from whether the ticks had anything
 * to do. Pure: never reads the clock, never touches the loop or the system.
 */
#include "core/idle.h"

/* Twice the interval now, at least the first heartbeat, at most max_ns, never under tick_ns. */
static uint64_t heartbeat(uint64_t now_ns, uint64_t tick_ns, uint64_t max_ns)
{
	uint64_t next = now_ns * 2 < IDLE_FIRST_NS ? IDLE_FIRST_NS : now_ns * 2;

	if (next > max_ns)
		next = max_ns;
	return next < tick_ns ? tick_ns : next;
}

uint64_t idle_next(struct idle_state *st, const struct idle_in *in)
{
	if (in->busy || in->woken || in->max_ns <= in->tick_ns) {
		st->quiet = 0;
		st->interval_ns = in->tick_ns;
		return st->interval_ns;
	}
	if (st->quiet < IDLE_AFTER_TICKS)
		st->quiet++;
	if (st->quiet < IDLE_AFTER_TICKS || st->interval_ns < in->tick_ns)
		st->interval_ns = in->tick_ns;
	if (st->quiet >= IDLE_AFTER_TICKS)
		st->interval_ns = heartbeat(st->interval_ns, in->tick_ns, in->max_ns);
	return st->interval_ns;
}

bool idle_backed_off(const struct idle_state *st, uint64_t tick_ns)
{
	return st->interval_ns > tick_ns;
}
