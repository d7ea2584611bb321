/*
 * Unit tests for the latency actuator on a fake cgroupfs tree in a fresh directory
 * under /tmp (its mounts file names it as the cgroup2 mount): the Linux driver writes
 * only files in that tree, the dry-run driver nothing. Task writes (sched_setattr)
 * go to a driver that records them; the task is this test's own thread.
 */
#include <errno.h>
#include <ftw.h>
#include <sched.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include "kit.h"

#include "actuate/act.h"
#include "actuate/journal.h"
#include "actuate/latact.h"
#include "actuate/latact_int.h"
#include "policy/latency.h"
#include "util/schedattr.h"

struct fix {
	char dir[64];          /* the tree: mounts, cg/ (the mount), proc/, journal/ */
	char cg[128], proc[128], mounts[128], journal[128];
	struct latact la;
	struct lat_conf lc;
	struct latact_opts o;
	struct act_ops ops;    /* fake_ops, or the dry-run driver's writes on fake tasks */
};

/* ---- the fake kernel: files a cgroupfs has, written as it replaces them ---- */

static void cg_files(const char *dir)
{
	static const char *const files[][2] = {
		{ "cpu.weight", "100\n" }, { "cpu.idle", "0\n" }, { "cpu.max", "max 100000\n" },
		{ "cgroup.procs", "" }, { "cgroup.subtree_control", "" },
		{ "cpu.uclamp.min", "0.00\n" }, { "cpu.uclamp.max", "max\n" },
	};
	char path[PATH_MAX];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, files[i][0]);
		kit_put(NULL, path, files[i][1]);
	}
}

/* The Linux driver's writes, on files the fake kernel made and empties first. */
static int tree_write(const char *path, const char *text)
{
	if (truncate(path, 0) < 0)
		return -errno;
	return act_linux_ops.write(path, text);
}

/* The fake kernel's cgroup tree and /proc, for its moves. */
static char tree_cg[PATH_MAX], tree_proc[PATH_MAX];

/*
 * A move: the task's number written into the group's file, as cgroupfs takes it, and
 * /proc/TID/cgroup saying where the task is now, as a kernel's would.
 */
static int tree_attach(const char *procs_file, const struct act_task *t)
{
	const char *rel = procs_file + strlen(tree_cg);
	char text[PATH_MAX], proc[PATH_MAX];
	int r;

	if (truncate(procs_file, 0) < 0)
		return -errno;
	snprintf(text, sizeof(text), "%d", (int)t->tid);
	r = act_linux_ops.write(procs_file, text);
	snprintf(text, sizeof(text), "0::%.*s\n", (int)(strlen(rel) - strlen("/cgroup.procs")),
		 rel);
	snprintf(proc, sizeof(proc), "%s/%d/cgroup", tree_proc, (int)t->tid);
	if (r == 0)
		kit_put(NULL, proc, text[3] == '\n' ? "0::/\n" : text);
	return r;
}

/* mkdir on cgroupfs makes a group's files; rmdir takes them with it. */
static int tree_mkdir(const char *dir)
{
	struct stat st;
	bool fresh = stat(dir, &st) < 0;
	int r = act_linux_ops.mkdir(dir);

	if (r == 0 && fresh)
		cg_files(dir);
	return r;
}

static int unlink_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? 0 : unlink(path);
}

static int tree_rmdir(const char *dir)
{
	nftw(dir, unlink_one, 8, FTW_DEPTH | FTW_PHYS);
	return act_linux_ops.rmdir(dir);
}

/* What the test's thread has, read as the Linux driver reads it. */
static int own_get_attr(pid_t tid, struct rqb_sched_attr *ret)
{
	return rqb_sched_getattr(tid, ret);
}

/* sched_setattr, recorded and not made. */
static unsigned attr_calls;
static pid_t attr_tid;
static struct rqb_sched_attr attr_last;

static int rec_set_attr(const struct act_task *t, const struct rqb_sched_attr *a)
{
	attr_calls++;
	attr_tid = t->tid;
	attr_last = *a;
	return 0;
}

static int rec_unit_weight(void *bus, const char *unit, uint64_t w, bool idle, char *err,
			   size_t errlen)
{
	(void)bus, (void)unit, (void)w, (void)idle, (void)err, (void)errlen;
	fail_msg("no unit on a host without systemd");
	return -ENOSYS;
}

/* The journal as the Linux driver opens it, in the test's directory. */
static int fake_journal(const char *dir, const char *name, struct journal **ret)
{
	return journal_open_named(dir, name, ret);
}

/* The task's identity is the test's own: no pidfd, always alive. */
static int fake_open(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret)
{
	(void)tgid;
	ret->tid = tid;
	ret->start_time = start_time;
	ret->pidfd = -1;
	return 0;
}

static int fake_alive(const struct act_task *t)
{
	(void)t;
	return 0;
}

/*
 * Every number is held by a task of this process's, started at 1, as fake_open has it;
 * with reuse_creator set, the test's thread number is held by another task (started at
 * 2) made by process reuse_creator (started at 3).
 */
static pid_t reuse_creator;

static int fake_who(pid_t tid, struct act_who *ret)
{
	*ret = (struct act_who){ .start_time = 1, .tgid = getpid(), .ppid = getppid() };
	if (reuse_creator && tid == gettid())
		*ret = (struct act_who){ .start_time = 2, .tgid = tid, .ppid = reuse_creator };
	else if (reuse_creator && tid == reuse_creator)
		*ret = (struct act_who){ .start_time = 3, .tgid = tid, .ppid = 1 };
	return 0;
}

static void fake_close(struct act_task *t)
{
	(void)t;
}

/* This process's task tid (start time 1 to the fake driver) gets v, as "test" asks. */
static int set_task(struct latact *la, pid_t tid, int v, const char **ret_why)
{
	struct lat_req rq = { .tid = tid, .tgid = getpid(), .start_time = 1, .value = v,
			      .source = "test" };

	return latact_task(la, &rq, NULL, ret_why);
}

