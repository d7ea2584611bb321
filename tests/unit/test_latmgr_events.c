/*
 * latmgr_events.c, fork, exec and exit as an event source reports them, on the fake
 * /proc of tests/common/ctl_harness.h with the dry-run latency actuator. Events are fed
 * through the manager's own callbacks (latmgr_event_callbacks), as a source calls them;
 * the barrier (latmgr_mark, latmgr_passed) is read through a scripted source that says
 * whether it was read to empty. It checks that a managed process's new thread and child
 * get its value, a child the kernel did not give rqbalance's settings (the connector)
 * does not, an event about a pid that now names another task changes nothing, an exit
 * forgets the task and its process, an exec applies the rules, a stop ends all that,
 * and that the barrier holds until the source was read empty, a later event was handled,
 * or (after a loss) a /proc walk began. Plans are compared as text dumps; no real task
 * is named (the fake pids are above PID_MAX_LIMIT).
 */
#include <sched.h>
#include <unistd.h>

#include "kit.h"

#include "../common/ctl_harness.h"
#include "latmgr/latmgr.h"
#include "latmgr/latmgr_int.h"
#include "rqbalance.h"
#include "util/log.h"
#include "util/schedattr.h"
#include "util/util.h"

#define PROC_K (CTLH_BASE + 70) /* a new process, one thread, comm "worker" */
#define PROC_X (CTLH_BASE + 80) /* runs "worker", threads X and X + 1 */

/*
 * Task nice_tid has nice nice_val (ctlh_lat_ops's get_attr), and so has process A's
 * first thread where a_holds (it holds what rqbalance set on it).
 */
static pid_t nice_tid;
static int nice_val;
static bool a_holds;

static int attr_of(pid_t tid, struct rqb_sched_attr *ret)
{
	ctlh_plain_attr(tid, ret);
	if (tid == nice_tid || (a_holds && tid == CTLH_PROC_A))
		ret->sched_nice = nice_val;
	return 0;
}

/* ---- a scripted event source: what it holds, and whether a read empties it ---- */

static struct evsrc_event queue[8];
static size_t nqueue;
static bool backlog; /* more is queued than one read takes: a read never empties it */

static int script_dispatch(struct evsrc *es)
{
	size_t n = nqueue;

	for (size_t i = 0; i < n; i++)
		es->cb.event(es->ctx, &queue[i]);
	nqueue = 0;
	return (int)n;
}

static bool script_empty(const struct evsrc *es)
{
	(void)es;
	return !backlog;
}

static const struct evsrc_ops script_ops = { .name = "script", .lost = "test loss",
					     .dispatch = script_dispatch,
					     .empty = script_empty };
static struct evsrc script;

static void queue_event(const struct evsrc_event *ev)
{
	assert_true(nqueue < sizeof(queue) / sizeof(queue[0]));
	queue[nqueue++] = *ev;
}

/* ---- the daemon ---- */

static void processes(void)
{
	static const unsigned uids[] = { 1000, 1000 };
	char rel[64];

	ctlh_process(PROC_K, uids, 1, 0);
	ctlh_process(PROC_X, uids, 2, 0);
	snprintf(rel, sizeof(rel), "proc/%d/comm", PROC_X);
	ctlh_put(rel, "worker\n");
}

/* Each new daemon's fakes, as ctlh_lat_fresh. */
static void fresh(struct ctlh *d)
{
	ctlh_lat_ops.get_attr = attr_of;
	nice_tid = 0;
	a_holds = false;
	nqueue = 0;
	backlog = false;
	script = (struct evsrc){ .ops = &script_ops, .cb = latmgr_event_callbacks, .ctx = &d->lm };
}

static void feed(struct ctlh *d, const struct evsrc_event *ev)
{
	latmgr_event_callbacks.event(&d->lm, ev);
}

/* The CLOCK_BOOTTIME ns an event gives for a start time of ticks clock ticks. */
static uint64_t ticks_ns(uint64_t ticks)
{
	long hz = sysconf(_SC_CLK_TCK);

	assert_true(hz > 0);
	return ticks * (NSEC_PER_SEC / (uint64_t)hz);
}

