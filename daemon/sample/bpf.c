/*
 * Sample stage, bpf sampler: per-CPU run queues as rqsample.bpf.c's perf event
 * programs last saw them, read from an mmapped array with no system call, plus a
 * full task walk through the BPF task iterator when the counts say someone is
 * missing. It fills the same snapshot as the proc sampler; it never changes a task.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/perf_event.h>
#include <linux/types.h>
#include <malloc.h>
#include <sched.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/caps.h"
#include "rqbalance.h"
#include "rqsample.skel.h"
#include "sample/bpf/rqsample.bpf.h"
#include "sample/bpfload.h"
#include "proc/parse.h"
#include "proc/procfs.h"
#include "sample/sampler.h"
#include "util/cpumask.h"
#include "util/log.h"
#include "util/util.h"
#include "testonly.h"

/* The perf period: half a tick, within these bounds. */
#define PERIOD_MIN_NS (1 * NSEC_PER_MSEC)
#define PERIOD_MAX_NS (10 * NSEC_PER_MSEC)
/* Some CPU must report within this long of the start. */
#define FIRST_SAMPLE_NS (2 * NSEC_PER_SEC)
#define SCHED_CAPACITY 1024

/* What the sampler remembers of a task it listed: its cgroup, its run time. */
struct btask {
	pid_t tid;
	uint64_t start_ns;
	uint64_t runtime_ns;
	uint64_t seen_ns;        /* the last tick that listed it */
	bool cgroup_read;        /* cgroup holds what /proc said (maybe NULL) */
	char *cgroup;
	pid_t partner;           /* keep_pairs: the task it and that one last woke each other */
	int partner_cpu;         /* where that one last ran, -1 if unknown */
	uint64_t partner_ns;     /* the last tick that saw them so */
	uint32_t nvcsw;          /* its voluntary switches when last listed with pairs read */
	bool nvcsw_known;
	pid_t woke;              /* whom it last woke, read when it had slept since listed */
	uint64_t woke_ns;        /* the tick of that reading; woke is kept PAIR_HOLD_NS */
	/* Why its readings made no pair, for the one debug line that says so (see below). */
	uint16_t reads, not_slept, not_back, wide;
	bool told;
};

/* Readings of one task that made no pair before the debug log says why. */
#define PAIR_TELL_AFTER 200

/*
 * How long a pair seen once stays a pair. A pair is believed only from a task that
 * slept since it was last listed, whose partner's record names it too (a timer that
 * woke a sleeper in an interrupt names whatever task it came upon), so sightings are
 * sparse (on the qemu tier's slow guest, more than 2 s apart at times). A pair that
 * stops waking each other is let go this long after.
 */
#define PAIR_HOLD_NS (10 * NSEC_PER_SEC)

/* Whether a CPU's perf event still runs, from its count. */
struct blindness {
	uint64_t count;          /* the event's count (ns of cpu-clock) at the last check */
	uint64_t checked_ns;
	bool gone;               /* the count stood still for a second */
	bool logged;
};

/* One listed task of this tick, before duplicates (a task seen on two CPUs) go. */
struct cand {
	const struct rqs_task *t;
	uint64_t ts_ns;          /* when the sample that listed it was taken */
};

struct bpf_sampler {
	struct bpf_sampler_opts o;
	char root[PATH_MAX];
	long clk_tck;
	struct rqsample *skel;
	const char *path_name;
	bool tp;                     /* sampled at the scheduler's tracepoints, not perf events */
	char tp_why[160];            /* why: perf events refused */
	uint64_t period_ns, stale_ns;
	uint64_t used_ns;            /* CPU time a task must use between ticks to count as busy */
	int ncpus;                   /* possible CPUs: slots in the array */
	size_t stride;               /* bytes a slot takes */
	void *map;                   /* the mmapped array */
	size_t map_len;
	cpu_set_t attached;          /* CPUs with a perf event (tracepoints: the online ones) */
	cpu_set_t online;            /* the online CPUs, read again once a second */
	uint64_t online_read_ns;
	int *perf_fds;               /* by CPU, -1 where none */
	struct bpf_link **links;     /* by CPU (tracepoints: the first two) */
	struct bpf_link *iter;
	struct bpf_link *waking;     /* note_waking, which keep_pairs reads; NULL if refused */
	struct rqs_cpu *recs;        /* the last whole copies, by CPU */
	bool *have;                  /* by CPU: recs[c] is a whole record */
	struct rqs_cpu *scratch;     /* one copy being made */
	struct blindness *blindness; /* by CPU */
	uint64_t *idle, *busy, *total; /* by CPU: /proc/stat's idle jiffies at idle_read_ns */
	uint64_t idle_read_ns;       /* 0: not read yet */
	struct cand *cands;
	size_t ncands, candcap;
	struct rqs_task *walked;     /* the last walk's tasks */
	size_t nwalked, walkcap;
	struct btask *known;         /* sorted by tid */
	size_t nknown, knowncap;
	size_t nknown_sorted;        /* the sorted prefix; the rest were added this tick */
	uint64_t prev_now_ns;
	uint64_t last_walk_ns;
	unsigned excess_ticks;
	struct bpf_stats stats;
	const struct topo *topo;     /* for the LLC sizes wake_wide() weighs pairs by; not owned */
	bool pairs;                  /* rqs_pairs is set: listed tasks say whom they wake */
};

static int why(const struct bpf_sampler_opts *o, int err, const char *fmt, ...)
{
	va_list ap;

	if (o->why && o->why_len) {
		va_start(ap, fmt);
		vsnprintf(o->why, o->why_len, fmt, ap);
		va_end(ap);
	}
	return err;
}

static uint64_t clamp_period(uint64_t interval_ns)
{
	uint64_t p = interval_ns / 2;

	return p < PERIOD_MIN_NS ? PERIOD_MIN_NS : p > PERIOD_MAX_NS ? PERIOD_MAX_NS : p;
}

/*
 * Opens and loads the object with one of the two perf programs, or with one of the
 * two pairs of tracepoint programs.
 */
