/*
 * Unit tests for the /proc sampler: its three parsers on fixed text, then the real
 * sampler on the real /proc, watching only children this test forks and kills.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "kit.h"

#include "rqbalance.h"
#include "proc/parse.h"
#include "proc/procfs.h"
#include "sample/sampler.h"
#include "util/log.h"
#include "util/util.h"
#include "testonly.h"

/* ---- parse_stat ---- */

/*
 * Builds a /proc/TID/stat line: fields 4..last from f[] ("0" where NULL), like the
 * kernel's, after "pid (comm) state".
 */
static void stat_line(char *buf, size_t len, const char *comm, char state, const char *const *f,
		      int last)
{
	size_t n = (size_t)snprintf(buf, len, "4242 (%s) %c", comm, state);

	for (int i = 4; i <= last && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, " %s", f[i] ? f[i] : "0");
	if (n < len)
		snprintf(buf + n, len - n, "\n");
}

/* A sentinel to check that a failed parse leaves *ret alone. */
static struct parse_stat_line stat_sentinel(void)
{
	struct parse_stat_line l;

	memset(&l, 0x5a, sizeof(l));
	return l;
}

KIT_TEST(test_stat_comm_with_paren_and_space)
{
	const char *f[53] = { [4] = "1", [5] = "4242", [6] = "4242", [8] = "-1", [9] = "4194560",
			      [10] = "120", [14] = "57", [15] = "13", [18] = "20", [20] = "1",
			      [22] = "987654", [23] = "10000000", [24] = "200",
			      [25] = "18446744073709551615", [38] = "17", [39] = "1" };
	struct parse_stat_line l;
	char buf[1024];

	(void)state;
	stat_line(buf, sizeof(buf), "(a) b)", 'R', f, 52);
	assert_int_equal(parse_stat(buf, &l), 0);
	assert_string_equal(l.comm, "(a) b)");
	assert_int_equal(l.state, 'R');
	assert_int_equal(l.ppid, 1);
	assert_int_equal(l.flags, 4194560);
	assert_int_equal(l.utime, 57);
	assert_int_equal(l.stime, 13);
	assert_int_equal(l.start_time, 987654);
	assert_int_equal(l.cpu, 1);
}

KIT_TEST(test_stat_long_comm_is_cut)
{
	const char *f[53] = { [22] = "5", [39] = "0" };
	struct parse_stat_line l;
	char buf[1024];

	(void)state;
	/* The kernel caps comm at 15 bytes; a longer one must not overflow ours. */
	stat_line(buf, sizeof(buf), "0123456789abcdefghij", 'S', f, 52);
	assert_int_equal(parse_stat(buf, &l), 0);
	assert_string_equal(l.comm, "0123456789abcde");
	assert_int_equal(l.state, 'S');
	assert_int_equal(l.start_time, 5);
}

KIT_TEST(test_stat_negative_fields)
{
	/* tpgid -1, an RT priority of -51, nice -20, exit_signal -1: none shift the others. */
	const char *f[53] = { [4] = "1", [8] = "-1", [9] = "2097216", [14] = "9", [15] = "8",
			      [16] = "-7", [17] = "-6", [18] = "-51", [19] = "-20", [20] = "3",
			      [22] = "31337", [38] = "-1", [39] = "1", [40] = "50", [41] = "1" };
	struct parse_stat_line l;
	char buf[1024];

	(void)state;
	stat_line(buf, sizeof(buf), "kworker/1:1-ev", 'I', f, 52);
	assert_int_equal(parse_stat(buf, &l), 0);
	assert_int_equal(l.state, 'I');
	assert_int_equal(l.flags, 2097216);
	assert_true(l.flags & 0x00200000u); /* PF_KTHREAD */
	assert_int_equal(l.utime, 9);
	assert_int_equal(l.stime, 8);
	assert_int_equal(l.start_time, 31337);
	assert_int_equal(l.cpu, 1);
	assert_string_equal(l.comm, "kworker/1:1-ev");
}

KIT_TEST(test_stat_truncated)
{
	const char *f[53] = { [22] = "123", [39] = "1" };
	struct parse_stat_line l, sentinel = stat_sentinel();
	char buf[1024], cut[1024];
	const char *bad[] = { "", "4242", "4242 (x", "4242 x) R 1", "4242 )x( R 1 2 3",
			      "4242 (x)", "4242 (x) ", "4242 (x) R", "4242 (x)R 1 2",
			      "4242 (x) RR 1 2" };
	size_t field39;

	(void)state;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		l = sentinel;
		assert_int_equal(parse_stat(bad[i], &l), -EINVAL);
		assert_memory_equal(&l, &sentinel, sizeof(l));
	}
	/* Cut anywhere before field 39 starts: every such prefix is -EINVAL. */
	stat_line(buf, sizeof(buf), "a b", 'R', f, 39);
	field39 = strlen(buf) - 2; /* "...17 1\n": the '1' of field 39 */
	assert_int_equal(buf[field39], '1');
	for (size_t k = 0; k < field39; k++) {
		memcpy(cut, buf, k);
		cut[k] = '\0';
		l = sentinel;
		assert_int_equal(parse_stat(cut, &l), -EINVAL);
		assert_memory_equal(&l, &sentinel, sizeof(l));
	}
	/* Exactly 39 fields is enough. */
	assert_int_equal(parse_stat(buf, &l), 0);
	assert_int_equal(l.start_time, 123);
	assert_int_equal(l.cpu, 1);
	/* A non-number among the fields. */
	f[30] = "x";
	stat_line(buf, sizeof(buf), "a", 'R', f, 52);
	assert_int_equal(parse_stat(buf, &l), -EINVAL);
	f[30] = "-";
	stat_line(buf, sizeof(buf), "a", 'R', f, 52);
	assert_int_equal(parse_stat(buf, &l), -EINVAL);
}

