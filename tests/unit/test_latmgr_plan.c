/*
 * latmgr_plan.c, the latency manager between the policy and the actuator, on the fake
 * /proc of tests/common/ctl_harness.h with the dry-run latency actuator. It checks that
 * the records and entries are read as the policy expects them, that a plan is carried
 * out only when the policy said there is something to do, that a process's threads are
 * planned from what its task directory lists (its first thread's start time handed
 * back), and how a process plan's results add up: a thread that vanished is no
 * failure, a refused first thread refuses the whole process. Plans are compared as
 * text dumps; no real task is named (the fake pids are above PID_MAX_LIMIT).
 */
#include "kit.h"

#include "../common/ctl_harness.h"
#include "latmgr/latmgr.h"
#include "latmgr/latmgr_int.h"
#include "util/log.h"

#define PROC_P (CTLH_BASE + 60) /* threads P and P + 1; P started at P_START */
#define P_START 5151

/* ctlh_lat_ops's open: every task opens but for the two named here. */
static pid_t open_esrch, open_eperm; /* opening this task fails so; 0: none */

static int open_some(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret)
{
	if (tid == open_esrch)
		return -ESRCH;
	if (tid == open_eperm)
		return -EPERM;
	return ctlh_open_any(tid, tgid, start_time, ret);
}

/* A stat line for task tid of tgid that started at start (clock ticks), at rel. */
static void stat_file(const char *rel, pid_t tid, pid_t tgid, unsigned start)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "%d (fake %d) S 1 %d %d 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 %u 3133440 383 "
		 "18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 1 1 1 1 1 1 1 0\n",
		 (int)tid, (int)tid, (int)tgid, (int)tgid, start);
	ctlh_put(rel, text);
}

/* P: two threads; its first started at P_START, the other at the harness's time. */
static void process_p(void)
{
	static const unsigned uids[] = { 1000, 1000 };
	char rel[64];

	ctlh_process(PROC_P, uids, 2, 0);
	snprintf(rel, sizeof(rel), "proc/%d/stat", PROC_P);
	stat_file(rel, PROC_P, PROC_P, P_START);
	snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", PROC_P, PROC_P);
	stat_file(rel, PROC_P, PROC_P, P_START);
}

/* Each new daemon's fakes, as ctlh_lat_fresh. */
static void fresh(struct ctlh *d)
{
	(void)d;
	ctlh_lat_ops.open = open_some;
	open_esrch = open_eperm = 0;
}

/* A whole-process SET of task tid of tgid to value v, as the policy plans one. */
static struct plan_action set_action(pid_t tid, pid_t tgid, int v)
{
	struct plan_action a = { .op = PLAN_LAT_SET, .tid = tid, .tgid = tgid,
				 .start_time = CTLH_START_TIME, .value = v, .whole = true,
				 .from_llc = -1, .to_llc = -1 };

	snprintf(a.source, sizeof(a.source), "ctl uid 0");
	return a;
}

/* Process tgid's request: value v from "ctl uid 0", decided on start (0: any). */
static struct lat_req req(pid_t tgid, int v, uint64_t start)
{
	return (struct lat_req){ .tid = tgid, .tgid = tgid, .start_time = start, .value = v,
				 .source = "ctl uid 0", .trusted = true };
}

/* ---- what the policy reads ---- */

KIT_TEST(test_rec_of_no_record_is_unmanaged)
{
	struct latpol_rec r = latmgr_rec_of(NULL);

	(void)state;
	assert_false(r.managed);
	assert_int_equal(r.value, LAT_NONE);
	assert_string_equal(r.source, "");
	assert_false(r.from_rule);
}

KIT_TEST(test_rec_of_record_is_copied)
{
	struct latmgr_proc p = { .tgid = PROC_P, .start_time = 77, .value = -4,
				 .from_rule = true, .source = "rule db" };
	struct latpol_rec r = latmgr_rec_of(&p);

	(void)state;
	assert_true(r.managed);
	assert_int_equal(r.start_time, 77);
	assert_int_equal(r.value, -4);
	assert_true(r.from_rule);
	assert_string_equal(r.source, "rule db");
}

