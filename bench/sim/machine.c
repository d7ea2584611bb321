/*
 * The simulated machine and the kernel model: 1 ms steps; round-robin run queues with
 * a 4 ms slice; wakeups placed as the kernel does, simply (wake_wide() from the wakee
 * flips of waker and wakee; if not wide, wake affine toward the waker's LLC, else the
 * wakee's previous LLC; then an idle sibling in that LLC); an idle CPU pulls waiting
 * work from its own LLC at once; across LLCs, a periodic balance moves one waiting task
 * every kernel_lb_ms, from the LLC with the highest utilization to the lowest. A task
 * that changes LLC runs COLD_MS without progress (its cache is elsewhere); a pair's
 * burst run away from its waker's LLC costs cross_llc_penalty_pct more. Only the
 * balancer under test changes affinities, and never outside a plan.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rqbalance.h"
#include "sim.h"
#include "util/cpumask.h"

#define SLICE_MS 4
#define COLD_MS 2
#define PAIR_BURST_MS 4   /* a pair's burst, on average: 3, 4 or 5 ms, drawn from the seed */
#define PAIR_OVERLAP_MS 2 /* a pair's task wakes its partner this long before it sleeps */
#define FLIP_DECAY_MS 1000 /* record_wakee() halves the flips once per HZ jiffies */
#define LISTENERS 64      /* distinct listeners a pair's task may wake besides its partner */

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
	s->cpu = calloc((size_t)t->nr_cpu_ids, sizeof(*s->cpu));
	s->llc_waiting = calloc((size_t)t->nllcs, sizeof(long));
	s->llc_idle = calloc((size_t)t->nllcs, sizeof(long));
	s->snap = snap_new(t);
	if (!s->cpu || !s->snap || !s->llc_waiting || !s->llc_idle)
		return -ENOMEM;
	return 0;
}

void sim_fini(struct sim *s)
{
	for (int c = 0; s->cpu && c < s->topo->nr_cpu_ids; c++)
		free(s->cpu[c].q);
	free(s->cpu);
	free(s->llc_waiting);
	free(s->llc_idle);
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
	t->partner = -1;
	t->cpu = -1;
	t->moved_from_llc = -1;
	t->wf.last_wakee = SIM_NO_WAKEE;
	t->allowed = s->topo->online;
	t->orig = s->topo->online;
	return s->nt++;
}

/* ---- run queues ---- */

static void enqueue(struct sim *s, int i, int cpu)
{
	struct sim_cpu *c = &s->cpu[cpu];
	struct sim_task *t = &s->t[i];

	if (c->n == c->cap) {
		c->cap = c->cap ? c->cap * 2 : 8;
		c->q = realloc(c->q, (size_t)c->cap * sizeof(int));
		if (!c->q)
			abort(); /* a simulator out of memory has nothing to report */
	}
	c->q[c->n++] = i;
	if (t->cpu >= 0 && t->cpu != cpu) {
		s->st.migrations++;
		if (s->topo->cpus[t->cpu].llc != s->topo->cpus[cpu].llc)
			t->cold_ms = COLD_MS;
	}
	t->cpu = cpu;
	t->queued = true;
	if (c->n == 1)
		t->slice_ms = 0;
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
		s->t[c->q[0]].slice_ms = 0;
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

/* select_task_rq, simply: prev if idle, else an idle sibling in the target LLC. */
static int place(const struct sim *s, int i, int target_llc, int prefer)
{
	int c;

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

void sim_wake(struct sim *s, int i, struct sim_flips *waker, int waker_cpu)
{
	struct sim_task *t = &s->t[i];
	int prev = t->cpu >= 0 ? t->cpu : 0;
	int llc = s->topo->cpus[prev].llc;

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
		else
			llc = s->topo->cpus[waker_cpu].llc;
	}
	enqueue(s, i, place(s, i, llc, prev));
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
	sim_wake(s, t->partner, &t->wf, t->cpu);
	/* Away from the waker's LLC the data it hands over is cold: the burst costs more. */
	burst = pair_burst_ms(s);
	p->left_ms = s->topo->cpus[p->cpu].llc != s->topo->cpus[t->cpu].llc
			     ? burst + burst * s->cross_llc_penalty_pct / 100
			     : burst;
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
		t->left_ms = pair_burst_ms(s);
		return;
	}
	dequeue(s, i);
	/* Think time: uniform over 1-40 ms, mean about 20. */
	if (t->kind == SIM_REQ)
		t->wake_ms = s->now_ms + 1 + sim_rand(s) % 40;
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

static void run_cpus(struct sim *s)
{
	const struct topo *tp = s->topo;

	memset(s->llc_waiting, 0, (size_t)tp->nllcs * sizeof(long));
	memset(s->llc_idle, 0, (size_t)tp->nllcs * sizeof(long));
	for (int c = 0; c < tp->nr_cpu_ids; c++) {
		struct sim_cpu *cpu = &s->cpu[c];
		struct sim_task *t;
		int i;

		if (!tp->cpus[c].present)
			continue;
		if (!cpu->n) {
			cpu->idle_ms++;
			s->llc_idle[tp->cpus[c].llc]++;
			continue;
		}
		s->llc_waiting[tp->cpus[c].llc] += cpu->n - 1;
		cpu->busy_ms++;
		i = cpu->q[0];
		t = &s->t[i];
		t->slice_ms++;
		t->ran_ms++;
		if (t->cold_ms > 0) {
			t->cold_ms--;
		} else {
			s->st.work_ms++;
			t->work_ms++;
			if (t->kind != SIM_HOG)
				t->left_ms--;
			if (t->kind == SIM_PAIR && t->left_ms == PAIR_OVERLAP_MS)
				wake_partner(s, i);
			if (t->kind != SIM_HOG && t->left_ms <= 0) {
				finish_burst(s, i);
				continue;
			}
		}
		if (t->slice_ms >= SLICE_MS && cpu->n > 1) {
			memmove(&cpu->q[0], &cpu->q[1], (size_t)(cpu->n - 1) * sizeof(int));
			cpu->q[cpu->n - 1] = i;
			s->t[cpu->q[0]].slice_ms = 0;
		}
	}
	account_waste(s);
}

static void wake_requests(struct sim *s)
{
	int dispatcher = cpumask_first(&s->topo->llcs[0].cpus);

	for (int i = 0; i < s->nt; i++) {
		struct sim_task *t = &s->t[i];

		if (t->kind == SIM_REQ && t->alive && !t->queued && t->wake_ms == s->now_ms) {
			t->left_ms = 2 + (int)(sim_rand(s) % 7);
			sim_wake(s, i, &s->disp, dispatcher);
		}
	}
}

void sim_step(struct sim *s)
{
	wake_requests(s);
	run_cpus(s);
	newidle(s);
	s->now_ms++;
	if (s->now_ms % (uint64_t)s->kernel_lb_ms == 0)
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
