/*
 * The simulated machine and the kernel model: 1 ms steps; round-robin run queues with
 * a 4 ms slice; wakeups placed as the kernel does, simply (wake_wide() from the wakee
 * flips of waker and wakee; if not wide, wake affine toward the waker's LLC, else the
 * wakee's previous LLC; then an idle sibling in that LLC); an idle CPU pulls waiting
 * work from its own LLC at once; across LLCs, a periodic balance moves one waiting task
 * every kernel_lb_ms, from the LLC with the highest utilization to the lowest. With
 * lb_spare (the placement scenarios), a newer kernel's balance instead: across LLCs by
 * idle CPUs and waiting tasks, and within an LLC between busy CPUs by load. A task
 * with a negative latency-nice value wakes ahead of the waiting tasks without one, and
 * with lat_preempt ahead of the running one. Only the balancer under test changes
 * affinities, and never outside a plan.
 *
 * Caches, two models. A task outside any process (the first scenarios) runs 2 ms
 * without progress after it changes LLC, and a pair's burst run away from its waker's
 * LLC costs cross_llc_penalty_pct more. A thread of a process (struct sim_proc) pays
 * instead: refilling its share of the working set at one core's bandwidth after it
 * changes LLC (sim_warm_ns); the local or remote cost of being taken from its queue
 * at each wakeup (sim_wake_cost_ns); and, all the time it runs, a slowdown for its
 * accesses to shared data last written in another LLC and for the part of its LLC's
 * working sets that does not fit (sim_slowdown). A model, not a measurement.
 *
 * Kinds of core: each CPU has a speed against the slowest kind (sim_core_speed), 1 on
 * a machine of one kind. With s->kinds, the kernel model of such parts: every ASYM_MS
 * a wholly idle core pulls a task from a CPU the kernel ranks lower (ITMT or CPPC
 * asym packing) or from a core whose two CPUs are both busy; a wakeup takes an idle
 * core before an idle sibling and is not affine to a CPU the wakee may not run on; two
 * busy siblings each keep smt_pct of their speed. The kernel knows no latency here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/latency.h"
#include "rqbalance.h"
#include "sim.h"
#include "util/cpumask.h"

#define MS_NS ((int64_t)NSEC_PER_MSEC)
#define SLICE_NS (4 * MS_NS)
#define COLD_NS (2 * MS_NS) /* the first model's flat cost of changing LLC */
#define PAIR_BURST_MS 4   /* a pair's burst, on average: 3, 4 or 5 ms, drawn from the seed */
#define PAIR_OVERLAP_NS (2 * MS_NS) /* a pair's task wakes its partner this long before it sleeps */
/*
 * scx_lavd's measurement (sched-ext/scx PR 2912): a task taken from the local LLC's
 * queue in 596 ns on average, from a remote LLC's in 2,217 ns. Here the cost of a
 * wakeup, and the ratio (3.72) of any access to data last written in another LLC.
 */
#define WAKE_LOCAL_NS 596
#define WAKE_REMOTE_NS 2217
/*
 * One core refilling a cache: 10 GB/s, an assumption at the low end of what one
 * core's stream reaches on current servers, since a refill after a move is demand
 * misses on scattered lines more than a prefetched stream. 4 MiB take 0.42 ms.
 */
#define CORE_BW_MB_S 10000
/* A thread that ran this recently counts where it ran: its data is still there. */
#define ACTIVE_MS 100
#define FLIP_DECAY_MS 1000 /* record_wakee() halves the flips once per HZ jiffies */
#define LISTENERS 64      /* distinct listeners a pair's task may wake besides its partner */
/*
 * Asym packing's pace: a busy CPU kicks the idle balance at its tick when a CPU ranked
 * higher is idle (nohz_balancer_kick), so within a tick at HZ=250.
 */
#define ASYM_MS 4

uint64_t sim_rand(struct sim *s)
{
	/* xorshift64*: small, fast, and the same on every machine for a seed. */
	s->rng ^= s->rng >> 12;
	s->rng ^= s->rng << 25;
	s->rng ^= s->rng >> 27;
	return s->rng * 2685821657736338717ULL;
}

const char *sim_balancer_name(enum sim_balancer b)
{
	static const char *const names[] = { "no daemon", "utilization puller", "rqbalance" };

	return (unsigned)b < SIM_NBALANCERS ? names[b] : "?";
}

/* ---- kinds of core ---- */

double sim_core_speed(const struct topo *t, int cpu)
{
	unsigned lo = 0;
	int k = cpu >= 0 && cpu < t->nr_cpu_ids ? t->cpus[cpu].kind : -1;

	if (t->nkinds < 2 || k < 0)
		return 1.0;
	for (int j = 0; j < t->nkinds; j++) {
		if (!t->kinds[j].max_mhz)
			return 1.0;
		if (!lo || t->kinds[j].max_mhz < lo)
			lo = t->kinds[j].max_mhz;
	}
	return (double)t->kinds[k].max_mhz / lo;
}

double sim_core_time(double speed, int llc_pct, double slowdown)
{
	/* Exactly slowdown at speed 1, so a machine of one kind keeps its figures. */
	if (speed == 1.0)
		return slowdown;
	return slowdown - (1 - llc_pct / 100.0) * (1 - 1 / speed);
}

/* The LLC whose cache is larger than every other's, or -1. */
static int largest_llc(const struct topo *t)
{
	int best = -1;
	bool tie = false;

	for (int l = 0; l < t->nllcs; l++) {
		if (best >= 0 && t->llcs[l].size_kb == t->llcs[best].size_kb)
			tie = true;
		else if (best < 0 || t->llcs[l].size_kb > t->llcs[best].size_kb)
			best = l, tie = false;
	}
	return tie ? -1 : best;
}

/*
 * Each CPU's speed, its SMT sibling, and the kernel's ranking: Intel's ITMT ranks the
 * faster kind first; an X3D part's CPPC ranking puts first the CCD its amd_x3d_mode
 * names: the faster clock (frequency), or the larger L3 (cache).
 */
