/*
 * The spread policy on synthetic machines: rules (a) to (e), plan dumps compared
 * with expected text, and a multi-tick run that must converge without ping-pong.
 */
#include <unistd.h>

#include "spread_fx.h"

static const char *const T2 = "package:1 l3cache:2 core:1 pu:1";           /* 2 LLCs x 1 CPU */
static const char *const T64 = "package:2 l3cache:4 core:4 pu:2";          /* 8 LLCs x 8 */
static const char *const T256 = "package:2 [numa(memory=64GB)] l3cache:8(size=32MB) core:8 pu:2";
static const char *const T2x4 = "package:1 l3cache:2 core:4 pu:1";         /* 2 LLCs x 4 */
static const char *const T2x8 = "package:1 l3cache:2 core:8 pu:1";         /* 2 LLCs x 8 */
static const char *const T2x2 = "package:1 l3cache:2 core:2 pu:1";         /* 2 LLCs x 2 */

/*
 * The same snapshot two ticks in a row, at now_ms - 100 and now_ms: an overload of one
 * task counts only when two ticks show it, a larger one at once. Returns both ticks'
 * plans, one after the other.
 */
static const char *decide(struct fx *f, uint64_t now_ms)
{
	static char both[1 << 16];

	snprintf(both, sizeof(both), "%s", tick(f, now_ms - 100));
	snprintf(both + strlen(both), sizeof(both) - strlen(both), "%s", tick(f, now_ms));
	return both;
}

/* (a) Two tasks on CPU0, CPU1 idle: the younger one goes to LLC 1. */
KIT_TEST(spreads_to_idle_llc)
{
	struct fx *f = fx_new(T2);

	add(f, 100, 0);
	add(f, 101, 0);
	assert_string_equal(decide(f, 100),
			    "pin tid=101 tgid=101 comm=\"t101\" llc=0->1 cpus=1 why=overload\n");
	fx_free(f);
}

/*
 * Beside the kernel's cache-aware scheduling (whole_processes), no pin takes a thread
 * away from another runnable thread of its process in its LLC: the kernel keeps them
 * together there. A task alone of its process still moves, and threads of one process
 * already apart may.
 */
KIT_TEST(whole_processes_keeps_threads_together)
{
	struct fx *f = fx_new(T2);

	add(f, 100, 0)->tgid = 100;
	add(f, 101, 0)->tgid = 100;
	assert_string_equal(decide(f, 100),
			    "pin tid=101 tgid=100 comm=\"t101\" llc=0->1 cpus=1 why=overload\n");
	fx_free(f);

	f = fx_new(T2);
	f->whole = true;
	add(f, 100, 0)->tgid = 100;
	add(f, 101, 0)->tgid = 100;
	assert_string_equal(decide(f, 100), "");
	fx_free(f);

	f = fx_new(T2);
	f->whole = true;
	add(f, 100, 0)->tgid = 100;
	add(f, 101, 0)->tgid = 100;
	add(f, 99, 0);
	assert_string_equal(decide(f, 100),
			    "pin tid=99 tgid=99 comm=\"t99\" llc=0->1 cpus=1 why=overload\n");
	fx_free(f);
}

/* (a) Idle means no runnable task, whatever the utilization says. */
KIT_TEST(counts_tasks_not_utilization)
{
	struct fx *f = fx_new(T2);

	add(f, 100, 0);
	add(f, 101, 0);
	f->s->cpus[0].busy_pct = 40; /* two light tasks */
	f->s->cpus[1].busy_pct = 95; /* irq time, but nothing runnable */
	assert_string_equal(decide(f, 100),
			    "pin tid=101 tgid=101 comm=\"t101\" llc=0->1 cpus=1 why=overload\n");
	fx_free(f);
}

/* (a) With no idle CPU anywhere, nothing moves: the kernel balances busy CPUs. */
KIT_TEST(no_idle_cpu_no_move)
{
	struct fx *f = fx_new(T2);

	add(f, 100, 0);
	add(f, 101, 0);
	add(f, 102, 0);
	add(f, 103, 1);
	assert_string_equal(decide(f, 100), "");
	fx_free(f);
}

/* (b) A lone task is never pulled, however busy its CPU and idle the rest. */
KIT_TEST(lone_task_never_pulled)
{
	struct fx *f = fx_new(T2);

	add(f, 100, 0);
	f->s->cpus[0].busy_pct = 100;
	for (int t = 0; t < 20; t++)
		assert_string_equal(tick(f, (uint64_t)t * 100), "");
	fx_free(f);
}