KIT_TEST(test_stat_cpu_range)
{
	const char *f[53] = { [22] = "77" };
	struct parse_stat_line l, sentinel = stat_sentinel();
	char buf[1024];

	(void)state;
	f[39] = "1023";
	stat_line(buf, sizeof(buf), "x", 'R', f, 52);
	assert_int_equal(parse_stat(buf, &l), 0);
	assert_int_equal(l.cpu, 1023);

	const char *bad[] = { "1024", "4096", "2147483648", "99999999999999999999999" };

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		f[39] = bad[i];
		stat_line(buf, sizeof(buf), "x", 'R', f, 52);
		l = sentinel;
		assert_int_equal(parse_stat(buf, &l), -EINVAL);
		assert_memory_equal(&l, &sentinel, sizeof(l));
	}
	/* A start time past 2^64 is not a start time. */
	f[39] = "0";
	f[22] = "18446744073709551616";
	stat_line(buf, sizeof(buf), "x", 'R', f, 52);
	assert_int_equal(parse_stat(buf, &l), -EINVAL);
}

/* Reads a whole small file; returns its length. */
static size_t slurp(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	return (size_t)n;
}

/* Field (>= 3, as proc(5) counts) of a stat line, found independently of parse_stat. */
static uint64_t buf_field(const char *buf, int field)
{
	const char *p = strrchr(buf, ')');

	assert_non_null(p);
	p += 2; /* field 3, the state */
	for (int i = 3; i < field; i++) {
		p = strchr(p, ' ');
		assert_non_null(p);
		p++;
	}
	return strtoull(p, NULL, 10);
}

static uint64_t stat_field(const char *path, int field)
{
	char buf[2048];

	slurp(path, buf, sizeof(buf));
	return buf_field(buf, field);
}

static char stat_state(pid_t pid)
{
	char path[64], buf[2048], *p;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	slurp(path, buf, sizeof(buf));
	p = strrchr(buf, ')');
	assert_non_null(p);
	return p[2];
}

KIT_TEST(test_stat_real_self)
{
	char buf[2048], comm[64];
	struct parse_stat_line l;
	size_t n;

	(void)state;
	slurp("/proc/self/stat", buf, sizeof(buf));
	assert_int_equal(parse_stat(buf, &l), 0);
	assert_int_equal(l.state, 'R');
	/* From the same read: a second read may find this process on another CPU. */
	assert_int_equal(l.start_time, buf_field(buf, 22));
	assert_int_equal(l.cpu, (int)buf_field(buf, 39));
	assert_true(l.cpu >= 0 && l.cpu < RQB_MAX_CPUS);
	assert_false(l.flags & 0x00200000u);
	n = slurp("/proc/self/comm", comm, sizeof(comm));
	if (n && comm[n - 1] == '\n')
		comm[n - 1] = '\0';
	assert_string_equal(l.comm, comm);
}

/* ---- parse_cpustat ---- */

static const char cpustat_4[] =
	"cpu  10132153 290696 3084719 46828483 16683 0 25195 0 175628 0\n"
	"cpu0 1393280 32966 572056 13343292 6130 0 17875 0 23933 0\n"
	"cpu1 1335 11 2222 4444 55 66 77 88 99 10\n"
	"cpu2 100 200 300 400 500 600 700 800 0 0\n"
	"cpu3 1 2 3 4 5 6 7 8 9 10\n"
	"intr 1462898 0 0 0 9 0 0 0 0 0 0\n"
	"ctxt 22958112\n"
	"btime 1700000000\n"
	"processes 23456\n"
	"procs_running 3\n"
	"procs_blocked 1\n"
	"softirq 100 1 2 3 4 5 6 7 8 9 10\n";

/* busy = user+nice+system+irq+softirq+steal; total adds idle and iowait, not guest. */
#define BUSY(u, ni, sy, id, io, irq, si, st) ((uint64_t)(u) + (ni) + (sy) + (irq) + (si) + (st))
#define TOTAL(u, ni, sy, id, io, irq, si, st) (BUSY(u, ni, sy, id, io, irq, si, st) + (id) + (io))

KIT_TEST(test_cpustat_multi)
{
	uint64_t busy[4], total[4];
	unsigned running = 0;

	(void)state;
	assert_int_equal(parse_cpustat(cpustat_4, 4, busy, total, &running), 0);
	assert_int_equal(running, 3);
	assert_int_equal(busy[0], BUSY(1393280, 32966, 572056, 13343292, 6130, 0, 17875, 0));
	assert_int_equal(total[0], TOTAL(1393280, 32966, 572056, 13343292, 6130, 0, 17875, 0));
	assert_int_equal(busy[1], BUSY(1335, 11, 2222, 4444, 55, 66, 77, 88));
	assert_int_equal(total[1], TOTAL(1335, 11, 2222, 4444, 55, 66, 77, 88));
	assert_int_equal(busy[2], BUSY(100, 200, 300, 400, 500, 600, 700, 800));
	assert_int_equal(total[2], TOTAL(100, 200, 300, 400, 500, 600, 700, 800));
	assert_int_equal(busy[3], 1 + 2 + 3 + 6 + 7 + 8);
	assert_int_equal(total[3], 1 + 2 + 3 + 6 + 7 + 8 + 4 + 5);
}

KIT_TEST(test_cpustat_fewer_slots)
{
	uint64_t busy[4] = { 9, 9, 7, 7 }, total[4] = { 9, 9, 7, 7 };
	unsigned running = 0;

	(void)state;
	/* n = 2: CPUs 2 and 3 are listed but must not be written past the arrays. */
	assert_int_equal(parse_cpustat(cpustat_4, 2, busy, total, &running), 0);
	assert_int_equal(busy[1], BUSY(1335, 11, 2222, 4444, 55, 66, 77, 88));
	assert_int_equal(busy[2], 7);
	assert_int_equal(busy[3], 7);
	assert_int_equal(total[2], 7);
	assert_int_equal(total[3], 7);
}

