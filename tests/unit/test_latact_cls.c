/*
 * The latency classes (rqbalance-latN cgroups) on a fake cpu hierarchy under a temporary
 * directory, v1 or cgroup2 as its mounts file says: where the hierarchy is found, what a
 * class is made with (weight, no quota, its share of real-time runtime), how classes are
 * found again and taken away, and whose a task's cgroup is. Every write goes through a
 * driver that makes it in the tree and records it.
 */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuate/journal.h"
#include "actuate/latact.h"
#include "actuate/latact_int.h"
#include "policy/latency.h"
#include "kit.h"

struct fix {
	char dir[32];               /* /tmp/rqb-latcls.XXXXXX */
	char cg[64], v1[64], proc[64], mounts[64];
	struct latact la;           /* set up by hand: no latact_init */
};

/* ---- the fake kernel: a cgroupfs of files, and the driver's record of writes ---- */

static char tree[64];            /* the temporary directory: stripped from recorded paths */
static bool tree_v1, tree_rt;    /* the files a new group gets */
static char oplog[16384];        /* "OP PATH [TEXT]\n" for each write, PATH below tree */
static int attach_ret;           /* what attach returns after its write (-ESTALE…) */

static void note(const char *op, const char *path, const char *text)
{
	size_t n = strlen(oplog);

	snprintf(oplog + n, sizeof(oplog) - n, "%s %s%s%s\n", op, path + strlen(tree),
		 text ? " " : "", text ? text : "");
}

static void group_files(const char *dir)
{
	static const char *const v2[] = { "cpu.weight", "cpu.max", "cgroup.procs",
					  "cgroup.subtree_control" };
	static const char *const v1[] = { "cpu.shares", "cpu.cfs_quota_us", "tasks" };
	char path[PATH_MAX];

	for (size_t i = 0; i < (tree_v1 ? 3 : 4); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, tree_v1 ? v1[i] : v2[i]);
		kit_put(NULL, path, "");
	}
	if (tree_rt) {
		snprintf(path, sizeof(path), "%s/cpu.rt_runtime_us", dir);
		kit_put(NULL, path, "0\n");
	}
}

/* A cgroupfs write: to a file the kernel has, replacing what it says. */
static int tree_write(const char *path, const char *text)
{
	if (access(path, F_OK) < 0)
		return -errno;
	note("write", path, text);
	kit_put(NULL, path, text);
	return 0;
}

static int tree_mkdir(const char *dir)
{
	if (mkdir(dir, 0755) < 0)
		return errno == EEXIST ? 0 : -errno;
	note("mkdir", dir, NULL);
	group_files(dir);
	return 0;
}

static int unlink_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)ftw;
	return flag == FTW_DP ? 0 : unlink(path);
}

static int tree_rmdir(const char *dir)
{
	note("rmdir", dir, NULL);
	nftw(dir, unlink_one, 8, FTW_DEPTH | FTW_PHYS);
	return rmdir(dir) < 0 ? -errno : 0;
}

static int tree_attach(const char *procs_file, const struct act_task *t)
{
	char text[16];

	snprintf(text, sizeof(text), "%d", (int)t->tid);
	note("attach", procs_file, text);
	return attach_ret;
}

/* Every task number is held by a task of its own process, started at 1. */
static int fake_who(pid_t tid, struct act_who *ret)
{
	*ret = (struct act_who){ .start_time = 1, .tgid = tid, .ppid = 1 };
	return attach_ret == -ESTALE ? -ESRCH : 0; /* no other task took a reused number */
}

static int fake_open(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret)
{
	(void)tgid;
	*ret = (struct act_task){ .tid = tid, .start_time = start_time, .pidfd = -1 };
	return 0;
}

static int fake_alive(const struct act_task *t)
{
	(void)t;
	return 0;
}

static void fake_close(struct act_task *t)
{
	(void)t;
}

static const struct act_ops fake_ops = {
	.name = "fake",
	.open = fake_open,
	.alive = fake_alive,
	.who = fake_who,
	.close = fake_close,
	.attach = tree_attach,
	.write = tree_write,
	.mkdir = tree_mkdir,
	.rmdir = tree_rmdir,
};