/* A new process K, made by task creator of tgid (BPF names it), started at start_ns. */
static struct evsrc_event bpf_fork(pid_t creator, pid_t tgid, uint64_t start_ns)
{
	return (struct evsrc_event){ .kind = EVSRC_FORK, .tid = PROC_K, .tgid = PROC_K,
				     .parent_tid = creator, .parent_tgid = tgid,
				     .creator_tid = creator, .creator_tgid = tgid,
				     .start_ns = start_ns };
}

/* ---- fork ---- */

KIT_TEST_FX(test_new_thread_of_managed_process_gets_its_value,
	    ctlh_lat_setup_records, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct evsrc_event ev = { .kind = EVSRC_FORK, .tid = CTLH_PROC_A + 1,
				  .tgid = CTLH_PROC_A, .parent_tid = 1, .parent_tgid = 1 };

	feed(d, &ev);
	assert_string_equal(ctlh_plans, "lat tid=4194402 tgid=4194401 start=4242 value=5 "
				   "source=\"ctl uid 1000\"\n");
	assert_int_equal(d->lm.cnt.events, 1);
	assert_int_equal(d->lm.cnt.threads, 1);
	/* A thread joins its process's record; it has none of its own. */
	assert_null(latmgr_find_process(&d->lm, CTLH_PROC_A + 1, LATMGR_START_NOW));
}

KIT_TEST_FX(test_child_of_managed_process_is_managed, ctlh_lat_setup_records, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct evsrc_event ev = bpf_fork(CTLH_PROC_A, CTLH_PROC_A, ticks_ns(CTLH_START_TIME));
	const struct latmgr_proc *p;

	feed(d, &ev);
	assert_string_equal(ctlh_plans, "lat tid=4194470 tgid=4194470 start=4242 value=5 "
				   "source=\"ctl uid 1000\"\n");
	p = latmgr_find_process(&d->lm, PROC_K, LATMGR_START_NOW);
	assert_non_null(p);
	assert_int_equal(p->value, 5);
	assert_int_equal(p->start_time, CTLH_START_TIME);
	assert_string_equal(p->source, "ctl uid 1000");
	assert_int_equal(d->lm.cnt.threads, 1);
}

/* The event's task started at another time: the pid is another task's now. */
KIT_TEST_FX(test_fork_of_reused_pid_changes_nothing, ctlh_lat_setup_records, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct evsrc_event ev = bpf_fork(CTLH_PROC_A, CTLH_PROC_A, ticks_ns(CTLH_START_TIME + 1));

	feed(d, &ev);
	assert_string_equal(ctlh_plans, "");
	assert_null(latmgr_find_process(&d->lm, PROC_K, LATMGR_START_NOW));
	assert_int_equal(d->lm.cnt.threads, 0);
	assert_int_equal(d->lm.cnt.events, 1);
}

KIT_TEST_FX(test_fork_under_unmanaged_process_changes_nothing, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct evsrc_event ev = { .kind = EVSRC_FORK, .tid = CTLH_PROC_A + 1,
				  .tgid = CTLH_PROC_A };

	feed(d, &ev);
	ev = bpf_fork(CTLH_PROC_A, CTLH_PROC_A, 0);
	feed(d, &ev);
	assert_string_equal(ctlh_plans, "");
	assert_int_equal(d->lm.np, 0);
	assert_int_equal(d->lm.cnt.threads, 0);
	assert_int_equal(d->lm.cnt.events, 2);
}

/*
 * The connector names only the parent: the child is managed where it has what
 * rqbalance set on the parent. A's entry says nice 5 in cgroup /user; K has nice 0.
 */
KIT_TEST_FX(test_connector_child_managed_only_if_it_inherited,
	    ctlh_lat_setup_managed, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct evsrc_event ev = { .kind = EVSRC_FORK, .tid = PROC_K, .tgid = PROC_K,
				  .parent_tid = CTLH_PROC_A, .parent_tgid = CTLH_PROC_A };
	struct lat_entry *a = d->lat.e[0];

	assert_int_equal(a->task.tid, CTLH_PROC_A);
	feed(d, &ev);
	assert_string_equal(ctlh_plans, "");
	assert_null(latmgr_find_process(&d->lm, PROC_K, LATMGR_START_NOW));

	/* K has what rqbalance set on A: the kernel gave it that at fork. */
	a->set.cgroup[0] = '\0';
	nice_tid = PROC_K;
	nice_val = 5;
	feed(d, &ev);
	assert_string_equal(ctlh_plans, "lat tid=4194470 tgid=4194470 start=4242 value=5 "
				   "source=\"ctl uid 1000\" from=4194401\n");
	assert_non_null(latmgr_find_process(&d->lm, PROC_K, LATMGR_START_NOW));
}