KIT_TEST(test_cpustat_unlisted_stay_zero)
{
	/* CPU 1 offline: not listed, so it reads 0 (stale values are cleared). */
	static const char text[] = "cpu  5000 0 5000 90000 0 0 0 0 0 0\n"
				   "cpu0 2000 0 2000 40000 0 0 0 0 0 0\n"
				   "cpu2 3000 0 3000 50000 0 0 0 0 0 0\n"
				   "procs_running 1\n";
	uint64_t busy[4] = { 1, 1, 1, 1 }, total[4] = { 1, 1, 1, 1 };
	unsigned running = 0;

	(void)state;
	assert_int_equal(parse_cpustat(text, 4, busy, total, &running), 0);
	assert_int_equal(running, 1);
	assert_int_equal(busy[0], 4000);
	assert_int_equal(total[0], 44000);
	assert_int_equal(busy[1], 0);
	assert_int_equal(total[1], 0);
	assert_int_equal(busy[2], 6000);
	assert_int_equal(busy[3], 0);
	assert_int_equal(total[3], 0);
}

KIT_TEST(test_cpustat_aggregate_is_not_a_cpu)
{
	/*
	 * Just after boot the aggregate "cpu  " line holds small numbers. Its first
	 * number is user time, not a CPU number: CPU 3 is not listed and must stay 0.
	 */
	static const char text[] = "cpu  3 0 12 400 1 0 2 0 0 0\n"
				   "cpu0 1 0 6 200 1 0 1 0 0 0\n"
				   "cpu1 2 0 6 200 0 0 1 0 0 0\n"
				   "procs_running 2\n";
	uint64_t busy[8], total[8];
	unsigned running = 0;

	(void)state;
	assert_int_equal(parse_cpustat(text, 8, busy, total, &running), 0);
	assert_int_equal(busy[0], 8);
	assert_int_equal(total[0], 209);
	assert_int_equal(busy[1], 9);
	assert_int_equal(total[1], 209);
	for (int c = 2; c < 8; c++) {
		assert_int_equal(busy[c], 0);
		assert_int_equal(total[c], 0);
	}
}

KIT_TEST(test_cpustat_no_procs_running)
{
	static const char text[] = "cpu  1 2 3 4 5 6 7 8 9 10\n"
				   "cpu0 1 2 3 4 5 6 7 8 9 10\n"
				   "procs_blocked 0\n";
	uint64_t busy[2], total[2];
	unsigned running = 12345;

	(void)state;
	assert_int_equal(parse_cpustat(text, 2, busy, total, &running), -EINVAL);
	assert_int_equal(running, 12345);
	assert_int_equal(parse_cpustat("", 2, busy, total, &running), -EINVAL);
	assert_int_equal(running, 12345);
}

KIT_TEST(test_cpustat_real)
{
	static uint64_t busy[RQB_MAX_CPUS], total[RQB_MAX_CPUS];
	static char buf[65536];
	unsigned running = 0;

	(void)state;
	slurp("/proc/stat", buf, sizeof(buf));
	assert_int_equal(parse_cpustat(buf, RQB_MAX_CPUS, busy, total, &running), 0);
	assert_true(running >= 1); /* us */
	assert_true(total[0] > 0);
	assert_true(total[0] >= busy[0]);
}

/* ---- parse_status, procfs_status ---- */

KIT_TEST(test_status)
{
	const unsigned all = PARSE_STATUS_TGID | PARSE_STATUS_PPID | PARSE_STATUS_RUID |
			     PARSE_STATUS_EUID;
	struct parse_status s = { 0 };

	(void)state;
	assert_int_equal(parse_status("Name:\tx\nUmask:\t0022\nTgid:\t4242\nPid:\t4243\n"
				      "PPid:\t0\nUid:\t1000\t0\t0\t0\n", &s), all);
	assert_int_equal(s.tgid, 4242);
	assert_int_equal(s.ppid, 0);
	assert_int_equal(s.ruid, 1000);
	assert_int_equal(s.euid, 0);
	/* Each id on its own: a key inside another line's text is not its line. */
	s = (struct parse_status){ .tgid = 1, .ppid = 1, .ruid = 1, .euid = 1 };
	assert_int_equal(parse_status("Name:\tTgid: 5\nTgid:\t\nPPid:\t-1\n", &s), 0);
	assert_int_equal(parse_status("Tgid:\t0\nUid:\tab\n", &s), 0);
	assert_int_equal(parse_status("Tgid:\t99999999999\nUid:\t4294967295\t0\n", &s), 0);
	assert_int_equal(parse_status("", &s), 0);
	assert_int_equal(s.tgid, 1);
	assert_int_equal(s.ruid, 1);
	/* The real uid without the effective one; the first Uid line counts. */
	assert_int_equal(parse_status("Tgid:\t7\nUid:\t5\nUid:\t6\t6\n", &s),
			 PARSE_STATUS_TGID | PARSE_STATUS_RUID);
	assert_int_equal(s.tgid, 7);
	assert_int_equal(s.ruid, 5);
	assert_int_equal(s.euid, 1);
	/* This process, read from the real /proc. */
	assert_int_equal(procfs_status("", 0, getpid(), &s), all);
	assert_int_equal(s.tgid, getpid());
	assert_int_equal(s.ppid, getppid());
	assert_int_equal(s.ruid, getuid());
	assert_int_equal(s.euid, geteuid());
	assert_int_equal(procfs_status("/nonexistent", 0, getpid(), &s), -ESRCH);
}

