/*
 * The daemon: wires the stages into the sd-event loop and walks the pipeline once a
 * tick. Handlers return quickly; state lives in struct daemon, nowhere else.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/capability.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "util/caps.h"
#include "core/daemon.h"
#include "core/selfsched.h"
#include "core/status.h"
#include "rqbalance.h"
#include "util/cpumask.h"
#include "util/log.h"
#include "util/timedread.h"
#include "util/util.h"

#define TRIM_EVERY_NS (10 * NSEC_PER_SEC)

static void apply_opts(const struct daemon_opts *o, struct rqb_conf *c)
{
	if (o->dry_run)
		c->dry_run = true;
	if (o->topology)
		snprintf(c->topology, sizeof(c->topology), "%s", o->topology);
	if (o->replay) {
		c->sampler = CONF_SAMPLER_REPLAY;
		snprintf(c->replay_file, sizeof(c->replay_file), "%s", o->replay);
	}
	if (o->log_level >= 0)
		c->log_level = o->log_level;
}

int daemon_load_config(const struct daemon_opts *o, FILE *err, struct rqb_conf *ret)
{
	struct rqb_conf c;
	int r;

	/* Without the file, rules_dir (its default) may still hold rules. */
	if (!o->config_explicit && access(o->config_path, F_OK) < 0 && errno == ENOENT)
		r = conf_load_defaults(err, &c);
	else
		r = conf_load(o->config_path, err, &c);
	if (r < 0)
		return r;
	apply_opts(o, &c);
	if (c.sampler == CONF_SAMPLER_REPLAY && !c.replay_file[0]) {
		if (err)
			fprintf(err, "%s: [daemon] sampler: replay needs replay_file\n", o->config_path);
		conf_free(&c);
		return -EINVAL;
	}
	*ret = c;
	return 0;
}