static int kinds_init(struct sim *s)
{
	const struct topo *t = s->topo;
	int n = t->nr_cpu_ids, big = largest_llc(t);

	s->speed = calloc((size_t)n, sizeof(*s->speed));
	s->prio = calloc((size_t)n, sizeof(*s->prio));
	s->sibling = calloc((size_t)n, sizeof(*s->sibling));
	if (!s->speed || !s->prio || !s->sibling)
		return -ENOMEM;
	for (int c = 0; c < n; c++) {
		s->speed[c] = sim_core_speed(t, c);
		s->prio[c] = s->speed[c];
		if (t->x3d_mode == TOPO_X3D_CACHE && big >= 0 && t->cpus[c].present)
			s->prio[c] = t->cpus[c].llc == big ? 2 : 1;
		s->sibling[c] = -1;
		for (int d = 0; d < n && t->cpus[c].present; d++)
			if (d != c && t->cpus[d].present && t->cpus[d].core == t->cpus[c].core)
				s->sibling[c] = d;
	}
	return 0;
}

int sim_init(struct sim *s, const struct topo *t, enum sim_balancer bal, uint64_t seed)
{
	memset(s, 0, sizeof(*s));
	s->topo = t;
	s->bal = bal;
	s->rng = seed ? seed : 1;
	s->tick_ms = 100;
	s->kernel_lb_ms = 32;
	s->cross_llc_penalty_pct = 50;
	conf_defaults(&s->conf);
	spread_init(&s->pol);
	plan_init(&s->plan);
	s->disp.last_wakee = SIM_NO_WAKEE;
	s->run_at = -1;
	s->cpu = calloc((size_t)t->nr_cpu_ids, sizeof(*s->cpu));
	s->llc_waiting = calloc((size_t)t->nllcs, sizeof(long));
	s->llc_idle = calloc((size_t)t->nllcs, sizeof(long));
	s->llc_over = calloc((size_t)t->nllcs, sizeof(double));
	s->snap = snap_new(t);
	if (!s->cpu || !s->snap || !s->llc_waiting || !s->llc_idle || !s->llc_over)
		return -ENOMEM;
	return kinds_init(s);
}

void sim_fini(struct sim *s)
{
	for (int c = 0; s->cpu && c < s->topo->nr_cpu_ids; c++)
		free(s->cpu[c].q);
	free(s->cpu);
	free(s->llc_waiting);
	free(s->llc_idle);
	free(s->llc_over);
	free(s->proc);
	free(s->proc_llc);
	free(s->lat.ns);
	free(s->frame.ns);
	free(s->speed);
	free(s->prio);
	free(s->sibling);
	free(s->t);
	free(s->series);
	snap_free(s->snap);
	plan_fini(&s->plan);
	spread_fini(&s->pol);
}

int sim_add(struct sim *s, enum sim_kind kind)
{
	struct sim_task *t;

	if (s->nt == s->tcap) {
		int cap = s->tcap ? s->tcap * 2 : 64;
		struct sim_task *a = realloc(s->t, (size_t)cap * sizeof(*a));

		if (!a)
			return -1;
		s->t = a;
		s->tcap = cap;
	}
	t = &s->t[s->nt];
	memset(t, 0, sizeof(*t));
	t->kind = kind;
	t->tid = 1000 + s->nt;
	t->proc = -1;
	t->partner = -1;
	t->cpu = -1;
	t->moved_from_llc = -1;
	t->wf.last_wakee = SIM_NO_WAKEE;
	t->allowed = s->topo->online;
	t->orig = s->topo->online;
	return s->nt++;
}

int sim_add_proc(struct sim *s, const struct sim_proc *p)
{
	struct sim_proc *a = s->proc;
	int *pl;

	if (s->nproc == s->proccap) {
		s->proccap = s->proccap ? s->proccap * 2 : 16;
		a = realloc(s->proc, (size_t)s->proccap * sizeof(*a));
		pl = a ? realloc(s->proc_llc,
				  (size_t)s->proccap * (size_t)s->topo->nllcs * sizeof(int))
		       : NULL;
		if (a)
			s->proc = a;
		if (!pl)
			return -1;
		s->proc_llc = pl;
	}
	s->proc[s->nproc] = *p;
	s->proc[s->nproc].tgid = 100000 + s->nproc;
	s->proc[s->nproc].nthreads = 0;
	if (!s->proc[s->nproc].rss_kb)
		s->proc[s->nproc].rss_kb = p->ws_kb;
	s->proc[s->nproc].disp.last_wakee = SIM_NO_WAKEE;
	return s->nproc++;
}

int sim_add_thread(struct sim *s, enum sim_kind kind, int p)
{
	int i = sim_add(s, kind);

	if (i < 0)
		return -1;
	s->t[i].proc = p;
	s->proc[p].nthreads++;
	return i;
}

/* ---- the cache model ---- */

uint32_t sim_wake_cost_ns(bool remote)
{
	return remote ? WAKE_REMOTE_NS : WAKE_LOCAL_NS;
}

uint64_t sim_warm_ns(uint64_t kb)
{
	return kb * 1024 * 1000 / CORE_BW_MB_S;
}

/*
 * Of its LLC accesses a share shared x remote finds data last written in another LLC,
 * and a share over misses: each of those costs WAKE_REMOTE_NS / WAKE_LOCAL_NS times a
 * local hit (a miss to memory taken as dear as a remote line: an assumption). An
 * access both remote and missed counts once.
 */
double sim_slowdown(int llc_pct, int shared_pct, double remote, double over)
{
	double ratio = (double)WAKE_REMOTE_NS / WAKE_LOCAL_NS;
	double slow = 1 - (1 - shared_pct / 100.0 * remote) * (1 - over);

	return 1 + llc_pct / 100.0 * slow * (ratio - 1);
}

static int llc_of(const struct sim *s, int cpu)
{
	return s->topo->cpus[cpu].llc;
}

