/*
 * The latency manager on a fake /proc (tests/common/ctl_harness.h's, plus the
 * processes below) with the dry-run latency actuator: the plans it hands the actuator
 * (shown to the actuator's on_plan hook) are compared as text dumps. No real task is
 * named: the fake pids are above PID_MAX_LIMIT.
 */
#include <sys/socket.h>

#include "kit.h"

#include "../common/ctl_harness.h"
#include "latmgr/latmgr.h"
#include "latmgr/latmgr_int.h"
#include "util/log.h"
#include "util/schedattr.h"

#define PROC_W (CTLH_BASE + 20) /* comm "worker", threads W and W + 1 */
#define PROC_E (CTLH_BASE + 30) /* threads E and E + 1; E + 2 listed, its stat gone */
#define OTHER (PROC_E + 2)      /* another process that has E + 2's pid in /proc */

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

/* Process tgid gets v from source, as a ctl request (trusted: a privileged one's) asks. */
static int set_proc(struct ctlh *d, pid_t tgid, int v, const char *source, bool trusted)
{
	const char *why = NULL;

	return latmgr_set(&d->lm, &(struct lat_target){ .kind = LAT_T_PROCESS, .pid = tgid }, v,
			  source, trusted, &why);
}

/* Gives back what process tgid had, as a ctl reset does. */
static int reset_proc(struct ctlh *d, pid_t tgid)
{
	return latmgr_reset(&d->lm, &(struct lat_target){ .kind = LAT_T_PROCESS, .pid = tgid });
}

/* Caller uid, unprivileged, puts process tgid (0: none) in front at -5, as source. */
static int front(struct ctlh *d, uid_t uid, pid_t tgid, const char *source, int *ret_value)
{
	struct lat_req rq = { .tid = tgid, .tgid = tgid, .value = -5, .source = source };
	const char *why = NULL;

	return latmgr_foreground(&d->lm, uid, &rq, ret_value, &why);
}

/* Connection conn of caller uid registers game tgid at -10 (pinned as it is now). */
static int game(struct ctlh *d, uid_t uid, const char *conn, pid_t tgid, int *ret_value)
{
	char source[48];
	struct lat_req rq = { .tid = tgid, .tgid = tgid, .value = -10, .source = source };
	const char *why = NULL;

	snprintf(source, sizeof(source), "game uid %u pid %d %s", (unsigned)uid, (int)tgid, conn);
	assert_int_equal(latmgr_task_info(&d->lm, tgid, &rq.start_time, &(bool){ false }), 0);
	return latmgr_game(&d->lm, uid, conn, &rq, ret_value, &why);
}

KIT_TEST_FX(test_rule_at_rescan, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct rule *r = &kit_rules(&d->conf.rules, 1)->r[0];
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
	assert_string_equal(ctlh_plans,
			    "lat tid=4194420 tgid=4194420 start=4242 value=7 source=\"rule w\" whole\n"
			    "lat tid=4194421 tgid=4194420 start=4242 value=7 source=\"rule w\" whole\n");
	assert_int_equal(d->lm.cnt.rule_matches, 1);
	p = latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW);
	assert_non_null(p);
	assert_int_equal(p->value, 7);
	assert_true(p->from_rule);
	assert_string_equal(p->source, "rule w");
	assert_null(latmgr_find_process(&d->lm, CTLH_PROC_A, LATMGR_START_NOW));
}

KIT_TEST_FX(test_set_process_threads, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;

	assert_int_equal(set_proc(d, CTLH_PROC_A, 5, "ctl uid 1000", false), 2);
	assert_string_equal(ctlh_plans,
			    "lat tid=4194401 tgid=4194401 start=4242 value=5 source=\"ctl uid 1000\" whole\n"
			    "lat tid=4194402 tgid=4194401 start=4242 value=5 source=\"ctl uid 1000\" whole\n");
	assert_non_null(latmgr_find_process(&d->lm, CTLH_PROC_A, LATMGR_START_NOW));
}