/* The thread iterator and one thread's facts, from this process's real /proc. */
KIT_TEST(test_threads)
{
	struct procfs_thread th;
	struct procfs_threads it;
	uint64_t start;
	pid_t tid;
	int n = 0;

	assert_int_equal(procfs_threads_open("", getpid(), &it), 0);
	while ((tid = procfs_threads_next(&it)) > 0) {
		assert_int_equal(tid, getpid()); /* one thread: this one */
		n++;
	}
	procfs_threads_close(&it);
	assert_int_equal(n, 1);
	assert_int_equal(procfs_threads_open("/nonexistent", getpid(), &it), -ESRCH);
	assert_int_equal(procfs_thread("", getpid(), getpid(), NULL, 0, &th), 0);
	assert_int_equal(procfs_start_time("", getpid(), &start), 0);
	assert_true(th.start_time == start);
	assert_false(th.kthread);
	assert_int_equal(th.ruid, getuid());
	assert_int_equal(th.euid, geteuid());
	/* A thread of another process is not found under this one's task directory. */
	assert_int_equal(procfs_thread("", getpid(), getppid(), NULL, 0, &th), -ESRCH);
}

/* One line's text, for what the ctl peer check reads (Uid, Gid, Cap*, NSpid). */
KIT_TEST(test_status_field)
{
	const char *text = "Name:\tNSpid: 9\nPid:\t12\nPPid:\t1\nNSpid:\t12 3\nCapEff:\t00ff\n";
	char v[16], buf[4096];

	(void)state;
	assert_int_equal(parse_status_field(text, "NSpid", v, sizeof(v)), 0);
	assert_string_equal(v, "12 3");
	assert_int_equal(parse_status_field(text, "Pid", v, sizeof(v)), 0);
	assert_string_equal(v, "12");
	assert_int_equal(parse_status_field(text, "CapEff", v, sizeof(v)), 0);
	assert_string_equal(v, "00ff");
	assert_int_equal(parse_status_field(text, "Uid", v, sizeof(v)), -ENOENT);
	/* A value longer than ret is cut, not overrun. */
	assert_int_equal(parse_status_field("Groups:\t1 2 3 4 5 6 7 8 9 10\n", "Groups", v, 4), 0);
	assert_string_equal(v, "1 2");
	/* This process's own, and its thread's under task/. */
	assert_true(procfs_status_text("", getpid(), getpid(), buf, sizeof(buf)) > 0);
	assert_int_equal(parse_status_field(buf, "Tgid", v, sizeof(v)), 0);
	assert_int_equal(atoi(v), getpid());
	assert_int_equal(procfs_status_text("/nonexistent", 0, getpid(), buf, sizeof(buf)), -ESRCH);
}

/* ---- procfs_pidfd_pid ---- */

/*
 * A pidfd names its process while it runs, and no pid once it has exited and been
 * reaped (even where its number is given to another); an fd that is not a pidfd is
 * none.
 */
KIT_TEST(test_pidfd_pid)
{
	int fds[2], pidfd, status;
	pid_t pid, child;

	pidfd = (int)syscall(SYS_pidfd_open, getpid(), 0);
	if (pidfd < 0)
		skip();
	assert_int_equal(procfs_pidfd_pid("", pidfd, &pid), 0);
	assert_int_equal(pid, getpid());
	close(pidfd);

	child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(0);
	pidfd = (int)syscall(SYS_pidfd_open, child, 0);
	assert_true(pidfd >= 0);
	assert_int_equal(procfs_pidfd_pid("", pidfd, &pid), 0);
	assert_int_equal(pid, child);
	assert_int_equal(waitpid(child, &status, 0), child);
	pid = -7;
	assert_int_equal(procfs_pidfd_pid("", pidfd, &pid), -ESRCH);
	assert_int_equal(pid, -7);
	close(pidfd);

	assert_int_equal(pipe(fds), 0);
	assert_int_equal(procfs_pidfd_pid("", fds[0], &pid), -EINVAL);
	close(fds[0]);
	close(fds[1]);
	assert_int_equal(procfs_pidfd_pid("", -1, &pid), -EINVAL);
}

/* ---- parse_cgroup ---- */

KIT_TEST(test_cgroup_v1)
{
	static const char text[] = "12:cpuset:/wrong-cpuset\n"
				   "5:cpuacct:/wrong-cpuacct\n"
				   "4:cpu,cpuacct:/a/b\n"
				   "3:name=cpu:/wrong-name\n"
				   "1:name=systemd:/init.scope\n"
				   "0::/wrong-unified\n";
	char path[256];

	(void)state;
	assert_int_equal(parse_cgroup(text, path, sizeof(path)), 0);
	assert_string_equal(path, "/a/b");
	/* The controller anywhere in the list; the path may hold ':'; no final newline. */
	assert_int_equal(parse_cgroup("0::/u\n2:cpuacct,cpu:/c:d", path, sizeof(path)), 0);
	assert_string_equal(path, "/c:d");
	/* This machine's layout: cpu alone, after cpuacct. */
	assert_int_equal(parse_cgroup("2:cpuacct:/x\n1:cpu:/\n0::/\n", path, sizeof(path)), 0);
	assert_string_equal(path, "/");
}

KIT_TEST(test_cgroup_v2)
{
	char path[256];

	(void)state;
	assert_int_equal(parse_cgroup("0::/x\n", path, sizeof(path)), 0);
	assert_string_equal(path, "/x");
	assert_int_equal(parse_cgroup("0::/user.slice/a b.scope", path, sizeof(path)), 0);
	assert_string_equal(path, "/user.slice/a b.scope");
}

