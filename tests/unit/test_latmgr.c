/*
 * The latency manager on a fake /proc (tests/common/ctl_harness.h's, plus the
 * processes below) with the dry-run latency actuator: the plans it hands the actuator
 * (its on_plan hook) are compared as text dumps. No real task is named: the fake
 * pids are above PID_MAX_LIMIT.
 */
#include <sys/socket.h>

#include "unit.h"

#include "../common/ctl_harness.h"
#include "latmgr/latmgr.h"
#include "util/log.h"
#include "util/schedattr.h"

#define PROC_W (CTLH_BASE + 20) /* comm "worker", threads W and W + 1 */
#define PROC_E (CTLH_BASE + 30) /* threads E and E + 1; E + 2 listed, its stat gone */
#define OTHER (PROC_E + 2)      /* another process that has E + 2's pid in /proc */

static char plans[1 << 14]; /* every plan the manager made, dumped, in order */

static void on_plan(void *ctx, const struct plan *p)
{
	(void)ctx;
	snprintf(plans + strlen(plans), sizeof(plans) - strlen(plans), "%s", unit_plan_dump(p));
}

/* The dry run's task operations: every fake task opens and reads (the kernel knows none). */
static int open_fake(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret)
{
	(void)tgid;
	*ret = (struct act_task){ .tid = tid, .start_time = start_time, .pidfd = -1 };
	return 0;
}

static int alive_fake(const struct act_task *t)
{
	(void)t;
	return 0;
}

/* Each has what a plain task has: SCHED_OTHER, nice 0, no slice or clamp of its own. */
static int plain_attr(pid_t tid, struct rqb_sched_attr *ret)
{
	(void)tid;
	*ret = (struct rqb_sched_attr){ .size = sizeof(*ret), .sched_policy = SCHED_OTHER };
	return 0;
}

/* The harness's driver (the dry-run driver on fake tasks), but every task opens. */
static struct act_ops fake_ops;

/* W runs "worker"; E's task directory lists a tid whose stat is not there. */
static void more_processes(void)
{
	static const unsigned w[] = { 1000, 1000 }, e[] = { 1000, 1000 };
	char rel[64];

	ctlh_process(PROC_W, w, 2, 0);
	snprintf(rel, sizeof(rel), "proc/%d/comm", PROC_W);
	ctlh_put(rel, "worker\n");
	ctlh_process(PROC_E, e, 2, 0);
	snprintf(rel, sizeof(rel), "proc/%d/task/%d", PROC_E, OTHER);
	ctlh_dir(rel);
	/* The pid is now another process's, which /proc/PID/stat shows. */
	ctlh_task_files("proc", OTHER, OTHER, 1, 1000, 1000, 0);
}

static struct ctlh *daemon_with(uint8_t managed)
{
	struct ctlh_scenario sc = { .managed = managed };
	struct ctlh *d = ctlh_daemon_new(&sc);

	fake_ops = ctlh_ops;
	fake_ops.name = "fake";
	fake_ops.open = open_fake;
	fake_ops.alive = alive_fake;
	fake_ops.get_attr = plain_attr;
	d->lat.ops = &fake_ops;
	d->lm.on_plan = on_plan;
	plans[0] = '\0';
	return d;
}

/* Process tgid gets v from source, as a ctl request (trusted: a privileged one's) asks. */
static int set_proc(struct ctlh *d, pid_t tgid, int v, const char *source, bool trusted)
{
	struct lat_req rq = { .tid = tgid, .tgid = tgid, .value = v, .source = source,
			      .trusted = trusted };
	const char *why = NULL;

	return latmgr_set_process(&d->lm, &rq, &why);
}

/* Caller uid, unprivileged, puts process tgid (0: none) in front at -5, as source. */
static int front(struct ctlh *d, uid_t uid, pid_t tgid, const char *source, int *ret_value)
{
	struct lat_req rq = { .tid = tgid, .tgid = tgid, .value = -5, .source = source };
	const char *why = NULL;

	return latmgr_foreground(&d->lm, uid, &rq, ret_value, &why);
}

static int setup(void **state)
{
	*state = daemon_with(0);
	return 0;
}

static int setup_managed(void **state)
{
	*state = daemon_with(1 | 2);
	return 0;
}

static int teardown(void **state)
{
	ctlh_daemon_free(*state);
	return 0;
}

static void test_rule_at_rescan(void **state)
{
	struct ctlh *d = *state;
	struct rule *r = &unit_rules(&d->conf.rules, 1)->r[0];
	const struct latmgr_proc *p;

	r->name = "w";
	r->comm = "worker";
	r->latency_nice = 7;
	r->uid = RULE_UID_ANY;
	latmgr_rescan(&d->lm);
	/*
	 * The match's plan, and no other: the pass over a managed process's threads skips
	 * a process a rule has just given its value (in a dry run none of its threads
	 * holds it, and that pass used to plan the match a second time).
	 */
	assert_string_equal(plans,
			    "lat tid=4194420 tgid=4194420 start=4242 value=7 source=\"rule w\" whole\n"
			    "lat tid=4194421 tgid=4194420 start=4242 value=7 source=\"rule w\" whole\n");
	assert_int_equal(d->lm.cnt.rule_matches, 1);
	p = latmgr_find_process(&d->lm, PROC_W);
	assert_non_null(p);
	assert_int_equal(p->value, 7);
	assert_true(p->from_rule);
	assert_string_equal(p->source, "rule w");
	assert_null(latmgr_find_process(&d->lm, CTLH_PROC_A));
}

