/*
 * Actuate stage, the Linux driver: the only code that writes to the system. It opens
 * tasks by pidfd and checks their start time, and makes every write that names a task
 * by number only while that task is alive, then checks that it still held the number
 * when the write was done (-ESTALE where it did not: act.h), so that a reused pid is
 * never touched unseen; it reads and writes affinity; and it makes the latency
 * actuator's writes
 * (sched_setattr, cgroupfs files, systemd units); it opens the journal, and logs
 * what came of each plan action. It decides nothing: act.c and latact's parts say
 * what to write and where. Groups in the cpu hierarchy libcgroup knows are made,
 * joined and removed through libcgroup; a tree it does not know (a test's) through
 * the files themselves.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "actuate/act.h"
#include "actuate/cgsd.h"
#include "actuate/journal.h"
#include "rqbalance.h"
#include "proc/procfs.h"
#include "util/cpumask.h"
#include "util/log.h"
#include "util/schedattr.h"
#include "util/util.h"

/*
 * From TID/task/TID/stat, the thread's own: TID/stat of a thread in a process of n
 * threads sums the times of all n, and a walk of such a process would read n times n.
 */
static int read_start_time(pid_t tid, uint64_t *ret)
{
	return procfs_start_time(NULL, tid, ret);
}

static int linux_alive(const struct act_task *t)
{
	uint64_t start;
	int r;

	if (t->pidfd >= 0)
		return util_pidfd_alive(t->pidfd);
	r = read_start_time(t->tid, &start);
	if (r < 0)
		return r;
	return start == t->start_time ? 0 : -ESRCH;
}

/*
 * Whether t still holds its number: alive, or exited and not yet released (a zombie
 * keeps its pid, so no other task can have it). A pidfd says released (POLLHUP) on the
 * kernels that report it; elsewhere the number's start time says.
 */
static bool holds_number(const struct act_task *t)
{
	uint64_t start;

	if (t->pidfd >= 0) {
		int r = util_pidfd_alive(t->pidfd);

		if (r == 0)
			return true;
		if (r == -ESRCH && util_pidfd_released(t->pidfd))
			return false;
	}
	return read_start_time(t->tid, &start) == 0 && start == t->start_time;
}

/*
 * What came of write r, made through t's number after t was seen alive: the write
 * reached t only if t held the number to the end (act.h: 0, -ESRCH, -ESTALE).
 */
static int checked_write(const struct act_task *t, int r)
{
	if (r < 0)
		return r;
	return holds_number(t) ? 0 : -ESTALE;
}

static int linux_who(pid_t tid, struct act_who *ret)
{
	struct parse_stat_line l;
	struct parse_status st;
	uint64_t again;
	int r;

	/* Under its own task directory: PID/stat sums the whole group's CPU times. */
	r = procfs_stat(NULL, tid, tid, &l);
	if (r == 0 && (procfs_status(NULL, 0, tid, &st) & PARSE_STATUS_TGID) == 0)
		r = -ESRCH;
	/* Both files of one task: the number was not taken again between the reads. */
	if (r == 0 && (read_start_time(tid, &again) < 0 || again != l.start_time))
		r = -ESRCH;
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	*ret = (struct act_who){ .start_time = l.start_time, .tgid = st.tgid, .ppid = l.ppid };
	return 0;
}

static int linux_open(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret)
{
	struct act_task t = { .tid = tid, .start_time = start_time, .pidfd = -1 };
	uint64_t start;
	int fd, r;

	fd = procfs_pidfd_open(NULL, tgid, tid);
	if (fd < 0 && fd != -EOPNOTSUPP)
		return fd;
	t.pidfd = fd;
	/* The pidfd names whatever has tid now: the start time says whether that is ours. */
	r = read_start_time(tid, &start);
	if (r == 0 && start != start_time)
		r = -ESRCH;
	if (r < 0) {
		if (fd >= 0)
			close(fd);
		return r;
	}
	*ret = t;
	return 0;
}

/*
 * A copy of the pidfd a request's judge opened before it read the task's start time
 * (procfs_pidfd_open): proven the task's by that read, so not read again here.
 */
static int linux_adopt(int pidfd, pid_t tid, uint64_t start_time, struct act_task *ret)
{
	int fd = fcntl(pidfd, F_DUPFD_CLOEXEC, 3);

	if (fd < 0)
		return -errno;
	*ret = (struct act_task){ .tid = tid, .start_time = start_time, .pidfd = fd };
	return 0;
}

static int linux_get(const struct act_task *t, cpu_set_t *ret)
{
	cpu_set_t set;

	if (sched_getaffinity(t->tid, sizeof(set), &set) < 0)
		return -errno;
	if (linux_alive(t) < 0)
		return -ESRCH;
	*ret = set;
	return 0;
}

static int linux_set(const struct act_task *t, const cpu_set_t *mask)
{
	int r = linux_alive(t);

	if (r < 0)
		return r;
	return checked_write(t, sched_setaffinity(t->tid, sizeof(*mask), mask) < 0 ? -errno : 0);
}