/* The harness's entries: A and A + 1 (5), C + 1 (-3), the ghost (19), by tid. */
KIT_TEST_FX(test_entries_of_all_or_one_process, ctlh_lat_setup_managed, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct latpol_task *t;
	size_t n = 99;

	t = latmgr_entries_of(&d->lm, 0, &n);
	assert_non_null(t);
	assert_int_equal(n, 4);
	assert_int_equal(t[0].tid, CTLH_PROC_A);
	assert_int_equal(t[2].tid, CTLH_PROC_C + 1);
	assert_int_equal(t[2].tgid, CTLH_PROC_C);
	assert_int_equal(t[2].value, -3);
	assert_int_equal(t[3].tid, CTLH_GHOST);
	free(t);

	t = latmgr_entries_of(&d->lm, CTLH_PROC_A, &n);
	assert_non_null(t);
	assert_int_equal(n, 2);
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(t[i].tid, CTLH_PROC_A + (pid_t)i);
		assert_int_equal(t[i].tgid, CTLH_PROC_A);
		assert_int_equal(t[i].start_time, CTLH_START_TIME);
		assert_int_equal(t[i].value, 5);
		assert_string_equal(t[i].source, "ctl uid 1000");
	}
	free(t);

	/* A process with no entry: none, and still something to free. */
	t = latmgr_entries_of(&d->lm, CTLH_PROC_B, &n);
	assert_non_null(t);
	assert_int_equal(n, 0);
	free(t);
}

KIT_TEST_FX(test_entries_of_none_managed, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	size_t n = 99;
	struct latpol_task *t = latmgr_entries_of(&d->lm, 0, &n);

	assert_non_null(t);
	assert_int_equal(n, 0);
	free(t);
}

/* ---- plans to the actuator ---- */

/* The policy said nothing to do (0) or no (-errno): the plan is dropped, not carried out. */
KIT_TEST_FX(test_apply_one_without_action_applies_nothing, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct plan_action a = set_action(CTLH_PROC_B, CTLH_PROC_B, 3);
	const char *why = "untouched";
	struct plan pl;

	plan_init(&pl);
	assert_int_equal(plan_add(&pl, &a), 0);
	assert_int_equal(latmgr_apply_one(&d->lm, &pl, 0, &why), 0);
	assert_int_equal(pl.n, 0);
	assert_null(pl.a);

	assert_int_equal(plan_add(&pl, &a), 0);
	assert_int_equal(latmgr_apply_one(&d->lm, &pl, -EPERM, &why), -EPERM);
	assert_int_equal(pl.n, 0);
	assert_string_equal(why, "untouched");
	assert_string_equal(ctlh_plans, "");
}

KIT_TEST_FX(test_apply_one_carries_out_the_action, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct plan_action a = set_action(CTLH_PROC_B, CTLH_PROC_B, 3);
	const char *why = "untouched";
	struct plan pl;

	plan_init(&pl);
	assert_int_equal(plan_add(&pl, &a), 0);
	assert_int_equal(latmgr_apply_one(&d->lm, &pl, 1, &why), 0);
	assert_null(why);
	assert_int_equal(pl.n, 0);
	assert_string_equal(ctlh_plans, "lat tid=4194405 tgid=4194405 start=4242 value=3 "
				   "source=\"ctl uid 0\" whole\n");
}

