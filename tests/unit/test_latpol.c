/*
 * The latency policy: who gets which value from a ctl request, a rule, a fork or a
 * reload, on processes built in C; plans compared as text dumps, as the spread tests do.
 */
#include <errno.h>

#include "policy/latency.h"
#include "policy/latpol.h"
#include "kit.h"

#define SELF 999
/* A request as the manager hands it on, for the process or task passed beside it. */
#define REQ(start, v, who, from)                                                        \
	(&(struct lat_req){ .start_time = (start), .value = (v), .source = (who),         \
			    .from_tid = (from) })

static struct latpol_task task(pid_t tid, pid_t tgid, uint64_t start)
{
	return (struct latpol_task){ .tid = tid, .tgid = tgid, .start_time = start,
				     .value = LAT_NONE, .source = "" };
}

static struct latpol_task valued(struct latpol_task t, int v, const char *source)
{
	t.value = v;
	t.source = source;
	return t;
}

/* Process 10 (started at 100) with threads 13, 11 and its first, in readdir's order. */
static struct latpol_task threads[3];

static struct latpol_proc proc10(void)
{
	threads[0] = task(13, 10, 105);
	threads[1] = task(10, 10, 100);
	threads[2] = task(11, 10, 101);
	return (struct latpol_proc){ .lead = task(10, 10, 100), .t = threads, .nt = 3 };
}

static struct latpol_rec rec(int v, const char *source, bool from_rule)
{
	return (struct latpol_rec){ .managed = true, .start_time = 100, .value = v,
				    .source = source, .from_rule = from_rule };
}

KIT_TEST(process_first_thread_first_all_whole)
{
	struct latpol_proc p = proc10();
	const char *why = "x";
	struct plan pl;

	plan_init(&pl);
	assert_int_equal(latpol_process(&p, REQ(100, -5, "ctl uid 0", 0), SELF, &pl, &why), 3);
	assert_null(why);
	assert_string_equal(kit_plan_dump(&pl),
		"lat tid=10 tgid=10 start=100 value=-5 source=\"ctl uid 0\" whole\n"
		"lat tid=11 tgid=10 start=101 value=-5 source=\"ctl uid 0\" whole\n"
		"lat tid=13 tgid=10 start=105 value=-5 source=\"ctl uid 0\" whole\n");
	plan_fini(&pl);
}

/* A task that has the value from that source already is left; another source is not. */
KIT_TEST(process_skips_tasks_that_have_it)
{
	struct latpol_proc p = proc10();
	const char *why;
	struct plan pl;

	threads[1] = valued(threads[1], 3, "rule db");
	threads[0] = valued(threads[0], 3, "ctl uid 0");
	plan_init(&pl);
	assert_int_equal(latpol_process(&p, REQ(0, 3, "rule db", 10), SELF, &pl, &why), 2);
	assert_string_equal(kit_plan_dump(&pl),
		"lat tid=11 tgid=10 start=101 value=3 source=\"rule db\" from=10 whole\n"
		"lat tid=13 tgid=10 start=105 value=3 source=\"rule db\" from=10 whole\n");
	plan_clear(&pl);
	assert_int_equal(latpol_process(&p, REQ(0, -1, "rule db", 0), SELF, &pl, &why), 3);
	plan_fini(&pl);
}

KIT_TEST(process_refusals_plan_nothing)
{
	struct latpol_proc p = proc10();
	const char *why;
	struct plan pl;

	plan_init(&pl);
	/* The pid names another process than the one the request was decided on. */
	assert_int_equal(latpol_process(&p, REQ(99, 1, "ctl uid 0", 0), SELF, &pl, &why), -ESRCH);
	assert_string_equal(why, "no such process (or its pid was reused)");
	p.lead.gone = true;
	assert_int_equal(latpol_process(&p, REQ(0, 1, "ctl uid 0", 0), SELF, &pl, &why), -ESRCH);
	p = proc10();
	p.no_threads = true;
	assert_int_equal(latpol_process(&p, REQ(0, 1, "ctl uid 0", 0), SELF, &pl, &why), -ESRCH);
	p = proc10();
	p.lead.kthread = true;
	assert_int_equal(latpol_process(&p, REQ(0, 1, "ctl uid 0", 0), SELF, &pl, &why), -EPERM);
	assert_string_equal(why, "a kernel thread");
	p = proc10();
	assert_int_equal(latpol_process(&p, REQ(0, 1, "ctl uid 0", 0), 10, &pl, &why), -EPERM);
	assert_string_equal(why, "rqbalanced itself");
	assert_string_equal(kit_plan_dump(&pl), "");
	plan_fini(&pl);
}

