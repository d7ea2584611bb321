/*
 * The placement rules of place.c, keep_together, latency_apart and fast_cores, through
 * the spread policy's one entry point on synthetic machines and the desktop parts of
 * tests/data (gen_topo.py): plan dumps compared with expected text.
 */
#include "spread_fx.h"

static const char *const T2x4 = "package:1 l3cache:2 core:4 pu:1";         /* 2 LLCs x 4 */
static const char *const T2x4S = "package:1 l3cache:2(size=32MB) core:4 pu:1"; /* 32 MiB L3s */

/* A thread of process tgid on cpu, its resident set rss_kb. */
static struct snap_task *thread(struct fx *f, pid_t tgid, pid_t tid, int cpu, uint64_t rss_kb)
{
	struct snap_task *t = add(f, tid, cpu);

	t->tgid = tgid;
	t->rss_kb = rss_kb;
	return t;
}

static struct fx *together_fx(const char *topo)
{
	struct fx *f = fx_new(topo);

	f->c.keep_together = true;
	f->c.min_llc_cores = 2;
	return f;
}

/* Two busy threads that fit one LLC, one on each: both held where most ran. */
KIT_TEST(together_holds_what_fits)
{
	struct fx *f = together_fx(T2x4S);

	thread(f, 500, 500, 0, 10240);
	thread(f, 500, 501, 1, 10240);
	thread(f, 500, 502, 4, 10240);
	assert_string_equal(tick(f, 100),
			    "pin tid=500 tgid=500 comm=\"t500\" llc=0->0 cpus=0-3 why=together\n"
			    "pin tid=501 tgid=500 comm=\"t501\" llc=0->0 cpus=0-3 why=together\n"
			    "pin tid=502 tgid=500 comm=\"t502\" llc=1->0 cpus=0-3 why=together\n");
	/* Held: the next ticks pin nothing more, and spread moves none of them. */
	assert_string_equal(tick(f, 200), "");
	assert_string_equal(tick(f, 300), "");
	fx_free(f);
}

/* More busy threads than the LLC has cores (5 > 4), or too big a resident set, or an
 * LLC of unknown size: never held. */
KIT_TEST(together_gates)
{
	struct fx *f = together_fx(T2x4S);

	for (int i = 0; i < 5; i++)
		thread(f, 500, 500 + i, i, 1024);
	assert_string_equal(tick(f, 100), "");
	assert_string_equal(tick(f, 200), "");
	fx_free(f);

	f = together_fx(T2x4S);
	thread(f, 500, 500, 0, 64 * 1024);
	thread(f, 500, 501, 1, 64 * 1024);
	assert_string_equal(tick(f, 100), "");
	fx_free(f);

	f = together_fx(T2x4S);
	f->topo->llcs[0].size_kb = f->topo->llcs[1].size_kb = 0; /* hwloc knew no size */
	thread(f, 500, 500, 0, 1024);
	thread(f, 500, 501, 1, 1024);
	assert_string_equal(tick(f, 100), "");
	fx_free(f);

	f = together_fx(T2x4S);
	f->c.keep_together = false;
	thread(f, 500, 500, 0, 1024);
	thread(f, 500, 501, 1, 1024);
	assert_string_equal(tick(f, 100), "");
	fx_free(f);
}

/*
 * Room once there: a process whose threads moved in would leave its LLC more runnable
 * tasks than CPUs is not held; nor one whose resident set, added to those held there
 * already, would overflow the cache though each fits alone.
 */
KIT_TEST(together_needs_room)
{
	struct fx *f = together_fx(T2x4S);

	narrowed(add(f, 600, 0));
	narrowed(add(f, 601, 1));
	narrowed(add(f, 602, 2));
	thread(f, 500, 500, 3, 1024);
	thread(f, 500, 501, 4, 1024);
	thread(f, 500, 502, 5, 1024);
	add(f, 700, 6);
	add(f, 701, 7);
	assert_string_equal(tick(f, 100), ""); /* LLC 0 and LLC 1 both too full for it */
	fx_free(f);

	f = together_fx(T2x4S);
	thread(f, 500, 500, 0, 20 * 1024);
	thread(f, 500, 501, 1, 20 * 1024);
	thread(f, 510, 510, 2, 20 * 1024);
	thread(f, 510, 511, 3, 20 * 1024);
	assert_string_equal(tick(f, 100),
			    "pin tid=500 tgid=500 comm=\"t500\" llc=0->0 cpus=0-3 why=together\n"
			    "pin tid=501 tgid=500 comm=\"t501\" llc=0->0 cpus=0-3 why=together\n");
	assert_string_equal(tick(f, 200), ""); /* 40 MiB would not fit 32 */
	fx_free(f);
}