/* Its answer is the first action's, with the actuator's reason. */
KIT_TEST_FX(test_apply_one_answers_with_first_result, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct plan_action gone = set_action(CTLH_PROC_B, CTLH_PROC_B, 3);
	struct plan_action ok = set_action(CTLH_PROC_D, CTLH_PROC_D, 3);
	const char *why = NULL;
	struct plan pl;

	open_esrch = CTLH_PROC_B;
	plan_init(&pl);
	assert_int_equal(plan_add(&pl, &gone), 0);
	assert_int_equal(plan_add(&pl, &ok), 0);
	assert_int_equal(latmgr_apply_one(&d->lm, &pl, 1, &why), -ESRCH);
	assert_non_null(why);
	assert_string_equal(why, "no such task (or its pid was reused)");

	why = "untouched";
	assert_int_equal(plan_add(&pl, &ok), 0);
	assert_int_equal(plan_add(&pl, &gone), 0);
	assert_int_equal(latmgr_apply_one(&d->lm, &pl, 1, &why), 0);
	assert_null(why);
}

/* ---- a process's threads ---- */

KIT_TEST_FX(test_decide_threads_plans_every_thread, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_req rq = req(PROC_P, 4, 0);
	const char *why = NULL;
	uint64_t start = 0;

	assert_int_equal(latmgr_set_threads(&d->lm, &rq, &start, &why), 2);
	assert_int_equal(start, P_START);
	assert_string_equal(ctlh_plans,
			    "lat tid=4194460 tgid=4194460 start=5151 value=4 source=\"ctl uid 0\" whole\n"
			    "lat tid=4194461 tgid=4194460 start=4242 value=4 source=\"ctl uid 0\" whole\n");
}

/* latmgr_plan_threads makes the same plan and carries nothing out. */
KIT_TEST_FX(test_plan_threads_carries_nothing_out, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_req rq = req(PROC_P, 4, P_START);
	const char *why = NULL;
	uint64_t start = 0;
	struct plan pl;

	plan_init(&pl);
	assert_int_equal(latmgr_plan_threads(&d->lm, &rq, &pl, &start, &why), 2);
	assert_int_equal(start, P_START);
	assert_string_equal(kit_plan_dump(&pl),
			    "lat tid=4194460 tgid=4194460 start=5151 value=4 source=\"ctl uid 0\" whole\n"
			    "lat tid=4194461 tgid=4194460 start=4242 value=4 source=\"ctl uid 0\" whole\n");
	assert_string_equal(ctlh_plans, "");
	plan_fini(&pl);
}

/* Decided on another start time: another process has the pid now; nothing is done. */
KIT_TEST_FX(test_decide_threads_other_start_time_is_another_process, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_req rq = req(PROC_P, 4, CTLH_START_TIME);
	const char *why = NULL;
	uint64_t start = 1;

	assert_int_equal(latmgr_set_threads(&d->lm, &rq, &start, &why), -ESRCH);
	assert_non_null(why);
	assert_string_equal(why, "no such process (or its pid was reused)");
	assert_int_equal(start, 1);
	assert_string_equal(ctlh_plans, "");
}

/* Both threads of A have 5 from "ctl uid 1000" already (the harness's entries). */
KIT_TEST_FX(test_decide_threads_nothing_to_change, ctlh_lat_setup_managed, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_req rq = { .tid = CTLH_PROC_A, .tgid = CTLH_PROC_A, .value = 5,
			      .source = "ctl uid 1000" };
	const char *why = NULL;
	uint64_t start = 0;

	assert_int_equal(latmgr_set_threads(&d->lm, &rq, &start, &why), 0);
	assert_int_equal(start, CTLH_START_TIME);
	assert_string_equal(ctlh_plans, "");
	/* Another value: both are planned again. */
	rq.value = 6;
	assert_int_equal(latmgr_set_threads(&d->lm, &rq, &start, &why), 2);
	assert_string_equal(ctlh_plans,
			    "lat tid=4194401 tgid=4194401 start=4242 value=6 source=\"ctl uid 1000\" whole\n"
			    "lat tid=4194402 tgid=4194401 start=4242 value=6 source=\"ctl uid 1000\" whole\n");
}

