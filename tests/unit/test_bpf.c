/*
 * Unit tests for the bpf sampler, on the real kernel: a thread of this test, busy and
 * pinned to a CPU, is listed there with its identity, and counts as busy from its
 * second tick. Each test skips (with the reason printed) where BPF cannot load, and
 * fails where it should (root, or CAP_BPF and CAP_PERFMON, with kernel BTF) and does not.
 *
 * Between two ticks the test waits for the spinning thread to have used CPU time, not
 * for a time: on a crowded machine it may get less than the sampler's busy threshold
 * in any 100 ms.
 */
#include <errno.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"

#include "util/caps.h"
#include "rqbalance.h"
#include "sample/sampler.h"
#include "util/util.h"
#include "testonly.h"

#define TICK_NS (100 * NSEC_PER_MSEC)
/*
 * CPU time the spinner uses between two ticks: the sampler's busy threshold (a clock
 * tick, 10 ms, or less) + the age a CPU's sample may have before it counts as stale
 * (2 perf periods of at most 10 ms, + 1 ms) + the scheduler tick by which a running
 * task's sum_exec_runtime may lag: with that much, the next tick's sample shows the
 * threshold's worth of growth.
 */
#define SPIN_CPU_NS (45 * NSEC_PER_MSEC)
/* Only so that a thread that never runs cannot hang the test. */
#define SPIN_WAIT_NS (60 * NSEC_PER_SEC)

struct fix {
	struct topo *topo;
	struct snapshot *snap;
	struct sampler *sm;
	pthread_t spin;
	atomic_int stop;
	atomic_int tid;
	int cpu;
	clockid_t spin_clock;     /* the spinning thread's CPU-time clock */
	uint64_t spin_cpu_ns;     /* its CPU time at the last tick */
};

static void *spin(void *arg)
{
	struct fix *f = arg;

	atomic_store(&f->tid, (int)syscall(SYS_gettid));
	while (!atomic_load(&f->stop))
		;
	return NULL;
}

/* Whether the sampler has what it needs here: CAP_BPF and CAP_PERFMON, and kernel BTF. */
static bool bpf_must_load(void)
{
	uint64_t eff, perm;

	if (caps_get(&eff, &perm) < 0 || access("/sys/kernel/btf/vmlinux", R_OK) < 0)
		return false;
	return (eff & CAPS_BIT(CAP_SYS_ADMIN)) ||
	       ((eff & CAPS_BIT(CAP_BPF)) && (eff & CAPS_BIT(CAP_PERFMON)));
}

static int setup_with(void **state, bool tracepoints)
{
	struct topo_opts to = { .filter_online = true, .root = "" };
	struct fix *f = calloc(1, sizeof(*f));
	char why[256] = "";
	struct bpf_sampler_opts o = {
		/* Not this process: its spinning thread is what the tests look for. */
		.self_tgid = getppid(),
		.interval_ns = TICK_NS,
		.walk_gap_ns = NSEC_PER_SEC,
		.forget_ns = 10 * NSEC_PER_SEC,
		.root = "",
		.tracepoints = tracepoints,
		.why = why,
		.why_len = sizeof(why),
	};

	assert_non_null(f);
	assert_int_equal(topo_load(&to, &f->topo), 0);
	f->snap = snap_new(f->topo);
	assert_non_null(f->snap);
	if (bpf_sampler_new(&o, &f->sm) < 0) {
		/*
		 * Where it must load it fails the test: a skip there would hide a program
		 * that a change made the verifier refuse.
		 */
		if (bpf_must_load())
			fail_msg("the bpf sampler does not load, with the capabilities and the "
				 "kernel BTF it needs: %s", why);
		fprintf(stderr, "bpf sampler cannot load here: %s\n", why);
	}
	*state = f;
	return 0;
}

static int setup(void **state)
{
	return setup_with(state, false);
}

/* Sampled at the scheduler's tracepoints, as where perf events are refused. */
static int setup_tp(void **state)
{
	return setup_with(state, true);
}

static int teardown(void **state)
{
	struct fix *f = *state;

	sampler_free(f->sm);
	snap_free(f->snap);
	topo_free(f->topo);
	free(f);
	return 0;
}

/* Starts the spinning thread on the highest online CPU. */
static void start_spin(struct fix *f)
{
	pthread_attr_t a;
	cpu_set_t set;

	f->cpu = -1;
	for (int c = 0; c < f->topo->nr_cpu_ids; c++)
		if (CPU_ISSET(c, &f->topo->online))
			f->cpu = c;
	assert_true(f->cpu >= 0);
	CPU_ZERO(&set);
	CPU_SET(f->cpu, &set);
	assert_int_equal(pthread_attr_init(&a), 0);
	assert_int_equal(pthread_attr_setaffinity_np(&a, sizeof(set), &set), 0);
	assert_int_equal(pthread_create(&f->spin, &a, spin, f), 0);
	pthread_attr_destroy(&a);
	while (!atomic_load(&f->tid))
		sched_yield();
	assert_int_equal(pthread_getcpuclockid(f->spin, &f->spin_clock), 0);
}

