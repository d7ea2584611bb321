/*
 * The tick's whole snapshot (sampler_tick): a sampler of the test's own lists the
 * tasks, then what the placement rules ask is read in the sample stage: latency
 * values onto the tasks they were given to (not a reused tid), the negative ones as
 * latency records, the resident set of each process with two user tasks listed. A
 * failed sample reads nothing more; no asks, nothing more.
 */
#include <errno.h>
#include <unistd.h>

#include "sample/sampler.h"
#include "kit.h"

/* Far above any pid_max: /proc has none of them, so latseen finds nothing to look at. */
#define T(n) (2000000000 + (n))

struct fake {
	int err;                 /* what sample returns */
	size_t n;
	struct snap_task t[8];
};

static int fake_sample(struct sampler *sm, uint64_t now_ns, struct snapshot *s)
{
	struct fake *f = sm->priv;

	if (f->err)
		return f->err;
	for (size_t i = 0; i < f->n; i++)
		assert_non_null(snap_add_task(s, &f->t[i], NULL));
	return 0;
}

static void fake_free(struct sampler *sm)
{
}

static const struct sampler_ops fake_ops = { .name = "fake", .sample = fake_sample,
					     .free = fake_free };

struct fx {
	struct topo *topo;
	struct snapshot *s;
	struct latseen seen;
	struct fake f;
	struct sampler sm;
};

static void add(struct fx *x, pid_t tid, pid_t tgid, uint64_t start, uint32_t flags)
{
	x->f.t[x->f.n++] = (struct snap_task){ .tid = tid, .tgid = tgid, .start_time = start,
					       .flags = flags, .cpu = 0 };
}

static int setup(void **state)
{
	struct fx *x = calloc(1, sizeof(*x));

	assert_non_null(x);
	x->topo = kit_topo("package:1 l3cache:2 core:2 pu:1");
	x->s = snap_new(x->topo);
	assert_non_null(x->s);
	latseen_init(&x->seen);
	x->sm = (struct sampler){ .ops = &fake_ops, .priv = &x->f };
	*state = x;
	return 0;
}

static int teardown(void **state)
{
	struct fx *x = *state;

	latseen_fini(&x->seen);
	snap_free(x->s);
	topo_free(x->topo);
	free(x);
	return 0;
}

static const struct snap_task *task(const struct fx *x, pid_t tid)
{
	for (size_t i = 0; i < x->s->ntasks; i++)
		if (x->s->tasks[i].tid == tid)
			return &x->s->tasks[i];
	fail_msg("task %d not in the snapshot", (int)tid);
	return NULL;
}

/* Sorted by tid, as sample_asks wants them. */
static const struct sample_lat lats[] = {
	{ .tid = T(1), .tgid = T(1), .start_time = 50, .value = -3 },
	{ .tid = T(2), .tgid = T(1), .start_time = 80, .value = -7 },  /* T(2) now has start 81 */
	{ .tid = T(3), .tgid = T(3), .start_time = 90, .value = 4 },
	{ .tid = T(9), .tgid = T(9), .start_time = 99, .value = -1 },  /* asleep: not listed */
};

KIT_TEST_FX(latency_values_and_records, setup, teardown)
{
	struct fx *x = *state;
	struct sample_asks a = { .lat = lats, .nlat = 4, .seen = &x->seen };

	add(x, T(1), T(1), 50, 0);
	add(x, T(2), T(1), 81, 0);
	add(x, T(3), T(3), 90, 0);
	add(x, T(4), T(4), 10, 0);
	assert_int_equal(sampler_tick(&x->sm, 1, &a, x->s), 0);
	assert_int_equal(task(x, T(1))->lat_nice, -3);
	/* The tid came back as another task: it is not the one the value was given to. */
	assert_int_equal(task(x, T(2))->lat_nice, 0);
	assert_int_equal(task(x, T(3))->lat_nice, 4);
	assert_int_equal(task(x, T(4))->lat_nice, 0);
	/* Every negative one is a latency record, listed or asleep; a positive one is not. */
	assert_int_equal(x->s->nlat, 3);
	assert_non_null(snap_find_lat(x->s, T(1), 50));
	assert_non_null(snap_find_lat(x->s, T(2), 80));
	assert_non_null(snap_find_lat(x->s, T(9), 99));
	assert_null(snap_find_lat(x->s, T(3), 90));
	/* No rss asked: none read. */
	assert_int_equal(task(x, T(1))->rss_kb, 0);
}

KIT_TEST_FX(resident_sets, setup, teardown)
{
	struct fx *x = *state;
	struct sample_asks a = { .rss = true };
	pid_t me = getpid(), parent = getppid();

	add(x, me, me, 1, 0);
	add(x, T(5), me, 2, 0);
	/* The parent has one task listed: never held together, so not read. */
	add(x, parent, parent, 3, 0);
	/* Two kernel threads of one "process": not user tasks. */
	add(x, T(6), parent, 4, SNAP_TASK_KTHREAD);
	assert_int_equal(sampler_tick(&x->sm, 1, &a, x->s), 0);
	assert_true(task(x, me)->rss_kb > 0);
	assert_int_equal(task(x, T(5))->rss_kb, task(x, me)->rss_kb);
	assert_int_equal(task(x, parent)->rss_kb, 0);
	assert_int_equal(task(x, T(6))->rss_kb, 0);
	/* No latency asked: no values, no records. */
	assert_int_equal(x->s->nlat, 0);
}

KIT_TEST_FX(failed_or_not_asked, setup, teardown)
{
	struct fx *x = *state;
	struct sample_asks a = { .lat = lats, .nlat = 4, .seen = &x->seen, .rss = true };
	pid_t me = getpid();

	add(x, me, me, 50, 0);
	add(x, T(1), me, 50, 0);
	x->f.err = -EIO;
	assert_int_equal(sampler_tick(&x->sm, 1, &a, x->s), -EIO);
	assert_int_equal(x->s->ntasks, 0);
	assert_int_equal(x->s->nlat, 0);
	x->f.err = 0;
	snap_reset(x->s);
	assert_int_equal(sampler_tick(&x->sm, 1, NULL, x->s), 0);
	assert_int_equal(task(x, T(1))->lat_nice, 0);
	assert_int_equal(task(x, T(1))->rss_kb, 0);
	assert_int_equal(x->s->nlat, 0);
}