/* Active: runnable, or ran within ACTIVE_MS; counted on the LLC of its CPU. */
static bool active(const struct sim *s, const struct sim_task *t)
{
	return t->alive && t->cpu >= 0 &&
	       (t->queued || (t->ran_ever && s->now_ms - t->last_ms < ACTIVE_MS));
}

/* What process p keeps in LLC l: the shared part once, its threads' private parts. */
static double demand_kb(const struct sim *s, int p, int l)
{
	const struct sim_proc *pr = &s->proc[p];
	int n = s->proc_llc[p * s->topo->nllcs + l];
	double shared = (double)pr->ws_kb * pr->shared_pct / 100.0;

	if (!n || !pr->nthreads)
		return 0;
	return shared + ((double)pr->ws_kb - shared) * n / pr->nthreads;
}

/* Once a millisecond: each process's active threads per LLC, each LLC's overflow. */
static void cache_update(struct sim *s)
{
	const struct topo *tp = s->topo;

	if (!s->nproc)
		return;
	memset(s->proc_llc, 0, (size_t)s->nproc * (size_t)tp->nllcs * sizeof(int));
	for (int i = 0; i < s->nt; i++) {
		const struct sim_task *t = &s->t[i];

		if (t->proc >= 0 && active(s, t))
			s->proc_llc[t->proc * tp->nllcs + llc_of(s, t->cpu)]++;
	}
	for (int l = 0; l < tp->nllcs; l++) {
		double kb = 0, size = (double)tp->llcs[l].size_kb;

		for (int p = 0; p < s->nproc; p++)
			kb += demand_kb(s, p, l);
		s->llc_over[l] = size > 0 && kb > size ? 1 - size / kb : 0;
	}
}

/* The share of its speed a task keeps on cpu now: less while the other CPU of its core is busy. */
static double smt_share(const struct sim *s, int cpu)
{
	int sib = s->sibling[cpu];

	return s->smt_pct && sib >= 0 && s->cpu[sib].n ? s->smt_pct / 100.0 : 1.0;
}

/* Task i's speed where it runs now: its core's, outside the cache model. */
static double speed(const struct sim *s, const struct sim_task *t)
{
	const struct sim_proc *p;
	const int *on;
	int l, n = 0;
	double remote = 0, slow;

	if (t->proc < 0)
		return s->speed[t->cpu] * smt_share(s, t->cpu);
	p = &s->proc[t->proc];
	on = &s->proc_llc[t->proc * s->topo->nllcs];
	l = llc_of(s, t->cpu);
	for (int k = 0; k < s->topo->nllcs; k++)
		n += on[k];
	if (n > 1)
		remote = (double)(n - on[l]) / (n - 1);
	if (remote > 1)
		remote = 1;
	slow = sim_slowdown(p->llc_pct, p->shared_pct, remote, s->llc_over[l]);
	return smt_share(s, t->cpu) / sim_core_time(s->speed[t->cpu], p->llc_pct, slow);
}

/*
 * What a thread of a process refills in LLC l: its share of the private part, and
 * the shared part unless another thread of its process is active there.
 */
static int64_t warm_ns(const struct sim *s, const struct sim_task *t, int l)
{
	const struct sim_proc *p = &s->proc[t->proc];
	uint64_t shared = p->ws_kb * (uint64_t)p->shared_pct / 100;
	uint64_t kb = (p->ws_kb - shared) / (uint64_t)(p->nthreads ? p->nthreads : 1);

	if (!s->proc_llc[t->proc * s->topo->nllcs + l])
		kb += shared;
	return (int64_t)sim_warm_ns(kb);
}

/* ---- run queues ---- */

/* Queues task i on cpu at position pos (0 runs; c->n is the tail). */
static void enqueue_at(struct sim *s, int i, int cpu, int pos)
{
	struct sim_cpu *c = &s->cpu[cpu];
	struct sim_task *t = &s->t[i];

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 8;
		c->q = realloc(c->q, (size_t)c->cap * sizeof(int));
		if (!c->q)
			abort(); /* a simulator out of memory has nothing to report */
	}
	memmove(&c->q[pos + 1], &c->q[pos], (size_t)(c->n - pos) * sizeof(int));
	c->q[pos] = i;
	c->n++;
	if (t->cpu >= 0 && t->cpu != cpu) {
		s->st.migrations++;
		if (llc_of(s, t->cpu) != llc_of(s, cpu) && t->proc < 0)
			t->stall_ns = COLD_NS;
		else if (llc_of(s, t->cpu) != llc_of(s, cpu))
			t->stall_ns += warm_ns(s, t, llc_of(s, cpu));
	}
	t->cpu = cpu;
	t->queued = true;
	if (pos == 0)
		t->slice_ns = 0;
}

static void enqueue(struct sim *s, int i, int cpu)
{
	enqueue_at(s, i, cpu, s->cpu[cpu].n);
}

static void dequeue(struct sim *s, int i)
{
	struct sim_task *t = &s->t[i];
	struct sim_cpu *c = &s->cpu[t->cpu];

	for (int k = 0; k < c->n; k++)
		if (c->q[k] == i) {
			memmove(&c->q[k], &c->q[k + 1], (size_t)(c->n - k - 1) * sizeof(int));
			c->n--;
			break;
		}
	t->queued = false;
	if (c->n)
		s->t[c->q[0]].slice_ns = 0;
}

static bool cpu_ok(const struct sim *s, int i, int cpu)
{
	return s->topo->cpus[cpu].present && CPU_ISSET(cpu, &s->t[i].allowed);
}

/* An idle allowed CPU of LLC l, scanning from start; -1 if none. */
static int idle_in_llc(const struct sim *s, int i, int l, int start)
{
	int n = s->topo->nr_cpu_ids;

	for (int k = 0; k < n; k++) {
		int c = (start + k) % n;

		if (s->topo->cpus[c].present && s->topo->cpus[c].llc == l && s->cpu[c].n == 0 &&
		    cpu_ok(s, i, c))
			return c;
	}
	return -1;
}

