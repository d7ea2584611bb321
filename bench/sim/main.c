/*
 * bench/sim: runs each scenario under each balancer on simulated many-LLC machines,
 * prints a markdown table and the goals, writes the table and one SVG plot per run.
 * It links the daemon's policy and changes nothing on the machine it runs on.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "plot.h"
#include "rqbalance.h"
#include "sim.h"
#include "util/cpumask.h"

#define DEFAULT_TOPO "package:2 l3cache:4 core:4 pu:2"  /* 64 CPUs, 8 LLCs */
#define BIG_TOPO "package:2 l3cache:16 core:8 pu:2"     /* 512 CPUs, 32 LLCs */

struct scenario {
	const char *name;
	const char *what;
	const char *topo;
	int seconds;
	int pairs_64ths;           /* pair workloads: pairs per 64 CPUs; 0 for the others */
	bool wide;                 /* pairs whose tasks also wake others, so wake_wide() acts */
	void (*setup)(struct sim *s, const struct scenario *sc);
	void (*each_ms)(struct sim *s);
};

/* ---- workloads ---- */

static int cpus_per_llc0(const struct sim *s)
{
	return s->topo->llcs[0].ncpus;
}

/* Waves of 2 x |LLC 0| CPU-bound tasks forked on LLC 0 every 2 s, each living 1.5 s. */
static void arrivals_setup(struct sim *s, const struct scenario *sc)
{
	int wave = 2 * cpus_per_llc0(s);

	(void)sc;
	for (int w = 0; w < 5; w++)
		for (int k = 0; k < wave; k++) {
			int i = sim_add(s, SIM_HOG);

			s->t[i].arrive_ms = 500 + (uint64_t)w * 2000 + (uint64_t)k;
			s->t[i].depart_ms = s->t[i].arrive_ms + 1500;
		}
}

static void hogs_each_ms(struct sim *s)
{
	for (int i = 0; i < s->nt; i++) {
		struct sim_task *t = &s->t[i];

		if (t->kind != SIM_HOG)
			continue;
		if (t->arrive_ms == s->now_ms)
			sim_arrive(s, i, 0);
		else if (t->depart_ms == s->now_ms && t->alive)
			sim_depart(s, i);
	}
}

/* As many request tasks as CPUs, woken by a dispatcher on LLC 0, 2-8 ms bursts. */
static void requests_setup(struct sim *s, const struct scenario *sc)
{
	(void)sc;
	for (int k = 0; k < s->topo->ncpus; k++) {
		int i = sim_add(s, SIM_REQ);

		s->t[i].alive = true;
		s->t[i].wake_ms = 1 + sim_rand(s) % 40;
		s->t[i].cpu = cpumask_first(&s->topo->llcs[0].cpus);
	}
}

static void no_arrivals(struct sim *s)
{
	(void)s;
}

/*
 * Pairs that wake each other, started on LLC 0, pairs_64ths for every 64 CPUs. Wide
 * pairs are a server and a client: besides its partner, the server wakes a listener
 * after every burst and the client after every 16th, so both flip often enough, and the
 * server 16 times more often, for wake_wide() to place their wakeups wide. They have run
 * before the start: their flips begin where that pattern holds them (at 250 bursts a
 * second, the server about 500 flips a second, the client about 31, halved every second).
 */
static void pairs_setup(struct sim *s, const struct scenario *sc)
{
	int npairs = s->topo->ncpus * sc->pairs_64ths / 64;

	for (int k = 0; k < npairs; k++) {
		int a = sim_add(s, SIM_PAIR), b = sim_add(s, SIM_PAIR);

		s->t[a].partner = b;
		s->t[b].partner = a;
		s->t[b].alive = true;
		s->t[b].cpu = cpumask_first(&s->topo->llcs[0].cpus);
		s->t[a].left_ns = 6 * (int64_t)NSEC_PER_MSEC;
		if (sc->wide) {
			s->t[a].side_every = 1;
			s->t[a].wf.flips = 512;
			s->t[b].side_every = 16;
			s->t[b].wf.flips = 32;
		}
		sim_arrive(s, a, 0);
	}
}

static const struct scenario scenarios[] = {
	{ "arrivals", "waves of CPU-bound tasks forked on one LLC", DEFAULT_TOPO, 10, 0, false,
	  arrivals_setup, hogs_each_ms },
	{ "requests", "bursty requests woken from one LLC", DEFAULT_TOPO, 10, 0, false,
	  requests_setup, no_arrivals },
	{ "pairs-low", "pairs waking each other, 1/8 load", DEFAULT_TOPO, 10, 8, false,
	  pairs_setup, no_arrivals },
	{ "pairs-high", "pairs waking each other, full load", DEFAULT_TOPO, 10, 64, false,
	  pairs_setup, no_arrivals },
	{ "wide-low", "server-client pairs that also wake others (wake_wide), 1/8 load",
	  DEFAULT_TOPO, 10, 8, true, pairs_setup, no_arrivals },
	{ "wide-high", "server-client pairs that also wake others (wake_wide), full load",
	  DEFAULT_TOPO, 10, 64, true, pairs_setup, no_arrivals },
	{ "arrivals-512", "waves of CPU-bound tasks, 512 CPUs", BIG_TOPO, 10, 0, false,
	  arrivals_setup, hogs_each_ms },
};

/* ---- runs ---- */

struct row {
	const char *balancer;
	bool keep_pairs;
	bool alt;                  /* rqbalance with keep_pairs the other way than its default */
	struct sim_stats st;
	double seconds;
	double decide_us;          /* per tick */
	double slow_tenth;         /* work of the tenth of tasks that progressed least, vs mean */
	char plot[256];
};

struct opts {
	uint64_t seed;
	const char *out;           /* directory for results.md and plots, or NULL */
	bool check;
	bool placement;            /* --placement: only keep_together and latency_apart's */
	bool util_lb;              /* --util-lb: those with the first model's balance */
	bool kinds;                /* --kinds: only fast_cores's, on parts with kinds of core */
	double seconds_scale;      /* 1.0; --quick makes runs shorter */
};

static struct topo *load_topo(const char *synthetic)
{
	struct topo_opts o = { .synthetic = synthetic };
	struct topo *t = NULL;