KIT_TEST_FX(test_thread_not_under_task_dir, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;

	/* E + 2 is listed under /proc/E/task, but its stat there is gone: left out. */
	assert_int_equal(set_proc(d, PROC_E, 3, "ctl uid 0", true), 2);
	assert_string_equal(ctlh_plans,
			    "lat tid=4194430 tgid=4194430 start=4242 value=3 source=\"ctl uid 0\" whole\n"
			    "lat tid=4194431 tgid=4194430 start=4242 value=3 source=\"ctl uid 0\" whole\n");
}

KIT_TEST_FX(test_reset_gives_back, ctlh_lat_setup_managed, ctlh_teardown)
{
	struct ctlh *d = *state;

	/* Its two threads have entries (ctlh_managed): both are given back. */
	assert_int_equal(reset_proc(d, CTLH_PROC_A), 2);
	assert_string_equal(ctlh_plans, "unlat tid=4194401 tgid=4194401 start=4242\n"
				   "unlat tid=4194402 tgid=4194401 start=4242\n");
	assert_null(latmgr_find_process(&d->lm, CTLH_PROC_A, LATMGR_START_NOW));
	/* Not managed: nothing to give back, no plan. */
	ctlh_plans[0] = '\0';
	assert_int_equal(reset_proc(d, PROC_W), -ENOENT);
	assert_string_equal(ctlh_plans, "");
}

/*
 * A caller puts W, then E, in front: W gets its earlier value back (from a ctl set),
 * E none once nothing is in front; a value someone set meanwhile stays; a process with
 * a lower value keeps it.
 */
KIT_TEST_FX(test_foreground_gives_back, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	const struct latmgr_proc *p;
	int v = 0;

	assert_int_equal(set_proc(d, PROC_W, 3, "ctl uid 1000", false), 2);
	assert_int_equal(front(d, 1000, PROC_W, "foreground uid 1000", &v), 0);
	assert_int_equal(v, -5);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW)->value, -5);
	/* Asked again: nothing changes, nothing is given back. */
	ctlh_plans[0] = '\0';
	assert_int_equal(front(d, 1000, PROC_W, "foreground uid 1000", &v), 0);
	assert_string_equal(ctlh_plans, "");
	assert_int_equal(front(d, 1000, PROC_E, "foreground uid 1000", &v), 0);
	p = latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW);
	assert_non_null(p);
	assert_int_equal(p->value, 3);
	assert_string_equal(p->source, "ctl uid 1000");
	assert_int_equal(latmgr_find_process(&d->lm, PROC_E, LATMGR_START_NOW)->value, -5);
	/* Nothing in front: E had no value, it has none again. */
	assert_int_equal(front(d, 1000, 0, "foreground uid 1000", &v), 0);
	assert_null(latmgr_find_process(&d->lm, PROC_E, LATMGR_START_NOW));
	/* Someone sets W's value while it is in front: it stays when W leaves the front. */
	assert_int_equal(front(d, 1000, PROC_W, "foreground uid 1000", &v), 0);
	assert_int_equal(set_proc(d, PROC_W, 8, "ctl uid 0", true), 2);
	assert_int_equal(front(d, 1000, PROC_E, "foreground uid 1000", &v), 0);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW)->value, 8);
	/* A process with a lower value keeps it, and gets nothing back later. */
	assert_int_equal(set_proc(d, PROC_W, -9, "ctl uid 0", true), 2);
	assert_int_equal(front(d, 1000, PROC_W, "foreground uid 1000", &v), 0);
	assert_int_equal(v, -9);
	assert_null(latmgr_find_process(&d->lm, PROC_E, LATMGR_START_NOW));
	assert_int_equal(front(d, 1000, 0, "foreground uid 1000", &v), 0);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW)->value, -9);
	/* One caller's front is not another's. */
	assert_int_equal(front(d, 1001, PROC_E, "foreground uid 1001", &v), 0);
	assert_int_equal(front(d, 1000, 0, "foreground uid 1000", &v), 0);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_E, LATMGR_START_NOW)->value, -5);
	/* Callers come and go: a slot with nothing in front is taken again, never a limit. */
	assert_true(reset_proc(d, PROC_W) >= 0);
	assert_null(latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW));
	for (uid_t u = 2000; u < 2000 + 2 * LATMGR_FG_MAX; u++) {
		assert_int_equal(front(d, u, PROC_W, "foreground uid 2", &v), 0);
		assert_int_equal(v, -5);
		assert_int_equal(front(d, u, 0, "foreground uid 2", &v), 0);
	}
	assert_true(d->lm.nfg <= LATMGR_FG_MAX);
}