static int load(struct bpf_sampler *bs, bool ksym)
{
	struct rqsample *skel = rqsample__open();
	int r;

	if (!skel)
		return -errno;
	skel->rodata->self_tgid = (__u32)bs->o.self_tgid;
	skel->rodata->min_gap_ns = bs->period_ns;
	bpf_program__set_autoload(skel->progs.sample_ksym, !bs->tp && ksym);
	bpf_program__set_autoload(skel->progs.sample_task, !bs->tp && !ksym);
	bpf_program__set_autoload(skel->progs.tick_ksym, bs->tp && ksym);
	bpf_program__set_autoload(skel->progs.switch_ksym, bs->tp && ksym);
	bpf_program__set_autoload(skel->progs.tick_task, bs->tp && !ksym);
	bpf_program__set_autoload(skel->progs.switch_task, bs->tp && !ksym);
	r = bpf_map__set_max_entries(skel->maps.cpus, (__u32)bs->ncpus);
	if (r == 0)
		r = rqsample__load(skel);
	if (r < 0) {
		rqsample__destroy(skel);
		return r;
	}
	bs->skel = skel;
	bs->path_name = ksym ? "runqueues ksym" : "current task";
	return 0;
}

static int load_any(struct bpf_sampler *bs)
{
	int r = load(bs, true);

	if (r == 0)
		return 0;
	log_debug("bpf: the runqueues ksym does not load here (%s): trying the current task",
		  strerror(-r));
	bpfload_begin("");
	r = load(bs, false);
	if (r < 0) {
		char text[512];

		bpfload_why(r, text, sizeof(text));
		return why(&bs->o, r, "loading the BPF programs: %s", text);
	}
	return 0;
}

static int map_slots(struct bpf_sampler *bs)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len;

	bs->stride = (sizeof(struct rqs_cpu) + 7) & ~(size_t)7;
	len = bs->stride * (size_t)bs->ncpus;
	len = (len + (size_t)page - 1) & ~((size_t)page - 1);
	bs->map = mmap(NULL, len, PROT_READ, MAP_SHARED, bpf_map__fd(bs->skel->maps.cpus), 0);
	if (bs->map == MAP_FAILED) {
		bs->map = NULL;
		return why(&bs->o, -errno, "mapping the per-CPU array: %s", strerror(errno));
	}
	bs->map_len = len;
	return 0;
}

static int open_cpu_clock(int cpu, uint64_t period_ns)
{
	struct perf_event_attr a = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(a),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		/* A fixed period: in frequency mode an idle CPU may get no samples at all. */
		.sample_period = period_ns,
		.disabled = 1,
	};
	long fd = syscall(SYS_perf_event_open, &a, -1, cpu, -1, PERF_FLAG_FD_CLOEXEC);

	return fd < 0 ? -errno : (int)fd;
}

static int read_online(const char *root, cpu_set_t *ret)
{
	char path[PATH_MAX], buf[CPUMASK_STRLEN];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/sys/devices/system/cpu/online", root);
	n = util_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	buf[strcspn(buf, "\n")] = '\0';
	return cpumask_parse(buf, ret);
}

/* The sampling program: the perf event's, or the tick tracepoint's. */
static struct bpf_program *perf_prog(const struct bpf_sampler *bs)
{
	const struct rqsample *k = bs->skel;

	if (bs->tp)
		return bpf_program__autoload(k->progs.tick_ksym) ? k->progs.tick_ksym
								 : k->progs.tick_task;
	return bpf_program__autoload(k->progs.sample_ksym) ? k->progs.sample_ksym
							   : k->progs.sample_task;
}

static struct bpf_program *switch_prog(const struct bpf_sampler *bs)
{
	const struct rqsample *k = bs->skel;

	return bpf_program__autoload(k->progs.switch_ksym) ? k->progs.switch_ksym
							   : k->progs.switch_task;
}

/*
 * Whether perf events are refused to this process, and why: the kernel's own rule
 * (paranoid above 2 takes CAP_SYS_ADMIN in Debian's kernels, whose default is 3; a
 * plain kernel treats 3 as 2) is read first, so that the call is not made to be
 * refused; else one cpu-clock event is opened on CPU cpu and closed.
 */
static bool perf_refused(struct bpf_sampler *bs, int cpu)
{
	char path[PATH_MAX], buf[32];
	uint64_t eff = 0, perm = 0;
	int paranoid = 2, fd;

	snprintf(path, sizeof(path), "%s/proc/sys/kernel/perf_event_paranoid", bs->root);
	if (util_read_file(path, buf, sizeof(buf)) > 0)
		paranoid = atoi(buf);
	if (paranoid > 2 && caps_get(&eff, &perm) == 0 && !(eff & (1ULL << CAP_SYS_ADMIN))) {
		snprintf(bs->tp_why, sizeof(bs->tp_why),
			 "kernel.perf_event_paranoid is %d, which takes CAP_SYS_ADMIN", paranoid);
		return true;
	}
	fd = open_cpu_clock(cpu, bs->period_ns);
	if (fd == -EACCES || fd == -EPERM) {
		snprintf(bs->tp_why, sizeof(bs->tp_why), "perf_event_open: %s", strerror(-fd));
		return true;
	}
	if (fd >= 0)
		close(fd);
	return false;
}

/*
 * What both triggers share: the task iterator, and note_waking, without which
 * keep_pairs sees no pair (said once here, and by bpf_pairs()).
 */
static int attach_rest(struct bpf_sampler *bs)
{
	bs->iter = bpf_program__attach_iter(bs->skel->progs.list_tasks, NULL);
	if (!bs->iter)
		return why(&bs->o, -errno, "attaching the task iterator: %s", strerror(errno));
	bs->waking = bpf_program__attach(bs->skel->progs.note_waking);
	if (!bs->waking)
		log_warn("bpf: attaching to sched_waking: %s: keep_pairs will see no wake pair",
			 strerror(errno));
	return 0;
}