/*
 * (b) On 64 CPUs: LLC 0 holds 9 tasks on 8 CPUs (CPU 3 has two). The move must come
 * from CPU 3; when both tasks there are ineligible, nothing moves, even though seven
 * single-task CPUs of the overloaded LLC have eligible tasks.
 */
KIT_TEST(takes_only_from_shared_cpu)
{
	struct fx *f = fx_new(T64);

	for (int c = 0; c < 8; c++)
		add(f, 200 + c, c);
	add(f, 150, 3);
	assert_string_equal(decide(f, 100),
			    "pin tid=203 tgid=203 comm=\"t203\" llc=0->1 cpus=8-15 why=overload\n");
	fx_free(f);

	f = fx_new(T64);
	for (int c = 0; c < 8; c++)
		add(f, 200 + c, c);
	add(f, 150, 3)->flags |= SNAP_TASK_KTHREAD;
	f->s->tasks[3].flags |= SNAP_TASK_KTHREAD; /* tid 203 */
	assert_string_equal(decide(f, 100), "");
	fx_free(f);
}

/* (c) 5 tasks on 4 CPUs against 3 on 4: 1.25 > 1.00 * 1.17, so move; at 130 % stay. */
KIT_TEST(moves_only_when_clearly_less_loaded)
{
	for (int pct = 117; pct <= 130; pct += 13) {
		struct fx *f = fx_new(T2x4);

		f->c.imbalance_pct = (uint32_t)pct;
		add(f, 10, 0);
		add(f, 11, 0);
		add(f, 12, 1);
		add(f, 13, 2);
		add(f, 14, 3);
		add(f, 20, 4);
		add(f, 21, 5);
		add(f, 22, 6);
		assert_string_equal(decide(f, 100),
				    pct == 117 ? "pin tid=11 tgid=11 comm=\"t11\" llc=0->1 cpus=4-7 "
						 "why=overload\n"
					       : "");
		fx_free(f);
	}
}

/* (c) 9 on 8 CPUs against 7 on 8: 1.125 is not clearly more than 1.0: keep it local. */
KIT_TEST(keeps_local_when_close)
{
	struct fx *f = fx_new(T2x8);

	for (int c = 0; c < 8; c++)
		add(f, 10 + c, c);
	add(f, 30, 0);
	for (int c = 8; c < 15; c++)
		add(f, 40 + c, c);
	assert_string_equal(decide(f, 100), "");
	fx_free(f);
}

/* (d) An overload seen in one sample only (a short task caught running) moves nothing. */
KIT_TEST(one_sample_overload_moves_nothing)
{
	struct fx *f = fx_new(T2);

	add(f, 100, 0);
	for (uint64_t t = 0; t < 1000; t += 200) {
		snap_reset(f->s);
		add(f, 100, 0);
		assert_string_equal(tick(f, t), "");
		add(f, 999, 0); /* here for this one tick */
		assert_string_equal(tick(f, t + 100), "");
	}
	fx_free(f);
}

/*
 * (d) A pin holds for min_residency, and is released once its LLC of origin could take
 * back every task pinned away from it, and could for min_residency without a break.
 */
KIT_TEST(residency_and_release)
{
	struct fx *f = fx_new(T2);

	add(f, 100, 0);
	add(f, 101, 0);
	assert_string_equal(decide(f, 100),
			    "pin tid=101 tgid=101 comm=\"t101\" llc=0->1 cpus=1 why=overload\n");
	/* The sample is stale: 101 still shows on CPU 0. It counts on LLC 1: no more moves. */
	assert_string_equal(tick(f, 200), "");
	/* 100 exits: LLC 0 has room from 700 on (600 still remembers 100)... */
	snap_reset(f->s);
	add(f, 101, 1);
	for (uint64_t t = 600; t <= 1100; t += 100)
		assert_string_equal(tick(f, t), "");
	/* ...but a task there for one tick breaks it: the room starts again at 1400. */
	add(f, 102, 0);
	assert_string_equal(tick(f, 1200), "");
	snap_reset(f->s);
	add(f, 101, 1);
	for (uint64_t t = 1300; t < 2400; t += 100)
		assert_string_equal(tick(f, t), "");
	assert_string_equal(tick(f, 2400),
			    "unpin tid=101 tgid=101 comm=\"t101\" llc=1->any cpus=0-1 "
			    "why=balanced\n");
	assert_null(spread_find_pin(&f->st, 101, 1101));
	fx_free(f);
}

/*
 * Tick t (at t * 100 ms) after silent_cpu_ticks()'s pins: hogs 11 and 13 on LLC 0 with
 * the shell beside 11, hog 12 listed on CPU 2, hog 14 listed nowhere; cpu2 and cpu3 end
 * those CPUs' lines (a sampled= or nothing).
 */