	if (topo_load(&o, &t) < 0) {
		fprintf(stderr, "sim: cannot build topology \"%s\"\n", synthetic);
		exit(2);
	}
	return t;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Fairness: the mean work of the tenth of the tasks that progressed least, over the mean. */
static double slowest_tenth(const struct sim *s)
{
	uint64_t *w = malloc((size_t)(s->nt ? s->nt : 1) * sizeof(*w));
	double all = 0, low = 0;
	int n = 0, k;

	if (!w)
		abort();
	for (int i = 0; i < s->nt; i++)
		if (s->t[i].alive || s->t[i].cpu >= 0) /* it arrived */
			w[n++] = s->t[i].work_ns;
	qsort(w, (size_t)n, sizeof(*w), cmp_u64);
	k = (n + 9) / 10;
	for (int i = 0; i < n; i++) {
		all += (double)w[i];
		low += i < k ? (double)w[i] : 0;
	}
	free(w);
	return all > 0 ? (low / k) / (all / n) : 0;
}

static bool default_keep_pairs(void)
{
	struct rqb_conf c;

	conf_defaults(&c);
	return c.keep_pairs;
}

/* The row's name: the balancer, and keep_pairs when it is not at its default. */
static const char *row_name(const struct row *r, char *buf, size_t n)
{
	snprintf(buf, n, "%s%s", r->balancer,
		 !r->alt ? "" : r->keep_pairs ? " + keep_pairs" : ", keep_pairs = no");
	return buf;
}

/* One scenario under one balancer. Returns 0, or 1 if an invariant broke. */
static int run(const struct scenario *sc, const struct topo *t, enum sim_balancer bal,
	       bool keep_pairs, const struct opts *o, struct row *ret)
{
	struct sim s;
	uint64_t end;

	if (sim_init(&s, t, bal, o->seed) < 0)
		abort();
	s.conf.keep_pairs = keep_pairs;
	s.check = o->check;
	sc->setup(&s, sc);
	end = (uint64_t)(sc->seconds * 1000 * o->seconds_scale);
	while (s.now_ms < end) {
		const char *broke;

		sc->each_ms(&s);
		sim_step(&s);
		if (s.check && (broke = sim_invariants(&s))) {
			fprintf(stderr, "sim: %s/%s at %" PRIu64 " ms: %s\n", sc->name,
				sim_balancer_name(bal), s.now_ms, broke);
			sim_fini(&s);
			return 1;
		}
	}
	memset(ret, 0, sizeof(*ret));
	ret->balancer = sim_balancer_name(bal);
	ret->keep_pairs = keep_pairs;
	ret->alt = bal == SIM_RQB && keep_pairs != default_keep_pairs();
	ret->st = s.st;
	ret->seconds = (double)end / 1000;
	ret->decide_us = s.st.ticks ? (double)s.decide_ns / 1000 / (double)s.st.ticks : 0;
	ret->slow_tenth = slowest_tenth(&s);
	if (o->out) {
		char title[256];
		struct plot_series ps = { .nlines = t->nllcs, .npoints = s.nseries / t->nllcs,
					  .dt_s = s.tick_ms / 1000.0, .y = s.series,
					  .y_ref = t->llcs[0].ncpus };

		snprintf(ret->plot, sizeof(ret->plot), "%s-%s%s.svg", sc->name,
			 bal == SIM_NONE ? "none" : bal == SIM_PULLER ? "puller" : "rqbalance",
			 !ret->alt ? "" : keep_pairs ? "-keep-pairs" : "-no-keep-pairs");
		snprintf(title, sizeof(title), "%s: %s (%s)", sc->name, ret->balancer,
			 !ret->alt ? sc->what : keep_pairs ? "keep_pairs = yes" : "keep_pairs = no");
		char path[1024];

		snprintf(path, sizeof(path), "%s/%s", o->out, ret->plot);
		if (plot_svg(path, title, &ps) < 0)
			fprintf(stderr, "sim: cannot write %s\n", path);
	}
	sim_fini(&s);
	return 0;
}

static void print_header(FILE *f)
{
	fprintf(f, "| balancer | imbalances | longest (ticks) | mean max-min runnable/LLC | "
		   "wasted idle (CPU-s) | vs puller | migrations/s | ping-pong | "
		   "pulls from 1-task CPUs | work done (CPU-s) | slowest tenth's work, vs mean | "
		   "bursts/s | decision (µs/tick) |\n");
	fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

static void print_row(FILE *f, const struct row *r, const struct row *puller)
{
	const struct sim_stats *st = &r->st;
	double wasted = st->wasted_ms / 1000.0, pw = puller->st.wasted_ms / 1000.0;
	char vs[32], name[96];

	if (pw > 0)
		snprintf(vs, sizeof(vs), "%.2f", wasted / pw);
	else
		snprintf(vs, sizeof(vs), "-");
	fprintf(f, "| %s | %" PRIu64 " | %" PRIu64 " | %.2f | %.2f | %s | %.1f | %" PRIu64
		   " | %" PRIu64 " | %.1f | %.2f | %.0f | %.1f |\n",
		row_name(r, name, sizeof(name)), st->episodes, st->episode_max,
		st->ticks ? st->spread_sum / (double)st->ticks : 0, wasted, vs,
		(double)st->migrations / r->seconds, st->pingpong, st->single_pulls,
		st->work_ns / 1e9, r->slow_tenth, (double)st->bursts / r->seconds, r->decide_us);
}

/* The floor: waste no balancer acting on ticks wins back, (a) before a tick saw it, (c) local. */
static double floor_s(const struct sim_stats *st)
{
	return (double)(st->wasted_unseen_ms + st->wasted_local_ms) / 1000.0;
}

static void ratio(char *buf, size_t n, double a, double b)
{
	if (b > 0)
		snprintf(buf, n, "%.2f", a / b);
	else
		snprintf(buf, n, "-");
}

/* Wasted idle split three ways, the floor, and what is above it against the puller. */
static void print_waste(FILE *f, const struct row *rows, int nrows)
{
	const struct sim_stats *pu = &rows[1].st;
	double pw = pu->wasted_ms / 1000.0, pf = floor_s(pu);

	fprintf(f, "\n| balancer | wasted idle (CPU-s) | (a) across LLCs, no tick saw it yet | "
		   "(b) across LLCs, after a tick saw it | (c) within an LLC | floor (a)+(c) | "
		   "vs puller | above the floor, vs puller's |\n");
	fprintf(f, "|---|---|---|---|---|---|---|---|\n");
	for (int r = 0; r < nrows; r++) {
		const struct sim_stats *st = &rows[r].st;
		double w = st->wasted_ms / 1000.0, fl = floor_s(st);
		char vs[32], above[32], name[96];

		ratio(vs, sizeof(vs), w, pw);
		ratio(above, sizeof(above), w - fl, pw - pf);
		fprintf(f, "| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %s | %s |\n",
			row_name(&rows[r], name, sizeof(name)), w,
			st->wasted_unseen_ms / 1000.0, st->wasted_seen_ms / 1000.0,
			st->wasted_local_ms / 1000.0, fl, vs, above);
	}
}

/* ---- the decision-time scaling run ---- */

struct scale_point {
	int cpus;
	size_t tasks;
	double us;
};

/* Median time of spread_decide over ticks on a machine with 10 runnable tasks per CPU. */
static struct scale_point scale_one(const char *synthetic, uint64_t seed)
{
	struct topo *t = load_topo(synthetic);
	struct snapshot *sn = snap_new(t);
	struct rqb_conf c;
	struct spread_conf sc;
	struct spread_state st;
	struct plan p;
	double us[41];
	uint64_t rng = seed;
	int n = 0;

	conf_defaults(&c);
	conf_spread(&c, &sc);
	spread_init(&st);
	plan_init(&p);
	for (int c2 = 0; c2 < t->nr_cpu_ids; c2++) {
		/* Half the LLCs get 15 tasks a CPU, the others 5: 10 on average. */
		int per = t->cpus[c2].llc % 2 ? 5 : 15;

		for (int k = 0; k < per; k++) {
			struct snap_task tk = { .tid = 100 + n, .tgid = 100 + n, .cpu = c2,
						.start_time = (uint64_t)n, .allowed = t->online };

			rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
			snprintf(tk.comm, sizeof(tk.comm), "t");
			snap_add_task(sn, &tk, NULL);
			sn->cpus[c2].nr_running++;
			n++;
		}
	}
	for (int k = 0; k < 41; k++) {
		struct timespec a, b;

		sn->now_ns = (uint64_t)(k + 1) * 100 * NSEC_PER_MSEC;
		plan_clear(&p);
		clock_gettime(CLOCK_MONOTONIC, &a);
		spread_decide(sn, &sc, &st, &p);
		clock_gettime(CLOCK_MONOTONIC, &b);
		us[k] = (double)(b.tv_sec - a.tv_sec) * 1e6 + (double)(b.tv_nsec - a.tv_nsec) / 1e3;
	}
	for (int i = 1; i < 41; i++)
		for (int j = i; j > 0 && us[j] < us[j - 1]; j--) {
			double x = us[j];

			us[j] = us[j - 1];
			us[j - 1] = x;
		}
	struct scale_point pt = { t->ncpus, sn->ntasks, us[20] };

	plan_fini(&p);
	spread_fini(&st);
	snap_free(sn);
	topo_free(t);
	return pt;
}

/* ---- main ---- */

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: sim [--seed N] [--out DIR] [--quick] [--placement] [--kinds] [--check]\n"
		"Simulates many-LLC machines with the kernel's own placement (a simple model)\n"
		"under three balancers: none, a utilization puller, and rqbalance's policy.\n"
		"  --seed N   random seed (default 1); the same seed gives the same figures\n"
		"  --out DIR  write results.md and one SVG plot per run into DIR\n"
		"  --quick    runs a tenth as long (placement runs: 2 s at least)\n"
		"  --placement  only the keep_together and latency_apart scenarios\n"
		"  --util-lb  those with the first model's balance across LLCs (utilization)\n"
		"  --kinds    only fast_cores's scenarios, on real parts with kinds of core\n"
		"  --check    check the simulator's invariants every millisecond and that a\n"
		"             seed gives the same result twice; prints N passed, N failed\n");
}

struct goals {
	int ok, failed;
	FILE *md;                  /* results.md, where each goal is listed too; or NULL */
};