/* The tracepoint trigger: two programs for every CPU, online now or later. */
static int attach_tp(struct bpf_sampler *bs)
{
	bs->links[0] = bpf_program__attach(perf_prog(bs));
	if (!bs->links[0])
		return why(&bs->o, -errno, "attaching to sched_stat_runtime: %s", strerror(errno));
	if (bs->ncpus > 1) {
		bs->links[1] = bpf_program__attach(switch_prog(bs));
		if (!bs->links[1])
			return why(&bs->o, -errno, "attaching to sched_switch: %s", strerror(errno));
	}
	bs->attached = bs->online;
	return attach_rest(bs);
}

/* The kernel's id of a loaded program, which bpftool shows; 0 if unknown. */
static unsigned prog_id(const struct bpf_program *prog)
{
	struct bpf_prog_info info = { 0 };
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) < 0 ? 0 : info.id;
}

static int attach(struct bpf_sampler *bs)
{
	struct bpf_program *prog = perf_prog(bs);
	cpu_set_t online;
	int r = read_online(bs->root, &online);

	if (r < 0)
		return why(&bs->o, r, "reading the online CPUs: %s", strerror(-r));
	CPU_ZERO(&bs->attached);
	bs->online = online;
	if (bs->tp)
		return attach_tp(bs);
	for (int c = 0; c < bs->ncpus && c < RQB_MAX_CPUS; c++) {
		if (!CPU_ISSET(c, &online))
			continue;
		bs->perf_fds[c] = open_cpu_clock(c, bs->period_ns);
		if (bs->perf_fds[c] < 0)
			return why(&bs->o, bs->perf_fds[c], "perf_event_open(cpu-clock) on CPU %d: %s%s",
				   c, strerror(-bs->perf_fds[c]),
				   bs->perf_fds[c] == -EACCES || bs->perf_fds[c] == -EPERM
					   ? " (needs CAP_PERFMON)" : "");
		bs->links[c] = bpf_program__attach_perf_event(prog, bs->perf_fds[c]);
		if (!bs->links[c])
			return why(&bs->o, -errno, "attaching to CPU %d's perf event: %s", c,
				   strerror(errno));
		CPU_SET(c, &bs->attached);
	}
	return attach_rest(bs);
}

static const struct rqs_cpu *slot(const struct bpf_sampler *bs, int cpu)
{
	return (const struct rqs_cpu *)((const char *)bs->map + (size_t)cpu * bs->stride);
}

/*
 * Copies CPU cpu's record (the header and the tasks it lists), retrying once if it
 * raced its writer: seq_head is read before the copy, seq_tail after (x86 keeps
 * loads, and the writer's stores, in order).
 */
static bool copy_slot(struct bpf_sampler *bs, int cpu, struct rqs_cpu *ret)
{
	const struct rqs_cpu *src = slot(bs, cpu);

	for (int tries = 0; tries < 2; tries++) {
		uint64_t head = __atomic_load_n(&src->seq_head, __ATOMIC_ACQUIRE), tail;
		uint32_t n;

		if (!(head & 1)) {
			memcpy(ret, src, offsetof(struct rqs_cpu, tasks));
			n = ret->ntasks < RQS_MAX_TASKS ? ret->ntasks : RQS_MAX_TASKS;
			memcpy(ret->tasks, src->tasks, n * sizeof(*ret->tasks));
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			tail = __atomic_load_n(&src->seq_tail, __ATOMIC_ACQUIRE);
			if (head == tail && ret->seq_head == head)
				return true;
		}
		sched_yield();
	}
	bs->stats.torn++;
	return false;
}

/*
 * Waits for a first sample, from any CPU, and checks that it found its run queue.
 * An idle CPU may take no samples at all (6.18 drops the cpu-clock samples that fall
 * in idle), so this thread keeps its own CPU busy for a period at a time meanwhile.
 */
static int wait_first_sample(struct bpf_sampler *bs)
{
	uint64_t deadline = util_now_ns() + FIRST_SAMPLE_NS;

	for (;;) {
		uint64_t until = util_now_ns() + bs->period_ns;

		for (int c = 0; c < bs->ncpus && c < RQB_MAX_CPUS; c++) {
			const struct rqs_cpu *r = slot(bs, c);

			if (!CPU_ISSET(c, &bs->attached) ||
			    __atomic_load_n(&r->samples, __ATOMIC_ACQUIRE) == 0)
				continue;
			if (__atomic_load_n(&r->path, __ATOMIC_ACQUIRE) != RQS_PATH_BROKEN)
				return 0;
			return why(&bs->o, -EOPNOTSUPP,
				   "no way to the run queues: the runqueues ksym needs "
				   "CONFIG_KALLSYMS_ALL and current->se.cfs_rq->rq needs "
				   "CONFIG_FAIR_GROUP_SCHED");
		}
		if (util_now_ns() > deadline)
			return why(&bs->o, -ETIME, "no sample from any CPU within %" PRIu64 " ms",
				   (uint64_t)(FIRST_SAMPLE_NS / NSEC_PER_MSEC));
		while (util_now_ns() < until)
			;
	}
}

/* Reads every runnable task the iterator emits into bs->walked. */
static int walk(struct bpf_sampler *bs)
{
	int fd = bpf_iter_create(bpf_link__fd(bs->iter)), err = fd < 0 ? -errno : 0;
	size_t have = 0, cap = bs->walkcap * sizeof(*bs->walked);
	char *buf = (char *)bs->walked;

	/* Some kernels want CAP_BPF for every bpf() call when unprivileged BPF is off. */
	if ((err == -EPERM || err == -EACCES) && caps_raise(CAP_BPF) == 0) {
		fd = bpf_iter_create(bpf_link__fd(bs->iter));
		err = fd < 0 ? -errno : 0;
		caps_lower(CAP_BPF);
	}
	if (fd < 0)
		return err;
	for (;;) {
		ssize_t n;

		if (cap - have < 4096) {
			char *b = realloc(buf, cap ? cap * 2 : 16384);

			if (!b) {
				close(fd);
				return -ENOMEM;
			}
			buf = b;
			cap = cap ? cap * 2 : 16384;
			bs->walked = (struct rqs_task *)buf;
			bs->walkcap = cap / sizeof(*bs->walked);
		}
		n = read(fd, buf + have, cap - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : 0;
			break;
		}
		have += (size_t)n;
	}
	close(fd);
	bs->nwalked = have / sizeof(*bs->walked);
	bs->stats.walks++;
	return err;
}