static const char *after_pins_tick(struct fx *f, int t, const char *cpu2, const char *cpu3)
{
	char text[1024];

	snprintf(text, sizeof(text),
		 "snapshot %d %d00000000 1\n"
		 "cpu 0 2 100\ncpu 1 1 100\ncpu 2 1 100%s\ncpu 3 0 0%s\n"
		 "task 11 11 0 500 0 0-3 sh /\ntask 13 13 1 502 0 0-3 sh /\n"
		 "task 12 12 2 501 0 2-3 sh /\n"
		 "end\n",
		 t, 9 + t, cpu2, cpu3);
	return replay_tick(f, text);
}

/* Four hogs on LLC 0 of two LLCs of two CPUs: two are pinned to LLC 1 (at 1 s). */
static void pin_two_hogs(struct fx *f)
{
	assert_string_equal(replay_tick(f, "snapshot 1 1000000000 1\n"
					   "cpu 0 2 100\ncpu 1 2 100\ncpu 2 0 0\ncpu 3 0 0\n"
					   "task 11 11 0 500 0 0-3 sh /\ntask 12 12 0 501 0 0-3 sh /\n"
					   "task 13 13 1 502 0 0-3 sh /\ntask 14 14 1 503 0 0-3 sh /\n"
					   "end\n"),
			    "pin tid=12 tgid=12 comm=\"sh\" llc=0->1 cpus=2-3 why=overload\n"
			    "pin tid=14 tgid=14 comm=\"sh\" llc=0->1 cpus=2-3 why=overload\n");
}

/*
 * The qemu tier's t_spread under a doubled host load, replayed: four hogs on LLC 0 of
 * two LLCs of two CPUs; two are pinned to LLC 1. Then the vCPU of CPU 3, where one of
 * them went, is not run by the host: its counts are the last ones taken, before the pin,
 * and list nobody, while the pinned hog is listed nowhere. LLC 0 holds its two hogs and
 * the test's shell, busy in both ticks. Counted on neither LLC, the hog left CPU 3 looking
 * idle, and a third hog was pinned there; it counts on CPU 3, and nothing moves.
 * silent is the sampled= of CPU 3 in ticks 2 and 3 (empty: counts taken then).
 */
static const char *silent_cpu_ticks(struct fx *f, const char *silent)
{
	static char plans[4096];

	pin_two_hogs(f);
	plans[0] = '\0';
	for (int t = 2; t <= 3; t++)
		strcat(plans, after_pins_tick(f, t, "", silent));
	return plans;
}

KIT_TEST(silent_cpu_keeps_its_pin)
{
	struct fx *f = fx_new(T2x2);

	assert_string_equal(silent_cpu_ticks(f, " sampled=950000000"), "");
	fx_free(f);
}

/*
 * Both hogs pinned to LLC 1 land on CPU 2 (the kernel's choice, its balancing off), and
 * CPU 2's vCPU is not run after its sample between their arrivals: that record, newer
 * than the pins, lists one of them, tick after tick, while CPU 3 idles. Once it is
 * older than the last tick it vouches for nothing: the other hog counts there, and LLC 1
 * is not clearly less loaded than LLC 0 with its two hogs and the shell.
 */
KIT_TEST(held_record_hides_a_stacked_hog)
{
	struct fx *f = fx_new(T2x2);

	silent_cpu_ticks(f, " sampled=950000000");
	for (int t = 4; t <= 6; t++)
		assert_string_equal(after_pins_tick(f, t, " sampled=1250000000", ""), "");
	fx_free(f);
}

/* The control: CPU 3's counts are fresh, so the hog pinned there sleeps. LLC 1 has an
 * idle CPU in both ticks, LLC 0 one task too many: a third hog goes. */
KIT_TEST(pinned_sleeper_is_no_load)
{
	struct fx *f = fx_new(T2x2);

	assert_string_equal(silent_cpu_ticks(f, ""),
			    "pin tid=11 tgid=11 comm=\"sh\" llc=0->1 cpus=2-3 why=overload\n");
	fx_free(f);
}

/*
 * Ticks 2 to 4 after pin_two_hogs, each the snapshot whose cpu and task lines are body:
 * none may plan anything.
 */
static void nothing_moves_after_pins(struct fx *f, const char *body)
{
	char text[1024];

	for (int t = 2; t <= 4; t++) {
		snprintf(text, sizeof(text), "snapshot %d %d00000000 1\n%send\n", t, 9 + t, body);
		assert_string_equal(replay_tick(f, text), "");
	}
}

