/* The latency-nice mapping table: what each value turns into, as rqbalance.conf(5) says. */
#include <errno.h>
#include <sched.h>

#include "policy/latency.h"
#include "kit.h"

static const struct lat_conf defaults = {
	.batch_from = 10, .idle_at_19 = false, .uclamp = true, .class_cgroups = true,
};

static struct lat_knobs map(const struct lat_conf *c, int v)
{
	struct lat_knobs k;

	latency_map(c, v, &k);
	return k;
}

KIT_TEST(zero_changes_nothing)
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

/* The documented table at this host's default (1.4 ms): slice in µs, shares, policy. */
KIT_TEST(table)
{
	static const struct {
		int v;
		uint64_t slice_us;
		uint32_t shares;
		int policy;
		bool cls;
	} rows[] = {
		{ -20, 100, 88761, SCHED_OTHER, true },
		{ -15, 175, 29154, SCHED_OTHER, true },
		{ -10, 350, 9548, SCHED_OTHER, true },
		{ -5, 700, 3121, SCHED_OTHER, true },
		{ -1, 1218, 1277, SCHED_OTHER, true },
		{ 1, 1608, 820, SCHED_OTHER, true },
		{ 5, 2800, 335, SCHED_OTHER, true },
		{ 9, 4875, 137, SCHED_OTHER, true },
		{ 10, 5600, 110, SCHED_BATCH, true },
		{ 19, 19500, 15, SCHED_BATCH, true },
	};
	struct lat_conf c = defaults;

	c.default_slice_ns = 1400000;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct lat_knobs k = map(&c, rows[i].v);

		assert_int_equal(k.slice_ns / 1000, rows[i].slice_us);
		assert_int_equal(k.shares, rows[i].shares);
		assert_int_equal(k.policy, rows[i].policy);
		assert_int_equal(k.use_class, rows[i].cls);
		assert_int_equal(k.nice, rows[i].v);
		/* An unknown default is taken as this one. */
		assert_int_equal(map(&defaults, rows[i].v).slice_ns, k.slice_ns);
	}
}

/*
 * Every value's slice around the kernel's default, for the defaults of 1, 2, 4, 8 and
 * 64 CPUs (0.7 ms x (1 + log2(min(CPUs, 8)))), a kernel built shorter (0.35 ms), and
 * the ends of what a default may be (0.1 and 4 ms), each value -20…19: 0 keeps the
 * default; a negative value is shorter, a positive one longer, unless the kernel's
 * bound (0.1-100 ms) leaves none, where it keeps the default; the slice a task runs
 * with never falls as the value rises, and rises at every step between the bounds.
 */
KIT_TEST(slice_monotone_around_the_default)
{
	static const uint64_t defs[] = { 700000, 1400000, 2100000, 2800000, 2800000,
					 350000, 100000, 4000000 };

	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++) {
		struct lat_conf c = defaults;
		uint64_t def = defs[i], prev = 0;

		c.default_slice_ns = def;
		for (int v = LAT_MIN; v <= LAT_MAX; v++) {
			uint64_t ns = map(&c, v).slice_ns, runs = ns ? ns : def;

			assert_int_equal(ns, latency_slice_ns(def, v));
			if (v == 0)
				assert_int_equal(ns, 0);
			if (ns) {
				assert_true(ns >= LAT_SLICE_MIN_NS && ns <= LAT_SLICE_MAX_NS);
				assert_true(v < 0 ? ns < def : ns > def);
			} else if (v < 0) {
				/* Only where the bound is the default itself. */
				assert_true(def <= LAT_SLICE_MIN_NS);
			}
			if (v > LAT_MIN) {
				assert_true(runs >= prev);
				if (prev > LAT_SLICE_MIN_NS && runs < LAT_SLICE_MAX_NS)
					assert_true(runs > prev);
			}
			if (v > 0)
				assert_true(ns > def);
			prev = runs;
		}
		/* Between the bounds the steps are the default's: -5 halves it, 5 doubles it. */
		if (def / 2 >= LAT_SLICE_MIN_NS)
			assert_int_equal(latency_slice_ns(def, -5), def / 2);
		assert_int_equal(latency_slice_ns(def, 5), def * 2);
	}
	/* A default past the upper bound leaves no longer slice: positives keep it. */
	assert_int_equal(latency_slice_ns(200000000, 1), 0);
	assert_true(latency_slice_ns(200000000, -20) < 200000000);
}