KIT_TEST(thread_alone_is_not_whole)
{
	struct latpol_task t = valued(task(11, 10, 101), 4, "ctl uid 0");
	const char *why;
	struct plan pl;

	plan_init(&pl);
	/* Asked again, it is planned again: the actuator writes only on difference. */
	assert_int_equal(latpol_task(&t, REQ(101, 4, "ctl uid 0", 0), SELF, &pl, &why), 1);
	assert_int_equal(latpol_task(&t, REQ(102, 4, "ctl uid 0", 0), SELF, &pl, &why), -ESRCH);
	assert_string_equal(why, "no such task (or its pid was reused)");
	assert_string_equal(kit_plan_dump(&pl),
		"lat tid=11 tgid=10 start=101 value=4 source=\"ctl uid 0\"\n");
	plan_fini(&pl);
}

KIT_TEST(reset_process_keeps_another_process)
{
	struct latpol_task e[] = { task(10, 10, 100), task(11, 10, 101), task(21, 20, 200) };
	struct latpol_rec r = rec(2, "ctl uid 0", false);
	struct plan pl;

	plan_init(&pl);
	assert_int_equal(latpol_reset_process(10, &r, 0, e, 3, &pl), 2);
	assert_string_equal(kit_plan_dump(&pl),
		"unlat tid=10 tgid=10 start=100\n"
		"unlat tid=11 tgid=10 start=101\n");
	plan_clear(&pl);
	/* The record is of another start time: that is another process, left alone. */
	assert_int_equal(latpol_reset_process(10, &r, 77, e, 3, &pl), -ENOENT);
	/* No record: the first thread must be the one meant; the others go back. */
	r.managed = false;
	assert_int_equal(latpol_reset_process(10, &r, 77, e, 3, &pl), 1);
	assert_string_equal(kit_plan_dump(&pl), "unlat tid=11 tgid=10 start=101\n");
	plan_clear(&pl);
	assert_int_equal(latpol_reset_process(30, &r, 0, e, 3, &pl), -ENOENT);
	assert_int_equal(latpol_reset_task(&e[2], 200, &pl), 1);
	assert_int_equal(latpol_reset_task(&e[2], 201, &pl), -ENOENT);
	assert_int_equal(latpol_reset_task(NULL, 0, &pl), -ENOENT);
	assert_string_equal(kit_plan_dump(&pl), "unlat tid=21 tgid=20 start=200\n");
	plan_fini(&pl);
}

KIT_TEST(cgroups_by_path_escaped)
{
	struct plan pl;

	plan_init(&pl);
	assert_int_equal(latpol_cgroup("/srv/b", 7, "ctl uid 0", &pl), 1);
	assert_int_equal(latpol_cgroup_reset("/a b", &pl), 1);
	plan_finish(&pl);
	assert_string_equal(kit_plan_dump(&pl),
		"unlatcg path=/a\\x20b\n"
		"latcg path=/srv/b value=7 source=\"ctl uid 0\"\n");
	plan_fini(&pl);
}

/*
 * A unit's weight follows its processes: set where they all carry a value (and the
 * unit does not hold it yet), given back once they do not, nothing where nothing changes.
 */
KIT_TEST(unit_weight_follows_processes)
{
	struct lat_unit_decision own = { .verdict = LAT_UNIT_OWN, .value = 5 };
	struct lat_unit_decision shared = { .verdict = LAT_UNIT_SHARED, .value = LAT_NONE };
	struct plan pl;

	(void)state;
	plan_init(&pl);
	assert_int_equal(latpol_unit("/s.slice/a.service", &own, LAT_NONE, "unit of rule db", &pl), 1);
	assert_int_equal(latpol_unit("/s.slice/b.service", &own, 3, "unit of rule db", &pl), 1);
	assert_int_equal(latpol_unit("/s.slice/c.service", &own, 5, "unit of rule db", &pl), 0);
	assert_int_equal(latpol_unit("/s.slice/d.service", &shared, 5, "", &pl), 1);
	assert_int_equal(latpol_unit("/s.slice/e.service", &shared, LAT_NONE, "", &pl), 0);
	assert_int_equal(latpol_unit("/s.slice/f.service", NULL, -2, "", &pl), 1);
	assert_int_equal(latpol_unit("/s.slice/g.service", NULL, LAT_NONE, "", &pl), 0);
	plan_finish(&pl);
	assert_string_equal(kit_plan_dump(&pl),
		"latunit path=/s.slice/a.service value=5 source=\"unit of rule db\"\n"
		"latunit path=/s.slice/b.service value=5 source=\"unit of rule db\"\n"
		"unlatunit path=/s.slice/d.service\n"
		"unlatunit path=/s.slice/f.service\n");
	plan_fini(&pl);
}

static struct rule_set *two_rules(void)
{
	static struct rule_set rs;