int sim_least_loaded(const struct sim *s, int i, int l)
{
	int best = -1;

	for (int pass = l >= 0 ? 0 : 1; pass < 2 && best < 0; pass++)
		for (int c = 0; c < s->topo->nr_cpu_ids; c++) {
			if (!cpu_ok(s, i, c) || (pass == 0 && s->topo->cpus[c].llc != l))
				continue;
			if (best < 0 || s->cpu[c].n < s->cpu[best].n)
				best = c;
		}
	return best;
}

static bool core_idle(const struct sim *s, int c)
{
	return !s->cpu[c].n && (s->sibling[c] < 0 || !s->cpu[s->sibling[c]].n);
}

/* An idle allowed CPU of LLC l on a wholly idle core, scanning from start; -1 if none. */
static int idle_core_in_llc(const struct sim *s, int i, int l, int start)
{
	int n = s->topo->nr_cpu_ids;

	for (int k = 0; k < n; k++) {
		int c = (start + k) % n;

		if (s->topo->cpus[c].present && s->topo->cpus[c].llc == l && core_idle(s, c) &&
		    cpu_ok(s, i, c))
			return c;
	}
	return -1;
}

/*
 * select_idle_sibling() on a part with SMT, simply: prev if idle, else an idle core,
 * else an idle CPU of the target LLC; where the wakee may run on no CPU of that LLC,
 * the LLC of the first it may (select_fallback_rq).
 */
static int place_kinds(const struct sim *s, int i, int llc, int prev)
{
	cpu_set_t both;
	int c;

	CPU_AND(&both, &s->topo->llcs[llc].cpus, &s->t[i].allowed);
	if (!CPU_COUNT(&both))
		llc = s->topo->cpus[cpumask_first(&s->t[i].allowed)].llc;
	if (cpu_ok(s, i, prev) && !s->cpu[prev].n && llc_of(s, prev) == llc)
		return prev;
	c = idle_core_in_llc(s, i, llc, prev);
	if (c < 0)
		c = idle_in_llc(s, i, llc, prev);
	if (c >= 0)
		return c;
	if (cpu_ok(s, i, prev))
		return prev;
	return sim_least_loaded(s, i, llc);
}

/* select_task_rq, simply: prev if idle, else an idle sibling in the target LLC. */
static int place(const struct sim *s, int i, int target_llc, int prefer)
{
	int c;

	if (s->kinds)
		return place_kinds(s, i, target_llc, prefer);
	if (prefer >= 0 && cpu_ok(s, i, prefer) && s->cpu[prefer].n == 0 &&
	    s->topo->cpus[prefer].llc == target_llc)
		return prefer;
	c = idle_in_llc(s, i, target_llc, prefer >= 0 ? prefer : 0);
	if (c >= 0)
		return c;
	if (prefer >= 0 && cpu_ok(s, i, prefer))
		return prefer;
	return sim_least_loaded(s, i, target_llc);
}

/* A fork: an idle CPU of the parent's LLC, else the least loaded one there. */
void sim_arrive(struct sim *s, int i, int llc)
{
	int c = idle_in_llc(s, i, llc, cpumask_first(&s->topo->llcs[llc].cpus));

	s->t[i].alive = true;
	enqueue(s, i, c >= 0 ? c : sim_least_loaded(s, i, llc));
}

void sim_fork(struct sim *s, int i, int parent_llc)
{
	const struct topo *tp = s->topo;
	int best = parent_llc, nr[RQB_MAX_CPUS] = { 0 }, c;

	for (int k = 0; k < tp->nr_cpu_ids; k++)
		if (tp->cpus[k].present)
			nr[llc_of(s, k)] += s->cpu[k].n;
	for (int l = 0; l < tp->nllcs; l++)
		if ((long)nr[l] * tp->llcs[best].ncpus < (long)nr[best] * tp->llcs[l].ncpus)
			best = l;
	c = idle_in_llc(s, i, best, cpumask_first(&tp->llcs[best].cpus));
	s->t[i].alive = true;
	enqueue(s, i, c >= 0 ? c : sim_least_loaded(s, i, best));
}

void sim_depart(struct sim *s, int i)
{
	if (s->t[i].queued)
		dequeue(s, i);
	s->t[i].alive = false;
}

/* record_wakee(): a waker that wakes another task than last time flips once more. */
static void record_wakee(const struct sim *s, struct sim_flips *w, int wakee)
{
	if (s->now_ms - w->decay_ms > FLIP_DECAY_MS) {
		w->flips >>= 1;
		w->decay_ms = s->now_ms;
	}
	if (w->last_wakee != wakee) {
		w->last_wakee = wakee;
		w->flips++;
	}
}

/*
 * wake_wide(): the relation is M:N, so not worth packing into one LLC, when one side
 * flips at least llc_size times and the other at least llc_size times more often.
 */
static bool wake_wide(const struct sim *s, const struct sim_flips *waker,
		      const struct sim_flips *wakee, int waker_cpu)
{
	unsigned factor = (unsigned)s->topo->llcs[s->topo->cpus[waker_cpu].llc].ncpus;
	unsigned master = waker->flips, slave = wakee->flips;

	if (master < slave) {
		master = wakee->flips;
		slave = waker->flips;
	}
	return slave >= factor && master >= slave * factor;
}

static void catch_up(struct sim *s, int cpu);

/*
 * Where a wakee queues: at the tail, as round robin would; a task with a negative
 * latency-nice value (a higher weight and a shorter slice) before every waiting task
 * without one, as EEVDF picks the earliest deadline next; and with lat_preempt ahead of
 * a running task without one, as recent EEVDF kernels let a shorter slice preempt on
 * wakeup (without it, the running task keeps the rest of its slice).
 */