static int cmp_known(const void *a, const void *b)
{
	const struct btask *x = a, *y = b;

	return (x->tid > y->tid) - (x->tid < y->tid);
}

static struct btask *find_known(struct bpf_sampler *bs, pid_t tid)
{
	struct btask key = { .tid = tid }, *k;

	k = bs->nknown_sorted ? bsearch(&key, bs->known, bs->nknown_sorted, sizeof(key), cmp_known)
			      : NULL;
	for (size_t i = bs->nknown_sorted; !k && i < bs->nknown; i++)
		if (bs->known[i].tid == tid)
			k = &bs->known[i];
	return k;
}

static char *read_cgroup(const struct bpf_sampler *bs, pid_t tgid, pid_t tid)
{
	char proc_root[PATH_MAX], cg[4096];

	snprintf(proc_root, sizeof(proc_root), "%s/proc", bs->root);
	if (procfs_cgroup(proc_root, tgid, tid, cg, sizeof(cg)) < 0)
		return NULL;
	return strdup(cg);
}

/*
 * The sampler's memory of t: found, or made. *ret_runtime and *ret_seen are its run
 * time and the tick when it was last listed, UINT64_MAX and 0 if it is new. NULL on
 * ENOMEM.
 */
static struct btask *remember(struct bpf_sampler *bs, const struct rqs_task *t, uint64_t now_ns,
			      uint64_t *ret_runtime, uint64_t *ret_seen)
{
	struct btask *k = find_known(bs, (pid_t)t->tid);

	if (k && k->start_ns != t->start_ns) {
		free(k->cgroup);
		k->cgroup = NULL;
		k->cgroup_read = false;
		k->start_ns = t->start_ns;
		k->runtime_ns = UINT64_MAX;
		k->seen_ns = 0;
		k->partner = 0;
		k->nvcsw_known = false;
		k->woke = 0;
		k->reads = k->not_slept = k->not_back = k->wide = 0;
		k->told = false;
	}
	if (!k) {
		struct btask *a = util_grow(bs->known, &bs->knowncap, bs->nknown, sizeof(*a));

		if (!a)
			return NULL;
		bs->known = a;
		k = &bs->known[bs->nknown++];
		*k = (struct btask){ .tid = (pid_t)t->tid, .start_ns = t->start_ns,
				     .runtime_ns = UINT64_MAX };
	}
	*ret_runtime = k->runtime_ns;
	*ret_seen = k->seen_ns;
	k->runtime_ns = t->runtime_ns;
	k->seen_ns = now_ns;
	return k;
}

/*
 * Keeps only what a later tick can use: the tasks listed now (their run time, for the
 * next tick's NO_CPU) and, for forget_ns, the cgroups read for busy tasks. A fork
 * storm's short tasks thus cost nothing after their tick. Then sorts by tid.
 */
static void tidy_known(struct bpf_sampler *bs, uint64_t now_ns)
{
	bool added = bs->nknown > bs->nknown_sorted;
	size_t j = 0;

	for (size_t i = 0; i < bs->nknown; i++) {
		struct btask *k = &bs->known[i];

		if (k->seen_ns == now_ns || (k->cgroup_read && now_ns - k->seen_ns < bs->o.forget_ns) ||
		    (k->partner && now_ns - k->partner_ns < PAIR_HOLD_NS) ||
		    (k->woke && now_ns - k->woke_ns < PAIR_HOLD_NS))
			bs->known[j++] = *k;
		else
			free(k->cgroup);
	}
	bs->nknown = j;
	if (added && j > 1)
		qsort(bs->known, j, sizeof(*bs->known), cmp_known);
	bs->nknown_sorted = j;
}

/*
 * The proc sampler's SNAP_TASK_NO_CPU, "caught runnable for an instant": there, CPU
 * time that did not grow by a clock tick between two reads. Here, a task that was
 * not listed last tick (it woke or started since) or that ran less than used_ns
 * since: the short tasks of a shell script are never load worth moving.
 */
static bool used_cpu(const struct bpf_sampler *bs, const struct rqs_task *t,
		     uint64_t old_seen_ns, uint64_t old_runtime)
{
	if (old_runtime == UINT64_MAX || old_seen_ns != bs->prev_now_ns)
		return false;
	return t->runtime_ns >= old_runtime && t->runtime_ns - old_runtime >= bs->used_ns;
}

/*
 * The kernel's wake_wide(): a waker and wakee whose wakee_flips say one of them wakes
 * many tasks (more than its LLC has CPUs, and the other's flips that many times over)
 * are not a pair; the kernel does not keep them near each other either.
 */
static bool wakes_wide(const struct rqs_task *t, int llc_cpus)
{
	unsigned master = t->flips > t->wakee_flips ? t->flips : t->wakee_flips;
	unsigned slave = t->flips > t->wakee_flips ? t->wakee_flips : t->flips;
	unsigned factor = llc_cpus > 0 ? (unsigned)llc_cpus : 1;

	return !(slave < factor || master < slave * factor);
}

/*
 * Whether t's wakee u last woke t: as t's reading shows it now (u's record, read
 * through t's), or as u's own reading said within PAIR_HOLD_NS.
 */
static bool woke_back(struct bpf_sampler *bs, const struct rqs_task *t, uint64_t now_ns)
{
	struct btask *u;

	if (t->wakee_wakee == t->tid)
		return true;
	u = find_known(bs, (pid_t)t->wakee);
	return u && u->woke == (pid_t)t->tid && now_ns - u->woke_ns < PAIR_HOLD_NS;
}

/* Makes u (when remembered) t's partner too: the pair was seen from t's side. */
static void credit_partner(struct bpf_sampler *bs, const struct rqs_task *t, uint64_t now_ns)
{
	struct btask *u = find_known(bs, (pid_t)t->wakee);

	if (!u)
		return;
	u->partner = (pid_t)t->tid;
	u->partner_cpu = t->cpu;
	u->partner_ns = now_ns;
}