/*
 * The qemu tier's t_spread in a quiet run, replayed: the two hogs pinned to LLC 1 both
 * run on CPU 2, listed there, while CPU 0's last counts (2, taken before the pins, the
 * vCPU not run since) still count the hog that left it, and list only the one that
 * stayed; the test's shell runs beside the other hog, unlisted. Counted twice, the hog
 * that left made LLC 0 look overloaded by two, and a third hog, alone on its CPU, was
 * pinned away. Counts that predate a pin hold no task the pin moved off that CPU: LLC
 * 0 has three tasks, LLC 1 two on one CPU, and nothing moves.
 */
KIT_TEST(left_behind_count_is_no_load)
{
	struct fx *f = fx_new(T2x2);

	pin_two_hogs(f);
	nothing_moves_after_pins(f,
				 "cpu 0 2 100 sampled=950000000\ncpu 1 2 100\ncpu 2 2 100\ncpu 3 0 0\n"
				 "task 11 11 0 500 0 0-3 sh /\ntask 13 13 1 502 0 0-3 sh /\n"
				 "task 12 12 2 501 0 2-3 sh /\ntask 14 14 2 503 0 2-3 sh /\n");
	fx_free(f);
}

/*
 * The qemu tier's t_spread, recorded: after the two pins LLC 0 holds two hogs and the
 * test's busy shell, and in two ticks running the RCU kernel thread was caught runnable
 * beside them, having used no CPU since the last sample. Counted as the source's load,
 * it made LLC 0 four tasks on two CPUs against LLC 1's two hogs (stacked on CPU 2, CPU
 * 3 idle), and a third hog was pinned away. A kernel thread's instant is no reason to
 * move: LLC 0's three are not clearly more than LLC 1 would hold after.
 */
KIT_TEST(kernel_instant_moves_nothing)
{
	struct fx *f = fx_new(T2x2);

	pin_two_hogs(f);
	nothing_moves_after_pins(f,
				 "cpu 0 3 100\ncpu 1 1 100\ncpu 2 2 100\ncpu 3 0 0\n"
				 "task 11 11 0 500 0 0-3 sh /\ntask 15 15 0 5 3 0-3 rcu_preempt /\n"
				 "task 20 20 0 400 0 0-3 ash /\ntask 13 13 1 502 0 0-3 sh /\n"
				 "task 12 12 2 501 0 2-3 sh /\ntask 14 14 2 503 0 2-3 sh /\n");
	fx_free(f);
}

/*
 * The same with a kernel thread that did use CPU since the last sample (the RCU thread,
 * flagged a kernel thread only): after two hogs were pinned to LLC 1, LLC 0's two hogs,
 * the test's busy shell and that thread made an overload of two, acted on at once, and
 * a third hog went to LLC 1 (the qemu tier's t_spread beside a host hog, run 8 of
 * 2026-12-02). A kernel thread is the kernel's to place and does not stay: no reason
 * to move a task, in a tick alone or in two.
 */
KIT_TEST(kernel_thread_moves_nothing)
{
	struct fx *f = fx_new(T2x2);

	/* As in the guest: its test shell, "ash", is excluded, its hogs ("sh") are not. */
	f->c.exclude_comms.n = 1;
	snprintf(f->c.exclude_comms.v[0], sizeof(f->c.exclude_comms.v[0]), "ash");
	pin_two_hogs(f);
	nothing_moves_after_pins(f,
				 "cpu 0 2 100\ncpu 1 2 100\ncpu 2 2 100\ncpu 3 0 0\n"
				 "task 15 15 0 5 1 0-3 rcu_preempt /\ntask 20 20 0 400 0 0-3 ash /\n"
				 "task 11 11 1 500 0 0-3 sh /\ntask 13 13 1 502 0 0-3 sh /\n"
				 "task 12 12 2 501 0 2-3 sh /\ntask 14 14 2 503 0 2-3 sh /\n");
	fx_free(f);
}

/* (d) Hysteresis: while LLC 0 stays full, the pin holds until max_pin_ms. */
KIT_TEST(pin_released_at_max_age)
{
	struct fx *f = fx_new(T2);

	add(f, 100, 0);
	add(f, 101, 0);
	decide(f, 100);
	snap_reset(f->s);
	add(f, 100, 0);
	add(f, 101, 1);
	for (uint64_t t = 200; t < 10100; t += 100)
		assert_string_equal(tick(f, t), "");
	assert_string_equal(tick(f, 10100),
			    "unpin tid=101 tgid=101 comm=\"t101\" llc=1->any cpus=0-1 "
			    "why=max_pin\n");
	fx_free(f);
}