static int wake_pos(const struct sim *s, int i, int cpu)
{
	const struct sim_cpu *c = &s->cpu[cpu];
	int k = 1;

	if (s->t[i].lat_nice >= 0 || c->n == 0)
		return c->n;
	if (s->lat_preempt && s->t[c->q[0]].lat_nice >= 0)
		return 0;
	while (k < c->n && s->t[c->q[k]].lat_nice < 0)
		k++;
	return k;
}

void sim_wake(struct sim *s, int i, struct sim_flips *waker, int waker_cpu)
{
	struct sim_task *t = &s->t[i];
	int prev = t->cpu >= 0 ? t->cpu : 0;
	int llc = s->topo->cpus[prev].llc, cpu;

	if (!t->alive || t->queued)
		return;
	if (waker) {
		record_wakee(s, waker, i);
		s->st.wakes++;
		/*
		 * Not wide: wake affine, toward the waker's LLC. Wide: the fast path from
		 * the previous CPU, since no domain sets SD_BALANCE_WAKE by default.
		 */
		if (wake_wide(s, waker, &t->wf, waker_cpu))
			s->st.wide_wakes++;
		else if (!s->kinds || CPU_ISSET(waker_cpu, &t->allowed))
			llc = s->topo->cpus[waker_cpu].llc;
	}
	cpu = place(s, i, llc, prev);
	enqueue_at(s, i, cpu, wake_pos(s, i, cpu));
	t->woken = true;
	t->woke_ns = s->now_ms * NSEC_PER_MSEC + (uint64_t)s->off_ns;
	t->wake_cost_ns = 0;
	if (t->proc < 0)
		return;
	t->wake_cost_ns = sim_wake_cost_ns(waker && llc_of(s, waker_cpu) != llc_of(s, cpu));
	t->stall_ns += t->wake_cost_ns;
	/* A CPU stepped already this ms, idle since before the wakeup, runs it from then. */
	if (s->run_at >= 0 && cpu < s->run_at && s->cpu[cpu].n == 1)
		catch_up(s, cpu);
}

void sim_migrate(struct sim *s, int i, int cpu)
{
	dequeue(s, i);
	enqueue(s, i, cpu);
}

/* ---- the kernel's own balancing ---- */

/* An idle CPU pulls a waiting task from the busiest CPU of its LLC. */
static void newidle(struct sim *s)
{
	const struct topo *tp = s->topo;

	for (int c = 0; c < tp->nr_cpu_ids; c++) {
		int busiest = -1;

		if (!tp->cpus[c].present || s->cpu[c].n)
			continue;
		for (int o = 0; o < tp->nr_cpu_ids; o++)
			if (tp->cpus[o].present && tp->cpus[o].llc == tp->cpus[c].llc &&
			    s->cpu[o].n >= 2 && (busiest < 0 || s->cpu[o].n > s->cpu[busiest].n))
				busiest = o;
		if (busiest < 0)
			continue;
		for (int k = s->cpu[busiest].n - 1; k >= 1; k--) {
			int i = s->cpu[busiest].q[k];

			if (cpu_ok(s, i, c)) {
				sim_migrate(s, i, c);
				break;
			}
		}
	}
}

/*
 * The periodic balance across LLCs, by utilization as before "ensure tasks spreading
 * in LLC during LB": one waiting task from the most to the least utilized LLC, if the
 * first is clearly busier.
 */
static void kernel_lb(struct sim *s)
{
	const struct topo *tp = s->topo;
	int hi = -1, lo = -1, from = -1;
	double util[RQB_MAX_CPUS];

	for (int l = 0; l < tp->nllcs; l++)
		util[l] = 0;
	for (int c = 0; c < tp->nr_cpu_ids; c++)
		if (tp->cpus[c].present)
			util[tp->cpus[c].llc] += s->cpu[c].n ? 1.0 : 0.0;
	for (int l = 0; l < tp->nllcs; l++) {
		util[l] /= tp->llcs[l].ncpus;
		if (hi < 0 || util[l] > util[hi])
			hi = l;
		if (lo < 0 || util[l] < util[lo])
			lo = l;
	}
	if (hi < 0 || util[hi] < util[lo] * 1.25 + 0.25)
		return;
	for (int c = 0; c < tp->nr_cpu_ids && from < 0; c++)
		if (tp->cpus[c].present && tp->cpus[c].llc == hi && s->cpu[c].n >= 2)
			from = c;
	if (from < 0)
		return;
	for (int k = s->cpu[from].n - 1; k >= 1; k--) {
		int i = s->cpu[from].q[k], to = idle_in_llc(s, i, lo, 0);

		if (to >= 0) {
			sim_migrate(s, i, to);
			return;
		}
	}
}

/* Waiting tasks (beyond one a CPU) and idle CPUs of LLC l. */
static void llc_counts(const struct sim *s, int l, int *ret_waiting, int *ret_idle)
{
	*ret_waiting = *ret_idle = 0;
	for (int c = 0; c < s->topo->nr_cpu_ids; c++)
		if (s->topo->cpus[c].present && llc_of(s, c) == l) {
			*ret_waiting += s->cpu[c].n > 1 ? s->cpu[c].n - 1 : 0;
			*ret_idle += s->cpu[c].n == 0;
		}
}

/*
 * The periodic balance across LLCs as the kernel runs it for a group with spare
 * capacity: from the LLC with most waiting tasks to the one with most idle CPUs, half
 * the difference in idle CPUs at once (one at least), each task onto an idle CPU it
 * may run on, the last queued first.
 */
static void kernel_lb_spare(struct sim *s)
{
	const struct topo *tp = s->topo;
	int from = -1, to = -1, fw = 0, ti = 0, w, idle, moves;

	for (int l = 0; l < tp->nllcs; l++) {
		llc_counts(s, l, &w, &idle);
		if (w > fw) {
			from = l;
			fw = w;
		}
		if (idle > ti) {
			to = l;
			ti = idle;
		}
	}
	if (from < 0 || to < 0 || from == to)
		return;
	llc_counts(s, from, &w, &idle);
	moves = (ti - idle) / 2 > 1 ? (ti - idle) / 2 : 1;
	for (int c = 0; c < tp->nr_cpu_ids && moves > 0; c++) {
		if (!tp->cpus[c].present || llc_of(s, c) != from)
			continue;
		for (int k = s->cpu[c].n - 1; k >= 1 && moves > 0; k--) {
			int i = s->cpu[c].q[k], dst = idle_in_llc(s, i, to, 0);

			if (dst >= 0) {
				sim_migrate(s, i, dst);
				moves--;
			}
		}
	}
}