/* What one reading of a task says of its pair. */
enum reading {
	READ_NOT_SLEPT, /* it did not sleep since it was last listed: not believed */
	READ_NOT_BACK,  /* it names no wakee, or one that did not wake it back */
	READ_WIDE,      /* a pair the flips say is a one-to-many waker */
	READ_PAIR,
};

static enum reading judge(struct bpf_sampler *bs, const struct rqs_task *t, bool slept,
			  uint64_t now_ns)
{
	int llc = bs->topo ? topo_llc_of(bs->topo, t->cpu) : -1;

	if (!slept)
		return READ_NOT_SLEPT;
	if (!t->wakee || t->wakee == t->tid || !woke_back(bs, t, now_ns))
		return READ_NOT_BACK;
	if (wakes_wide(t, llc >= 0 ? bs->topo->llcs[llc].ncpus : 1))
		return READ_WIDE;
	return READ_PAIR;
}

/*
 * Counts why t's readings make no pair, and says it once in the debug log after
 * PAIR_TELL_AFTER of them: the qemu tier's t_pairs once read one pair's members 1,500
 * times each without a pair, and nothing said which condition failed.
 */
static void count_reading(const struct rqs_task *t, struct btask *k, enum reading r,
			  uint64_t now_ns)
{
	if (k->told || (k->partner && now_ns - k->partner_ns < PAIR_HOLD_NS))
		return;
	k->reads++;
	k->not_slept += r == READ_NOT_SLEPT;
	k->not_back += r == READ_NOT_BACK;
	k->wide += r == READ_WIDE;
	if (k->reads < PAIR_TELL_AFTER)
		return;
	k->told = true;
	log_debug("bpf: task %u, read %u times, no pair: %u had not slept since listed, %u "
		  "not woken back (last: wakes %u, which woke %u), %u woke wide (flips %u, %u)",
		  t->tid, k->reads, k->not_slept, k->not_back, t->wakee, t->wakee_wakee, k->wide,
		  t->flips, t->wakee_flips);
}

/* Takes in one reading of t's wakee (t was read with RQS_F_PAIRS). */
static void read_pair(struct bpf_sampler *bs, const struct rqs_task *t, struct btask *k,
		      uint64_t now_ns)
{
	bool slept = k->nvcsw_known && t->nvcsw != k->nvcsw;
	enum reading r = judge(bs, t, slept, now_ns);

	k->nvcsw = t->nvcsw;
	k->nvcsw_known = true;
	count_reading(t, k, r, now_ns);
	if (slept && t->wakee && t->wakee != t->tid) {
		k->woke = (pid_t)t->wakee;
		k->woke_ns = now_ns;
	}
	if (r != READ_PAIR)
		return;
	if (k->partner != (pid_t)t->wakee)
		log_debug("bpf: tasks %u and %u wake each other: a pair", t->tid, t->wakee);
	k->partner = (pid_t)t->wakee;
	k->partner_ns = now_ns;
	k->partner_cpu = -1;
	credit_partner(bs, t, now_ns);
}

/*
 * t's partner for keep_pairs: the task it last woke, where that one last woke t (each
 * wakes the other: a pid reused since, or a one-to-many waker, is no partner) and the
 * two do not wake wide; seen so now or within PAIR_HOLD_NS (k remembers it), and the
 * partner remembers it too. Only a task that slept since it was last listed is
 * believed: a record of whom it woke stays after it stops waking anyone (two CPU hogs
 * that once talked would stay a pair, and keep each other in place).
 *
 * Each half may come from its own task's reading: a member's reading of its partner,
 * kept PAIR_HOLD_NS, meets the partner's whenever that comes, and makes both
 * partners. (Read at one instant, both halves agree less often: a member preempted
 * by a timer that woke a user task names that task until it wakes its partner again.)
 */
static void set_partner(struct bpf_sampler *bs, const struct rqs_task *t, struct btask *k,
			uint64_t now_ns, struct snap_task *ret)
{
	if (!bs->pairs)
		return;
	if (t->flags & RQS_F_PAIRS)
		read_pair(bs, t, k, now_ns);
	if (!k->partner || now_ns - k->partner_ns >= PAIR_HOLD_NS)
		return;
	if (t->wakee == (__u32)k->partner && t->wakee_cpu >= 0)
		k->partner_cpu = t->wakee_cpu;
	ret->partner = k->partner;
	if (k->partner_cpu >= 0 && bs->topo && topo_llc_of(bs->topo, k->partner_cpu) >= 0) {
		ret->partner_placed = true;
		ret->partner_cpu = k->partner_cpu;
	}
}

/* Adds t to s; 1 if added, 0 if it is gone or off the snapshot's CPUs, or -ENOMEM. */
static int add_task(struct bpf_sampler *bs, struct snapshot *s, const struct rqs_task *t,
		    uint64_t now_ns)
{
	struct snap_task st = { 0 };
	uint64_t old_runtime, old_seen;
	struct btask *k;

	if (t->cpu < 0 || t->cpu >= s->nr_cpu_ids)
		return 0;
	/* What sched_getaffinity() would say: cpus_mask and the online CPUs. */
	memcpy(&st.allowed, t->allowed, sizeof(st.allowed) < sizeof(t->allowed)
						 ? sizeof(st.allowed) : sizeof(t->allowed));
	CPU_AND(&st.allowed, &st.allowed, &bs->online);
	k = remember(bs, t, now_ns, &old_runtime, &old_seen);
	if (!k)
		return -ENOMEM;
	st.tid = (pid_t)t->tid;
	st.tgid = (pid_t)t->tgid;
	st.cpu = t->cpu;
	st.start_time = t->start_ns / (NSEC_PER_SEC / (uint64_t)bs->clk_tck);
	st.flags = (t->flags & RQS_F_KTHREAD) ? SNAP_TASK_KTHREAD : 0;
	if (!used_cpu(bs, t, old_seen, old_runtime))
		st.flags |= SNAP_TASK_NO_CPU;
	/*
	 * Its cgroup, read once, as the proc sampler does; but only once it is busy and
	 * movable, when the policy may look at it (the short tasks of a fork storm would
	 * otherwise cost a file read each), and only while some [exclude] cgroups are
	 * named: the policy looks at nothing else of it.
	 */
	if (!st.flags && !k->cgroup_read && (!bs->o.want_cgroups || *bs->o.want_cgroups)) {
		k->cgroup = read_cgroup(bs, (pid_t)t->tgid, (pid_t)t->tid);
		k->cgroup_read = true;
	}
	memcpy(st.comm, t->comm, sizeof(st.comm));
	st.comm[sizeof(st.comm) - 1] = '\0';
	set_partner(bs, t, k, now_ns, &st);
	return snap_add_task(s, &st, k->cgroup) ? 1 : -ENOMEM;
}