/* ---- the tree ---- */

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));
	char path[PATH_MAX];

	assert_non_null(f);
	kit_tmp(f->dir, sizeof(f->dir), "latcls");
	assert_int_equal(chmod(f->dir, 0755), 0);
	snprintf(tree, sizeof(tree), "%s", f->dir);
	snprintf(f->cg, sizeof(f->cg), "%s/cg", f->dir);
	snprintf(f->v1, sizeof(f->v1), "%s/cpu", f->dir);
	snprintf(f->proc, sizeof(f->proc), "%s/proc", f->dir);
	snprintf(f->mounts, sizeof(f->mounts), "%s/mounts", f->dir);
	assert_int_equal(mkdir(f->cg, 0755), 0);
	assert_int_equal(mkdir(f->v1, 0755), 0);
	assert_int_equal(mkdir(f->proc, 0755), 0);
	tree_v1 = tree_rt = false;
	group_files(f->cg);
	snprintf(path, sizeof(path), "%s/cgroup.controllers", f->cg);
	kit_put(NULL, path, "cpuset cpu io memory pids\n");
	tree_v1 = true;
	group_files(f->v1);
	tree_v1 = false;
	/* cgroup2 alone until a test says otherwise */
	snprintf(path, sizeof(path), "cgroup2 %s cgroup2 rw,nosuid 0 0\n", f->cg);
	kit_put(NULL, f->mounts, path);
	oplog[0] = '\0';
	attach_ret = 0;
	f->la.ops = &fake_ops;
	f->la.lc = (struct lat_conf){ .batch_from = 20, .class_cgroups = true };
	f->la.o = (struct latact_opts){ .class_cgroups = true, .mounts_file = f->mounts };
	snprintf(f->la.proc_root, sizeof(f->la.proc_root), "%s", f->proc);
	assert_int_equal(journal_open_named(f->dir, LAT_JOURNAL_NAME, &f->la.journal), 0);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	if (f->la.journal)
		journal_close(f->la.journal);
	kit_rm(f->dir);
	free(f);
	return 0;
}

/* The v1 cpu hierarchy mounted beside cgroup2 (rt: with RT group scheduling). */
static void use_v1(struct fix *f, bool rt)
{
	char text[256];

	snprintf(text, sizeof(text), "cgroup %s cgroup rw,cpu,cpuacct 0 0\ncgroup2 %s cgroup2 rw 0 0\n",
		 f->v1, f->cg);
	kit_put(NULL, f->mounts, text);
	tree_v1 = true;
	tree_rt = rt;
	if (rt) {
		snprintf(text, sizeof(text), "%s/cpu.rt_runtime_us", f->v1);
		kit_put(NULL, text, "950000\n");
	}
}

static const char *file(const char *dir, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	return kit_slurp(NULL, path);
}

static bool logged(const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "%s\n", line);
	return strstr(oplog, want) != NULL;
}

static uint64_t mapped_shares(const struct lat_conf *lc, int v)
{
	struct lat_knobs k;

	latency_map(lc, v, &k);
	return k.shares;
}

/* /proc/TID/cgroup of the fake tree. */
static void proc_cgroup(struct fix *f, pid_t tid, const char *text)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%d", f->proc, (int)tid);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/%d/cgroup", f->proc, (int)tid);
	kit_put(NULL, path, text);
}

/* ---- finding the hierarchy ---- */

KIT_TEST_FX(finds_cgroup2_with_cpu, setup, teardown)
{
	struct fix *f = *state;

	latact_classes_find(&f->la);
	assert_true(f->la.cls.on);
	assert_true(f->la.cls.v2);
	assert_false(f->la.cls.rt);
	assert_false(f->la.cls.made_root);
	assert_string_equal(f->la.cls.mount, f->cg);
	assert_string_equal(oplog, "write /cg/cgroup.subtree_control +cpu\n");
}

/* A parent of the classes' own is made, with cpu enabled down to it, and said to be ours. */
KIT_TEST_FX(makes_the_parent, setup, teardown)
{
	struct fix *f = *state;

	snprintf(f->la.cls.root, sizeof(f->la.cls.root), "rqb");
	latact_classes_find(&f->la);
	assert_true(f->la.cls.on);
	assert_true(f->la.cls.made_root);
	assert_string_equal(oplog, "mkdir /cg/rqb\n"
				   "write /cg/cgroup.subtree_control +cpu\n"
				   "write /cg/rqb/cgroup.subtree_control +cpu\n");
	/* Found there at the next start: not ours to remove. */
	memset(&f->la.cls, 0, sizeof(f->la.cls));
	snprintf(f->la.cls.root, sizeof(f->la.cls.root), "rqb");
	latact_classes_find(&f->la);
	assert_true(f->la.cls.on);
	assert_false(f->la.cls.made_root);
}