static void goal(struct goals *g, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void goal(struct goals *g, bool ok, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	printf("goal %s: %s\n", ok ? "met" : "FAIL", line);
	if (g->md)
		fprintf(g->md, "- goal %s: %s\n", ok ? "met" : "**FAIL**", line);
	ok ? g->ok++ : g->failed++;
}

/*
 * rqbalance's wasted idle at most 1/5 of the puller's. When it is not, says why: either
 * the lower of the two balancers' floors is already over a fifth of the puller's total,
 * so no balancer acting on ticks gets there, or the floor leaves room that the policy
 * does not use.
 */
static void waste_goal(struct goals *g, const char *name, const struct sim_stats *rq,
		       const struct sim_stats *pu)
{
	double w = rq->wasted_ms / 1000.0, pw = pu->wasted_ms / 1000.0;
	double fl = floor_s(rq), pf = floor_s(pu), lo = fl < pf ? fl : pf;
	bool ok = w * 5 <= pw;
	char why[256] = "", above[32];

	ratio(above, sizeof(above), w - fl, pw - pf);
	if (!ok && lo * 5 > pw)
		snprintf(why, sizeof(why), "; out of reach on ticks: the floor alone (rqbalance "
			 "%.2f, puller %.2f CPU-s) is %.2f of the puller's total", fl, pf,
			 pw > 0 ? lo / pw : 0);
	else if (!ok)
		snprintf(why, sizeof(why), "; the floor (%.2f CPU-s) leaves room; above it, "
			 "%s of the puller's", fl, above);
	goal(g, ok, "%s: wasted idle at most 1/5 of the puller's (%.2f vs %.2f CPU-s)%s", name, w,
	     pw, why);
}

static const enum sim_balancer order[] = { SIM_NONE, SIM_PULLER, SIM_RQB };

static double per_s(uint64_t n, const struct row *r)
{
	return (double)n / r->seconds;
}

/* keep_pairs against the default, on one pair workload: throughput, waste, fairness. */
static void print_keep_pairs(FILE *f, const char *name, const struct row *no,
			     const struct row *yes)
{
	double b0 = per_s(no->st.bursts, no), b1 = per_s(yes->st.bursts, yes);

	fprintf(f, "keep_pairs on %s: bursts/s %.0f without, %.0f with (%+.1f %%); wasted idle "
		   "%.2f, %.2f CPU-s; slowest tenth %.2f, %.2f of the mean\n",
		name, b0, b1, b0 > 0 ? 100.0 * (b1 / b0 - 1) : 0, no->st.wasted_ms / 1000.0,
		yes->st.wasted_ms / 1000.0, no->slow_tenth, yes->slow_tenth);
}

/* After the tables: the share of wakeups placed wide, and (in the file) the plots. */
static void print_notes(FILE *f, const struct row *rows, int nrows, bool plots)
{
	char name[96];

	fprintf(f, "\nWakeups placed wide by wake_wide():");
	for (int r = 0; r < nrows; r++)
		fprintf(f, " %s %.1f %%%s", row_name(&rows[r], name, sizeof(name)),
			rows[r].st.wakes ? 100.0 * (double)rows[r].st.wide_wakes /
						   (double)rows[r].st.wakes
					 : 0.0,
			r + 1 < nrows ? "," : ".\n");
	if (!plots)
		return;
	fprintf(f, "\nPlots:");
	for (int r = 0; r < nrows; r++)
		fprintf(f, " [%s](%s)", row_name(&rows[r], name, sizeof(name)), rows[r].plot);
	fprintf(f, "\n");
}

/*
 * Every run of one scenario: the three balancers, rqbalance with its default config;
 * for pairs also rqbalance with keep_pairs the other way.
 */
static int run_scenario(const struct scenario *sc, const struct opts *o, FILE *md,
			struct goals *g)
{
	struct topo *t = load_topo(sc->topo);
	bool pairs = sc->pairs_64ths > 0, kp = default_keep_pairs();
	const struct sim_stats *rq, *pu;
	struct row rows[4];
	int nrows = 0, broke = 0;
	char desc[256];

	for (size_t b = 0; b < ARRAY_SIZE(order); b++)
		broke |= run(sc, t, order[b], kp, o, &rows[nrows++]);
	if (pairs)
		broke |= run(sc, t, SIM_RQB, !kp, o, &rows[nrows++]);
	topo_describe(t, desc, sizeof(desc));
	for (FILE *f = stdout; f; f = f == stdout ? md : NULL) {
		fprintf(f, "\n### %s: %s\n\n%s, %.0f s simulated, seed %" PRIu64 ".\n\n",
			sc->name, sc->what, desc, rows[0].seconds, o->seed);
		print_header(f);
		for (int r = 0; r < nrows; r++)
			print_row(f, &rows[r], &rows[1]);
		print_waste(f, rows, nrows);
		print_notes(f, rows, nrows, f == md);
	}
	rq = &rows[2].st;
	pu = &rows[1].st;
	if (md)
		fprintf(md, "\n");
	if (!strncmp(sc->name, "arrivals", 8))
		goal(g, rq->episode_max <= 2, "%s: rqbalance spreads within 2 ticks (longest %" PRIu64
		     ")", sc->name, rq->episode_max);
	waste_goal(g, sc->name, rq, pu);
	goal(g, rq->single_pulls == 0, "%s: no pull from a single-task CPU (%" PRIu64 ")",
	     sc->name, rq->single_pulls);
	goal(g, rq->pingpong == 0, "%s: no ping-pong (%" PRIu64 ")", sc->name, rq->pingpong);
	if (pairs)
		print_keep_pairs(stdout, sc->name, &rows[kp ? 3 : 2], &rows[kp ? 2 : 3]);
	topo_free(t);
	return broke;
}

#define SWEEP_SEEDS 5

/* One load of the sweep, summed over seeds: [0] without keep_pairs, [1] with it. */
struct sweep_point {
	double bursts[2], wasted[2], slow[2];   /* sums over seeds */
	double lo, hi;                          /* range of the change in bursts/s, % */
};

static int sweep_one(const struct scenario *sc, const struct topo *t, const struct opts *o,
		     struct sweep_point *ret)
{
	struct opts q = *o;
	int broke = 0;

	memset(ret, 0, sizeof(*ret));
	q.out = NULL; /* no plots */
	for (int k = 0; k < SWEEP_SEEDS; k++) {
		struct row r[2];
		double change;

		q.seed = o->seed + (uint64_t)k;
		for (int kp = 0; kp < 2; kp++) {
			broke |= run(sc, t, SIM_RQB, kp, &q, &r[kp]);
			ret->bursts[kp] += per_s(r[kp].st.bursts, &r[kp]);
			ret->wasted[kp] += r[kp].st.wasted_ms / 1000.0;
			ret->slow[kp] += r[kp].slow_tenth;
		}
		change = r[0].st.bursts ? 100.0 * ((double)r[1].st.bursts / (double)r[0].st.bursts - 1)
					: 0;
		ret->lo = k == 0 || change < ret->lo ? change : ret->lo;
		ret->hi = k == 0 || change > ret->hi ? change : ret->hi;
	}
	return broke;
}

/*
 * keep_pairs across load: rqbalance with and without it, on both pair workloads, from
 * 1/8 of a pair per CPU to one, each the mean of SWEEP_SEEDS seeds. Where the option
 * helps and where it hurts.
 */
static int run_pairs_sweep(const struct opts *o, FILE *md)
{
	static const int loads[] = { 8, 12, 16, 24, 32, 48, 64 };
	struct topo *t = load_topo(DEFAULT_TOPO);
	int broke = 0;

	for (FILE *f = stdout; f; f = f == stdout ? md : NULL)
		fprintf(f, "\n### keep_pairs across load\n\nrqbalance without and with keep_pairs "
			   "on the pair workloads, 64 CPUs in 8 LLCs, %.0f s, the mean of seeds "
			   "%" PRIu64 " to %" PRIu64 ". Wide pairs also wake others, so the kernel "
			   "places their wakeups wide.\n\n"
			   "| pairs per CPU | wake_wide | bursts/s without | with | change (range) | "
			   "wasted idle without (CPU-s) | with | slowest tenth without | with |\n"
			   "|---|---|---|---|---|---|---|---|---|\n",
			10 * o->seconds_scale, o->seed, o->seed + SWEEP_SEEDS - 1);
	for (int wide = 0; wide < 2; wide++)
		for (size_t k = 0; k < ARRAY_SIZE(loads); k++) {
			struct scenario sc = { "sweep", "pairs", DEFAULT_TOPO, 10, loads[k], wide,
					       pairs_setup, no_arrivals };
			struct sweep_point pt;
			double n = SWEEP_SEEDS;

			broke |= sweep_one(&sc, t, o, &pt);
			for (FILE *f = stdout; f; f = f == stdout ? md : NULL)
				fprintf(f, "| %g | %s | %.0f | %.0f | %+.1f %% (%+.1f to %+.1f) | "
					   "%.2f | %.2f | %.2f | %.2f |\n", loads[k] / 64.0,
					wide ? "yes" : "no", pt.bursts[0] / n, pt.bursts[1] / n,
					pt.bursts[0] > 0 ? 100.0 * (pt.bursts[1] / pt.bursts[0] - 1) : 0,
					pt.lo, pt.hi, pt.wasted[0] / n, pt.wasted[1] / n, pt.slow[0] / n,
					pt.slow[1] / n);
		}
	topo_free(t);
	return broke;
}

static void run_scaling(FILE *md, struct goals *g, uint64_t seed)
{
	static const char *const topos[] = {
		"package:1 l3cache:2 core:4 pu:2",   /* 16 */
		"package:2 l3cache:4 core:4 pu:2",   /* 64 */
		"package:2 l3cache:8 core:8 pu:2",   /* 256 */
		"package:2 l3cache:16 core:16 pu:2", /* 1024 */
	};
	struct scale_point pt[4];

	for (FILE *f = stdout; f; f = f == stdout ? md : NULL) {
		fprintf(f, "\n### Policy decision time\n\n10 runnable tasks per CPU on "
			   "average (LLCs alternately at 15 and 5 a CPU), median of 41 ticks. "
			   "Timings vary from run to run on a shared machine.\n\n");
		fprintf(f, "| CPUs | tasks | µs per tick | ns per task |\n|---|---|---|---|\n");
	}
	for (int k = 0; k < 4; k++) {
		pt[k] = scale_one(topos[k], seed);
		for (FILE *f = stdout; f; f = f == stdout ? md : NULL)
			fprintf(f, "| %d | %zu | %.1f | %.1f |\n", pt[k].cpus, pt[k].tasks, pt[k].us,
				pt[k].us * 1000 / (double)pt[k].tasks);
	}
	if (md)
		fprintf(md, "\n");
	goal(g, pt[3].us <= 1000, "a decision takes at most 1 ms at 1024 CPUs (%.0f µs)",
	     pt[3].us);
	goal(g, pt[3].us / (double)pt[3].tasks <= 2 * pt[0].us / (double)pt[0].tasks,
	     "decision time grows linearly or better (per task: %.1f ns at %d CPUs, %.1f ns at "
	     "%d)", pt[0].us * 1000 / (double)pt[0].tasks, pt[0].cpus,
	     pt[3].us * 1000 / (double)pt[3].tasks, pt[3].cpus);
}

/* ---- placement: keep_together and latency_apart on the cache model ---- */

#define TOPO_2X8 "package:1 l3cache:2(size=32MB) core:8 pu:1"    /* 16 CPUs, 2 LLCs */
#define TOPO_8X8 "package:2 l3cache:4(size=32MB) core:8 pu:1"    /* 64 CPUs, 8 LLCs */
#define TOPO_2X32 "package:1 l3cache:2(size=128MB) core:32 pu:1" /* 64 CPUs, 2 LLCs */
#define PLACE_SEEDS 5
#define PLACE_SECONDS 10

/* A placement workload; each part is left out where its count is 0. */
struct pwork {
	int procs, threads;       /* threaded processes of CPU-bound threads */
	int ws_mb, shared_pct, llc_pct; /* theirs, and the pairs' (struct sim_proc) */
	int pairs;                /* two-thread processes that wake each other */
	bool wide;                /* pairs that also wake others (wake_wide) */
	int workers, hogs;        /* latency workers (one process) and batch hogs beside them */
	int hog_ws_mb;            /* each batch hog's working set; 0: BATCH_WS_MB */
	bool preempt;             /* the kernel lets a latency worker preempt on wakeup */
};

/* The columns: the kernel model alone, then rqbalance with a rule set. */
enum pcol { COL_KERNEL, COL_SPREAD_NP, COL_SPREAD, COL_TOGETHER_NP, COL_TOGETHER, COL_APART,
	    COL_BOTH, NPCOLS };

static const struct pcol_def {
	const char *name;
	bool daemon, keep_pairs, keep_together, latency_apart;
} pcols[NPCOLS] = {
	[COL_KERNEL] = { "kernel balancer alone", false, false, false, false },
	[COL_SPREAD_NP] = { "spread, keep_pairs = no", true, false, false, false },
	[COL_SPREAD] = { "spread only (rules off)", true, true, false, false },
	[COL_TOGETHER_NP] = { "keep_together, keep_pairs = no", true, false, true, false },
	[COL_TOGETHER] = { "keep_together on", true, true, true, false },
	[COL_APART] = { "latency_apart on", true, true, false, true },
	[COL_BOTH] = { "both", true, true, true, true },
};

#define COLS_THREADS ((1u << COL_KERNEL) | (1u << COL_SPREAD) | (1u << COL_TOGETHER))
#define COLS_PAIRS                                                                          \
	((1u << COL_KERNEL) | (1u << COL_SPREAD_NP) | (1u << COL_SPREAD) |                    \
	 (1u << COL_TOGETHER_NP) | (1u << COL_TOGETHER))
#define COLS_LATENCY                                                                        \
	((1u << COL_KERNEL) | (1u << COL_SPREAD) | (1u << COL_APART) | (1u << COL_BOTH))

struct pscen {
	char group;               /* 'a' to 'e', as in the README */
	const char *name;
	const char *topo;
	struct pwork w;
	unsigned cols;            /* 1 << enum pcol */
};

static const struct pscen pscens[] = {
	{ 'a', "fit-2x8", TOPO_2X8, { .procs = 3, .threads = 4, .ws_mb = 8, .shared_pct = 50,
				      .llc_pct = 20 }, COLS_THREADS },
	{ 'a', "fit-full-2x8", TOPO_2X8, { .procs = 4, .threads = 4, .ws_mb = 8,
					   .shared_pct = 50, .llc_pct = 20 }, COLS_THREADS },
	{ 'a', "fit-8x8", TOPO_8X8, { .procs = 12, .threads = 4, .ws_mb = 8, .shared_pct = 50,
				      .llc_pct = 20 }, COLS_THREADS },
	{ 'a', "fit-2x32", TOPO_2X32, { .procs = 6, .threads = 8, .ws_mb = 16,
					.shared_pct = 50, .llc_pct = 20 }, COLS_THREADS },
	{ 'b', "many-threads-2x8", TOPO_2X8, { .procs = 1, .threads = 12, .ws_mb = 8,
					       .shared_pct = 50, .llc_pct = 20 }, COLS_THREADS },
	{ 'b', "many-threads-8x8", TOPO_8X8, { .procs = 4, .threads = 12, .ws_mb = 8,
					       .shared_pct = 50, .llc_pct = 20 }, COLS_THREADS },
	{ 'b', "many-threads-2x32", TOPO_2X32, { .procs = 1, .threads = 48, .ws_mb = 32,
						 .shared_pct = 50, .llc_pct = 20 }, COLS_THREADS },
	{ 'c', "ws-over-llc-2x8", TOPO_2X8, { .procs = 2, .threads = 4, .ws_mb = 48,
					      .shared_pct = 10, .llc_pct = 50 }, COLS_THREADS },
	{ 'c', "overflow-2x8", TOPO_2X8, { .procs = 3, .threads = 4, .ws_mb = 20,
					   .shared_pct = 0, .llc_pct = 50 }, COLS_THREADS },
	{ 'c', "overflow-8x8", TOPO_8X8, { .procs = 12, .threads = 4, .ws_mb = 20,
					   .shared_pct = 0, .llc_pct = 50 }, COLS_THREADS },
	{ 'c', "overflow-2x32", TOPO_2X32, { .procs = 5, .threads = 8, .ws_mb = 48,
					     .shared_pct = 0, .llc_pct = 50 }, COLS_THREADS },
	{ 'd', "pairs-half-8x8", TOPO_8X8, { .pairs = 32, .ws_mb = 1, .shared_pct = 50,
					     .llc_pct = 20 }, COLS_PAIRS },
	{ 'd', "pairs-full-8x8", TOPO_8X8, { .pairs = 64, .ws_mb = 1, .shared_pct = 50,
					     .llc_pct = 20 }, COLS_PAIRS },
	{ 'd', "wide-pairs-full-8x8", TOPO_8X8, { .pairs = 64, .wide = true, .ws_mb = 1,
						  .shared_pct = 50, .llc_pct = 20 }, COLS_PAIRS },
	{ 'd', "pairs-full-2x32", TOPO_2X32, { .pairs = 64, .ws_mb = 1, .shared_pct = 50,
					       .llc_pct = 20 }, COLS_PAIRS },
	{ 'e', "latency-fit-2x8", TOPO_2X8, { .workers = 4, .hogs = 8 }, COLS_LATENCY },
	{ 'e', "latency-fit-2x8-1mb", TOPO_2X8, { .workers = 4, .hogs = 8, .hog_ws_mb = 1 },
	  COLS_LATENCY },
	{ 'e', "latency-short-2x8", TOPO_2X8, { .workers = 4, .hogs = 20 }, COLS_LATENCY },
	{ 'e', "latency-fit-8x8", TOPO_8X8, { .workers = 8, .hogs = 56 }, COLS_LATENCY },
	{ 'e', "latency-short-8x8", TOPO_8X8, { .workers = 8, .hogs = 72 }, COLS_LATENCY },
	{ 'e', "latency-fit-8x8-preempt", TOPO_8X8, { .workers = 8, .hogs = 56, .preempt = true },
	  COLS_LATENCY },
	{ 'e', "latency-short-8x8-preempt", TOPO_8X8, { .workers = 8, .hogs = 72,
							.preempt = true }, COLS_LATENCY },
	{ 'e', "latency-fit-2x32", TOPO_2X32, { .workers = 16, .hogs = 32 }, COLS_LATENCY },
	{ 'e', "latency-short-2x32", TOPO_2X32, { .workers = 16, .hogs = 72 }, COLS_LATENCY },
};

/* The latency workers' process: schbench-like, a request every 10 ms on average. */
static const struct sim_proc latency_proc = { .ws_kb = 2048, .shared_pct = 50, .llc_pct = 20,
					      .think_ms = 10, .burst_us = 1000 };
/* Each batch hog: a process of its own, of 6 MiB unless the scenario says. */
#define BATCH_WS_MB 6
static const struct sim_proc batch_proc = { .shared_pct = 0, .llc_pct = 20 };

static int rand_llc(struct sim *s)
{
	return (int)(sim_rand(s) % (uint64_t)s->topo->nllcs);
}

/* Shuffles a[0..n) with the run's generator. */
static void shuffle(struct sim *s, int *a, int n)
{
	for (int k = n - 1; k > 0; k--) {
		int j = (int)(sim_rand(s) % (uint64_t)(k + 1)), x = a[k];

		a[k] = a[j];
		a[j] = x;
	}
}

/*
 * The threads of w's processes forked at the start, the processes' forks interleaved
 * in an order drawn from the seed, each through the kernel's fork balancing from a
 * parent on an LLC drawn from the seed.
 */
static void threads_setup(struct sim *s, const struct pwork *w)
{
	struct sim_proc pr = { .ws_kb = (uint64_t)w->ws_mb * 1024, .shared_pct = w->shared_pct,
			       .llc_pct = w->llc_pct };
	int n = w->procs * w->threads, *forks = calloc((size_t)(n ? n : 1), sizeof(int));
	int *parent = calloc((size_t)(w->procs ? w->procs : 1), sizeof(int));

	if (!forks || !parent)
		abort();
	for (int p = 0; p < w->procs; p++) {
		int k = sim_add_proc(s, &pr);

		parent[p] = rand_llc(s);
		for (int j = 0; j < w->threads; j++)
			forks[p * w->threads + j] = sim_add_thread(s, SIM_HOG, k);
	}
	shuffle(s, forks, n);
	for (int k = 0; k < n; k++)
		sim_fork(s, forks[k], parent[s->t[forks[k]].proc]);
	free(forks);
	free(parent);
}

/* Two-thread processes that wake each other, both halves forked runnable. */
static void pairs2_setup(struct sim *s, const struct pwork *w)
{
	struct sim_proc pr = { .ws_kb = (uint64_t)w->ws_mb * 1024, .shared_pct = w->shared_pct,
			       .llc_pct = w->llc_pct };

	for (int k = 0; k < w->pairs; k++) {
		int p = sim_add_proc(s, &pr), parent = rand_llc(s);
		int a = sim_add_thread(s, SIM_PAIR, p), b = sim_add_thread(s, SIM_PAIR, p);

		s->t[a].partner = b;
		s->t[b].partner = a;
		s->t[a].sampled = s->t[b].sampled = true;
		s->t[a].left_ns = 6 * (int64_t)NSEC_PER_MSEC;
		s->t[b].left_ns = 3 * (int64_t)NSEC_PER_MSEC;
		if (w->wide) {
			s->t[a].side_every = 1;
			s->t[a].wf.flips = 512;
			s->t[b].side_every = 16;
			s->t[b].wf.flips = 32;
		}
		sim_fork(s, a, parent);
		sim_fork(s, b, parent);
	}
}

/*
 * One latency process (lat_nice -10): its message thread on LLC 0's first CPU wakes
 * each worker for a 1 ms request after a think time; batch hogs (+10) forked beside.
 * Each worker last ran on a CPU of LLC 0 drawn from the seed: with no idle CPU there a
 * wakeup goes to that CPU, and workers that share one queue behind each other, in
 * every column alike.
 */
static void latency_setup(struct sim *s, const struct pwork *w)
{
	struct sim_proc pr = latency_proc, bp = batch_proc;
	int p;

	bp.ws_kb = (uint64_t)(w->hog_ws_mb ? w->hog_ws_mb : BATCH_WS_MB) * 1024;
	pr.disp_cpu = cpumask_first(&s->topo->llcs[0].cpus);
	p = sim_add_proc(s, &pr);
	for (int k = 0; k < w->workers; k++) {
		int i = sim_add_thread(s, SIM_REQ, p);

		s->t[i].alive = true;
		s->t[i].sampled = true;
		s->t[i].lat_nice = -10;
		s->t[i].cpu = sim_nth_cpu(&s->topo->llcs[0].cpus, (int)(sim_rand(s) % 64));
		s->t[i].wake_ms = 1 + sim_rand(s) % (uint64_t)pr.think_ms;
	}
	for (int k = 0; k < w->hogs; k++) {
		int i = sim_add_thread(s, SIM_HOG, sim_add_proc(s, &bp));

		s->t[i].lat_nice = 10;
		sim_fork(s, i, rand_llc(s));
	}
	s->lat_preempt = w->preempt;
}

/* One run's figures. */
struct prun {
	struct sim_stats st;
	double work_s, batch_s;   /* progress, all and the batch tasks', CPU-s at full speed */
	double p50_us, p99_us;    /* the sampled tasks' wakeup latency; 0 without samples */
	size_t nlat;
	double over_pct;          /* of the modelled threads' run time, in an overflowing LLC */
};

static double percentile_us(uint64_t *ns, size_t n, int pct)
{
	size_t k = (n * (size_t)pct + 99) / 100;

	return n ? (double)ns[k ? k - 1 : 0] / 1000.0 : 0;
}

/* One placement scenario under one column with one seed. Returns 0, or 1 if broken. */
static int run_place(const struct pscen *sc, const struct topo *t, enum pcol col, uint64_t seed,
		     const struct opts *o, struct prun *ret)
{
	const struct pcol_def *d = &pcols[col];
	double secs = PLACE_SECONDS * o->seconds_scale;
	uint64_t end = (uint64_t)((secs < 2 ? 2 : secs) * 1000);
	struct sim s;
	int broke = 0;

	if (sim_init(&s, t, d->daemon ? SIM_RQB : SIM_NONE, seed) < 0)
		abort();
	s.conf.keep_pairs = d->keep_pairs;
	s.conf.keep_together = d->keep_together;
	s.conf.latency_apart = d->latency_apart;
	s.lb_spare = !o->util_lb;
	threads_setup(&s, &sc->w);
	pairs2_setup(&s, &sc->w);
	if (sc->w.workers || sc->w.hogs)
		latency_setup(&s, &sc->w);
	while (s.now_ms < end && !broke) {
		const char *why;

		sim_step(&s);
		if (o->check && (why = sim_invariants(&s))) {
			fprintf(stderr, "sim: %s/%s at %" PRIu64 " ms: %s\n", sc->name, d->name,
				s.now_ms, why);
			broke = 1;
		}
	}
	memset(ret, 0, sizeof(*ret));
	ret->st = s.st;
	ret->work_s = (double)s.st.work_ns / 1e9;
	ret->batch_s = (double)s.st.batch_ns / 1e9;
	ret->nlat = s.lat.n;
	if (s.lat.n)
		qsort(s.lat.ns, s.lat.n, sizeof(*s.lat.ns), cmp_u64);
	ret->p50_us = percentile_us(s.lat.ns, s.lat.n, 50);
	ret->p99_us = percentile_us(s.lat.ns, s.lat.n, 99);
	ret->over_pct = s.st.proc_ms ? 100.0 * (double)s.st.over_ms / (double)s.st.proc_ms : 0;
	sim_fini(&s);
	return broke;
}

/* A figure over the seeds: mean, lowest, highest. */
struct spread3 {
	double sum, lo, hi;
	int n;
};

static void add3(struct spread3 *a, double v)
{
	a->lo = !a->n || v < a->lo ? v : a->lo;
	a->hi = !a->n || v > a->hi ? v : a->hi;
	a->sum += v;
	a->n++;
}

static double mean3(const struct spread3 *a)
{
	return a->n ? a->sum / a->n : 0;
}

/* One column of one scenario over the seeds. */
struct pcell {
	struct spread3 work, batch, p50, p99, over;
	struct spread3 work_r, batch_r; /* per seed, over the kernel's with that seed */
	struct spread3 together, unheld, apart, latency, short_back;
};

static double over(double a, double b)
{
	return b > 0 ? a / b : 0;
}

static void add_run(struct pcell *c, const struct prun *r, const struct prun *kernel)
{
	add3(&c->work_r, over(r->work_s, kernel->work_s));
	add3(&c->batch_r, over(r->batch_s, kernel->batch_s));
	add3(&c->work, r->work_s);
	add3(&c->batch, r->batch_s);
	add3(&c->p50, r->p50_us);
	add3(&c->p99, r->p99_us);
	add3(&c->over, r->over_pct);
	add3(&c->together, (double)r->st.pins_together);
	add3(&c->unheld, (double)r->st.unpins_together);
	add3(&c->apart, (double)r->st.pins_apart);
	add3(&c->latency, (double)r->st.pins_latency);
	add3(&c->short_back, (double)r->st.unpins_short);
}

/* "mean [lowest–highest]" with prec decimals; the range where the seeds differ. */
static const char *fmt3(char *buf, size_t n, const struct spread3 *a, int prec)
{
	double unit = prec == 0 ? 1 : prec == 1 ? 0.1 : prec == 2 ? 0.01 : 0.001;
	int k = snprintf(buf, n, "%.*f", prec, mean3(a));

	if (a->n > 1 && a->hi - a->lo >= unit / 2)
		snprintf(buf + k, n - (size_t)k, " [%.*f–%.*f]", prec, a->lo, prec, a->hi);
	return buf;
}

static const char *const group_what[] = {
	"a. Shared-data threaded processes that fit an LLC",
	"b. Processes with more busy threads than an LLC has cores",
	"c. Working sets that do not fit: one larger than the LLC, or held processes that "
	"overflow one together",
	"d. Ping-pong pairs: two-thread processes that wake each other",
	"e. Latency workers (lat_nice -10, a 1 ms request every 5-15 ms) beside batch hogs "
	"(+10)",
};

static void place_header(FILE *f, char group)
{
	fprintf(f, "\n#### %s\n\n", group_what[group - 'a']);
	if (group <= 'c')
		fprintf(f, "| scenario | column | work (CPU-s) | vs kernel | together pins | "
			   "together releases | run in an overflowing LLC (%%) |\n"
			   "|---|---|---|---|---|---|---|\n");
	else if (group == 'd')
		fprintf(f, "| scenario | column | work (CPU-s) | vs kernel | wakeup p50 (µs) | "
			   "wakeup p99 (µs) | p99 vs kernel | together pins |\n"
			   "|---|---|---|---|---|---|---|---|\n");
	else
		fprintf(f, "| scenario | column | latency wakeup p50 (µs) | p99 (µs) | "
			   "p99 vs kernel | batch work (CPU-s) | vs kernel | latency pins | "
			   "batch pins | given back (short) | together pins |\n"
			   "|---|---|---|---|---|---|---|---|---|---|---|\n");
}

/*
 * A p99 over the kernel's, of the means over the seeds (one seed's p99 can be a
 * wakeup's bare cost, which makes its ratio say nothing); "–" where the kernel's is
 * under 10 µs.
 */
static const char *p99_ratio(char *buf, size_t n, const struct pcell *c,
			     const struct pcell *kernel)
{
	double r = mean3(&c->p99) / mean3(&kernel->p99);

	if (mean3(&kernel->p99) < 10)
		snprintf(buf, n, "–");
	else if (r < 0.01)
		snprintf(buf, n, "< 0.01");
	else
		snprintf(buf, n, "%.2f", r);
	return buf;
}

static void place_row(FILE *f, const struct pscen *sc, enum pcol col, const struct pcell *c,
		      const struct pcell *kernel)
{
	char a[64], b[64], d[64], e[64], g[64], h[64], k[64], x[64], y[64];

	fprintf(f, "| %s | %s | ", sc->name, pcols[col].name);
	if (sc->group <= 'c')
		fprintf(f, "%s | %s | %s | %s | %s |\n", fmt3(a, sizeof(a), &c->work, 1),
			fmt3(b, sizeof(b), &c->work_r, 3), fmt3(d, sizeof(d), &c->together, 0),
			fmt3(e, sizeof(e), &c->unheld, 0), fmt3(g, sizeof(g), &c->over, 0));
	else if (sc->group == 'd')
		fprintf(f, "%s | %s | %s | %s | %s | %s |\n", fmt3(a, sizeof(a), &c->work, 1),
			fmt3(b, sizeof(b), &c->work_r, 3), fmt3(d, sizeof(d), &c->p50, 0),
			fmt3(e, sizeof(e), &c->p99, 0), p99_ratio(g, sizeof(g), c, kernel),
			fmt3(h, sizeof(h), &c->together, 0));
	else
		fprintf(f, "%s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			fmt3(a, sizeof(a), &c->p50, 1), fmt3(b, sizeof(b), &c->p99, 0),
			p99_ratio(d, sizeof(d), c, kernel), fmt3(e, sizeof(e), &c->batch, 1),
			fmt3(g, sizeof(g), &c->batch_r, 3), fmt3(h, sizeof(h), &c->latency, 0),
			fmt3(k, sizeof(k), &c->apart, 0), fmt3(x, sizeof(x), &c->short_back, 0),
			fmt3(y, sizeof(y), &c->together, 0));
}

/* One scenario: every column it names, PLACE_SEEDS seeds each. */
static int place_scenario(const struct pscen *sc, const struct opts *o,
			  struct pcell cells[NPCOLS])
{
	struct topo *t = load_topo(sc->topo);
	int broke = 0;

	memset(cells, 0, NPCOLS * sizeof(*cells));
	for (int k = 0; k < PLACE_SEEDS; k++) {
		struct prun kernel, r;

		broke |= run_place(sc, t, COL_KERNEL, o->seed + (uint64_t)k, o, &kernel);
		add_run(&cells[COL_KERNEL], &kernel, &kernel);
		for (int col = COL_KERNEL + 1; col < NPCOLS; col++) {
			if (!(sc->cols & (1u << col)))
				continue;
			broke |= run_place(sc, t, (enum pcol)col, o->seed + (uint64_t)k, o, &r);
			add_run(&cells[col], &r, &kernel);
		}
	}
	topo_free(t);
	return broke;
}

/* What the goals hold the two rules to, from a scenario's cells. */
static void place_goals(struct goals *g, const struct pscen *sc, const struct pcell *c)
{
	const struct pcell *kt = &c[COL_TOGETHER], *sp = &c[COL_SPREAD];

	if (sc->group == 'a')
		goal(g, mean3(&kt->together) > 0,
		     "%s: keep_together holds the processes (%.0f pins)", sc->name,
		     mean3(&kt->together));
	if (sc->group == 'b' || !strncmp(sc->name, "ws-over", 7))
		goal(g, mean3(&kt->together) == 0 &&
			     mean3(&kt->work) < 1.02 * mean3(&sp->work) &&
			     mean3(&kt->work) > 0.98 * mean3(&sp->work),
		     "%s: keep_together holds nothing and changes work by less than 2 %% "
		     "(%.0f pins, %+.1f %%)", sc->name, mean3(&kt->together),
		     100 * (mean3(&kt->work) / mean3(&sp->work) - 1));
	if (sc->group == 'e' && strstr(sc->name, "short"))
		goal(g, mean3(&c[COL_APART].short_back) > 0,
		     "%s: latency_apart gives batch pins back when batch work is short of CPUs "
		     "(%.0f)", sc->name, mean3(&c[COL_APART].short_back));
}

/*
 * keep_together and latency_apart against the kernel alone and the spread policy with
 * both off, on the cache model: one table for each group of scenarios.
 */
static int run_placement(const struct opts *o, FILE *md, struct goals *g)
{
	int broke = 0;
	char group = 0;

	for (FILE *f = stdout; f; f = f == stdout ? md : NULL)
		fprintf(f, "\n### Placement: keep_together and latency_apart\n\nThe cache model "
			   "(bench/sim/README.md), %d s simulated, seeds %" PRIu64 " to %" PRIu64
			   ": each figure the mean, [lowest–highest] over the seeds where they "
			   "differ; work ratios per seed, against the kernel alone with the same "
			   "seed, p99 ratios of the means. 2x8: %s; 8x8: %s; 2x32: %s.\n",
			PLACE_SECONDS, o->seed, o->seed + PLACE_SEEDS - 1, TOPO_2X8, TOPO_8X8,
			TOPO_2X32);
	for (size_t k = 0; k < ARRAY_SIZE(pscens); k++) {
		const struct pscen *sc = &pscens[k];
		struct pcell cells[NPCOLS];

		broke |= place_scenario(sc, o, cells);
		for (FILE *f = stdout; f; f = f == stdout ? md : NULL) {
			if (sc->group != group)
				place_header(f, sc->group);
			for (int col = 0; col < NPCOLS; col++)
				if (col == COL_KERNEL || (sc->cols & (1u << col)))
					place_row(f, sc, (enum pcol)col, &cells[col],
						  &cells[COL_KERNEL]);
			fflush(f);
		}
		group = sc->group;
		place_goals(g, sc, cells);
	}
	if (md)
		fprintf(md, "\n");
	return broke;
}


/* ---- kinds: fast_cores on parts with two kinds of core ---- */

/*
 * Real parts' hwloc XMLs, from the tree's root: where the simulator runs, or three
 * levels above its program (build/bench/sim/sim), set in main().
 */
static char tree_root[1024];

#define XML_8P16E "tests/data/topo-hybrid-8p16e.xml"
#define XML_LP "tests/data/topo-hybrid-lp.xml"
#define XML_7950X3D "tests/data/topo-7950x3d.xml"
#define XML_9950X3D "tests/data/topo-9950x3d.xml"
/*
 * Two busy SMT siblings each keep this share of their speed: together 1.3 times one
 * thread alone, Intel's "up to 30 %" for Hyper-Threading (an assumption for these
 * workloads, and for Zen 4's SMT alike).
 */
#define KIND_SMT_PCT 65
/* A game thread's frame: 6 ms of work at the slowest kind's speed, then asleep a while. */
#define GAME_FRAME_US 6000
#define HOG_KIND_WS_MB 2

/* CPUs outside the fast set on every part of scenario f: 16 E-cores, or a CCD's 16. */
#define KIND_REST_CPUS 16

/* The columns of scenario f. */
enum kcol { KCOL_KERNEL, KCOL_SPREAD, KCOL_FAST, KCOL_PIN, NKCOLS };

static const char *const kcol_name[NKCOLS] = {
	[KCOL_KERNEL] = "kernel alone",
	[KCOL_SPREAD] = "spread only (rules off)",
	[KCOL_FAST] = "fast_cores on",
	[KCOL_PIN] = "pin all to fast (no daemon)",
};

struct kscen {
	const char *name;
	const char *xml;
	enum topo_x3d mode;       /* what amd_x3d_mode says on the simulated part */
	int game, hogs;           /* game threads (lat_nice -10), batch hogs (+10) */
	int think_ms;             /* a game thread sleeps 1 + think_ms/2 to 1 + 3/2 think_ms ms */
	int game_ws_mb, game_llc_pct; /* the game's working set and its share on the LLC */
};

static const struct kscen kscens[] = {
	{ "8p16e-game6-hogs12", XML_8P16E, TOPO_X3D_NONE, 6, 12, 2, 16, 20 },
	{ "8p16e-game6-hogs24", XML_8P16E, TOPO_X3D_NONE, 6, 24, 2, 16, 20 },
	{ "8p16e-game12-hogs8", XML_8P16E, TOPO_X3D_NONE, 12, 8, 0, 16, 20 },
	{ "8p16e-batch24", XML_8P16E, TOPO_X3D_NONE, 0, 24, 2, 16, 20 },
	{ "7950x3d-cache-game6-hogs12", XML_7950X3D, TOPO_X3D_CACHE, 6, 12, 2, 64, 40 },
	{ "7950x3d-freq-game6-hogs12", XML_7950X3D, TOPO_X3D_FREQUENCY, 6, 12, 2, 64, 40 },
	{ "7950x3d-freq-small-game6-hogs12", XML_7950X3D, TOPO_X3D_FREQUENCY, 6, 12, 2, 4, 20 },
	{ "7950x3d-cache-game12-hogs4", XML_7950X3D, TOPO_X3D_CACHE, 12, 4, 0, 64, 40 },
	{ "7950x3d-cache-batch24", XML_7950X3D, TOPO_X3D_CACHE, 0, 24, 2, 64, 40 },
};

static struct topo *load_xml(const char *xml, enum topo_x3d mode)
{
	struct topo *t = NULL;
	char path[2048];

	snprintf(path, sizeof(path), "%s%s", tree_root, xml);
	if (topo_load(&(struct topo_opts){ .xml = xml }, &t) < 0 &&
	    topo_load(&(struct topo_opts){ .xml = path }, &t) < 0) {
		fprintf(stderr, "sim: cannot load \"%s\" (run from the tree's root)\n", xml);
		exit(2);
	}
	t->x3d_mode = mode;
	return t;
}

/*
 * The game: one process of timer-paced threads at lat_nice -10, each last run on a CPU
 * drawn from the seed; the hogs (+10) forked beside it. With pin, the game pinned to
 * the fast CPUs from the start, as GameMode's pin_cores does, the hogs left alone.
 */
static void kinds_setup(struct sim *s, const struct kscen *sc, bool pin)
{
	struct sim_proc pr = { .ws_kb = (uint64_t)sc->game_ws_mb * 1024, .shared_pct = 50,
			       .llc_pct = sc->game_llc_pct, .think_ms = sc->think_ms,
			       .burst_us = GAME_FRAME_US, .disp_cpu = -1 };
	struct sim_proc bp = batch_proc;
	cpu_set_t fast;
	int p = sim_add_proc(s, &pr);

	place_fast_cpus(s->topo, &fast);
	bp.ws_kb = HOG_KIND_WS_MB * 1024;
	for (int k = 0; k < sc->game; k++) {
		int i = sim_add_thread(s, SIM_REQ, p);
		struct sim_task *t = &s->t[i];

		t->alive = t->sampled = true;
		t->lat_nice = -10;
		t->cpu = sim_nth_cpu(&s->topo->online, (int)(sim_rand(s) % 64));
		t->wake_ms = 1 + sim_rand(s) % (uint64_t)(sc->think_ms + 4);
		if (pin && CPU_COUNT(&fast))
			t->allowed = t->orig = fast;
	}
	for (int k = 0; k < sc->hogs; k++) {
		int i = sim_add_thread(s, SIM_HOG, sim_add_proc(s, &bp));

		s->t[i].lat_nice = 10;
		sim_fork(s, i, rand_llc(s));
	}
}

struct krun {
	struct sim_stats st;
	double batch_s, game_s;   /* progress, CPU-s on the slowest kind */
	double wake50_us, wake99_us, frame50_ms, frame99_ms;
};

static int run_kinds(const struct kscen *sc, const struct topo *t, enum kcol col, uint64_t seed,
		     const struct opts *o, struct krun *ret)
{
	double secs = PLACE_SECONDS * o->seconds_scale;
	uint64_t end = (uint64_t)((secs < 2 ? 2 : secs) * 1000);
	bool daemon = col == KCOL_SPREAD || col == KCOL_FAST;
	struct sim s;
	int broke = 0;

	if (sim_init(&s, t, daemon ? SIM_RQB : SIM_NONE, seed) < 0)
		abort();
	s.conf.fast_cores = col == KCOL_FAST;
	s.lb_spare = true;
	s.kinds = true;
	s.smt_pct = KIND_SMT_PCT;
	kinds_setup(&s, sc, col == KCOL_PIN);
	while (s.now_ms < end && !broke) {
		const char *why;

		sim_step(&s);
		if (o->check && (why = sim_invariants(&s))) {
			fprintf(stderr, "sim: %s/%s at %" PRIu64 " ms: %s\n", sc->name,
				kcol_name[col], s.now_ms, why);
			broke = 1;
		}
	}
	memset(ret, 0, sizeof(*ret));
	ret->st = s.st;
	ret->batch_s = (double)s.st.batch_ns / 1e9;
	ret->game_s = (double)(s.st.work_ns - s.st.batch_ns) / 1e9;
	/* No game, no samples: qsort may not be given the NULL of an empty list. */
	if (s.lat.n)
		qsort(s.lat.ns, s.lat.n, sizeof(*s.lat.ns), cmp_u64);
	if (s.frame.n)
		qsort(s.frame.ns, s.frame.n, sizeof(*s.frame.ns), cmp_u64);
	ret->wake50_us = percentile_us(s.lat.ns, s.lat.n, 50);
	ret->wake99_us = percentile_us(s.lat.ns, s.lat.n, 99);
	ret->frame50_ms = percentile_us(s.frame.ns, s.frame.n, 50) / 1000;
	ret->frame99_ms = percentile_us(s.frame.ns, s.frame.n, 99) / 1000;
	sim_fini(&s);
	return broke;
}

struct kcell {
	struct spread3 wake50, wake99, frame50, frame99, frames, game, batch, batch_r;
	struct spread3 fast, off_fast, crowded, short_back, asym;
};

static void kadd(struct kcell *c, const struct krun *r, const struct krun *kernel, double secs)
{
	add3(&c->wake50, r->wake50_us);
	add3(&c->wake99, r->wake99_us);
	add3(&c->frame50, r->frame50_ms);
	add3(&c->frame99, r->frame99_ms);
	add3(&c->frames, (double)r->st.bursts / secs);
	add3(&c->game, r->game_s);
	add3(&c->batch, r->batch_s);
	add3(&c->batch_r, over(r->batch_s, kernel->batch_s));
	add3(&c->fast, (double)r->st.pins_fast);
	add3(&c->off_fast, (double)r->st.pins_off_fast);
	add3(&c->crowded, (double)r->st.unpins_crowded);
	add3(&c->short_back, (double)r->st.unpins_short);
	add3(&c->asym, (double)r->st.asym_pulls / secs);
}

static int kinds_scenario(const struct kscen *sc, const struct opts *o, struct kcell cells[NKCOLS])
{
	struct topo *t = load_xml(sc->xml, sc->mode);
	double secs = PLACE_SECONDS * o->seconds_scale;
	int broke = 0;

	secs = secs < 2 ? 2 : secs;
	memset(cells, 0, NKCOLS * sizeof(*cells));
	for (int k = 0; k < PLACE_SEEDS; k++) {
		struct krun kernel, r;

		broke |= run_kinds(sc, t, KCOL_KERNEL, o->seed + (uint64_t)k, o, &kernel);
		kadd(&cells[KCOL_KERNEL], &kernel, &kernel, secs);
		for (int col = KCOL_KERNEL + 1; col < NKCOLS; col++) {
			if (col == KCOL_PIN && !sc->game)
				continue;
			broke |= run_kinds(sc, t, (enum kcol)col, o->seed + (uint64_t)k, o, &r);
			kadd(&cells[col], &r, &kernel, secs);
		}
	}
	topo_free(t);
	return broke;
}

static void kinds_row(FILE *f, const struct kscen *sc, enum kcol col, const struct kcell *c)
{
	char b[14][64];

	fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s / %s | %s / %s | %s |\n",
		sc->name, kcol_name[col], fmt3(b[0], 64, &c->wake50, 1),
		fmt3(b[1], 64, &c->wake99, 0), fmt3(b[2], 64, &c->frame50, 2),
		fmt3(b[3], 64, &c->frame99, 2), fmt3(b[4], 64, &c->frames, 0),
		fmt3(b[5], 64, &c->batch, 1), fmt3(b[6], 64, &c->batch_r, 3),
		fmt3(b[7], 64, &c->fast, 0), fmt3(b[8], 64, &c->off_fast, 0),
		fmt3(b[9], 64, &c->crowded, 0), fmt3(b[10], 64, &c->short_back, 0),
		fmt3(b[11], 64, &c->asym, 0));
}