/*
 * A record left by an earlier process under W's number (its exit not read yet) is not
 * W's: putting W in front saves nothing of it as what W had, so nothing of it (a
 * value, a trusted source) is given back to W, nor to anything else, at the end.
 */
KIT_TEST_FX(test_foreground_pinned, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct latmgr_proc stale = { .tgid = PROC_W, .start_time = CTLH_START_TIME + 1,
				     .value = -15, .trusted = true, .source = "ctl uid 0" };
	struct lat_req rq = { .tid = PROC_W, .tgid = PROC_W, .start_time = CTLH_START_TIME,
			      .value = -5, .source = "foreground uid 1000" };
	const char *why = NULL;
	int v = 0;

	assert_int_equal(latmgr_proc_put(&d->lm, &stale), 0);
	assert_null(latmgr_find_process(&d->lm, PROC_W, CTLH_START_TIME));
	assert_null(latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW));
	assert_non_null(latmgr_find_process(&d->lm, PROC_W, CTLH_START_TIME + 1));
	assert_int_equal(latmgr_foreground(&d->lm, 1000, &rq, &v, &why), 0);
	assert_int_equal(v, -5);
	assert_false(d->lm.fg[0].had);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_W, CTLH_START_TIME)->value, -5);
	assert_int_equal(front(d, 1000, 0, "foreground uid 1000", &v), 0);
	assert_null(latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW));
}

/*
 * The grant ends for what holds it, its front gone or not: E, started under W while W
 * was in front (its record copied from W's, as on_fork makes it), is given back when
 * W, which exited, leaves the front; a process that holds the same value as someone
 * else's stays.
 */
KIT_TEST_FX(test_foreground_front_gone, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct latmgr_proc child;
	int v = 0;

	assert_int_equal(front(d, 1000, PROC_W, "foreground uid 1000", &v), 0);
	child = *latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW);
	assert_true(child.grant);
	child.tgid = PROC_E;
	assert_int_equal(latmgr_proc_put(&d->lm, &child), 0);
	latmgr_proc_del(&d->lm, PROC_W); /* W exited */
	assert_int_equal(set_proc(d, CTLH_PROC_A, -5, "foreground uid 1000", true), 2);
	assert_int_equal(front(d, 1000, 0, "foreground uid 1000", &v), 0);
	assert_null(latmgr_find_process(&d->lm, PROC_E, LATMGR_START_NOW));
	assert_int_equal(latmgr_find_process(&d->lm, CTLH_PROC_A, LATMGR_START_NOW)->value, -5);
}

/* ---- systemd units: each process's unit kept, decided again only where it changed ---- */

#define UNIT_A (CTLH_BASE + 40) /* A, A + 1 managed in a.service; A + 2 without a value */
#define UNIT_OTHER (CTLH_BASE + 50) /* in b.service, never managed */

static const struct evsrc_ops stand_in_ops = { .name = "test" };
static struct evsrc stand_in = { .ops = &stand_in_ops };

/* Process pid, in cgroup /test.slice/NAME.service (NULL: gone from /proc). */
static void unit_proc(pid_t pid, const char *name)
{
	static const unsigned uid[] = { 1000 };
	char rel[128], text[128];

	if (!name) {
		snprintf(text, sizeof(text), "%s/proc/%d", ctlh_tmp, (int)pid);
		kit_rm(text);
		return;
	}
	ctlh_process(pid, uid, 1, 0);
	snprintf(rel, sizeof(rel), "proc/%d/cgroup", (int)pid);
	snprintf(text, sizeof(text), "0::/test.slice/%s.service\n", name);
	ctlh_put(rel, text);
}

