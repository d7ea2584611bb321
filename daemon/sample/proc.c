/*
 * Sample stage, /proc sampler: per-CPU busy time from /proc/stat and the runnable
 * tasks per CPU. It walks all of /proc only rarely (rescan_ms, or sooner when more
 * tasks run than it follows) and otherwise re-reads the stat files of the tasks it
 * follows, kept open. It only reads; it never changes a task.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rqbalance.h"
#include "proc/parse.h"
#include "proc/procfs.h"
#include "sample/sampler.h"
#include "util/log.h"
#include "util/util.h"
#include "testonly.h"

/* An early walk (more running than followed) comes at most this often: ~17 ms each. */
#define EARLY_WALK_GAP_NS NSEC_PER_SEC

/* A task the sampler follows between walks. */
struct ptask {
	pid_t tid, tgid;
	uint64_t start_time;
	int fd;                  /* its stat file, open */
	uint64_t cputime;        /* utime + stime at the last read, clock ticks */
	uint64_t active_ns;      /* last time it was runnable or gained CPU time */
	bool fresh;              /* added by the walk that just ran, not read yet */
	char *cgroup;
};

/* CPU time of every task at the last walk, to find who ran in between. */
struct seen {
	pid_t tid;
	uint64_t start_time;
	uint64_t cputime;
};

struct proc_sampler {
	struct proc_sampler_opts o;
	char root[PATH_MAX];
	int nr_cpus;                /* entries in the arrays below */
	uint64_t *busy, *total;     /* jiffies at the last read */
	uint64_t *nbusy, *ntotal;   /* scratch for the current read */
	bool have_prev;
	struct ptask *t;            /* sorted by tid */
	size_t n, cap;
	struct seen *seen;          /* sorted by tid */
	size_t nseen;
	uint64_t last_walk_ns;
	bool walked;
	unsigned excess_ticks;      /* ticks in a row with more running than followed */
	struct proc_stats stats;
};

static char *read_cgroup(const struct proc_sampler *ps, pid_t tgid, pid_t tid)
{
	char proc_root[PATH_MAX], cg[4096];

	snprintf(proc_root, sizeof(proc_root), "%s/proc", ps->root);
	if (procfs_cgroup(proc_root, tgid, tid, cg, sizeof(cg)) < 0)
		return NULL;
	return strdup(cg);
}