KIT_TEST(test_cgroup_unified_fallback)
{
	static const char text[] = "3:cpuset:/c\n2:cpuacct:/d\n1:name=systemd:/s\n0::/u\n";
	char path[256];

	(void)state;
	assert_int_equal(parse_cgroup(text, path, sizeof(path)), 0);
	assert_string_equal(path, "/u");
	/* An empty line of either kind gives way to the other. */
	assert_int_equal(parse_cgroup("0::\n7:cpuacct,cpu:/v1", path, sizeof(path)), 0);
	assert_string_equal(path, "/v1");
	assert_int_equal(parse_cgroup("4:cpu,cpuacct:\n0::/v2\n", path, sizeof(path)), 0);
	assert_string_equal(path, "/v2");
}

/* A proc mount's hidepid= and gid= from /proc/PID/mountinfo lines, as 6.18 writes them. */
KIT_TEST(test_mountinfo_proc)
{
	struct parse_procfs v = { .hidepid = 9 };

	(void)state;
	assert_int_equal(parse_mountinfo_proc("22 27 0:21 / /proc rw,relatime shared:13 - proc "
					      "proc rw\n", "/proc", &v), 1);
	assert_int_equal(v.hidepid, 0);
	assert_false(v.gid_set);
	assert_int_equal(parse_mountinfo_proc("85 67 0:40 / /proc rw,relatime - proc proc "
					      "rw,gid=27,hidepid=invisible", "/proc", &v), 1);
	assert_int_equal(v.hidepid, 2);
	assert_true(v.gid_set);
	assert_int_equal(v.gid, 27);
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc rw - proc p rw,hidepid=noaccess\n",
					      "/proc", &v), 1);
	assert_int_equal(v.hidepid, 1);
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc rw - proc p rw,hidepid=ptraceable",
					      "/proc", &v), 1);
	assert_int_equal(v.hidepid, 4);
	/* Before 5.8 the value was a number; one not known counts as invisible. */
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc rw - proc p rw,hidepid=1", "/proc",
					      &v), 1);
	assert_int_equal(v.hidepid, 1);
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc rw - proc p rw,hidepid=7", "/proc",
					      &v), 1);
	assert_int_equal(v.hidepid, 2);
	/* Another mount point, another file system, a mount point with a blank in it. */
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc/sys rw - proc p rw", "/proc", &v),
			 0);
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc rw - tmpfs t rw", "/proc", &v), 0);
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /my\\040proc rw - proc p rw,hidepid=2",
					      "/my proc", &v), 1);
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc rw - proc p rw", "/my proc", &v), 0);
	/* Optional fields before the separator; a NUL escaped into a path is no path. */
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc rw shared:1 master:2 - proc p "
					      "rw,hidepid=2", "/proc", &v), 1);
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc\\000x rw - proc p rw", "/proc", &v),
			 -EINVAL);
	/* Cut short, or garbage. */
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc rw", "/proc", &v), -EINVAL);
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc rw - proc", "/proc", &v), -EINVAL);
	assert_int_equal(parse_mountinfo_proc("", "/proc", &v), -EINVAL);
	/* A line without super options is a proc mount with none. */
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc rw - proc p", "/proc", &v), 1);
	assert_int_equal(v.hidepid, 0);
	assert_int_equal(parse_mountinfo_proc("1 2 0:1 / /proc rw - proc p rw,gid=x", "/proc", &v),
			 1);
	assert_false(v.gid_set);
}

/*
 * A mount found by the kernel's fields (ID, superblock device, root), not by the mount
 * point its owner chose: a blank or a newline in a path is escaped, never a field.
 */
KIT_TEST(test_mountinfo_line)
{
	struct parse_mount m;

	(void)state;
	assert_int_equal(parse_mountinfo("48 46 0:21 / /proc rw,relatime - proc proc rw\n",
					 "/proc", &m), 0);
	assert_int_equal(m.id, 48);
	assert_int_equal(m.major, 0);
	assert_int_equal(m.minor, 21);
	assert_true(m.whole && m.proc && m.at_mnt);
	assert_int_equal(m.procfs.hidepid, 0);
	assert_int_equal(parse_mountinfo("66 48 0:40 / /proc rw shared:2 - proc proc "
					 "rw,hidepid=invisible,subset=pid", NULL, &m), 0);
	assert_int_equal(m.id, 66);
	assert_int_equal(m.minor, 40);
	assert_false(m.at_mnt);
	assert_int_equal(m.procfs.hidepid, 2);
	/* A subdirectory of a proc bound there is not a proc instance's root. */
	assert_int_equal(parse_mountinfo("70 46 0:21 /sys /proc rw - proc proc rw", "/proc", &m), 0);
	assert_false(m.whole);
	/* Another file system at /proc; a path that spells a line of its own. */
	assert_int_equal(parse_mountinfo("71 46 0:41 / /proc rw - tmpfs tmpfs rw", "/proc", &m),
			 0);
	assert_false(m.proc);
	assert_int_equal(parse_mountinfo("72 46 0:42 / /x\\0120:21\\040/\\040/proc rw - tmpfs t rw",
					 "/proc", &m), 0);
	assert_int_equal(m.id, 72);
	assert_int_equal(m.minor, 42);
	assert_false(m.at_mnt);
	/* Not an ID, not a device, cut short. */
	assert_int_equal(parse_mountinfo("x 46 0:21 / /proc rw - proc p rw", "/proc", &m), -EINVAL);
	assert_int_equal(parse_mountinfo("48 46 021 / /proc rw - proc p rw", "/proc", &m), -EINVAL);
	assert_int_equal(parse_mountinfo("48 46 0:21 / /proc rw", "/proc", &m), -EINVAL);
	assert_int_equal(parse_mountinfo("", "/proc", &m), -EINVAL);
}