/* The one table: the test's tasks, and the fake kernel's tree for every write. */
static const struct act_ops fake_ops = {
	.name = "fake",
	.journal = fake_journal,
	.open = fake_open,
	.alive = fake_alive,
	.who = fake_who,
	.close = fake_close,
	.get_attr = own_get_attr,
	.set_attr = rec_set_attr,
	.attach = tree_attach,
	.write = tree_write,
	.mkdir = tree_mkdir,
	.rmdir = tree_rmdir,
	.unit_weight = rec_unit_weight,
};

/* The dry-run driver's writes, on the test's tasks. */
static struct act_ops dryrun_on_fake(void)
{
	struct act_ops o = act_dryrun_ops;

	o.name = "dry-run on fake";
	o.open = fake_open;
	o.alive = fake_alive;
	o.who = fake_who;
	o.close = fake_close;
	return o;
}

/* ---- the tree ---- */

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	char path[PATH_MAX];

	assert_non_null(f);
	kit_tmp(f->dir, sizeof(f->dir), "latact");
	snprintf(f->cg, sizeof(f->cg), "%s/cg", f->dir);
	snprintf(f->proc, sizeof(f->proc), "%s/proc", f->dir);
	snprintf(f->mounts, sizeof(f->mounts), "%s/mounts", f->dir);
	snprintf(f->journal, sizeof(f->journal), "%s/journal", f->dir);
	assert_int_equal(mkdir(f->cg, 0755), 0);
	assert_int_equal(mkdir(f->proc, 0755), 0);
	assert_int_equal(mkdir(f->journal, 0755), 0);
	snprintf(path, sizeof(path), "proc %s/proc proc rw 0 0\ncgroup2 %s cgroup2 rw,nosuid 0 0\n",
		 f->dir, f->cg);
	kit_put(NULL, f->mounts, path);
	cg_files(f->cg);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", f->cg);
	kit_put(NULL, path, "cpuset cpu io memory pids\n");
	/* A cgroup target, and this thread's cgroup as /proc says it. */
	snprintf(path, sizeof(path), "%s/app", f->cg);
	assert_int_equal(mkdir(path, 0755), 0);
	cg_files(path);
	snprintf(path, sizeof(path), "%s/%d", f->proc, (int)gettid());
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%d/cgroup", f->proc, (int)gettid());
	kit_put(NULL, path, "0::/\n");
	snprintf(tree_cg, sizeof(tree_cg), "%s", f->cg);
	snprintf(tree_proc, sizeof(tree_proc), "%s", f->proc);
	f->ops = fake_ops;
	f->lc = (struct lat_conf){ .batch_from = 20, .class_cgroups = true };
	f->o = (struct latact_opts){
		.journal_dir = f->journal,
		.cgroup_root = "",
		.class_cgroups = true,
		.proc_root = f->proc,
		.mounts_file = f->mounts,
	};
	attr_calls = 0;
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	kit_rm(f->dir);
	free(f);
	return 0;
}

static uint64_t weight_of(const struct lat_conf *lc, int v)
{
	struct lat_knobs k;

	latency_map(lc, v, &k);
	return latency_shares_to_weight(k.shares);
}

static uint64_t file_u64(const char *dir, const char *name)
{
	char path[PATH_MAX];
	const char *text;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	text = kit_slurp(NULL, path);
	assert_non_null(text);
	return strtoull(text, NULL, 10);
}

/* ---- tests ---- */

/* A negative value moves the task into a class made with the mapping's weight. */
KIT_TEST_FX(test_class_made_with_mapped_weight, setup, teardown)
{
	struct fix *f = *state;
	const char *why = NULL;
	char cls[PATH_MAX];
	struct lat_knobs k;
	pid_t tid = gettid();

	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_true(f->la.cls.on);
	assert_int_equal(set_task(&f->la, tid, -5, &why), 0);
	snprintf(cls, sizeof(cls), "%s/rqbalance-lat-5", f->cg);
	assert_int_equal(file_u64(cls, "cpu.weight"), weight_of(&f->lc, -5));
	assert_true(weight_of(&f->lc, -5) > 100);
	/* The class has no CFS quota, and the task was written into it. */
	snprintf(cls, sizeof(cls), "%s/rqbalance-lat-5/cpu.max", f->cg);
	assert_string_equal(kit_slurp(NULL, cls), "max");
	snprintf(cls, sizeof(cls), "%s/rqbalance-lat-5/cgroup.procs", f->cg);
	assert_int_equal(atoi(kit_slurp(NULL, cls)), (int)tid);
	/* Its sched knobs went to the driver in one call: the value's nice. */
	latency_map(&f->lc, -5, &k);
	assert_int_equal(attr_calls, 1);
	assert_int_equal(attr_tid, tid);
	assert_int_equal(attr_last.sched_nice, k.nice);
	latact_fini(&f->la);
	/* At fini the class is emptied to the top and removed. */
	snprintf(cls, sizeof(cls), "%s/rqbalance-lat-5", f->cg);
	assert_int_equal(access(cls, F_OK), -1);
	snprintf(cls, sizeof(cls), "%s/cgroup.procs", f->cg);
	assert_int_equal(atoi(kit_slurp(NULL, cls)), (int)tid);
}

/* A reload gives the classes the new mapping's weights. */
KIT_TEST_FX(test_class_reweighed_on_reload, setup, teardown)
{
	struct fix *f = *state;
	const char *why = NULL;
	char cls[PATH_MAX];
	struct lat_conf lc2;

	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(set_task(&f->la, gettid(), -10, &why), 0);
	lc2 = f->lc;
	lc2.boost_cpu_pct = 10;
	latact_set_conf(&f->la, &lc2);
	snprintf(cls, sizeof(cls), "%s/rqbalance-lat-10", f->cg);
	assert_int_equal(file_u64(cls, "cpu.weight"), weight_of(&lc2, -10));
	latact_fini(&f->la);
}

/*
 * The kernel's default slice changed (a CPU went offline): a task without a slice of
 * its own that still shows the old default reads as "the default", not as a slice
 * someone set, and a value's slice is the new default's ratio.
 */