/* A held process that grows past the LLC's cores is let go; so is one that idles. */
KIT_TEST(together_released_when_unfit)
{
	struct fx *f = together_fx(T2x4S);

	thread(f, 500, 500, 0, 1024);
	thread(f, 500, 501, 1, 1024);
	assert_int_equal(count_ops(tick(f, 100), "pin "), 2);
	for (int i = 2; i < 5; i++)
		thread(f, 500, 500 + i, i < 4 ? i : 4, 1024);
	assert_string_equal(tick(f, 200),
			    "unpin tid=500 tgid=500 comm=\"t500\" llc=0->any cpus=0-7 why=threads\n"
			    "unpin tid=501 tgid=500 comm=\"t501\" llc=0->any cpus=0-7 why=threads\n");
	fx_free(f);

	f = together_fx(T2x4S);
	thread(f, 500, 500, 0, 1024);
	thread(f, 500, 501, 1, 1024);
	assert_int_equal(count_ops(tick(f, 100), "pin "), 2);
	snap_reset(f->s);
	thread(f, 500, 500, 0, 1024)->flags |= SNAP_TASK_NO_CPU; /* listed, used no CPU */
	assert_string_equal(tick(f, 200), "");
	assert_string_equal(tick(f, 100 + f->c.max_pin_ms - 1), "");
	assert_string_equal(tick(f, 100 + f->c.max_pin_ms),
			    "unpin tid=500 tgid=500 comm=\"t500\" llc=0->any cpus=0-7 why=idle\n"
			    "unpin tid=501 tgid=500 comm=\"t501\" llc=0->any cpus=0-7 why=idle\n");
	fx_free(f);
}

/*
 * The third review's finding 4: a held process exits and a new process takes its number.
 * Its threads all started after the record last saw the old one: it is judged afresh,
 * by every gate (here: no room in the old process's LLC), not pinned where the old one
 * was held.
 */
KIT_TEST(together_new_process_on_old_number)
{
	struct fx *f = together_fx(T2x4S);

	f->s->uptime_ticks = 5000;
	thread(f, 500, 500, 0, 1024);
	thread(f, 500, 501, 1, 1024);
	assert_int_equal(count_ops(tick(f, 100), "pin "), 2);
	snap_reset(f->s);
	f->s->uptime_ticks = 5010;
	for (int i = 0; i < 4; i++)
		narrowed(add(f, 600 + i, i));
	thread(f, 500, 520, 4, 1024)->start_time = 5005;
	thread(f, 500, 521, 5, 1024)->start_time = 5005;
	assert_null(strstr(tick(f, 200), "llc=1->0"));
	fx_free(f);

	/* The same process, its old thread still listed: held where it was. */
	f = together_fx(T2x4S);
	f->s->uptime_ticks = 5000;
	thread(f, 500, 500, 0, 1024);
	thread(f, 500, 501, 1, 1024);
	assert_int_equal(count_ops(tick(f, 100), "pin "), 2);
	snap_reset(f->s);
	f->s->uptime_ticks = 5010;
	for (int i = 1; i < 4; i++)
		narrowed(add(f, 600 + i, i));
	thread(f, 500, 500, 0, 1024);
	thread(f, 500, 521, 5, 1024)->start_time = 5005;
	assert_string_equal(tick(f, 200),
			    "pin tid=521 tgid=500 comm=\"t521\" llc=1->0 cpus=0-3 why=together\n");
	fx_free(f);
}