/*
 * LLCs of fewer than min_llc_cores cores are nothing to spread across: T2's, of one
 * core each, get no pin by default, and a pin made across them is released as soon as
 * a reload raises min_llc_cores.
 */
KIT_TEST(single_core_llcs_not_spread)
{
	struct fx *f = fx_new(T2);

	f->c.min_llc_cores = 2;
	add(f, 100, 0);
	add(f, 101, 0);
	assert_string_equal(decide(f, 100), "");
	f->c.min_llc_cores = 1;
	assert_string_equal(tick(f, 200),
			    "pin tid=101 tgid=101 comm=\"t101\" llc=0->1 cpus=1 why=overload\n");
	f->c.min_llc_cores = 2;
	assert_string_equal(tick(f, 300),
			    "unpin tid=101 tgid=101 comm=\"t101\" llc=1->any cpus=0-1 "
			    "why=small_llc\n");
	fx_free(f);

	/* Two LLCs of four cores: spread at the default. */
	f = fx_new(T2x4);
	f->c.min_llc_cores = 2;
	for (int i = 0; i < 4; i++)
		add(f, 100 + i, i);
	add(f, 200, 0);
	assert_int_equal(count_ops(decide(f, 100), "pin "), 1);
	fx_free(f);
}

/* (d) A cap on moves per tick, and a task moved is not moved again within residency. */
KIT_TEST(moves_capped_per_tick)
{
	struct fx *f = fx_new(T64);
	const char *dump;
	int lines = 0;

	for (int i = 0; i < 32; i++)
		add(f, 300 + i, i % 8); /* 32 tasks on LLC 0's 8 CPUs: acted on at once */
	f->c.max_moves_per_tick = 3;
	dump = tick(f, 100);
	for (const char *p = dump; *p; p++)
		lines += *p == '\n';
	assert_int_equal(lines, 3);
	assert_int_equal(f->st.npins, 3);
	fx_free(f);
}

/* (e) Each kind of task rqbalance must never touch. */
KIT_TEST(never_touches_ineligible)
{
	struct fx *f = fx_new(T2);
	struct snap_task *t;

	f->c.exclude_comms.n = 1;
	strcpy(f->c.exclude_comms.v[0], "db*");
	f->c.exclude_cgroups.n = 1;
	strcpy(f->c.exclude_cgroups.v[0], "/system.slice/audio.service");
	add(f, 100, 0); /* the lone eligible one stays: it would have to leave a CPU alone */
	t = add(f, 101, 0);
	t->flags |= SNAP_TASK_KTHREAD;
	assert_string_equal(spread_ineligible(f->s, sconf(f), t), "kernel thread");
	t = add(f, 102, 0);
	t->tgid = 1;
	assert_string_equal(spread_ineligible(f->s, sconf(f), t), "rqbalanced itself");
	t = add(f, 103, 0);
	CPU_CLR(1, &t->allowed);
	assert_string_equal(spread_ineligible(f->s, sconf(f), t), "affinity narrowed");
	t = add(f, 104, 0);
	strcpy(t->comm, "dbwriter");
	assert_string_equal(spread_ineligible(f->s, sconf(f), t), "excluded comm");
	t = add(f, 105, 0);
	free(t->cgroup);
	t->cgroup = strdup("/system.slice/audio.service/worker");
	assert_string_equal(spread_ineligible(f->s, sconf(f), t), "excluded cgroup");
	free(t->cgroup);
	t->cgroup = strdup("/system.slice/audio.service2");
	assert_null(spread_ineligible(f->s, sconf(f), t));
	t->cgroup[strlen(t->cgroup) - 1] = '\0';
	/* Only 100 is eligible and movable: it is pinned, nothing else. */
	assert_string_equal(decide(f, 100),
			    "pin tid=100 tgid=100 comm=\"t100\" llc=0->1 cpus=1 why=overload\n");
	fx_free(f);
}

/*
 * (e) A task that used no CPU since the last sample (a short command caught running)
 * counts as load but is not moved: the hog beside it on the same CPU goes instead.
 */
KIT_TEST(moves_no_task_that_used_no_cpu)
{
	struct fx *f = fx_new(T2);

	add(f, 100, 0);
	add(f, 200, 0)->flags |= SNAP_TASK_NO_CPU;
	assert_string_equal(decide(f, 100),
			    "pin tid=100 tgid=100 comm=\"t100\" llc=0->1 cpus=1 why=overload\n");
	fx_free(f);
}