static void test_set_process_threads(void **state)
{
	struct ctlh *d = *state;

	assert_int_equal(set_proc(d, CTLH_PROC_A, 5, "ctl uid 1000", false), 2);
	assert_string_equal(plans,
			    "lat tid=4194401 tgid=4194401 start=4242 value=5 source=\"ctl uid 1000\" whole\n"
			    "lat tid=4194402 tgid=4194401 start=4242 value=5 source=\"ctl uid 1000\" whole\n");
	assert_non_null(latmgr_find_process(&d->lm, CTLH_PROC_A));
}

static void test_thread_not_under_task_dir(void **state)
{
	struct ctlh *d = *state;

	/* E + 2 is listed under /proc/E/task, but its stat there is gone: left out. */
	assert_int_equal(set_proc(d, PROC_E, 3, "ctl uid 0", true), 2);
	assert_string_equal(plans,
			    "lat tid=4194430 tgid=4194430 start=4242 value=3 source=\"ctl uid 0\" whole\n"
			    "lat tid=4194431 tgid=4194430 start=4242 value=3 source=\"ctl uid 0\" whole\n");
}

static void test_reset_gives_back(void **state)
{
	struct ctlh *d = *state;

	/* Its two threads have entries (ctlh_managed): both are given back. */
	assert_int_equal(latmgr_reset_process(&d->lm, CTLH_PROC_A, 0), 2);
	assert_string_equal(plans, "unlat tid=4194401 tgid=4194401 start=4242\n"
				   "unlat tid=4194402 tgid=4194401 start=4242\n");
	assert_null(latmgr_find_process(&d->lm, CTLH_PROC_A));
	/* Not managed: nothing to give back, no plan. */
	plans[0] = '\0';
	assert_int_equal(latmgr_reset_process(&d->lm, PROC_W, 0), -ENOENT);
	assert_string_equal(plans, "");
}

/*
 * A caller puts W, then E, in front: W gets its earlier value back (from a ctl set),
 * E none once nothing is in front; a value someone set meanwhile stays; a process with
 * a lower value keeps it.
 */
static void test_foreground_gives_back(void **state)
{
	struct ctlh *d = *state;
	const struct latmgr_proc *p;
	int v = 0;

	assert_int_equal(set_proc(d, PROC_W, 3, "ctl uid 1000", false), 2);
	assert_int_equal(front(d, 1000, PROC_W, "foreground uid 1000", &v), 0);
	assert_int_equal(v, -5);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_W)->value, -5);
	/* Asked again: nothing changes, nothing is given back. */
	plans[0] = '\0';
	assert_int_equal(front(d, 1000, PROC_W, "foreground uid 1000", &v), 0);
	assert_string_equal(plans, "");
	assert_int_equal(front(d, 1000, PROC_E, "foreground uid 1000", &v), 0);
	p = latmgr_find_process(&d->lm, PROC_W);
	assert_non_null(p);
	assert_int_equal(p->value, 3);
	assert_string_equal(p->source, "ctl uid 1000");
	assert_int_equal(latmgr_find_process(&d->lm, PROC_E)->value, -5);
	/* Nothing in front: E had no value, it has none again. */
	assert_int_equal(front(d, 1000, 0, "foreground uid 1000", &v), 0);
	assert_null(latmgr_find_process(&d->lm, PROC_E));
	/* Someone sets W's value while it is in front: it stays when W leaves the front. */
	assert_int_equal(front(d, 1000, PROC_W, "foreground uid 1000", &v), 0);
	assert_int_equal(set_proc(d, PROC_W, 8, "ctl uid 0", true), 2);
	assert_int_equal(front(d, 1000, PROC_E, "foreground uid 1000", &v), 0);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_W)->value, 8);
	/* A process with a lower value keeps it, and gets nothing back later. */
	assert_int_equal(set_proc(d, PROC_W, -9, "ctl uid 0", true), 2);
	assert_int_equal(front(d, 1000, PROC_W, "foreground uid 1000", &v), 0);
	assert_int_equal(v, -9);
	assert_null(latmgr_find_process(&d->lm, PROC_E));
	assert_int_equal(front(d, 1000, 0, "foreground uid 1000", &v), 0);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_W)->value, -9);
	/* One caller's front is not another's. */
	assert_int_equal(front(d, 1001, PROC_E, "foreground uid 1001", &v), 0);
	assert_int_equal(front(d, 1000, 0, "foreground uid 1000", &v), 0);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_E)->value, -5);
	/* Callers come and go: a slot with nothing in front is taken again, never a limit. */
	assert_true(latmgr_reset_process(&d->lm, PROC_W, 0) >= 0);
	assert_null(latmgr_find_process(&d->lm, PROC_W));
	for (uid_t u = 2000; u < 2000 + 2 * LATMGR_FG_MAX; u++) {
		assert_int_equal(front(d, u, PROC_W, "foreground uid 2", &v), 0);
		assert_int_equal(v, -5);
		assert_int_equal(front(d, u, 0, "foreground uid 2", &v), 0);
	}
	assert_true(d->lm.nfg <= LATMGR_FG_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_rule_at_rescan, setup, teardown),
		cmocka_unit_test_setup_teardown(test_set_process_threads, setup, teardown),
		cmocka_unit_test_setup_teardown(test_thread_not_under_task_dir, setup, teardown),
		cmocka_unit_test_setup_teardown(test_reset_gives_back, setup_managed, teardown),
		cmocka_unit_test_setup_teardown(test_foreground_gives_back, setup, teardown),
	};

	log_set_level(-1);
	ctlh_init("rqb-test-latmgr");
	more_processes();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
