/* The ctl harness (ctl_harness.h): a fake system and a daemon in memory. */
#include "ctl_harness.h"
#include "testonly.h"
#include "plan/plan.h"

char ctlh_tmp[PATH_MAX], ctlh_proc_root[PATH_MAX], ctlh_cg_mount[PATH_MAX];
static char ctlh_conf_path[PATH_MAX];
struct topo *ctlh_topo;
static struct snapshot *ctlh_snap;
sd_event *ctlh_loop;

/* ---- the fake system ---- */

void ctlh_put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", ctlh_tmp, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	CTLH_CHECK(fd >= 0);
	CTLH_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

void ctlh_dir(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", ctlh_tmp, rel);
	CTLH_CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* Owned by uid where the test may chown (as root); else the check stays stricter. */
static void ctlh_own(const char *rel, uid_t uid)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", ctlh_tmp, rel);
	if (chown(path, uid, (gid_t)-1) < 0)
		return;
}

static void ctlh_status_file(const char *rel, pid_t tid, pid_t tgid, unsigned uid,
			     unsigned gid, uint64_t cap_eff)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "Name:\tfake\nTgid:\t%d\nPid:\t%d\nPPid:\t1\nUid:\t%u\t%u\t%u\t%u\n"
		 "Gid:\t%u\t%u\t%u\t%u\nCapInh:\t0000000000000000\nCapPrm:\t%016llx\n"
		 "CapEff:\t%016llx\n",
		 (int)tgid, (int)tid, uid, uid, uid, uid, gid, gid, gid, gid,
		 (unsigned long long)cap_eff, (unsigned long long)cap_eff);
	ctlh_put(rel, text);
}

/* Task tid's stat (parent ppid), status and id maps in directory at/TID. */
void ctlh_task_files(const char *at, pid_t tid, pid_t tgid, pid_t ppid, unsigned uid,
		     unsigned gid, uint64_t cap_eff)
{
	char rel[PATH_MAX], text[1024];

	snprintf(rel, sizeof(rel), "%s/%d", at, (int)tid);
	ctlh_dir(rel);
	snprintf(rel, sizeof(rel), "%s/%d/stat", at, (int)tid);
	snprintf(text, sizeof(text),
		 "%d (fake %d) S %d %d %d 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 %d 3133440 383 "
		 "18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 1 1 1 1 1 1 1 0\n",
		 (int)tid, (int)tid, (int)ppid, (int)tgid, (int)tgid, CTLH_START_TIME);
	ctlh_put(rel, text);
	/* Its start time is read under its own task directory (procfs_start_time). */
	if (strcmp(at, "proc") == 0) {
		snprintf(rel, sizeof(rel), "proc/%d/task", (int)tid);
		ctlh_dir(rel);
		snprintf(rel, sizeof(rel), "proc/%d/task/%d", (int)tid, (int)tid);
		ctlh_dir(rel);
		snprintf(rel, sizeof(rel), "proc/%d/task/%d/stat", (int)tid, (int)tid);
		ctlh_put(rel, text);
	}
	snprintf(rel, sizeof(rel), "%s/%d/status", at, (int)tid);
	ctlh_status_file(rel, tid, tgid, uid, gid, cap_eff);
	snprintf(rel, sizeof(rel), "%s/%d/uid_map", at, (int)tid);
	ctlh_put(rel, "         0          0 4294967295\n");
	snprintf(rel, sizeof(rel), "%s/%d/gid_map", at, (int)tid);
	ctlh_put(rel, "         0          0 4294967295\n");
	/* What its /proc shows it: a proc mount with no hidepid (ctlh_peer_proc changes it). */
	snprintf(rel, sizeof(rel), "%s/%d/mountinfo", at, (int)tid);
	ctlh_put(rel, "22 27 0:21 / /proc rw,relatime shared:13 - proc proc rw\n");
	snprintf(rel, sizeof(rel), "%s/%d", at, (int)tid);
	ctlh_own(rel, uid);
}