/*
 * (d) A task that started less than min_residency_ms (1 s) ago was placed by the kernel
 * at fork or exec: it never moves, and as a source it is no load that makes another
 * task move; on a target it counts. Once old enough it moves like any other. Start
 * times are clock ticks (100 a second); the young ones started at tick 5000.
 */
KIT_TEST(young_tasks_are_the_kernels)
{
	struct fx *f = fx_new(T2);

	/* A settled task beside a young one: no settled overload, nothing moves. */
	add(f, 100, 0);
	add(f, 300, 0)->start_time = 5000;
	f->s->tick_hz = 100;
	f->s->uptime_ticks = 5050;
	assert_string_equal(decide(f, 100), "");
	fx_free(f);

	/* Two settled tasks and two young ones on CPU 0: an overload of one settled task. */
	f = fx_new(T2);
	add(f, 100, 0);
	add(f, 101, 0);
	add(f, 300, 0)->start_time = 5000;
	add(f, 301, 0)->start_time = 5000;
	f->s->tick_hz = 100;
	f->s->uptime_ticks = 5050;
	assert_string_equal(tick(f, 100), "");
	assert_string_equal(tick(f, 200),
			    "pin tid=101 tgid=101 comm=\"t101\" llc=0->1 cpus=1 why=overload\n");
	fx_free(f);

	/* Young tasks alone: nothing moves until they are a second old, then they do. */
	f = fx_new(T2);
	add(f, 300, 0)->start_time = 5000;
	add(f, 301, 0)->start_time = 5000;
	add(f, 302, 0)->start_time = 5000;
	f->s->tick_hz = 100;
	f->s->uptime_ticks = 5050;
	assert_string_equal(decide(f, 100), "");
	f->s->uptime_ticks = 5100;
	assert_string_equal(tick(f, 200),
			    "pin tid=302 tgid=302 comm=\"t302\" llc=0->1 cpus=1 why=overload\n");
	fx_free(f);

	/* On a target they count: CPU 1's young task makes LLC 1 no idle place. */
	f = fx_new(T2);
	add(f, 100, 0);
	add(f, 101, 0);
	add(f, 102, 0);
	add(f, 300, 1)->start_time = 5000;
	f->s->tick_hz = 100;
	f->s->uptime_ticks = 5050;
	assert_string_equal(decide(f, 100), "");
	fx_free(f);
}

/*
 * 256 CPUs: 40 tasks on LLC 3 (CPUs 48-55 run three each). Each pick takes the youngest
 * task of the busiest CPU; targets are idle LLCs of the same NUMA node (0-7) first.
 */
KIT_TEST(big_machine_prefers_near_llcs)
{
	struct fx *f = fx_new(T256);

	for (int i = 0; i < 40; i++)
		add(f, 500 + i, 48 + i % 16); /* LLC 3: CPUs 48-63, NUMA node 0 */
	f->c.max_moves_per_tick = 4;
	/* 24 over its CPUs: acted on at the first tick. */
	assert_string_equal(tick(f, 100),
			    "pin tid=532 tgid=532 comm=\"t532\" llc=3->0 cpus=0-15 why=overload\n"
			    "pin tid=533 tgid=533 comm=\"t533\" llc=3->1 cpus=16-31 why=overload\n"
			    "pin tid=534 tgid=534 comm=\"t534\" llc=3->2 cpus=32-47 why=overload\n"
			    "pin tid=535 tgid=535 comm=\"t535\" llc=3->4 cpus=64-79 why=overload\n");
	fx_free(f);
}

/*
 * Many ticks under a toy kernel: a pinned task runs on the least-loaded CPU of its mask;
 * an unpinned one stays put. Tasks start piled on one LLC. The run must converge, and
 * no task may be moved twice within min_residency or pinned back to an LLC it left.
 */
struct sim_task {
	pid_t tid;
	int cpu;
	int left_llc; /* LLC its last pin took it from, -1 */
};

static int least_loaded(const struct fx *f, const int *load, const cpu_set_t *mask)
{
	int best = -1;

	for (int c = 0; c < f->topo->nr_cpu_ids; c++)
		if (CPU_ISSET(c, mask) && (best < 0 || load[c] < load[best]))
			best = c;
	return best;
}

static void sim_apply(struct fx *f, struct sim_task *tasks, int n, int *load, uint64_t now,
		      uint64_t *last_move)
{
	for (size_t i = 0; i < f->plan.n; i++) {
		const struct plan_action *a = &f->plan.a[i];
		int k = a->tid - 1000;

		assert_true(k >= 0 && k < n);
		if (last_move[k] != UINT64_MAX)
			assert_true(now - last_move[k] >= f->c.min_residency_ms);
		last_move[k] = now;
		if (a->op == PLAN_UNPIN)
			continue;
		assert_int_not_equal(a->to_llc, tasks[k].left_llc); /* no ping-pong */
		tasks[k].left_llc = a->from_llc;
		load[tasks[k].cpu]--;
		tasks[k].cpu = least_loaded(f, load, &a->mask);
		load[tasks[k].cpu]++;
	}
}