static int linux_journal(const char *dir, const char *name, struct journal **ret)
{
	return journal_open_named(dir, name, ret);
}

static void linux_close(struct act_task *t)
{
	if (t->pidfd >= 0)
		close(t->pidfd);
	t->pidfd = -1;
}

uint64_t act_boot_ticks(void)
{
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec) /
	       (1000000000ULL / (uint64_t)(hz > 0 ? hz : 100));
}

/* Threads of tgid started at or after since. */
static void threads_since(pid_t tgid, uint64_t since,
			  void (*fn)(void *ctx, pid_t tid, pid_t tgid, uint64_t start), void *ctx)
{
	struct procfs_threads it;
	pid_t tid;

	if (procfs_threads_open(NULL, tgid, &it) < 0)
		return;
	while ((tid = procfs_threads_next(&it)) > 0) {
		uint64_t start;

		if (read_start_time(tid, &start) == 0 && start >= since)
			fn(ctx, tid, tgid, start);
	}
	procfs_threads_close(&it);
}

/* A process started since the change, for linux_offspring: its parent, and if it descends. */
struct proc_node {
	pid_t pid, ppid;
	uint64_t start;
	int in;                   /* 1: descends from the changed process; 0: not; -1: not known */
};

static int cmp_proc_node(const void *a, const void *b)
{
	pid_t x = ((const struct proc_node *)a)->pid, y = ((const struct proc_node *)b)->pid;

	return (x > y) - (x < y);
}

/*
 * Whether n descends from tgid through processes all started since (only those can
 * hold what was set since). Each process is resolved once: the chain up stops at the
 * first one known, and all on it learn the answer.
 */
static int descends(struct proc_node *nodes, size_t nn, struct proc_node *n, pid_t tgid,
		    struct proc_node **stack)
{
	size_t depth = 0;
	int in = 0;

	while (n && n->in < 0 && depth < nn) {
		struct proc_node key = { .pid = n->ppid };

		stack[depth++] = n;
		n->in = 0; /* a loop of parents (a number reused meanwhile) ends here */
		if (n->ppid == tgid) {
			in = 1;
			break;
		}
		n = bsearch(&key, nodes, nn, sizeof(*nodes), cmp_proc_node);
	}
	if (n && !in && n->in > 0)
		in = 1;
	while (depth > 0)
		stack[--depth]->in = in;
	return in;
}

static int linux_offspring(pid_t tgid, uint64_t since,
			   void (*fn)(void *ctx, pid_t tid, pid_t tgid, uint64_t start), void *ctx)
{
	struct proc_node *nodes = NULL, **stack = NULL;
	size_t nn = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	threads_since(tgid, since, fn, ctx);
	d = opendir(util_proc_root(NULL));
	if (!d)
		return -errno;
	/* Every process started since, read once; then the descendants, children's children too. */
	while ((de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name);
		struct parse_stat_line l;
		struct proc_node *arr;

		if (pid <= 0 || pid == tgid || procfs_stat(NULL, pid, pid, &l) < 0 ||
		    l.start_time < since)
			continue;
		arr = util_grow(nodes, &cap, nn, sizeof(*arr));
		if (!arr)
			break;
		nodes = arr;
		nodes[nn++] = (struct proc_node){ pid, l.ppid, l.start_time, -1 };
	}
	closedir(d);
	if (nn && (stack = calloc(nn, sizeof(*stack)))) {
		qsort(nodes, nn, sizeof(*nodes), cmp_proc_node);
		for (size_t i = 0; i < nn; i++)
			if (descends(nodes, nn, &nodes[i], tgid, stack))
				threads_since(nodes[i].pid, since, fn, ctx);
	}
	free(stack);
	free(nodes);
	return 0;
}

/* The latency actuator's writes, and what it reads of a task. */
static int linux_get_attr(pid_t tid, struct rqb_sched_attr *ret)
{
	return rqb_sched_getattr(tid, ret);
}

static int linux_set_attr(const struct act_task *t, const struct rqb_sched_attr *a)
{
	int r = linux_alive(t);

	if (r < 0)
		return r;
	return checked_write(t, rqb_sched_setattr(t->tid, a));
}

static int linux_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n, len = (ssize_t)strlen(text);

	if (fd < 0)
		return -errno;
	n = write(fd, text, (size_t)len);
	close(fd);
	if (n < 0)
		return -errno;
	return n == len ? 0 : -EIO;
}

/*
 * dir relative to the cpu hierarchy's mount as libcgroup reads it ("" for its top), or
 * NULL where libcgroup knows no such mount or dir is not below it.
 */