KIT_TEST(test_cgroup_neither)
{
	char path[16] = "untouched";

	(void)state;
	assert_int_equal(parse_cgroup("3:cpuset:/c\n1:name=systemd:/s\n", path, sizeof(path)),
			 -ENOENT);
	assert_int_equal(parse_cgroup("", path, sizeof(path)), -ENOENT);
	assert_int_equal(parse_cgroup("garbage\n\n", path, sizeof(path)), -ENOENT);
	assert_int_equal(parse_cgroup("2:cpuacct:/d\n10::/x\n", path, sizeof(path)), -ENOENT);
	/* A line without a path names nothing. */
	assert_int_equal(parse_cgroup("1:cpu:\n0::\n", path, sizeof(path)), -ENOENT);
	assert_string_equal(path, "untouched");
	/* A path that does not fit fails and leaves the buffer alone. */
	assert_true(parse_cgroup("0::/a/much/longer/path\n", path, sizeof(path)) < 0);
	assert_string_equal(path, "untouched");
}

/* ---- the real sampler on the real /proc ---- */

#define MAX_KIDS 8

struct fix {
	pid_t kids[MAX_KIDS];       /* children not yet reaped, 0 where free */
	struct topo *topo;
	struct snapshot *snap;
	struct sampler *sm;
	char root[64];              /* a fake /proc tree, "" if none */
};

static volatile unsigned long spin_sink;

/* The child: pins itself (cpu >= 0), says so, then spins or sleeps until killed. */
static void __attribute__((noreturn)) kid_main(pid_t parent, int wfd, int cpu, bool spin)
{
	cpu_set_t s;
	char c = 1;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	if (cpu >= 0) {
		CPU_ZERO(&s);
		CPU_SET(cpu, &s);
		if (sched_setaffinity(0, sizeof(s), &s) < 0)
			_exit(2);
	}
	if (write(wfd, &c, 1) != 1)
		_exit(3);
	close(wfd);
	if (spin)
		for (;;)
			spin_sink++;
	for (;;)
		pause();
}

static pid_t spawn(struct fix *f, int cpu, bool spin)
{
	pid_t parent = getpid(), pid;
	int p[2], slot = -1;
	ssize_t n;
	char c = 0;

	for (int i = 0; i < MAX_KIDS && slot < 0; i++)
		if (f->kids[i] == 0)
			slot = i;
	assert_true(slot >= 0);
	assert_int_equal(pipe2(p, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0)
		kid_main(parent, p[1], cpu, spin);
	close(p[1]);
	if (pid < 0)
		close(p[0]);
	assert_true(pid > 0);
	f->kids[slot] = pid; /* from here on the teardown reaps it */
	do
		n = read(p[0], &c, 1);
	while (n < 0 && errno == EINTR);
	close(p[0]);
	assert_int_equal(n, 1);
	return pid;
}

static void reap(struct fix *f, pid_t pid)
{
	for (int i = 0; i < MAX_KIDS; i++) {
		if (f->kids[i] != pid || pid <= 0)
			continue;
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		f->kids[i] = 0;
	}
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static int setup_sampler(struct fix *f, uint64_t rescan_ns)
{
	struct proc_sampler_opts o = { .root = "", .self_tgid = getpid(), .rescan_ns = rescan_ns,
				       .max_tracked = 4096 };

	sampler_free(f->sm);
	f->sm = NULL;
	return proc_sampler_new(&o, &f->sm);
}

static int fix_setup(void **state)
{
	struct topo_opts to = { .filter_online = true };
	struct fix *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	if (topo_load(&to, &f->topo) < 0)
		return -1;
	f->snap = snap_new(f->topo);
	if (!f->snap)
		return -1;
	return setup_sampler(f, NSEC_PER_SEC) < 0 ? -1 : 0;
}

static int rm_entry(const char *path, const struct stat *sb, int type, struct FTW *ftw)
{
	(void)sb;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

static int fix_teardown(void **state)
{
	struct fix *f = *state;

	if (!f)
		return 0;
	for (int i = 0; i < MAX_KIDS; i++)
		reap(f, f->kids[i]);
	if (f->root[0])
		nftw(f->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
	sampler_free(f->sm);
	snap_free(f->snap);
	topo_free(f->topo);
	free(f);
	return 0;
}

/* One tick at now_ns (the sampler's clock), with the checks every snapshot must pass. */
static void tick_at(struct fix *f, uint64_t now_ns)
{
	pid_t self = getpid();

	snap_reset(f->snap);
	assert_int_equal(sampler_sample(f->sm, now_ns, f->snap), 0);
	assert_int_equal(f->snap->self_tgid, self);
	for (size_t i = 0; i < f->snap->ntasks; i++) {
		const struct snap_task *t = &f->snap->tasks[i];

		/* The test process runs while it samples: it must be left out all the same. */
		assert_int_not_equal(t->tgid, self);
		assert_int_not_equal(t->tid, self);
		assert_true(t->cpu >= 0 && t->cpu < f->snap->nr_cpu_ids);
		for (size_t j = 0; j < i; j++)
			assert_int_not_equal(f->snap->tasks[j].tid, t->tid);
	}
}

static void tick(struct fix *f)
{
	tick_at(f, util_now_ns());
}

static const struct snap_task *find_task(const struct snapshot *s, pid_t tid)
{
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].tid == tid)
			return &s->tasks[i];
	return NULL;
}

/* Samples (150 ms apart) until tid shows up, for up to about 6 s. */
static const struct snap_task *tick_until_seen(struct fix *f, pid_t tid)
{
	for (int i = 0; i < 40; i++) {
		const struct snap_task *t;

		if (i)
			sleep_ms(150);
		tick(f);
		t = find_task(f->snap, tid);
		if (t)
			return t;
	}
	return NULL;
}

/*
 * A bound on waiting for a child of this test to reach a state: only there so that a
 * broken child cannot hang the run; a child that needs it is stuck, not slow.
 */
#define CHILD_WAIT_MS (60 * 1000)

/* The child's CPU time (utime + stime, clock ticks), read as the sampler reads it. */
static uint64_t cputime_of(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return stat_field(path, 14) + stat_field(path, 15);
}

/*
 * Waits until the child has used CPU time beyond `than`: on a crowded machine a
 * spinning child may get less than a clock tick in any given 150 ms.
 */
static void wait_cputime_above(pid_t pid, uint64_t than)
{
	for (unsigned ms = 0; cputime_of(pid) <= than; ms += 5) {
		if (ms >= CHILD_WAIT_MS)
			fail_msg("child %d used no CPU time in %u s", (int)pid, ms / 1000);
		sleep_ms(5);
	}
}

static bool cpu_usable(const struct fix *f, int cpu)
{
	return cpu < f->topo->nr_cpu_ids && CPU_ISSET(cpu, &f->topo->online);
}

static void check_pinned(struct fix *f, int cpu)
{
	char path[64], buf[8192], cg[4096], comm[64];
	const struct snap_task *t;
	cpu_set_t want;
	pid_t kid;
	uint64_t used;
	size_t n;

	if (!cpu_usable(f, cpu))
		skip();
	kid = spawn(f, cpu, true);
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)kid);
	CPU_ZERO(&want);
	CPU_SET(cpu, &want);
	n = slurp("/proc/self/comm", comm, sizeof(comm));
	if (n && comm[n - 1] == '\n')
		comm[n - 1] = '\0';
	snprintf(buf, sizeof(buf), "/proc/%d/cgroup", (int)kid);
	slurp(buf, buf, sizeof(buf));
	assert_int_equal(parse_cgroup(buf, cg, sizeof(cg)), 0);

	/* The first tick walks /proc; the next ones only re-read the followed tasks. */
	for (int round = 0; round < 3; round++) {
		if (round == 0) {
			t = tick_until_seen(f, kid);
		} else {
			/* The tick after the child used CPU time: it is no longer "NO_CPU". */
			wait_cputime_above(kid, used);
			tick(f);
			t = find_task(f->snap, kid);
		}
		/* At least what the sampler read in this tick. */
		used = cputime_of(kid);
		assert_non_null(t);
		assert_int_equal(t->tid, kid);
		assert_int_equal(t->tgid, kid);
		assert_int_equal(t->cpu, cpu);
		assert_true(CPU_EQUAL(&t->allowed, &want));
		assert_int_equal(t->start_time, stat_field(path, 22));
		assert_int_equal(t->flags & SNAP_TASK_KTHREAD, 0);
		/* It used CPU time since the last sample. */
		if (round > 0)
			assert_int_equal(t->flags, 0);
		assert_string_equal(t->comm, comm);
		assert_non_null(t->cgroup);
		assert_string_equal(t->cgroup, cg);
		assert_true(f->snap->cpus[cpu].nr_running >= 1);
	}
}