static bool spread_done(const struct fx *f, const int *load)
{
	bool over = false, idle = false;

	for (int l = 0; l < f->topo->nllcs; l++) {
		int nr = 0;

		for (int c = 0; c < f->topo->nr_cpu_ids; c++)
			if (f->topo->cpus[c].present && f->topo->cpus[c].llc == l)
				nr += load[c];
		over |= nr > f->topo->llcs[l].ncpus;
		idle |= nr < f->topo->llcs[l].ncpus;
	}
	return !(over && idle);
}

KIT_TEST(converges_without_ping_pong)
{
	struct fx *f = fx_new(T64);
	enum { N = 48 };
	struct sim_task tasks[N];
	uint64_t last_move[N];
	int load[64] = { 0 }, converged_at = -1;

	for (int i = 0; i < N; i++) {
		tasks[i] = (struct sim_task){ 1000 + i, i % 8, -1 }; /* all on LLC 0 */
		last_move[i] = UINT64_MAX;
		load[i % 8]++;
	}
	for (int t = 0; t < 300; t++) {
		uint64_t now = (uint64_t)t * 100;

		snap_reset(f->s);
		for (int i = 0; i < N; i++)
			add(f, tasks[i].tid, tasks[i].cpu);
		tick(f, now);
		sim_apply(f, tasks, N, load, now, last_move);
		if (converged_at < 0 && spread_done(f, load))
			converged_at = t;
	}
	/* 40 tasks must leave LLC 0 at 4 a tick. */
	assert_true(converged_at >= 0 && converged_at <= 10);
	fx_free(f);
}

/*
 * keep_pairs: two tasks that wake each other leave their LLC together, for an LLC with
 * two idle CPUs, or not at all. LLC 0 (4 CPUs) runs 6 tasks: the pair 10/11 on CPUs 0
 * and 1 beside two tasks narrowed to those CPUs, and one task on each other CPU.
 */
static struct fx *pair_fixture(int llc1_tasks, bool keep)
{
	struct fx *f = fx_new(T2x4);

	f->c.keep_pairs = keep;
	add(f, 10, 0)->partner = 11;
	add(f, 11, 1)->partner = 10;
	narrowed(add(f, 12, 0));
	narrowed(add(f, 13, 1));
	add(f, 14, 2);
	add(f, 15, 3);
	for (int i = 0; i < llc1_tasks; i++)
		add(f, 40 + i, 4 + i);
	return f;
}

KIT_TEST(keep_pairs_moves_pairs_together)
{
	struct fx *f = pair_fixture(0, true);

	assert_string_equal(tick(f, 100),
			    "pin tid=10 tgid=10 comm=\"t10\" llc=0->1 cpus=4-7 why=overload\n"
			    "pin tid=11 tgid=11 comm=\"t11\" llc=0->1 cpus=4-7 why=overload\n");
	fx_free(f);
	/* One idle CPU on LLC 1: without the option one half goes, with it neither. */
	f = pair_fixture(3, false);
	assert_string_equal(tick(f, 100),
			    "pin tid=10 tgid=10 comm=\"t10\" llc=0->1 cpus=4-7 why=overload\n");
	fx_free(f);
	f = pair_fixture(3, true);
	assert_string_equal(decide(f, 200), "");
	fx_free(f);
}

/*
 * keep_pairs with a partner that is asleep (the bpf sampler says where it last ran):
 * LLC 0 runs two tasks on CPU 0 and one on each other CPU; 10's partner 90 sleeps.
 * Asleep in LLC 0, 90 keeps 10 there (9 goes instead); asleep in LLC 1, it draws 10
 * there (10 is the younger, the one picked first); without
 * the option, or with no CPU known for it, 10 goes as any task would.
 */
static struct fx *sleeping_partner_fixture(bool keep, int partner_cpu)
{
	struct fx *f = fx_new(T2x4);
	struct snap_task *t;

	f->c.keep_pairs = keep;
	add(f, 9, 0);
	t = add(f, 10, 0);
	t->partner = 90;
	t->partner_placed = partner_cpu >= 0;
	t->partner_cpu = partner_cpu;
	add(f, 11, 1);
	add(f, 12, 2);
	add(f, 13, 3);
	return f;
}