KIT_TEST(idle_only_where_configured)
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

KIT_TEST(batch_threshold)
{
	struct lat_conf c = defaults;

	c.batch_from = 20;
	for (int v = LAT_MIN; v <= LAT_MAX; v++)
		assert_int_equal(map(&c, v).policy, SCHED_OTHER);
	c.batch_from = 1;
	assert_int_equal(map(&c, 1).policy, SCHED_BATCH);
	assert_int_equal(map(&c, -1).policy, SCHED_OTHER);
}

KIT_TEST(uclamp_both_sides_and_off)
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

KIT_TEST(no_class_without_class_cgroups)
{
	struct lat_conf c = defaults;

	c.class_cgroups = false;
	assert_false(map(&c, -20).use_class);
	assert_int_equal(map(&c, -20).slice_ns, LAT_SLICE_MIN_NS);
}

/*
 * A raise's class below a parent weighs the parent's weight: never more than the task's
 * own nice did. At the top, and for a favour, the class is the value's own weight.
 */
KIT_TEST(raise_class_never_outweighs_the_nice)
{
	assert_false(latency_class_gains(19, 0, 1024));
	assert_true(latency_class_gains(19, 19, 1024));
	assert_true(latency_class_gains(19, 1, 1024));
	assert_false(latency_class_gains(19, 10, 110));
	assert_true(latency_class_gains(19, 10, 111));
	assert_false(latency_class_gains(19, 19, 0));
	assert_false(latency_class_gains(-5, 19, 1024));
	assert_false(latency_class_gains(0, 19, 1024));
}

KIT_TEST(weights_convert_to_cgroup2)
{
	assert_int_equal(latency_shares_to_weight(1024), 100);
	assert_int_equal(latency_shares_to_weight(88761), 8668);
	assert_int_equal(latency_shares_to_weight(15), 1);
	assert_int_equal(latency_shares_to_weight(2), 1);
	assert_int_equal(latency_shares_to_weight(262144), 10000);
	assert_int_equal(latency_nice_weight(-30), 88761);
	assert_int_equal(latency_nice_weight(40), 15);
}

KIT_TEST(parse)
{
	const char *why = NULL;
	int v = 99;

	assert_int_equal(latency_parse("-20", &v, &why), 0);
	assert_int_equal(v, -20);
	assert_int_equal(latency_parse("19", &v, &why), 0);
	assert_int_equal(v, 19);
	v = 99;
	assert_int_equal(latency_parse("20", &v, &why), -EINVAL);
	assert_string_equal(why, "out of range -20…19");
	assert_int_equal(latency_parse("-21", &v, &why), -EINVAL);
	assert_int_equal(latency_parse("", &v, &why), -EINVAL);
	assert_int_equal(latency_parse("1x", &v, &why), -EINVAL);
	assert_int_equal(latency_parse("99999999999999999999", &v, &why), -EINVAL);
	assert_int_equal(v, 99);
}

/*
 * boost_cpu_pct caps a negative weight at 1024 x pct / (100 - pct), never below the
 * default; it leaves positive values, and weights already under the cap, alone.
 */
KIT_TEST(boost_bound_is_a_weight)
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

/* ---- a process target's unit on a systemd host: own, or shared ---- */

static struct lat_unit_decision decide(const struct lat_conf *c, const char *unit,
				       const struct lat_member *m, size_t n)
{
	struct lat_unit_view v = { .cgroup = "/x", .unit = unit, .m = m, .n = n };
	struct lat_unit_decision d;

	memset(&d, 0x5a, sizeof(d));
	latency_unit_decide(c, &v, &d);
	return d;
}

