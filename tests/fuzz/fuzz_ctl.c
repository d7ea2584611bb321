/*
 * Fuzz target: the ctl socket, from the bytes a client sends to the replies it gets.
 * First the message decoder on the whole input, as before. Then the input after a
 * 4-byte scenario is sent, as one client, to a connection that the daemon's own ctl
 * code serves (ctl_serve_fd) for a caller the scenario picks, against a daemon built
 * here in memory: a dry-run latency actuator whose task operations refuse every task,
 * and targets resolved under a fake /proc and a fake cgroup hierarchy in a temporary
 * directory. Every request handler parses and answers what it is sent: status,
 * reload, set, get, list, reset, latency (refused: no BPF here) and sync. The replies
 * must decode, come in order, and never grant what the kernel would refuse the caller.
 * Nothing outside the temporary directory is written; the fake tasks' pids are above
 * the kernel's PID_MAX_LIMIT, so no real task is ever named by them.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/daemon.h"
#include "ctl_proto.h"
#include "fuzz.h"
#include "policy/latency.h"

static const char *const keys[] = { "pid", "tid", "self", "cgroup", "value",
				    "errno", "message", "tasks", "source", "" };

/* ctl_kv into buffers of several sizes, each exact so that an overrun is seen. */
static void kv(const struct ctl_msg *m)
{
	static const size_t sizes[] = { 1, 8, 256 };

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			char *v = malloc(sizes[s]);
			int r, value;
			const char *why;

			if (!v)
				abort();
			r = ctl_kv(m->payload, m->hdr.len, keys[k], v, sizes[s]);
			FUZZ_CHECK(r == 0 || r == -ENOENT || r == -E2BIG || r == -EINVAL);
			if (r == 0) {
				/* The whole value: no NUL cut it short. */
				FUZZ_CHECK(strlen(v) < sizes[s]);
				FUZZ_CHECK(!strchr(v, '\n'));
				if (strcmp(keys[k], "value") == 0 && lat_parse(v, &value, &why) == 0)
					FUZZ_CHECK(value >= LAT_MIN && value <= LAT_MAX);
			}
			free(v);
		}
	}
}

/* One message of n bytes at buf: its prefixes are incomplete, and it encodes back. */
static void check_whole(const uint8_t *buf, size_t n, const struct ctl_msg *m)
{
	const size_t cuts[] = { 0, sizeof(m->hdr) - 1, sizeof(m->hdr), n - 1 };
	struct ctl_msg tmp;
	uint8_t *out;

	FUZZ_CHECK(n == sizeof(m->hdr) + m->hdr.len && m->hdr.len <= CTL_MAX_PAYLOAD);
	FUZZ_CHECK(m->payload == (const char *)buf + sizeof(m->hdr));
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		if (cuts[i] < n)
			FUZZ_CHECK(ctl_decode(buf, cuts[i], &tmp) == 0);
	out = malloc(n);
	if (!out)
		abort();
	FUZZ_CHECK(ctl_encode(out, m->hdr.type, m->hdr.seq, m->payload, m->hdr.len) == n);
	FUZZ_CHECK(memcmp(out, buf, n) == 0);
	free(out);
	FUZZ_CHECK(strcmp(ctl_type_name(m->hdr.type), "unknown") != 0);
}

static void decoder(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		struct ctl_msg m;
		ssize_t n = ctl_decode(data + off, size - off, &m);

		FUZZ_CHECK(n >= 0 || n == -EPROTO);
		if (n <= 0)
			break;
		FUZZ_CHECK((size_t)n <= size - off);
		check_whole(data + off, (size_t)n, &m);
		kv(&m);
		off += (size_t)n;
	}
}

/* ---- the fake system ---- */

/*
 * Above PID_MAX_LIMIT (4194304): no real task has these ids, so what reads the real
 * /proc by pid (the affinity actuator, prlimit) finds nothing, whatever the machine.
 */