/* The members of NAME.service, as its cgroup.procs lists them. */
static void unit_members(const char *name, const char *pids)
{
	char rel[128];

	snprintf(rel, sizeof(rel), "cg/test.slice/%s.service", name);
	ctlh_dir("cg/test.slice");
	ctlh_dir(rel);
	snprintf(rel, sizeof(rel), "cg/test.slice/%s.service/cgroup.procs", name);
	ctlh_put(rel, pids);
}

static void exit_event(struct ctlh *d, pid_t pid)
{
	struct evsrc_event ev = { .kind = EVSRC_EXIT, .tid = pid, .tgid = pid };

	latmgr_event_callbacks.event(&d->lm, &ev);
}

static enum lat_unit_verdict verdict_of(struct ctlh *d, pid_t pid)
{
	const struct latmgr_unit *u = latmgr_unit_of(&d->lm, pid);

	assert_non_null(u);
	return u->d.verdict;
}

/* What the kept units say is what deciding them all from scratch says. */
static void assert_as_full(struct ctlh *d)
{
	enum lat_unit_verdict v[8];
	size_t n = d->lm.nu;

	assert_true(n <= 8);
	for (size_t i = 0; i < n; i++)
		v[i] = d->lm.u[i].d.verdict;
	latmgr_units_check_all(&d->lm);
	latmgr_units_refresh(&d->lm);
	assert_int_equal(d->lm.nu, n);
	for (size_t i = 0; i < n; i++)
		assert_int_equal(d->lm.u[i].d.verdict, v[i]);
}

static size_t units_used(const struct ctlh *d)
{
	size_t n = 0;

	for (size_t i = 0; i < d->lm.nu; i++)
		n += d->lm.u[i].used;
	return n;
}

KIT_TEST_FX(test_units_follow_changes, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	char pids[64];

	unit_proc(UNIT_A, "a");
	unit_proc(UNIT_A + 1, "a");
	unit_proc(UNIT_A + 2, "a");
	unit_proc(UNIT_OTHER, "b");
	snprintf(pids, sizeof(pids), "%d\n%d\n%d\n", UNIT_A, UNIT_A + 1, UNIT_A + 2);
	unit_members("a", pids);
	snprintf(pids, sizeof(pids), "%d\n", UNIT_OTHER);
	unit_members("b", pids);
	d->lat.o.systemd = true;
	d->lat.o.bus_address = "unix:path=/nonexistent/rqb-test-bus"; /* a weight fails fast */
	d->lm.units_on = true;
	d->lm.ev = &stand_in;

	/* Two of its three processes have a value: the third keeps it SHARED. */
	assert_true(set_proc(d, UNIT_A, 4, "ctl", true) >= 0);
	assert_true(set_proc(d, UNIT_A + 1, 4, "ctl", true) >= 0);
	assert_int_equal(verdict_of(d, UNIT_A), LAT_UNIT_SHARED);
	assert_int_equal(units_used(d), 1);
	assert_as_full(d);

	/* Another unit's process exits: nothing is decided again. */
	exit_event(d, UNIT_OTHER);
	assert_false(d->lm.units_dirty);

	/* The one without a value exits: the unit is its processes' now. */
	unit_proc(UNIT_A + 2, NULL);
	snprintf(pids, sizeof(pids), "%d\n%d\n", UNIT_A, UNIT_A + 1);
	unit_members("a", pids);
	exit_event(d, UNIT_A + 2);
	assert_true(d->lm.units_dirty);
	latmgr_units_refresh(&d->lm);
	assert_int_equal(verdict_of(d, UNIT_A), LAT_UNIT_OWN);
	assert_as_full(d);

	/* A value changed: its unit is decided again, at once for a ctl request. */
	assert_true(set_proc(d, UNIT_A + 1, 6, "ctl", true) >= 0);
	assert_int_equal(verdict_of(d, UNIT_A), LAT_UNIT_OTHERS);
	assert_as_full(d);

	/* Moved to b.service, which no event tells: the ticks' shares find it. */
	unit_proc(UNIT_A + 1, "b");
	snprintf(pids, sizeof(pids), "%d\n", UNIT_A);
	unit_members("a", pids);
	snprintf(pids, sizeof(pids), "%d\n", UNIT_A + 1);
	unit_members("b", pids);
	for (int t = 0; t < 2 * 50 && units_used(d) < 2; t++)
		latmgr_tick(&d->lm);
	assert_int_equal(units_used(d), 2);
	assert_int_equal(verdict_of(d, UNIT_A), LAT_UNIT_OWN);
	assert_int_equal(verdict_of(d, UNIT_A + 1), LAT_UNIT_OWN);
	assert_int_equal(latmgr_find_process(&d->lm, UNIT_A + 1, LATMGR_START_NOW)->unit,
			 (uint32_t)(latmgr_unit_of(&d->lm, UNIT_A + 1) - d->lm.u) + 1);
	assert_as_full(d);

	/* Both go: no unit record is left. */
	exit_event(d, UNIT_A);
	exit_event(d, UNIT_A + 1);
	latmgr_units_refresh(&d->lm);
	assert_int_equal(units_used(d), 0);
	assert_int_equal(d->lm.nu, 0);
	d->lm.ev = NULL;
	unit_proc(UNIT_A, NULL);
	unit_proc(UNIT_A + 1, NULL);
}