KIT_TEST_FX(test_sampler_pinned_cpu1, fix_setup, fix_teardown)
{
	check_pinned(*state, 1);
}

KIT_TEST_FX(test_sampler_pinned_cpu0, fix_setup, fix_teardown)
{
	check_pinned(*state, 0);
}

/*
 * Whether s lists the task tid that started at start_time: after a reap, another
 * process on this machine (a fork storm) may get the same pid, and is not ours.
 */
static bool lists(const struct snapshot *s, pid_t tid, uint64_t start_time)
{
	const struct snap_task *t = find_task(s, tid);

	return t && t->start_time == start_time;
}

KIT_TEST_FX(test_sampler_forgets_reaped, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid = spawn(f, cpu_usable(f, 1) ? 1 : 0, true);
	const struct snap_task *t = tick_until_seen(f, kid);
	uint64_t start_time;

	assert_non_null(t);
	start_time = t->start_time;
	reap(f, kid);
	/* Gone once reaped: the next ticks list it no more (the time between is no matter). */
	tick(f);
	assert_false(lists(f->snap, kid, start_time));
	tick(f);
	assert_false(lists(f->snap, kid, start_time));
}

KIT_TEST_FX(test_sampler_reads_cheaply, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	struct proc_stats st, prev = { 0 };
	uint64_t t0;
	pid_t kid;

	assert_int_equal(setup_sampler(f, 10 * NSEC_PER_SEC), 0);
	kid = spawn(f, cpu_usable(f, 1) ? 1 : 0, true);
	/*
	 * On the sampler's clock, ten ticks 100 ms apart, whatever time they really take
	 * (a sanitizer build under load takes seconds): what it walks depends on that clock.
	 */
	t0 = util_now_ns();
	for (int i = 0; i < 10; i++) {
		tick_at(f, t0 + (uint64_t)i * 100 * NSEC_PER_MSEC);
		assert_non_null(find_task(f->snap, kid));
		proc_sampler_stats(f->sm, &st);
		assert_true(st.tracked >= 1);
		/* Every tick re-reads the followed tasks, the busy child among them. */
		assert_true(st.stat_reads > prev.stat_reads);
		prev = st;
	}
	/*
	 * Only the first tick walks /proc: rescan_ns is 10 s and the ten ticks span 0.9 s
	 * of the sampler's clock. The early-rescan rule may walk again when /proc/stat's
	 * procs_running exceeds the runnable tasks followed + 1 (other busy tasks on this
	 * machine, not ours) two ticks in a row, but no sooner than 1 s after the last walk.
	 */
	assert_int_equal(st.rescans, 1);
	assert_true(st.stat_reads >= 10);
}