KIT_TEST(keep_pairs_sleeping_partner)
{
	static const char *const moved =
		"pin tid=10 tgid=10 comm=\"t10\" llc=0->1 cpus=4-7 why=overload\n";
	struct fx *f = sleeping_partner_fixture(true, 2);

	/* The other task on CPU 0 goes instead. */
	assert_string_equal(decide(f, 100),
			    "pin tid=9 tgid=9 comm=\"t9\" llc=0->1 cpus=4-7 why=overload\n");
	fx_free(f);
	f = sleeping_partner_fixture(true, 5);
	assert_string_equal(decide(f, 100), moved);
	fx_free(f);
	f = sleeping_partner_fixture(false, 2);
	assert_string_equal(decide(f, 100), moved);
	fx_free(f);
	f = sleeping_partner_fixture(true, -1);
	assert_string_equal(decide(f, 100), moved);
	fx_free(f);
}

/*
 * Rules (a) to (e) on each of the three machines the issue names: 2 LLCs x 1 CPU,
 * 2 sockets x 4 LLCs x 4 cores x 2 SMT, and 256 CPUs in 16 LLCs. The scenarios are
 * built from the topology, so one test body serves all three.
 */
static const char *const RULE_TOPOS[] = { T2, T64, T256 };

/* The CPUs of LLC l, in order, into cpus[]; returns how many. */
static int llc_cpus(const struct topo *t, int l, int *cpus)
{
	int n = 0;

	for (int c = 0; c < t->nr_cpu_ids; c++)
		if (t->cpus[c].present && t->cpus[c].llc == l)
			cpus[n++] = c;
	return n;
}

KIT_TEST(rules_on_each_machine)
{
	int cpus[RQB_MAX_CPUS];

	for (size_t k = 0; k < ARRAY_SIZE(RULE_TOPOS); k++) {
		struct fx *f = fx_new(RULE_TOPOS[k]);
		int cap = llc_cpus(f->topo, 0, cpus);
		char expect[256];
		const char *dump;

		/* (a), (b), (c): LLC 0's CPUs run one task each, its first CPU one more; every
		 * other LLC runs one task fewer than it has CPUs. The extra task (the youngest
		 * on the shared CPU) may go to LLC 1's idle CPU only if that is clearly less
		 * loaded: (cap + 1) / cap against cap / cap after the move. */
		for (int i = 0; i < cap; i++)
			add(f, 100 + i, cpus[i]);
		add(f, 900, cpus[0]);
		for (int l = 1, tid = 10000; l < f->topo->nllcs; l++) {
			int n = llc_cpus(f->topo, l, cpus + cap);

			for (int i = 0; i < n - 1; i++)
				add(f, tid++, cpus[cap + i]);
		}
		dump = decide(f, 100);
		if ((cap + 1) * 100 > cap * 117) {
			char list[CPUMASK_STRLEN];

			cpumask_format(&f->topo->llcs[1].cpus, list, sizeof(list));
			snprintf(expect, sizeof(expect),
				 "pin tid=900 tgid=900 comm=\"t900\" llc=0->1 cpus=%s why=overload\n",
				 list);
			assert_string_equal(dump, expect);
		} else {
			/* (c) 1.125 (8 CPUs) or 1.0625 (16) is not 17 % more than 1.0: stay. */
			assert_string_equal(dump, "");
		}
		fx_free(f);

		/* (a), (b), (d), (e): twice as many tasks as CPUs on LLC 0, two per CPU, one
		 * of each pair ineligible (narrowed to its CPU). Only eligible tasks move,
		 * never the last task of a CPU (so exactly cap of them), and none twice
		 * within residency. */
		f = fx_new(RULE_TOPOS[k]);
		cap = llc_cpus(f->topo, 0, cpus);
		for (int i = 0; i < cap; i++) {
			add(f, 1000 + i, cpus[i]);
			narrowed(add(f, 2000 + i, cpus[i]));
		}
		dump = decide(f, 100);
		assert_int_equal(count_ops(dump, "pin "), cap);
		assert_null(strstr(dump, "tid=2"));
		for (uint64_t t = 200; t < 1000; t += 100) {
			dump = tick(f, t);
			assert_null(strstr(dump, "tid=2"));
			for (size_t i = 0; i < f->st.npins; i++) {
				char tid[32];

				snprintf(tid, sizeof(tid), "tid=%d ", (int)f->st.pins[i].tid);
				if (f->st.pins[i].since_ns < t * MS)
					assert_null(strstr(dump, tid));
			}
		}
		fx_free(f);
	}
}
