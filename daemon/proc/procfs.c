/*
 * proc/: the shared reader of a task's stat, status and cgroup files (see procfs.h). It never
 * writes, and never reads a file that a user other than the kernel can have written.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "proc/procfs.h"
#include "util/util.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

/* A task directory that is gone reads as ENOENT, or as ESRCH half-way through exit. */
static int gone_or(ssize_t n)
{
	return n == -ENOENT || n == -ESRCH || n == 0 ? -ESRCH : (int)n;
}

static int stat_from(ssize_t n, const char *buf, struct parse_stat_line *ret)
{
	if (n <= 0)
		return gone_or(n);
	return parse_stat(buf, ret) < 0 ? -EIO : 0;
}

static int task_path(char *path, size_t len, const char *proc_root, pid_t tgid, pid_t tid,
		     const char *file)
{
	if (tgid > 0)
		return util_proc_path(path, len, proc_root, "%d/task/%d/%s", (int)tgid, (int)tid,
				      file);
	return util_proc_path(path, len, proc_root, "%d/%s", (int)tid, file);
}

int procfs_stat(const char *proc_root, pid_t tgid, pid_t tid, struct parse_stat_line *ret)
{
	char path[PATH_MAX], buf[1024];
	int r = task_path(path, sizeof(path), proc_root, tgid, tid, "stat");

	return r < 0 ? r : stat_from(util_read_file(path, buf, sizeof(buf)), buf, ret);
}

int procfs_stat_fd(int fd, struct parse_stat_line *ret)
{
	char buf[1024];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	if (n < 0)
		return gone_or(-errno);
	buf[n] = '\0';
	return stat_from(n, buf, ret);
}

ssize_t procfs_status_text(const char *proc_root, pid_t tgid, pid_t tid, char *buf, size_t size)
{
	char path[PATH_MAX];
	int r = task_path(path, sizeof(path), proc_root, tgid, tid, "status");
	ssize_t n;

	if (r < 0)
		return r;
	n = util_read_file(path, buf, size);
	return n <= 0 ? gone_or(n) : n;
}

int procfs_status(const char *proc_root, pid_t tgid, pid_t tid, struct parse_status *ret)
{
	/* The ids are near the top: the groups and masks below need not fit. */
	char buf[4096];
	ssize_t n = procfs_status_text(proc_root, tgid, tid, buf, sizeof(buf));

	return n < 0 ? (int)n : (int)parse_status(buf, ret);
}

#define CGROUP_FILE_MAX 8192

/* A cgroup file read (n bytes of buf, or -errno), parsed into ret. */
static int cgroup_from(ssize_t n, const char *buf, char *ret, size_t len)
{
	return n <= 0 ? gone_or(n) : parse_cgroup(buf, ret, len);
}

int procfs_cgroup(const char *proc_root, pid_t tgid, pid_t tid, char *ret, size_t len)
{
	char path[PATH_MAX], buf[CGROUP_FILE_MAX];
	int r = task_path(path, sizeof(path), proc_root, tgid, tid, "cgroup");

	if (r < 0)
		return r;
	return cgroup_from(util_read_file(path, buf, sizeof(buf)), buf, ret, len);
}

int procfs_start_time(const char *proc_root, pid_t pid, uint64_t *ret)
{
	struct parse_stat_line l;

	if (procfs_stat(proc_root, pid, pid, &l) < 0)
		return -ESRCH;
	*ret = l.start_time;
	return 0;
}

int procfs_pidfd_pid(const char *proc_root, int fd, pid_t *ret)
{
	char path[PATH_MAX], buf[512], *at, *end;
	ssize_t n;
	long v;

	if (fd < 0)
		return -EINVAL;
	if (util_proc_path(path, sizeof(path), proc_root, "self/fdinfo/%d", fd) < 0)
		return -ENAMETOOLONG;
	n = util_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	at = strncmp(buf, "Pid:", 4) == 0 ? buf : strstr(buf, "\nPid:");
	if (!at)
		return -EINVAL;
	at += at == buf ? 4 : 5;
	errno = 0;
	v = strtol(at, &end, 10);
	if (end == at || errno || (*end != '\n' && *end != '\0') || v < -1 || v > INT32_MAX)
		return -EINVAL;
	if (v <= 0)
		return -ESRCH;
	*ret = (pid_t)v;
	return 0;
}

void procfs_comm(const char *proc_root, pid_t tid, char *ret, size_t size)
{
	char path[PATH_MAX];
	ssize_t n = -1;

	if (util_proc_path(path, sizeof(path), proc_root, "%d/comm", (int)tid) == 0)
		n = util_read_file(path, ret, size);
	if (n <= 0)
		snprintf(ret, size, "?");
	else if (ret[n - 1] == '\n')
		ret[n - 1] = '\0';
}