KIT_TEST_FX(test_slice_follows_default, setup, teardown)
{
	struct fix *f = *state;
	struct rqb_sched_attr a;
	struct lat_state st;
	struct lat_conf lc2;
	const char *why = NULL;
	pid_t tid = gettid();

	assert_int_equal(rqb_sched_getattr(tid, &a), 0);
	if (!a.sched_runtime || a.sched_policy != SCHED_OTHER) {
		skip(); /* before 6.12 sched_getattr shows no slice */
		return;
	}
	f->o.slices = true;
	f->lc.default_slice_ns = a.sched_runtime;
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(latact_read(&f->la, tid, &st), 0);
	assert_int_equal(st.slice_ns, 0);
	lc2 = f->lc;
	lc2.default_slice_ns = a.sched_runtime * 3 / 2;
	latact_set_conf(&f->la, &lc2);
	assert_int_equal(latact_read(&f->la, tid, &st), 0);
	assert_int_equal(st.slice_ns, 0);
	assert_int_equal(set_task(&f->la, tid, -5, &why), 0);
	assert_int_equal(attr_last.sched_runtime, latency_slice_ns(lc2.default_slice_ns, -5));
	assert_true(attr_last.sched_runtime < lc2.default_slice_ns);
	latact_fini(&f->la);
}

/* A cgroup target's weight and idle, given back at reset. */
KIT_TEST_FX(test_cgroup_target_restored, setup, teardown)
{
	struct fix *f = *state;
	const char *why = NULL;
	char app[PATH_MAX];
	struct lat_knobs k;

	f->o.class_cgroups = false;
	snprintf(app, sizeof(app), "%s/app", f->cg);
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(latact_cgroup(&f->la, "/app", 5, "test", &why), 0);
	latency_map(&f->lc, 5, &k);
	assert_false(k.cg_idle);
	assert_int_equal(file_u64(app, "cpu.weight"), weight_of(&f->lc, 5));
	assert_int_equal(file_u64(app, "cpu.idle"), 0);
	assert_non_null(latact_find_cgroup(&f->la, "/app"));
	assert_int_equal(latact_cgroup_reset(&f->la, "/app"), 0);
	assert_int_equal(file_u64(app, "cpu.weight"), 100);
	assert_int_equal(f->la.cnt.restored, 1);
	assert_null(latact_find_cgroup(&f->la, "/app"));
	latact_fini(&f->la);
}

/* At 19 (idle_at_19) a cgroup target is made idle, and given back its idle 0. */
KIT_TEST_FX(test_cgroup_target_idle, setup, teardown)
{
	struct fix *f = *state;
	const char *why = NULL;
	char app[PATH_MAX];

	f->o.class_cgroups = false;
	f->lc.idle_at_19 = true;
	snprintf(app, sizeof(app), "%s/app", f->cg);
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(latact_cgroup(&f->la, "/app", 19, "test", &why), 0);
	assert_int_equal(file_u64(app, "cpu.idle"), 1);
	assert_int_equal(file_u64(app, "cpu.weight"), 100); /* not writable while idle */
	latact_fini(&f->la);
	assert_int_equal(file_u64(app, "cpu.idle"), 0);
	assert_int_equal(file_u64(app, "cpu.weight"), 100);
}

/* A weight someone else changed since is theirs: left as it is, at reset and at fini. */
KIT_TEST_FX(test_cgroup_target_changed_left_alone, setup, teardown)
{
	struct fix *f = *state;
	const char *why = NULL;
	char app[PATH_MAX], path[PATH_MAX];

	f->o.class_cgroups = false;
	snprintf(app, sizeof(app), "%s/app", f->cg);
	snprintf(path, sizeof(path), "%s/cpu.weight", app);
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(latact_cgroup(&f->la, "/app", -8, "test", &why), 0);
	assert_int_equal(file_u64(app, "cpu.weight"), weight_of(&f->lc, -8));
	kit_put(NULL, path, "42\n");
	latact_fini(&f->la);
	assert_int_equal(file_u64(app, "cpu.weight"), 42);
}

/*
 * A weight someone else changed is theirs: another value does not write it again,
 * the entry says it was left, and the stop leaves it.
 */
KIT_TEST_FX(test_cgroup_target_changed_not_rewritten, setup, teardown)
{
	struct fix *f = *state;
	const char *why = NULL;
	const struct lat_cg_entry *g;
	char app[PATH_MAX], path[PATH_MAX];

	f->o.class_cgroups = false;
	snprintf(app, sizeof(app), "%s/app", f->cg);
	snprintf(path, sizeof(path), "%s/cpu.weight", app);
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(latact_cgroup(&f->la, "/app", -8, "test", &why), 0);
	g = latact_find_cgroup(&f->la, "/app");
	assert_non_null(g);
	assert_false(g->left);
	latact_check_cg(&f->la, "/app");
	assert_false(g->left);
	kit_put(NULL, path, "42\n");
	assert_int_equal(latact_cgroup(&f->la, "/app", 5, "test", &why), 0);
	assert_int_equal(file_u64(app, "cpu.weight"), 42);
	g = latact_find_cgroup(&f->la, "/app");
	assert_true(g->left);
	assert_int_equal(g->value, 5);
	latact_fini(&f->la);
	assert_int_equal(file_u64(app, "cpu.weight"), 42);
}

/* What a crashed run left in the journal is given back at the next start. */
KIT_TEST_FX(test_cgroup_target_restored_after_crash, setup, teardown)
{
	struct fix *f = *state;
	const char *why = NULL;
	char app[PATH_MAX];

	f->o.class_cgroups = false;
	snprintf(app, sizeof(app), "%s/app", f->cg);
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(latact_cgroup(&f->la, "/app", -8, "test", &why), 0);
	/* A crash: the journal stays, nothing is given back. */
	free(f->la.e);
	free(f->la.cg);
	journal_close(f->la.journal);
	assert_int_equal(file_u64(app, "cpu.weight"), weight_of(&f->lc, -8));
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(file_u64(app, "cpu.weight"), 100);
	latact_fini(&f->la);
}

/*
 * A crash between journalling a change and writing it: the task still has what the
 * value before gave it (value -5's class), which the journal's last record does not
 * name. That is rqbalance's too, and is given back at the next start.
 */