KIT_TEST_FX(test_kernel_inherited_compares_what_was_set, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_entry from = { .task = { .tid = CTLH_PROC_A, .pidfd = -1 },
				  .tgid = CTLH_PROC_A,
				  .set = { .policy = SCHED_OTHER, .nice = 5, .umin = -1,
					   .umax = -1 } };
	char rel[64];

	assert_false(latmgr_kernel_inherited(&d->lm, PROC_K, NULL));
	/* K has nice 0. */
	assert_false(latmgr_kernel_inherited(&d->lm, PROC_K, &from));
	nice_tid = PROC_K;
	nice_val = 5;
	assert_true(latmgr_kernel_inherited(&d->lm, PROC_K, &from));
	from.set.policy = SCHED_BATCH;
	assert_false(latmgr_kernel_inherited(&d->lm, PROC_K, &from));
	from.set.policy = SCHED_OTHER;

	/* With class cgroups, it must be in the class cgroup rqbalance put from in. */
	d->lat.cls.on = true;
	snprintf(from.set.cgroup, sizeof(from.set.cgroup), "/lat.5");
	snprintf(rel, sizeof(rel), "proc/%d/cgroup", PROC_K);
	ctlh_put(rel, "0::/elsewhere\n");
	assert_false(latmgr_kernel_inherited(&d->lm, PROC_K, &from));
	ctlh_put(rel, "0::/lat.5\n");
	assert_true(latmgr_kernel_inherited(&d->lm, PROC_K, &from));
	d->lat.cls.on = false;

	/* Its settings cannot be read (no real task has the pid): not inherited. */
	d->lat.ops = &ctlh_ops;
	assert_false(latmgr_kernel_inherited(&d->lm, PROC_K, &from));
}

/* A task made by one given back meanwhile gives back what it inherited of it. */
KIT_TEST_FX(test_child_of_given_back_task_gives_inherited_back, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct lat_entry a = { .task = { .tid = CTLH_PROC_A, .start_time = CTLH_START_TIME,
					 .pidfd = -1 },
			       .tgid = CTLH_PROC_A, .value = 5, .source = "ctl uid 1000",
			       .prev = { .policy = SCHED_OTHER, .nice = 0, .umin = -1, .umax = -1 },
			       .set = { .policy = SCHED_OTHER, .nice = 5, .umin = -1,
					.umax = -1 } };
	struct evsrc_event ev = bpf_fork(CTLH_PROC_A, CTLH_PROC_A, 0);

	latact_given_note(&d->lat, &a);
	/* K has nice 0: it inherited nothing of rqbalance's. */
	feed(d, &ev);
	assert_int_equal(d->lm.cnt.inherited_back, 0);
	nice_tid = PROC_K;
	nice_val = 5;
	feed(d, &ev);
	assert_int_equal(d->lm.cnt.inherited_back, 1);
	/* Nothing was given a value, nor managed. */
	assert_string_equal(ctlh_plans, "");
	assert_int_equal(d->lm.np, 0);
}

/*
 * A launcher (a record whose value is not handed down): its new process gets no value
 * and gives back what it copied, remembered as given back for what it makes in turn;
 * its new thread gets the value, not handed down either.
 */
KIT_TEST_FX(test_child_of_launcher_gives_its_copy_back, ctlh_lat_setup_managed, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct latmgr_proc *a = (struct latmgr_proc *)latmgr_find_process(&d->lm, CTLH_PROC_A,
									LATMGR_START_NOW);
	struct evsrc_event ev = bpf_fork(CTLH_PROC_A, CTLH_PROC_A, ticks_ns(CTLH_START_TIME));
	struct evsrc_event th = { .kind = EVSRC_FORK, .tid = CTLH_PROC_A + 1,
				  .tgid = CTLH_PROC_A, .parent_tid = 1, .parent_tgid = 1 };

	assert_non_null(a);
	a->no_inherit = true;
	nice_tid = PROC_K;
	nice_val = 5;
	a_holds = true;
	feed(d, &ev);
	assert_string_equal(ctlh_plans, "");
	assert_null(latmgr_find_process(&d->lm, PROC_K, LATMGR_START_NOW));
	assert_non_null(latact_given_find(&d->lat, PROC_K));
	feed(d, &th);
	assert_string_equal(ctlh_plans, "lat tid=4194402 tgid=4194401 start=4242 value=5 "
				   "source=\"ctl uid 1000\" from=4194401 noinherit\n");
}