static uint64_t spin_cpu(const struct fix *f)
{
	struct timespec ts;

	assert_int_equal(clock_gettime(f->spin_clock, &ts), 0);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static void stop_spin(struct fix *f)
{
	atomic_store(&f->stop, 1);
	pthread_join(f->spin, NULL);
}

/* One tick, once the spinner has used SPIN_CPU_NS of CPU time since the last one. */
static void tick(struct fix *f)
{
	struct timespec nap = { 0, (long)NSEC_PER_MSEC };
	uint64_t deadline = util_now_ns() + SPIN_WAIT_NS;

	while (spin_cpu(f) < f->spin_cpu_ns + SPIN_CPU_NS) {
		if (util_now_ns() > deadline)
			fail_msg("the spinning thread got no CPU time for %d s",
				 (int)(SPIN_WAIT_NS / NSEC_PER_SEC));
		nanosleep(&nap, NULL);
	}
	snap_reset(f->snap);
	assert_int_equal(sampler_sample(f->sm, util_now_ns(), f->snap), 0);
	/* At least what the sample this tick read says. */
	f->spin_cpu_ns = spin_cpu(f);
}

static const struct snap_task *find(const struct snapshot *s, pid_t tid)
{
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].tid == tid)
			return &s->tasks[i];
	return NULL;
}

static uint64_t start_time_of(pid_t tid)
{
	char path[64], buf[1024];
	struct parse_stat_line l;

	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	assert_true(util_read_file(path, buf, sizeof(buf)) > 0);
	assert_int_equal(parse_stat(buf, &l), 0);
	return l.start_time;
}

/*
 * Ticks until the spinning thread is listed as busy (not NO_CPU), at most 30 times.
 * It needs two ticks in a row that list it: a CPU whose latest sample is stale (its
 * vCPU was not run for a while) or a run queue longer than a sample lists (until the
 * next task walk) can leave it out of one.
 */
static const struct snap_task *tick_until_busy(struct fix *f)
{
	const struct snap_task *t = NULL;

	for (int i = 0; i < 30; i++) {
		tick(f);
		t = find(f->snap, atomic_load(&f->tid));
		if (t && !(t->flags & SNAP_TASK_NO_CPU))
			return t;
	}
	return t;
}

KIT_TEST_FX(busy_thread_listed, setup, teardown)
{
	struct fix *f = *state;
	const struct snap_task *t;
	struct bpf_stats st;

	if (!f->sm)
		skip();
	start_spin(f);
	tick(f);
	t = tick_until_busy(f);
	assert_non_null(t);
	assert_int_equal(t->cpu, f->cpu);
	assert_int_equal(t->tgid, getpid());
	assert_true(t->start_time == start_time_of(t->tid));
	assert_true(CPU_ISSET(f->cpu, &t->allowed) && CPU_COUNT(&t->allowed) == 1);
	assert_int_equal(t->flags, 0); /* busy across ticks: not NO_CPU, not a kthread */
	assert_true(f->snap->cpus[f->cpu].nr_running >= 1);
	assert_true(f->snap->cpus[f->cpu].busy_pct > 0);
	stop_spin(f);
	bpf_sampler_stats(f->sm, &st);
	assert_non_null(st.rq_path);
	assert_true(st.samples >= 2 * 2);
}

/*
 * The same through the tracepoint trigger: the spinning thread's CPU samples itself at
 * its scheduler ticks, though no perf event is open.
 */
KIT_TEST_FX(busy_thread_listed_tracepoints, setup_tp, teardown)
{
	struct fix *f = *state;
	struct bpf_stats st;

	if (!f->sm)
		skip();
	bpf_sampler_stats(f->sm, &st);
	assert_string_equal(st.trigger, "scheduler tracepoints");
	busy_thread_listed(state);
}

/* A task the sampler lists for the first time is "caught runnable", not yet busy. */
KIT_TEST_FX(new_task_not_busy_yet, setup, teardown)
{
	struct fix *f = *state;
	const struct snap_task *t = NULL;

	if (!f->sm)
		skip();
	start_spin(f);
	/* The first snapshot that lists it: usually the first tick (see tick_until_busy). */
	for (int i = 0; i < 30 && !t; i++) {
		tick(f);
		t = find(f->snap, atomic_load(&f->tid));
	}
	assert_non_null(t);
	assert_true(t->flags & SNAP_TASK_NO_CPU);
	t = tick_until_busy(f);
	assert_non_null(t);
	assert_false(t->flags & SNAP_TASK_NO_CPU);
	stop_spin(f);
}

KIT_TEST_FX(new_task_not_busy_yet_tracepoints, setup_tp, teardown)
{
	new_task_not_busy_yet(state);
}

/*
 * The bpf sampler is the one that fills the optional operations: with the
 * capabilities it loaded with, its task walk works.
 */
KIT_TEST_FX(optional_ops, setup, teardown)
{
	struct fix *f = *state;

	if (!f->sm)
		skip();
	assert_non_null(f->sm->ops->pairs);
	assert_non_null(f->sm->ops->walks_unprivileged);
	assert_true(sampler_walks_unprivileged(f->sm));
}

KIT_TEST(caps_format_names)
{
	char buf[128];

	caps_format(CAPS_BIT(39) | CAPS_BIT(38) | CAPS_BIT(21) | CAPS_BIT(2), buf, sizeof(buf));
	assert_string_equal(buf, "cap 2, cap_sys_admin, cap_perfmon, cap_bpf");
	caps_format(0, buf, sizeof(buf));
	assert_string_equal(buf, "");
}

KIT_GROUP("bpf", NULL, NULL);