static int cmp_cand(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->t->tid != y->t->tid)
		return (x->t->tid > y->t->tid) - (x->t->tid < y->t->tid);
	/* The newer sample first: a task that moved is where it was seen last. */
	return (x->ts_ns < y->ts_ns) - (x->ts_ns > y->ts_ns);
}

static int find_cand(const void *key, const void *elem)
{
	const pid_t *tid = key;
	const struct cand *c = elem;

	return (*tid > (pid_t)c->t->tid) - (*tid < (pid_t)c->t->tid);
}

/* This CPU's record, copied afresh: false if it is stale (no sample for two periods). */
static bool read_cpu(struct bpf_sampler *bs, int c, uint64_t now_ns)
{
	struct rqs_cpu *r = &bs->recs[c];

	if (copy_slot(bs, c, bs->scratch)) {
		*r = *bs->scratch;
		bs->have[c] = true;
	}
	if (!bs->have[c] || (r->path != RQS_PATH_KSYM && r->path != RQS_PATH_TASK) ||
	    (int64_t)(now_ns - r->ts_ns) > (int64_t)bs->stale_ns) {
		bs->stats.stale++;
		return false;
	}
	return true;
}

/* CPU c's last record as a snap_cpu, its tasks as candidates. */
static void use_record(struct bpf_sampler *bs, int c, struct snapshot *s, unsigned *counted,
		       bool *complete)
{
	struct rqs_cpu *r = &bs->recs[c];
	uint32_t nr;

	nr = r->cfs_runnable + r->rt + r->dl;
	s->cpus[c].nr_running = nr > r->self ? nr - r->self : 0;
	s->cpus[c].busy_pct = r->util >= SCHED_CAPACITY ? 100 : r->util * 100 / SCHED_CAPACITY;
	/* A sample taken after the tick began is as good as one at its start. */
	s->cpus[c].sample_ns = r->ts_ns && r->ts_ns < s->now_ns ? r->ts_ns : 0;
	*counted += s->cpus[c].nr_running;
	if (!r->complete)
		*complete = false;
	for (uint32_t i = 0; i < r->ntasks && i < RQS_MAX_TASKS; i++) {
		struct cand *a = util_grow(bs->cands, &bs->candcap, bs->ncands, sizeof(*a));

		if (!a)
			return;
		bs->cands = a;
		bs->cands[bs->ncands++] = (struct cand){ &r->tasks[i], r->ts_ns };
	}
}

/*
 * Of the silent CPUs (a live perf event, but no sample for two periods), takes out of
 * held those that were idle since the last look: an idle CPU takes no samples, but
 * neither does a busy one whose virtual CPU the host has not run (steal), and taking
 * that one for idle sends it work and ping-pongs. /proc/stat tells them apart: an idle
 * CPU's idle time went on for at least half the time since. Read at start, then only on
 * ticks with a silent CPU. Only a read of the last tick (or the start) is a look: one
 * from longer ago covers the time before the CPU fell silent, when it may well have
 * been idle, and a task been moved there since (a starved vCPU holding a hog just
 * pinned there would be taken for idle through a read seconds old, and draw another).
 * Then every silent CPU is held this tick, and judged on the next.
 */
static void idle_or_held(struct bpf_sampler *bs, uint64_t now_ns, cpu_set_t *held,
			 uint64_t *ret_since_ns)
{
	char path[PATH_MAX], buf[65536];
	uint64_t elapsed = now_ns - bs->idle_read_ns, tick_ns = NSEC_PER_SEC / (uint64_t)bs->clk_tck;
	bool first = bs->idle_read_ns == 0;
	bool recent = !first && bs->idle_read_ns >= bs->prev_now_ns;
	unsigned running;

	*ret_since_ns = bs->idle_read_ns;

	snprintf(path, sizeof(path), "%s/proc/stat", bs->root);
	if (util_read_file(path, buf, sizeof(buf)) < 0 ||
	    parse_cpustat(buf, bs->ncpus, bs->busy, bs->total, &running) < 0) {
		CPU_ZERO(held);
		return;
	}
	for (int c = 0; c < bs->ncpus; c++) {
		uint64_t idle = bs->total[c] - bs->busy[c];

		if (CPU_ISSET(c, held) && (first || (recent && (idle < bs->idle[c] ||
						       (idle - bs->idle[c]) * tick_ns * 2 >= elapsed))))
			CPU_CLR(c, held);
		bs->idle[c] = idle;
	}
	bs->idle_read_ns = now_ns;
	bs->stats.silent_reads++;
}

/*
 * True if c is online but its perf event is gone (the CPU went offline, which takes
 * it, and came back) or never was (it came online after the start). A silent event
 * alone says nothing: an idle CPU takes no samples. A live event keeps counting
 * time, idle or not; a gone one stops: once a second, the count tells them apart.
 */
static bool blind(struct bpf_sampler *bs, int c, uint64_t now_ns, const struct snapshot *s)
{
	struct blindness *b = &bs->blindness[c];
	uint64_t count = 0;

	/* The tracepoints fire on every CPU that is online. */
	if (!CPU_ISSET(c, &s->topo->online) || bs->tp)
		return false;
	if (CPU_ISSET(c, &bs->attached) && now_ns - b->checked_ns >= NSEC_PER_SEC) {
		if (read(bs->perf_fds[c], &count, sizeof(count)) != sizeof(count))
			count = b->count;
		b->gone = count == b->count;
		b->count = count;
		b->checked_ns = now_ns;
	}
	if (CPU_ISSET(c, &bs->attached) && !b->gone)
		return false;
	if (!b->logged) {
		b->logged = true;
		log_notice("bpf: CPU %d has no perf event (%s): a task walk counts its tasks each "
			   "tick while it lasts", c,
			   CPU_ISSET(c, &bs->attached) ? "it went offline and back"
						       : "it came online after the start");
	}
	return true;
}