/* A thread gone between the plan and its write: the process still got its value. */
KIT_TEST_FX(test_decide_threads_vanished_thread_is_no_failure, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_req rq = req(PROC_P, 4, 0);
	const char *why = NULL;

	open_esrch = PROC_P + 1;
	assert_int_equal(latmgr_set_threads(&d->lm, &rq, NULL, &why), 1);
	assert_null(why);
}

/* Its first thread refused: the whole process is, its other threads left alone. */
KIT_TEST_FX(test_decide_threads_refused_lead_refuses_process, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_req rq = req(PROC_P, 4, 0);
	const char *why = NULL;

	open_eperm = PROC_P;
	assert_int_equal(latmgr_set_threads(&d->lm, &rq, NULL, &why), -EPERM);
	assert_non_null(why);
	assert_string_equal(why, strerror(EPERM));

	/* Gone, the same. */
	open_eperm = 0;
	open_esrch = PROC_P;
	why = NULL;
	assert_int_equal(latmgr_set_threads(&d->lm, &rq, NULL, &why), -ESRCH);
	assert_string_equal(why, "no such task (or its pid was reused)");
}

/* ---- threads_result's rules, on results as the actuator gives them ---- */

static void lead_and_thread(struct plan *pl)
{
	struct plan_action lead = set_action(PROC_P, PROC_P, 4);
	struct plan_action thread = set_action(PROC_P + 1, PROC_P, 4);

	plan_init(pl);
	assert_int_equal(plan_add(pl, &lead), 0);
	assert_int_equal(plan_add(pl, &thread), 0);
}

KIT_TEST(test_threads_result_counts_done)
{
	struct latact_result res[2] = { { 0, NULL }, { 0, NULL } };
	const char *why = "untouched";
	struct plan pl;

	(void)state;
	lead_and_thread(&pl);
	assert_int_equal(latmgr_threads_result(&pl, res, &why), 2);
	assert_string_equal(why, "untouched");
	/* A thread that exited meanwhile: neither counted nor an error. */
	res[1] = (struct latact_result){ -ESRCH, "gone" };
	assert_int_equal(latmgr_threads_result(&pl, res, &why), 1);
	assert_string_equal(why, "untouched");
	plan_fini(&pl);
}

KIT_TEST(test_threads_result_lead_refusal_wins)
{
	struct latact_result res[2] = { { -EPERM, "real-time" }, { -ECANCELED, NULL } };
	const char *why = NULL;
	struct plan pl;

	(void)state;
	lead_and_thread(&pl);
	assert_int_equal(latmgr_threads_result(&pl, res, &why), -EPERM);
	assert_string_equal(why, "real-time");
	res[0] = (struct latact_result){ -ESRCH, "gone" };
	assert_int_equal(latmgr_threads_result(&pl, res, &why), -ESRCH);
	assert_string_equal(why, "gone");
	/* Even where a thread took the value (a SET the actuator did not cancel). */
	res[0] = (struct latact_result){ -EPERM, "real-time" };
	res[1] = (struct latact_result){ 0, NULL };
	assert_int_equal(latmgr_threads_result(&pl, res, &why), -EPERM);
	assert_string_equal(why, "real-time");
	plan_fini(&pl);
}

/* Another error is one only where nothing took; the first one's reason is kept. */
KIT_TEST(test_threads_result_error_only_where_none_took)
{
	struct latact_result res[2] = { { -EIO, "first" }, { -ENOMEM, "second" } };
	const char *why = NULL;
	struct plan pl;

	(void)state;
	lead_and_thread(&pl);
	assert_int_equal(latmgr_threads_result(&pl, res, &why), -EIO);
	assert_string_equal(why, "first");
	res[1] = (struct latact_result){ 0, NULL };
	assert_int_equal(latmgr_threads_result(&pl, res, &why), 1);
	plan_fini(&pl);
}

void kit_before(void)
{
	log_set_level(-1);
	ctlh_init("rqb-test-latmgr-plan");
	process_p();
	ctlh_lat_fresh = fresh;
}
