/*
 * The idle backoff's decision: quiet ticks slow the tick to a heartbeat that grows to
 * its bound; anything to do, or an event, brings the configured tick back at once.
 */
#include "rqbalance.h"
#include "core/idle.h"
#include "kit.h"

#define TICK (100 * NSEC_PER_MSEC)
#define MAX (5000 * NSEC_PER_MSEC)

static uint64_t quiet(struct idle_state *st, uint64_t max_ns)
{
	struct idle_in in = { .tick_ns = TICK, .max_ns = max_ns };

	return idle_next(st, &in);
}

KIT_TEST(backs_off_after_quiet_ticks)
{
	struct idle_state st = { 0 };

	for (int i = 1; i < IDLE_AFTER_TICKS; i++) {
		assert_int_equal(quiet(&st, MAX), TICK);
		assert_false(idle_backed_off(&st, TICK));
	}
	assert_int_equal(quiet(&st, MAX), IDLE_FIRST_NS);
	assert_true(idle_backed_off(&st, TICK));
	assert_int_equal(quiet(&st, MAX), 2 * IDLE_FIRST_NS);
	assert_int_equal(quiet(&st, MAX), 4 * IDLE_FIRST_NS);
	assert_int_equal(quiet(&st, MAX), MAX);
	assert_int_equal(quiet(&st, MAX), MAX);
}

KIT_TEST(busy_or_woken_comes_back)
{
	struct idle_state st = { 0 };
	struct idle_in busy = { .tick_ns = TICK, .max_ns = MAX, .busy = true };
	struct idle_in woken = { .tick_ns = TICK, .max_ns = MAX, .woken = true };

	for (int i = 0; i < IDLE_AFTER_TICKS + 3; i++)
		quiet(&st, MAX);
	assert_true(idle_backed_off(&st, TICK));
	assert_int_equal(idle_next(&st, &busy), TICK);
	assert_false(idle_backed_off(&st, TICK));
	/* The streak starts again: one quiet tick is not enough. */
	assert_int_equal(quiet(&st, MAX), TICK);
	for (int i = 0; i < IDLE_AFTER_TICKS + 3; i++)
		quiet(&st, MAX);
	assert_int_equal(idle_next(&st, &woken), TICK);
	assert_false(idle_backed_off(&st, TICK));
}

KIT_TEST(off_never_backs_off)
{
	struct idle_state st = { 0 };

	for (int i = 0; i < 3 * IDLE_AFTER_TICKS; i++)
		assert_int_equal(quiet(&st, 0), TICK);
	assert_false(idle_backed_off(&st, TICK));
}

KIT_TEST(bound_below_first_heartbeat)
{
	struct idle_state st = { 0 };
	struct idle_in slow = { .tick_ns = 2 * NSEC_PER_SEC, .max_ns = 3 * NSEC_PER_SEC };
	uint64_t v = 0;

	for (int i = 0; i < 2 * IDLE_AFTER_TICKS; i++)
		assert_int_equal(quiet(&st, 500 * NSEC_PER_MSEC), i + 1 < IDLE_AFTER_TICKS ? TICK
							: 500 * NSEC_PER_MSEC);
	/* A tick already slower than the first heartbeat never gets faster. */
	st = (struct idle_state){ 0 };
	for (int i = 0; i < 2 * IDLE_AFTER_TICKS; i++) {
		v = idle_next(&st, &slow);
		assert_true(v >= slow.tick_ns && v <= slow.max_ns);
	}
	assert_int_equal(v, slow.max_ns);
}