/* The speeds the model gives each part's kinds, for the table's heading. */
static void kinds_speeds(FILE *f)
{
	static const char *const xmls[] = { XML_8P16E, XML_LP, XML_7950X3D, XML_9950X3D };

	for (size_t k = 0; k < ARRAY_SIZE(xmls); k++) {
		struct topo *t = load_xml(xmls[k], TOPO_X3D_NONE);

		fprintf(f, "%s%s:", k ? "; " : "Speeds: ", xmls[k] + strlen("tests/data/topo-"));
		for (int j = 0; j < t->nkinds; j++)
			fprintf(f, "%s%u MHz %.3f", j ? ", " : " ", t->kinds[j].max_mhz,
				sim_core_speed(t, cpumask_first(&t->kinds[j].cpus)));
		topo_free(t);
	}
	fprintf(f, ".\n");
}

/*
 * What fast_cores is held to: nothing pinned and nothing changed without latency
 * work; where the game has more busy threads than fast cores, no pin kept and no
 * fewer frames than the naive pin; where it fits, shorter frames than the kernel's.
 */
static void kinds_goals(struct goals *g, const struct kscen *sc, const struct kcell *c)
{
	const struct kcell *k = &c[KCOL_KERNEL], *f = &c[KCOL_FAST], *p = &c[KCOL_PIN];

	if (!sc->game)
		goal(g, mean3(&f->fast) + mean3(&f->off_fast) == 0 &&
			     mean3(&f->batch) == mean3(&k->batch),
		     "%s: fast_cores pins nothing and costs nothing without latency work "
		     "(%.0f pins, batch %.1f vs %.1f CPU-s)", sc->name,
		     mean3(&f->fast) + mean3(&f->off_fast), mean3(&f->batch), mean3(&k->batch));
	else if (sc->game > 8) /* more than either part's 8 fast cores */
		goal(g, mean3(&f->fast) == mean3(&f->crowded) &&
			     mean3(&f->frames) >= mean3(&p->frames),
		     "%s: fast_cores keeps no game pin when crowded (%.0f made, %.0f given back) "
		     "and loses no frames to the naive pin (%.0f vs %.0f/s)", sc->name,
		     mean3(&f->fast), mean3(&f->crowded), mean3(&f->frames), mean3(&p->frames));
	else if (sc->hogs > KIND_REST_CPUS)
		goal(g, mean3(&f->short_back) > 0 && mean3(&f->batch_r) > 0.95,
		     "%s: with more hogs than other CPUs fast_cores gives the batch pins back "
		     "(%.0f) and costs the batch under 5 %% (%.3f)", sc->name,
		     mean3(&f->short_back), mean3(&f->batch_r));
	else
		goal(g, mean3(&f->frame50) < mean3(&k->frame50),
		     "%s: fast_cores shortens the median frame (%.2f vs %.2f ms)", sc->name,
		     mean3(&f->frame50), mean3(&k->frame50));
}