KIT_TEST_FX(no_hierarchy_no_classes, setup, teardown)
{
	struct fix *f = *state;
	char path[PATH_MAX];

	/* cgroup2 without the cpu controller. */
	snprintf(path, sizeof(path), "%s/cgroup.controllers", f->cg);
	kit_put(NULL, path, "cpuset io memory\n");
	latact_classes_find(&f->la);
	assert_false(f->la.cls.on);
	/* No cgroup mount, or no mounts file at all. */
	kit_put(NULL, f->mounts, "proc /proc proc rw 0 0\n");
	latact_classes_find(&f->la);
	assert_false(f->la.cls.on);
	unlink(f->mounts);
	latact_classes_find(&f->la);
	assert_false(f->la.cls.on);
	assert_string_equal(oplog, "");
}

/* Found, but no classes: not asked for, or no journal to record what is made. */
KIT_TEST_FX(classes_only_where_asked, setup, teardown)
{
	struct fix *f = *state;

	f->la.o.class_cgroups = false;
	latact_classes_find(&f->la);
	assert_false(f->la.cls.on);
	assert_string_equal(f->la.cls.mount, f->cg);
	f->la.o.class_cgroups = true;
	journal_close(f->la.journal);
	f->la.journal = NULL;
	latact_classes_find(&f->la);
	assert_false(f->la.cls.on);
	assert_string_equal(oplog, "");
}

/* The v1 cpu controller comes before cgroup2; it has no subtree_control. */
KIT_TEST_FX(prefers_v1, setup, teardown)
{
	struct fix *f = *state;

	use_v1(f, false);
	latact_classes_find(&f->la);
	assert_true(f->la.cls.on);
	assert_false(f->la.cls.v2);
	assert_false(f->la.cls.rt);
	assert_string_equal(f->la.cls.mount, f->v1);
	assert_string_equal(oplog, "");
}

/* ---- making classes ---- */

KIT_TEST_FX(class_made_once, setup, teardown)
{
	struct fix *f = *state;
	char ret[LAT_PATH_MAX], want[512];

	latact_classes_find(&f->la);
	oplog[0] = '\0';
	assert_int_equal(latact_class_ensure(&f->la, -5, ret, sizeof(ret)), 0);
	assert_string_equal(ret, "/rqbalance-lat-5");
	assert_true(f->la.cls.made[-5 - LAT_MIN]);
	snprintf(want, sizeof(want), "mkdir /cg/rqbalance-lat-5\n"
		 "write /cg/rqbalance-lat-5/cpu.weight %u\n"
		 "write /cg/rqbalance-lat-5/cpu.max max\n",
		 latency_shares_to_weight((uint32_t)mapped_shares(&f->la.lc, -5)));
	assert_string_equal(oplog, want);
	/* There already: nothing written. */
	oplog[0] = '\0';
	assert_int_equal(latact_class_ensure(&f->la, -5, ret, sizeof(ret)), 0);
	assert_string_equal(oplog, "");
	/* Removed behind rqbalance's back: made anew. */
	snprintf(want, sizeof(want), "%s/rqbalance-lat-5", f->cg);
	assert_int_equal(tree_rmdir(want), 0);
	oplog[0] = '\0';
	assert_int_equal(latact_class_ensure(&f->la, -5, ret, sizeof(ret)), 0);
	assert_true(logged("mkdir /cg/rqbalance-lat-5"));
	assert_non_null(file(f->cg, "rqbalance-lat-5/cpu.weight"));
	/* A positive value's class, under a parent. */
	snprintf(f->la.cls.root, sizeof(f->la.cls.root), "rqb");
	snprintf(want, sizeof(want), "%s/rqb", f->cg);
	assert_int_equal(tree_mkdir(want), 0);
	assert_int_equal(latact_class_ensure(&f->la, 7, ret, sizeof(ret)), 0);
	assert_string_equal(ret, "/rqb/rqbalance-lat7");
	assert_non_null(file(f->cg, "rqb/rqbalance-lat7/cpu.max"));
}

