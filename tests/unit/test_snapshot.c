/* Snapshot text form: write/read round trips, several in a stream, every malformed record. */
#include <errno.h>

#include "rqbalance.h"
#include "kit.h"

#define TWO_LLCS "package:1 l3cache:2 core:1 pu:1"

/* Everything a test allocates, so that teardown frees it also when an assertion fails. */
struct fixture {
	struct topo *topo;
	struct snapshot *s;
	struct snapshot *back; /* what was read back */
	char *text[3];         /* written text */
	FILE *in;
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	f->topo = kit_topo(TWO_LLCS);
	f->s = snap_new(f->topo);
	f->back = snap_new(f->topo);
	assert_non_null(f->s);
	assert_non_null(f->back);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	if (f->in)
		fclose(f->in);
	for (size_t i = 0; i < ARRAY_SIZE(f->text); i++)
		free(f->text[i]);
	snap_free(f->back);
	snap_free(f->s);
	topo_free(f->topo);
	free(f);
	return 0;
}

static void add_task(struct snapshot *s, pid_t tid, int cpu, const char *allowed,
		     const char *comm, const char *cgroup)
{
	struct snap_task t = {
		.tid = tid,
		.tgid = 100,
		.cpu = cpu,
		.start_time = 1000 + (uint64_t)tid,
		.flags = tid % 2 ? SNAP_TASK_KTHREAD : 0,
		.allowed = kit_mask(allowed),
	};

	assert_true(strlen(comm) < sizeof(t.comm));
	strcpy(t.comm, comm);
	assert_non_null(snap_add_task(s, &t, cgroup));
}

/* The awkward names: spaces, backslashes, a leading '-', empty and maximal lengths. */
static void fill(struct snapshot *s)
{
	s->seq = 7;
	s->now_ns = 123456789012345ULL;
	s->self_tgid = 4242;
	s->cpus[0] = (struct snap_cpu){ .nr_running = 3, .busy_pct = 100 };
	s->cpus[1] = (struct snap_cpu){ .nr_running = 0, .busy_pct = 0 };
	add_task(s, 101, 0, "0-1", "my prog", "/user.slice/app 1.scope");
	add_task(s, 102, 1, "1", "a\\b", "/x\\y");
	add_task(s, 103, 0, "0", "-dash", "-");
	add_task(s, 104, 1, "0-1", "kworker/1:0", "");
	add_task(s, 105, 0, "0", "fifteen-chars!!", NULL);
	add_task(s, 106, 1, "0-1", "", "/tab\there");
	add_task(s, 107, 0, "0-1", "-", "-leading dash\\");
}

static void assert_task_equal(const struct snap_task *a, const struct snap_task *b)
{
	assert_int_equal(a->tid, b->tid);
	assert_int_equal(a->tgid, b->tgid);
	assert_int_equal(a->cpu, b->cpu);
	assert_int_equal(a->start_time, b->start_time);
	assert_int_equal(a->flags, b->flags);
	assert_int_equal(a->partner, b->partner);
	assert_int_equal(a->partner_placed, b->partner_placed);
	if (a->partner_placed)
		assert_int_equal(a->partner_cpu, b->partner_cpu);
	assert_true(CPU_EQUAL(&a->allowed, &b->allowed));
	assert_string_equal(a->comm, b->comm);
	if (!a->cgroup || !b->cgroup)
		assert_ptr_equal(a->cgroup, b->cgroup);
	else
		assert_string_equal(a->cgroup, b->cgroup);
}

static void assert_snap_equal(const struct snapshot *a, const struct snapshot *b)
{
	assert_int_equal(a->seq, b->seq);
	assert_int_equal(a->now_ns, b->now_ns);
	assert_int_equal(a->self_tgid, b->self_tgid);
	assert_int_equal(a->uptime_ticks, b->uptime_ticks);
	assert_int_equal(a->tick_hz, b->tick_hz);
	assert_int_equal(a->nr_cpu_ids, b->nr_cpu_ids);
	for (int c = 0; c < a->nr_cpu_ids; c++) {
		assert_int_equal(a->cpus[c].nr_running, b->cpus[c].nr_running);
		assert_int_equal(a->cpus[c].busy_pct, b->cpus[c].busy_pct);
		assert_int_equal(a->cpus[c].sample_ns, b->cpus[c].sample_ns);
	}
	assert_int_equal(a->ntasks, b->ntasks);
	for (size_t i = 0; i < a->ntasks; i++)
		assert_task_equal(&a->tasks[i], &b->tasks[i]);
}