/* The last task queued on c that may run on dst (a waiting one before the running one); -1. */
static int movable(const struct sim *s, int c, int dst)
{
	for (int k = s->cpu[c].n - 1; k >= 0; k--)
		if (cpu_ok(s, s->cpu[c].q[k], dst))
			return s->cpu[c].q[k];
	return -1;
}

/*
 * What a wholly idle core dst pulls: a task from a busy CPU the kernel ranks lower
 * (asym packing), or from a core whose two CPUs are both busy, whatever its rank (the
 * balance that spreads SMT siblings over idle cores); the lowest ranked source first,
 * then the longest queue. -1 if nothing may move.
 */
static int asym_pick(const struct sim *s, int dst)
{
	const struct topo *tp = s->topo;
	int src = -1, pick = -1;

	for (int c = 0; c < tp->nr_cpu_ids; c++) {
		bool lower = s->prio[c] < s->prio[dst];
		bool smt = s->sibling[c] >= 0 && s->cpu[s->sibling[c]].n;
		int i;

		if (!tp->cpus[c].present || !s->cpu[c].n || c == dst || (!lower && !smt))
			continue;
		if (src >= 0 && (s->prio[c] > s->prio[src] ||
				 (s->prio[c] == s->prio[src] && s->cpu[c].n <= s->cpu[src].n)))
			continue;
		i = movable(s, c, dst);
		if (i >= 0)
			src = c, pick = i;
	}
	return pick;
}

/*
 * Asym packing (ITMT on Intel's hybrid parts, CPPC's preferred cores on AMD's), simply:
 * each wholly idle core, the highest ranked first, pulls one task that runs where the
 * kernel ranks lower, whichever task it is.
 */
static void asym_balance(struct sim *s)
{
	const struct topo *tp = s->topo;
	unsigned char done[RQB_MAX_CPUS] = { 0 };

	for (;;) {
		int dst = -1, i;

		for (int c = 0; c < tp->nr_cpu_ids; c++)
			if (tp->cpus[c].present && !done[c] && core_idle(s, c) &&
			    (dst < 0 || s->prio[c] > s->prio[dst]))
				dst = c;
		if (dst < 0)
			return;
		done[dst] = 1;
		if (s->sibling[dst] >= 0)
			done[s->sibling[dst]] = 1;
		i = asym_pick(s, dst);
		if (i < 0)
			continue;
		sim_migrate(s, i, dst);
		s->st.asym_pulls++;
	}
}

/* The k-th CPU of mask, round and round; -1 if it is empty. */
int sim_nth_cpu(const cpu_set_t *mask, int k)
{
	int n = CPU_COUNT(mask);

	if (!n)
		return -1;
	k %= n;
	for (int c = 0; c < CPU_SETSIZE; c++)
		if (CPU_ISSET(c, mask) && k-- == 0)
			return c;
	return -1;
}

/* A CPU's load: the weights of the nice values its queued tasks run at. */
static uint64_t cpu_load(const struct sim *s, int c)
{
	uint64_t w = 0;

	for (int k = 0; k < s->cpu[c].n; k++)
		w += latency_nice_weight(s->t[s->cpu[c].q[k]].lat_nice);
	return w;
}

/*
 * The periodic balance within an LLC, by load, as each CPU runs it for itself in turn
 * (a domain's interval is its weight in ms, so in an LLC of N CPUs one CPU a ms): CPU
 * dst pulls the heaviest waiting task of the most loaded CPU that has one, when that
 * narrows the gap. Weights as rqbalance's latency mapping sets nice (-10: 9548, +10:
 * 110), so latency tasks queued behind each other on one CPU spread out.
 */
static void llc_balance(struct sim *s, int dst)
{
	const struct topo *tp = s->topo;
	int hi = -1, pick = -1;
	uint64_t hw = 0, dw = cpu_load(s, dst), w;

	for (int c = 0; c < tp->nr_cpu_ids; c++) {
		if (!tp->cpus[c].present || llc_of(s, c) != llc_of(s, dst) || s->cpu[c].n < 2)
			continue;
		w = cpu_load(s, c);
		if (hi < 0 || w > hw) {
			hi = c;
			hw = w;
		}
	}
	if (hi < 0 || hi == dst || hw <= dw)
		return;
	for (int k = 1; k < s->cpu[hi].n; k++) {
		int i = s->cpu[hi].q[k];

		w = latency_nice_weight(s->t[i].lat_nice);
		if (cpu_ok(s, i, dst) && hw - dw > w &&
		    (pick < 0 || w > latency_nice_weight(s->t[pick].lat_nice)))
			pick = i;
	}
	if (pick >= 0)
		sim_migrate(s, pick, dst);
}

/* ---- one millisecond ---- */

/* A pair's next burst: its length varies, or pairs would run in step with the tick. */
static int pair_burst_ms(struct sim *s)
{
	return PAIR_BURST_MS - 1 + (int)(sim_rand(s) % 3);
}

/* A pair's task hands work to its partner, which then overlaps it for a while. */
static void wake_partner(struct sim *s, int i)
{
	struct sim_task *t = &s->t[i], *p;
	int burst;

	if (t->partner < 0)
		return;
	p = &s->t[t->partner];
	if (p->queued) {
		p->handed = true;
		return;
	}
	burst = pair_burst_ms(s);
	if (p->proc >= 0) {
		/* Its burst before it wakes: a CPU may run it at once (catch_up). */
		p->left_ns = burst * MS_NS;
		sim_wake(s, t->partner, &t->wf, t->cpu);
		return;
	}
	sim_wake(s, t->partner, &t->wf, t->cpu);
	/*
	 * Away from the waker's LLC the data it hands over is cold: in the first model the
	 * burst costs more; a process's thread pays through its speed instead.
	 */
	if (llc_of(s, p->cpu) != llc_of(s, t->cpu))
		burst += burst * s->cross_llc_penalty_pct / 100;
	p->left_ns = burst * MS_NS;
}