#define MEMBER(pid_, uid_, v_, trusted_) \
	{ .pid = (pid_), .ruid = (uid_), .euid = (uid_), .value = (v_), .trusted = (trusted_) }

/* Every process in the unit carries the value: the unit gets its weight, either side. */
KIT_TEST(unit_of_its_own)
{
	struct lat_member one[] = { MEMBER(10, 1000, -20, true) };
	struct lat_member three[] = { MEMBER(10, 1000, 19, false), MEMBER(11, 1000, 19, false),
				      MEMBER(12, 1000, 19, false) };
	struct lat_conf c = defaults;
	struct lat_unit_decision d = decide(&c, "run-r1.scope", one, 1);

	assert_int_equal(d.verdict, LAT_UNIT_OWN);
	assert_int_equal(d.value, -20);
	assert_int_equal(d.weight, 8668); /* 88761 shares on systemd's 100 scale */
	assert_string_equal(d.why, "");
	d = decide(&c, "hogs.scope", three, 3);
	assert_int_equal(d.verdict, LAT_UNIT_OWN);
	assert_int_equal(d.value, 19);
	assert_int_equal(d.weight, 1); /* 15 shares: 1.5, never below 1 */
	one[0].value = 0;
	assert_int_equal(decide(&c, "a.service", one, 1).weight, 100);
	one[0].value = 5;
	assert_int_equal(decide(&c, "a.service", one, 1).weight, 33);
}

/* The mapping's settings hold for the unit too: the boost's cap, idle at 19. */
KIT_TEST(unit_follows_the_mapping)
{
	struct lat_member one[] = { MEMBER(10, 0, -20, true) };
	struct lat_conf c = defaults;

	c.boost_cpu_pct = 75;
	assert_int_equal(decide(&c, "a.scope", one, 1).weight, 300); /* 3072 shares */
	one[0].value = 19;
	c.idle_at_19 = true;
	assert_int_equal(decide(&c, "a.scope", one, 1).verdict, LAT_UNIT_OWN);
	assert_int_equal(decide(&c, "a.scope", one, 1).weight, 0);
	one[0].value = 18;
	assert_int_equal(decide(&c, "a.scope", one, 1).weight, 2);
}

/* A login shell beside the process: the unit stays as it is, and the reason says what to do. */
KIT_TEST(unit_shared_with_processes_without_a_value)
{
	struct lat_member m[] = { MEMBER(10, 1000, LAT_NONE, false), MEMBER(11, 1000, -5, true),
				  MEMBER(12, 1000, LAT_NONE, false) };
	struct lat_unit_decision d = decide(&defaults, "session-2.scope", m, 3);

	assert_int_equal(d.verdict, LAT_UNIT_SHARED);
	assert_int_equal(d.value, LAT_NONE);
	assert_int_equal(d.others, 2);
	assert_non_null(strstr(d.why, "session-2.scope is shared with 2 processes without a value"));
	assert_non_null(strstr(d.why, "only the task's nice applies"));
	assert_non_null(strstr(d.why, "systemd-run --scope"));
	/* Nobody with a value left (the managed process moved out). */
	assert_int_equal(decide(&defaults, "session-2.scope", m, 1).verdict, LAT_UNIT_SHARED);
	assert_int_equal(decide(&defaults, "session-2.scope", m, 0).verdict, LAT_UNIT_SHARED);
}

KIT_TEST(unit_shared_with_another_value)
{
	struct lat_member m[] = { MEMBER(10, 1000, -5, true), MEMBER(11, 1000, 19, true) };
	struct lat_unit_decision d = decide(&defaults, "a.service", m, 2);

	assert_int_equal(d.verdict, LAT_UNIT_OTHERS);
	assert_int_equal(d.others, 1);
	assert_non_null(strstr(d.why, "a.service is shared with 1 process of another value"));
}