/* A class the kernel refuses is not counted as made. */
KIT_TEST_FX(class_refused, setup, teardown)
{
	struct fix *f = *state;
	char ret[LAT_PATH_MAX];

	latact_classes_find(&f->la);
	snprintf(f->la.cls.mount, sizeof(f->la.cls.mount), "%s/none", f->dir);
	assert_int_equal(latact_class_ensure(&f->la, -3, ret, sizeof(ret)), -ENOENT);
	assert_false(f->la.cls.made[-3 - LAT_MIN]);
}

/*
 * v1: shares for the weight, no quota, and each class gets a 39th (one part for each value
 * but 0) of the RT runtime the groups beside them leave free (a group named like a class
 * but not made by rqbalance counts as one of those): a class made later takes nothing
 * from an older one.
 */
KIT_TEST_FX(v1_classes_share_rt, setup, teardown)
{
	struct fix *f = *state;
	char ret[LAT_PATH_MAX], path[PATH_MAX], want[64];

	use_v1(f, true);
	snprintf(path, sizeof(path), "%s/other", f->v1);
	assert_int_equal(tree_mkdir(path), 0);
	snprintf(path, sizeof(path), "%s/other/cpu.rt_runtime_us", f->v1);
	kit_put(NULL, path, "100000\n");
	snprintf(path, sizeof(path), "%s/rqbalance-lat99", f->v1);
	assert_int_equal(tree_mkdir(path), 0);
	snprintf(path, sizeof(path), "%s/rqbalance-lat99/cpu.rt_runtime_us", f->v1);
	kit_put(NULL, path, "50000\n");
	latact_classes_find(&f->la);
	assert_true(f->la.cls.rt);
	oplog[0] = '\0';
	assert_int_equal(latact_class_ensure(&f->la, 3, ret, sizeof(ret)), 0);
	snprintf(want, sizeof(want), "write /cpu/rqbalance-lat3/cpu.shares %" PRIu64,
		 mapped_shares(&f->la.lc, 3));
	assert_true(logged(want));
	assert_true(logged("write /cpu/rqbalance-lat3/cpu.cfs_quota_us -1"));
	assert_string_equal(file(f->v1, "rqbalance-lat3/cpu.rt_runtime_us"), "20512");
	oplog[0] = '\0';
	assert_int_equal(latact_class_ensure(&f->la, -5, ret, sizeof(ret)), 0);
	assert_string_equal(file(f->v1, "rqbalance-lat3/cpu.rt_runtime_us"), "20512");
	assert_string_equal(file(f->v1, "rqbalance-lat-5/cpu.rt_runtime_us"), "20512");
	/*
	 * A class that holds more (an older rqbalance's, found again) is lowered before a
	 * new one is raised, though it comes later in order: the kernel refuses children
	 * over their parent.
	 */
	snprintf(path, sizeof(path), "%s/rqbalance-lat3/cpu.rt_runtime_us", f->v1);
	kit_put(NULL, path, "400000\n");
	oplog[0] = '\0';
	assert_int_equal(latact_class_ensure(&f->la, -7, ret, sizeof(ret)), 0);
	assert_string_equal(file(f->v1, "rqbalance-lat3/cpu.rt_runtime_us"), "20512");
	assert_string_equal(file(f->v1, "rqbalance-lat-7/cpu.rt_runtime_us"), "20512");
	assert_non_null(strstr(oplog, "write /cpu/rqbalance-lat-7/cpu.rt_runtime_us"));
	assert_true(strstr(oplog, "write /cpu/rqbalance-lat3/cpu.rt_runtime_us") <
		    strstr(oplog, "write /cpu/rqbalance-lat-7/cpu.rt_runtime_us 20512"));
}

/* A parent rqbalance makes on v1 takes half the runtime its top has free, for its classes. */
KIT_TEST_FX(v1_parent_takes_half, setup, teardown)
{
	struct fix *f = *state;
	char ret[LAT_PATH_MAX];

	use_v1(f, true);
	snprintf(f->la.cls.root, sizeof(f->la.cls.root), "rqb");
	latact_classes_find(&f->la);
	assert_true(f->la.cls.made_root);
	assert_string_equal(file(f->v1, "rqb/cpu.rt_runtime_us"), "475000");
	assert_int_equal(latact_class_ensure(&f->la, -1, ret, sizeof(ret)), 0);
	assert_string_equal(ret, "/rqb/rqbalance-lat-1");
	assert_string_equal(file(f->v1, "rqb/rqbalance-lat-1/cpu.rt_runtime_us"), "12179");
}