static void finish_burst(struct sim *s, int i)
{
	struct sim_task *t = &s->t[i];

	s->st.bursts++;
	t->nbursts++;
	/* A wake of a listener that does no work of its own: it only adds a flip. */
	if (t->side_every && t->nbursts % (unsigned)t->side_every == 0)
		record_wakee(s, &t->wf, -2 - (int)(t->nbursts % LISTENERS));
	if (t->handed) {
		/* Work arrived while it ran: it goes on with the next burst, no sleep. */
		t->handed = false;
		t->left_ns = pair_burst_ms(s) * MS_NS;
		return;
	}
	dequeue(s, i);
	/* Think time: uniform over 1-40 ms, mean about 20; a process's: its own mean. */
	if (t->kind == SIM_REQ && t->proc < 0) {
		t->wake_ms = s->now_ms + 1 + sim_rand(s) % 40;
	} else if (t->kind == SIM_REQ) {
		uint64_t think = (uint64_t)s->proc[t->proc].think_ms;

		t->wake_ms = s->now_ms + 1 + think / 2 + sim_rand(s) % (think + 1);
	}
}

/* Splits min(waiting, idle) into its part within LLCs and its part across them. */
static void split_waste(const struct sim *s, long *ret_local, long *ret_cross)
{
	long waiting = 0, idle = 0, local = 0;

	for (int l = 0; l < s->topo->nllcs; l++) {
		waiting += s->llc_waiting[l];
		idle += s->llc_idle[l];
		local += s->llc_waiting[l] < s->llc_idle[l] ? s->llc_waiting[l] : s->llc_idle[l];
	}
	*ret_local = local;
	*ret_cross = (waiting < idle ? waiting : idle) - local;
}

void sim_waste(struct sim *s, long *ret_local, long *ret_cross)
{
	const struct topo *tp = s->topo;

	memset(s->llc_waiting, 0, (size_t)tp->nllcs * sizeof(long));
	memset(s->llc_idle, 0, (size_t)tp->nllcs * sizeof(long));
	for (int c = 0; c < tp->nr_cpu_ids; c++) {
		if (!tp->cpus[c].present)
			continue;
		if (s->cpu[c].n)
			s->llc_waiting[tp->cpus[c].llc] += s->cpu[c].n - 1;
		else
			s->llc_idle[tp->cpus[c].llc]++;
	}
	split_waste(s, ret_local, ret_cross);
}

/* Adds this millisecond's waste to its share: local, or across LLCs seen or unseen. */
static void account_waste(struct sim *s)
{
	long local, cross;

	split_waste(s, &local, &cross);
	s->st.wasted_ms += (uint64_t)(local + cross);
	s->st.wasted_local_ms += (uint64_t)local;
	if (s->imb_seen)
		s->st.wasted_seen_ms += (uint64_t)cross;
	else
		s->st.wasted_unseen_ms += (uint64_t)cross;
}

static void note_ns(struct sim_lat *l, uint64_t ns)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? l->cap * 2 : 1024;
		l->ns = realloc(l->ns, l->cap * sizeof(*l->ns));
		if (!l->ns)
			abort();
	}
	l->ns[l->n++] = ns;
}

/* A wakee that runs for the first time since its wakeup: its latency, if sampled. */
static void note_latency(struct sim *s, struct sim_task *t, int64_t at_ns)
{
	t->woken = false;
	if (t->sampled)
		note_ns(&s->lat, s->now_ms * NSEC_PER_MSEC + (uint64_t)at_ns - t->woke_ns +
					 t->wake_cost_ns);
}

/*
 * Task i runs for up to budget ns at the head of its queue, from s->off_ns: its stall
 * first, then progress at its speed. Returns the time used; *ret_done when it finished
 * a burst.
 */
static int64_t run_task(struct sim *s, int i, int64_t budget, bool *ret_done)
{
	struct sim_task *t = &s->t[i];
	int64_t stalled = 0, avail, ran, done, before;
	double v;

	if (t->stall_ns > 0) {
		stalled = t->stall_ns < budget ? t->stall_ns : budget;
		t->stall_ns -= stalled;
		if (stalled == budget)
			return budget;
	}
	avail = budget - stalled;
	v = speed(s, t);
	s->st.proc_ms += t->proc >= 0;
	if (t->proc >= 0 && s->llc_over[llc_of(s, t->cpu)] > 0)
		s->st.over_ms++;
	ran = avail;
	done = v != 1 ? (int64_t)((double)avail * v) : avail;
	if (t->kind != SIM_HOG && done >= t->left_ns) {
		done = t->left_ns;
		ran = v != 1 ? (int64_t)((double)done / v) + 1 : done;
		ran = ran < avail ? ran : avail;
	}
	s->st.work_ns += (uint64_t)done;
	t->work_ns += (uint64_t)done;
	if (t->lat_nice > 0)
		s->st.batch_ns += (uint64_t)done;
	if (t->kind == SIM_HOG)
		return budget;
	before = t->left_ns;
	t->left_ns -= done;
	if (t->kind == SIM_PAIR && before > PAIR_OVERLAP_NS && t->left_ns <= PAIR_OVERLAP_NS) {
		/* Its wakee's clock starts where it reaches the overlap. */
		s->off_ns += stalled + (int64_t)((double)(before - PAIR_OVERLAP_NS) / v);
		wake_partner(s, i);
	}
	if (t->left_ns <= 0) {
		if (t->sampled && t->kind == SIM_REQ)
			note_ns(&s->frame, s->now_ms * NSEC_PER_MSEC +
						   (uint64_t)(s->off_ns + stalled + ran) - t->woke_ns);
		finish_burst(s, i);
		*ret_done = true;
	}
	return stalled + ran;
}