/* fast_cores against the kernel alone, spread alone and a naive pin: one table. */
static int run_kinds_all(const struct opts *o, FILE *md, struct goals *g)
{
	int broke = 0;

	for (FILE *f = stdout; f; f = f == stdout ? md : NULL) {
		fprintf(f, "\n### f. Latency work on the fast cores (fast_cores)\n\n%d s simulated, "
			   "seeds %" PRIu64 " to %" PRIu64 ", mean [lowest–highest]. Game: "
			   "timer-paced threads at lat_nice -10, each a %d ms frame of work on the "
			   "slowest kind then 2-4 ms asleep (1 ms where more game threads than fast "
			   "cores); hogs: +10, %d MiB each. SMT siblings "
			   "both busy keep %d %% each. ",
			PLACE_SECONDS, o->seed, o->seed + PLACE_SEEDS - 1, GAME_FRAME_US / 1000,
			HOG_KIND_WS_MB, KIND_SMT_PCT);
		kinds_speeds(f);
		fprintf(f, "\n| scenario | column | wakeup p50 (µs) | wakeup p99 (µs) | frame p50 "
			   "(ms) | frame p99 (ms) | frames/s | batch work (CPU-s) | batch vs kernel | "
			   "pins fast / off_fast | given back crowded / short | asym pulls/s |\n"
			   "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
	}
	for (size_t k = 0; k < ARRAY_SIZE(kscens); k++) {
		const struct kscen *sc = &kscens[k];
		struct kcell cells[NKCOLS];

		broke |= kinds_scenario(sc, o, cells);
		for (FILE *f = stdout; f; f = f == stdout ? md : NULL) {
			for (int col = 0; col < NKCOLS; col++)
				if (col != KCOL_PIN || sc->game)
					kinds_row(f, sc, (enum kcol)col, &cells[col]);
			fflush(f);
		}
		kinds_goals(g, sc, cells);
	}
	return broke;
}

static int run_all(const struct opts *o)
{
	struct goals g = { 0 };
	FILE *md = NULL;
	int broke = 0;

	if (o->out) {
		char path[1024];

		mkdir(o->out, 0755);
		snprintf(path, sizeof(path), "%s/results.md", o->out);
		md = fopen(path, "w");
		if (!md) {
			fprintf(stderr, "sim: cannot write %s: %s\n", path, strerror(errno));
			return 1;
		}
		fprintf(md, "## Simulator results\n\nWritten by `make bench-sim` "
			    "(`bench/sim/sim --out bench/sim/out`). The second table of each "
			    "scenario splits the wasted idle: (a) across LLCs while the last tick "
			    "saw no imbalance, (b) across LLCs after a tick saw one, (c) within an "
			    "LLC. The floor, (a) + (c), is what a balancer acting on what its ticks "
			    "see cannot win back; \"above the floor\" compares (b) with the "
			    "puller's. See bench/sim/README.md.\n");
		g.md = md;
	}
	for (size_t k = 0; k < ARRAY_SIZE(scenarios) && !o->placement && !o->kinds; k++)
		broke |= run_scenario(&scenarios[k], o, md, &g);
	if (!o->placement && !o->kinds)
		broke |= run_pairs_sweep(o, md);
	if (!o->kinds)
		broke |= run_placement(o, md, &g);
	if (!o->placement)
		broke |= run_kinds_all(o, md, &g);
	if (!o->placement && !o->kinds)
		run_scaling(md, &g, o->seed);
	printf("\ngoals: %d met, %d failed\n", g.ok, g.failed);
	if (md)
		fprintf(md, "\nGoals: %d met, %d failed.\n", g.ok, g.failed);
	if (md)
		fclose(md);
	return broke ? 1 : 0;
}

struct tally {
	int pass, fail;
};

static void check(struct tally *ty, bool ok, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void check(struct tally *ty, bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("%s ", ok ? "PASS" : "FAIL");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	ok ? ty->pass++ : ty->fail++;
}

/* One run's own checks: invariants held, the waste split adds up, wake_wide as set up. */
static void check_run(struct tally *ty, const struct scenario *sc, const struct row *r,
		      int broke)
{
	const struct sim_stats *st = &r->st;

	check(ty, !broke, "%s/%s: tasks conserved, each on an allowed CPU", sc->name, r->balancer);
	check(ty, st->wasted_unseen_ms + st->wasted_seen_ms + st->wasted_local_ms == st->wasted_ms,
	      "%s/%s: wasted idle splits into (a), (b) and (c) without remainder", sc->name,
	      r->balancer);
	check(ty, sc->wide ? st->wide_wakes * 2 > st->wakes : st->wide_wakes == 0,
	      "%s/%s: wake_wide() places %s wakeups wide (%" PRIu64 " of %" PRIu64 ")", sc->name,
	      r->balancer, sc->wide ? "most" : "no", st->wide_wakes, st->wakes);
}

/* The same seed gives the same figures, another seed others. */
static void check_seed(struct tally *ty, const struct scenario *sc, const struct opts *base)
{
	struct topo *t = load_topo(sc->topo);
	struct opts o = *base;
	struct row a, b;

	run(sc, t, SIM_RQB, false, &o, &a);
	run(sc, t, SIM_RQB, false, &o, &b);
	check(ty, memcmp(&a.st, &b.st, sizeof(a.st)) == 0,
	      "%s/rqbalance: the same seed gives the same figures", sc->name);
	o.seed++;
	run(sc, t, SIM_RQB, false, &o, &b);
	check(ty, memcmp(&a.st, &b.st, sizeof(a.st)) != 0,
	      "%s/rqbalance: another seed gives other figures", sc->name);
	topo_free(t);
}

/* ---- the placement scenarios' own tests ---- */

static const struct pscen *find_pscen(const char *name)
{
	for (size_t k = 0; k < ARRAY_SIZE(pscens); k++)
		if (!strcmp(pscens[k].name, name))
			return &pscens[k];
	abort(); /* a test names a scenario that is not there */
}

/* One run of a named scenario under col, invariants checked every ms. */
static int place_once(const char *name, enum pcol col, uint64_t seed, const struct opts *o,
		      struct prun *ret)
{
	const struct pscen *sc = find_pscen(name);
	struct topo *t = load_topo(sc->topo);
	int broke = run_place(sc, t, col, seed, o, ret);

	topo_free(t);
	return broke;
}

static bool near(double a, double b)
{
	return a > b * 0.999 && a < b * 1.001;
}

/* The cache model's functions give the figures they stand for. */
static void check_costs(struct tally *ty)
{
	double r = 2217.0 / 596.0;

	check(ty, sim_wake_cost_ns(false) == 596 && sim_wake_cost_ns(true) == 2217,
	      "cache model: a wakeup costs 596 ns from the local LLC, 2217 ns from another");
	check(ty, sim_warm_ns(4096) > 400000 && sim_warm_ns(4096) < 440000,
	      "cache model: refilling 4 MiB takes about 0.42 ms (%" PRIu64 " ns)",
	      sim_warm_ns(4096));
	check(ty, sim_slowdown(20, 50, 0, 0) == 1.0 && near(sim_slowdown(100, 100, 1, 0), r) &&
		      near(sim_slowdown(100, 0, 0, 1), r),
	      "cache model: local data at full speed; every access remote or missed, %.2f x", r);
	check(ty, near(sim_slowdown(20, 50, 1, 0), 1 + 0.2 * 0.5 * (r - 1)) &&
		      near(sim_slowdown(20, 50, 1, 1), sim_slowdown(20, 100, 1, 0)),
	      "cache model: a remote share adds its part; remote and missed count once");
}

/*
 * The rules act where they should and not where they should not, the model gives
 * the gain and the loss it was built for, every run keeps the invariants, and a seed
 * gives the same figures twice.
 */
static void check_place(struct tally *ty, const struct opts *base)
{
	struct opts o = *base;
	struct prun k, t, a, b;
	int broke = 0;

	o.seconds_scale = 0.3;
	check_costs(ty);
	broke |= place_once("fit-2x8", COL_KERNEL, o.seed, &o, &k);
	broke |= place_once("fit-2x8", COL_TOGETHER, o.seed, &o, &t);
	check(ty, t.st.pins_together > 0 && t.work_s > k.work_s,
	      "fit-2x8: keep_together holds (%" PRIu64 " pins) and gains work (%.1f vs %.1f)",
	      t.st.pins_together, t.work_s, k.work_s);
	broke |= place_once("many-threads-2x8", COL_TOGETHER, o.seed, &o, &t);
	check(ty, t.st.pins_together == 0,
	      "many-threads-2x8: keep_together holds no process of more threads than cores");
	broke |= place_once("ws-over-llc-2x8", COL_TOGETHER, o.seed, &o, &t);
	check(ty, t.st.pins_together == 0,
	      "ws-over-llc-2x8: keep_together holds no process whose RSS exceeds the LLC");
	broke |= place_once("overflow-2x8", COL_KERNEL, o.seed, &o, &k);
	broke |= place_once("overflow-2x8", COL_TOGETHER, o.seed, &o, &t);
	check(ty, t.work_s < k.work_s && t.over_pct > 0 && k.over_pct == 0,
	      "overflow-2x8: held processes overflow their LLC and lose (%.1f vs %.1f)",
	      t.work_s, k.work_s);
	broke |= place_once("latency-fit-8x8", COL_APART, o.seed, &o, &a);
	check(ty, a.st.pins_apart > 0 && a.st.pins_latency > 0 && a.st.unpins_short == 0,
	      "latency-fit-8x8: latency_apart pins batch off and latency on, keeps them");
	broke |= place_once("latency-short-2x8", COL_APART, o.seed, &o, &a);
	check(ty, a.st.unpins_short > 0,
	      "latency-short-2x8: latency_apart gives batch pins back when short of CPUs");
	broke |= place_once("latency-fit-8x8", COL_KERNEL, o.seed, &o, &k);
	check(ty, k.st.pins_apart == 0 && k.nlat > 0, "latency-fit-8x8: no daemon, no pins");
	for (size_t s = 0; s < ARRAY_SIZE(pscens); s++)
		for (int col = 0; col < NPCOLS; col++)
			if (col == COL_KERNEL || (pscens[s].cols & (1u << col)))
				broke |= place_once(pscens[s].name, (enum pcol)col, o.seed, &o, &t);
	check(ty, !broke, "placement scenarios: tasks conserved, each on an allowed CPU");
	place_once("latency-short-8x8", COL_BOTH, o.seed, &o, &a);
	place_once("latency-short-8x8", COL_BOTH, o.seed, &o, &b);
	check(ty, !memcmp(&a.st, &b.st, sizeof(a.st)) && a.p99_us == b.p99_us,
	      "latency-short-8x8/both: the same seed gives the same figures");
	place_once("latency-short-8x8", COL_BOTH, o.seed + 1, &o, &b);
	check(ty, memcmp(&a.st, &b.st, sizeof(a.st)) != 0,
	      "latency-short-8x8/both: another seed gives other figures");
}

/* ---- kinds of core: the speeds and fast_cores's own tests ---- */

/* CPU cpu of the part in xml runs at mhz / lo_mhz. */
static bool speed_is(const char *xml, int cpu, double mhz, double lo_mhz)
{
	struct topo *t = load_xml(xml, TOPO_X3D_NONE);
	bool ok = near(sim_core_speed(t, cpu), mhz / lo_mhz);

	topo_free(t);
	return ok;
}

static void check_speeds(struct tally *ty)
{
	struct topo *t = load_topo(TOPO_2X8);
	bool one = true;

	for (int c = 0; c < t->nr_cpu_ids; c++)
		one &= sim_core_speed(t, c) == 1.0;
	topo_free(t);
	check(ty, one, "kinds: a machine of one kind runs at speed 1 on every CPU");
	check(ty, speed_is(XML_8P16E, 0, 5800, 4300) && speed_is(XML_8P16E, 15, 5800, 4300) &&
		      speed_is(XML_8P16E, 16, 4300, 4300),
	      "kinds: i9-13900K P-cores 5800/4300 = 1.349 of an E-core, E-cores 1");
	check(ty, speed_is(XML_LP, 0, 4800, 2500) && speed_is(XML_LP, 12, 3800, 2500) &&
		      speed_is(XML_LP, 20, 2500, 2500),
	      "kinds: Core Ultra 7 155H P 1.92, E 1.52, low-power E 1");
	check(ty, speed_is(XML_7950X3D, 8, 5700, 5250) && speed_is(XML_7950X3D, 0, 5250, 5250) &&
		      speed_is(XML_9950X3D, 24, 5700, 5450) && speed_is(XML_9950X3D, 16, 5450, 5450),
	      "kinds: the X3D parts' frequency CCD 1.086 (7950X3D) and 1.046 (9950X3D), "
	      "the V-cache CCD 1");
	check(ty, sim_core_time(1.0, 20, 1.37) == 1.37 && near(sim_core_time(2.0, 0, 1.0), 0.5) &&
		      near(sim_core_time(2.0, 40, 1.5), 1.5 - 0.6 * 0.5),
	      "kinds: a faster core shortens the work off the cache only; speed 1 changes "
	      "nothing");
}

static int kinds_once(const char *name, enum kcol col, const struct opts *o, struct krun *ret)
{
	const struct kscen *sc = NULL;
	struct topo *t;
	int broke;

	for (size_t k = 0; k < ARRAY_SIZE(kscens); k++)
		if (!strcmp(kscens[k].name, name))
			sc = &kscens[k];
	if (!sc)
		abort(); /* a test names a scenario that is not there */
	t = load_xml(sc->xml, sc->mode);
	broke = run_kinds(sc, t, col, o->seed, o, ret);
	topo_free(t);
	return broke;
}

static void check_kinds(struct tally *ty, const struct opts *base)
{
	struct opts o = *base;
	struct krun k, f, p;
	int broke = 0;

	o.seconds_scale = 0.3;
	check_speeds(ty);
	broke |= kinds_once("8p16e-game6-hogs12", KCOL_KERNEL, &o, &k);
	broke |= kinds_once("8p16e-game6-hogs12", KCOL_FAST, &o, &f);
	check(ty, f.st.pins_fast == 6 && f.st.pins_off_fast > 0 && f.frame50_ms < k.frame50_ms &&
		      k.st.asym_pulls > 0,
	      "8p16e-game6-hogs12: fast_cores pins the 6 game threads on, hogs off, and "
	      "shortens frames (%.2f vs %.2f ms); the kernel packs toward the P-cores",
	      f.frame50_ms, k.frame50_ms);
	broke |= kinds_once("8p16e-game12-hogs8", KCOL_KERNEL, &o, &k);
	broke |= kinds_once("8p16e-game12-hogs8", KCOL_FAST, &o, &f);
	broke |= kinds_once("8p16e-game12-hogs8", KCOL_PIN, &o, &p);
	check(ty, f.st.pins_fast == f.st.unpins_crowded && p.st.bursts < k.st.bursts,
	      "8p16e-game12-hogs8: fast_cores gives back every game pin (crowded), the "
	      "naive pin loses frames (%" PRIu64 " vs %" PRIu64 ")", p.st.bursts, k.st.bursts);
	broke |= kinds_once("7950x3d-cache-batch24", KCOL_KERNEL, &o, &k);
	broke |= kinds_once("7950x3d-cache-batch24", KCOL_FAST, &o, &f);
	check(ty, f.st.moves == 0 && f.st.batch_ns == k.st.batch_ns,
	      "7950x3d-cache-batch24: without latency work fast_cores moves nothing");
	for (size_t s = 0; s < ARRAY_SIZE(kscens); s++)
		for (int col = 0; col < NKCOLS; col++)
			broke |= kinds_once(kscens[s].name, (enum kcol)col, &o, &f);
	check(ty, !broke, "kinds scenarios: tasks conserved, each on an allowed CPU");
}

/*
 * The simulator's own tests: every scenario under every balancer with the invariants
 * checked each millisecond, the waste split and wake_wide checked per run, and the
 * seeded scenarios repeated with the same seed and another.
 */
static int check_all(const struct opts *base)
{
	struct opts o = *base;
	struct tally ty = { 0 };

	o.out = NULL;
	o.seconds_scale = 0.2;
	for (size_t k = 0; k < ARRAY_SIZE(scenarios); k++) {
		struct topo *t = load_topo(scenarios[k].topo);

		for (size_t bi = 0; bi < ARRAY_SIZE(order); bi++) {
			struct row r;
			int broke = run(&scenarios[k], t, order[bi], order[bi] == SIM_RQB, &o, &r);

			check_run(&ty, &scenarios[k], &r, broke);
		}
		topo_free(t);
	}
	/* requests draws think and burst times from the seed, pairs their burst lengths. */
	for (size_t k = 0; k < ARRAY_SIZE(scenarios); k++)
		if (!strcmp(scenarios[k].name, "requests") || !strcmp(scenarios[k].name, "wide-high"))
			check_seed(&ty, &scenarios[k], &o);
	check_place(&ty, &o);
	check_kinds(&ty, &o);
	printf("%d passed, %d failed\n", ty.pass, ty.fail);
	return ty.fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' }, { "out", required_argument, NULL, 'o' },
		{ "quick", no_argument, NULL, 'q' },      { "check", no_argument, NULL, 'c' },
		{ "placement", no_argument, NULL, 'p' },  { "util-lb", no_argument, NULL, 'u' },
		{ "kinds", no_argument, NULL, 'k' },      { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct opts o = { .seed = 1, .seconds_scale = 1.0 };
	const char *slash = strrchr(argv[0], '/');
	int ch;

	/* The program's directory, up to the tree's root: build/bench/sim/sim */
	snprintf(tree_root, sizeof(tree_root), "%.*s%s../../../", slash ? (int)(slash - argv[0]) : 0,
		 argv[0], slash ? "/" : "");

	while ((ch = getopt_long(argc, argv, "h", lo, NULL)) != -1) {
		switch (ch) {
		case 's':
			o.seed = strtoull(optarg, NULL, 0);
			break;
		case 'o':
			o.out = optarg;
			break;
		case 'q':
			o.seconds_scale = 0.1;
			break;
		case 'c':
			o.check = true;
			break;
		case 'p':
			o.placement = true;
			break;
		case 'u':
			o.util_lb = true;
			break;
		case 'k':
			o.kinds = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	return o.check ? check_all(&o) : run_all(&o);
}