/* Its LLC more than 20 % busier per CPU than the other, for min_residency: let go. */
KIT_TEST(together_released_from_busy_llc)
{
	struct fx *f = together_fx(T2x4S);
	uint64_t t;

	thread(f, 500, 500, 0, 1024);
	thread(f, 500, 501, 1, 1024);
	assert_int_equal(count_ops(tick(f, 100), "pin "), 2);
	for (int i = 0; i < 4; i++)
		narrowed(add(f, 600 + i, i)); /* six runnable on four CPUs, none movable */
	add(f, 700, 4);
	for (t = 200; t < 200 + f->c.min_residency_ms; t += 100)
		assert_null(strstr(tick(f, t), "unpin"));
	assert_string_equal(tick(f, t),
			    "unpin tid=500 tgid=500 comm=\"t500\" llc=0->any cpus=0-7 why=busy_llc\n"
			    "unpin tid=501 tgid=500 comm=\"t501\" llc=0->any cpus=0-7 why=busy_llc\n");
	fx_free(f);
}

/*
 * Pins refused or undone three times within max_pin_ms: left alone for max_pin_ms. A
 * pin lost is made again only after min_residency_ms (rule d).
 */
KIT_TEST(together_gives_up_after_failures)
{
	struct fx *f = together_fx(T2x4S);
	uint64_t t = 100;

	thread(f, 500, 500, 0, 1024);
	thread(f, 500, 501, 4, 1024);
	assert_int_equal(count_ops(tick(f, t), "pin "), 2);
	/* A thread's exit is no failure: it is forgotten without one. */
	spread_forget(&f->st, 501, 1501, false);
	spread_forget(&f->st, 500, 1500, true);
	assert_int_equal(count_ops(tick(f, t += f->c.min_residency_ms), "pin "), 2);
	spread_forget(&f->st, 500, 1500, true);
	assert_string_equal(tick(f, t += f->c.min_residency_ms),
			    "pin tid=500 tgid=500 comm=\"t500\" llc=0->0 cpus=0-3 why=together\n");
	spread_forget(&f->st, 500, 1500, true);
	assert_string_equal(tick(f, t += f->c.min_residency_ms),
			    "unpin tid=501 tgid=500 comm=\"t501\" llc=0->any cpus=0-7 why=failures\n");
	assert_string_equal(tick(f, t + f->c.max_pin_ms - 100), "");
	assert_int_equal(count_ops(tick(f, t + f->c.max_pin_ms), "pin "), 2);
	fx_free(f);
}

static struct fx *apart_fx(void)
{
	struct fx *f = fx_new(T2x4);

	f->c.latency_apart = true;
	f->c.min_llc_cores = 2;
	return f;
}

/* A -10 task's LLC is kept for it: the batch task beside it goes to the other LLC, and
 * comes back once the latency task is gone. */
KIT_TEST(apart_moves_batch_off_and_back)
{
	struct fx *f = apart_fx();

	add(f, 600, 1)->lat_nice = -10;
	assert_int_equal(snap_add_lat(f->s, 600, 1600, -10), 0);
	add(f, 700, 2)->lat_nice = 5;
	add(f, 701, 5)->lat_nice = 5; /* already off it */
	add(f, 702, 3);                /* no value: left where it is */
	assert_string_equal(tick(f, 100),
			    "pin tid=600 tgid=600 comm=\"t600\" llc=0->0 cpus=0-3 why=latency\n"
			    "pin tid=700 tgid=700 comm=\"t700\" llc=0->1 cpus=4-7 why=apart\n");
	assert_string_equal(tick(f, 200), "");
	/* The latency task exits: nothing is kept for anyone. */
	snap_reset(f->s);
	add(f, 700, 4)->lat_nice = 5;
	assert_string_equal(tick(f, 300),
			    "unpin tid=600 tgid=600 comm=\"t600\" llc=0->any cpus=0-7 why=latency_gone\n"
			    "unpin tid=700 tgid=700 comm=\"t700\" llc=1->any cpus=0-7 why=latency_gone\n");
	assert_string_equal(tick(f, 400), "");
	fx_free(f);
}

/*
 * A latency task that runs in bursts too short for a sample (never listed, or listed
 * having used no CPU): seen where its looks found it ran, kept there, and pinned there
 * when listed at all.
 */