/* Writes root/rel, creating the directories on the way. */
static void fake_file(const struct fix *f, const char *rel, const char *text)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", f->root, rel);
	for (char *p = path + strlen(f->root) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
		*p = '/';
	}
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static void fake_cpustat(const struct fix *f, unsigned busy0, unsigned idle0, unsigned busy1,
			 unsigned idle1)
{
	char text[512];

	snprintf(text, sizeof(text),
		 "cpu  %u 0 0 %u 0 0 0 0 0 0\n"
		 "cpu0 %u 0 0 %u 0 0 0 0 0 0\n"
		 "cpu1 %u 0 0 %u 0 0 0 0 0 0\n"
		 "procs_running 1\n",
		 busy0 + busy1, idle0 + idle1, busy0, idle0, busy1, idle1);
	fake_file(f, "proc/stat", text);
}

/*
 * The proc sampler has no pairs or walks_unprivileged operation: asked through the
 * generic calls, it names no partner and needs no CAP_BPF kept.
 */
KIT_TEST_FX(test_sampler_optional_ops, fix_setup, fix_teardown)
{
	struct fix *f = *state;

	assert_null(f->sm->ops->pairs);
	assert_null(f->sm->ops->walks_unprivileged);
	assert_false(sampler_pairs(f->sm, f->topo, true));
	assert_false(sampler_pairs(f->sm, f->topo, false));
	assert_true(sampler_walks_unprivileged(f->sm));
}

void kit_before(void)
{
	log_set_level(LOG_WARNING);
}

/*
 * Last (defined, so run): these two can follow no task at all, which UBSan has caught
 * aborting.
 */
KIT_TEST_FX(test_sampler_sleeper_not_runnable, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid = spawn(f, -1, false);
	int i;

	/* Wait for it to be asleep in pause(). */
	for (i = 0; i < CHILD_WAIT_MS / 10 && stat_state(kid) != 'S'; i++)
		sleep_ms(10);
	assert_int_equal(stat_state(kid), 'S');
	for (i = 0; i < 5; i++) {
		if (i)
			sleep_ms(150);
		tick(f);
		assert_null(find_task(f->snap, kid));
	}
}

KIT_TEST_FX(test_sampler_fake_root, fix_setup, fix_teardown)
{
	const char *f_sleeper[53] = { [4] = "1", [14] = "5", [15] = "5", [22] = "100", [39] = "1" };
	struct fix *f = *state;
	struct proc_sampler_opts o = { .self_tgid = getpid(), .rescan_ns = 10 * NSEC_PER_SEC,
				       .max_tracked = 4096 };
	struct proc_stats st;
	char line[1024];
	uint64_t t0 = 1000 * NSEC_PER_SEC;

	if (f->topo->nr_cpu_ids < 2)
		skip();
	/*
	 * A /proc with one sleeping task and no runnable one: the walk finds nothing to
	 * follow. Times are made up, so the rescan schedule is exact.
	 */
	snprintf(f->root, sizeof(f->root), "/tmp/rqb-test-proc.XXXXXX");
	if (!mkdtemp(f->root)) {
		f->root[0] = '\0';
		fail_msg("mkdtemp: %s", strerror(errno));
	}
	stat_line(line, sizeof(line), "sleeper", 'S', f_sleeper, 52);
	fake_file(f, "proc/77/task/77/stat", line);
	fake_file(f, "proc/77/task/77/cgroup", "0::/\n");
	fake_cpustat(f, 100, 900, 100, 900);
	sampler_free(f->sm);
	f->sm = NULL;
	o.root = f->root;
	assert_int_equal(proc_sampler_new(&o, &f->sm), 0);

	snap_reset(f->snap);
	assert_int_equal(sampler_sample(f->sm, t0, f->snap), 0);
	assert_int_equal(f->snap->ntasks, 0);
	assert_int_equal(f->snap->cpus[0].busy_pct, 0); /* no previous read yet */
	proc_sampler_stats(f->sm, &st);
	assert_int_equal(st.rescans, 1);
	assert_int_equal(st.tracked, 0);

	/* cpu0 busy 50 of 100 jiffies, cpu1 0 of 100. */
	fake_cpustat(f, 150, 950, 100, 1000);
	snap_reset(f->snap);
	assert_int_equal(sampler_sample(f->sm, t0 + NSEC_PER_SEC, f->snap), 0);
	assert_int_equal(f->snap->ntasks, 0);
	assert_int_equal(f->snap->cpus[0].busy_pct, 50);
	assert_int_equal(f->snap->cpus[1].busy_pct, 0);
	assert_int_equal(f->snap->cpus[0].nr_running, 0);

	/* Before rescan_ns no walk; at rescan_ns exactly one more. */
	for (uint64_t i = 2; i <= 10; i++) {
		fake_cpustat(f, 150 + (unsigned)i * 100, 950, 100, 1000 + (unsigned)i * 100);
		snap_reset(f->snap);
		assert_int_equal(sampler_sample(f->sm, t0 + i * NSEC_PER_SEC, f->snap), 0);
		assert_int_equal(f->snap->ntasks, 0);
		assert_int_equal(f->snap->cpus[0].busy_pct, 100);
		assert_int_equal(f->snap->cpus[1].busy_pct, 0);
		proc_sampler_stats(f->sm, &st);
		assert_int_equal(st.rescans, i < 10 ? 1 : 2);
	}
	assert_int_equal(st.stat_reads, 0);

	/* A /proc/stat without procs_running is an error, not a silent zero. */
	fake_file(f, "proc/stat", "cpu0 1 0 0 1 0 0 0 0 0 0\n");
	snap_reset(f->snap);
	assert_int_equal(sampler_sample(f->sm, t0 + 11 * NSEC_PER_SEC, f->snap), -EINVAL);
}

KIT_GROUP("proc", NULL, NULL);