/*
 * Adds the tasks of the walk that no CPU sample listed, and counts the runnable
 * tasks of the blind CPUs, which no sample counted.
 */
static int add_walked(struct bpf_sampler *bs, struct snapshot *s, uint64_t now_ns,
		      const cpu_set_t *blinds)
{
	int r = walk(bs);

	if (r < 0) {
		log_debug("bpf: task walk failed: %s", strerror(-r));
		return 0;
	}
	for (size_t i = 0; i < bs->nwalked; i++) {
		pid_t tid = (pid_t)bs->walked[i].tid;
		int cpu = bs->walked[i].cpu;

		if (cpu >= 0 && cpu < s->nr_cpu_ids && CPU_ISSET(cpu, blinds))
			s->cpus[cpu].nr_running++;
		if (bs->ncands && bsearch(&tid, bs->cands, bs->ncands, sizeof(*bs->cands), find_cand))
			continue;
		r = add_task(bs, s, &bs->walked[i], now_ns);
		if (r < 0)
			return r;
	}
	return 0;
}

static int bpf_sample(struct sampler *sm, uint64_t now_ns, struct snapshot *s)
{
	struct bpf_sampler *bs = sm->priv;
	unsigned counted = 0, listed = 0;
	bool complete = true;
	cpu_set_t blinds, held, silent;
	uint64_t idle_since_ns = 0;
	size_t kept = 0;
	int r = 0;

	s->self_tgid = bs->o.self_tgid;
	sampler_stamp_uptime(s);
	bs->ncands = 0;
	CPU_ZERO(&blinds);
	CPU_ZERO(&held);
	if (now_ns - bs->online_read_ns >= NSEC_PER_SEC && read_online(bs->root, &bs->online) == 0)
		bs->online_read_ns = now_ns;
	if (bs->tp)
		bs->attached = bs->online;
	/*
	 * A silent CPU is idle, or held by the host: then its last record stands. One whose
	 * event is gone (offline and back) is walked.
	 */
	for (int c = 0; c < bs->ncpus && c < s->nr_cpu_ids; c++) {
		if (CPU_ISSET(c, &bs->attached) && read_cpu(bs, c, now_ns)) {
			bs->blindness[c].gone = false;
			use_record(bs, c, s, &counted, &complete);
		} else if (blind(bs, c, now_ns, s)) {
			CPU_SET(c, &blinds);
		} else if (CPU_ISSET(c, &bs->attached) && bs->have[c]) {
			CPU_SET(c, &held);
		}
	}
	silent = held;
	if (CPU_COUNT(&held))
		idle_or_held(bs, now_ns, &held, &idle_since_ns);
	for (int c = 0; c < bs->ncpus && c < s->nr_cpu_ids; c++)
		if (CPU_ISSET(c, &held)) {
			bs->stats.held++;
			use_record(bs, c, s, &counted, &complete);
		} else if (CPU_ISSET(c, &silent) && idle_since_ns < now_ns) {
			/*
			 * Idle for most of the time since that read, which says nothing of a
			 * task moved there within it: its counts are of that time.
			 */
			s->cpus[c].sample_ns = idle_since_ns;
		}
	if (bs->ncands > 1)
		qsort(bs->cands, bs->ncands, sizeof(*bs->cands), cmp_cand);
	for (size_t i = 0; i < bs->ncands && r >= 0; i++) {
		if (kept && bs->cands[kept - 1].t->tid == bs->cands[i].t->tid)
			continue;
		bs->cands[kept++] = bs->cands[i];
		r = add_task(bs, s, bs->cands[i].t, now_ns);
		listed += r > 0;
	}
	bs->ncands = kept;
	/*
	 * More runnable than listed, two ticks in a row: a queued RT task, or a queue
	 * longer than a sample lists. Walk every task then, at most every walk_gap_ns.
	 */
	bs->excess_ticks = counted > listed || !complete ? bs->excess_ticks + 1 : 0;
	if (r >= 0 && (CPU_COUNT(&blinds) || (bs->excess_ticks >= 2 &&
					      now_ns - bs->last_walk_ns >= bs->o.walk_gap_ns))) {
		r = add_walked(bs, s, now_ns, &blinds);
		bs->last_walk_ns = now_ns;
		bs->excess_ticks = 0;
	}
	tidy_known(bs, now_ns);
	bs->prev_now_ns = now_ns;
	return r < 0 ? r : 0;
}

static void bpf_free(struct sampler *sm)
{
	struct bpf_sampler *bs = sm->priv;

	for (int c = 0; c < bs->ncpus; c++) {
		if (bs->links && bs->links[c])
			bpf_link__destroy(bs->links[c]); /* closes the perf event too */
		else if (bs->perf_fds && bs->perf_fds[c] >= 0)
			close(bs->perf_fds[c]);
	}
	bpf_link__destroy(bs->iter);
	bpf_link__destroy(bs->waking);
	if (bs->map)
		munmap(bs->map, bs->map_len);
	rqsample__destroy(bs->skel);
	for (size_t i = 0; i < bs->nknown; i++)
		free(bs->known[i].cgroup);
	free(bs->known);
	free(bs->cands);
	free(bs->walked);
	free(bs->recs);
	free(bs->have);
	free(bs->scratch);
	free(bs->blindness);
	free(bs->idle);
	free(bs->busy);
	free(bs->total);
	free(bs->links);
	free(bs->perf_fds);
	free(bs);
	free(sm);
}

static bool bpf_pairs(struct sampler *sm, const struct topo *t, bool on)
{
	struct bpf_sampler *bs = sm->priv;

	if (!bs->skel->bss || !bs->waking)
		return false;
	bs->topo = t;
	bs->pairs = on;
	__atomic_store_n(&bs->skel->bss->rqs_pairs, on ? 1u : 0u, __ATOMIC_RELAXED);
	return true;
}