int procfs_run_ns(const char *proc_root, pid_t tgid, pid_t tid, uint64_t *ret)
{
	char path[PATH_MAX], buf[128];
	unsigned long long ns;
	ssize_t n;
	int r = task_path(path, sizeof(path), proc_root, tgid, tid, "schedstat");

	if (r < 0)
		return r;
	n = util_read_file(path, buf, sizeof(buf));
	if (n <= 0)
		return gone_or(n);
	if (buf[0] < '0' || buf[0] > '9' || sscanf(buf, "%llu", &ns) != 1)
		return -EIO;
	*ret = ns;
	return 0;
}

int procfs_rss_kb(const char *proc_root, pid_t tgid, uint64_t *ret)
{
	char path[PATH_MAX], buf[256];
	unsigned long long size, resident;
	ssize_t n;

	if (util_proc_path(path, sizeof(path), proc_root, "%d/statm", (int)tgid) < 0)
		return -EINVAL;
	n = util_read_file(path, buf, sizeof(buf));
	if (n <= 0)
		return gone_or(n);
	if (sscanf(buf, "%llu %llu", &size, &resident) != 2)
		return -EIO;
	*ret = resident * (uint64_t)sysconf(_SC_PAGESIZE) / 1024;
	return 0;
}

int procfs_threads_open(const char *proc_root, pid_t tgid, struct procfs_threads *ret)
{
	char path[PATH_MAX];
	DIR *d;

	if (util_proc_path(path, sizeof(path), proc_root, "%d/task", (int)tgid) < 0)
		return -EINVAL;
	d = opendir(path);
	if (!d)
		return gone_or(-errno);
	ret->dir = d;
	return 0;
}

pid_t procfs_threads_next(struct procfs_threads *it)
{
	struct dirent *de;

	while (it->dir && (de = readdir(it->dir))) {
		long tid = strtol(de->d_name, NULL, 10);

		if (tid > 0 && tid <= INT_MAX)
			return (pid_t)tid;
	}
	return 0;
}

void procfs_threads_close(struct procfs_threads *it)
{
	if (it->dir)
		closedir(it->dir);
	it->dir = NULL;
}

/* The cgroup file of the thread directory dfd, parsed as procfs_cgroup does. */
static int cgroup_at(int dfd, char *ret, size_t len)
{
	char buf[CGROUP_FILE_MAX];

	return cgroup_from(util_read_file_at(dfd, "cgroup", buf, sizeof(buf)), buf, ret, len);
}

/* Its status's process, uids and thread count into *ret: 0, or -ESRCH where it says none. */
static int status_at(int dfd, struct procfs_thread *ret)
{
	const unsigned both = PARSE_STATUS_RUID | PARSE_STATUS_EUID;
	char buf[4096], v[32];
	struct parse_status st = { 0 };
	ssize_t n = util_read_file_at(dfd, "status", buf, sizeof(buf));

	if (n <= 0)
		return gone_or(n);
	if ((parse_status(buf, &st) & both) != both)
		return -ESRCH;
	ret->tgid = st.tgid;
	ret->ruid = st.ruid;
	ret->euid = st.euid;
	ret->threads = parse_status_field(buf, "Threads", v, sizeof(v)) == 0 ?
			       (unsigned)strtoul(v, NULL, 10) : 0;
	return 0;
}

int procfs_thread(const char *proc_root, pid_t tgid, pid_t tid, char *cgroup, size_t len,
		  struct procfs_thread *ret)
{
	struct procfs_thread th = { 0 };
	char path[PATH_MAX], buf[4096];
	struct parse_stat_line l;
	int dfd, r;

	r = task_path(path, sizeof(path), proc_root, tgid, tid, "");
	if (r < 0)
		return r;
	dfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return gone_or(-errno);
	r = stat_from(util_read_file_at(dfd, "stat", buf, sizeof(buf)), buf, &l);
	if (r == 0)
		r = status_at(dfd, &th);
	/*
	 * A cgroup file that says no group (cut short, it would name another, where the
	 * task would be given back) is no fact: left to whoever reads it later.
	 */
	if (r == 0 && cgroup) {
		int rc = cgroup_at(dfd, cgroup, len);

		th.has_cgroup = rc == 0;
		if (rc == -ESRCH)
			r = rc;
	}
	close(dfd);
	if (r < 0)
		return r;
	th.start_time = l.start_time;
	th.kthread = (l.flags & PARSE_PF_KTHREAD) != 0;
	*ret = th;
	return 0;
}

int procfs_pidfd_open(const char *proc_root, pid_t tgid, pid_t tid)
{
	int fd;

	if (strcmp(util_proc_root(proc_root), UTIL_PROC_ROOT) != 0)
		return -EOPNOTSUPP;
	fd = (int)syscall(SYS_pidfd_open, tid, PIDFD_THREAD);
	/* Before 6.9 there is no PIDFD_THREAD: a pidfd exists for leaders only. */
	if (fd < 0 && errno == EINVAL && tid == tgid)
		fd = (int)syscall(SYS_pidfd_open, tid, 0);
	if (fd < 0 && errno == EINVAL)
		return -EOPNOTSUPP;
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	return fd;
}
