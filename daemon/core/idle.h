/*
 * Idle backoff: how long until the next tick. A pure decision, state in, interval out:
 * no clock, no I/O; the tick says whether it had anything to do, the loop obeys.
 */
#ifndef RQB_IDLE_H
#define RQB_IDLE_H

#include <stdbool.h>
#include <stdint.h>

/* Quiet ticks in a row before the first slow heartbeat (1 s at the default tick). */
#define IDLE_AFTER_TICKS 10
/* The first slow heartbeat; each quiet heartbeat after it doubles, up to the max. */
#define IDLE_FIRST_NS 1000000000ull
/*
 * The longest heartbeat idle_backoff_ms may ask for: well under half of the unit's
 * WatchdogSec=30s, the period at which sd_event sends WATCHDOG=1 (the loop sends it
 * on its own wakeups, but a heartbeat this short never lets it run late).
 */
#define IDLE_MAX_MS 10000

struct idle_state {
	uint32_t quiet;          /* quiet ticks in a row (saturates) */
	uint64_t interval_ns;    /* the interval now: the tick's, or a heartbeat */
};

struct idle_in {
	uint64_t tick_ns;        /* the configured interval */
	uint64_t max_ns;         /* the longest heartbeat; <= tick_ns: backoff off */
	bool busy;               /* something to do: tasks managed, something to spread */
	bool woken;              /* an event since the last tick (ctl, reload, hotplug, a rule) */
};

/* The interval until the next tick; updates st. */
uint64_t idle_next(struct idle_state *st, const struct idle_in *in);
/* Whether st is on a heartbeat now, slower than the configured tick. */
bool idle_backed_off(const struct idle_state *st, uint64_t tick_ns);

#endif
