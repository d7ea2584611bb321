/*
 * The one reader of a task's own /proc files that every stage shares (procfs.c): a
 * sampler, the latency manager, the actuators and the ctl peer check read a task's
 * stat, cgroup and ids (its status's) here, and parse them with parse.c, and walk a
 * process's threads with its one thread iterator. It reads and parses; it decides
 * nothing.
 */
#ifndef RQB_PROCFS_H
#define RQB_PROCFS_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "proc/parse.h"

/*
 * Task tid's stat: PROC_ROOT/TGID/task/TID/stat when tgid > 0 (a tid that has left
 * tgid, or been reused by another process since, is not found there), else
 * PROC_ROOT/TID/stat. proc_root as util_proc_root takes it. 0, -ESRCH when the task is
 * gone, -EIO when the line is not a stat line, or another -errno.
 */
int procfs_stat(const char *proc_root, pid_t tgid, pid_t tid, struct parse_stat_line *ret);
/* The same, from a stat file the caller holds open (read again from its start). */
int procfs_stat_fd(int fd, struct parse_stat_line *ret);
/*
 * Task tid's ids from its status (parse_status), from the same places as procfs_stat:
 * the mask of those found, -ESRCH when the task is gone, or another -errno.
 */
int procfs_status(const char *proc_root, pid_t tgid, pid_t tid, struct parse_status *ret);
/*
 * Task tid's whole status text (for parse_status_field), from the same places: its
 * length, -ESRCH when the task is gone, or another -errno.
 */
ssize_t procfs_status_text(const char *proc_root, pid_t tgid, pid_t tid, char *buf, size_t size);
/*
 * Task tid's cgroup path, as parse_cgroup picks it (the hierarchy of the cpu
 * controller), from the same places as procfs_stat. 0, -ESRCH when gone, -ENOENT
 * when the file names no such hierarchy, -ENAMETOOLONG when it does not fit len.
 */
int procfs_cgroup(const char *proc_root, pid_t tgid, pid_t tid, char *ret, size_t len);

/*
 * Task pid's start time (clock ticks after boot) from its stat under its own task
 * directory, PROC_ROOT/PID/task/PID/stat: the same field as PROC_ROOT/PID/stat, but for
 * that file the kernel sums the CPU times of every thread of the group, so that each
 * read costs as many steps as the process has threads. 0, or -ESRCH when gone.
 */
int procfs_start_time(const char *proc_root, pid_t pid, uint64_t *ret);
/*
 * The process pidfd fd (one of the daemon's own fds) stands for, by the "Pid:" line
 * of PROC_ROOT/self/fdinfo/FD: 0 and *ret; -ESRCH when it has exited (-1), or is in
 * no pid namespace the daemon sees (0); -EINVAL when fd is not a pidfd (no such line);
 * -errno when unread. Read twice around a read of the pid's start time, it proves the
 * start time the pidfd's process's: a pid is reused only once its process is gone.
 */
int procfs_pidfd_pid(const char *proc_root, int fd, pid_t *ret);
/*
 * Task tid's comm as the task set it (only the newline the kernel adds taken off), or
 * "?" when it cannot be read; for list and explain.
 */
void procfs_comm(const char *proc_root, pid_t tid, char *ret, size_t size);
/*
 * Task tid's time on a CPU in nanoseconds, the first field of its schedstat, from the
 * same places as procfs_stat (CONFIG_SCHED_INFO). 0, -ESRCH when gone, -EIO, -errno.
 */
int procfs_run_ns(const char *proc_root, pid_t tgid, pid_t tid, uint64_t *ret);
/*
 * Process tgid's resident set in KiB, from /proc/TGID/statm: the working-set proxy
 * of keep_together. 0, -ESRCH when it is gone, or -errno.
 */
int procfs_rss_kb(const char *proc_root, pid_t tgid, uint64_t *ret);

/*
 * One walk of process tgid's threads, PROC_ROOT/TGID/task, in the kernel's order: every
 * stage that walks a process's threads walks them here.
 */
struct procfs_threads {
	DIR *dir;
};
/* 0, or -ESRCH when the process is gone, or another -errno. */
int procfs_threads_open(const char *proc_root, pid_t tgid, struct procfs_threads *ret);
/* The next thread's tid, or 0 at the end of the walk. */
pid_t procfs_threads_next(struct procfs_threads *it);
void procfs_threads_close(struct procfs_threads *it);

/* What a request reads of one thread (procfs_thread). */
struct procfs_thread {
	uint64_t start_time;    /* clock ticks after boot */
	bool kthread;           /* PF_KTHREAD */
	uid_t ruid, euid;       /* from its status */
	pid_t tgid;             /* its process, from its status; 0: not said */
	unsigned threads;       /* its process's threads (its status's Threads); 0: not said */
	bool has_cgroup;        /* its cgroup was asked for and read */
};
/*
 * Thread tid of process tgid: its stat, its status and, with cgroup not NULL, its
 * cgroup (as procfs_cgroup parses it, into cgroup of len bytes), all read through one
 * open directory of that thread, so that all are of one task even if tid is taken
 * again meanwhile (the directory stays the old task's and then reads as gone). 0,
 * -ESRCH when it is gone (or is not tgid's), or another -errno; a cgroup that could
 * not be read for another reason leaves has_cgroup false.
 */
int procfs_thread(const char *proc_root, pid_t tgid, pid_t tid, char *cgroup, size_t len,
		  struct procfs_thread *ret);
/*
 * A pidfd of thread tid of process tgid. Taken before the thread's facts are read
 * (procfs_thread), it pins the task they are about: a start time read after it that
 * is the one expected proves the fd is that task's. The fd, or -ESRCH (gone),
 * -EOPNOTSUPP where the kernel opens no pidfd of a thread or proc_root is not the
 * system's (a test's tree, whose numbers name no task of its own), or another -errno.
 */
int procfs_pidfd_open(const char *proc_root, pid_t tgid, pid_t tid);
#endif