/* The text of fx->s, kept in fx->text[i]. */
static char *written(struct fixture *fx, size_t i)
{
	size_t len;
	FILE *f = open_memstream(&fx->text[i], &len);
	int r;

	assert_non_null(f);
	r = snap_write(fx->s, f);
	fclose(f);
	assert_int_equal(r, 0);
	return fx->text[i];
}

/* Opens text for reading as fx->in. */
static FILE *reading(struct fixture *fx, const char *text)
{
	fx->in = fmemopen((void *)text, strlen(text), "r");
	assert_non_null(fx->in);
	return fx->in;
}

KIT_TEST_FX(round_trip, setup, teardown)
{
	struct fixture *fx = *state;
	char err[256] = "";
	unsigned lineno = 0;
	FILE *in;

	fill(fx->s);
	in = reading(fx, written(fx, 0));
	assert_int_equal(snap_read(in, fx->back, &lineno, err, sizeof(err)), 1);
	assert_string_equal(err, "");
	assert_snap_equal(fx->back, fx->s);
	/* One line for the header, each CPU, each task and the end. */
	assert_int_equal(lineno, 1 + 2 + 7 + 1);
	assert_int_equal(snap_read(in, fx->back, &lineno, err, sizeof(err)), 0);
}

KIT_TEST_FX(text_form_is_escaped, setup, teardown)
{
	struct fixture *fx = *state;
	const char *text;

	fill(fx->s);
	text = written(fx, 0);
	assert_non_null(strstr(text, "snapshot 7 123456789012345 4242\n"
				     "cpu 0 3 100\n"
				     "cpu 1 0 0\n"
				     "task 101 100 0 1101 1 0-1 my\\x20prog "
				     "/user.slice/app\\x201.scope\n"
				     "task 102 100 1 1102 0 1 a\\x5cb /x\\x5cy\n"
				     "task 103 100 0 1103 1 0 \\x2ddash \\x2d\n"
				     "task 104 100 1 1104 0 0-1 kworker/1:0 -\n"));
	assert_non_null(strstr(text, "task 106 100 1 1106 0 0-1 - /tab\\x09here\n"
				     "task 107 100 0 1107 1 0-1 \\x2d \\x2dleading\\x20dash\\x5c\n"
				     "end\n"));
}

KIT_TEST_FX(several_snapshots_then_eof, setup, teardown)
{
	struct fixture *fx = *state;
	unsigned lineno = 0;
	char err[256];
	FILE *in;

	fill(fx->s);
	written(fx, 0);
	snap_reset(fx->s);
	fx->s->seq = 8;
	fx->s->now_ns = 2;
	fx->s->cpus[1].busy_pct = 50;
	add_task(fx->s, 7, 1, "1", "solo", "/a");
	written(fx, 1);
	assert_true(asprintf(&fx->text[2], "%s%s", fx->text[0], fx->text[1]) > 0);
	in = reading(fx, fx->text[2]);
	assert_int_equal(snap_read(in, fx->s, &lineno, err, sizeof(err)), 1);
	assert_int_equal(fx->s->seq, 7);
	assert_int_equal(fx->s->ntasks, 7);
	assert_int_equal(snap_read(in, fx->s, &lineno, err, sizeof(err)), 1);
	assert_int_equal(fx->s->seq, 8);
	/* Read resets: nothing of the first snapshot is left over. */
	assert_int_equal(fx->s->ntasks, 1);
	assert_int_equal(fx->s->tasks[0].tid, 7);
	assert_int_equal(fx->s->cpus[1].busy_pct, 50);
	assert_int_equal(lineno, 11 + 5);
	assert_int_equal(snap_read(in, fx->s, &lineno, err, sizeof(err)), 0);
	assert_int_equal(snap_read(in, fx->s, &lineno, err, sizeof(err)), 0);
}

