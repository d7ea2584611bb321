/* The classes' weights by what they run (policy/latweigh.c): the kernel's split, followed. */
#include "policy/latweigh.h"
#include "kit.h"

#define SEC 1000000000ULL
#define IX(v) ((v) - LAT_MIN)

static const struct lat_conf defaults = { .batch_from = 10, .class_cgroups = true };

/* The plan one tick leads to, as one line an action. */
static const char *decide(const struct latweigh_in *in, struct latweigh_state *st)
{
	static char buf[4096];
	char line[PLAN_LINE_MAX];
	struct plan p;

	plan_init(&p);
	assert_true(latweigh_decide(in, st, &p) >= 0);
	plan_finish(&p);
	buf[0] = '\0';
	for (size_t i = 0; i < p.n; i++) {
		plan_format(&p.a[i], line, sizeof(line));
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", i ? "\n" : "", line);
	}
	plan_fini(&p);
	return buf;
}

static struct latweigh_in tick(uint64_t now_ns, bool splits)
{
	return (struct latweigh_in){ .now_ns = now_ns, .online = 4,
				     .kind = splits ? LATWEIGH_SPLIT : LATWEIGH_WHOLE };
}

static void busy(struct latweigh_in *in, int v, unsigned n, unsigned cpus)
{
	in->busy[IX(v)] = n;
	in->cpus[IX(v)] = cpus;
}

KIT_TEST(which_kernels_split)
{
	assert_int_equal(latweigh_kernel_of("unknown", 6, 1), LATWEIGH_SPLIT);
	assert_int_equal(latweigh_kernel_of("unknown", 6, 18), LATWEIGH_SPLIT);
	assert_int_equal(latweigh_kernel_of("unknown", 7, 2), LATWEIGH_SPLIT);
	assert_int_equal(latweigh_kernel_of("smp", 7, 3), LATWEIGH_SPLIT);
	/* up gives each CPU the group's whole weight: scaled, -5 took 87 % for 70. */
	assert_int_equal(latweigh_kernel_of("up", 7, 3), LATWEIGH_WHOLE);
	assert_false(latweigh_scales(LATWEIGH_WHOLE));
	/* 7.3 with debugfs unreadable: its default, concur. */
	assert_int_equal(latweigh_kernel_of("unknown", 7, 3), LATWEIGH_CONCUR);
	assert_int_equal(latweigh_kernel_of("unknown", 8, 0), LATWEIGH_CONCUR);
	assert_int_equal(latweigh_kernel_of("concur", 7, 3), LATWEIGH_CONCUR);
	assert_int_equal(latweigh_kernel_of("max", 7, 4), LATWEIGH_MAX);
	assert_int_equal(latweigh_kernel_of("tasks", 7, 3), LATWEIGH_TASKS);
	/* A mode this build does not know, which only a 7.3 kernel or later names. */
	assert_int_equal(latweigh_kernel_of("newmode", 7, 5), LATWEIGH_CONCUR);
	assert_true(latweigh_scales(LATWEIGH_CONCUR));
}

/* --features says whether classes are scaled and why: the version or the mode. */
KIT_TEST(described_by_version_or_mode)
{
	char buf[512];

	latweigh_describe("unknown", 6, 12, buf, sizeof(buf));
	assert_true(strncmp(buf, "scaled: ", 8) == 0);
	assert_non_null(strstr(buf, "Linux 6.12, before 7.3, splits"));
	latweigh_describe("smp", 7, 3, buf, sizeof(buf));
	assert_true(strncmp(buf, "scaled: ", 8) == 0);
	assert_non_null(strstr(buf, "cgroup_mode smp splits"));
	latweigh_describe("concur", 7, 3, buf, sizeof(buf));
	assert_true(strncmp(buf, "scaled: ", 8) == 0);
	assert_non_null(strstr(buf, "cgroup_mode concur splits"));
	assert_non_null(strstr(buf, "one short"));
	latweigh_describe("up", 7, 3, buf, sizeof(buf));
	assert_true(strncmp(buf, "not scaled: ", 12) == 0);
	assert_non_null(strstr(buf, "cgroup_mode up gives a group's whole weight"));
	latweigh_describe("unknown", 7, 3, buf, sizeof(buf));
	assert_true(strncmp(buf, "scaled: ", 8) == 0);
	/* The whole reason, never cut inside: the guest's t_features reads it to its end. */
	assert_non_null(strstr(buf, "(Linux 7.3 with cgroup_mode unreadable, taken at 7.3's "
				    "default concur, splits a group's weight"));
	latweigh_describe("unknown", 4294967295u, 4294967295u, buf, sizeof(buf));
	assert_non_null(strstr(buf, "(Linux 4294967295.4294967295 with cgroup_mode unreadable, "
				    "taken at 7.3's default concur, splits"));
	/* Cut to the buffer, terminated. */
	latweigh_describe("smp", 7, 3, buf, 8);
	assert_string_equal(buf, "scaled:");
}

