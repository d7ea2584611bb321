/*
 * Who is in a cgroup and below, and a process's cgroup: cgm_* and procfs_cgroup on a
 * fake cgroup tree and a fake /proc made in a temporary directory.
 */
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rqbalance.h"
#include "sample/procfs.h"
#include "taskev/cgm.h"
#include "taskev/ident.h"
#include "kit.h"

static char top[64];

static void proc(int pid, int ppid, int ruid, int euid)
{
	char rel[64], text[256];

	snprintf(rel, sizeof(rel), "proc/%d/status", pid);
	snprintf(text, sizeof(text), "Name:\tx\nUmask:\t0022\nState:\tS\nTgid:\t%d\nPid:\t%d\n"
		 "PPid:\t%d\nTracerPid:\t0\nUid:\t%d\t%d\t%d\t%d\n", pid, pid, ppid, ruid, euid,
		 euid, euid);
	kit_put(top, rel, text);
}

static int setup(void **state)
{
	kit_tmp(top, sizeof(top), "test-cgm");
	kit_put(top, "cg/user.slice/a.scope/cgroup.procs", "101\n102\n999\n");
	kit_put(top, "cg/user.slice/a.scope/sub/cgroup.procs", "103\n");
	kit_put(top, "cg/user.slice/empty.scope/cgroup.procs", "");
	proc(101, 1, 1000, 1000);
	proc(102, 101, 1000, 0);
	proc(103, 102, 1001, 1001);
	/* 999 is listed but gone: it exited while being read */
	kit_put(top, "proc/101/cgroup", "0::/user.slice/a.scope\n");
	kit_put(top, "proc/102/cgroup", "12:cpu,cpuacct:/system.slice/b.service\n1:name=systemd:/x\n"
			       "0::/user.slice/a.scope\n");
	/*
	 * A hybrid host's file as Debian 11's systemd 247 writes it for a service with
	 * CPUAccounting: the v1 cpu hierarchy holds the controller, the unified one only
	 * systemd's tracking, and the two name different groups here.
	 */
	kit_put(top, "proc/104/cgroup", "13:rdma:/\n12:pids:/system.slice/db.service\n"
			       "11:freezer:/\n10:cpu,cpuacct:/system.slice/db.service\n"
			       "9:memory:/system.slice/db.service\n8:net_cls,net_prio:/\n"
			       "7:cpuset:/\n6:blkio:/system.slice\n5:devices:/system.slice/db.service\n"
			       "4:perf_event:/\n3:hugetlb:/\n2:misc:/\n"
			       "1:name=systemd:/system.slice/db.service/worker\n"
			       "0::/system.slice/db.service/worker\n");
	kit_put(top, "proc/104/status", "Name:\tdb\nUid:\t0\t0\t0\t0\n");
	kit_put(top, "proc/104/comm", "db\n");
	return 0;
}

static int teardown(void **state)
{
	assert_int_equal(kit_rm(top), 0);
	return 0;
}

KIT_TEST(members_below)
{
	char mount[PATH_MAX], procs[PATH_MAX];
	struct cgm_proc *m = NULL;
	size_t n = 0;
	bool trunc = true;

	snprintf(mount, sizeof(mount), "%s/cg", top);
	snprintf(procs, sizeof(procs), "%s/proc", top);
	assert_int_equal(cgm_read(mount, "/user.slice/a.scope", procs, 16, &m, &n, &trunc), 0);
	assert_int_equal(n, 3);
	assert_false(trunc);
	assert_int_equal(m[0].pid, 101);
	assert_int_equal(m[0].ppid, 1);
	assert_int_equal(m[1].pid, 102);
	assert_int_equal(m[1].ruid, 1000);
	assert_int_equal(m[1].euid, 0);
	assert_int_equal(m[2].pid, 103);
	assert_int_equal(m[2].ppid, 102);
	assert_int_equal(m[2].ruid, 1001);
	free(m);
	/* More than max: cut, and said so. */
	assert_int_equal(cgm_read(mount, "/user.slice/a.scope", procs, 2, &m, &n, &trunc), 0);
	assert_int_equal(n, 2);
	assert_true(trunc);
	free(m);
	m = NULL;
	assert_int_equal(cgm_read(mount, "/user.slice/empty.scope", procs, 16, &m, &n, &trunc), 0);
	assert_int_equal(n, 0);
	assert_false(trunc);
	free(m);
	assert_int_equal(cgm_read(mount, "/user.slice/none.scope", procs, 16, &m, &n, &trunc),
			 -ENOENT);
}

KIT_TEST(task_cgroup)
{
	char procs[PATH_MAX], cg[256] = "untouched";

	snprintf(procs, sizeof(procs), "%s/proc", top);
	assert_int_equal(procfs_cgroup(procs, 0, 101, cg, sizeof(cg)), 0);
	assert_string_equal(cg, "/user.slice/a.scope");
	/* Where a v1 hierarchy holds cpu, its line, wherever "0::" is. */
	assert_int_equal(procfs_cgroup(procs, 0, 102, cg, sizeof(cg)), 0);
	assert_string_equal(cg, "/system.slice/b.service");
	assert_int_equal(procfs_cgroup(procs, 0, 4242, cg, sizeof(cg)), -ESRCH);
	assert_int_equal(procfs_cgroup(procs, 0, 101, cg, 8), -ENAMETOOLONG);
	assert_string_equal(cg, "/system.slice/b.service");
}

/*
 * One path per task for every purpose: on a hybrid host the rules' reading (ident)
 * and the samplers' (exclusion) and the actuators' (procfs_cgroup) name the same
 * group, the cpu controller's. Each once had a parser of its own, and a rule's
 * "cgroup =" and "[exclude] cgroups" were matched against different paths.
 */
KIT_TEST(hybrid_one_path)
{
	static struct rule_set rules;
	struct ident_buf buf;
	struct proc_ident id;
	char procs[PATH_MAX], cg[256];

	kit_rules(&rules, 1);
	rules.r[0].cgroup = "/system.slice/db.service";
	snprintf(procs, sizeof(procs), "%s/proc", top);
	assert_int_equal(procfs_cgroup(procs, 0, 104, cg, sizeof(cg)), 0);
	assert_string_equal(cg, "/system.slice/db.service");
	assert_int_equal(ident_read_known(procs, 104, NULL, &rules, NULL, &buf, &id), 0);
	assert_string_equal(id.cgroup, cg);
}

KIT_GROUP("tests", setup, teardown);