KIT_TEST_FX(comments_and_blank_lines_ignored, setup, teardown)
{
	static const char text[] = "# recorded by a test\n"
				   "\n"
				   "snapshot 1 2 3\n"
				   "# a CPU\n"
				   "cpu 1 4 75\n"
				   "\n"
				   "task 9 9 1 77 0 0-1 cat -\n"
				   "end\n"
				   "# trailing comment\n"
				   "\n";
	struct fixture *fx = *state;
	FILE *in = reading(fx, text);
	unsigned lineno = 0;
	char err[256];

	assert_int_equal(snap_read(in, fx->s, &lineno, err, sizeof(err)), 1);
	assert_int_equal(fx->s->seq, 1);
	assert_int_equal(fx->s->now_ns, 2);
	assert_int_equal(fx->s->self_tgid, 3);
	assert_int_equal(fx->s->cpus[1].nr_running, 4);
	assert_int_equal(fx->s->cpus[1].busy_pct, 75);
	assert_int_equal(fx->s->ntasks, 1);
	assert_string_equal(fx->s->tasks[0].comm, "cat");
	assert_null(fx->s->tasks[0].cgroup);
	assert_int_equal(lineno, 8);
	assert_int_equal(snap_read(in, fx->s, &lineno, err, sizeof(err)), 0);
	assert_int_equal(lineno, 10);
}

#define HDR_ERR "expected 'snapshot SEQ NOW_NS SELF_TGID [uptime=TICKS hz=HZ]'"

/* text must fail on line with a message containing what. */
static void expect_bad(struct snapshot *s, const char *text, unsigned line, const char *what)
{
	FILE *in = fmemopen((void *)text, strlen(text), "r");
	unsigned lineno = 0;
	char err[256] = "";
	int r;

	assert_non_null(in);
	r = snap_read(in, s, &lineno, err, sizeof(err));
	fclose(in);
	assert_int_equal(r, -EINVAL);
	assert_int_equal(lineno, line);
	if (!strstr(err, what))
		fail_msg("message \"%s\" does not say \"%s\"", err, what);
}

KIT_TEST_FX(unknown_record, setup, teardown)
{
	struct fixture *fx = *state;

	expect_bad(fx->s, "snapshot 1 2 3\ncpu 0 0 0\nirq 5 0\nend\n", 3, "unknown record");
	/* A second header inside an open snapshot is just as unknown. */
	expect_bad(fx->s, "snapshot 1 2 3\nsnapshot 2 2 3\nend\n", 2, "unknown record");
	expect_bad(fx->s, "# c\ncpu 0 0 0\n", 2, HDR_ERR);
	expect_bad(fx->s, "snapshot 1 2\nend\n", 1, HDR_ERR);
	expect_bad(fx->s, "snapshot 1 2 3 4\nend\n", 1,
		   HDR_ERR);
}

KIT_TEST_FX(cpu_outside_topology, setup, teardown)
{
	struct fixture *fx = *state;

	expect_bad(fx->s, "snapshot 1 2 3\ncpu 2 0 0\nend\n", 2, "cpu 2 is not in this topology");
	expect_bad(fx->s, "snapshot 1 2 3\ncpu -1 0 0\nend\n", 2, "cpu -1 is not in this topology");
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 2 1 0 0 a -\nend\n", 2,
		   "cpu 2 is not in this topology");
}

KIT_TEST_FX(cpu_record_malformed, setup, teardown)
{
	struct fixture *fx = *state;

	expect_bad(fx->s, "snapshot 1 2 3\ncpu 0 1\nend\n", 2, "cpu: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ncpu 0 1 2 3\nend\n", 2, "cpu: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ncpu 0 1 50%\nend\n", 2, "cpu: expected");
}

KIT_TEST_FX(busy_above_100, setup, teardown)
{
	struct fixture *fx = *state;

	expect_bad(fx->s, "snapshot 1 2 3\ncpu 0 1 100\ncpu 1 1 101\nend\n", 3,
		   "cpu 1: busy_pct 101 above 100");
}

KIT_TEST_FX(task_bad_cpu_list, setup, teardown)
{
	struct fixture *fx = *state;

	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 0-x a -\nend\n", 2,
		   "task 5: bad cpu list '0-x'");
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 3-1 a -\nend\n", 2,
		   "task 5: bad cpu list '3-1'");
}