KIT_TEST(apart_sees_short_bursts)
{
	struct fx *f = apart_fx();

	assert_int_equal(snap_add_lat(f->s, 600, 1600, -10), 0);
	assert_int_equal(snap_lat_ran(f->s, 600, 1600, 5), 0);
	add(f, 700, 6)->lat_nice = 5;
	add(f, 701, 1)->lat_nice = 5;
	assert_string_equal(tick(f, 100),
			    "pin tid=700 tgid=700 comm=\"t700\" llc=1->0 cpus=0-3 why=apart\n");
	snap_reset(f->s);
	assert_int_equal(snap_add_lat(f->s, 600, 1600, -10), 0);
	add(f, 600, 4)->lat_nice = -10;
	f->s->tasks[0].flags |= SNAP_TASK_NO_CPU;
	add(f, 700, 2)->lat_nice = 5;
	add(f, 701, 1)->lat_nice = 5;
	assert_string_equal(tick(f, 200),
			    "pin tid=600 tgid=600 comm=\"t600\" llc=1->1 cpus=4-7 why=latency\n");
	fx_free(f);
}

/* A latency task asleep for 5 s keeps no LLC; one LLC is never kept. */
KIT_TEST(apart_sleeper_and_one_llc)
{
	struct fx *f = apart_fx();

	add(f, 600, 1)->lat_nice = -10;
	assert_int_equal(snap_add_lat(f->s, 600, 1600, -10), 0);
	add(f, 700, 2)->lat_nice = 5;
	assert_int_equal(count_ops(tick(f, 100), "pin "), 2);
	snap_reset(f->s);
	assert_int_equal(snap_add_lat(f->s, 600, 1600, -10), 0); /* asleep, still -10 */
	add(f, 700, 4)->lat_nice = 5;
	assert_string_equal(tick(f, 5000), "");
	assert_string_equal(tick(f, 5100),
			    "unpin tid=600 tgid=600 comm=\"t600\" llc=0->any cpus=0-7 why=latency_gone\n"
			    "unpin tid=700 tgid=700 comm=\"t700\" llc=1->any cpus=0-7 why=latency_gone\n");
	fx_free(f);

	f = fx_new("package:1 l3cache:1 core:4 pu:1");
	f->c.latency_apart = true;
	add(f, 600, 1)->lat_nice = -10;
	assert_int_equal(snap_add_lat(f->s, 600, 1600, -10), 0);
	add(f, 700, 1)->lat_nice = 5;
	assert_string_equal(tick(f, 100), "");
	fx_free(f);
}

/* Batch work outnumbering the CPUs left to it while the kept LLC idles: given back,
 * and none pinned again until it fits. */
KIT_TEST(apart_gives_back_when_short)
{
	struct fx *f = apart_fx();
	uint64_t t;
	const char *d;

	add(f, 600, 0)->lat_nice = -10;
	assert_int_equal(snap_add_lat(f->s, 600, 1600, -10), 0);
	add(f, 700, 1)->lat_nice = 5;
	assert_int_equal(count_ops(tick(f, 100), "pin "), 2);
	for (int i = 0; i < 5; i++)
		add(f, 710 + i, 4 + i % 4)->lat_nice = 5; /* 6 batch tasks for 4 CPUs */
	for (t = 200; t < 200 + f->c.min_residency_ms; t += 100)
		assert_null(strstr(tick(f, t), "unpin"));
	d = tick(f, t);
	assert_non_null(strstr(d, "unpin tid=700 tgid=700 comm=\"t700\" llc=1->any cpus=0-7 why=short\n"));
	assert_null(strstr(d, "tid=600"));
	assert_null(strstr(tick(f, t + 100), "pin tid=7"));
	fx_free(f);
}

/* ---- fast_cores, on the parts of tests/data ---- */

#define P8E16 KIT_DATA("topo-hybrid-8p16e.xml")   /* P-cores 0-15 (SMT), E-cores 16-31 */
#define ULTRA KIT_DATA("topo-hybrid-lp.xml")      /* P 0-11, E 12-19, low-power E 20-21 */
#define X7950 KIT_DATA("topo-7950x3d.xml")        /* V-cache CCD 0-7,16-23; other 8-15,24-31 */
#define X9950 KIT_DATA("topo-9950x3d.xml")

static struct fx *fast_fx(const char *xml)
{
	struct fx *f = fx_new_xml(xml);

	f->c.fast_cores = true;
	return f;
}

/* A latency task listed on cpu, its value known to the snapshot. */
static struct snap_task *lat(struct fx *f, pid_t tid, int cpu)
{
	struct snap_task *t = add(f, tid, cpu);

	t->lat_nice = -10;
	assert_int_equal(snap_add_lat(f->s, tid, 1000 + tid, -10), 0);
	return t;
}