/* The guest's case: 4 hogs at -5 and 4 at 5 on 4 CPUs; more tasks than CPUs count once a CPU. */
KIT_TEST(busy_tasks_at_most_one_a_cpu)
{
	struct latweigh_state st = { 0 };
	struct latweigh_in in = tick(SEC, true);

	busy(&in, -5, 4, 4);
	busy(&in, 5, 4, 4);
	busy(&in, -10, 8, 4);
	busy(&in, 3, 3, 2); /* affinity: two CPUs */
	busy(&in, 7, 1, 4);
	assert_string_equal(decide(&in, &st),
			    "latclass value=-10 k=4\nlatclass value=-5 k=4\n"
			    "latclass value=3 k=2\nlatclass value=5 k=4");
	/* Nothing changed: nothing to write. */
	in.now_ns += SEC / 10;
	assert_string_equal(decide(&in, &st), "");
	assert_int_equal(st.k[IX(7)], 1);
	assert_int_equal(st.k[IX(0)], 1);
}

/* A rise at once; a fall after LATWEIGH_HOLD_NS of lower counts, to the highest seen. */
KIT_TEST(follows_with_hysteresis)
{
	struct latweigh_state st = { 0 };
	struct latweigh_in in = tick(SEC, true);

	busy(&in, -5, 4, 4);
	assert_string_equal(decide(&in, &st), "latclass value=-5 k=4");
	in.now_ns = SEC + SEC / 10;
	busy(&in, -5, 1, 4); /* caught asleep once: held */
	assert_string_equal(decide(&in, &st), "");
	in.now_ns = 2 * SEC;
	busy(&in, -5, 2, 4);
	assert_string_equal(decide(&in, &st), "");
	in.now_ns = SEC + SEC / 10 + LATWEIGH_HOLD_NS - 1;
	busy(&in, -5, 1, 4);
	assert_string_equal(decide(&in, &st), "");
	in.now_ns = SEC + SEC / 10 + LATWEIGH_HOLD_NS;
	assert_string_equal(decide(&in, &st), "latclass value=-5 k=2");
	/* A burst back up is followed at once, and resets the hold. */
	in.now_ns += SEC / 10;
	busy(&in, -5, 3, 4);
	assert_string_equal(decide(&in, &st), "latclass value=-5 k=3");
	in.now_ns += SEC / 10;
	busy(&in, -5, 0, 0);
	assert_string_equal(decide(&in, &st), "");
	in.now_ns += LATWEIGH_HOLD_NS;
	assert_string_equal(decide(&in, &st), "latclass value=-5 k=1");
	/* Flapping below the weight within the hold writes nothing. */
	in.now_ns += SEC / 10;
	busy(&in, -5, 4, 4);
	assert_string_equal(decide(&in, &st), "latclass value=-5 k=4");
	for (int i = 0; i < 15; i++) {
		in.now_ns += SEC / 10;
		busy(&in, -5, i % 2 ? 2 : 3, 4);
		assert_string_equal(decide(&in, &st), "");
	}
	in.now_ns += LATWEIGH_HOLD_NS;
	assert_string_equal(decide(&in, &st), "latclass value=-5 k=3");
}

/* Where the kernel gives a group its whole weight on each CPU (7.3's up), every class goes back to 1 at once. */
KIT_TEST(per_entity_kernels_do_not_scale)
{
	struct latweigh_state st = { 0 };
	struct latweigh_in in = tick(SEC, true);

	busy(&in, -5, 4, 4);
	busy(&in, 5, 2, 4);
	assert_string_equal(decide(&in, &st), "latclass value=-5 k=4\nlatclass value=5 k=2");
	in = tick(SEC + SEC / 10, false);
	busy(&in, -5, 4, 4);
	busy(&in, 5, 2, 4);
	assert_string_equal(decide(&in, &st), "latclass value=-5 k=1\nlatclass value=5 k=1");
	in.now_ns += SEC / 10;
	assert_string_equal(decide(&in, &st), "");
}

/*
 * Per CPU the class weighs what its value does: -5 against 4 untouched and 4 at 5 on 4
 * CPUs is 3121 : 1024 : 335, the nice ratio's 70 / 23 / 7; a positive class stays below
 * the untouched tasks it competes with.
 */
