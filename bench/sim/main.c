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
		s->t[a].left_ms = 6;
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

static int cmp_unsigned(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	return (x > y) - (x < y);
}

/* Fairness: the mean work of the tenth of the tasks that progressed least, over the mean. */
static double slowest_tenth(const struct sim *s)
{
	unsigned *w = malloc((size_t)(s->nt ? s->nt : 1) * sizeof(*w));
	double all = 0, low = 0;
	int n = 0, k;

	if (!w)
		abort();
	for (int i = 0; i < s->nt; i++)
		if (s->t[i].alive || s->t[i].cpu >= 0) /* it arrived */
			w[n++] = s->t[i].work_ms;
	qsort(w, (size_t)n, sizeof(*w), cmp_unsigned);
	k = (n + 9) / 10;
	for (int i = 0; i < n; i++) {
		all += w[i];
		low += i < k ? w[i] : 0;
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
		st->work_ms / 1000.0, r->slow_tenth, (double)st->bursts / r->seconds, r->decide_us);
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
		"Usage: sim [--seed N] [--out DIR] [--quick] [--check]\n"
		"Simulates many-LLC machines with the kernel's own placement (a simple model)\n"
		"under three balancers: none, a utilization puller, and rqbalance's policy.\n"
		"  --seed N   random seed (default 1); the same seed gives the same figures\n"
		"  --out DIR  write results.md and one SVG plot per run into DIR\n"
		"  --quick    runs a tenth as long\n"
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
	for (size_t k = 0; k < ARRAY_SIZE(scenarios); k++)
		broke |= run_scenario(&scenarios[k], o, md, &g);
	broke |= run_pairs_sweep(o, md);
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
	printf("%d passed, %d failed\n", ty.pass, ty.fail);
	return ty.fail ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "seed", required_argument, NULL, 's' }, { "out", required_argument, NULL, 'o' },
		{ "quick", no_argument, NULL, 'q' },      { "check", no_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },       { NULL, 0, NULL, 0 },
	};
	struct opts o = { .seed = 1, .seconds_scale = 1.0 };
	int ch;

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
