/*
 * Actuate stage, the Linux driver: opens tasks by pidfd and checks their start time,
 * so that a reused pid is never touched, then reads and writes affinity. It acts only
 * on what act.c asks, and only on the task it opened.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "actuate/act.h"
#include "rqbalance.h"
#include "sample/parse.h"
#include "util/util.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

static int pidfd_open_thread(pid_t tid, pid_t tgid)
{
	int fd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);

	/* Before 6.9 there is no PIDFD_THREAD: a pidfd exists for leaders only. */
	if (fd < 0 && errno == EINVAL && tid == tgid)
		fd = (int)syscall(SYS_pidfd_open, tid, 0);
	if (fd < 0 && errno == EINVAL)
		return -EOPNOTSUPP;
	return fd < 0 ? -errno : fd;
}

int act_read_stat(pid_t tid, struct parse_stat_line *ret)
{
	char path[PATH_MAX], buf[1024];
	ssize_t n;
	int fd;

	if (util_proc_path(path, sizeof(path), NULL, "%d/stat", (int)tid) < 0)
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -ESRCH;
	buf[n] = '\0';
	return parse_stat(buf, ret) < 0 ? -EIO : 0;
}

static int read_start_time(pid_t tid, uint64_t *ret)
{
	struct parse_stat_line l;
	int r = act_read_stat(tid, &l);

	if (r < 0)
		return r;
	*ret = l.start_time;
	return 0;
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

static int linux_open(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret)
{
	struct act_task t = { .tid = tid, .start_time = start_time, .pidfd = -1 };
	uint64_t start;
	int fd, r;

	fd = pidfd_open_thread(tid, tgid);
	if (fd < 0 && fd != -EOPNOTSUPP)
		return fd == -ENOENT ? -ESRCH : fd;
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
	if (sched_setaffinity(t->tid, sizeof(*mask), mask) < 0)
		return -errno;
	/* Alive after the write: the tid cannot have been reused in between. */
	return linux_alive(t);
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
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d;

	if (util_proc_path(path, sizeof(path), NULL, "%d/task", (int)tgid) < 0)
		return;
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		uint64_t start;

		if (tid > 0 && read_start_time(tid, &start) == 0 && start >= since)
			fn(ctx, tid, tgid, start);
	}
	closedir(d);
}

static int linux_offspring(pid_t tgid, uint64_t since,
			   void (*fn)(void *ctx, pid_t tid, pid_t tgid, uint64_t start), void *ctx)
{
	struct dirent *de;
	DIR *d;

	threads_since(tgid, since, fn, ctx);
	d = opendir(util_proc_root(NULL));
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name);
		struct parse_stat_line l;

		if (pid > 0 && pid != tgid && act_read_stat(pid, &l) == 0 && l.ppid == tgid &&
		    l.start_time >= since)
			threads_since(pid, since, fn, ctx);
	}
	closedir(d);
	return 0;
}

const struct act_ops act_linux_ops = {
	.name = "linux",
	.open = linux_open,
	.alive = linux_alive,
	.get_affinity = linux_get,
	.set_affinity = linux_set,
	.close = linux_close,
	.offspring = linux_offspring,
};
