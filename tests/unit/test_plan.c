/* The plan: sorted by task, first action of a task wins, a dump exactly as plan.h says. */
#include "kit.h"

static struct plan_action pin(pid_t tid, uint64_t start, int from, int to, const char *cpus,
			      const char *why)
{
	struct plan_action a = {
		.op = PLAN_PIN,
		.tid = tid,
		.tgid = tid - tid % 10,
		.start_time = start,
		.from_llc = from,
		.to_llc = to,
		.mask = kit_mask(cpus),
		.why = why,
	};

	snprintf(a.comm, sizeof(a.comm), "t%d", (int)tid);
	return a;
}

static struct plan_action unpin(pid_t tid, uint64_t start, int from, const char *cpus)
{
	struct plan_action a = pin(tid, start, from, -1, cpus, "expired");

	a.op = PLAN_UNPIN;
	return a;
}

static void add(struct plan *p, struct plan_action a)
{
	assert_int_equal(plan_add(p, &a), 0);
}

KIT_TEST(finish_sorts_by_tid_then_start_time)
{
	struct plan p;

	plan_init(&p);
	add(&p, pin(30, 5, 0, 1, "2-3", "a"));
	add(&p, pin(12, 9, 0, 1, "2-3", "b"));
	add(&p, pin(30, 1, 0, 1, "2-3", "c"));
	add(&p, pin(7, 100, 1, 0, "0-1", "d"));
	add(&p, pin(12, 2, 0, 1, "2-3", "e"));
	plan_finish(&p);
	assert_int_equal(p.n, 5);
	assert_int_equal(p.a[0].tid, 7);
	assert_int_equal(p.a[1].tid, 12);
	assert_int_equal(p.a[1].start_time, 2);
	assert_int_equal(p.a[2].tid, 12);
	assert_int_equal(p.a[2].start_time, 9);
	assert_int_equal(p.a[3].tid, 30);
	assert_int_equal(p.a[3].start_time, 1);
	assert_int_equal(p.a[4].tid, 30);
	assert_int_equal(p.a[4].start_time, 5);
	plan_fini(&p);
}

KIT_TEST(first_added_action_of_a_task_stays)
{
	struct plan p;

	plan_init(&p);
	add(&p, pin(20, 1, 0, 1, "2-3", "other"));
	add(&p, pin(12, 9, 0, 1, "2-3", "first"));
	add(&p, unpin(12, 9, 1, "0-3"));
	add(&p, pin(12, 9, 1, 0, "0-1", "third"));
	add(&p, pin(3, 1, 0, 1, "2", "low"));
	/* Same tid, another start time: another task, kept. */
	add(&p, pin(12, 10, 0, 1, "3", "reused tid"));
	plan_finish(&p);
	assert_int_equal(p.n, 4);
	assert_int_equal(p.a[1].tid, 12);
	assert_int_equal(p.a[1].op, PLAN_PIN);
	assert_string_equal(p.a[1].why, "first");
	assert_string_equal(p.a[2].why, "reused tid");
	plan_fini(&p);
}

/* Enough duplicates that a sort which is not stable would mix them up. */
KIT_TEST(first_stays_among_many_duplicates)
{
	static const char *const whys[] = { "w0", "w1", "w2", "w3", "w4" };
	struct plan p;

	plan_init(&p);
	for (int round = 0; round < 5; round++)
		for (pid_t tid = 40; tid > 0; tid--)
			add(&p, pin(tid, 7, 0, 1, "2-3", whys[round]));
	plan_finish(&p);
	assert_int_equal(p.n, 40);
	for (size_t i = 0; i < p.n; i++) {
		assert_int_equal(p.a[i].tid, (pid_t)i + 1);
		assert_string_equal(p.a[i].why, "w0");
	}
	plan_fini(&p);
}

KIT_TEST(dump_is_exact)
{
	struct plan p;
	struct plan_action a = pin(12, 5, 0, 1, "2-3", "overload");

	plan_init(&p);
	/* The example line of plan.h, to the byte. */
	a.tgid = 10;
	snprintf(a.comm, sizeof(a.comm), "x");
	add(&p, a);
	add(&p, unpin(41, 1, 1, "0-3,8"));
	add(&p, pin(9, 1, -1, 0, "0", "new task"));
	a = pin(25, 1, 1, 0, "1", "comm with space");
	snprintf(a.comm, sizeof(a.comm), "my prog");
	add(&p, a);
	plan_finish(&p);
	assert_string_equal(kit_plan_dump(&p),
			    "pin tid=9 tgid=0 comm=\"t9\" llc=-1->0 cpus=0 why=new task\n"
			    "pin tid=12 tgid=10 comm=\"x\" llc=0->1 cpus=2-3 why=overload\n"
			    "pin tid=25 tgid=20 comm=\"my prog\" llc=1->0 cpus=1 "
			    "why=comm with space\n"
			    "unpin tid=41 tgid=40 comm=\"t41\" llc=1->any cpus=0-3,8 "
			    "why=expired\n");
	plan_fini(&p);
}

KIT_TEST(dump_of_empty_plan_is_empty)
{
	struct plan p;

	plan_init(&p);
	assert_string_equal(kit_plan_dump(&p), "");
	plan_fini(&p);
}

KIT_TEST(format_one_action)
{
	struct plan_action a = unpin(8, 3, 0, "");
	char buf[256];

	plan_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "unpin tid=8 tgid=0 comm=\"t8\" llc=0->any cpus= why=expired");
	assert_string_equal(plan_op_name(PLAN_PIN), "pin");
	assert_string_equal(plan_op_name(PLAN_UNPIN), "unpin");
}