/* ---- exit ---- */

KIT_TEST_FX(test_exit_forgets_task_and_process, ctlh_lat_setup_managed, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct evsrc_event ev = { .kind = EVSRC_EXIT, .tid = CTLH_PROC_A + 1,
				  .tgid = CTLH_PROC_A };

	/* A thread: its entry goes, its process stays managed. */
	feed(d, &ev);
	assert_null(latmgr_entry(&d->lm, CTLH_PROC_A + 1));
	assert_non_null(latmgr_entry(&d->lm, CTLH_PROC_A));
	assert_non_null(latmgr_find_process(&d->lm, CTLH_PROC_A, LATMGR_START_NOW));
	/* Its first thread: the process goes. */
	ev.tid = CTLH_PROC_A;
	feed(d, &ev);
	assert_null(latmgr_entry(&d->lm, CTLH_PROC_A));
	assert_null(latmgr_find_process(&d->lm, CTLH_PROC_A, LATMGR_START_NOW));
	assert_non_null(latmgr_find_process(&d->lm, CTLH_PROC_B, LATMGR_START_NOW));
	assert_string_equal(ctlh_plans, "");
}

/* An exit read late, of a task older than what has its pid now, forgets nothing. */
KIT_TEST_FX(test_late_exit_forgets_nothing, ctlh_lat_setup_managed, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct evsrc_event ev = { .kind = EVSRC_EXIT, .tid = CTLH_PROC_A, .tgid = CTLH_PROC_A,
				  .start_ns = ticks_ns(CTLH_START_TIME - 1) };

	feed(d, &ev);
	assert_non_null(latmgr_entry(&d->lm, CTLH_PROC_A));
	assert_non_null(latmgr_find_process(&d->lm, CTLH_PROC_A, LATMGR_START_NOW));
	/* The same, with the start time that task has. */
	ev.start_ns = ticks_ns(CTLH_START_TIME);
	feed(d, &ev);
	assert_null(latmgr_entry(&d->lm, CTLH_PROC_A));
	assert_null(latmgr_find_process(&d->lm, CTLH_PROC_A, LATMGR_START_NOW));
}

/* ---- exec ---- */

static void rule_worker(struct ctlh *d)
{
	struct rule *r = &kit_rules(&d->conf.rules, 1)->r[0];

	r->name = "w";
	r->comm = "worker";
	r->latency_nice = 7;
	r->uid = RULE_UID_ANY;
}

KIT_TEST_FX(test_exec_applies_rules, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct evsrc_event ev = { .kind = EVSRC_EXEC, .tid = PROC_X + 1, .tgid = PROC_X, .ts_ns = 1 };
	const struct latmgr_proc *p;

	rule_worker(d);
	/* A thread's exec (it becomes the first thread, its own event says so): nothing. */
	feed(d, &ev);
	assert_string_equal(ctlh_plans, "");
	ev.tid = PROC_X;
	feed(d, &ev);
	/* An exec leaves a process one thread, its first: only that one is planned. */
	assert_string_equal(ctlh_plans,
			    "lat tid=4194480 tgid=4194480 start=4242 value=7 source=\"rule w\" whole\n");
	p = latmgr_find_process(&d->lm, PROC_X, LATMGR_START_NOW);
	assert_non_null(p);
	assert_true(p->from_rule);
	assert_int_equal(p->value, 7);
	assert_int_equal(d->lm.cnt.rule_matches, 1);
	/* The exec a rule matched is timed (its kernel time was given). */
	assert_int_equal(d->lm.nexec_us, 1);
}