static const char *fast_set(const struct topo *tp)
{
	static char buf[128];
	cpu_set_t s;

	if (!place_fast_cpus(tp, &s))
		return "none";
	return cpumask_format(&s, buf, sizeof(buf));
}

/* Which CPUs are fast on each part, and on each X3D mode; none on one kind of core. */
KIT_TEST(fast_cpus_of_each_part)
{
	static const char *const x3d[] = { X7950, X9950 };
	struct topo *t = kit_topo_xml(P8E16);

	assert_string_equal(fast_set(t), "0-15");
	topo_free(t);
	t = kit_topo_xml(ULTRA);
	assert_string_equal(fast_set(t), "0-11");
	topo_free(t);
	for (int i = 0; i < 2; i++) {
		t = kit_topo_xml(x3d[i]);
		assert_string_equal(fast_set(t), "8-15,24-31"); /* hwloc's rank: frequency */
		t->x3d_mode = TOPO_X3D_FREQUENCY;
		assert_string_equal(fast_set(t), "8-15,24-31");
		t->x3d_mode = TOPO_X3D_CACHE;
		assert_string_equal(fast_set(t), "0-7,16-23");
		topo_free(t);
	}
	t = kit_topo("package:1 l3cache:2 core:4 pu:1");
	assert_string_equal(fast_set(t), "none");
	t->x3d_mode = TOPO_X3D_CACHE; /* two LLCs of one size (none known): no larger one */
	assert_string_equal(fast_set(t), "none");
	topo_free(t);
}

/*
 * A hybrid part: the latency task on an E-core goes to the P-cores, the batch task on
 * a P-core to the E-cores; a task without a value and one already off stay; all given
 * back when the latency task exits.
 */
KIT_TEST(fast_latency_on_p_batch_off)
{
	struct fx *f = fast_fx(P8E16);

	lat(f, 600, 20);
	add(f, 700, 3)->lat_nice = 5;
	add(f, 701, 17)->lat_nice = 5;
	add(f, 702, 4);
	assert_string_equal(tick(f, 100),
			    "pin tid=600 tgid=600 comm=\"t600\" llc=0->0 cpus=0-15 why=fast\n"
			    "pin tid=700 tgid=700 comm=\"t700\" llc=0->0 cpus=16-31 why=off_fast\n");
	assert_string_equal(tick(f, 200), "");
	snap_reset(f->s);
	add(f, 700, 18)->lat_nice = 5;
	assert_string_equal(tick(f, 300),
			    "unpin tid=600 tgid=600 comm=\"t600\" llc=0->any cpus=0-31 why=latency_gone\n"
			    "unpin tid=700 tgid=700 comm=\"t700\" llc=0->any cpus=0-31 why=latency_gone\n");
	assert_string_equal(tick(f, 400), "");
	fx_free(f);
}

/* An X3D part in cache mode: the V-cache CCD is kept for the latency task. */
KIT_TEST(fast_x3d_cache_ccd)
{
	struct fx *f = fast_fx(X9950);

	f->topo->x3d_mode = TOPO_X3D_CACHE;
	lat(f, 600, 9);
	add(f, 700, 1)->lat_nice = 5;
	add(f, 701, 10)->lat_nice = 5;
	assert_string_equal(
		tick(f, 100),
		"pin tid=600 tgid=600 comm=\"t600\" llc=1->0 cpus=0-7,16-23 why=fast\n"
		"pin tid=700 tgid=700 comm=\"t700\" llc=0->1 cpus=8-15,24-31 why=off_fast\n");
	/* The user switches the part to frequency: both pins are wrong now. */
	f->topo->x3d_mode = TOPO_X3D_FREQUENCY;
	snap_reset(f->s);
	lat(f, 600, 1);
	add(f, 700, 9)->lat_nice = 5;
	assert_string_equal(
		tick(f, 200),
		"unpin tid=600 tgid=600 comm=\"t600\" llc=0->any cpus=0-31 why=moved\n"
		"unpin tid=700 tgid=700 comm=\"t700\" llc=1->any cpus=0-31 why=moved\n");
	fx_free(f);
}

/*
 * More busy latency tasks than P-cores (9 > 8): none is held there, and held ones go
 * back at once; pinned again only once they fit for min_residency_ms.
 */