static struct plan_action lat(pid_t tid, pid_t tgid, uint64_t start, int v, const char *source)
{
	struct plan_action a = { .op = PLAN_LAT_SET, .tid = tid, .tgid = tgid,
				 .start_time = start, .value = v };

	snprintf(a.source, sizeof(a.source), "%s", source);
	return a;
}

static struct plan_action latcg(enum plan_op op, const char *path, int v)
{
	struct plan_action a = { .op = op, .value = v };

	snprintf(a.path, sizeof(a.path), "%s", path);
	snprintf(a.source, sizeof(a.source), "ctl uid 0");
	return a;
}

KIT_TEST(latency_actions_format_one_line_each)
{
	struct plan_action a = lat(12, 10, 345, -5, "rule db");
	char buf[PLAN_LINE_MAX];

	plan_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "lat tid=12 tgid=10 start=345 value=-5 source=\"rule db\"");
	a.from_tid = 11;
	snprintf(a.source, sizeof(a.source), "rule \"q\"\\\n");
	plan_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "lat tid=12 tgid=10 start=345 value=-5 "
				 "source=\"rule \\x22q\\x22\\x5c\\x0a\" from=11");
	a.op = PLAN_LAT_RESET;
	plan_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "unlat tid=12 tgid=10 start=345");
	a = latcg(PLAN_LAT_CG_SET, "/a b/c\td", 3);
	plan_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "latcg path=/a\\x20b/c\\x09d value=3 source=\"ctl uid 0\"");
	a.op = PLAN_LAT_CG_RESET;
	plan_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "unlatcg path=/a\\x20b/c\\x09d");
	a = latcg(PLAN_LAT_UNIT_SET, "/s.slice/a b.service", -4);
	plan_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "latunit path=/s.slice/a\\x20b.service value=-4 "
				 "source=\"ctl uid 0\"");
	a.op = PLAN_LAT_UNIT_RESET;
	plan_format(&a, buf, sizeof(buf));
	assert_string_equal(buf, "unlatunit path=/s.slice/a\\x20b.service");
	assert_true(plan_op_is_latency(PLAN_LAT_UNIT_RESET));
	assert_true(plan_op_is_latency(PLAN_LAT_CG_RESET));
	assert_false(plan_op_is_latency(PLAN_UNPIN));
}

/* Pins first, then tasks by process (first thread first), then cgroups by path. */
KIT_TEST(latency_actions_sort_beside_pins)
{
	struct plan p;

	plan_init(&p);
	add(&p, latcg(PLAN_LAT_CG_SET, "/z", 1));
	add(&p, lat(21, 30, 5, 2, "ctl uid 0"));
	add(&p, lat(30, 30, 4, 2, "ctl uid 0"));
	add(&p, latcg(PLAN_LAT_CG_RESET, "/b", 0));
	add(&p, lat(7, 7, 1, -3, "rule a"));
	add(&p, pin(40, 2, 0, 1, "2-3", "overload"));
	/* The same targets again: the first added stays, whatever the op. */
	add(&p, latcg(PLAN_LAT_CG_RESET, "/z", 0));
	add(&p, lat(21, 30, 5, 9, "later"));
	/* A pin and a latency value on one task are two knobs: both stay. */
	add(&p, lat(40, 40, 2, 0, "ctl uid 0"));
	plan_finish(&p);
	assert_string_equal(kit_plan_dump(&p),
		"pin tid=40 tgid=40 comm=\"t40\" llc=0->1 cpus=2-3 why=overload\n"
		"lat tid=7 tgid=7 start=1 value=-3 source=\"rule a\"\n"
		"lat tid=30 tgid=30 start=4 value=2 source=\"ctl uid 0\"\n"
		"lat tid=21 tgid=30 start=5 value=2 source=\"ctl uid 0\"\n"
		"lat tid=40 tgid=40 start=2 value=0 source=\"ctl uid 0\"\n"
		"unlatcg path=/b\n"
		"latcg path=/z value=1 source=\"ctl uid 0\"\n");
	plan_fini(&p);
}

KIT_TEST(clear_keeps_capacity)
{
	struct plan_action *a;
	struct plan p;
	size_t cap;

	plan_init(&p);
	for (pid_t tid = 1; tid <= 20; tid++)
		add(&p, pin(tid, 1, 0, 1, "2", "fill"));
	cap = p.cap;
	a = p.a;
	assert_true(cap >= 20);
	plan_clear(&p);
	assert_int_equal(p.n, 0);
	assert_int_equal(p.cap, cap);
	assert_ptr_equal(p.a, a);
	assert_string_equal(kit_plan_dump(&p), "");
	/* Refilling to the old size needs no new memory. */
	for (pid_t tid = 1; tid <= 20; tid++)
		add(&p, pin(tid, 1, 0, 1, "2", "fill"));
	assert_ptr_equal(p.a, a);
	assert_int_equal(p.n, 20);
	plan_fini(&p);
	assert_null(p.a);
	assert_int_equal(p.cap, 0);
}

/*
 * The policy finishes a plan on every tick, also on one that planned nothing yet. Last
 * (defined, so run): the sanitizer build aborts the program if this one goes wrong.
 */
KIT_TEST(finish_of_never_used_plan)
{
	struct plan p;

	plan_init(&p);
	plan_finish(&p);
	assert_int_equal(p.n, 0);
	assert_string_equal(kit_plan_dump(&p), "");
	plan_fini(&p);
}