#define FAKE_BASE 4194400
#define PEER (FAKE_BASE + 0)   /* the caller's process: "self" */
#define PROC_A (FAKE_BASE + 1) /* uid 1000's, threads A and A + 1 */
#define PROC_C (FAKE_BASE + 3) /* uid 1000's leader, thread C + 1 is root's */
#define PROC_B (FAKE_BASE + 5) /* root's */
#define PROC_D (FAKE_BASE + 7) /* uid 1001's */
#define GHOST (FAKE_BASE + 9)  /* managed, but not in the fake /proc */
#define START_TIME 4242
#define NICE_CAP (1ULL << 23)

static const uid_t caller_uids[] = { 0, 1000, 1001, 65534 };

static char tmp[PATH_MAX], proc_root[PATH_MAX], cg_mount[PATH_MAX], conf_path[PATH_MAX];
static struct topo *topo;
static struct snapshot *snap;
static sd_event *loop;
static bool verbose; /* RQB_FUZZ_LOG=1: the log, and every reply, on stderr */

static void put(const char *rel, const char *text)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	FUZZ_CHECK(fd >= 0);
	FUZZ_CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
	close(fd);
}

static void dir(const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	FUZZ_CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
}

/* Owned by uid where the fuzzer may chown (as root); else the check stays stricter. */
static void own(const char *rel, uid_t uid)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	if (chown(path, uid, (gid_t)-1) < 0)
		return;
}

static void status_file(const char *rel, pid_t tid, pid_t tgid, unsigned uid, unsigned gid,
			uint64_t cap_eff)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "Name:\tfake\nTgid:\t%d\nPid:\t%d\nPPid:\t1\nUid:\t%u\t%u\t%u\t%u\n"
		 "Gid:\t%u\t%u\t%u\t%u\nCapInh:\t0000000000000000\nCapPrm:\t%016llx\n"
		 "CapEff:\t%016llx\n",
		 (int)tgid, (int)tid, uid, uid, uid, uid, gid, gid, gid, gid,
		 (unsigned long long)cap_eff, (unsigned long long)cap_eff);
	put(rel, text);
}

static void task_files(const char *at, pid_t tid, pid_t tgid, unsigned uid, unsigned gid,
		       uint64_t cap_eff)
{
	char rel[PATH_MAX], text[1024];

	snprintf(rel, sizeof(rel), "%s/%d", at, (int)tid);
	dir(rel);
	snprintf(rel, sizeof(rel), "%s/%d/stat", at, (int)tid);
	snprintf(text, sizeof(text),
		 "%d (fake %d) S 1 %d %d 0 -1 4194304 99 0 0 0 0 0 0 0 20 0 1 0 %d 3133440 383 "
		 "18446744073709551615 1 1 1 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 1 1 1 1 1 1 1 0\n",
		 (int)tid, (int)tid, (int)tgid, (int)tgid, START_TIME);
	put(rel, text);
	snprintf(rel, sizeof(rel), "%s/%d/status", at, (int)tid);
	status_file(rel, tid, tgid, uid, gid, cap_eff);
	snprintf(rel, sizeof(rel), "%s/%d/uid_map", at, (int)tid);
	put(rel, "         0          0 4294967295\n");
	snprintf(rel, sizeof(rel), "%s/%d/gid_map", at, (int)tid);
	put(rel, "         0          0 4294967295\n");
	snprintf(rel, sizeof(rel), "%s/%d", at, (int)tid);
	own(rel, uid);
}

/* A process with its threads, each in proc/PID and proc/PID/task/TID. */
static void process(pid_t tgid, const unsigned *uids, int nthreads, uint64_t cap_eff)
{
	char at[64];

	task_files("proc", tgid, tgid, uids[0], uids[0], cap_eff);
	snprintf(at, sizeof(at), "proc/%d/task", (int)tgid);
	dir(at);
	for (int i = 0; i < nthreads; i++) {
		task_files(at, tgid + i, tgid, uids[i], uids[i], cap_eff);
		if (i)
			task_files("proc", tgid + i, tgid, uids[i], uids[i], cap_eff);
	}
}

