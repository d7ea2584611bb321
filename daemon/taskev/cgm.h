/*
 * The processes of a cgroup and below, and a process's cgroup, read from the cpu
 * hierarchy's mount and a proc root that the caller gives (tests pass fake trees).
 * A sample source for the latency manager's unit decisions: it only reads.
 */
#ifndef RQB_CGM_H
#define RQB_CGM_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <stdint.h>

#define CGM_MAX_PROCS 1024 /* a unit with more is not checked */
#define CGM_MAX_DEPTH 16

struct cgm_proc {
	pid_t pid;
	pid_t ppid;
	uint32_t ruid, euid;
};


/*
 * The processes in MOUNT/PATH and every cgroup below it, at most max, each with its
 * parent and its real and effective uid.
 * *ret_truncated says there were more (or a level deeper than CGM_MAX_DEPTH). A process
 * that exits while being read is left out. 0 or -errno (-ENOENT: no such cgroup);
 * *ret is the caller's to free.
 */
int cgm_read(const char *mount, const char *path, const char *proc_root, size_t max,
	     struct cgm_proc **ret, size_t *ret_n, bool *ret_truncated);

#endif