/*
 * Another user's process in the unit: a user's request never changes it, even when the
 * values agree; values a rule or root gave do (a service that drops privileges).
 */
KIT_TEST(unit_of_two_users)
{
	struct lat_member m[] = { MEMBER(10, 1000, 19, false), MEMBER(11, 1001, 19, true) };
	struct lat_unit_decision d = decide(&defaults, "a.scope", m, 2);

	assert_int_equal(d.verdict, LAT_UNIT_USERS);
	assert_non_null(strstr(d.why, "another user's processes"));
	m[0].trusted = true;
	assert_int_equal(decide(&defaults, "a.scope", m, 2).verdict, LAT_UNIT_OWN);
	/* An effective uid counts as its own user: a setuid program. */
	m[0].trusted = false;
	m[1].ruid = 1000;
	m[1].euid = 0;
	assert_int_equal(decide(&defaults, "a.scope", m, 2).verdict, LAT_UNIT_USERS);
	m[1].euid = 1000;
	assert_int_equal(decide(&defaults, "a.scope", m, 2).verdict, LAT_UNIT_OWN);
}

/* Not rqbalance's to set: a delegated subtree, no unit, a unit too big to check. */
KIT_TEST(unit_refused)
{
	struct lat_member one[] = { MEMBER(10, 1000, -20, true) };
	struct lat_unit_view v = { .cgroup = "/user.slice/user-1000.slice/user@1000.service/app.slice/a.scope",
				   .unit = "", .delegated = true, .m = one, .n = 1 };
	struct lat_unit_decision d;

	latency_unit_decide(&defaults, &v, &d);
	assert_int_equal(d.verdict, LAT_UNIT_DELEGATED);
	assert_non_null(strstr(d.why, "delegated subtree"));
	assert_non_null(strstr(d.why, "only the task's nice applies"));
	v.delegated = false;
	latency_unit_decide(&defaults, &v, &d);
	assert_int_equal(d.verdict, LAT_UNIT_NOT_A_UNIT);
	v.unit = NULL;
	latency_unit_decide(&defaults, &v, &d);
	assert_int_equal(d.verdict, LAT_UNIT_NOT_A_UNIT);
	v.unit = "a.scope";
	v.truncated = true;
	latency_unit_decide(&defaults, &v, &d);
	assert_int_equal(d.verdict, LAT_UNIT_TOO_MANY);
	assert_int_equal(d.value, LAT_NONE);
}

/*
 * A unit whose weight someone set below the default (or idle) holds its CPU back: a
 * value may lower it further, never raise it; one at or above the default is no limit.
 */
KIT_TEST(unit_held_back)
{
	struct lat_member boost[] = { MEMBER(10, 1000, -5, false) };
	struct lat_member calm[] = { MEMBER(10, 1000, 10, false) };
	struct lat_unit_view v = { .cgroup = "/system.slice/a.service", .unit = "a.service",
				   .m = boost, .n = 1, .before_weight = 50 };
	struct lat_unit_decision d;

	(void)state;
	latency_unit_decide(&defaults, &v, &d);
	assert_int_equal(d.verdict, LAT_UNIT_HELD_BACK);
	assert_int_equal(d.value, LAT_NONE);
	assert_non_null(strstr(d.why, "below the default"));
	v.m = calm;
	latency_unit_decide(&defaults, &v, &d);
	assert_int_equal(d.verdict, LAT_UNIT_OWN);
	assert_true(d.weight < 50);
	v.before_weight = 0;
	v.before_idle = true;
	latency_unit_decide(&defaults, &v, &d);
	assert_int_equal(d.verdict, LAT_UNIT_HELD_BACK);
	/* Not set, or set at or above the default: no limit. */
	v.before_idle = false;
	v.m = boost;
	latency_unit_decide(&defaults, &v, &d);
	assert_int_equal(d.verdict, LAT_UNIT_OWN);
	v.before_weight = 100;
	latency_unit_decide(&defaults, &v, &d);
	assert_int_equal(d.verdict, LAT_UNIT_OWN);
	assert_true(d.weight > 100);
}