static void cgroup(const char *name, bool weight, uid_t uid)
{
	char rel[PATH_MAX];

	snprintf(rel, sizeof(rel), "cg/%s", name);
	dir(rel);
	snprintf(rel, sizeof(rel), "cg/%s/cgroup.procs", name);
	put(rel, "");
	if (!weight)
		return;
	snprintf(rel, sizeof(rel), "cg/%s/cpu.weight", name);
	put(rel, "100\n");
	own(rel, uid);
	snprintf(rel, sizeof(rel), "cg/%s/cpu.idle", name);
	put(rel, "0\n");
}

/* The weights a reset gives back are written there: each input starts from the same. */
static void cgroups(void)
{
	cgroup("sys", true, 0);
	cgroup("user", true, 1000);
	cgroup("nocpu", false, 0);
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void cleanup(void)
{
	if (tmp[0])
		nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void fake_system(void)
{
	static const unsigned a[] = { 1000, 1000 }, c[] = { 1000, 0 }, b[] = { 0 }, d[] = { 1001 };
	char text[PATH_MAX * 2];

	snprintf(tmp, sizeof(tmp), "%s/rqb-fuzz-ctl.XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	FUZZ_CHECK(mkdtemp(tmp));
	atexit(cleanup);
	snprintf(proc_root, sizeof(proc_root), "%s/proc", tmp);
	snprintf(cg_mount, sizeof(cg_mount), "%s/cg", tmp);
	snprintf(conf_path, sizeof(conf_path), "%s/rqbalance.conf", tmp);
	dir("proc");
	dir("proc/self");
	put("proc/self/uid_map", "         0          0 4294967295\n");
	put("proc/self/gid_map", "         0          0 4294967295\n");
	process(PROC_A, a, 2, 0);
	process(PROC_C, c, 2, 0);
	process(PROC_B, b, 1, 0);
	process(PROC_D, d, 1, 0);
	dir("cg");
	cgroups();
	dir("rules.d");
	snprintf(text, sizeof(text),
		 "[daemon]\nctl_group = root\ndry_run = yes\nlog_level = err\nrules_dir = %s/rules.d\n",
		 tmp);
	put("rqbalance.conf", text);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct topo_opts to = { .synthetic = "package:1 l3cache:2 core:1 pu:1" };

	(void)argc;
	(void)argv;
	fuzz_quiet();
	verbose = getenv("RQB_FUZZ_LOG") && strcmp(getenv("RQB_FUZZ_LOG"), "1") == 0;
	/* No service manager is told anything (sd_notify on reload). */
	unsetenv("NOTIFY_SOCKET");
	fake_system();
	FUZZ_CHECK(topo_load(&to, &topo) == 0);
	snap = snap_new(topo);
	FUZZ_CHECK(snap);
	FUZZ_CHECK(sd_event_new(&loop) >= 0);
	return 0;
}

/* ---- the daemon, in memory ---- */

static int no_open(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret)
{
	(void)tid;
	(void)tgid;
	(void)start_time;
	(void)ret;
	return -ESRCH;
}

static int no_task(const struct act_task *t)
{
	(void)t;
	return -ESRCH;
}

static int no_get(const struct act_task *t, cpu_set_t *ret)
{
	(void)t;
	(void)ret;
	return -ESRCH;
}

/* A write that reached the actuator is a finding: the tasks here are not real. */
static int never_set(const struct act_task *t, const cpu_set_t *mask)
{
	(void)t;
	(void)mask;
	FUZZ_CHECK(!"an affinity write reached the actuator");
	return -EPERM;
}

static void no_close(struct act_task *t)
{
	(void)t;
}

static int no_offspring(pid_t tgid, uint64_t since,
			void (*fn)(void *ctx, pid_t tid, pid_t tgid, uint64_t start), void *ctx)
{
	(void)tgid;
	(void)since;
	(void)fn;
	(void)ctx;
	return 0;
}

static const struct act_ops fuzz_ops = {
	.name = "fuzz", .open = no_open, .alive = no_task, .get_affinity = no_get,
	.set_affinity = never_set, .close = no_close, .offspring = no_offspring,
};

static const struct sampler_ops fuzz_sampler_ops = { .name = "fuzz" };
static struct sampler fuzz_sampler = { .ops = &fuzz_sampler_ops };

static void task_entry(struct latact *la, pid_t tid, pid_t tgid, int v, const char *cg)
{
	struct lat_entry *e = &la->e[la->n++];

	memset(e, 0, sizeof(*e));
	e->task = (struct act_task){ .tid = tid, .start_time = START_TIME, .pidfd = -1 };
	e->tgid = tgid;
	e->value = v;
	snprintf(e->source, sizeof(e->source), "ctl uid 1000");
	e->prev.umin = e->prev.umax = e->set.umin = e->set.umax = -1;
	e->set.nice = v;
	snprintf(e->set.cgroup, sizeof(e->set.cgroup), "%s", cg);
	e->cg = cg[0] ? LAT_CG_OURS : LAT_CG_MOVED;
	snprintf(e->cg_left, sizeof(e->cg_left), "/elsewhere\t\x1b[2J");
}

static void cg_entry(struct latact *la, const char *path, int v)
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

static void proc_entry(struct latmgr *m, pid_t tgid, int v)
{
	struct latmgr_proc *p = &m->p[m->np++];

	memset(p, 0, sizeof(*p));
	p->tgid = tgid;
	p->start_time = START_TIME;
	p->value = v;
	snprintf(p->source, sizeof(p->source), "ctl uid 1000");
}

/* What the scenario's byte 2 says is already managed: sorted by tid and tgid. */
static void managed(struct daemon *d, uint8_t what)
{
	struct latact *la = &d->lat;

	la->e = calloc(8, sizeof(*la->e));
	la->cg = calloc(4, sizeof(*la->cg));
	d->lm.p = calloc(4, sizeof(*d->lm.p));
	FUZZ_CHECK(la->e && la->cg && d->lm.p);
	la->cap = 8;
	la->capcg = 4;
	d->lm.capp = 4;
	if (what & 1) {
		task_entry(la, PROC_A, PROC_A, 5, "/user");
		task_entry(la, PROC_A + 1, PROC_A, 5, "");
		task_entry(la, PROC_C + 1, PROC_C, -3, "");
		task_entry(la, GHOST, GHOST, 19, "");
	}
	if (what & 2) {
		proc_entry(&d->lm, PROC_A, 5);
		proc_entry(&d->lm, PROC_B, -10);
		proc_entry(&d->lm, PROC_D, 0);
	}
	if (what & 4) {
		cg_entry(la, "/gone", 1);
		cg_entry(la, "/sys", -2);
		cg_entry(la, "/user", 3);
	}
}

static struct daemon *daemon_new(const uint8_t *sc)
{
	struct daemon *d = calloc(1, sizeof(*d));

	FUZZ_CHECK(d);
	conf_defaults(&d->conf);
	d->conf.dry_run = true;
	snprintf(d->conf.ctl_group, sizeof(d->conf.ctl_group), "%s", sc[0] & 0x10 ? "root" : "");
	/* As the config loader leaves it: the group resolved once, to its gid. */
	d->conf.ctl_gid_set = d->conf.ctl_group[0] != '\0';
	d->conf.ctl_gid = 0;
	d->opts.config_path = conf_path;
	d->opts.config_explicit = true;
	d->opts.dry_run = true;
	d->opts.log_level = -1;
	d->topo = topo;
	d->snap = snap;
	d->sampler = &fuzz_sampler;
	d->event = loop;
	d->ticks = sc[2] >> 5;
	for (int c = 0; c < topo->nr_cpu_ids; c++)
		snap->cpus[c].nr_running = (sc[3] >> (c % 8)) & 3;

	d->lat.ops = &fuzz_ops;
	d->lat.lops = &latact_dryrun_ops;
	d->lat.o.dry_run = true;
	d->lat.o.proc_root = proc_root;
	snprintf(d->lat.proc_root, sizeof(d->lat.proc_root), "%s", proc_root);
	d->lat.cls.v2 = true;
	d->lat.cls.on = sc[2] & 8;
	snprintf(d->lat.cls.mount, sizeof(d->lat.cls.mount), "%s", cg_mount);
	d->lat.lc.batch_from = 20;

	d->lm.la = &d->lat;
	d->lm.conf = &d->conf;
	d->lm.self = getpid();
	snprintf(d->lm.proc_root, sizeof(d->lm.proc_root), "%s", proc_root);
	snprintf(d->lm.pc_state, sizeof(d->lm.pc_state), "none (fuzz)");
	managed(d, sc[2]);

	d->ctl.fd = -1;
	d->ctl.d = d;
	d->ctl.ops = &daemon_ctl_ops;
	/* daemon_reload re-arms it: a timer that never fires. */
	FUZZ_CHECK(sd_event_add_time(loop, &d->metrics_timer, CLOCK_MONOTONIC, UINT64_MAX, 0,
				     NULL, NULL) >= 0);
	sd_event_source_set_enabled(d->metrics_timer, SD_EVENT_OFF);
	return d;
}

static void daemon_free(struct daemon *d)
{
	ctl_fini(&d->ctl);
	sd_event_source_disable_unref(d->metrics_timer);
	free(d->lat.e);
	free(d->lat.cg);
	free(d->lm.p);
	free(d->lm.u);
	free(d);
}

/* ---- the caller ---- */

struct caller {
	struct ucred cred;
	gid_t groups[2];
	int ngroups;
	bool admin;   /* root or ctl_group: anything goes */
	bool nice;    /* CAP_SYS_NICE counted: any task, any value */
};

/* The peer's /proc files: its credentials as the scenario's byte 0 gives them. */
static void peer_files(const struct caller *w, bool cap)
{
	task_files("proc", PEER, PEER, w->cred.uid, w->cred.gid, cap ? NICE_CAP : 0);
}

static void caller_of(const uint8_t *sc, const struct rqb_conf *conf, struct caller *ret)
{
	struct stat st;
	char path[PATH_MAX];
	uid_t uid = caller_uids[sc[0] & 3];
	bool cap = sc[0] & 8;

	memset(ret, 0, sizeof(*ret));
	ret->cred = (struct ucred){ .pid = PEER, .uid = uid, .gid = sc[0] & 0x40 ? 0 : uid };
	ret->groups[ret->ngroups++] = uid;
	if (sc[0] & 4)
		ret->groups[ret->ngroups++] = 0;
	ret->admin = uid == 0 ||
		     (conf->ctl_group[0] && (ret->cred.gid == 0 || (sc[0] & 4)));
	peer_files(ret, cap);
	/* The daemon counts the capability only while /proc/PID is the caller's. */
	snprintf(path, sizeof(path), "%s/%d", proc_root, PEER);
	ret->nice = cap && stat(path, &st) == 0 && st.st_uid == uid;
}

/* ---- the oracle ---- */

struct sent {
	struct ctl_hdr hdr;
	const char *payload;
	bool late;    /* served after the peer's credentials changed */
};

/* Whose every thread is uid's, as the fake system has them. */
static bool task_is(pid_t tid, bool process, uid_t uid)
{
	switch (tid) {
	case PEER:
		return true;
	case PROC_A:
	case PROC_A + 1:
		return uid == 1000;
	case PROC_C:
		return process ? false : uid == 1000;
	case PROC_C + 1:
		return uid == 0;
	case PROC_B:
		return uid == 0;
	case PROC_D:
		return uid == 1001;
	}
	return false;
}

/* The value the target has now, as managed() set it: 0 when it has none. */
static int value_now(const struct daemon *d, const struct sent *s)
{
	char v[LAT_PATH_MAX];
	pid_t pid;

	if (ctl_kv(s->payload, s->hdr.len, "cgroup", v, sizeof(v)) == 0) {
		const struct lat_cg_entry *g = latact_find_cgroup(&d->lat, v);

		return g ? g->value : 0;
	}
	if (ctl_kv(s->payload, s->hdr.len, "self", v, sizeof(v)) == 0)
		return 0;
	if (ctl_kv(s->payload, s->hdr.len, "pid", v, sizeof(v)) < 0 &&
	    ctl_kv(s->payload, s->hdr.len, "tid", v, sizeof(v)) < 0)
		return 0;
	pid = atoi(v);
	return latmgr_value_of(&d->lm, pid, pid) == LAT_NONE ? 0 : latmgr_value_of(&d->lm, pid, pid);
}

/*
 * A set or reset answered ok for an unprivileged caller: the target was its own, and
 * a value went down only as far as RLIMIT_NICE allows (0 for the fake tasks: not at
 * all). A cgroup is its own when the weight file is (only cg/user, uid 1000's).
 */
static void check_granted(const struct caller *w, const struct sent *s, int before)
{
	char v[LAT_PATH_MAX], path[PATH_MAX * 2], real[PATH_MAX], user[PATH_MAX];
	int want = 0;
	bool mine;

	if (w->admin || w->nice)
		return;
	if (ctl_kv(s->payload, s->hdr.len, "cgroup", v, sizeof(v)) == 0) {
		snprintf(path, sizeof(path), "%s%s", cg_mount, v);
		snprintf(user, sizeof(user), "%s/user", cg_mount);
		mine = realpath(path, real) && strcmp(real, user) == 0 && w->cred.uid == 1000;
	} else if (ctl_kv(s->payload, s->hdr.len, "self", v, sizeof(v)) == 0) {
		mine = true;
	} else if (ctl_kv(s->payload, s->hdr.len, "pid", v, sizeof(v)) == 0) {
		mine = task_is(atoi(v), true, w->cred.uid);
	} else {
		FUZZ_CHECK(ctl_kv(s->payload, s->hdr.len, "tid", v, sizeof(v)) == 0);
		mine = task_is(atoi(v), false, w->cred.uid);
	}
	FUZZ_CHECK(mine);
	if (s->hdr.type == CTL_SET) {
		FUZZ_CHECK(ctl_kv(s->payload, s->hdr.len, "value", v, sizeof(v)) == 0);
		want = atoi(v);
	}
	FUZZ_CHECK(want >= before);
}

/* The requests in the stream, as the server cuts it; at most CTL_MAX_MSGS are served. */
static size_t requests(const uint8_t *data, size_t size, size_t split, struct sent *ret)
{
	size_t n = 0, off = 0;

	while (off < size && n < CTL_MAX_MSGS) {
		struct ctl_msg m;
		ssize_t k = ctl_decode(data + off, size - off, &m);

		if (k <= 0 || !ctl_is_request(m.hdr.type) || m.hdr.len > CTL_MAX_REQUEST)
			break;
		ret[n].hdr = m.hdr;
		ret[n].payload = m.payload;
		ret[n].late = off + (size_t)k > split;
		n++;
		off += (size_t)k;
	}
	return n;
}

/* Every reply decodes, answers the next request in order, and grants nothing wrong. */
static void check_replies(const struct daemon *d, const struct caller *w, const uint8_t *buf,
			  size_t len, const struct sent *req, size_t nreq, const int *before,
			  bool changed)
{
	size_t off = 0, i = 0;

	while (off < len) {
		struct ctl_msg m;
		ssize_t k = ctl_decode(buf + off, len - off, &m);

		FUZZ_CHECK(k > 0);
		FUZZ_CHECK(m.hdr.type == CTL_OK || m.hdr.type == CTL_ERR);
		off += (size_t)k;
		if (verbose)
			fprintf(stderr, "reply %s seq %u:\n%.*s\n", ctl_type_name(m.hdr.type),
				m.hdr.seq, (int)m.hdr.len, m.payload);
		if (m.hdr.type == CTL_ERR) {
			char v[32];

			FUZZ_CHECK(ctl_kv(m.payload, m.hdr.len, "errno", v, sizeof(v)) == 0);
			FUZZ_CHECK(atoi(v) > 0);
			i++;
			continue;
		}
		/* An ok is a request's answer, in the order they came. */
		FUZZ_CHECK(i < nreq && m.hdr.seq == req[i].hdr.seq);
		if (req[i].hdr.type == CTL_RELOAD)
			FUZZ_CHECK(w->admin);
		if (req[i].hdr.type == CTL_SET || req[i].hdr.type == CTL_RESET)
			check_granted(w, &req[i], before[i]);
		/* A peer that changed its credentials is served nothing more. */
		if (changed && req[i].late && req[i].hdr.type != CTL_SYNC)
			FUZZ_CHECK(!"a request served after the peer changed its credentials");
		i++;
	}
	(void)d;
}

/* ---- the connection ---- */

static void drain(int fd, uint8_t **buf, size_t *len, size_t *cap)
{
	for (;;) {
		ssize_t r;

		if (*cap - *len < 65536) {
			*cap = *cap * 2 + 65536;
			*buf = realloc(*buf, *cap);
			FUZZ_CHECK(*buf);
		}
		r = recv(fd, *buf + *len, *cap - *len, MSG_DONTWAIT);
		if (r <= 0)
			return;
		*len += (size_t)r;
	}
}

/* Runs the loop until it is idle, reading what the server writes; then a few ticks. */
static void settle(struct daemon *d, int fd, uint8_t **buf, size_t *len, size_t *cap)
{
	for (int round = 0; round < 4; round++) {
		for (int i = 0; i < 256 && sd_event_run(loop, 0) > 0; i++)
			drain(fd, buf, len, cap);
		drain(fd, buf, len, cap);
		d->ticks++;
		ctl_after_tick(&d->ctl);
		drain(fd, buf, len, cap);
	}
}

static void send_all(struct daemon *d, int fd, const uint8_t *data, size_t size, uint8_t **buf,
		     size_t *len, size_t *cap)
{
	size_t off = 0;

	while (off < size) {
		ssize_t w = send(fd, data + off, size - off, MSG_DONTWAIT | MSG_NOSIGNAL);

		if (w < 0 && errno != EAGAIN)
			return; /* the server closed it */
		if (w > 0)
			off += (size_t)w;
		settle(d, fd, buf, len, cap);
		if (w <= 0 && d->ctl.nconns == 0)
			return;
	}
}

/* Fills the caller's share of the connections first: its own is then refused. */
static void crowd(struct daemon *d, const struct caller *w, int *fds, int *n)
{
	for (*n = 0; *n < CTL_MAX_PER_UID;) {
		int sv[2];

		FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
		if (ctl_serve_fd(&d->ctl, loop, sv[0], &w->cred, w->groups, w->ngroups) < 0) {
			close(sv[1]);
			return;
		}
		fds[(*n)++] = sv[1];
	}
}

static void dispatch(const uint8_t *sc, const uint8_t *data, size_t size)
{
	struct daemon *d = daemon_new(sc);
	struct sent req[CTL_MAX_MSGS];
	int before[CTL_MAX_MSGS], crowd_fds[CTL_MAX_PER_UID], ncrowd = 0, sv[2], r;
	size_t split = size * sc[1] / 256, nreq, len = 0, cap = 0;
	bool change = sc[0] & 0x20;
	uint8_t *buf = NULL;
	struct caller w;

	caller_of(sc, &d->conf, &w);
	nreq = requests(data, size, change ? split : size, req);
	for (size_t i = 0; i < nreq; i++)
		before[i] = value_now(d, &req[i]);
	if (sc[2] & 0x10)
		crowd(d, &w, crowd_fds, &ncrowd);
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
	r = ctl_serve_fd(&d->ctl, loop, sv[0], &w.cred, w.groups, w.ngroups);
	/* A user's share is CTL_MAX_PER_UID connections; root and ctl_group have no share. */
	FUZZ_CHECK(r == 0 || (r == -EUSERS && !w.admin && ncrowd == CTL_MAX_PER_UID));
	if (r == 0) {
		send_all(d, sv[1], data, change ? split : size, &buf, &len, &cap);
		if (change) {
			/* The peer execs a set-user-ID program: its saved uid changes. */
			char rel[64];

			snprintf(rel, sizeof(rel), "proc/%d/status", PEER);
			status_file(rel, PEER, PEER, 1, 1, 0);
			send_all(d, sv[1], data + split, size - split, &buf, &len, &cap);
		}
		settle(d, sv[1], &buf, &len, &cap);
		check_replies(d, &w, buf, len, req, nreq, before, change);
	}
	close(sv[1]);
	for (int i = 0; i < ncrowd; i++)
		close(crowd_fds[i]);
	daemon_free(d);
	free(buf);
	cgroups();
	fuzz_quiet(); /* a reload sets the config's log level */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decoder(data, size);
	if (size >= 4)
		dispatch(data, data + 4, size - 4);
	return 0;
}