static bool bpf_walks_unprivileged(struct sampler *sm)
{
	struct bpf_sampler *bs = sm->priv;
	int fd;

	fd = bpf_iter_create(bpf_link__fd(bs->iter));
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

static const struct sampler_ops bpf_ops = {
	.name = "bpf",
	.sample = bpf_sample,
	.free = bpf_free,
	.pairs = bpf_pairs,
	.walks_unprivileged = bpf_walks_unprivileged,
};

static int alloc_cpus(struct bpf_sampler *bs)
{
	bs->perf_fds = malloc((size_t)bs->ncpus * sizeof(*bs->perf_fds));
	bs->links = calloc((size_t)bs->ncpus, sizeof(*bs->links));
	bs->recs = calloc((size_t)bs->ncpus, sizeof(*bs->recs));
	bs->have = calloc((size_t)bs->ncpus, sizeof(*bs->have));
	bs->scratch = malloc(sizeof(*bs->scratch));
	bs->blindness = calloc((size_t)bs->ncpus, sizeof(*bs->blindness));
	bs->idle = calloc((size_t)bs->ncpus, sizeof(*bs->idle));
	bs->busy = calloc((size_t)bs->ncpus, sizeof(*bs->busy));
	bs->total = calloc((size_t)bs->ncpus, sizeof(*bs->total));
	if (!bs->perf_fds || !bs->links || !bs->recs || !bs->have || !bs->scratch ||
	    !bs->blindness || !bs->idle || !bs->busy || !bs->total)
		return -ENOMEM;
	for (int c = 0; c < bs->ncpus; c++)
		bs->perf_fds[c] = -1;
	return 0;
}

static int start_sampler(struct bpf_sampler *bs)
{
	char btf[PATH_MAX];
	int r;

	snprintf(btf, sizeof(btf), "%s/sys/kernel/btf/vmlinux", bs->root);
	if (access(btf, R_OK) < 0)
		return why(&bs->o, -EOPNOTSUPP, "no kernel BTF (%s): CO-RE cannot relocate", btf);
	bs->ncpus = libbpf_num_possible_cpus();
	if (bs->ncpus <= 0)
		return why(&bs->o, bs->ncpus ? bs->ncpus : -EINVAL, "counting the possible CPUs");
	r = alloc_cpus(bs);
	if (r < 0)
		return why(&bs->o, r, "%s", strerror(-r));
	bpfload_begin("");
	r = read_online(bs->root, &bs->online);
	if (r < 0)
		return why(&bs->o, r, "reading the online CPUs: %s", strerror(-r));
	for (int c = 0; !bs->tp && c < bs->ncpus && c < RQB_MAX_CPUS; c++)
		if (CPU_ISSET(c, &bs->online)) {
			bs->tp = bs->o.tracepoints || perf_refused(bs, c);
			break;
		}
	r = load_any(bs);
	if (r == 0)
		r = map_slots(bs);
	if (r == 0)
		r = attach(bs);
	if (r == 0)
		r = wait_first_sample(bs);
	if (r == 0) {
		cpu_set_t none;
		uint64_t since;

		CPU_ZERO(&none);
		idle_or_held(bs, util_now_ns(), &none, &since);
	}
	return r;
}

int bpf_sampler_new(const struct bpf_sampler_opts *o, struct sampler **ret)
{
	struct sampler *sm = calloc(1, sizeof(*sm));
	struct bpf_sampler *bs = calloc(1, sizeof(*bs));
	int r;

	if (!sm || !bs) {
		free(sm);
		free(bs);
		return why(o, -ENOMEM, "out of memory");
	}
	bs->o = *o;
	snprintf(bs->root, sizeof(bs->root), "%s", o->root ? o->root : "");
	bs->clk_tck = sysconf(_SC_CLK_TCK);
	bs->period_ns = clamp_period(o->interval_ns);
	/* About two periods, and a little for a sample that is being taken. */
	bs->stale_ns = 2 * bs->period_ns + NSEC_PER_MSEC;
	/* A clock tick, as /proc counts CPU time, but at most a quarter of a tick. */
	bs->used_ns = bs->clk_tck > 0 ? NSEC_PER_SEC / (uint64_t)bs->clk_tck : 0;
	if (bs->used_ns > o->interval_ns / 4)
		bs->used_ns = o->interval_ns / 4;
	sm->ops = &bpf_ops;
	sm->priv = bs;
	r = bs->clk_tck > 0 ? start_sampler(bs) : why(o, -EINVAL, "no clock tick rate");
	if (r < 0) {
		bpf_free(sm);
		return r;
	}
	/* Parsing the kernel's BTF took megabytes that the heap would otherwise keep. */
	malloc_trim(0);
	bs->stats.period_ns = bs->period_ns;
	bs->stats.rq_path = bs->path_name;
	bs->stats.trigger = bs->tp ? "scheduler tracepoints" : "cpu-clock perf events";
	if (bs->tp)
		log_info("bpf: samples at the scheduler's tracepoints (sched_stat_runtime, "
			 "sched_switch), no perf events: %s",
			 bs->o.tracepoints ? "asked for" : bs->tp_why);
	log_info("bpf: rq via %s, a sample every %" PRIu64 " us on %d CPU%s (BPF programs %u, %u)",
		 bs->path_name, (uint64_t)(bs->period_ns / NSEC_PER_USEC), CPU_COUNT(&bs->attached),
		 CPU_COUNT(&bs->attached) == 1 ? "" : "s", prog_id(perf_prog(bs)),
		 prog_id(bs->skel->progs.list_tasks));
	*ret = sm;
	return 0;
}

void bpf_sampler_stats(const struct sampler *sm, struct bpf_stats *ret)
{
	const struct bpf_sampler *bs = sm->priv;

	if (sm->ops != &bpf_ops) {
		*ret = (struct bpf_stats){ 0 };
		return;
	}
	*ret = bs->stats;
	ret->samples = 0;
	for (int c = 0; c < bs->ncpus; c++)
		if (CPU_ISSET(c, &bs->attached))
			ret->samples += __atomic_load_n(&slot(bs, c)->samples, __ATOMIC_RELAXED);
}