/* The parent's weight, which bounds a raise's class (latency_class_gains): read at start and reload. */
KIT_TEST_FX(parent_weight_read, setup, teardown)
{
	struct fix *f = *state;
	char path[PATH_MAX];

	use_v1(f, false);
	latact_classes_find(&f->la);
	assert_int_equal(f->la.cls.root_shares, 0);
	snprintf(f->la.cls.root, sizeof(f->la.cls.root), "rqb");
	latact_classes_find(&f->la);
	assert_int_equal(f->la.cls.root_shares, 1024);
	snprintf(path, sizeof(path), "%s/rqb/cpu.shares", f->v1);
	kit_put(NULL, path, "100\n");
	latact_classes_reweigh(&f->la);
	assert_int_equal(f->la.cls.root_shares, 100);
}

KIT_TEST_FX(reweigh_restores_weight, setup, teardown)
{
	struct fix *f = *state;
	char ret[LAT_PATH_MAX], path[PATH_MAX], want[32];

	latact_classes_find(&f->la);
	assert_int_equal(latact_class_ensure(&f->la, 10, ret, sizeof(ret)), 0);
	snprintf(path, sizeof(path), "%s/rqbalance-lat10/cpu.weight", f->cg);
	kit_put(NULL, path, "1");
	latact_classes_reweigh(&f->la);
	snprintf(want, sizeof(want), "%u",
		 latency_shares_to_weight((uint32_t)mapped_shares(&f->la.lc, 10)));
	assert_string_equal(kit_slurp(NULL, path), want);
}

/* ---- finding them again, and taking them away ---- */

KIT_TEST_FX(stale_classes_found, setup, teardown)
{
	struct fix *f = *state;
	static const char *const dirs[] = { "rqbalance-lat-3", "rqbalance-lat5", "rqbalance-latx",
					    "rqbalance-lat99", "other" };
	char path[PATH_MAX];

	latact_classes_find(&f->la);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", f->cg, dirs[i]);
		assert_int_equal(mkdir(path, 0755), 0);
	}
	latact_classes_stale(&f->la);
	for (int v = LAT_MIN; v <= LAT_MAX; v++)
		assert_int_equal(f->la.cls.made[v - LAT_MIN], v == -3 || v == 5);
}

/*
 * Removal: a task still in a class is moved to the top, one that /proc says has left
 * it is not; the classes go, and the parent rqbalance made.
 */
KIT_TEST_FX(remove_evicts_and_removes, setup, teardown)
{
	struct fix *f = *state;
	char ret[LAT_PATH_MAX], path[PATH_MAX];
	struct stat st;

	snprintf(f->la.cls.root, sizeof(f->la.cls.root), "rqb");
	latact_classes_find(&f->la);
	assert_int_equal(latact_class_ensure(&f->la, -5, ret, sizeof(ret)), 0);
	assert_int_equal(latact_class_ensure(&f->la, 5, ret, sizeof(ret)), 0);
	snprintf(path, sizeof(path), "%s/rqb/rqbalance-lat-5/cgroup.procs", f->cg);
	kit_put(NULL, path, "501\n502\n");
	proc_cgroup(f, 501, "0::/rqb/rqbalance-lat-5\n");
	proc_cgroup(f, 502, "0::/elsewhere\n");
	oplog[0] = '\0';
	latact_classes_remove(&f->la);
	assert_string_equal(oplog, "attach /cg/cgroup.procs 501\n"
				   "rmdir /cg/rqb/rqbalance-lat-5\n"
				   "rmdir /cg/rqb/rqbalance-lat5\n"
				   "rmdir /cg/rqb\n");
	for (int v = LAT_MIN; v <= LAT_MAX; v++)
		assert_false(f->la.cls.made[v - LAT_MIN]);
	snprintf(path, sizeof(path), "%s/rqb", f->cg);
	assert_int_equal(stat(path, &st), -1);
	/* Off: nothing to remove. */
	f->la.cls.on = false;
	f->la.cls.made[0] = true;
	oplog[0] = '\0';
	latact_classes_remove(&f->la);
	assert_string_equal(oplog, "");
}