KIT_TEST_FX(task_ids_positive, setup, teardown)
{
	struct fixture *fx = *state;

	expect_bad(fx->s, "snapshot 1 2 3\ntask 0 5 0 1 0 0 a -\nend\n", 2,
		   "tid and tgid must be positive");
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 0 0 1 0 0 a -\nend\n", 2,
		   "tid and tgid must be positive");
	expect_bad(fx->s, "snapshot 1 2 3\ntask -5 5 0 1 0 0 a -\nend\n", 2,
		   "tid and tgid must be positive");
}

KIT_TEST_FX(task_fields_missing_or_extra, setup, teardown)
{
	struct fixture *fx = *state;

	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 0 a\nend\n", 2, "task: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 0 a - x\nend\n", 2, "task: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 0 a - partner=0\nend\n", 2,
		   "task: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 0 a - partner=7 x\nend\n", 2,
		   "task: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 0 a - partner=7@\nend\n", 2,
		   "task: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 0 a - partner=7@-1\nend\n", 2,
		   "task: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 0 a - partner=7@1x\nend\n", 2,
		   "task: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 0 a - partner=7@999\nend\n", 2,
		   "partner's cpu 999 is not in this topology");
}

/* The optional partner= field survives a write and a read. */
KIT_TEST_FX(partner_round_trip, setup, teardown)
{
	struct fixture *fx = *state;
	char buf[4096];
	unsigned lineno = 0;
	char err[256];
	FILE *f;

	add_task(fx->s, 7, 1, "0-1", "a", "/x");
	fx->s->tasks[0].partner = 8;
	f = fmemopen(buf, sizeof(buf), "w");
	assert_non_null(f);
	assert_int_equal(snap_write(fx->s, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, " /x partner=8\n"));
	f = fmemopen(buf, strlen(buf), "r");
	assert_int_equal(snap_read(f, fx->back, &lineno, err, sizeof(err)), 1);
	fclose(f);
	assert_int_equal(fx->back->tasks[0].partner, 8);
	assert_false(fx->back->tasks[0].partner_placed);

	/* And where the partner last ran, when the sampler knows it. */
	fx->s->tasks[0].partner_placed = true;
	fx->s->tasks[0].partner_cpu = 1;
	f = fmemopen(buf, sizeof(buf), "w");
	assert_non_null(f);
	assert_int_equal(snap_write(fx->s, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, " /x partner=8@1\n"));
	f = fmemopen(buf, strlen(buf), "r");
	assert_int_equal(snap_read(f, fx->back, &lineno, err, sizeof(err)), 1);
	fclose(f);
	assert_task_equal(&fx->s->tasks[0], &fx->back->tasks[0]);
}

/* keep_together's and latency_apart's inputs: lat= and rss= on tasks, latency records. */
KIT_TEST_FX(placement_round_trip, setup, teardown)
{
	struct fixture *fx = *state;
	char err[256] = "";
	unsigned lineno = 0;
	const char *text;

	add_task(fx->s, 7, 1, "0-1", "a", "/x");
	add_task(fx->s, 9, 0, "0-1", "b", "/x");
	fx->s->tasks[0].partner = 9;
	fx->s->tasks[0].lat_nice = -10;
	fx->s->tasks[0].rss_kb = 2048;
	fx->s->tasks[1].lat_nice = 5;
	assert_int_equal(snap_add_lat(fx->s, 30, 300, -3), 0);
	assert_int_equal(snap_add_lat(fx->s, 7, 1107, -10), 0);
	assert_int_equal(snap_add_lat(fx->s, 8, 1, 0), -EINVAL);
	assert_int_equal(snap_add_lat(fx->s, 8, 1, 2), -EINVAL);
	assert_int_equal(snap_add_lat(fx->s, 8, 1, -21), -EINVAL);
	assert_int_equal(snap_lat_ran(fx->s, 30, 300, 1), 0);
	assert_int_equal(snap_lat_ran(fx->s, 30, 301, 1), -ENOENT);
	assert_int_equal(snap_lat_ran(fx->s, 7, 1107, 2), -EINVAL);
	text = written(fx, 0);
	assert_non_null(strstr(text, " /x partner=9 lat=-10 rss=2048\n"));
	assert_non_null(strstr(text, " /x lat=5\n"));
	assert_non_null(strstr(text, "latency 7 1107 -10\nlatency 30 300 -3 ran=1\n"));
	assert_int_equal(snap_read(reading(fx, text), fx->back, &lineno, err, sizeof(err)), 1);
	assert_string_equal(err, "");
	assert_int_equal(fx->back->tasks[0].lat_nice, -10);
	assert_int_equal(fx->back->tasks[0].rss_kb, 2048);
	assert_int_equal(fx->back->tasks[1].lat_nice, 5);
	assert_int_equal(fx->back->tasks[1].rss_kb, 0);
	assert_int_equal(fx->back->nlat, 2);
	assert_non_null(snap_find_lat(fx->back, 30, 300));
	assert_null(snap_find_lat(fx->back, 30, 301));
	assert_int_equal(snap_find_lat(fx->back, 7, 1107)->value, -10);
	assert_int_equal(snap_find_lat(fx->back, 7, 1107)->ran_cpu, -1);
	assert_int_equal(snap_find_lat(fx->back, 30, 300)->ran_cpu, 1);
	/* The next snapshot read starts with none. */
	snap_reset(fx->back);
	assert_int_equal(fx->back->nlat, 0);
}

