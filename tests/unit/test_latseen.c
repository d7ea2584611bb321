/*
 * Where the latency tasks last ran (latseen.c), against a fake /proc: a task is seen
 * to run only where its schedstat grew since its last look, on the CPU its stat names,
 * and only while that stat's start time is still the task's; at most LATSEEN_LOOKS
 * looks a tick, in turn.
 */
#include <limits.h>
#include <unistd.h>

#include "sample/latseen.h"
#include "kit.h"

struct fx {
	char root[32];
	struct topo *topo;
	struct snapshot *s;
	struct latseen ls;
};

/* Task tid: run_ns on a CPU in all, last on cpu, started at start. */
static void task(struct fx *f, pid_t tid, uint64_t run_ns, int cpu, uint64_t start)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/%d/task/%d", f->root, (int)tid, (int)tid);
	kit_putf(dir, "schedstat", "%llu 100 7\n", (unsigned long long)run_ns);
	kit_putf(dir, "stat",
		 "%d (lat) S 1 %d %d 0 -1 4194304 0 0 0 0 1 1 0 0 20 0 1 0 %llu 1000 10 "
		 "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 %d 0 0 0 0 0\n",
		 (int)tid, (int)tid, (int)tid, (unsigned long long)start, cpu);
}

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	kit_tmp(f->root, sizeof(f->root), "latseen");
	f->topo = kit_topo("package:1 l3cache:2 core:2 pu:1");
	f->s = snap_new(f->topo);
	latseen_init(&f->ls);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	assert_int_equal(kit_rm(f->root), 0);
	latseen_fini(&f->ls);
	snap_free(f->s);
	topo_free(f->topo);
	free(f);
	return 0;
}

/* One tick: the tasks in (sorted by tid) given; returns the snapshot it filled. */
static const struct snapshot *tick(struct fx *f, const struct latseen_task *in, size_t n)
{
	snap_reset(f->s);
	assert_int_equal(latseen_fill(&f->ls, f->root, in, n, f->s), 0);
	return f->s;
}

KIT_TEST_FX(seen_where_it_ran, setup, teardown)
{
	struct fx *f = *state;
	struct latseen_task in[] = { { .tid = 40, .tgid = 40, .start_time = 500, .value = -10 },
				     { .tid = 41, .tgid = 41, .start_time = 600, .value = -5 },
				     { .tid = 42, .tgid = 42, .start_time = 700, .value = 3 } };
	const struct snapshot *s;

	task(f, 40, 1000, 3, 500);
	task(f, 41, 2000, 1, 600);
	/* The first look only learns its time. */
	s = tick(f, in, 3);
	assert_int_equal(s->nlat, 2); /* 42's value is not a latency task's */
	assert_int_equal(snap_find_lat(s, 40, 500)->ran_cpu, -1);
	assert_int_equal(snap_find_lat(s, 41, 600)->ran_cpu, -1);
	/* 40 ran since, on CPU 3; 41 did not. */
	task(f, 40, 1500, 3, 500);
	s = tick(f, in, 3);
	assert_int_equal(snap_find_lat(s, 40, 500)->ran_cpu, 3);
	assert_int_equal(snap_find_lat(s, 41, 600)->ran_cpu, -1);
	assert_int_equal(snap_find_lat(s, 40, 500)->value, -10);
	/* Nothing since: not seen. */
	s = tick(f, in, 3);
	assert_int_equal(snap_find_lat(s, 40, 500)->ran_cpu, -1);
	/* Its tid now another task's (a start time of its own): never seen. */
	task(f, 41, 9000, 2, 601);
	s = tick(f, in, 3);
	assert_int_equal(snap_find_lat(s, 41, 600)->ran_cpu, -1);
	/* Gone: still listed (the latency actuator says who has a value), never seen. */
	task(f, 40, 1, 0, 1);
	s = tick(f, in, 2);
	assert_int_equal(s->nlat, 2);
	assert_int_equal(snap_find_lat(s, 40, 500)->ran_cpu, -1);
}

/* Many tasks: LATSEEN_LOOKS looks a tick, in turn, so each is looked at in time. */
KIT_TEST_FX(bounded_looks_in_turn, setup, teardown)
{
	struct fx *f = *state;
	size_t n = 3 * LATSEEN_LOOKS;
	struct latseen_task *in = calloc(n, sizeof(*in));
	size_t seen = 0;

	for (size_t i = 0; i < n; i++) {
		in[i] = (struct latseen_task){ .tid = (pid_t)(100 + i), .tgid = (pid_t)(100 + i),
					       .start_time = 5, .value = -1 };
		task(f, in[i].tid, 10, 0, 5);
	}
	for (int k = 0; k < 3; k++)
		tick(f, in, n); /* each task looked at once: its time learnt */
	for (size_t i = 0; i < n; i++)
		task(f, in[i].tid, 20, 1, 5);
	for (int k = 0; k < 3; k++) {
		const struct snapshot *s = tick(f, in, n);
		size_t now = 0;

		for (size_t i = 0; i < s->nlat; i++)
			now += s->lat[i].ran_cpu == 1;
		assert_int_equal(now, LATSEEN_LOOKS);
		seen += now;
	}
	assert_int_equal(seen, n);
	free(in);
}