KIT_TEST(fast_never_crowds_the_game)
{
	struct fx *f = fast_fx(P8E16);
	uint64_t t;

	for (int i = 0; i < 9; i++)
		lat(f, 600 + i, 16 + i);
	assert_null(strstr(tick(f, 100), "why=fast"));
	fx_free(f);

	f = fast_fx(P8E16);
	for (int i = 0; i < 8; i++)
		lat(f, 600 + i, 16 + i);
	assert_int_equal(count_ops(tick(f, 100), "pin "), 8);
	lat(f, 608, 30);
	assert_int_equal(count_ops(tick(f, 200), "unpin "), 8);
	assert_null(strstr(kit_plan_dump(&f->plan), "why=fast"));
	snap_reset(f->s);
	for (int i = 0; i < 8; i++)
		lat(f, 600 + i, 16 + i);
	/* The ninth is gone: they fit again, but are held only after min_residency_ms. */
	for (t = 300; t < 300 + f->c.min_residency_ms; t += 100)
		assert_int_equal(count_ops(tick(f, t), "pin "), 0);
	assert_int_equal(count_ops(tick(f, t), "pin "), 8);
	fx_free(f);
}

/* Batch work outnumbering the E-cores while a P-core idles: given back, none made. */
KIT_TEST(fast_gives_back_when_short)
{
	struct fx *f = fast_fx(ULTRA);
	const char *d;
	uint64_t t;

	lat(f, 600, 0);
	add(f, 700, 1)->lat_nice = 5;
	assert_int_equal(count_ops(tick(f, 100), "pin "), 2);
	assert_true(CPU_ISSET(12, &f->st.pins[1].mask) && !CPU_ISSET(0, &f->st.pins[1].mask));
	for (int i = 0; i < 10; i++)
		add(f, 710 + i, 12 + i)->lat_nice = 5; /* 11 batch tasks for 10 E-cores */
	for (t = 200; t < 200 + f->c.min_residency_ms; t += 100)
		assert_null(strstr(tick(f, t), "unpin"));
	d = tick(f, t);
	assert_non_null(strstr(d, "unpin tid=700 tgid=700 comm=\"t700\" llc=0->any cpus=0-21 why=short\n"));
	assert_null(strstr(d, "tid=600"));
	assert_null(strstr(tick(f, t + 100), "pin tid=7"));
	fx_free(f);
}

/* A latency task asleep for 5 s keeps nothing; off gives every pin back; one kind pins none. */
KIT_TEST(fast_sleeper_off_and_one_kind)
{
	struct fx *f = fast_fx(X7950);
	const char *d;

	lat(f, 600, 1);
	add(f, 700, 9)->lat_nice = 5;
	assert_int_equal(count_ops(tick(f, 100), "pin "), 2);
	snap_reset(f->s);
	assert_int_equal(snap_add_lat(f->s, 600, 1600, -10), 0);
	add(f, 700, 1)->lat_nice = 5;
	assert_string_equal(tick(f, 5000), "");
	d = tick(f, 5100);
	assert_int_equal(count_ops(d, "unpin "), 2);
	assert_int_equal(count_ops(d, "unpin "), count_ops(strstr(d, "why=latency_gone\n") + 17,
							  "unpin ") + 1);
	fx_free(f);

	f = fast_fx(P8E16);
	lat(f, 600, 20);
	assert_int_equal(count_ops(tick(f, 100), "pin "), 1);
	f->c.fast_cores = false;
	assert_string_equal(tick(f, 200),
			    "unpin tid=600 tgid=600 comm=\"t600\" llc=0->any cpus=0-31 why=off\n");
	fx_free(f);

	f = fx_new("package:1 l3cache:2 core:4 pu:1");
	f->c.fast_cores = true;
	add(f, 600, 1)->lat_nice = -10;
	assert_int_equal(snap_add_lat(f->s, 600, 1600, -10), 0);
	add(f, 700, 2)->lat_nice = 5;
	assert_string_equal(tick(f, 100), "");
	fx_free(f);
}