KIT_TEST_FX(placement_fields_checked, setup, teardown)
{
	struct fixture *fx = *state;
	static const char *const bad[] = { "lat=0", "lat=20", "lat=-21", "lat=+5", "lat= 5",
					   "rss=0", "rss=-1", "rss= 1", "rss=1x", "rss=1 lat=2" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[128];

		snprintf(text, sizeof(text), "snapshot 1 2 3\ntask 5 5 0 1 0 0 a - %s\nend\n", bad[i]);
		expect_bad(fx->s, text, 2, "task: expected");
	}
	expect_bad(fx->s, "snapshot 1 2 3\nlatency 5 1 2\nend\n", 2, "value from -20 to -1");
	expect_bad(fx->s, "snapshot 1 2 3\nlatency 0 1 -2\nend\n", 2, "tid must be positive");
	expect_bad(fx->s, "snapshot 1 2 3\nlatency 5 1 -2 x\nend\n", 2, "latency: expected");
	expect_bad(fx->s, "snapshot 1 2 3\nlatency 5 +1 -2\nend\n", 2, "latency: expected");
	expect_bad(fx->s, "snapshot 1 2 3\nlatency 5 1 -2 ran=\nend\n", 2, "latency: expected");
	expect_bad(fx->s, "snapshot 1 2 3\nlatency 5 1 -2 ran=-1\nend\n", 2, "latency: expected");
	expect_bad(fx->s, "snapshot 1 2 3\nlatency 5 1 -2 ran=1x\nend\n", 2, "latency: expected");
	expect_bad(fx->s, "snapshot 1 2 3\nlatency 5 1 -2 ran=9\nend\n", 2,
		   "cpu 9 is not in this topology");
	expect_bad(fx->s, "snapshot 1 2 3\nlatency 5 1 -2\nlatency 5 1 -3\nend\n", 3,
		   "listed twice");
}

/* The clock of the tasks' start times rides in the header, both fields or neither. */
KIT_TEST_FX(uptime_round_trip, setup, teardown)
{
	struct fixture *fx = *state;
	char err[256] = "";
	unsigned lineno = 0;

	fx->s->uptime_ticks = 123456;
	fx->s->tick_hz = 100;
	assert_non_null(strstr(written(fx, 0), "snapshot 0 0 0 uptime=123456 hz=100\n"));
	assert_int_equal(snap_read(reading(fx, fx->text[0]), fx->back, &lineno, err, sizeof(err)), 1);
	assert_snap_equal(fx->back, fx->s);
	expect_bad(fx->s, "snapshot 1 2 3 uptime=5\nend\n", 1, HDR_ERR);
	expect_bad(fx->s, "snapshot 1 2 3 uptime=5 hz=0\nend\n", 1, HDR_ERR);
	expect_bad(fx->s, "snapshot 1 2 3 uptime=-5 hz=100\nend\n", 1, HDR_ERR);
	expect_bad(fx->s, "snapshot 1 2 3 uptime=5 hz=100 x\nend\n", 1, HDR_ERR);
}