static const char *lcg_rel(const char *dir)
{
	static char mnt[PATH_MAX];
	static int found; /* 0: not asked yet, 1: mnt holds it, -1: none */
	size_t n;

	if (!found) {
		char *m = NULL;

		found = -1;
		if (cgroup_init() == 0 && cgroup_get_subsys_mount_point("cpu", &m) == 0 && m &&
		    snprintf(mnt, sizeof(mnt), "%s", m) < (int)sizeof(mnt))
			found = 1;
		free(m);
	}
	if (found < 0)
		return NULL;
	n = strlen(mnt);
	if (strncmp(dir, mnt, n) != 0 || (dir[n] != '/' && dir[n] != '\0'))
		return NULL;
	while (dir[n] == '/')
		n++;
	return dir + n;
}

/* A libcgroup handle on rel with the cpu controller; NULL without memory. */
static struct cgroup *lcg_new(const char *rel)
{
	struct cgroup *cg = cgroup_new_cgroup(rel);

	if (cg && !cgroup_add_controller(cg, "cpu"))
		cgroup_free(&cg);
	return cg;
}

/*
 * Writes tid into procs_file, through libcgroup where it knows the hierarchy. A v1
 * cgroup.procs (a whole process in one write, where libcgroup writes tasks, a thread)
 * is written directly.
 */
static int attach_number(const char *procs_file, pid_t tid)
{
	char dir[PATH_MAX], text[16], *slash;
	const char *rel;
	struct cgroup *cg;
	int r;

	snprintf(dir, sizeof(dir), "%s", procs_file);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	rel = slash && strcmp(slash + 1, "cgroup.procs") != 0 ? lcg_rel(dir) : NULL;
	if (!rel) {
		snprintf(text, sizeof(text), "%d", (int)tid);
		return linux_write(procs_file, text);
	}
	if (!(cg = lcg_new(rel)))
		return -ENOMEM;
	r = cgroup_attach_task_pid(cg, tid);
	cgroup_free(&cg);
	if (r == 0)
		return 0;
	if (r == ECGOTHER && cgroup_get_last_errno() == ESRCH)
		return -ESRCH;
	return r == ECGROUPNOTEXIST ? -ENOENT : r == ECGROUPNOTOWNER ? -EPERM : -EIO;
}

/*
 * The kernel resolves the number only after cgroup_attach_lock, which can wait an RCU
 * grace period (tens of milliseconds here): long enough for t to exit, be reaped and
 * its number be taken by a new task, which the write then moves (the third review).
 */
static int linux_attach(const char *procs_file, const struct act_task *t)
{
	int r = linux_alive(t);

	if (r < 0)
		return r;
	return checked_write(t, attach_number(procs_file, t->tid));
}

static int linux_mkdir(const char *dir)
{
	const char *rel = lcg_rel(dir);
	struct cgroup *cg;
	int r;

	if (!rel)
		return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -errno;
	if (!(cg = lcg_new(rel)))
		return -ENOMEM;
	r = cgroup_create_cgroup(cg, 0);
	cgroup_free(&cg);
	return r == 0 ? 0 : -EIO;
}

static int linux_rmdir(const char *dir)
{
	const char *rel = lcg_rel(dir);
	struct cgroup *cg;
	int r;

	if (!rel)
		return rmdir(dir) == 0 ? 0 : -errno;
	if (!(cg = lcg_new(rel)))
		return -ENOMEM;
	r = cgroup_delete_cgroup(cg, 0);
	cgroup_free(&cg);
	return r == 0 ? 0 : -EIO;
}

static int linux_unit_weight(void *bus, const char *unit, uint64_t w, bool idle, char *err,
			     size_t errlen)
{
	return idle ? cgsd_set_idle(bus, unit, err, errlen)
		    : cgsd_set_weight(bus, unit, w, err, errlen);
}

/* A pin's outcome at info (a failure at warn); a latency action's, one of many, at debug. */
static void linux_log_action(const struct plan_action *pa, int r, const char *why)
{
	char line[CPUMASK_STRLEN + PLAN_LINE_MAX];

	plan_format(pa, line, sizeof(line));
	if (plan_op_is_latency(pa->op)) {
		if (r < 0)
			log_debug("%s: %s", line, why ? why : strerror(-r));
		else
			log_debug("%s", line);
	} else if (r == 0) {
		log_info("%s", line);
	} else if (r == -ESRCH) {
		log_info("%s: task is gone", line);
	} else {
		log_warn("%s: %s (%s)", line, strerror(-r),
			 act_error_is_transient(r) ? "will retry later" : "given up");
	}
}

const struct act_ops act_linux_ops = {
	.name = "linux",
	.journal = linux_journal,
	.open = linux_open,
	.adopt = linux_adopt,
	.alive = linux_alive,
	.who = linux_who,
	.get_affinity = linux_get,
	.set_affinity = linux_set,
	.close = linux_close,
	.offspring = linux_offspring,
	.get_attr = linux_get_attr,
	.set_attr = linux_set_attr,
	.attach = linux_attach,
	.write = linux_write,
	.mkdir = linux_mkdir,
	.rmdir = linux_rmdir,
	.unit_weight = linux_unit_weight,
	.log_action = linux_log_action,
};
