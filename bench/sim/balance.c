/*
 * The balancers in the simulator's loop, once a tick: none, the utilization puller,
 * and rqbalance's own spread_decide() fed a snapshot built like the daemon's (the proc
 * sampler's tasks, with the latency-nice values, latency tasks and resident sets that
 * keep_together and latency_apart read). Also the per-tick metrics. The plan is applied
 * as sched_setaffinity would: the task moves at once if its CPU is no longer allowed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rqbalance.h"
#include "sim.h"
#include "util/cpumask.h"

#define PINGPONG_TICKS 10 /* back to an LLC it left within this many ticks (1 s) */
#define PULLER_HOLD_TICKS 10

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Narrows task i to mask, as the actuator would, and keeps the move's accounts. */
static void set_affinity(struct sim *s, int i, const cpu_set_t *mask, int to_llc)
{
	struct sim_task *t = &s->t[i];
	int from_llc = t->cpu >= 0 ? s->topo->cpus[t->cpu].llc : -1;

	if (to_llc >= 0) {
		s->st.moves++;
		if (t->queued && s->cpu[t->cpu].n == 1)
			s->st.single_pulls++;
		if (t->moved_from_llc == to_llc && s->st.ticks - t->moved_tick <= PINGPONG_TICKS)
			s->st.pingpong++;
		t->moved_from_llc = from_llc;
		t->moved_tick = s->st.ticks;
	}
	t->allowed = *mask;
	if (t->queued && !CPU_ISSET(t->cpu, mask)) {
		/* Like the kernel's migration on an affinity change: the least busy allowed CPU. */
		int best = sim_least_loaded(s, i, -1);

		if (best >= 0)
			sim_migrate(s, i, best);
	}
}

/*
 * Every live task with a negative latency-nice value, runnable or not, as the latency
 * actuator lists them (start_time is the tid, as in the task lines), and where each
 * ran last if it ran since the last tick, as latseen.c finds through /proc (it looks
 * at LATSEEN_LOOKS a tick; no scenario here has as many).
 */
static void latency_tasks(struct sim *s)
{
	for (int i = 0; i < s->nt; i++) {
		const struct sim_task *t = &s->t[i];

		if (!t->alive || t->lat_nice >= 0)
			continue;
		if (snap_add_lat(s->snap, t->tid, (uint64_t)t->tid, t->lat_nice) < 0 ||
		    (t->ran_ms && snap_lat_ran(s->snap, t->tid, (uint64_t)t->tid, t->cpu) < 0))
			abort();
	}
}

/* The snapshot the proc sampler would take: runnable tasks and busy time per CPU. */
static void snapshot(struct sim *s)
{
	struct snapshot *sn = s->snap;

	snap_reset(sn);
	sn->seq = s->st.ticks;
	sn->now_ns = s->now_ms * NSEC_PER_MSEC;
	sn->self_tgid = 1;
	for (int c = 0; c < s->topo->nr_cpu_ids; c++) {
		struct sim_cpu *cpu = &s->cpu[c];
		unsigned total = cpu->busy_ms + cpu->idle_ms;

		if (!s->topo->cpus[c].present)
			continue;
		sn->cpus[c].nr_running = (uint32_t)cpu->n;
		sn->cpus[c].busy_pct = total ? cpu->busy_ms * 100 / total : 0;
		for (int k = 0; k < cpu->n; k++) {
			const struct sim_task *t = &s->t[cpu->q[k]];
			const struct sim_proc *p = t->proc >= 0 ? &s->proc[t->proc] : NULL;
			struct snap_task st = { .tid = t->tid, .tgid = p ? p->tgid : t->tid,
						.cpu = c, .start_time = (uint64_t)t->tid,
						.allowed = t->allowed, .lat_nice = t->lat_nice,
						.rss_kb = p ? p->rss_kb : 0 };

			st.partner = t->partner >= 0 ? s->t[t->partner].tid : 0;
			if (!t->ran_ms)
				st.flags |= SNAP_TASK_NO_CPU;
			snprintf(st.comm, sizeof(st.comm), "%s",
				 t->kind == SIM_HOG ? "hog" : t->kind == SIM_REQ ? "req" : "pair");
			if (!snap_add_task(sn, &st, NULL))
				abort();
		}
	}
	latency_tasks(s);
}

/*
 * The placement rules' plan lines, counted by their why; a release names its own
 * reason, not the rule, so each task remembers whether keep_together pinned it.
 */
static void count_action(struct sim *s, struct sim_task *t, const struct plan_action *a)
{
	struct sim_stats *st = &s->st;

	if (a->op == PLAN_UNPIN) {
		st->unpins_together += t->held;
		st->unpins_short += !strcmp(a->why, "short");
		st->unpins_crowded += !strcmp(a->why, "crowded");
		t->held = false;
		return;
	}
	t->held = !strcmp(a->why, "together");
	st->pins_together += t->held;
	st->pins_latency += !strcmp(a->why, "latency");
	st->pins_apart += !strcmp(a->why, "apart");
	st->pins_fast += !strcmp(a->why, "fast");
	st->pins_off_fast += !strcmp(a->why, "off_fast");
}

