/* The latency-nice mapping table: what each value turns into, as rqbalance.conf(5) says. */
#include <errno.h>
#include <sched.h>

#include "latency.h"
#include "unit.h"

static const struct lat_conf defaults = {
	.batch_from = 10, .idle_at_19 = false, .uclamp = true, .class_cgroups = true,
};

static struct lat_knobs map(const struct lat_conf *c, int v)
{
	struct lat_knobs k;

	lat_map(c, v, &k);
	return k;
}

static void zero_changes_nothing(void **state)
{
	struct lat_knobs k = map(&defaults, 0);

	assert_int_equal(k.policy, SCHED_OTHER);
	assert_int_equal(k.slice_ns, 0);
	assert_int_equal(k.uclamp_min, -1);
	assert_int_equal(k.uclamp_max, -1);
	assert_false(k.use_class);
	assert_int_equal(k.nice, 0);
	assert_int_equal(k.shares, 1024);
	assert_false(k.cg_idle);
}

/* The documented table, value by value: slice in µs, shares, policy. */
static void table(void **state)
{
	static const struct {
		int v;
		uint64_t slice_us;
		uint32_t shares;
		int policy;
		bool cls;
	} rows[] = {
		{ -20, 100, 88761, SCHED_OTHER, true },
		{ -15, 200, 29154, SCHED_OTHER, true },
		{ -10, 400, 9548, SCHED_OTHER, true },
		{ -5, 800, 3121, SCHED_OTHER, true },
		{ -1, 1392, 1277, SCHED_OTHER, true },
		{ 1, 1838, 820, SCHED_OTHER, true },
		{ 5, 3200, 335, SCHED_OTHER, true },
		{ 9, 5571, 137, SCHED_OTHER, true },
		{ 10, 6400, 110, SCHED_BATCH, true },
		{ 19, 22284, 15, SCHED_BATCH, true },
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct lat_knobs k = map(&defaults, rows[i].v);

		assert_int_equal(k.slice_ns / 1000, rows[i].slice_us);
		assert_int_equal(k.shares, rows[i].shares);
		assert_int_equal(k.policy, rows[i].policy);
		assert_int_equal(k.use_class, rows[i].cls);
		assert_int_equal(k.nice, rows[i].v);
	}
}

/* Shorter for every step down, longer for every step up, always in the kernel's range. */
static void slice_is_monotonic_and_in_range(void **state)
{
	uint64_t prev = 0;

	for (int v = LAT_MIN; v <= LAT_MAX; v++) {
		struct lat_knobs k = map(&defaults, v);

		if (v == 0)
			continue;
		assert_true(k.slice_ns >= LAT_SLICE_MIN_NS && k.slice_ns <= LAT_SLICE_MAX_NS);
		assert_true(k.slice_ns > prev);
		prev = k.slice_ns;
	}
}

static void idle_only_where_configured(void **state)
{
	struct lat_conf c = defaults;

	assert_int_equal(map(&c, 19).policy, SCHED_BATCH);
	assert_false(map(&c, 19).cg_idle);
	c.idle_at_19 = true;
	assert_int_equal(map(&c, 19).policy, SCHED_IDLE);
	assert_true(map(&c, 19).cg_idle);
	assert_int_equal(map(&c, 18).policy, SCHED_BATCH);
	assert_false(map(&c, 18).cg_idle);
}

static void batch_threshold(void **state)
{
	struct lat_conf c = defaults;

	c.batch_from = 20;
	for (int v = LAT_MIN; v <= LAT_MAX; v++)
		assert_int_equal(map(&c, v).policy, SCHED_OTHER);
	c.batch_from = 1;
	assert_int_equal(map(&c, 1).policy, SCHED_BATCH);
	assert_int_equal(map(&c, -1).policy, SCHED_OTHER);
}

static void uclamp_both_sides_and_off(void **state)
{
	struct lat_conf c = defaults;

	assert_int_equal(map(&c, -20).uclamp_min, 1024);
	assert_int_equal(map(&c, -10).uclamp_min, 512);
	assert_int_equal(map(&c, -20).uclamp_max, -1);
	assert_int_equal(map(&c, 19).uclamp_max, 512);
	assert_int_equal(map(&c, 19).uclamp_min, -1);
	c.uclamp = false;
	assert_int_equal(map(&c, -20).uclamp_min, -1);
	assert_int_equal(map(&c, 19).uclamp_max, -1);
}

static void no_class_without_class_cgroups(void **state)
{
	struct lat_conf c = defaults;

	c.class_cgroups = false;
	assert_false(map(&c, -20).use_class);
	assert_int_equal(map(&c, -20).slice_ns, LAT_SLICE_MIN_NS);
}

static void weights_convert_to_cgroup2(void **state)
{
	assert_int_equal(lat_shares_to_weight(1024), 100);
	assert_int_equal(lat_shares_to_weight(88761), 8668);
	assert_int_equal(lat_shares_to_weight(15), 1);
	assert_int_equal(lat_shares_to_weight(2), 1);
	assert_int_equal(lat_shares_to_weight(262144), 10000);
	assert_int_equal(lat_nice_weight(-30), 88761);
	assert_int_equal(lat_nice_weight(40), 15);
}

static void parse(void **state)
{
	const char *why = NULL;
	int v = 99;

	assert_int_equal(lat_parse("-20", &v, &why), 0);
	assert_int_equal(v, -20);
	assert_int_equal(lat_parse("19", &v, &why), 0);
	assert_int_equal(v, 19);
	v = 99;
	assert_int_equal(lat_parse("20", &v, &why), -EINVAL);
	assert_string_equal(why, "out of range -20…19");
	assert_int_equal(lat_parse("-21", &v, &why), -EINVAL);
	assert_int_equal(lat_parse("", &v, &why), -EINVAL);
	assert_int_equal(lat_parse("1x", &v, &why), -EINVAL);
	assert_int_equal(lat_parse("99999999999999999999", &v, &why), -EINVAL);
	assert_int_equal(v, 99);
}

/*
 * boost_cpu_pct caps a negative weight at 1024 x pct / (100 - pct), never below the
 * default; it leaves positive values, and weights already under the cap, alone.
 */
static void boost_bound_is_a_weight(void **state)
{
	struct lat_conf c = defaults;

	assert_int_equal(map(&c, -20).shares, 88761);
	c.boost_cpu_pct = 75;
	assert_int_equal(map(&c, -20).shares, 3072);
	assert_int_equal(map(&c, -1).shares, 1277);
	assert_int_equal(map(&c, 19).shares, 15);
	c.boost_cpu_pct = 40;
	assert_int_equal(map(&c, -20).shares, 1024);
	c.boost_cpu_pct = 99;
	assert_int_equal(map(&c, -20).shares, 88761);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(zero_changes_nothing),
		cmocka_unit_test(table),
		cmocka_unit_test(slice_is_monotonic_and_in_range),
		cmocka_unit_test(idle_only_where_configured),
		cmocka_unit_test(batch_threshold),
		cmocka_unit_test(uclamp_both_sides_and_off),
		cmocka_unit_test(no_class_without_class_cgroups),
		cmocka_unit_test(weights_convert_to_cgroup2),
		cmocka_unit_test(parse),
		cmocka_unit_test(boost_bound_is_a_weight),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