/* rqbalance moves a task only from where it put it, or from where it may move one. */
KIT_TEST(cgroup_only_where_put)
{
	struct lat_cg_view v = { .cur = "/rqbalance-lat5" };

	(void)state;
	v.held = "/rqbalance-lat5";
	assert_int_equal(latency_cg_decide(&v), LAT_CG_OURS);
	assert_string_equal(latency_cg_why(LAT_CG_OURS), "");
	/* Moved since, whatever the new cgroup is like. */
	v.cur = "/elsewhere";
	assert_int_equal(latency_cg_decide(&v), LAT_CG_MOVED);
	v.movable = true;
	assert_int_equal(latency_cg_decide(&v), LAT_CG_MOVED);
	v.movable = false;
	/*
	 * A new task where its creator was before rqbalance moved it: made before that move
	 * landed, so ours to move; anywhere else it was moved.
	 */
	v.held_before = "/";
	v.cur = "/";
	assert_int_equal(latency_cg_decide(&v), LAT_CG_OURS);
	v.cur = "/elsewhere";
	assert_int_equal(latency_cg_decide(&v), LAT_CG_MOVED);
	v.held_before = NULL;
	/* A first value: only out of a cgroup shown to be rqbalance's to move from. */
	v.held = NULL;
	assert_int_equal(latency_cg_decide(&v), LAT_CG_PLACED);
	v.movable = true;
	assert_int_equal(latency_cg_decide(&v), LAT_CG_OURS);
	assert_non_null(strstr(latency_cg_why(LAT_CG_MOVED), "someone else"));
	assert_non_null(strstr(latency_cg_why(LAT_CG_PLACED), "someone else's cgroup"));
}

/*
 * The allow-list: the top, a class under the classes' parent, or a move_from pattern;
 * an admin's cgroup of default weight and no limit is as much someone's as a capped one.
 */
KIT_TEST(cgroup_movable_allow_list)
{
	struct lat_conf c = defaults;

	(void)state;
	assert_true(latency_cg_movable(&c, "/", "/"));
	assert_true(latency_cg_movable(&c, "/", "/rqbalance-lat5"));
	assert_true(latency_cg_movable(&c, "/", "/rqbalance-lat-20"));
	assert_false(latency_cg_movable(&c, "/", "/rqbalance-lat20"));
	assert_false(latency_cg_movable(&c, "/", "/rqbalance-lat"));
	assert_false(latency_cg_movable(&c, "/", "/rqbalance-lat5x"));
	/* A class's name elsewhere is not a class. */
	assert_false(latency_cg_movable(&c, "/", "/users/rqbalance-lat5"));
	assert_true(latency_cg_movable(&c, "/rqb", "/rqb/rqbalance-lat5"));
	assert_false(latency_cg_movable(&c, "/rqb", "/rqbalance-lat5"));
	assert_false(latency_cg_movable(&c, "/rqb", "/rqbx/rqbalance-lat5"));
	assert_false(latency_cg_movable(&c, "/rqb", "/rqb"));
	/* The admin's per-user group, however plain, is theirs. */
	assert_false(latency_cg_movable(&c, "/", "/users/alice"));
	c.nmove_from = 2;
	c.move_from[0] = "/user.slice/user-*.slice/session-*.scope";
	c.move_from[1] = "/batch";
	assert_true(latency_cg_movable(&c, "/", "/user.slice/user-1000.slice/session-2.scope"));
	/* A * stays within one component; a pattern names a cgroup, not those below it. */
	assert_false(latency_cg_movable(&c, "/", "/user.slice/user-1000.slice/x/session-2.scope"));
	assert_false(latency_cg_movable(&c, "/", "/user.slice/user-1000.slice"));
	assert_true(latency_cg_movable(&c, "/", "/batch"));
	assert_false(latency_cg_movable(&c, "/", "/batch/child"));
	assert_false(latency_cg_movable(&c, "/", "/users/alice"));
}