/*
 * One CPU's millisecond from from_ns: the head runs; when it finishes a burst early,
 * the next task runs the rest, no sooner than its wakeup where the cache model times
 * it. A burst finished skips the slice's end until the next millisecond.
 */
static void run_cpu(struct sim *s, int c, int64_t from_ns)
{
	struct sim_cpu *cpu = &s->cpu[c];
	int64_t budget = MS_NS - from_ns;
	bool done = false;

	while (budget > 0 && cpu->n) {
		int i = cpu->q[0];
		struct sim_task *t = &s->t[i];
		int64_t now = (int64_t)(s->now_ms * NSEC_PER_MSEC) + MS_NS - budget, used;
		bool fin = false;

		if (t->woken && t->proc >= 0 && (int64_t)t->woke_ns > now) {
			if ((int64_t)t->woke_ns - now >= budget)
				break;
			budget -= (int64_t)t->woke_ns - now;
		}
		t->ran_ms++;
		t->last_ms = s->now_ms;
		t->ran_ever = true;
		if (t->woken)
			note_latency(s, t, MS_NS - budget);
		s->off_ns = MS_NS - budget;
		used = run_task(s, i, budget, &fin);
		budget -= used;
		if (t->queued && t->cpu == c && cpu->q[0] == i)
			t->slice_ns += used;
		done |= fin;
	}
	cpu->free_ns = cpu->n ? MS_NS : MS_NS - budget;
	if (!done && cpu->n > 1 && s->t[cpu->q[0]].slice_ns >= SLICE_NS) {
		int i = cpu->q[0];

		memmove(&cpu->q[0], &cpu->q[1], (size_t)(cpu->n - 1) * sizeof(int));
		cpu->q[cpu->n - 1] = i;
		s->t[cpu->q[0]].slice_ns = 0;
	}
}

/* A wakee queued alone on a CPU stepped already this ms: the CPU runs on from then. */
static void catch_up(struct sim *s, int cpu)
{
	int64_t off = s->off_ns, from = s->cpu[cpu].free_ns;

	run_cpu(s, cpu, from > off ? from : off);
	s->off_ns = off;
}

static void run_cpus(struct sim *s)
{
	const struct topo *tp = s->topo;

	memset(s->llc_waiting, 0, (size_t)tp->nllcs * sizeof(long));
	memset(s->llc_idle, 0, (size_t)tp->nllcs * sizeof(long));
	for (int c = 0; c < tp->nr_cpu_ids; c++) {
		struct sim_cpu *cpu = &s->cpu[c];

		if (!tp->cpus[c].present)
			continue;
		s->run_at = c;
		cpu->free_ns = 0;
		if (!cpu->n) {
			cpu->idle_ms++;
			s->llc_idle[tp->cpus[c].llc]++;
			continue;
		}
		s->llc_waiting[tp->cpus[c].llc] += cpu->n - 1;
		cpu->busy_ms++;
		run_cpu(s, c, 0);
	}
	s->run_at = -1;
	s->off_ns = 0;
	account_waste(s);
}

/*
 * Request tasks due now: the first model's by the dispatcher on LLC 0, for 2-8 ms; a
 * process's by its own message thread, for its burst_us.
 */
static void wake_requests(struct sim *s)
{
	int dispatcher = cpumask_first(&s->topo->llcs[0].cpus);

	for (int i = 0; i < s->nt; i++) {
		struct sim_task *t = &s->t[i];
		struct sim_proc *p;

		if (t->kind != SIM_REQ || !t->alive || t->queued || t->wake_ms != s->now_ms)
			continue;
		if (t->proc < 0) {
			t->left_ns = (2 + (int64_t)(sim_rand(s) % 7)) * MS_NS;
			sim_wake(s, i, &s->disp, dispatcher);
			continue;
		}
		p = &s->proc[t->proc];
		t->left_ns = (int64_t)p->burst_us * (int64_t)NSEC_PER_USEC;
		sim_wake(s, i, p->disp_cpu >= 0 ? &p->disp : NULL, p->disp_cpu);
	}
}

void sim_step(struct sim *s)
{
	cache_update(s);
	wake_requests(s);
	run_cpus(s);
	newidle(s);
	s->now_ms++;
	for (int l = 0; l < s->topo->nllcs && s->lb_spare; l++)
		llc_balance(s, sim_nth_cpu(&s->topo->llcs[l].cpus, (int)(s->now_ms %
						(uint64_t)s->topo->llcs[l].ncpus)));
	if (s->kinds && s->now_ms % ASYM_MS == 0)
		asym_balance(s);
	if (s->now_ms % (uint64_t)s->kernel_lb_ms == 0 && s->lb_spare)
		kernel_lb_spare(s);
	else if (s->now_ms % (uint64_t)s->kernel_lb_ms == 0)
		kernel_lb(s);
	if (s->now_ms % (uint64_t)s->tick_ms == 0)
		sim_balance(s);
}

const char *sim_invariants(const struct sim *s)
{
	const struct topo *tp = s->topo;
	int queued = 0, listed = 0;

	for (int i = 0; i < s->nt; i++) {
		const struct sim_task *t = &s->t[i];

		if (!t->queued)
			continue;
		if (!t->alive)
			return "a departed task is still queued";
		if (!CPU_ISSET(t->cpu, &t->allowed))
			return "a task is queued on a CPU it is not allowed on";
		queued++;
	}
	for (int c = 0; c < tp->nr_cpu_ids; c++)
		for (int k = 0; k < s->cpu[c].n; k++) {
			const struct sim_task *t = &s->t[s->cpu[c].q[k]];

			if (!t->queued || t->cpu != c)
				return "a run queue holds a task that is not queued there";
			listed++;
		}
	if (queued != listed)
		return "tasks are not conserved: queued and listed counts differ";
	return NULL;
}