/* A process with its threads (uids[i] the i-th's), in proc/PID and proc/PID/task/TID. */
void ctlh_process(pid_t tgid, const unsigned *uids, int nthreads, uint64_t cap_eff)
{
	char at[64];

	ctlh_task_files("proc", tgid, tgid, 1, uids[0], uids[0], cap_eff);
	snprintf(at, sizeof(at), "proc/%d/task", (int)tgid);
	ctlh_dir(at);
	for (int i = 0; i < nthreads; i++) {
		ctlh_task_files(at, tgid + i, tgid, 1, uids[i], uids[i], cap_eff);
		if (i)
			ctlh_task_files("proc", tgid + i, tgid, 1, uids[i], uids[i], cap_eff);
	}
}

/* Whose every thread is uid's, as the fake system has them (the caller's is its own). */
bool ctlh_task_is(pid_t tid, bool process, uid_t uid)
{
	switch (tid) {
	case CTLH_PEER:
		return true;
	case CTLH_PROC_A:
	case CTLH_PROC_A + 1:
		return uid == 1000;
	case CTLH_PROC_C:
		return process ? false : uid == 1000;
	case CTLH_PROC_C + 1:
		return uid == 0;
	case CTLH_PROC_B:
		return uid == 0;
	case CTLH_PROC_D:
		return uid == 1001;
	}
	return false;
}

static void ctlh_cgroup(const char *name, bool weight, uid_t uid)
{
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "cg/%s", name);
	ctlh_dir(rel);
	snprintf(rel, sizeof(rel), "cg/%s/cgroup.procs", name);
	ctlh_put(rel, "");
	if (!weight)
		return;
	snprintf(rel, sizeof(rel), "cg/%s/cpu.weight", name);
	ctlh_put(rel, "100\n");
	ctlh_own(rel, uid);
	snprintf(rel, sizeof(rel), "cg/%s/cpu.idle", name);
	ctlh_put(rel, "0\n");
}

/* The weights a reset gives back are written there: each run starts from the same. */
static void ctlh_cgroups(void)
{
	ctlh_cgroup("sys", true, 0);
	ctlh_cgroup("user", true, 1000);
	ctlh_cgroup("nocpu", false, 0);
}

