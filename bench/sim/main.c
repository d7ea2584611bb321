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

#include "cpumask.h"
#include "plot.h"
#include "rqbalance.h"
#include "sim.h"

#define DEFAULT_TOPO "package:2 l3cache:4 core:4 pu:2"  /* 64 CPUs, 8 LLCs */
#define BIG_TOPO "package:2 l3cache:16 core:8 pu:2"     /* 512 CPUs, 32 LLCs */

struct scenario {
	const char *name;
	const char *what;
	const char *topo;
	int seconds;
	void (*setup)(struct sim *s);
	void (*each_ms)(struct sim *s);
};

/* ---- workloads ---- */

static int cpus_per_llc0(const struct sim *s)
{
	return s->topo->llcs[0].ncpus;
}

/* Waves of 2 x |LLC 0| CPU-bound tasks forked on LLC 0 every 2 s, each living 1.5 s. */
static void arrivals_setup(struct sim *s)
{
	int wave = 2 * cpus_per_llc0(s);

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
static void requests_setup(struct sim *s)
{
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

/* Pairs that wake each other, started on LLC 0: npairs of them. */
static void pairs_setup_n(struct sim *s, int npairs)
{
	for (int k = 0; k < npairs; k++) {
		int a = sim_add(s, SIM_PAIR), b = sim_add(s, SIM_PAIR);

		s->t[a].partner = b;
		s->t[b].partner = a;
		s->t[b].alive = true;
		s->t[b].cpu = cpumask_first(&s->topo->llcs[0].cpus);
		s->t[a].left_ms = 6;
		sim_arrive(s, a, 0);
	}
}

static void pairs_low_setup(struct sim *s)
{
	pairs_setup_n(s, s->topo->ncpus / 8);
}

static void pairs_high_setup(struct sim *s)
{
	pairs_setup_n(s, s->topo->ncpus);
}

static const struct scenario scenarios[] = {
	{ "arrivals", "waves of CPU-bound tasks forked on one LLC", DEFAULT_TOPO, 10,
	  arrivals_setup, hogs_each_ms },
	{ "requests", "bursty requests woken from one LLC", DEFAULT_TOPO, 10, requests_setup,
	  no_arrivals },
	{ "pairs-low", "pairs waking each other, 1/8 load", DEFAULT_TOPO, 10, pairs_low_setup,
	  no_arrivals },
	{ "pairs-high", "pairs waking each other, full load", DEFAULT_TOPO, 10, pairs_high_setup,
	  no_arrivals },
	{ "arrivals-512", "waves of CPU-bound tasks, 512 CPUs", BIG_TOPO, 10, arrivals_setup,
	  hogs_each_ms },
};

/* ---- runs ---- */

struct row {
	const char *balancer;
	bool keep_pairs;
	struct sim_stats st;
	double seconds;
	double decide_us;          /* per tick */
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
	sc->setup(&s);
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
	ret->st = s.st;
	ret->seconds = (double)end / 1000;
	ret->decide_us = s.st.ticks ? (double)s.decide_ns / 1000 / (double)s.st.ticks : 0;
	if (o->out) {
		char title[256];
		struct plot_series ps = { .nlines = t->nllcs, .npoints = s.nseries / t->nllcs,
					  .dt_s = s.tick_ms / 1000.0, .y = s.series,
					  .y_ref = t->llcs[0].ncpus };

		snprintf(ret->plot, sizeof(ret->plot), "%s-%s%s.svg", sc->name,
			 bal == SIM_NONE ? "none" : bal == SIM_PULLER ? "puller" : "rqbalance",
			 keep_pairs ? "-keep-pairs" : "");
		snprintf(title, sizeof(title), "%s: %s (%s)", sc->name, ret->balancer,
			 keep_pairs ? "keep_pairs" : sc->what);
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
		   "pulls from 1-task CPUs | work done (CPU-s) | bursts/s | decision (µs/tick) |\n");
	fprintf(f, "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
}

static void print_row(FILE *f, const struct row *r, const struct row *puller)
{
	const struct sim_stats *st = &r->st;
	double wasted = st->wasted_ms / 1000.0, pw = puller->st.wasted_ms / 1000.0;
	char vs[32];

	if (pw > 0)
		snprintf(vs, sizeof(vs), "%.2f", wasted / pw);
	else
		snprintf(vs, sizeof(vs), "-");
	fprintf(f, "| %s%s | %" PRIu64 " | %" PRIu64 " | %.2f | %.2f | %s | %.1f | %" PRIu64
		   " | %" PRIu64 " | %.1f | %.0f | %.1f |\n",
		r->balancer, r->keep_pairs ? " + keep_pairs" : "", st->episodes, st->episode_max,
		st->ticks ? st->spread_sum / (double)st->ticks : 0, wasted, vs,
		(double)st->migrations / r->seconds, st->pingpong, st->single_pulls,
		st->work_ms / 1000.0, (double)st->bursts / r->seconds, r->decide_us);
}

/* ---- the decision-time scaling run ---- */

struct scale_point {
	int cpus;
	size_t tasks;
	double us;
};

/* Median time of pol_decide over ticks on a machine with 10 runnable tasks per CPU. */
static struct scale_point scale_one(const char *synthetic, uint64_t seed)
{
	struct topo *t = load_topo(synthetic);
	struct snapshot *sn = snap_new(t);
	struct rqb_conf c;
	struct pol_state st;
	struct plan p;
	double us[41];
	uint64_t rng = seed;
	int n = 0;

	conf_defaults(&c);
	pol_init(&st);
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
		pol_decide(sn, &c, &st, &p);
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
	pol_fini(&st);
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
};

static void goal(struct goals *g, bool ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void goal(struct goals *g, bool ok, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("goal %s: ", ok ? "met" : "MISSED");
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	ok ? g->ok++ : g->failed++;
}

static const enum sim_balancer order[] = { SIM_NONE, SIM_PULLER, SIM_RQB };

/* Every run of one scenario: the three balancers, and for pairs keep_pairs too. */
static int run_scenario(const struct scenario *sc, const struct opts *o, FILE *md,
			struct goals *g)
{
	struct topo *t = load_topo(sc->topo);
	struct row rows[4];
	int nrows = 0, broke = 0;
	bool pairs = strncmp(sc->name, "pairs", 5) == 0;
	char desc[256];

	for (size_t b = 0; b < ARRAY_SIZE(order); b++)
		broke |= run(sc, t, order[b], false, o, &rows[nrows++]);
	if (pairs)
		broke |= run(sc, t, SIM_RQB, true, o, &rows[nrows++]);
	topo_describe(t, desc, sizeof(desc));
	for (FILE *f = stdout; f; f = f == stdout ? md : NULL) {
		fprintf(f, "\n### %s: %s\n\n%s, %.0f s simulated, seed %" PRIu64 ".\n\n",
			sc->name, sc->what, desc, rows[0].seconds, o->seed);
		print_header(f);
		for (int r = 0; r < nrows; r++)
			print_row(f, &rows[r], &rows[1]);
		if (f == md) {
			fprintf(f, "\nPlots:");
			for (int r = 0; r < nrows; r++)
				fprintf(f, " [%s%s](%s)", rows[r].balancer,
					rows[r].keep_pairs ? " + keep_pairs" : "", rows[r].plot);
			fprintf(f, "\n");
		}
	}
	const struct sim_stats *rq = &rows[2].st, *pu = &rows[1].st;

	if (!strncmp(sc->name, "arrivals", 8)) {
		goal(g, rq->episode_max <= 2, "%s: rqbalance spreads within 2 ticks (longest %" PRIu64
		     ")", sc->name, rq->episode_max);
		goal(g, rq->wasted_ms * 5 <= pu->wasted_ms,
		     "%s: wasted idle at most 1/5 of the puller's (%.2f vs %.2f CPU-s)", sc->name,
		     rq->wasted_ms / 1000.0, pu->wasted_ms / 1000.0);
	}
	goal(g, rq->single_pulls == 0, "%s: no pull from a single-task CPU (%" PRIu64 ")",
	     sc->name, rq->single_pulls);
	goal(g, rq->pingpong == 0, "%s: no ping-pong (%" PRIu64 ")", sc->name, rq->pingpong);
	if (pairs)
		printf("keep_pairs on %s: bursts/s %.0f without, %.0f with (%+.1f %%)\n", sc->name,
		       rows[2].st.bursts / rows[2].seconds, rows[3].st.bursts / rows[3].seconds,
		       100.0 * ((double)rows[3].st.bursts / (double)(rows[2].st.bursts ? rows[2].st.bursts : 1) - 1));
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
			    "(`bench/sim/sim --out bench/sim/out`).\n");
	}
	for (size_t k = 0; k < ARRAY_SIZE(scenarios); k++)
		broke |= run_scenario(&scenarios[k], o, md, &g);
	run_scaling(md, &g, o->seed);
	printf("\ngoals: %d met, %d missed\n", g.ok, g.failed);
	if (md)
		fclose(md);
	return broke ? 1 : 0;
}

/*
 * The simulator's own tests: every scenario under every balancer with the invariants
 * checked each millisecond, and one run repeated with the same seed.
 */
static int check_all(const struct opts *base)
{
	struct opts o = *base;
	int pass = 0, fail = 0;
	struct row a, b;
	struct topo *t;

	o.out = NULL;
	o.seconds_scale = 0.2;
	for (size_t k = 0; k < ARRAY_SIZE(scenarios); k++) {
		t = load_topo(scenarios[k].topo);
		for (size_t bi = 0; bi < ARRAY_SIZE(order); bi++) {
			int r = run(&scenarios[k], t, order[bi], order[bi] == SIM_RQB, &o, &a);

			printf("%s %s/%s: tasks conserved, each on an allowed CPU\n",
			       r ? "FAIL" : "PASS", scenarios[k].name, sim_balancer_name(order[bi]));
			r ? fail++ : pass++;
		}
		topo_free(t);
	}
	/* requests draws think and burst times from the seed. */
	t = load_topo(scenarios[1].topo);
	run(&scenarios[1], t, SIM_RQB, false, &o, &a);
	run(&scenarios[1], t, SIM_RQB, false, &o, &b);
	if (memcmp(&a.st, &b.st, sizeof(a.st)) == 0) {
		printf("PASS requests/rqbalance: the same seed gives the same figures\n");
		pass++;
	} else {
		printf("FAIL requests/rqbalance: the same seed gave different figures\n");
		fail++;
	}
	o.seed++;
	run(&scenarios[1], t, SIM_RQB, false, &o, &b);
	if (memcmp(&a.st, &b.st, sizeof(a.st)) != 0) {
		printf("PASS requests/rqbalance: another seed gives other figures\n");
		pass++;
	} else {
		printf("FAIL requests/rqbalance: another seed gave the same figures\n");
		fail++;
	}
	topo_free(t);
	printf("%d passed, %d failed\n", pass, fail);
	return fail ? 1 : 0;
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
