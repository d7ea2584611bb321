/*
 * Sample stage: what all samplers share, and the tick's whole snapshot (sampler_tick):
 * the sampler's counts, then what the placement rules read beside them.
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "rqbalance.h"
#include "proc/procfs.h"
#include "sample/sampler.h"
#include "util/log.h"
#include "util/sorted.h"

void sampler_stamp_uptime(struct snapshot *s)
{
	long hz = sysconf(_SC_CLK_TCK);
	struct timespec ts;

	if (hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		return;
	s->tick_hz = (uint32_t)hz;
	s->uptime_ticks = (uint64_t)ts.tv_sec * (uint64_t)hz +
			  (uint64_t)ts.tv_nsec / (NSEC_PER_SEC / (uint64_t)hz);
}

bool sampler_pairs(struct sampler *sm, const struct topo *t, bool on)
{
	return sm->ops->pairs && sm->ops->pairs(sm, t, on);
}

bool sampler_walks_unprivileged(struct sampler *sm)
{
	return !sm->ops->walks_unprivileged || sm->ops->walks_unprivileged(sm);
}

void sampler_free(struct sampler *sm)
{
	if (sm)
		sm->ops->free(sm);
}

static int cmp_lat_tid(const void *key, const void *elem)
{
	pid_t k = *(const pid_t *)key, e = ((const struct sample_lat *)elem)->tid;

	return (k > e) - (k < e);
}

/* Each listed task with a value takes it, if it is the task the value was given to. */
static void lat_values(const struct sample_asks *a, struct snapshot *s)
{
	for (size_t i = 0; i < s->ntasks; i++) {
		const struct sample_lat *l = sorted_find(a->lat, a->nlat, sizeof(*l),
							 &s->tasks[i].tid, cmp_lat_tid);

		if (l && l->start_time == s->tasks[i].start_time)
			s->tasks[i].lat_nice = l->value;
	}
}

/* The tasks with a negative value, where they last ran, as latency records. */
static int lat_records(const struct sample_asks *a, struct snapshot *s)
{
	struct latseen_task *neg = a->nlat ? calloc(a->nlat, sizeof(*neg)) : NULL;
	size_t n = 0;
	int r;

	if (a->nlat && !neg)
		return -ENOMEM;
	for (size_t k = 0; k < a->nlat; k++)
		if (a->lat[k].value < 0)
			neg[n++] = (struct latseen_task){ .tid = a->lat[k].tid,
							  .tgid = a->lat[k].tgid,
							  .start_time = a->lat[k].start_time,
							  .value = a->lat[k].value };
	r = latseen_fill(a->seen, "", neg, n, s);
	free(neg);
	return r;
}

static int cmp_task_tgid(const void *a, const void *b)
{
	const struct snap_task *x = *(const struct snap_task *const *)a;
	const struct snap_task *y = *(const struct snap_task *const *)b;

	return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

/*
 * keep_together's working-set proxy: the resident set of each process with two user
 * tasks listed or more (a process with one is never held, so the rest cost nothing).
 */
static int processes_rss(struct snapshot *s)
{
	struct snap_task **by;
	size_t n = 0;

	if (s->ntasks < 2)
		return 0;
	by = calloc(s->ntasks, sizeof(*by));
	if (!by)
		return -ENOMEM;
	for (size_t i = 0; i < s->ntasks; i++)
		if (!(s->tasks[i].flags & SNAP_TASK_KTHREAD))
			by[n++] = &s->tasks[i];
	qsort(by, n, sizeof(*by), cmp_task_tgid);
	for (size_t i = 0, j; i < n; i = j) {
		uint64_t kb = 0;

		for (j = i + 1; j < n && by[j]->tgid == by[i]->tgid; j++)
			;
		if (j - i < 2 || procfs_rss_kb("", by[i]->tgid, &kb) < 0)
			continue;
		for (size_t k = i; k < j; k++)
			by[k]->rss_kb = kb;
	}
	free(by);
	return 0;
}

int sampler_tick(struct sampler *sm, uint64_t now_ns, const struct sample_asks *a,
		struct snapshot *s)
{
	int r = sampler_sample(sm, now_ns, s);

	if (r < 0 || !a)
		return r;
	if (a->seen) {
		lat_values(a, s);
		if (lat_records(a, s) < 0)
			log_debug("latency_apart: out of memory for the latency tasks");
	}
	if (a->rss && processes_rss(s) < 0)
		log_debug("keep_together: out of memory for the processes' resident sets");
	return 0;
}