KIT_TEST_FX(test_class_restored_after_crash_mid_change, setup, teardown)
{
	struct fix *f = *state;
	const char *why = NULL;
	struct lat_entry next;
	char path[PATH_MAX];
	pid_t tid = gettid();

	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(set_task(&f->la, tid, -5, &why), 0);
	next = *latact_find(&f->la, tid);
	assert_string_equal(next.set.cgroup, "/rqbalance-lat-5");
	/*
	 * The fake driver writes no sched knob, so what it reads back is not what the
	 * record journalled before the write said; a record of the read-back (as a
	 * compaction writes) makes the journal say what the task has, as on a kernel.
	 */
	assert_int_equal(latact_journal_task(&f->la, &next), 0);
	next.value = 12;
	snprintf(next.set.cgroup, sizeof(next.set.cgroup), "/rqbalance-lat12");
	next.set.nice = 12;
	next.set.slice_ns += 1000000;
	assert_int_equal(latact_journal_task(&f->la, &next), 0);
	/* The kill: the journal stays, nothing is written or given back. */
	for (size_t i = 0; i < f->la.n; i++)
		free(f->la.e[i]);
	free(f->la.e);
	free(f->la.cg);
	journal_close(f->la.journal);
	snprintf(path, sizeof(path), "%s/%d/cgroup", f->proc, (int)tid);
	assert_string_equal(kit_slurp(NULL, path), "0::/rqbalance-lat-5\n");
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_string_equal(kit_slurp(NULL, path), "0::/\n");
	/* Its nice and slice, still value -5's, are rqbalance's too: none left alone. */
	assert_int_equal(f->la.cnt.left_alone, 0);
	latact_fini(&f->la);
}

/* The same for a cgroup: killed after journalling its next weight, before writing it. */
KIT_TEST_FX(test_cgroup_restored_after_crash_mid_change, setup, teardown)
{
	struct fix *f = *state;
	const char *why = NULL;
	struct lat_cg_entry next;
	char app[PATH_MAX];

	f->o.class_cgroups = false;
	snprintf(app, sizeof(app), "%s/app", f->cg);
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(latact_cgroup(&f->la, "/app", -8, "test", &why), 0);
	next = *latact_find_cgroup(&f->la, "/app");
	next.value = 5;
	next.set_weight = weight_of(&f->lc, 5);
	assert_int_equal(latact_journal_cg(&f->la, &next), 0);
	free(f->la.e);
	free(f->la.cg);
	journal_close(f->la.journal);
	assert_int_equal(file_u64(app, "cpu.weight"), weight_of(&f->lc, -8));
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(file_u64(app, "cpu.weight"), 100);
	latact_fini(&f->la);
}

/* ---- the dry-run driver ---- */

struct snap {
	char *text;
	size_t len;
	FILE *f;
};

static struct snap *snap_cur;

static int snap_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)ftw;
	fprintf(snap_cur->f, "%s %o %lld\n", path, (unsigned)st->st_mode, (long long)st->st_size);
	if (flag == FTW_F) {
		const char *t = kit_slurp(NULL, path);

		fprintf(snap_cur->f, "%s\n", t ? t : "?");
	}
	return 0;
}

/* Every path, mode and content under dir, as text. */
static char *tree_text(const char *dir)
{
	struct snap s = { 0 };

	s.f = open_memstream(&s.text, &s.len);
	assert_non_null(s.f);
	snap_cur = &s;
	assert_int_equal(nftw(dir, snap_one, 16, FTW_PHYS), 0);
	fclose(s.f);
	return s.text;
}

static void dry_run_everything(struct fix *f)
{
	const char *why = NULL;

	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_null(f->la.journal);
	assert_false(f->la.cls.on);
	assert_int_equal(set_task(&f->la, gettid(), -5, &why), 0);
	assert_int_equal(latact_cgroup(&f->la, "/app", 7, "test", &why), 0);
	/* Nothing written, so nothing kept to give back, nor counted as applied. */
	assert_int_equal(f->la.n, 0);
	assert_int_equal(f->la.ncg, 0);
	assert_int_equal(f->la.cnt.applied, 0);
	latact_set_conf(&f->la, &f->lc);
	latact_cgroup_reset(&f->la, "/app");
	latact_task_reset(&f->la, gettid(), 0);
	latact_fini(&f->la);
}

/*
 * As the daemon's -n runs it, the dry-run driver alone: no journal, no class
 * cgroups, and the tree (cgroups, /proc, the journal's directory) as it was.
 */