/* Stopped: every record forgotten, and an exec applies no rule. */
KIT_TEST_FX(test_stopped_forgets_and_ignores_exec, ctlh_lat_setup_records, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct evsrc_event ev = { .kind = EVSRC_EXEC, .tid = PROC_X, .tgid = PROC_X };

	rule_worker(d);
	assert_int_equal(d->lm.np, 3);
	latmgr_stopped(&d->lm);
	assert_true(d->lm.stopping);
	assert_int_equal(d->lm.np, 0);
	feed(d, &ev);
	assert_string_equal(ctlh_plans, "");
	assert_null(latmgr_find_process(&d->lm, PROC_X, LATMGR_START_NOW));
}

/* ---- losses and the barrier ---- */

KIT_TEST_FX(test_overflow_asks_for_a_rescan, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;

	d->lm.ev = &script;
	latmgr_event_callbacks.overflow(&d->lm);
	assert_int_equal(d->lm.cnt.overflows, 1);
	assert_true(d->lm.resync);
	assert_false(d->lm.drained);
	/* Read to empty since: a rescan now covers every loss. */
	latmgr_dispatch(&d->lm);
	assert_true(d->lm.drained);
	assert_int_equal(d->lm.empty_reads, 1);
}

/* Without an event source nothing is queued: any mark is passed at once. */
KIT_TEST_FX(test_mark_without_source_is_passed, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct latmgr_mark mk;

	d->lm.empty_reads = 3;
	d->lm.cnt.overflows = 2;
	d->lm.resync = true;
	latmgr_mark(&d->lm, 1000, 10, &mk);
	assert_int_equal(mk.ns, 1000);
	assert_int_equal(mk.margin_ns, 10);
	assert_int_equal(mk.empty_reads, 3);
	assert_int_equal(mk.overflows, 2);
	assert_true(mk.lost);
	assert_int_equal(d->lm.empty_reads, 3);
	assert_true(latmgr_passed(&d->lm, &mk));
}

KIT_TEST_FX(test_mark_passed_once_read_empty, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct latmgr_mark mk;

	d->lm.ev = &script;
	backlog = true;
	latmgr_mark(&d->lm, 1000, 10, &mk);
	assert_false(latmgr_passed(&d->lm, &mk));
	backlog = false;
	latmgr_dispatch(&d->lm);
	assert_true(latmgr_passed(&d->lm, &mk));
}

/* A source never read empty: an event stamped the margin after the mark passes it. */
KIT_TEST_FX(test_mark_passed_by_later_event, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct evsrc_event ev = { .kind = EVSRC_EXIT, .tid = PROC_K, .tgid = PROC_K };
	struct latmgr_mark mk;

	d->lm.ev = &script;
	backlog = true;
	ev.ts_ns = 1009;
	queue_event(&ev);
	latmgr_mark(&d->lm, 1000, 10, &mk);
	assert_int_equal(d->lm.cnt.events, 1);
	assert_false(latmgr_passed(&d->lm, &mk));
	ev.ts_ns = 1010;
	queue_event(&ev);
	latmgr_dispatch(&d->lm);
	assert_true(latmgr_passed(&d->lm, &mk));
}

/* Events were lost: only a /proc walk begun after the mark covers them. */
KIT_TEST_FX(test_mark_after_loss_needs_rescan, ctlh_lat_setup, ctlh_teardown)
{
	struct ctlh *d = *state;
	struct latmgr_mark mk;

	d->lm.ev = &script;
	latmgr_event_callbacks.overflow(&d->lm);
	latmgr_mark(&d->lm, util_now_ns(), 10, &mk);
	assert_true(mk.lost);
	assert_false(latmgr_passed(&d->lm, &mk));
	latmgr_rescan(&d->lm);
	assert_true(latmgr_passed(&d->lm, &mk));

	/* A loss after the mark, the same. */
	latmgr_mark(&d->lm, util_now_ns(), 10, &mk);
	assert_false(mk.lost);
	assert_true(latmgr_passed(&d->lm, &mk));
	latmgr_event_callbacks.overflow(&d->lm);
	latmgr_dispatch(&d->lm);
	assert_false(latmgr_passed(&d->lm, &mk));
	latmgr_rescan(&d->lm);
	assert_true(latmgr_passed(&d->lm, &mk));
}

void kit_before(void)
{
	log_set_level(-1);
	ctlh_init("rqb-test-latmgr-events");
	processes();
	ctlh_lat_fresh = fresh;
}