KIT_TEST(weights_per_cpu_are_the_values)
{
	struct lat_conf c = defaults;

	assert_int_equal(latweigh_class_weight(&c, -5, 0, 1, false), 3121);
	assert_int_equal(latweigh_class_weight(&c, -5, 1, 1, false), 3121);
	for (unsigned k = 1; k <= 64; k++) {
		assert_int_equal(latweigh_class_weight(&c, -5, k, 1, false) / k, 3121);
		assert_int_equal(latweigh_class_weight(&c, 5, k, 1, false) / k, 335);
		assert_true(latweigh_class_weight(&c, 5, k, 1, false) < 1024ULL * k);
		assert_true(latweigh_class_weight(&c, 10, k, 1, true) < 100ULL * k);
	}
	assert_int_equal(latweigh_class_weight(&c, -5, 4, 1, true), 1219);
	assert_int_equal(latweigh_class_weight(&c, 5, 4, 1, true), 131);
	assert_int_equal(latweigh_class_weight(&c, 19, 1, 1, true), 1);
	assert_int_equal(latweigh_class_weight(&c, 19, 1, 1, false), 15);
	/* The interfaces' bounds: v1 262144, v2 10000. */
	assert_int_equal(latweigh_class_weight(&c, -20, 4, 1, false), LATWEIGH_V1_MAX);
	assert_int_equal(latweigh_class_weight(&c, -20, 2, 1, true), LATWEIGH_V2_MAX);
	assert_int_equal(latweigh_class_weight(&c, -5, 40, 1, true), LATWEIGH_V2_MAX);
	assert_int_equal(latweigh_class_weight(&c, -5, 32, 1, true), 9753);
}

/* boost_cpu_pct caps a negative value's weight per CPU: the cap scales as the weight does. */
KIT_TEST(boost_cap_holds_per_cpu)
{
	struct lat_conf c = defaults;

	c.boost_cpu_pct = 50; /* 1024 x 50 / 50: the default weight */
	assert_int_equal(latweigh_class_weight(&c, -10, 1, 1, false), 1024);
	assert_int_equal(latweigh_class_weight(&c, -10, 4, 1, false), 4096);
	c.boost_cpu_pct = 80; /* 4096 */
	assert_int_equal(latweigh_class_weight(&c, -10, 4, 1, false), 4 * 4096);
	assert_int_equal(latweigh_class_weight(&c, -5, 4, 1, false), 4 * 3121);
}

/*
 * 7.3's concur counts n busy tasks as n - 1 (their runnable average rounded down), at
 * most the online CPUs; tasks as n - 1; max as the online CPUs. The class's weight is
 * the value's times n over that, so that each task weighs its value's on its CPU.
 */
KIT_TEST(kernel_multiplier_undone)
{
	struct latweigh_state st = { 0 };
	struct latweigh_in in = tick(SEC, true);
	struct lat_conf c = defaults;

	in.kind = LATWEIGH_CONCUR;
	busy(&in, -5, 4, 4);
	busy(&in, 5, 4, 4);
	busy(&in, -10, 8, 4); /* 8 on 4 CPUs: the kernel counts 7, at most 4: 4/4 */
	busy(&in, 3, 2, 4);
	busy(&in, 7, 1, 4); /* one: the kernel counts at least 1 */
	assert_string_equal(decide(&in, &st),
			    "latclass value=-10 k=4/4\nlatclass value=-5 k=4/3\n"
			    "latclass value=3 k=2\nlatclass value=5 k=4/3");
	assert_int_equal(st.div[IX(3)], 1);
	/* The same counts under tasks: no bound at the CPUs. */
	in.kind = LATWEIGH_TASKS;
	in.now_ns += SEC / 10;
	assert_string_equal(decide(&in, &st), "latclass value=-10 k=4/7");
	/* Under max, at 8 CPUs: every class is counted 8, an idle one too (1/8). */
	in.kind = LATWEIGH_MAX;
	in.online = 8;
	in.now_ns += SEC / 10;
	assert_non_null(strstr(decide(&in, &st), "latclass value=-5 k=4/8\n"));
	assert_int_equal(st.k[IX(-10)], 4);
	assert_int_equal(st.div[IX(-10)], 8);
	assert_int_equal(st.k[IX(0)], 1);
	assert_int_equal(st.div[IX(0)], 8);
	/* A count held after a fall keeps its divisor: the kernel's average lags too. */
	in.kind = LATWEIGH_CONCUR;
	in.online = 4;
	in.now_ns += SEC / 10;
	(void)decide(&in, &st);
	in.now_ns += SEC / 10;
	busy(&in, -5, 1, 4);
	assert_string_equal(decide(&in, &st), "");
	/* cgroup2: -5's 305 times 4/3; cgroup v1: 3121 times 4/3; 19's floor. */
	assert_int_equal(latweigh_class_weight(&c, -5, 4, 3, true), 406);
	assert_int_equal(latweigh_class_weight(&c, -5, 4, 3, false), 4161);
	assert_int_equal(latweigh_class_weight(&c, -5, 4, 8, true), 152);
	assert_int_equal(latweigh_class_weight(&c, 19, 4, 8, true), 1);
	assert_int_equal(latweigh_class_weight(&c, 19, 4, 8, false), 8);
}