KIT_TEST_FX(test_dry_run_writes_nothing, setup, teardown)
{
	struct fix *f = *state;
	char *before, *after;

	f->ops = dryrun_on_fake();
	before = tree_text(f->dir);
	dry_run_everything(f);
	after = tree_text(f->dir);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

/* ---- class moves made by the worker (latact_move.c) ---- */

static int gate[2] = { -1, -1 }; /* the worker's attach waits for a byte on gate[0] */
static int gate_r;               /* ...then fails with this, if not 0 */

static int gated_attach(const char *procs_file, const struct act_task *t)
{
	char c;

	if (gate[0] >= 0 && read(gate[0], &c, 1) != 1)
		return -EIO;
	if (gate_r)
		return gate_r;
	return tree_attach(procs_file, t);
}

/* As set_task, for a rule's value at an exec: the class move may end later. */
static int set_task_async(struct latact *la, pid_t tid, int v)
{
	struct lat_req rq = { .tid = tid, .tgid = getpid(), .start_time = 1, .value = v,
			      .source = "rule test", .async_move = true };
	const char *why = NULL;

	return latact_task(la, &rq, NULL, &why);
}

/*
 * A queued move is recorded as made, left alone by the checks until it ends, and
 * made by the worker; one that fails leaves the record saying where the task is.
 */
KIT_TEST_FX(test_class_move_by_worker, setup, teardown)
{
	struct fix *f = *state;
	pid_t tid = gettid();
	char path[PATH_MAX], stat_line[512];
	const struct lat_entry *e;

	/* The worker checks the start time (1, as fake_open has it) before it writes. */
	snprintf(path, sizeof(path), "%s/%d/stat", f->proc, (int)tid);
	snprintf(stat_line, sizeof(stat_line),
		 "%d (test) R 1 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 1 0 0 "
		 "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n", (int)tid);
	kit_put(NULL, path, stat_line);
	gate_r = 0;
	assert_int_equal(pipe(gate), 0);
	f->ops.attach = gated_attach;
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_true(latact_moves_start(&f->la) >= 0);

	assert_int_equal(set_task_async(&f->la, tid, -5), 0);
	assert_true(latact_move_pending(&f->la, tid));
	e = latact_find(&f->la, tid);
	assert_non_null(e);
	assert_string_equal(e->set.cgroup, "/rqbalance-lat-5");
	/* Not moved yet: a check does not take that for someone else's move. */
	latact_verify(&f->la);
	assert_int_equal(latact_find(&f->la, tid)->left, 0);
	assert_int_equal(latact_find(&f->la, tid)->cg, LAT_CG_OURS);
	assert_int_equal(write(gate[1], "x", 1), 1);
	latact_moves_wait(&f->la);
	assert_false(latact_move_pending(&f->la, tid));
	snprintf(path, sizeof(path), "%s/rqbalance-lat-5/cgroup.procs", f->cg);
	assert_int_equal(atoi(kit_slurp(NULL, path)), (int)tid);
	latact_verify(&f->la);
	assert_int_equal(latact_find(&f->la, tid)->cg, LAT_CG_OURS);
	assert_string_equal(latact_find(&f->la, tid)->set.cgroup, "/rqbalance-lat-5");

	/* The next move fails: the record says where the task is, which is not given back. */
	gate_r = -EACCES;
	assert_int_equal(set_task_async(&f->la, tid, -3), 0);
	assert_string_equal(latact_find(&f->la, tid)->set.cgroup, "/rqbalance-lat-3");
	assert_int_equal(write(gate[1], "x", 1), 1);
	latact_moves_wait(&f->la);
	assert_string_equal(latact_find(&f->la, tid)->set.cgroup, "/rqbalance-lat-5");
	assert_true(f->la.cnt.errors >= 1);

	/* At the end every move has ended; the worker stops with the actuator. */
	gate_r = 0;
	close(gate[1]);
	close(gate[0]);
	gate[0] = gate[1] = -1;
	latact_fini(&f->la);
	assert_null(f->la.mv);
}

/* The Linux driver's answer where the task was released before the write ended. */
static int stale_attach(const char *procs_file, const struct act_task *t)
{
	int r = tree_attach(procs_file, t);

	return r < 0 ? r : -ESTALE;
}

/*
 * The third review's finding 2: the task exits as its move is written, and a new task
 * of someone else's (made in /app by its parent) takes its number, so the kernel moves
 * that one. The driver says -ESTALE; the new task is moved back where its parent is,
 * and nothing is recorded for it.
 */
KIT_TEST_FX(test_class_move_reused_undone, setup, teardown)
{
	struct fix *f = *state;
	const char *why = NULL;
	char path[PATH_MAX];
	pid_t tid = gettid(), creator = 1000000 + tid;

	snprintf(path, sizeof(path), "%s/%d", f->proc, (int)creator);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%d/cgroup", f->proc, (int)creator);
	kit_put(NULL, path, "0::/app\n");
	f->ops.attach = stale_attach;
	reuse_creator = creator;
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(set_task(&f->la, tid, 5, &why), -ESRCH);
	assert_null(latact_find(&f->la, tid));
	snprintf(path, sizeof(path), "%s/%d/cgroup", f->proc, (int)tid);
	assert_string_equal(kit_slurp(NULL, path), "0::/app\n");
	snprintf(path, sizeof(path), "%s/app/cgroup.procs", f->cg);
	assert_int_equal(atoi(kit_slurp(NULL, path)), (int)tid);
	/* A holder its maker passed the class to (made inside it) keeps it. */
	snprintf(path, sizeof(path), "%s/%d/cgroup", f->proc, (int)tid);
	kit_put(NULL, path, "0::/\n");
	snprintf(path, sizeof(path), "%s/%d/cgroup", f->proc, (int)creator);
	kit_put(NULL, path, "0::/rqbalance-lat5\n");
	assert_int_equal(set_task(&f->la, tid, 5, &why), -ESRCH);
	snprintf(path, sizeof(path), "%s/%d/cgroup", f->proc, (int)tid);
	assert_string_equal(kit_slurp(NULL, path), "0::/rqbalance-lat5\n");
	reuse_creator = 0;
	latact_fini(&f->la);
}

/*
 * Where the kernel clamps groups and uclamp is on, a negative class gets the mapping's
 * uclamp_min and a positive one its uclamp_max, as the percent the files take.
 */
KIT_TEST_FX(test_class_uclamp, setup, teardown)
{
	struct fix *f = *state;
	const char *why = NULL;
	char file[PATH_MAX];
	pid_t tid = gettid();

	f->o.uclamp = true;
	f->lc.uclamp = true;
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(set_task(&f->la, tid, -10, &why), 0);
	snprintf(file, sizeof(file), "%s/rqbalance-lat-10/cpu.uclamp.min", f->cg);
	assert_string_equal(kit_slurp(NULL, file), "50.00");
	snprintf(file, sizeof(file), "%s/rqbalance-lat-10/cpu.uclamp.max", f->cg);
	assert_string_equal(kit_slurp(NULL, file), "max\n");
	assert_int_equal(set_task(&f->la, tid, 10, &why), 0);
	snprintf(file, sizeof(file), "%s/rqbalance-lat10/cpu.uclamp.max", f->cg);
	assert_string_equal(kit_slurp(NULL, file), "73.73");
	assert_int_equal(set_task(&f->la, tid, -20, &why), 0);
	snprintf(file, sizeof(file), "%s/rqbalance-lat-20/cpu.uclamp.min", f->cg);
	assert_string_equal(kit_slurp(NULL, file), "max");
	latact_fini(&f->la);
}

/*
 * The give-back ring: while running it keeps the last LATACT_GIVEN_MAX, oldest first
 * out; at stop (given_all, after a reserve) it keeps every one, in order, so that a
 * fork read late finds its creator's record however many were given back.
 */
KIT_TEST(test_given_ring_keeps_all_at_stop)
{
	struct latact la = { 0 };
	struct lat_entry e = { 0 };

	(void)state;
	for (pid_t t = 1; t <= LATACT_GIVEN_MAX + 10; t++) {
		e.task.tid = t;
		latact_given_note(&la, &e);
	}
	assert_int_equal(latact_given_count(&la), LATACT_GIVEN_MAX);
	assert_null(latact_given_find(&la, 10));
	assert_non_null(latact_given_find(&la, 11));
	assert_int_equal(latact_given_nth(&la, 0)->task.tid, 11);
	la.given_all = true;
	assert_int_equal(latact_given_reserve(&la, LATACT_GIVEN_MAX + 100), 0);
	assert_int_equal(latact_given_nth(&la, 0)->task.tid, 11);
	for (pid_t t = 1000; t < 1000 + 3 * LATACT_GIVEN_MAX; t++) {
		e.task.tid = t;
		latact_given_note(&la, &e);
	}
	assert_int_equal(latact_given_count(&la), 4 * LATACT_GIVEN_MAX);
	assert_non_null(latact_given_find(&la, 11));
	assert_non_null(latact_given_find(&la, 1000));
	for (size_t k = 0; k < latact_given_count(&la); k++)
		assert_int_equal(latact_given_nth(&la, k)->task.tid,
				 k < LATACT_GIVEN_MAX ? (pid_t)(11 + k) :
							(pid_t)(1000 + k - LATACT_GIVEN_MAX));
	free(la.given);
}

/* ---- the end of a favour by state: what the kernel copied, found in /proc ---- */

/* Fake tasks for the walk: each one's nice, policy and slice, and its process. */
struct ftask {
	pid_t tid, tgid, ppid;
	uint64_t start;
	int nice;
	uint64_t slice_ns;
	const char *cgroup;
	unsigned writes;            /* sched_setattr calls it got */
};

static struct ftask ftasks[16];
/* Each one's sched_flags (SCHED_FLAG_RESET_ON_FORK), by its index in ftasks. */
static uint64_t ftask_flags[16];
static size_t nftasks;

static struct ftask *ftask_of(pid_t tid)
{
	for (size_t i = 0; i < nftasks; i++)
		if (ftasks[i].tid == tid)
			return &ftasks[i];
	return NULL;
}

static int ftask_get_attr(pid_t tid, struct rqb_sched_attr *ret)
{
	struct ftask *t = ftask_of(tid);

	if (!t)
		return -ESRCH;
	*ret = (struct rqb_sched_attr){ .size = sizeof(*ret), .sched_policy = SCHED_OTHER,
					.sched_nice = t->nice, .sched_runtime = t->slice_ns,
					.sched_flags = ftask_flags[t - ftasks] };
	return 0;
}

static int ftask_set_attr(const struct act_task *at, const struct rqb_sched_attr *a)
{
	struct ftask *t = ftask_of(at->tid);

	assert_non_null(t);
	t->nice = a->sched_nice;
	t->slice_ns = a->sched_runtime;
	/* As the kernel: every sched_setattr sets or clears it. */
	ftask_flags[t - ftasks] = a->sched_flags & SCHED_FLAG_RESET_ON_FORK;
	t->writes++;
	return 0;
}

static int ftask_who(pid_t tid, struct act_who *ret)
{
	struct ftask *t = ftask_of(tid);

	if (!t)
		return -ESRCH;
	*ret = (struct act_who){ .start_time = t->start, .tgid = t->tgid, .ppid = t->ppid };
	return 0;
}

/* The task's files as /proc has them: its stat under its process, and its cgroup. */
static void ftask_put(struct fix *f, const struct ftask *t)
{
	char path[PATH_MAX], text[512];

	snprintf(path, sizeof(path), "%s/%d", f->proc, (int)t->tgid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/task", f->proc, (int)t->tgid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/task/%d", f->proc, (int)t->tgid, (int)t->tid);
	assert_int_equal(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/%d/task/%d/stat", f->proc, (int)t->tgid, (int)t->tid);
	snprintf(text, sizeof(text),
		 "%d (t) S %d 1 1 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 %llu 0 0 "
		 "0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		 (int)t->tid, (int)t->ppid, (unsigned long long)t->start);
	kit_put(NULL, path, text);
	snprintf(path, sizeof(path), "%s/%d", f->proc, (int)t->tid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/cgroup", f->proc, (int)t->tid);
	snprintf(text, sizeof(text), "0::%s\n", t->cgroup);
	kit_put(NULL, path, text);
}

/*
 * Process 1000 was given -5 (nice -5, a 0.5 ms slice, the class) and recorded; while no
 * daemon ran it made thread 1001, child 2000 (with thread 2001, which reniced itself
 * to 3) and grandchild 3000; 5000, made by it and handed to init since, is left in the
 * class. 4000, an unrelated process older than 1000, has the same knobs by its own
 * choice. The walk gives back each copy that holds exactly what was written, moves
 * 2000 out of the class whole, and leaves 2001's knobs, 4000 and 1000 (given back as
 * itself) alone.
 */
KIT_TEST_FX(test_offspring_given_back_by_state, setup, teardown)
{
	struct fix *f = *state;
	const struct ftask init[] = {
		{ 1000, 1000, 1, 5, -5, 500000, "/", 0 },
		{ 1001, 1000, 1, 6, -5, 500000, "/rqbalance-lat-5", 0 },
		{ 2000, 2000, 1000, 7, -5, 500000, "/rqbalance-lat-5", 0 },
		{ 2001, 2000, 1000, 8, 3, 500000, "/rqbalance-lat-5", 0 },
		{ 3000, 3000, 2000, 9, -5, 500000, "/rqbalance-lat-5", 0 },
		{ 4000, 4000, 1, 2, -5, 500000, "/", 0 },
		{ 5000, 5000, 1, 10, -5, 500000, "/rqbalance-lat-5", 0 },
	};
	struct lat_entry rec = { .task = { 1000, 5, -1 }, .tgid = 1000, .value = -5 };
	const struct lat_entry *recs[] = { &rec };
	char cls[LAT_PATH_MAX], path[PATH_MAX];

	f->ops.get_attr = ftask_get_attr;
	f->ops.set_attr = ftask_set_attr;
	f->ops.who = ftask_who;
	memcpy(ftasks, init, sizeof(init));
	nftasks = sizeof(init) / sizeof(init[0]);
	for (size_t i = 0; i < nftasks; i++)
		ftask_put(f, &ftasks[i]);
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(latact_class_ensure(&f->la, -5, cls, sizeof(cls)), 0);
	snprintf(path, sizeof(path), "%s%s/cgroup.procs", f->cg, cls);
	kit_put(NULL, path, "2000\n3000\n5000\n");
	rec.prev = (struct lat_state){ .policy = SCHED_OTHER, .umin = -1, .umax = -1,
				       .cgroup = "/" };
	rec.set = (struct lat_state){ .policy = SCHED_OTHER, .nice = -5, .slice_ns = 500000,
				      .umin = -1, .umax = -1, .cgroup = "/rqbalance-lat-5" };
	f->la.o.slices = true;
	f->la.default_slice_ns = 1400000;

	latact_give_back_offspring(&f->la, recs, 1, "test");
	for (size_t i = 0; i < nftasks; i++) {
		const struct ftask *t = &ftasks[i];
		bool copy = t->tid == 1001 || t->tid == 2000 || t->tid == 3000 || t->tid == 5000;

		print_message("task %d: nice %d, %u writes\n", (int)t->tid, t->nice, t->writes);
		assert_int_equal(t->writes, copy);
		assert_int_equal(t->nice, copy ? 0 : init[i].nice);
	}
	/* 2000 and 2001 left the class in one write; 3000 and 5000 went with their own. */
	snprintf(path, sizeof(path), "%s/2000/cgroup", f->proc);
	assert_string_equal(kit_slurp(NULL, path), "0::/\n");
	snprintf(path, sizeof(path), "%s/4000/cgroup", f->proc);
	assert_string_equal(kit_slurp(NULL, path), "0::/\n");
	snprintf(path, sizeof(path), "%s/5000/cgroup", f->proc);
	assert_string_equal(kit_slurp(NULL, path), "0::/\n");
	latact_fini(&f->la);
}

/* Process pid's /proc directory is uid's: the owner latact_owner reads. */
static void owned_by(struct fix *f, pid_t pid, uid_t uid)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%d", f->proc, (int)pid);
	assert_int_equal(chown(path, uid, uid), 0);
}

/*
 * A grant of -5 on front 1000 (uid 1001) ends; the table gave 1000 back. Lost forks
 * left: its child 2000, and 5000, handed to init, uid 1001's, started after 1000: both
 * go back. Left alone: 5100 (uid 1003's), 5200 (started before the front), the
 * live grants' fronts 6000 (uid 1002) and 6500 (uid 1001), 6000's child 6001, and 7000,
 * uid 1001's, started after 6500: it may be that grant's.
 */
KIT_TEST_FX(test_grant_given_back_by_state, setup, teardown)
{
	struct fix *f = *state;
	const struct ftask init[] = {
		{ 1000, 1000, 1, 5, 0, 0, "/", 0 },
		{ 2000, 2000, 1000, 7, -5, 500000, "/rqbalance-lat-5", 0 },
		{ 5000, 5000, 1, 10, -5, 500000, "/rqbalance-lat-5", 0 },
		{ 5100, 5100, 1, 10, -5, 500000, "/rqbalance-lat-5", 0 },
		{ 5200, 5200, 1, 3, -5, 500000, "/rqbalance-lat-5", 0 },
		{ 6000, 6000, 1, 4, -5, 500000, "/rqbalance-lat-5", 0 },
		{ 6001, 6001, 6000, 11, -5, 500000, "/rqbalance-lat-5", 0 },
		{ 6500, 6500, 1, 11, -5, 500000, "/rqbalance-lat-5", 0 },
		{ 7000, 7000, 1, 12, -5, 500000, "/rqbalance-lat-5", 0 },
	};
	const uid_t uids[] = { 1001, 1001, 1001, 1003, 1001, 1002, 1002, 1001, 1001 };
	struct lat_entry rec = { .task = { 1000, 5, -1 }, .tgid = 1000, .value = -5 };
	struct lat_entry r6000 = { .task = { 6000, 4, -1 }, .tgid = 6000, .value = -5 };
	struct lat_entry r6500 = { .task = { 6500, 11, -1 }, .tgid = 6500, .value = -5 };
	const struct latact_front end = { &rec, 1001 };
	const struct latact_front live[] = { { &r6000, 1002 }, { &r6500, 1001 } };
	char cls[LAT_PATH_MAX], path[PATH_MAX];

	f->ops.get_attr = ftask_get_attr;
	f->ops.set_attr = ftask_set_attr;
	f->ops.who = ftask_who;
	memcpy(ftasks, init, sizeof(init));
	nftasks = sizeof(init) / sizeof(init[0]);
	for (size_t i = 0; i < nftasks; i++) {
		ftask_put(f, &ftasks[i]);
		owned_by(f, ftasks[i].tgid, uids[i]);
	}
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(latact_class_ensure(&f->la, -5, cls, sizeof(cls)), 0);
	snprintf(path, sizeof(path), "%s%s/cgroup.procs", f->cg, cls);
	kit_put(NULL, path, "2000\n5000\n5100\n5200\n6000\n6001\n6500\n7000\n");
	rec.prev = (struct lat_state){ .policy = SCHED_OTHER, .umin = -1, .umax = -1,
				       .cgroup = "/" };
	rec.set = (struct lat_state){ .policy = SCHED_OTHER, .nice = -5, .slice_ns = 500000,
				      .umin = -1, .umax = -1, .cgroup = "/rqbalance-lat-5" };
	r6000.prev = r6500.prev = rec.prev;
	r6000.set = r6500.set = rec.set;
	f->la.o.slices = true;
	f->la.default_slice_ns = 1400000;

	latact_give_back_grant(&f->la, &end, live, 2);
	for (size_t i = 0; i < nftasks; i++) {
		const struct ftask *t = &ftasks[i];
		bool copy = t->tid == 2000 || t->tid == 5000;

		print_message("task %d: nice %d, %u writes\n", (int)t->tid, t->nice, t->writes);
		assert_int_equal(t->writes, copy);
		assert_int_equal(t->nice, copy ? 0 : init[i].nice);
		snprintf(path, sizeof(path), "%s/%d/cgroup", f->proc, (int)t->tid);
		assert_string_equal(kit_slurp(NULL, path), copy || t->tid == 1000 ? "0::/\n" :
							      "0::/rqbalance-lat-5\n");
	}
	latact_fini(&f->la);
}

/*
 * A knob that is only a row of latknob.c's table: SCHED_FLAG_RESET_ON_FORK, where the
 * mapping carries it (lat_conf.reset_on_fork). A value writes it with the rest, the
 * journal keeps it under its key (a record without one is the first format, and
 * parses as off), a reset gives it back, and a task's own flag survives rqbalance's
 * writes instead of being cleared by them. A value not handed down sets it anyway.
 */
KIT_TEST_FX(test_reset_on_fork_knob, setup, teardown)
{
	struct fix *f = *state;
	const struct ftask init[] = {
		{ 1000, 1000, 1, 5, 0, 0, "/", 0 },
		{ 1100, 1100, 1, 6, 0, 0, "/", 0 },
	};
	struct lat_req rq = { .tid = 1000, .tgid = 1000, .start_time = 5, .value = -5,
			      .source = "test" };
	char path[PATH_MAX], line[LAT_LINE_MAX];
	const struct lat_entry *e;
	struct lat_entry pe;
	struct lat_cg_entry pc;
	const char *why, *text, *rec;

	f->ops.get_attr = ftask_get_attr;
	f->ops.set_attr = ftask_set_attr;
	f->ops.who = ftask_who;
	memcpy(ftasks, init, sizeof(init));
	nftasks = sizeof(init) / sizeof(init[0]);
	for (size_t i = 0; i < nftasks; i++)
		ftask_put(f, &ftasks[i]);
	ftask_flags[1] = SCHED_FLAG_RESET_ON_FORK; /* 1100 asked for it itself */
	f->lc.reset_on_fork = true;
	assert_int_equal(latact_init(&f->la, &f->ops, &f->o, &f->lc), 0);
	assert_int_equal(latact_task(&f->la, &rq, NULL, &why), 0);
	assert_int_equal(ftasks[0].nice, -5);
	assert_int_equal(ftask_flags[0], SCHED_FLAG_RESET_ON_FORK);
	e = latact_find(&f->la, 1000);
	assert_non_null(e);
	assert_int_equal(e->prev.rof, 0);
	assert_int_equal(e->set.rof, 1);
	/* The journal's record carries it by key, after both states; it reads back. */
	snprintf(path, sizeof(path), "%s/%s", f->journal, LAT_JOURNAL_NAME);
	text = kit_slurp(NULL, path);
	assert_non_null(text);
	rec = strstr(text, "lat 1000 ");
	assert_non_null(rec);
	snprintf(line, sizeof(line), "%.*s", (int)strcspn(rec, "\n"), rec);
	assert_non_null(strstr(line, " rof=0/1"));
	assert_int_equal(latact_parse_line(line, &pe, &pc), LATACT_REC_TASK);
	assert_int_equal(pe.prev.rof, 0);
	assert_int_equal(pe.set.rof, 1);
	snprintf(line, sizeof(line), "lat 7 7 1 -5 0 0 0 -1 -1 - 0 -5 0 -1 -1 -");
	assert_int_equal(latact_parse_line(line, &pe, &pc), LATACT_REC_TASK);
	assert_int_equal(pe.set.rof, 0);
	snprintf(line, sizeof(line), "lat 7 7 1 -5 0 0 0 -1 -1 - 0 -5 0 -1 -1 - rof=1");
	assert_int_equal(latact_parse_line(line, &pe, &pc), -EINVAL);
	/* Given back: the flag goes with the rest. */
	assert_int_equal(latact_task_reset(&f->la, 1000, 5), 0);
	assert_int_equal(ftasks[0].nice, 0);
	assert_int_equal(ftask_flags[0], 0);
	/* Off in the mapping: a task's own flag is kept through the value and its reset. */
	f->lc.reset_on_fork = false;
	latact_set_conf(&f->la, &f->lc);
	rq = (struct lat_req){ .tid = 1100, .tgid = 1100, .start_time = 6, .value = -5,
			       .source = "test" };
	assert_int_equal(latact_task(&f->la, &rq, NULL, &why), 0);
	assert_int_equal(ftasks[1].nice, -5);
	assert_int_equal(ftask_flags[1], SCHED_FLAG_RESET_ON_FORK);
	assert_int_equal(latact_task_reset(&f->la, 1100, 6), 0);
	assert_int_equal(ftask_flags[1], SCHED_FLAG_RESET_ON_FORK);
	/* A value not handed down (a launcher's rule) sets it whatever the mapping says. */
	rq = (struct lat_req){ .tid = 1000, .tgid = 1000, .start_time = 5, .value = 15,
			       .source = "rule steam", .no_inherit = true };
	assert_int_equal(latact_task(&f->la, &rq, NULL, &why), 0);
	assert_int_equal(ftasks[0].nice, 15);
	assert_int_equal(ftask_flags[0], SCHED_FLAG_RESET_ON_FORK);
	e = latact_find(&f->la, 1000);
	assert_non_null(e);
	assert_true(e->no_inherit);
	assert_int_equal(e->set.rof, 1);
	assert_int_equal(latact_task_reset(&f->la, 1000, 5), 0);
	assert_int_equal(ftasks[0].nice, 0);
	assert_int_equal(ftask_flags[0], 0);
	latact_fini(&f->la);
	memset(ftask_flags, 0, sizeof(ftask_flags));
}
