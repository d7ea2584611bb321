/*
 * Sample stage, replay sampler: hands the daemon snapshots from a file (written by
 * --record, by a test, or by the simulator) instead of reading the system.
 * The tasks named are real or not; this sampler never checks, and never writes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sample/sampler.h"
#include "util/log.h"

struct replay {
	pid_t self_tgid;
	struct snapshot **snaps;
	size_t n;
	size_t next;
};

/* Copies from into to, whose time is now_ns: a CPU's sample keeps its age. */
static int copy_snap(const struct snapshot *from, uint64_t now_ns, struct snapshot *to)
{
	to->seq = from->seq;
	memcpy(to->cpus, from->cpus, (size_t)from->nr_cpu_ids * sizeof(*to->cpus));
	for (int c = 0; c < from->nr_cpu_ids; c++) {
		uint64_t age = snap_cpu_sampled(from, c) <= from->now_ns
				       ? from->now_ns - snap_cpu_sampled(from, c) : 0;

		to->cpus[c].sample_ns = age && age < now_ns ? now_ns - age : 0;
	}
	for (size_t i = 0; i < from->ntasks; i++)
		if (!snap_add_task(to, &from->tasks[i], from->tasks[i].cgroup))
			return -ENOMEM;
	/* The latency tasks too: the placement rules read them, and the daemon asks no
	 * one else for them in a replay. */
	for (size_t i = 0; i < from->nlat; i++) {
		const struct snap_lat *l = &from->lat[i];
		int r = snap_add_lat(to, l->tid, l->start_time, l->value);

		if (r == 0 && l->ran_cpu >= 0)
			r = snap_lat_ran(to, l->tid, l->start_time, l->ran_cpu);
		if (r < 0)
			return r;
	}
	return 0;
}

static int replay_sample(struct sampler *sm, uint64_t now_ns, struct snapshot *s)
{
	struct replay *rp = sm->priv;
	const struct snapshot *from = rp->snaps[rp->next];

	if (rp->next + 1 < rp->n)
		rp->next++;
	/* Time is the tick's: the file's clock is for the simulator. */
	s->now_ns = now_ns;
	s->self_tgid = rp->self_tgid;
	/* Ages are the file's: its tasks' start times are of the moment it was written. */
	s->uptime_ticks = from->uptime_ticks;
	s->tick_hz = from->tick_hz;
	return copy_snap(from, now_ns, s);
}

static void replay_free(struct sampler *sm)
{
	struct replay *rp = sm->priv;

	for (size_t i = 0; i < rp->n; i++)
		snap_free(rp->snaps[i]);
	free(rp->snaps);
	free(rp);
	free(sm);
}

static const struct sampler_ops replay_ops = {
	.name = "replay",
	.sample = replay_sample,
	.free = replay_free,
};

static int read_replay(struct replay *rp, const char *path, FILE *f, const struct topo *t)
{
	unsigned line = 0;
	char err[256];

	for (;;) {
		struct snapshot *s = snap_new(t), **a;
		int r;

		if (!s)
			return -ENOMEM;
		r = snap_read(f, s, &line, err, sizeof(err));
		if (r <= 0) {
			snap_free(s);
			if (r == -EINVAL)
				log_err("%s:%u: %s", path, line, err);
			else if (r == 0 && rp->n == 0)
				log_err("%s: no snapshot in the file", path);
			return r < 0 ? r : rp->n ? 0 : -ENODATA;
		}
		a = realloc(rp->snaps, (rp->n + 1) * sizeof(*a));
		if (!a) {
			snap_free(s);
			return -ENOMEM;
		}
		rp->snaps = a;
		rp->snaps[rp->n++] = s;
	}
}

int replay_sampler_new(const char *path, const struct topo *t, pid_t self_tgid,
		       struct sampler **ret)
{
	struct sampler *sm = calloc(1, sizeof(*sm));
	struct replay *rp = calloc(1, sizeof(*rp));
	FILE *f;
	int r;

	if (!sm || !rp) {
		free(sm);
		free(rp);
		return -ENOMEM;
	}
	sm->ops = &replay_ops;
	sm->priv = rp;
	rp->self_tgid = self_tgid;
	f = fopen(path, "re");
	if (!f) {
		r = -errno;
		log_err("%s: cannot open replay file: %s", path, strerror(-r));
		replay_free(sm);
		return r;
	}
	r = read_replay(rp, path, f, t);
	fclose(f);
	if (r < 0) {
		replay_free(sm);
		return r;
	}
	*ret = sm;
	return 0;
}