static void rqbalance(struct sim *s)
{
	struct spread_conf sc;
	uint64_t t0;

	conf_spread(&s->conf, &sc);
	snapshot(s);
	plan_clear(&s->plan);
	t0 = mono_ns();
	if (spread_decide(s->snap, &sc, &s->pol, &s->plan) < 0)
		abort();
	s->decide_ns += mono_ns() - t0;
	for (size_t k = 0; k < s->plan.n; k++) {
		const struct plan_action *a = &s->plan.a[k];
		int i = a->tid - 1000;

		if (i < 0 || i >= s->nt || !s->t[i].alive) {
			spread_forget(&s->pol, a->tid, a->start_time, false);
			continue;
		}
		count_action(s, &s->t[i], a);
		set_affinity(s, i, a->op == PLAN_PIN ? &a->mask : &s->t[i].orig,
			     a->op == PLAN_PIN ? a->to_llc : -1);
	}
}

/*
 * The behaviour "sched/fair: improve spreading of utilization" removed: take the most
 * utilized task (it ran the most in the last tick: a task alone on its CPU beats two
 * sharing one) to the least utilized LLC, if that LLC is clearly less utilized, even
 * when it runs alone where it is. Its pins last PULLER_HOLD_TICKS.
 */
static void puller(struct sim *s)
{
	const struct topo *tp = s->topo;
	double util[RQB_MAX_CPUS];
	int moves = 0;

	for (int i = 0; i < s->nt; i++)
		if (s->t[i].moved_from_llc >= 0 && !CPU_EQUAL(&s->t[i].allowed, &s->t[i].orig) &&
		    s->st.ticks - s->t[i].moved_tick >= PULLER_HOLD_TICKS)
			set_affinity(s, i, &s->t[i].orig, -1);
	for (int l = 0; l < tp->nllcs; l++)
		util[l] = 0;
	for (int c = 0; c < tp->nr_cpu_ids; c++)
		if (tp->cpus[c].present)
			util[tp->cpus[c].llc] += s->cpu[c].busy_ms / (double)s->tick_ms;
	for (int l = 0; l < tp->nllcs; l++)
		util[l] /= tp->llcs[l].ncpus;
	while (moves < (int)s->conf.max_moves_per_tick) {
		int src, dst = -1, i = -1;

		for (int k = 0; k < s->nt; k++)
			if (s->t[k].queued && CPU_EQUAL(&s->t[k].allowed, &s->t[k].orig) &&
			    (i < 0 || s->t[k].ran_ms > s->t[i].ran_ms))
				i = k;
		if (i < 0)
			break;
		src = s->t[i].cpu;
		for (int l = 0; l < tp->nllcs; l++)
			if (l != tp->cpus[src].llc && (dst < 0 || util[l] < util[dst]))
				dst = l;
		if (dst < 0 || util[tp->cpus[src].llc] < util[dst] * 1.17 + 0.01)
			break;
		set_affinity(s, i, &tp->llcs[dst].cpus, dst);
		util[dst] += 1.0 / tp->llcs[dst].ncpus;
		util[tp->cpus[src].llc] -= 1.0 / tp->llcs[tp->cpus[src].llc].ncpus;
		moves++;
	}
}

/* Per tick: runnable per LLC for the plot, its spread, and imbalance episodes. */
static void measure(struct sim *s)
{
	const struct topo *tp = s->topo;
	int nr[RQB_MAX_CPUS], idle[RQB_MAX_CPUS], mx = 0, mn = 1 << 30;
	bool over = false, spare = false;
	long local, cross;

	memset(nr, 0, sizeof(int) * (size_t)tp->nllcs);
	memset(idle, 0, sizeof(int) * (size_t)tp->nllcs);
	for (int c = 0; c < tp->nr_cpu_ids; c++)
		if (tp->cpus[c].present) {
			nr[tp->cpus[c].llc] += s->cpu[c].n;
			idle[tp->cpus[c].llc] += s->cpu[c].n == 0;
		}
	if (s->nseries + tp->nllcs > s->series_cap) {
		s->series_cap = (s->series_cap + tp->nllcs) * 2;
		s->series = realloc(s->series, (size_t)s->series_cap * sizeof(float));
		if (!s->series)
			abort();
	}
	for (int l = 0; l < tp->nllcs; l++) {
		s->series[s->nseries++] = (float)nr[l];
		mx = nr[l] > mx ? nr[l] : mx;
		mn = nr[l] < mn ? nr[l] : mn;
		over |= nr[l] > tp->llcs[l].ncpus;
		spare |= idle[l] > 0;
	}
	s->st.spread_sum += mx - mn;
	/* What the balancer sees now decides how the waste until the next tick counts. */
	sim_waste(s, &local, &cross);
	s->imb_seen = cross > 0;
	if (over && spare) {
		if (s->episode_len++ == 0)
			s->st.episodes++;
		s->st.episode_ticks++;
		if ((uint64_t)s->episode_len > s->st.episode_max)
			s->st.episode_max = (uint64_t)s->episode_len;
	} else {
		s->episode_len = 0;
	}
}

void sim_balance(struct sim *s)
{
	s->st.ticks++;
	measure(s);
	if (s->bal == SIM_RQB)
		rqbalance(s);
	else if (s->bal == SIM_PULLER)
		puller(s);
	for (int c = 0; c < s->topo->nr_cpu_ids; c++)
		s->cpu[c].busy_ms = s->cpu[c].idle_ms = 0;
	for (int i = 0; i < s->nt; i++)
		s->t[i].ran_ms = 0;
}