/* A parent found there is the admin's: it stays. */
KIT_TEST_FX(remove_keeps_found_parent, setup, teardown)
{
	struct fix *f = *state;
	char ret[LAT_PATH_MAX], path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/rqb", f->cg);
	assert_int_equal(tree_mkdir(path), 0);
	snprintf(f->la.cls.root, sizeof(f->la.cls.root), "rqb");
	latact_classes_find(&f->la);
	assert_int_equal(latact_class_ensure(&f->la, 2, ret, sizeof(ret)), 0);
	oplog[0] = '\0';
	latact_classes_remove(&f->la);
	assert_string_equal(oplog, "rmdir /cg/rqb/rqbalance-lat2\n");
}

/* ---- a task's cgroup, and moves ---- */

KIT_TEST_FX(task_cgroup_read, setup, teardown)
{
	struct fix *f = *state;
	char cg[LAT_PATH_MAX] = "x";

	proc_cgroup(f, 600, "0::/app\n");
	/* Without classes, none is read. */
	assert_int_equal(latact_read_task_cgroup(&f->la, 600, cg, sizeof(cg)), 0);
	assert_string_equal(cg, "");
	latact_classes_find(&f->la);
	assert_int_equal(latact_read_task_cgroup(&f->la, 600, cg, sizeof(cg)), 0);
	assert_string_equal(cg, "/app");
	/* A task gone, or a path cut short: an error and no path. */
	assert_true(latact_read_task_cgroup(&f->la, 601, cg, sizeof(cg)) < 0);
	assert_string_equal(cg, "");
	strcpy(cg, "x");
	assert_true(latact_read_task_cgroup(&f->la, 600, cg, 3) < 0);
	assert_string_equal(cg, "");
}

KIT_TEST_FX(moves_write_the_groups_file, setup, teardown)
{
	struct fix *f = *state;
	struct act_task t = { .tid = 700, .start_time = 1, .pidfd = -1 };

	latact_classes_find(&f->la);
	oplog[0] = '\0';
	assert_int_equal(latact_cls_write(&f->la, "/app", &t), 0);
	assert_int_equal(latact_cls_write(&f->la, "/", &t), 0);
	assert_int_equal(latact_cls_attach(&f->la, "//app/x", &t), 0);
	assert_string_equal(oplog, "attach /cg/app/cgroup.procs 700\n"
				   "attach /cg/cgroup.procs 700\n"
				   "attach /cg/app/x/cgroup.procs 700\n");
	/* v1 moves a task through tasks (found afresh, as latact_init finds it once). */
	use_v1(f, false);
	memset(&f->la.cls, 0, sizeof(f->la.cls));
	latact_classes_find(&f->la);
	oplog[0] = '\0';
	assert_int_equal(latact_cls_write(&f->la, "/app", &t), 0);
	assert_string_equal(oplog, "attach /cpu/app/tasks 700\n");
	/* Written after the task let its number go: -ESRCH to the caller, -ESTALE below. */
	attach_ret = -ESTALE;
	assert_int_equal(latact_cls_write(&f->la, "/app", &t), -ESTALE);
	assert_int_equal(latact_cls_attach(&f->la, "/app", &t), -ESRCH);
}

KIT_TEST_FX(movable_cgroups, setup, teardown)
{
	struct fix *f = *state;

	assert_true(latact_cls_movable(&f->la, "/"));
	assert_true(latact_cls_movable(&f->la, "/rqbalance-lat-5"));
	assert_true(latact_cls_movable(&f->la, "/rqbalance-lat19"));
	assert_false(latact_cls_movable(&f->la, "/rqbalance-lat99"));
	assert_false(latact_cls_movable(&f->la, "/app"));
	assert_false(latact_cls_movable(&f->la, "/app/rqbalance-lat-5"));
	snprintf(f->la.cls.root, sizeof(f->la.cls.root), "rqb");
	assert_true(latact_cls_movable(&f->la, "/rqb/rqbalance-lat3"));
	assert_false(latact_cls_movable(&f->la, "/rqbalance-lat3"));
	assert_false(latact_cls_movable(&f->la, "/rqb"));
}