static int cmp_seen(const void *a, const void *b)
{
	const struct seen *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

static const struct seen *find_seen(const struct proc_sampler *ps, pid_t tid)
{
	struct seen key = { .tid = tid };

	return ps->nseen ? bsearch(&key, ps->seen, ps->nseen, sizeof(key), cmp_seen) : NULL;
}

static int cmp_ptask(const void *a, const void *b)
{
	const struct ptask *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

static struct ptask *find_tracked(struct proc_sampler *ps, pid_t tid)
{
	struct ptask key = { .tid = tid };

	return ps->n ? bsearch(&key, ps->t, ps->n, sizeof(key), cmp_ptask) : NULL;
}

static void untrack_at(struct proc_sampler *ps, size_t i)
{
	close(ps->t[i].fd);
	free(ps->t[i].cgroup);
	ps->t[i] = ps->t[--ps->n];
}

/* Walk scratch: what one pass over /proc found. */
struct walk {
	struct seen *seen;
	size_t n, cap;
	struct ptask *add;     /* newly active tasks, fd open */
	size_t nadd, addcap;
};

static void walk_task(struct proc_sampler *ps, struct walk *w, int taskdir, pid_t tgid,
		      const char *name, uint64_t now_ns)
{
	struct parse_stat_line l;
	const struct seen *old;
	struct seen *seen;
	struct ptask *tr, *add;
	char path[64];
	pid_t tid = (pid_t)atoi(name);
	uint64_t cpu_ticks;
	bool active;
	int fd;

	snprintf(path, sizeof(path), "%s/stat", name);
	fd = openat(taskdir, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	if (procfs_stat_fd(fd, &l) < 0) {
		close(fd);
		return;
	}
	cpu_ticks = l.utime + l.stime;
	seen = util_grow(w->seen, &w->cap, w->n, sizeof(*seen));
	if (seen) {
		w->seen = seen;
		w->seen[w->n++] = (struct seen){ tid, l.start_time, cpu_ticks };
	}
	old = find_seen(ps, tid);
	active = l.state == 'R' ||
		 (old && old->start_time == l.start_time && cpu_ticks > old->cputime);
	tr = find_tracked(ps, tid);
	if (tr && tr->start_time == l.start_time) {
		if (active)
			tr->active_ns = now_ns;
		close(fd);
		return;
	}
	add = active && ps->n + w->nadd < ps->o.max_tracked
		      ? util_grow(w->add, &w->addcap, w->nadd, sizeof(*add))
		      : NULL;
	if (!add) {
		close(fd);
		return;
	}
	w->add = add;
	w->add[w->nadd++] = (struct ptask){ .tid = tid, .tgid = tgid, .start_time = l.start_time,
					     .fd = fd, .cputime = cpu_ticks, .active_ns = now_ns,
					     .fresh = true, .cgroup = read_cgroup(ps, tgid, tid) };
}

static void walk_process(struct proc_sampler *ps, struct walk *w, int procfd, const char *name,
			 uint64_t now_ns)
{
	pid_t tgid = (pid_t)atoi(name);
	char path[64];
	struct dirent *de;
	int fd;
	DIR *d;

	if (tgid == ps->o.self_tgid)
		return;
	snprintf(path, sizeof(path), "%s/task", name);
	fd = openat(procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (isdigit((unsigned char)de->d_name[0]))
			walk_task(ps, w, dirfd(d), tgid, de->d_name, now_ns);
	closedir(d);
}

/* Drops tasks that were idle for a whole walk interval; adds the newly active. */
static void walk_merge(struct proc_sampler *ps, struct walk *w, uint64_t now_ns)
{
	for (size_t i = 0; i < ps->n;) {
		if (now_ns - ps->t[i].active_ns >= ps->o.rescan_ns)
			untrack_at(ps, i);
		else
			i++;
	}
	if (ps->n + w->nadd > ps->cap) {
		size_t cap = ps->n + w->nadd;
		struct ptask *a = realloc(ps->t, cap * sizeof(*a));

		if (!a) {
			for (size_t i = 0; i < w->nadd; i++) {
				close(w->add[i].fd);
				free(w->add[i].cgroup);
			}
			w->nadd = 0;
		} else {
			ps->t = a;
			ps->cap = cap;
		}
	}
	/* Empty arrays may be NULL, which memcpy and qsort must not be given. */
	if (w->nadd)
		memcpy(ps->t + ps->n, w->add, w->nadd * sizeof(*w->add));
	ps->n += w->nadd;
	if (ps->n > 1)
		qsort(ps->t, ps->n, sizeof(*ps->t), cmp_ptask);
	if (w->n > 1)
		qsort(w->seen, w->n, sizeof(*w->seen), cmp_seen);
	free(ps->seen);
	ps->seen = w->seen;
	ps->nseen = w->n;
	w->seen = NULL;
}

static int walk(struct proc_sampler *ps, uint64_t now_ns)
{
	struct walk w = { 0 };
	struct dirent *de;
	char path[PATH_MAX];
	DIR *d;

	snprintf(path, sizeof(path), "%s/proc", ps->root);
	d = opendir(path);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (isdigit((unsigned char)de->d_name[0]))
			walk_process(ps, &w, dirfd(d), de->d_name, now_ns);
	closedir(d);
	walk_merge(ps, &w, now_ns);
	free(w.seen);
	free(w.add);
	ps->last_walk_ns = now_ns;
	ps->walked = true;
	ps->stats.rescans++;
	return 0;
}

static int read_cpustat(struct proc_sampler *ps, struct snapshot *s, unsigned *ret_running)
{
	char path[PATH_MAX], buf[65536];
	ssize_t n;
	int r;

	snprintf(path, sizeof(path), "%s/proc/stat", ps->root);
	n = util_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	r = parse_cpustat(buf, ps->nr_cpus, ps->nbusy, ps->ntotal, ret_running);
	if (r < 0)
		return r;
	for (int c = 0; c < ps->nr_cpus && c < s->nr_cpu_ids; c++) {
		uint64_t db = ps->nbusy[c] - ps->busy[c], dt = ps->ntotal[c] - ps->total[c];

		if (ps->have_prev && dt > 0 && ps->ntotal[c] >= ps->total[c])
			s->cpus[c].busy_pct = (uint32_t)(db * 100 / dt > 100 ? 100 : db * 100 / dt);
	}
	memcpy(ps->busy, ps->nbusy, (size_t)ps->nr_cpus * sizeof(*ps->busy));
	memcpy(ps->total, ps->ntotal, (size_t)ps->nr_cpus * sizeof(*ps->total));
	ps->have_prev = true;
	return 0;
}

/* Re-reads one followed task; adds it to s if runnable. 1 if runnable, 0, or -ESRCH. */
static int read_task(struct proc_sampler *ps, struct ptask *t, uint64_t now_ns,
		     struct snapshot *s)
{
	struct parse_stat_line l;
	struct snap_task st = { 0 };
	uint64_t used;

	ps->stats.stat_reads++;
	if (procfs_stat_fd(t->fd, &l) < 0 ||
	    l.start_time != t->start_time)
		return -ESRCH;
	/* CPU time since the last read; for a task just found, since it started. */
	used = t->fresh ? l.utime + l.stime : l.utime + l.stime - t->cputime;
	if (l.state == 'R' || used)
		t->active_ns = now_ns;
	t->cputime = l.utime + l.stime;
	if (l.state != 'R')
		return 0;
	if (l.cpu >= s->nr_cpu_ids)
		return 0;
	if (sched_getaffinity(t->tid, sizeof(st.allowed), &st.allowed) < 0)
		return -ESRCH;
	st.tid = t->tid;
	st.tgid = t->tgid;
	st.cpu = l.cpu;
	st.start_time = l.start_time;
	st.flags = (l.flags & PARSE_PF_KTHREAD) ? SNAP_TASK_KTHREAD : 0;
	if (!used)
		st.flags |= SNAP_TASK_NO_CPU;
	memcpy(st.comm, l.comm, sizeof(st.comm));
	if (!snap_add_task(s, &st, t->cgroup))
		return -ENOMEM;
	s->cpus[l.cpu].nr_running++;
	return 1;
}

/* Re-reads the followed tasks (only the fresh ones if only_fresh); counts the runnable. */
static int read_tracked(struct proc_sampler *ps, uint64_t now_ns, struct snapshot *s,
			bool only_fresh, unsigned *runnable)
{
	for (size_t i = 0; i < ps->n;) {
		int r = 0;

		if (!only_fresh || ps->t[i].fresh)
			r = read_task(ps, &ps->t[i], now_ns, s);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			untrack_at(ps, i);
			continue;
		}
		ps->t[i].fresh = false;
		*runnable += (unsigned)r;
		i++;
	}
	/* untrack_at() moves the last entry into the hole: restore the order. */
	if (ps->n > 1)
		qsort(ps->t, ps->n, sizeof(*ps->t), cmp_ptask);
	return 0;
}

static int proc_sample(struct sampler *sm, uint64_t now_ns, struct snapshot *s)
{
	struct proc_sampler *ps = sm->priv;
	unsigned running = 0, found = 0;
	int r;

	s->self_tgid = ps->o.self_tgid;
	sampler_stamp_uptime(s);
	r = read_cpustat(ps, s, &running);
	if (r < 0)
		return r;
	if (!ps->walked || now_ns - ps->last_walk_ns >= ps->o.rescan_ns) {
		r = walk(ps, now_ns);
		if (r < 0)
			return r;
	}
	r = read_tracked(ps, now_ns, s, false, &found);
	if (r < 0)
		return r;
	/*
	 * procs_running counts us too. When, two ticks in a row, more run than we follow,
	 * someone new is busy (a task that ran for an instant is not worth a walk): walk
	 * again now, but no more often than once a second, and read just the
	 * tasks that walk added.
	 */
	ps->excess_ticks = running > found + 1 ? ps->excess_ticks + 1 : 0;
	if (ps->excess_ticks >= 2 && now_ns - ps->last_walk_ns >= EARLY_WALK_GAP_NS) {
		r = walk(ps, now_ns);
		if (r == 0)
			r = read_tracked(ps, now_ns, s, true, &found);
		ps->excess_ticks = 0;
	}
	return r;
}

static void proc_free(struct sampler *sm)
{
	struct proc_sampler *ps = sm->priv;

	while (ps->n)
		untrack_at(ps, ps->n - 1);
	free(ps->t);
	free(ps->seen);
	free(ps->busy);
	free(ps->total);
	free(ps->nbusy);
	free(ps->ntotal);
	free(ps);
	free(sm);
}

static const struct sampler_ops proc_ops = {
	.name = "proc",
	.sample = proc_sample,
	.free = proc_free,
};

int proc_sampler_new(const struct proc_sampler_opts *o, struct sampler **ret)
{
	struct sampler *sm = calloc(1, sizeof(*sm));
	struct proc_sampler *ps = calloc(1, sizeof(*ps));

	if (!sm || !ps) {
		free(sm);
		free(ps);
		return -ENOMEM;
	}
	ps->o = *o;
	snprintf(ps->root, sizeof(ps->root), "%s", o->root ? o->root : "");
	ps->nr_cpus = RQB_MAX_CPUS;
	ps->busy = calloc(RQB_MAX_CPUS, sizeof(uint64_t));
	ps->total = calloc(RQB_MAX_CPUS, sizeof(uint64_t));
	ps->nbusy = calloc(RQB_MAX_CPUS, sizeof(uint64_t));
	ps->ntotal = calloc(RQB_MAX_CPUS, sizeof(uint64_t));
	sm->ops = &proc_ops;
	sm->priv = ps;
	if (!ps->busy || !ps->total || !ps->nbusy || !ps->ntotal) {
		proc_free(sm);
		return -ENOMEM;
	}
	*ret = sm;
	return 0;
}

void proc_sampler_stats(const struct sampler *sm, struct proc_stats *ret)
{
	const struct proc_sampler *ps = sm->priv;

	if (sm->ops != &proc_ops) {
		*ret = (struct proc_stats){ 0 };
		return;
	}
	*ret = ps->stats;
	ret->tracked = (unsigned)ps->n;
}