/* A CPU's older counts keep their time; counts of the snapshot's moment write none. */
KIT_TEST_FX(sampled_round_trip, setup, teardown)
{
	struct fixture *fx = *state;
	char err[256] = "";
	unsigned lineno = 0;

	fx->s->now_ns = 5000;
	fx->s->cpus[0].sample_ns = 4000;
	fx->s->cpus[1].sample_ns = 5000;
	written(fx, 0);
	assert_non_null(strstr(fx->text[0], "cpu 0 0 0 sampled=4000\n"));
	assert_non_null(strstr(fx->text[0], "cpu 1 0 0\n"));
	assert_int_equal(snap_read(reading(fx, fx->text[0]), fx->back, &lineno, err, sizeof(err)), 1);
	assert_int_equal(snap_cpu_sampled(fx->back, 0), 4000);
	assert_int_equal(snap_cpu_sampled(fx->back, 1), 5000);
	expect_bad(fx->s, "snapshot 1 2 3\ncpu 0 0 0 sampled=3\nend\n", 2, "after the snapshot's time");
	expect_bad(fx->s, "snapshot 1 2 3\ncpu 0 0 0 sampled=0\nend\n", 2, "cpu: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ncpu 0 0 0 sampled=-1\nend\n", 2, "cpu: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ncpu 0 0 0 sampled=1 x\nend\n", 2, "cpu: expected");
	expect_bad(fx->s, "snapshot 1 2 3\ncpu 0 0 0 sampled=\nend\n", 2, "cpu: expected");
}

KIT_TEST_FX(missing_end, setup, teardown)
{
	struct fixture *fx = *state;

	expect_bad(fx->s, "snapshot 1 2 3\ncpu 0 1 1\n\n", 3, "not closed by 'end'");
}

KIT_TEST_FX(missing_end_after_good_snapshot, setup, teardown)
{
	static const char text[] = "snapshot 1 2 3\nend\nsnapshot 2 2 3\ncpu 0 1 1\n";
	struct fixture *fx = *state;
	FILE *in = reading(fx, text);
	unsigned lineno = 0;
	char err[256] = "";

	assert_int_equal(snap_read(in, fx->s, &lineno, err, sizeof(err)), 1);
	assert_int_equal(snap_read(in, fx->s, &lineno, err, sizeof(err)), -EINVAL);
	assert_int_equal(lineno, 4);
	assert_non_null(strstr(err, "not closed by 'end'"));
}

KIT_TEST_FX(bad_escape, setup, teardown)
{
	static const char *const bad[] = { "a\\q", "a\\x", "a\\x4", "a\\xg0", "a\\x00", "a\\" };
	struct fixture *fx = *state;
	char text[128];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		snprintf(text, sizeof(text), "snapshot 1 2 3\ntask 5 5 0 1 0 0 %s -\nend\n",
			 bad[i]);
		expect_bad(fx->s, text, 2, "task 5: bad comm");
		snprintf(text, sizeof(text), "snapshot 1 2 3\ntask 6 5 0 1 0 0 a /%s\nend\n",
			 bad[i]);
		expect_bad(fx->s, text, 2, "task 6: bad cgroup");
	}
}

KIT_TEST_FX(comm_too_long, setup, teardown)
{
	struct fixture *fx = *state;

	/* 15 bytes fit, as in the kernel; 16 do not, escaped or not. */
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 0 0123456789abcdef -\nend\n", 2,
		   "task 5: bad comm");
	expect_bad(fx->s, "snapshot 1 2 3\ntask 5 5 0 1 0 0 0123456789abcd\\x20\\x20 -\nend\n",
		   2, "task 5: bad comm");
}

KIT_TEST_FX(comm_of_fifteen_fits, setup, teardown)
{
	static const char text[] = "snapshot 1 2 3\ntask 5 5 0 1 0 0 0123456789abcd\\x20 -\nend\n";
	struct fixture *fx = *state;
	FILE *in = reading(fx, text);
	unsigned lineno = 0;
	char err[256];

	assert_int_equal(snap_read(in, fx->s, &lineno, err, sizeof(err)), 1);
	assert_string_equal(fx->s->tasks[0].comm, "0123456789abcd ");
}