/* On an X3D part spread sends no batch task to the fast CCD while a latency task lives. */
KIT_TEST(fast_ccd_kept_from_spread)
{
	struct fx *f = fast_fx(X7950);
	const char *d;

	f->topo->x3d_mode = TOPO_X3D_CACHE;
	lat(f, 600, 0);
	for (int i = 0; i < 24; i++)
		add(f, 700 + i, 8 + i % 8)->lat_nice = 5; /* the other CCD overloaded */
	d = tick(f, 100);
	assert_null(strstr(d, "why=overload"));
	assert_null(strstr(tick(f, 200), "why=overload"));
	fx_free(f);
}

/* How many times needle occurs in hay. */
static int count_str(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

/*
 * A recording replayed on each part: a game of four threads at -10 (tgid 500) listed
 * on slow CPUs, two batch tasks at +10 on fast ones, one on a slow one; then the game
 * asleep (its latency records without ran=) for 5 s. Every game thread is pinned to
 * the part's fast CPUs, each batch task on them to the rest, and all are given back.
 */
KIT_TEST(fast_replayed_on_each_part)
{
	static const struct {
		const char *xml;
		enum topo_x3d mode;
		int slow[5], fast[2];  /* CPUs the game and one batch task, and two batch tasks, are on */
		const char *all, *fast_set, *rest;
	} parts[] = {
		{ P8E16, TOPO_X3D_NONE, { 16, 17, 20, 24, 30 }, { 0, 9 }, "0-31", "0-15", "16-31" },
		{ ULTRA, TOPO_X3D_NONE, { 12, 13, 20, 21, 19 }, { 1, 11 }, "0-21", "0-11", "12-21" },
		{ X7950, TOPO_X3D_NONE, { 0, 1, 16, 17, 2 }, { 8, 24 }, "0-31", "8-15,24-31",
		  "0-7,16-23" },
		{ X9950, TOPO_X3D_CACHE, { 8, 9, 24, 25, 10 }, { 0, 16 }, "0-31", "0-7,16-23",
		  "8-15,24-31" },
	};

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		struct fx *f = fast_fx(parts[i].xml);
		char text[4096], want[128];
		const char *d;
		int n = 0;

		f->topo->x3d_mode = parts[i].mode;
		n += snprintf(text + n, sizeof(text) - (size_t)n, "snapshot 1 1000000000 100\n");
		for (int g = 0; g < 4; g++)
			n += snprintf(text + n, sizeof(text) - (size_t)n,
				      "task %d 500 %d %d 0 %s game / lat=-10\n", 500 + g, parts[i].slow[g],
				      1500 + g, parts[i].all);
		for (int b = 0; b < 3; b++)
			n += snprintf(text + n, sizeof(text) - (size_t)n,
				      "task %d %d %d %d 0 %s make / lat=10\n", 700 + b, 700 + b,
				      b < 2 ? parts[i].fast[b] : parts[i].slow[4], 1700 + b,
				      parts[i].all);
		for (int g = 0; g < 4; g++)
			n += snprintf(text + n, sizeof(text) - (size_t)n, "latency %d %d -10 ran=%d\n",
				      500 + g, 1500 + g, parts[i].slow[g]);
		snprintf(text + n, sizeof(text) - (size_t)n, "end\n");
		d = replay_tick(f, text);
		snprintf(want, sizeof(want), "cpus=%s why=fast\n", parts[i].fast_set);
		assert_int_equal(count_ops(d, "pin "), 6);
		assert_int_equal(count_str(d, want), 4);
		snprintf(want, sizeof(want), "cpus=%s why=off_fast\n", parts[i].rest);
		assert_int_equal(count_str(d, want), 2);
		assert_non_null(strstr(d, "pin tid=700 "));
		assert_non_null(strstr(d, "pin tid=701 "));
		assert_null(strstr(d, "tid=702"));
		/* The game sleeps: still -10, never seen to run again. */
		snprintf(text, sizeof(text), "snapshot 2 %s 100\n"
			 "latency 500 1500 -10\nlatency 501 1501 -10\nlatency 502 1502 -10\n"
			 "latency 503 1503 -10\nend\n", "5900000000");
		assert_string_equal(replay_tick(f, text), "");
		snprintf(text, sizeof(text), "snapshot 3 %s 100\n"
			 "latency 500 1500 -10\nlatency 501 1501 -10\nlatency 502 1502 -10\n"
			 "latency 503 1503 -10\nend\n", "6000000000");
		d = replay_tick(f, text);
		assert_int_equal(count_ops(d, "unpin "), 6);
		fx_free(f);
	}
}