	kit_rules(&rs, 2);
	rs.r[0].name = "db";
	rs.r[0].comm = "postgres*";
	rs.r[0].latency_nice = -5;
	rs.r[1].name = "batch";
	rs.r[1].comm = "make";
	rs.r[1].latency_nice = 10;
	return &rs;
}

KIT_TEST(rules_apply_keep_and_give_back)
{
	struct proc_ident pg = { .pid = 10, .comm = "postgres", .exe = "", .cmdline = "",
				 .cgroup = "/" };
	struct proc_ident sh = pg;
	struct latpol_rec none = { .value = LAT_NONE, .source = "" };
	struct latpol_rec db = rec(-5, "rule db", true), batch = rec(10, "rule batch", true);
	char source[PLAN_SOURCE_MAX];
	int i = -1;

	sh.comm = "sh";
	assert_int_equal(latpol_rule(two_rules(), &pg, &none, &i, source), LATPOL_RULE_APPLY);
	assert_int_equal(i, 0);
	assert_string_equal(source, "rule db");
	assert_int_equal(latpol_rule(two_rules(), &pg, &db, &i, source), LATPOL_RULE_KEEP);
	/* Another rule's value is replaced by the first rule that matches now. */
	assert_int_equal(latpol_rule(two_rules(), &pg, &batch, &i, source), LATPOL_RULE_APPLY);
	assert_int_equal(latpol_rule(two_rules(), &sh, &none, &i, source), LATPOL_RULE_KEEP);
	assert_int_equal(latpol_rule(two_rules(), &sh, &db, &i, source), LATPOL_RULE_GIVE_BACK);
	/* Unreadable (gone, a kernel thread): as matching nothing. */
	assert_int_equal(latpol_rule(two_rules(), NULL, &db, &i, source), LATPOL_RULE_GIVE_BACK);
	/* A ctl value, and the daemon itself, are never the rules'. */
	assert_false(latpol_rules_may_change(&(struct latpol_rec){ .managed = true }, false));
	assert_false(latpol_rules_may_change(&none, true));
	assert_true(latpol_rules_may_change(&db, false));
	assert_true(latpol_rules_may_change(&none, false));
}

KIT_TEST(fork_inherits_the_creators_value)
{
	struct latpol_fork f = { .creator = rec(-3, "rule db", true), .thread = true,
				 .from_tid = 10, .child = task(12, 10, 103) };
	const char *why;
	struct plan pl;

	plan_init(&pl);
	assert_int_equal(latpol_fork(&f, SELF, &pl, &why), 1);
	/* A process from the connector that did not get what rqbalance set on its parent. */
	f.thread = false;
	f.child = task(40, 40, 110);
	assert_int_equal(latpol_fork(&f, SELF, &pl, &why), 0);
	assert_non_null(why);
	/* The same, where BPF names the creator. */
	f.creator_known = true;
	assert_int_equal(latpol_fork(&f, SELF, &pl, &why), 1);
	f.creator.managed = false;
	f.child = task(50, 50, 120);
	assert_int_equal(latpol_fork(&f, SELF, &pl, &why), 0);
	plan_finish(&pl);
	assert_string_equal(kit_plan_dump(&pl),
		"lat tid=12 tgid=10 start=103 value=-3 source=\"rule db\" from=10\n"
		"lat tid=40 tgid=40 start=110 value=-3 source=\"rule db\" from=10\n");
	plan_fini(&pl);
}

KIT_TEST(walk_adopts_ctl_children_only)
{
	struct latpol_rec ctl = rec(2, "ctl uid 0", false), rule = rec(2, "rule db", true);

	assert_true(latpol_adopt(&ctl, 100, true));
	assert_false(latpol_adopt(&ctl, 99, true));   /* older than its parent: not its */
	assert_false(latpol_adopt(&ctl, 150, false)); /* did not inherit it */
	assert_false(latpol_adopt(&rule, 150, true)); /* a rule's: only by matching */
}

KIT_TEST(reload_gives_every_task_its_value_anew)
{
	struct latpol_task e[] = { valued(task(21, 20, 200), 1, "ctl uid 0"),
				   valued(task(10, 10, 100), -2, "rule db"),
				   valued(task(20, 20, 199), 1, "ctl uid 0") };
	struct plan pl;

	plan_init(&pl);
	assert_int_equal(latpol_reapply(e, 3, &pl), 3);
	assert_string_equal(kit_plan_dump(&pl),
		"lat tid=10 tgid=10 start=100 value=-2 source=\"rule db\"\n"
		"lat tid=20 tgid=20 start=199 value=1 source=\"ctl uid 0\"\n"
		"lat tid=21 tgid=20 start=200 value=1 source=\"ctl uid 0\"\n");
	plan_fini(&pl);
}