/*
 * A game's grant is its connection's: another connection cannot end it, its own
 * unregister or its leaving the bus does; the value someone set since stays; a game
 * that had a lower value keeps it, and its record is kept for its unregister.
 */
KIT_TEST_FX(test_games, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	uint64_t start;
	uid_t owner = 0;
	int v = 0;

	assert_int_equal(latmgr_task_info(&d->lm, PROC_W, &start, &(bool){ false }), 0);
	assert_int_equal(game(d, 1000, ":1.5", PROC_W, &v), 0);
	assert_int_equal(v, -10);
	assert_true(latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW)->grant);
	assert_int_equal(game(d, 1000, ":1.5", PROC_W, &v), 0); /* again: nothing changes */
	assert_int_equal(v, -10);
	assert_true(latmgr_games_of(&d->lm, ":1.5"));
	assert_false(latmgr_games_of(&d->lm, ":1.6"));
	assert_int_equal(latmgr_game_end(&d->lm, ":1.6", PROC_W, start), -ESRCH);
	assert_int_equal(latmgr_game_end(&d->lm, ":1.5", PROC_W, start + 1), -ESRCH);
	assert_int_equal(latmgr_games_gone(&d->lm, ":1.6", &(uid_t){ 0 }), 0);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW)->value, -10);
	assert_int_equal(latmgr_games_gone(&d->lm, ":1.5", &owner), 1);
	assert_int_equal(owner, 1000);
	assert_null(latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW));
	assert_false(latmgr_games_of(&d->lm, ":1.5"));
	assert_int_equal(d->lm.ngames, 0);

	/* A value set since stays at the unregister. */
	assert_int_equal(game(d, 1000, ":1.5", PROC_W, &v), 0);
	assert_int_equal(set_proc(d, PROC_W, -3, "ctl uid 0", true), 2);
	assert_int_equal(latmgr_game_end(&d->lm, ":1.5", PROC_W, start), 0);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW)->value, -3);

	/* A lower value is kept, and left at the unregister. */
	assert_int_equal(set_proc(d, PROC_W, -15, "ctl uid 0", true), 2);
	assert_int_equal(game(d, 1000, ":1.5", PROC_W, &v), 0);
	assert_int_equal(v, -15);
	assert_int_equal(latmgr_game_end(&d->lm, ":1.5", PROC_W, start), 0);
	assert_int_equal(latmgr_find_process(&d->lm, PROC_W, LATMGR_START_NOW)->value, -15);
	assert_int_equal(latmgr_game_end(&d->lm, ":1.5", PROC_W, start), -ESRCH);

	/* No unique name, or a longer one than kept: refused. */
	assert_int_equal(game(d, 1000, "", PROC_E, &v), -EINVAL);
	assert_int_equal(game(d, 1000, ":1.123456789012345678901234567890", PROC_E, &v), -EINVAL);
}

void kit_before(void)
{
	log_set_level(-1);
	ctlh_init("rqb-test-latmgr");
	more_processes();
}