static void raise_nofile(void)
{
	struct rlimit rl;

	/* The proc sampler keeps a stat file open per busy task, the actuator a pidfd. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int make_sampler(struct daemon *d)
{
	struct proc_sampler_opts po = {
		.root = "",
		.self_tgid = getpid(),
		.rescan_ns = d->conf.proc_rescan_ms * NSEC_PER_MSEC,
		.max_tracked = d->conf.proc_max_tracked,
	};
	char why[256] = "";
	struct bpf_sampler_opts bo = {
		.self_tgid = po.self_tgid,
		.interval_ns = d->conf.interval_ms * NSEC_PER_MSEC,
		.walk_gap_ns = NSEC_PER_SEC,
		.forget_ns = d->conf.proc_rescan_ms * NSEC_PER_MSEC,
		.want_cgroups = &d->conf.exclude_cgroups.n,
		.root = "",
		.why = why,
		.why_len = sizeof(why),
	};
	int r;

	if (d->conf.sampler == CONF_SAMPLER_REPLAY)
		r = replay_sampler_new(d->conf.replay_file, d->topo, po.self_tgid, &d->sampler);
	else if (d->conf.sampler == CONF_SAMPLER_PROC)
		r = proc_sampler_new(&po, &d->sampler);
	else if ((r = bpf_sampler_new(&bo, &d->sampler)) < 0 &&
		 d->conf.sampler == CONF_SAMPLER_AUTO) {
		log_notice("bpf sampler unavailable: %s; using the proc sampler", why);
		r = proc_sampler_new(&po, &d->sampler);
	}
	if (r < 0)
		log_err("%s sampler: cannot start: %s", conf_sampler_name(d->conf.sampler),
			why[0] && d->conf.sampler == CONF_SAMPLER_BPF ? why : strerror(-r));
	return r;
}

/*
 * keep_pairs: the bpf sampler reads who wakes whom while it is on; no other sampler
 * can. Said in the features, at start and when a reload changes it.
 */
static void wake_pairs(struct daemon *d)
{
	bool seen = sampler_pairs(d->sampler, d->topo, d->conf.keep_pairs);
	char why[64];

	snprintf(why, sizeof(why), "the %s sampler cannot see who wakes whom",
		 d->sampler->ops->name);
	features_set_pairs(&d->features, d->conf.keep_pairs,
			   seen ? FEAT_PAIRS_BPF
				: d->conf.sampler == CONF_SAMPLER_REPLAY ? FEAT_PAIRS_REPLAY : NULL,
			   why);
	features_log_one(&d->features, FEAT_WAKE_PAIRS);
}

/*
 * Loading BPF and opening perf events are done: CAP_BPF, CAP_PERFMON and
 * CAP_SYS_ADMIN go. What stays is what the ticks use on other users' tasks:
 * CAP_SYS_NICE (affinity, sched_setattr), CAP_SYS_RESOURCE (their RLIMIT_NICE), and
 * where it was given, CAP_SYS_PTRACE (/proc/PID/exe, which exe rules read without
 * BPF events) and CAP_NET_ADMIN (the proc connector before 6.6). CAP_BPF stays
 * permitted, not effective, where this kernel asks for it to start a task walk.
 */
static int on_moves(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct daemon *d = userdata;

	latmgr_moves_done(&d->lm);
	return 0;
}

/*
 * An exec's class move goes to a worker thread from now on (latmgr_moves_start):
 * started after drop_caps, whose capability set it inherits.
 */
static void start_moves(struct daemon *d)
{
	int fd, r;

	if (!latmgr_on(&d->lm))
		return;
	fd = latmgr_moves_start(&d->lm);
	if (fd == -EOPNOTSUPP)
		return;
	r = fd < 0 ? fd : sd_event_add_io(d->event, &d->moves, fd, EPOLLIN, on_moves, d);
	if (r < 0) {
		latmgr_moves_stop(&d->lm);
		log_warn("latency: class moves stay in the event loop: %s", strerror(-r));
	}
}

static void drop_caps(struct daemon *d)
{
	uint64_t drop = CAPS_BIT(CAP_BPF) | CAPS_BIT(CAP_PERFMON) | CAPS_BIT(CAP_SYS_ADMIN);
	uint64_t eff, perm, forever;
	char names[128];
	int r;

	if (caps_get(&eff, &perm) < 0 || !((eff | perm) & drop))
		return;
	forever = drop & perm;
	/* Lowered first, to learn whether a task walk still works without them. */
	r = caps_drop(drop, 0);
	if (r == 0 && (!sampler_walks_unprivileged(d->sampler) ||
		       (latmgr_on(&d->lm) && !latmgr_walks_unprivileged(&d->lm))))
		forever &= ~CAPS_BIT(CAP_BPF);
	if (r == 0)
		r = caps_drop(drop, forever);
	if (r < 0) {
		log_warn("capabilities: cannot drop: %s; keeping them", strerror(-r));
		return;
	}
	caps_format(drop & (eff | perm), names, sizeof(names));
	log_info("capabilities: dropped %s%s", names,
		 (perm & ~forever & CAPS_BIT(CAP_BPF))
			 ? "; cap_bpf stays permitted, raised only to start a task walk "
			   "(this kernel checks it on every bpf() call)"
			 : "");
}

/*
 * The wait histograms load whichever sampler runs: they need CAP_BPF and CAP_PERFMON,
 * so before drop_caps(). Without them the daemon runs on, and rqctl latency says why.
 */
static void start_rqlat(struct daemon *d)
{
	int r;

	if (!d->conf.histograms) {
		snprintf(d->rqlat_why, sizeof(d->rqlat_why), "[daemon] histograms = no");
		log_info("run-queue wait histograms: off ([daemon] histograms = no)");
		return;
	}
	r = rqlat_new(&d->rqlat,
		      d->conf.histograms_from == CONF_HIST_WAKEUP ? RQLAT_FROM_WAKEUP : RQLAT_FROM_QUEUE,
		      d->rqlat_why, sizeof(d->rqlat_why));
	if (r < 0)
		log_notice("run-queue wait histograms unavailable: %s", d->rqlat_why);
	else if (rqlat_from(d->rqlat) == RQLAT_FROM_QUEUE)
		log_info("run-queue wait histograms: on (rqctl latency), waits from the enqueue");
	else if (d->conf.histograms_from == CONF_HIST_QUEUE)
		log_info("run-queue wait histograms: on (rqctl latency), waits from the wakeup: "
			 "the enqueue mark's program did not load: %s", rqlat_queue_refused(d->rqlat));
	else
		log_info("run-queue wait histograms: on (rqctl latency), waits from the wakeup");
}

static void on_lat_task(void *ctx, pid_t tid, int value, bool managed)
{
	struct daemon *d = ctx;

	rqlat_task(d->rqlat, tid, value, managed);
}

/* Tells the histograms which cgroups the latency actuator manages now. */
static void daemon_rqlat_cgroups(struct daemon *d)
{
	const char *paths[RQB_RQLAT_MAX_CG], *mount;
	size_t n;

	if (!d->rqlat)
		return;
	n = latmgr_cgroup_paths(&d->lm, paths, RQB_RQLAT_MAX_CG, &mount);
	if (mount)
		rqlat_cgroups(d->rqlat, mount, paths, n);
}

/* From now on the histograms follow each value given or taken back; these are older. */
static void follow_lat_tasks(struct daemon *d)
{
	if (!d->rqlat)
		return;
	latmgr_follow_tasks(&d->lm, on_lat_task, d);
	daemon_rqlat_cgroups(d);
}

static void on_dropped(void *ctx, pid_t tid, uint64_t start_time, int err)
{
	struct daemon *d = ctx;

	spread_forget(&d->pol, tid, start_time, err != -ESRCH && err != -ENOENT);
}

/* The mapping's settings from the config; class cgroups resolved against this host. */
static void lat_conf_from(const struct daemon *d, struct lat_conf *ret)
{
	/* A setting no key gives (a knob the mapping may carry, latknob.h) is off. */
	memset(ret, 0, sizeof(*ret));
	ret->batch_from = (int)d->conf.lat_batch_from;
	ret->idle_at_19 = d->conf.lat_idle_at_19;
	ret->uclamp = d->conf.lat_uclamp;
	ret->boost_cpu_pct = d->conf.lat_boost_cpu_pct;
	ret->default_slice_ns = d->features.default_slice_ns;
	ret->nmove_from = d->conf.lat_move_from.n;
	for (unsigned i = 0; i < ret->nmove_from && i < LAT_MOVE_FROM_MAX; i++)
		ret->move_from[i] = d->conf.lat_move_from.v[i];
	/* On a systemd host the cgroups are systemd's: moving tasks between them is not ours. */
	ret->class_cgroups = d->conf.lat_class == CONF_CLASS_YES ||
			     (d->conf.lat_class == CONF_CLASS_AUTO && sd_booted() <= 0);
}

/* Whether this kernel takes sched_runtime as a task's slice (6.12+). */
static bool has_slices(const struct daemon *d)
{
	return d->features.f[FEAT_EEVDF_SLICE].state != FEAT_MISSING;
}

/* A v1 cpu hierarchy or cgroup2 with cpu: where class and cgroup targets' weights go. */
static bool has_cpu_controller(const struct features *f)
{
	return f->f[FEAT_CGROUP_V1_CPU].state != FEAT_MISSING ||
	       f->f[FEAT_CGROUP_V2_CPU].state != FEAT_MISSING;
}

void daemon_peers(const struct daemon *d, struct peers *ret)
{
	struct peers_ctx ctx = { .cpu_controller = has_cpu_controller(&d->features),
				 .class_cgroups = latmgr_class_cgroups_on(&d->lm) };

	peers_scan(d->peers_root ? d->peers_root : "", &ctx, ret);
}

static void log_peers(struct daemon *d)
{
	daemon_peers(d, &d->peers);
	d->peers_at_ns = util_now_ns();
	peers_log(&d->peers);
}

/* For status: the last reading unless it is older than PEERS_MAX_AGE_NS. */
static void ctl_peers(void *daemon, struct peers *ret)
{
	struct daemon *d = daemon;
	uint64_t now = util_now_ns();

	if (!d->peers_at_ns || now - d->peers_at_ns >= PEERS_MAX_AGE_NS) {
		daemon_peers(d, &d->peers);
		d->peers_at_ns = now;
	}
	*ret = d->peers;
}

/* The daemon's own nice and slice ([daemon] latency_nice), at start and on reload. */
static void self_sched(struct daemon *d)
{
	struct lat_conf lc;
	char desc[64];
	int r;

	lat_conf_from(d, &lc);
	r = selfsched_apply(&lc, d->conf.latency_nice, has_slices(d), desc, sizeof(desc));
	if (r < 0)
		log_warn("self: cannot give the daemon latency-nice %d (%s): %s",
			 d->conf.latency_nice, desc, strerror(-r));
	else
		log_info("self: latency-nice %d: %s", d->conf.latency_nice, desc);
}

static void notify_status(struct daemon *d)
{
	char status[sizeof(d->status)];
	size_t n = act_managed(&d->act);

	snprintf(status, sizeof(status), "sampler %s, %zu task%s managed, %" PRIu64 " move%s%s",
		 d->sampler->ops->name, n, n == 1 ? "" : "s", d->act.cnt.moves,
		 d->act.cnt.moves == 1 ? "" : "s", d->conf.dry_run ? " (dry run)" : "");
	if (strcmp(status, d->status) == 0)
		return;
	strcpy(d->status, status);
	sd_notifyf(0, "STATUS=%s", status);
}

/*
 * CPU hotplug: a CPU that goes offline leaves the topology the tick's policy sees (no
 * load counted, no pin made to it) until it is back. Pins made to it before are the
 * kernel's to break; the verify pass then leaves those tasks as they are.
 */
static void follow_hotplug(struct daemon *d)
{
	char buf[CPUMASK_STRLEN];
	cpu_set_t went, came;
	int r = topo_follow_online(d->topo, "", &went, &came);

	if (r < 0)
		log_debug("topology: cannot read the online CPUs: %s", strerror(-r));
	if (r <= 0)
		return;
	if (CPU_COUNT(&went))
		log_notice("topology: CPU %s went offline: left out until it is back",
			   cpumask_format(&went, buf, sizeof(buf)));
	if (CPU_COUNT(&came))
		log_notice("topology: CPU %s online again", cpumask_format(&came, buf, sizeof(buf)));
	d->woken = true;
	if (features_llcs(&d->features, d->topo, d->conf.min_llc_cores))
		features_log_one(&d->features, FEAT_LLC_GROUPS);
}

/*
 * The mapping follows what it is built from (the conf, the kernel's default slice): every
 * managed task is mapped again.
 */
static void latency_remap(struct daemon *d)
{
	struct lat_conf lc;

	if (!latmgr_on(&d->lm))
		return;
	lat_conf_from(d, &lc);
	latmgr_set_conf(&d->lm, &lc);
	latmgr_rules_changed(&d->lm);
}

/*
 * The kernel's default slice follows the online CPUs and the debugfs tunable, and a
 * value's slice is a ratio of it: read again (features_default_slice, which sets the
 * daemon's own slice for a moment) when the online CPUs changed, and for a few
 * seconds after (a CPU shows online before the scheduler takes it and rescales), or
 * when debugfs, where readable, says another; where it changed, the daemon's own
 * slice and every task's value are mapped anew.
 */
static void follow_default_slice(struct daemon *d)
{
	char src[sizeof(d->features.default_slice_src)];
	uint64_t was = d->features.default_slice_ns, dbg = features_base_slice_debugfs("");
	int cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t ns;

	if (cpus != d->slice_cpus)
		d->slice_rereads = 5;
	else if (d->slice_rereads)
		d->slice_rereads--;
	else if (!dbg || dbg == was)
		return;
	d->slice_cpus = cpus;
	ns = features_default_slice("", cpus, src, sizeof(src));
	if (ns == was)
		return;
	d->features.default_slice_ns = ns;
	snprintf(d->features.default_slice_src, sizeof(d->features.default_slice_src), "%s", src);
	log_notice("latency: the kernel's default slice is %.2f ms now (was %.2f ms, %s): "
		   "values' slices follow", (double)ns / 1e6, (double)was / 1e6, src);
	self_sched(d);
	latency_remap(d);
	d->woken = true;
}

/*
 * Whether the running kernel splits a group's weight among the CPUs it runs on
 * and how (latweigh_kernel_of): its version, from uname as the features probe read it,
 * and 7.3's cgroup_mode, followed once a second.
 */
static enum latweigh_kernel weight_kind(const struct daemon *d)
{
	unsigned major = 0, minor = 0;

	sscanf(d->features.kernel, "Linux %u.%u", &major, &minor);
	return latweigh_kernel_of(d->features.cgroup_mode, major, minor);
}

/*
 * 7.3's cgroup_mode may be switched at any time in debugfs: for rqctl status, and for
 * the classes' weights (latmgr_weigh), which follow it at the next tick.
 */
static void follow_cgroup_mode(struct daemon *d)
{
	char mode[sizeof(d->features.cgroup_mode)];

	features_cgroup_mode("", mode, sizeof(mode));
	if (strcmp(mode, d->features.cgroup_mode) == 0)
		return;
	log_notice("features: the kernel's cgroup_mode is %s now (was %s)", mode,
		   d->features.cgroup_mode);
	snprintf(d->features.cgroup_mode, sizeof(d->features.cgroup_mode), "%s", mode);
}

/* At start and reload: which CPUs fast_cores keeps latency work on, or that it cannot. */
static void say_fast_cores(const struct daemon *d)
{
	char cpus[CPUMASK_STRLEN];
	cpu_set_t fast;
	const char *why;

	if (!d->conf.fast_cores)
		return;
	why = place_fast_cpus(d->topo, &fast);
	if (why)
		log_info("placement: fast_cores keeps latency work on CPUs %s: %s",
			 cpumask_format(&fast, cpus, sizeof(cpus)), why);
	else
		log_notice("placement: fast_cores on, but %s: it pins nothing",
			   d->topo->nkinds < 2 ? "the CPU has one kind of core"
					       : "every online CPU is of the fastest kind");
}

/*
 * Who else places tasks by cache (features_kernel_places): looked at at start, at
 * reload and once a second, since a sched_ext scheduler comes and goes and an admin
 * may switch the kernel's cache-aware scheduling. Beside the kernel's, the placement
 * rules stand down and spread moves no task away from its process; beside a sched_ext
 * scheduler spread stands down too and every pin is given back at once. A
 * line in the log when that changes. An X3D part's amd_x3d_mode is followed here too:
 * a user may switch it at any time, and fast_cores's CPUs with it.
 */
static void follow_placement(struct daemon *d, bool config)
{
	const char *root = d->peers_root ? d->peers_root : "";
	enum kernel_places was = d->kernel_places;
	char src[sizeof(d->sched_cache)], on[64];
	bool x3d = !config && topo_follow_x3d(d->topo, root) > 0;
	struct utsname u;

	if (x3d)
		log_notice("topology: amd_x3d_mode is %s now", topo_x3d_name(d->topo->x3d_mode));
	if (config || x3d)
		say_fast_cores(d); /* its CPUs follow the mode from the next tick */
	if (config && uname(&u) == 0) {
		if (features_sched_cache_built(root, u.release, src, sizeof(src)))
			snprintf(d->sched_cache, sizeof(d->sched_cache), "%s", src);
		else
			d->sched_cache[0] = '\0';
		log_debug("placement: cache-aware scheduling built: %s", src);
	}
	d->kernel_places = features_kernel_places(root, d->sched_cache, d->topo->nllcs,
						  d->kernel_places_why,
						  sizeof(d->kernel_places_why));
	if (d->kernel_places != was && d->kernel_places != KERNEL_PLACES_NOT)
		log_notice("placement: %s; %s", d->kernel_places_why,
			   d->kernel_places == KERNEL_PLACES_SCHED_EXT
				   ? "spread and placement stand down, pins given back"
				   : "spread moves no task away from its process");
	else if (d->kernel_places != was)
		log_notice("placement: nothing else places tasks by cache now: spread and "
			   "placement act");
	if (d->kernel_places == KERNEL_PLACES_SCHED_EXT && was != KERNEL_PLACES_SCHED_EXT &&
	    act_managed(&d->act)) {
		int n = act_restore_all(&d->act);

		spread_fini(&d->pol);
		spread_init(&d->pol);
		log_notice("placement: %d pins given back", n);
	}
	conf_placement_rules(&d->conf, on, sizeof(on));
	if (features_set_placement(&d->features, on,
				   d->kernel_places != KERNEL_PLACES_NOT ? d->kernel_places_why
									 : NULL))
		features_log_one(&d->features, FEAT_PLACEMENT);
}

/*
 * What keep_together and latency_apart ask of the sample stage beside its counts
 * (sample_asks): the tasks with a latency-nice value, from the latency half, into
 * *ret_lat (the caller frees it), and the processes' resident sets. NULL where
 * nothing is asked: a replay brings its own, and nothing is placed while the kernel
 * or a sched_ext scheduler places by cache.
 */
static const struct sample_asks *placement_asks(struct daemon *d, struct sample_asks *a,
						struct sample_lat **ret_lat)
{
	size_t n = 0;

	*ret_lat = NULL;
	if (d->conf.sampler == CONF_SAMPLER_REPLAY || d->kernel_places != KERNEL_PLACES_NOT)
		return NULL;
	*a = (struct sample_asks){ .rss = d->conf.keep_together };
	if (!(d->conf.latency_apart || d->conf.fast_cores) || !latmgr_on(&d->lm))
		return a;
	n = latmgr_ntasks(&d->lm);
	if (n && !(*ret_lat = calloc(n, sizeof(**ret_lat)))) {
		log_debug("latency_apart: out of memory for the latency tasks");
		return a;
	}
	/* latmgr lists its tasks sorted by tid. */
	for (size_t k = 0; k < n; k++) {
		const struct lat_entry *e = latmgr_task_nth(&d->lm, k);

		(*ret_lat)[k] = (struct sample_lat){ .tid = e->task.tid, .tgid = e->tgid,
						     .start_time = e->task.start_time,
						     .value = e->value };
	}
	a->lat = *ret_lat;
	a->nlat = n;
	a->seen = &d->latseen;
	return a;
}

/*
 * A burst of tasks (a fork storm, thousands of threads) leaves its entries' memory in
 * malloc's free lists, where it counts as the daemon's for good: give it back to the
 * kernel now and then: about 0.1 ms on a fragmented heap of a few megabytes.
 */
static void trim_memory(struct daemon *d, uint64_t now_ns)
{
	if (now_ns < d->next_trim_ns)
		return;
	malloc_trim(0);
	d->next_trim_ns = now_ns + TRIM_EVERY_NS;
}

/* Adds the time since *t to stage st, and moves *t to now. */
static void tick_stage(struct daemon *d, enum tick_stage st, uint64_t *t)
{
	uint64_t now = util_now_ns();

	d->tick_ns[st] += now - *t;
	*t = now;
}

/*
 * --record stops at its first failed write (a full disk, say), with one line: a
 * warning each tick would fill the log instead, and a record with a hole in it would
 * replay what never happened.
 */
static void record_failed(struct daemon *d)
{
	log_warn("--record %s: write failed: recording stopped", d->opts.record);
	fclose(d->record);
	d->record = NULL;
}

/* --record: the plan a snapshot led to, as comments a replay skips. */
static void record_plan(struct daemon *d)
{
	char line[PLAN_LINE_MAX];

	for (size_t i = 0; i < d->plan.n; i++) {
		plan_format(&d->plan.a[i], line, sizeof(line));
		fprintf(d->record, "# plan %s\n", line);
	}
	if (fflush(d->record) != 0 || ferror(d->record))
		record_failed(d);
}

/*
 * A heartbeat (the idle backoff) where nothing can ever be spread, fewer than two LLC
 * groups: a sample would feed no decision, and the proc sampler's reads every stat
 * file of the machine's threads (16 ms of CPU each 5 s with 2,000 of them). Such a
 * tick does the rest: hotplug, the pins' and the latency half's upkeep. A replay
 * keeps its snapshot a tick, as tests expect.
 */
static bool heartbeat_unsampled(const struct daemon *d)
{
	return idle_backed_off(&d->idle, d->conf.interval_ms * NSEC_PER_MSEC) &&
	       d->features.f[FEAT_LLC_GROUPS].state == FEAT_MISSING &&
	       d->conf.sampler != CONF_SAMPLER_REPLAY && !d->record;
}

int daemon_tick(struct daemon *d, uint64_t now_ns)
{
	uint64_t t = util_now_ns(), t0 = t;
	const struct sample_asks *asks;
	struct sample_asks asks_buf;
	struct sample_lat *lat;
	struct spread_conf sc;
	int r;

	/* Once a second: an open of the sysfs file took a millisecond a tick emulated. */
	if (now_ns - d->hotplug_ns >= NSEC_PER_SEC) {
		follow_hotplug(d);
		follow_placement(d, false);
		follow_default_slice(d);
		follow_cgroup_mode(d);
		d->hotplug_ns = now_ns;
	}
	trim_memory(d, now_ns);
	if (heartbeat_unsampled(d)) {
		d->ticks++;
		if (d->unsampled++ == 0)
			log_debug("tick: fewer than two LLC groups: a heartbeat takes no sample");
		act_verify(&d->act, on_dropped, d);
		if (latmgr_on(&d->lm))
			latmgr_tick(&d->lm);
		daemon_rqlat_cgroups(d);
		notify_status(d);
		return 0;
	}
	snap_reset(d->snap);
	d->snap->seq = ++d->ticks;
	d->snap->now_ns = now_ns;
	asks = placement_asks(d, &asks_buf, &lat);
	r = sampler_tick(d->sampler, now_ns, asks, d->snap);
	free(lat);
	tick_stage(d, TICK_SAMPLE, &t);
	if (r < 0) {
		d->sample_failures++;
		if (d->sample_errors++ == 0)
			log_warn("%s sampler failed: %s; skipping ticks until it recovers",
				 d->sampler->ops->name, strerror(-r));
		return r;
	}
	if (d->sample_errors) {
		log_notice("%s sampler recovered after %" PRIu64 " failed tick%s",
			   d->sampler->ops->name, d->sample_errors, d->sample_errors == 1 ? "" : "s");
		d->sample_errors = 0;
	}
	if (d->record && snap_write(d->snap, d->record) < 0)
		record_failed(d);
	act_verify(&d->act, on_dropped, d);
	tick_stage(d, TICK_VERIFY, &t);
	if (latmgr_on(&d->lm)) {
		latmgr_tick(&d->lm);
		latmgr_weigh(&d->lm, d->snap, weight_kind(d), d->features.cgroup_mode);
	}
	daemon_rqlat_cgroups(d);
	tick_stage(d, TICK_LATENCY, &t);
	plan_clear(&d->plan);
	conf_spread(&d->conf, &sc);
	if (d->kernel_places != KERNEL_PLACES_NOT)
		sc.keep_together = sc.latency_apart = sc.fast_cores = false;
	sc.whole_processes = d->kernel_places == KERNEL_PLACES_CACHE;
	r = d->kernel_places == KERNEL_PLACES_SCHED_EXT ? 0
							: spread_decide(d->snap, &sc, &d->pol, &d->plan);
	tick_stage(d, TICK_POLICY, &t);
	if (r < 0) {
		log_err("policy: %s", strerror(-r));
		return r;
	}
	if (d->record)
		record_plan(d);
	if (d->plan.n)
		act_apply(&d->act, &d->plan, on_dropped, d);
	notify_status(d);
	tick_stage(d, TICK_ACT, &t);
	if (t - t0 > d->tick_max_ns)
		d->tick_max_ns = t - t0;
	return 0;
}

/*
 * Whether this tick had anything to do: a task or a cgroup managed (spread or latency),
 * a plan, or something to spread (two LLC groups or more and at least as many runnable
 * tasks as CPUs). Otherwise the idle backoff may slow the tick down.
 */
static bool tick_busy(const struct daemon *d)
{
	struct daemon_stats st = { 0 };

	if (act_managed(&d->act) || d->plan.n || d->sample_errors)
		return true;
	latmgr_stats(&d->lm, &st);
	if (st.lat_tasks || st.lat_cgroups || st.lat_processes)
		return true;
	return d->features.f[FEAT_LLC_GROUPS].state != FEAT_MISSING &&
	       d->snap->ntasks >= (size_t)d->topo->ncpus;
}

/* What the events that bring the tick back sum to: a change means one came. */
static uint64_t wake_signals(const struct daemon *d)
{
	struct daemon_stats st = { 0 };

	latmgr_stats(&d->lm, &st);
	return st.rule_matches + st.lat_tasks + st.lat_processes + (d->woken ? 1 : 0);
}

static uint64_t next_interval(struct daemon *d)
{
	struct idle_in in = {
		.tick_ns = d->conf.interval_ms * NSEC_PER_MSEC,
		.max_ns = d->conf.idle_backoff_ms * NSEC_PER_MSEC,
		.busy = tick_busy(d),
		.woken = d->woken,
	};
	bool was = idle_backed_off(&d->idle, in.tick_ns);
	uint64_t next = idle_next(&d->idle, &in);

	if (was != idle_backed_off(&d->idle, in.tick_ns))
		log_debug("tick: %s", was ? "back to interval_ms" : "nothing to do: backing off");
	d->woken = false;
	d->wake_seen = wake_signals(d);
	return next;
}

static int arm_tick(struct daemon *d, uint64_t at_ns)
{
	int r = sd_event_source_set_time(d->timer, at_ns / NSEC_PER_USEC);

	return r < 0 ? r : sd_event_source_set_enabled(d->timer, SD_EVENT_ONESHOT);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	uint64_t now = util_now_ns(), interval;

	daemon_tick(d, now);
	ctl_after_tick(&d->ctl);
	ctl_req_lim_after_tick(&d->req);
	interval = next_interval(d);
	/* Keep the cadence; after a stall or a heartbeat, start again from now. */
	d->next_tick_ns += interval;
	if (d->next_tick_ns <= now || interval != d->conf.interval_ms * NSEC_PER_MSEC)
		d->next_tick_ns = now + interval;
	/* Time sources are one-shot: re-arm. */
	return arm_tick(d, d->next_tick_ns);
}

/*
 * After any event the loop handled (a sync, a rule's match, a reload, a hotplug):
 * on a heartbeat, a change in what the wake signals sum to brings the next tick to one
 * interval from now, so that a sync is answered and a new task is seen at once.
 */
static int on_wake(sd_event_source *s, void *userdata)
{
	struct daemon *d = userdata;
	uint64_t tick_ns = d->conf.interval_ms * NSEC_PER_MSEC, now;

	if (!idle_backed_off(&d->idle, tick_ns) || wake_signals(d) == d->wake_seen)
		return 0;
	now = util_now_ns();
	d->idle = (struct idle_state){ .interval_ns = tick_ns };
	d->wake_seen = wake_signals(d);
	if (d->next_tick_ns <= now + tick_ns)
		return 0;
	log_debug("tick: woken: back to interval_ms");
	d->next_tick_ns = now + tick_ns;
	return arm_tick(d, d->next_tick_ns);
}

/* The metrics file has a timer of its own: the file is written far less often than a tick. */
static int arm_metrics(struct daemon *d, uint64_t delay_ns)
{
	int r;

	if (!d->conf.metrics_path[0]) {
		metrics_fini(&d->metrics);
		return sd_event_source_set_enabled(d->metrics_timer, SD_EVENT_OFF);
	}
	r = sd_event_source_set_time_relative(d->metrics_timer, delay_ns / NSEC_PER_USEC);
	return r < 0 ? r : sd_event_source_set_enabled(d->metrics_timer, SD_EVENT_ONESHOT);
}

void daemon_stats(const struct daemon *d, struct daemon_stats *ret)
{
	*ret = (struct daemon_stats){
		.sampler = d->sampler->ops->name,
		.dry_run = d->conf.dry_run,
		.interval_ms = d->conf.interval_ms,
		.tick_now_ms = (uint32_t)((d->idle.interval_ns ? d->idle.interval_ns
					: d->conf.interval_ms * NSEC_PER_MSEC) / NSEC_PER_MSEC),
		.ticks = d->ticks,
		.sample_errors = d->sample_errors,
		.sample_failures = d->sample_failures,
		.tick_max_us = (double)d->tick_max_ns / 1000.0,
		.managed = act_managed(&d->act),
		.moves = d->act.cnt.moves,
		.restores = d->act.cnt.restores,
		.gone = d->act.cnt.gone,
		.left_alone = d->act.cnt.left_alone,
		.transient = d->act.cnt.transient,
		.permanent = d->act.cnt.permanent,
		.ctl_connections = d->ctl.nconns,
		.dbus = d->bus.serving,
		.dbus_s76 = d->bus.s76,
		.topo = d->topo,
		.snap = d->snap,
		.placement_by = d->kernel_places == KERNEL_PLACES_SCHED_EXT ? "sched_ext"
				: d->kernel_places == KERNEL_PLACES_CACHE   ? "kernel"
									    : "rqbalance",
		.placement_why = d->kernel_places != KERNEL_PLACES_NOT ? d->kernel_places_why : "",
		.cgroup_mode = d->features.cgroup_mode,
		.default_slice_ns = d->features.default_slice_ns,
	};
	latmgr_stats(&d->lm, ret);
	for (int st = 0; st < TICK_STAGES; st++)
		ret->tick_avg_us[st] = d->ticks ? (double)d->tick_ns[st] / (double)d->ticks / 1000.0 : 0;
}

static int on_metrics(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct daemon *d = userdata;
	struct daemon_stats f;

	/* A failure is logged and counted there; the next interval tries again. */
	daemon_stats(d, &f);
	metrics_write(&d->metrics, &f, d->conf.metrics_path);
	return arm_metrics(d, d->conf.metrics_interval_ms * NSEC_PER_MSEC);
}

/* Keys that name resources made at start (the table marks them): a reload keeps them. */
static void keep_restart_keys(const struct rqb_conf *old, struct rqb_conf *c)
{
	for (size_t i = 0; i < conf_nkeys; i++) {
		const struct conf_key *k = &conf_keys[i];
		const char *o = (const char *)old + k->offset;
		char *n = (char *)c + k->offset;

		if (!k->restart || memcmp(o, n, conf_key_size(k)) == 0)
			continue;
		log_warn("reload: %s changed, which takes a restart: keeping the running value",
			 k->key);
		memcpy(n, o, conf_key_size(k));
	}
}

int daemon_reload(struct daemon *d, char **ret_errors)
{
	struct rqb_conf c;
	char *buf = NULL;
	size_t len = 0;
	FILE *err = open_memstream(&buf, &len);
	bool pairs_changed;
	int r;

	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%" PRIu64, (uint64_t)(util_now_ns() / NSEC_PER_USEC));
	r = daemon_load_config(&d->opts, err, &c);
	if (err)
		fclose(err);
	if (r < 0) {
		/* Each error line already names file:line: [section] key: reason. */
		char *copy = buf && ret_errors ? strdup(buf) : NULL;

		for (char *line = buf ? strtok(buf, "\n") : NULL; line; line = strtok(NULL, "\n"))
			log_err("reload: %s", line);
		log_err("reload failed: keeping the running configuration");
		sd_notify(0, "READY=1\nSTATUS=reload failed: kept the running configuration");
		d->status[0] = '\0';
		free(buf);
		if (ret_errors)
			*ret_errors = copy;
		return -EINVAL;
	}
	free(buf);
	keep_restart_keys(&d->conf, &c);
	pairs_changed = c.keep_pairs != d->conf.keep_pairs;
	conf_move(&d->conf, &c);
	d->woken = true;
	if (pairs_changed)
		wake_pairs(d);
	if (features_llcs(&d->features, d->topo, d->conf.min_llc_cores))
		features_log_one(&d->features, FEAT_LLC_GROUPS);
	follow_placement(d, true);
	self_sched(d);
	latency_remap(d);
	log_set_level(c.log_level);
	log_peers(d);
	/* A new path or interval counts from now; an empty path removes the old file. */
	if (arm_metrics(d, d->conf.interval_ms * NSEC_PER_MSEC) < 0)
		log_warn("reload: metrics timer: cannot re-arm");
	log_notice("reloaded %s", d->opts.config_path);
	sd_notify(0, "READY=1");
	d->status[0] = '\0';
	notify_status(d);
	return 0;
}

/* The one thing a dry run changes in the actuators: their driver. */
static const struct act_ops *driver(const struct daemon *d)
{
	return d->conf.dry_run ? &act_dryrun_ops : &act_linux_ops;
}

static int start_latency(struct daemon *d)
{
	struct latmgr_setup s = {
		.driver = driver(d),
		.opts = {
			.journal_dir = d->conf.journal_dir,
			.cgroup_root = d->conf.lat_cgroup_root,
			/* RQB_BENCH_NO_SLICE: bench/latency --slice-ab's rows without the slice
			 * knob, to weigh its own share; not a setting (nothing else reads it). */
			.slices = has_slices(d) && !getenv("RQB_BENCH_NO_SLICE"),
			.uclamp = d->features.f[FEAT_UCLAMP].state != FEAT_MISSING &&
				  d->conf.lat_uclamp,
			.autogroup = d->features.f[FEAT_AUTOGROUP].state != FEAT_MISSING,
			/* RQB_SYSTEMD_BUS: a private bus with a stand-in for systemd, for tests. */
			.bus_address = getenv("RQB_SYSTEMD_BUS"),
		},
		.conf = &d->conf,
		.event = d->event,
		.proc_root = UTIL_PROC_ROOT,
	};

	lat_conf_from(d, &s.lc);
	s.opts.class_cgroups = s.lc.class_cgroups;
	s.opts.systemd = sd_booted() > 0 || (s.opts.bus_address && *s.opts.bus_address);
	if (d->conf.lat_uclamp && !s.opts.uclamp)
		log_info("latency: no uclamp in this kernel: values set no util clamps");
	if (!s.opts.slices)
		log_info("latency: no EEVDF slices in this kernel: values set no slice");
	return latmgr_open(&d->lm, &s);
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	struct daemon *d = userdata;

	if (si->ssi_signo == SIGHUP) {
		daemon_reload(d, NULL);
		return 0;
	}
	log_notice("%s: stopping", strsignal((int)si->ssi_signo));
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static const int handled_signals[] = { SIGTERM, SIGINT, SIGHUP };

/*
 * Blocked from the very start, so that a signal that comes during start-up waits for
 * the loop and is handled in order, instead of killing a half-started daemon.
 */
static int block_signals(void)
{
	sigset_t mask;

	sigemptyset(&mask);
	for (size_t i = 0; i < ARRAY_SIZE(handled_signals); i++)
		sigaddset(&mask, handled_signals[i]);
	return sigprocmask(SIG_BLOCK, &mask, NULL) < 0 ? -errno : 0;
}

static int setup_loop(struct daemon *d)
{
	const int *sigs = handled_signals;
	int r;

	r = sd_event_new(&d->event);
	if (r < 0)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(handled_signals); i++) {
		r = sd_event_add_signal(d->event, NULL, sigs[i], on_signal, d);
		if (r < 0)
			return r;
	}
	/* Sends WATCHDOG=1 at half of WATCHDOG_USEC, when the service manager set it. */
	r = sd_event_set_watchdog(d->event, true);
	if (r < 0)
		return r;
	d->next_tick_ns = util_now_ns();
	r = sd_event_add_time(d->event, &d->timer, CLOCK_MONOTONIC,
			      d->next_tick_ns / NSEC_PER_USEC, 1000, on_timer, d);
	if (r < 0)
		return r;
	r = sd_event_add_post(d->event, &d->wake, on_wake, d);
	if (r < 0)
		return r;
	/* Armed below; the first file comes after the first tick, not before. */
	r = sd_event_add_time(d->event, &d->metrics_timer, CLOCK_MONOTONIC, 0, 0, on_metrics, d);
	return r < 0 ? r : arm_metrics(d, d->conf.interval_ms * NSEC_PER_MSEC);
}

static int ctl_reload(void *d, char **ret_errors)
{
	return daemon_reload(d, ret_errors);
}

static void ctl_status(void *daemon, const struct ctl_caller *who, char *out, size_t len)
{
	struct daemon *d = daemon;
	struct daemon_stats st;
	struct peers p;

	daemon_stats(d, &st);
	ctl_peers(d, &p);
	status_text(&st, &p, &d->env, who, out, len);
}

static uint64_t ctl_ticks(void *d)
{
	return ((const struct daemon *)d)->ticks;
}

/* A status request does not wake the tick (it would never see it idle); a sync does. */
static void ctl_wake(void *d)
{
	((struct daemon *)d)->woken = true;
}

static char *ctl_histograms(void *daemon, char *ret_why, size_t len)
{
	struct daemon *d = daemon;

	if (!d->rqlat) {
		snprintf(ret_why, len, "no run-queue histograms: %s%s",
			 d->conf.histograms ? "the BPF programs did not load: " : "",
			 d->rqlat_why[0] ? d->rqlat_why : "unknown");
		errno = EOPNOTSUPP;
		return NULL;
	}
	daemon_rqlat_cgroups(d);
	return rqlat_text(d->rqlat);
}

static const struct ctl_ops ctl_ops = {
	.reload = ctl_reload,
	.status = ctl_status,
	.ticks = ctl_ticks,
	.wake = ctl_wake,
	.histograms = ctl_histograms,
};

/* At start: the kinds of core, where there are two or more, in status's words. */
static void log_kinds(const struct topo *t)
{
	char desc[CPUMASK_STRLEN + 128];

	for (int k = 0; t->nkinds >= 2 && k < t->nkinds; k++) {
		topo_kind_describe(t, k, desc, sizeof(desc));
		log_info("topology: kind %d %s", k, desc);
	}
}

/* What the doors see of the daemon (ctl_req.h). */
static void ctl_env_of(struct daemon *d)
{
	d->env = (struct ctl_env){ .lm = &d->lm, .req = &d->req, .conf = &d->conf, .ops = &ctl_ops,
				   .daemon = d };
}

int daemon_init(struct daemon *d, const struct daemon_opts *o, struct rqb_conf *c)
{
	struct topo_opts to = { .filter_online = true, .root = "" };
	char desc[512];
	int r;

	memset(d, 0, sizeof(*d));
	r = block_signals();
	if (r < 0)
		return r;
	d->opts = *o;
	conf_move(&d->conf, c);
	spread_init(&d->pol);
	plan_init(&d->plan);
	metrics_init(&d->metrics);
	raise_nofile();
	to.xml = d->conf.topology[0] ? d->conf.topology : NULL;
	r = topo_load(&to, &d->topo);
	if (r < 0) {
		log_err("topology%s%s: cannot load: %s", to.xml ? " " : "", to.xml ? to.xml : "",
			strerror(-r));
		return r;
	}
	topo_describe(d->topo, desc, sizeof(desc));
	log_info("topology: %s", desc);
	log_kinds(d->topo);
	if (d->topo->noffline)
		log_notice("topology: %d CPU%s it names %s not online here: left out",
			   d->topo->noffline, d->topo->noffline == 1 ? "" : "s",
			   d->topo->noffline == 1 ? "is" : "are");
	features_probe("", d->topo, d->conf.min_llc_cores, &d->features);
	d->slice_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	features_log(&d->features);
	self_sched(d);
	latseen_init(&d->latseen);
	d->snap = snap_new(d->topo);
	if (!d->snap)
		return -ENOMEM;
	r = make_sampler(d);
	if (r < 0)
		return r;
	wake_pairs(d);
	follow_placement(d, true);
	start_rqlat(d);
	if (o->record) {
		d->record = fopen(o->record, "we");
		if (!d->record) {
			r = -errno;
			log_err("--record %s: %s", o->record, strerror(-r));
			return r;
		}
	}
	r = act_init(&d->act, driver(d), d->conf.journal_dir);
	if (r < 0) {
		log_err("journal in %s: %s", d->conf.journal_dir,
			r == -EBUSY ? "locked by another rqbalanced" : strerror(-r));
		return r;
	}
	r = setup_loop(d);
	if (r < 0) {
		log_err("event loop: %s", strerror(-r));
		return r;
	}
	r = start_latency(d);
	if (r < 0)
		return r;
	features_set(&d->features, FEAT_TASK_EVENTS, latmgr_has_events(&d->lm) ? FEAT_USED : FEAT_MISSING,
		     "%s", d->lm.events_why);
	features_log_one(&d->features, FEAT_TASK_EVENTS);
	log_peers(d);
	follow_lat_tasks(d);
	ctl_env_of(d);
	r = ctl_init(&d->ctl, d->event, d->conf.ctl_socket, &d->env);
	if (r < 0) {
		log_err("ctl socket %s: %s", d->conf.ctl_socket,
			r == -EADDRINUSE ? "another rqbalanced serves it" : strerror(-r));
		return r;
	}
	ctl_bus_init(&d->bus, d->event, &d->env);
	drop_caps(d);
	start_moves(d);
	return 0;
}

int daemon_run(struct daemon *d)
{
	int r;

	log_info("running: sampler %s, tick %u ms%s", d->sampler->ops->name, d->conf.interval_ms,
		 d->conf.dry_run ? ", dry run" : "");
	sd_notify(0, "READY=1");
	notify_status(d);
	r = sd_event_loop(d->event);
	sd_notify(0, "STOPPING=1\nSTATUS=stopping: restoring tasks");
	return r;
}

void daemon_fini(struct daemon *d)
{
	if (d->act.ops) {
		uint64_t before = d->act.cnt.restores;

		act_fini(&d->act);
		log_info("stopped: %" PRIu64 " task%s restored", d->act.cnt.restores - before,
			 d->act.cnt.restores - before == 1 ? "" : "s");
	}
	ctl_bus_fini(&d->bus);
	if (d->ctl.env)
		ctl_fini(&d->ctl);
	ctl_req_lim_fini(&d->req);
	if (latmgr_on(&d->lm)) {
		int n;

		latmgr_stop(&d->lm);
		d->moves = sd_event_source_disable_unref(d->moves);
		n = latmgr_close(&d->lm);
		log_info("stopped: %d latency setting%s given back", n, n == 1 ? "" : "s");
	}
	metrics_fini(&d->metrics);
	sd_event_source_unref(d->metrics_timer);
	sd_event_source_unref(d->wake);
	sd_event_source_unref(d->timer);
	sd_event_unref(d->event);
	if (d->record)
		fclose(d->record);
	sampler_free(d->sampler);
	rqlat_free(d->rqlat);
	snap_free(d->snap);
	latseen_fini(&d->latseen);
	conf_free(&d->conf);
	plan_fini(&d->plan);
	spread_fini(&d->pol);
	topo_free(d->topo);
	timedread_fini();
	memset(d, 0, sizeof(*d));
}