static int ctlh_rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void ctlh_cleanup(void)
{
	if (ctlh_tmp[0])
		nftw(ctlh_tmp, ctlh_rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The caller's process: its credentials, and CAP_SYS_NICE or not. */
void ctlh_peer_files(uid_t uid, gid_t gid, bool cap_sys_nice)
{
	ctlh_task_files("proc", CTLH_PEER, CTLH_PEER, 1, uid, gid, cap_sys_nice ? CTLH_NICE_CAP : 0);
}

/*
 * The caller's /proc: mounted with these super options ("rw,hidepid=invisible"), or,
 * with NULL, not at all; the mounts before it are another proc elsewhere and a tmpfs.
 */
void ctlh_peer_proc(const char *opts)
{
	char rel[64], text[512];

	snprintf(rel, sizeof(rel), "proc/%d/mountinfo", CTLH_PEER);
	snprintf(text, sizeof(text),
		 "21 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		 "23 21 0:22 / /run rw - tmpfs tmpfs rw\n"
		 "24 21 0:21 / /other\\040proc rw - proc proc rw\n"
		 "%s%s%s",
		 opts ? "25 21 0:23 / /proc rw,nosuid - proc proc " : "", opts ? opts : "",
		 opts ? "\n" : "");
	ctlh_put(rel, text);
}

/* The peer executes a set-user-ID program: its saved uid changes. */
void ctlh_peer_setuid(void)
{
	char rel[64];

	snprintf(rel, sizeof(rel), "proc/%d/status", CTLH_PEER);
	ctlh_status_file(rel, CTLH_PEER, CTLH_PEER, 1, 1, 0);
}

static void ctlh_fake_system(const char *name)
{
	static const unsigned a[] = { 1000, 1000 }, c[] = { 1000, 0 }, b[] = { 0 }, d[] = { 1001 };
	char text[PATH_MAX * 2];

	snprintf(ctlh_tmp, sizeof(ctlh_tmp), "%s/%s.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", name);
	CTLH_CHECK(mkdtemp(ctlh_tmp));
	atexit(ctlh_cleanup);
	snprintf(ctlh_proc_root, sizeof(ctlh_proc_root), "%s/proc", ctlh_tmp);
	snprintf(ctlh_cg_mount, sizeof(ctlh_cg_mount), "%s/cg", ctlh_tmp);
	snprintf(ctlh_conf_path, sizeof(ctlh_conf_path), "%s/rqbalance.conf", ctlh_tmp);
	ctlh_dir("proc");
	ctlh_dir("proc/self");
	ctlh_put("proc/self/uid_map", "         0          0 4294967295\n");
	ctlh_put("proc/self/gid_map", "         0          0 4294967295\n");
	ctlh_process(CTLH_PROC_A, a, 2, 0);
	ctlh_process(CTLH_PROC_C, c, 2, 0);
	ctlh_process(CTLH_PROC_B, b, 1, 0);
	ctlh_process(CTLH_PROC_D, d, 1, 0);
	ctlh_dir("cg");
	ctlh_cgroups();
	ctlh_dir("rules.d");
	snprintf(text, sizeof(text),
		 "[daemon]\nctl_group = root\ndry_run = yes\nlog_level = err\nrules_dir = %s/rules.d\n",
		 ctlh_tmp);
	ctlh_put("rqbalance.conf", text);
}

/* The fake system, a two-LLC synthetic topology, its snapshot and an event loop. */
void ctlh_init(const char *name)
{
	/* A root with no sysfs: no X3D mode in the status, whatever machine runs the tests. */
	struct topo_opts to = { .synthetic = "package:1 l3cache:2 core:1 pu:1",
				.root = "/nonexistent" };

	/* No service manager is told anything (sd_notify on reload). */
	unsetenv("NOTIFY_SOCKET");
	ctlh_fake_system(name);
	CTLH_CHECK(topo_load(&to, &ctlh_topo) == 0);
	ctlh_snap = snap_new(ctlh_topo);
	CTLH_CHECK(ctlh_snap);
	CTLH_CHECK(sd_event_new(&ctlh_loop) >= 0);
}

/* ---- the daemon, in memory ---- */

static int ctlh_no_open(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret)
{
	(void)tid;
	(void)tgid;
	(void)start_time;
	(void)ret;
	return -ESRCH;
}

static int ctlh_no_task(const struct act_task *t)
{
	(void)t;
	return -ESRCH;
}

static int ctlh_no_get(const struct act_task *t, cpu_set_t *ret)
{
	(void)t;
	(void)ret;
	return -ESRCH;
}

/* A write that reached the actuator is a failure: the tasks here are not real. */
static int ctlh_never_set(const struct act_task *t, const cpu_set_t *mask)
{
	(void)t;
	(void)mask;
	CTLH_CHECK(!"an affinity write reached the actuator");
	return -EPERM;
}

/*
 * The dry-run driver on the fake tasks: none opens, is alive or has an affinity to
 * read (no real task has these pids), and an affinity write is a failure. Every
 * other write is the dry-run driver's, which changes nothing: the harness seeds
 * entries a dry run never records, so a reset may reach one, and the fake tree stays
 * as the scenario made it.
 */
struct act_ops ctlh_ops;

static void ctlh_ops_init(void)
{
	ctlh_ops = act_dryrun_ops;
	ctlh_ops.name = "ctlh";
	ctlh_ops.open = ctlh_no_open;
	ctlh_ops.alive = ctlh_no_task;
	ctlh_ops.get_affinity = ctlh_no_get;
	ctlh_ops.set_affinity = ctlh_never_set;
}

/* For ctlh_ops_all_open: every fake task opens and is there (the kernel knows none). */
int ctlh_open_any(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret)
{
	(void)tgid;
	*ret = (struct act_task){ .tid = tid, .start_time = start_time, .pidfd = -1 };
	return 0;
}

static int ctlh_alive(const struct act_task *t)
{
	(void)t;
	return 0;
}

/* ... and has what a plain task has: SCHED_OTHER, nice 0, no slice or clamp of its own. */
int ctlh_plain_attr(pid_t tid, struct rqb_sched_attr *ret)
{
	(void)tid;
	*ret = (struct rqb_sched_attr){ .size = sizeof(*ret), .sched_policy = SCHED_OTHER };
	return 0;
}

/* The harness's driver, but every task opens and reads: the latency manager's tests. */
void ctlh_ops_all_open(struct act_ops *ret)
{
	*ret = ctlh_ops;
	ret->name = "fake";
	ret->open = ctlh_open_any;
	ret->alive = ctlh_alive;
	ret->get_attr = ctlh_plain_attr;
}
/* A reload: the config file read again, as the daemon reads it; its rules applied. */
static int ctlh_reload(void *d, char **ret_errors)
{
	struct ctlh *h = d;
	struct rqb_conf *c = malloc(sizeof(*c));
	char *buf = NULL;
	size_t len = 0;
	FILE *err = open_memstream(&buf, &len);
	int r;

	CTLH_CHECK(c && err);
	r = conf_load(ctlh_conf_path, err, c);
	fclose(err);
	if (r < 0) {
		*ret_errors = buf;
		free(c);
		return -EINVAL;
	}
	free(buf);
	c->dry_run = true;
	conf_move(&h->conf, c);
	free(c);
	latmgr_rules_changed(&h->lm);
	return 0;
}

static void ctlh_stats(void *d, struct daemon_stats *ret)
{
	struct ctlh *h = d;

	*ret = (struct daemon_stats){ .sampler = "ctlh", .dry_run = h->conf.dry_run,
				      .interval_ms = h->conf.interval_ms,
				      .tick_now_ms = h->conf.interval_ms, .ticks = h->ticks,
				      .ctl_connections = h->ctl.nconns, .topo = ctlh_topo,
				      .snap = ctlh_snap };
	latmgr_stats(&h->lm, ret);
}

static uint64_t ctlh_ticks(void *d)
{
	return ((struct ctlh *)d)->ticks;
}

/* No BPF here: no histograms. */
static char *ctlh_histograms(void *d, char *ret_why, size_t len)
{
	(void)d;
	snprintf(ret_why, len, "no run-queue histograms: unknown");
	errno = EOPNOTSUPP;
	return NULL;
}

/* No sched_ext, autogroup or tool there, and no cpu controller. */
static void ctlh_peers(void *d, struct peers *ret)
{
	struct ctlh *h = d;
	struct peers_ctx ctx = { .class_cgroups = h->lat.cls.on };

	peers_scan("/nonexistent-rqb-peers", &ctx, ret);
}

/* The daemon's own status text, of what the harness holds. */
static void ctlh_status(void *d, const struct ctl_caller *who, char *out, size_t len)
{
	struct daemon_stats st;
	struct peers p;

	ctlh_stats(d, &st);
	ctlh_peers(d, &p);
	status_text(&st, &p, &((struct ctlh *)d)->env, who, out, len);
}

static const struct ctl_ops ctlh_ctl_ops = {
	.reload = ctlh_reload, .status = ctlh_status, .ticks = ctlh_ticks,
	.histograms = ctlh_histograms,
};

void ctlh_task_entry(struct latact *la, pid_t tid, pid_t tgid, int v, const char *cg)
{
	struct lat_entry *e = calloc(1, sizeof(*e));

	CTLH_CHECK(e && la->n < la->cap);
	la->e[la->n++] = e;
	e->task = (struct act_task){ .tid = tid, .start_time = CTLH_START_TIME, .pidfd = -1 };
	e->tgid = tgid;
	e->value = v;
	snprintf(e->source, sizeof(e->source), "ctl uid 1000");
	e->prev.umin = e->prev.umax = e->set.umin = e->set.umax = -1;
	e->set.nice = v;
	snprintf(e->set.cgroup, sizeof(e->set.cgroup), "%s", cg);
	e->cg = cg[0] ? LAT_CG_OURS : LAT_CG_MOVED;
	snprintf(e->cg_left, sizeof(e->cg_left), "/elsewhere\t\x1b[2J");
}

static void ctlh_cg_entry(struct latact *la, const char *path, int v)
{
	struct lat_cg_entry *g = &la->cg[la->ncg++];

	memset(g, 0, sizeof(*g));
	snprintf(g->path, sizeof(g->path), "%s", path);
	g->value = v;
	snprintf(g->source, sizeof(g->source), "ctl uid 0");
	g->prev_weight = 100;
	g->set_weight = 100;
	g->prev_idle = g->set_idle = 0;
}

static void ctlh_proc_entry(struct latmgr *m, pid_t tgid, int v)
{
	struct latmgr_proc *p = calloc(1, sizeof(*p));

	CTLH_CHECK(p);
	m->p[m->np++] = p;
	p->tgid = tgid;
	p->start_time = CTLH_START_TIME;
	p->value = v;
	snprintf(p->source, sizeof(p->source), "ctl uid 1000");
}

/* What is already managed (struct ctlh_scenario's managed): sorted by tid and tgid. */
void ctlh_managed(struct ctlh *d, uint8_t what)
{
	struct latact *la = &d->lat;

	la->e = calloc(8, sizeof(*la->e));
	la->cg = calloc(4, sizeof(*la->cg));
	d->lm.p = calloc(4, sizeof(*d->lm.p));
	CTLH_CHECK(la->e && la->cg && d->lm.p);
	la->cap = 8;
	la->capcg = 4;
	d->lm.capp = 4;
	if (what & 1) {
		ctlh_task_entry(la, CTLH_PROC_A, CTLH_PROC_A, 5, "/user");
		ctlh_task_entry(la, CTLH_PROC_A + 1, CTLH_PROC_A, 5, "");
		ctlh_task_entry(la, CTLH_PROC_C + 1, CTLH_PROC_C, -3, "");
		ctlh_task_entry(la, CTLH_GHOST, CTLH_GHOST, 19, "");
	}
	if (what & 2) {
		ctlh_proc_entry(&d->lm, CTLH_PROC_A, 5);
		ctlh_proc_entry(&d->lm, CTLH_PROC_B, -10);
		ctlh_proc_entry(&d->lm, CTLH_PROC_D, 0);
	}
	if (what & 4) {
		ctlh_cg_entry(la, "/gone", 1);
		ctlh_cg_entry(la, "/sys", -2);
		ctlh_cg_entry(la, "/user", 3);
	}
}

struct ctlh *ctlh_daemon_new(const struct ctlh_scenario *sc)
{
	struct ctlh *d = calloc(1, sizeof(*d));

	CTLH_CHECK(d);
	ctlh_ops_init();
	conf_defaults(&d->conf);
	d->conf.dry_run = true;
	snprintf(d->conf.ctl_group, sizeof(d->conf.ctl_group), "%s", sc->ctl_group ? "root" : "");
	/* As the config loader leaves it: the group resolved once, to its gid. */
	d->conf.ctl_gid_set = d->conf.ctl_group[0] != '\0';
	d->conf.ctl_gid = 0;
	d->ticks = sc->ticks;
	for (int c = 0; c < ctlh_topo->nr_cpu_ids; c++)
		ctlh_snap->cpus[c].nr_running = (sc->runnable >> (c % 8)) & 3;

	d->lat.ops = &ctlh_ops;
	d->lat.o.proc_root = ctlh_proc_root;
	snprintf(d->lat.proc_root, sizeof(d->lat.proc_root), "%s", ctlh_proc_root);
	d->lat.cls.v2 = true;
	d->lat.cls.on = sc->classes;
	snprintf(d->lat.cls.mount, sizeof(d->lat.cls.mount), "%s", ctlh_cg_mount);
	d->lat.lc.batch_from = 20;

	d->lm.la = &d->lat;
	d->lm.conf = &d->conf;
	d->lm.self = getpid();
	snprintf(d->lm.proc_root, sizeof(d->lm.proc_root), "%s", ctlh_proc_root);
	snprintf(d->lm.pc_state, sizeof(d->lm.pc_state), "none (test)");
	ctlh_managed(d, sc->managed);

	d->env = (struct ctl_env){ .lm = &d->lm, .req = &d->req, .conf = &d->conf,
				   .ops = &ctlh_ctl_ops, .daemon = d };
	/* No one's subordinate uids but a test's own: the machine's are not read. */
	d->req.subuid_path = "/nonexistent-rqb-subuid";
	d->ctl.fd = -1;
	d->ctl.env = &d->env;
	return d;
}

/* Frees d and puts back the cgroup files a reset may have written. */
void ctlh_daemon_free(struct ctlh *d)
{
	d->lm.ev = NULL; /* the test's event source, not the daemon's to close */
	ctl_fini(&d->ctl);
	ctl_req_lim_fini(&d->req);
	for (size_t i = 0; i < d->lat.n; i++)
		free(d->lat.e[i]);
	free(d->lat.e);
	free(d->lat.given);
	free(d->lat.cg);
	/* The daemon's own end of the manager, not a copy of it that a new field outgrows. */
	latmgr_fini(&d->lm);
	conf_free(&d->conf);
	free(d);
	ctlh_cgroups();
}

struct act_ops ctlh_lat_ops;
char ctlh_plans[1 << 14];
void (*ctlh_lat_fresh)(struct ctlh *d);

static void ctlh_on_plan(void *ctx, const struct plan *p)
{
	size_t len = strlen(ctlh_plans);
	FILE *f = fmemopen(ctlh_plans + len, sizeof(ctlh_plans) - len, "w");

	(void)ctx;
	CTLH_CHECK(f);
	plan_dump(p, f);
	fclose(f);
}

struct ctlh *ctlh_lat_daemon(uint8_t managed)
{
	struct ctlh_scenario sc = { .managed = managed };
	struct ctlh *d = ctlh_daemon_new(&sc);

	ctlh_ops_all_open(&ctlh_lat_ops);
	d->lat.ops = &ctlh_lat_ops;
	d->lat.on_plan = ctlh_on_plan;
	ctlh_plans[0] = '\0';
	if (ctlh_lat_fresh)
		ctlh_lat_fresh(d);
	return d;
}

int ctlh_lat_setup(void **state)
{
	*state = ctlh_lat_daemon(0);
	return 0;
}

int ctlh_lat_setup_managed(void **state)
{
	*state = ctlh_lat_daemon(1 | 2);
	return 0;
}

int ctlh_lat_setup_records(void **state)
{
	*state = ctlh_lat_daemon(2);
	return 0;
}

int ctlh_teardown(void **state)
{
	ctlh_daemon_free(*state);
	return 0;
}

/* ---- a connection ---- */

/* What the server wrote to the client's end fd so far, appended to *buf. */
static void ctlh_drain(int fd, uint8_t **buf, size_t *len, size_t *cap)
{
	for (;;) {
		ssize_t r;

		if (*cap - *len < 65536) {
			*cap = *cap * 2 + 65536;
			*buf = realloc(*buf, *cap);
			CTLH_CHECK(*buf);
		}
		r = recv(fd, *buf + *len, *cap - *len, MSG_DONTWAIT);
		if (r <= 0)
			return;
		*len += (size_t)r;
	}
}

/* Runs the loop until it is idle, reading what the server writes; then a few ticks. */
void ctlh_settle(struct ctlh *d, int fd, uint8_t **buf, size_t *len, size_t *cap)
{
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 256 && sd_event_run(ctlh_loop, 0) > 0; i++)
			ctlh_drain(fd, buf, len, cap);
		ctlh_drain(fd, buf, len, cap);
		d->ticks++;
		ctl_after_tick(&d->ctl);
		ctlh_drain(fd, buf, len, cap);
	}
}

/* Sends size bytes as the client, serving them as they go, until sent or closed. */
void ctlh_send_all(struct ctlh *d, int fd, const uint8_t *data, size_t size, uint8_t **buf,
		   size_t *len, size_t *cap)
{
	size_t off = 0;

	while (off < size) {
		ssize_t w = send(fd, data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0 && errno != EAGAIN)
			return; /* the server closed it */
		if (w > 0)
			off += (size_t)w;
		ctlh_settle(d, fd, buf, len, cap);
		if (w <= 0 && d->ctl.nconns == 0)
			return;
	}
}

