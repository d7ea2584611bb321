/*
 * Pure parsers of the kernel's text files (parse.c): procfs.c and the samplers read
 * the files, and any stage that has read one (the actuators, the ctl peer check)
 * parses it with these rather than reaching into a sampler.
 */
#ifndef RQB_PARSE_H
#define RQB_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "model/model.h"

/* A kernel thread's bit in a stat line's flags (PF_KTHREAD, include/linux/sched.h). */
#define PARSE_PF_KTHREAD 0x00200000u

struct parse_stat_line {
	char state;
	pid_t ppid;             /* parent's tgid */
	uint32_t flags;
	uint64_t utime, stime;  /* clock ticks */
	uint64_t start_time;    /* clock ticks after boot */
	int cpu;
	char comm[SNAP_COMM_LEN];
};
/* Parses one /proc/TID/stat line. 0 or -EINVAL. */
int parse_stat(const char *buf, struct parse_stat_line *ret);
/* The ids parse_status found, a mask. */
#define PARSE_STATUS_TGID 0x1u
#define PARSE_STATUS_PPID 0x2u
#define PARSE_STATUS_RUID 0x4u
#define PARSE_STATUS_EUID 0x8u

/* A task's ids, as /proc/TID/status gives them. */
struct parse_status {
	pid_t tgid;             /* "Tgid:": its process */
	pid_t ppid;             /* "PPid:": its parent's process; 0 for none */
	uid_t ruid;             /* "Uid:", the first field: its real uid */
	uid_t euid;             /* "Uid:", the second: its effective uid */
};
/*
 * Parses /proc/TID/status text into ret, each id from the first line that begins with
 * its key: a Tgid above 0, a PPid of 0 or more, uids below (uid_t)-1. Returns the mask
 * of the PARSE_STATUS_* ids that parsed; the others are left as they were.
 */
unsigned parse_status(const char *buf, struct parse_status *ret);
/*
 * The text of line "key:" of /proc/TID/status text (the first such line), blanks after
 * the colon skipped, to the end of the line, into ret. 0, or -ENOENT without one.
 */
int parse_status_field(const char *buf, const char *key, char *ret, size_t size);
/*
 * Parses /proc/stat: per-CPU busy and idle jiffies into arrays of n entries (CPUs not
 * listed stay 0) and procs_running. Returns 0 or -EINVAL.
 */
int parse_cpustat(const char *buf, int n, uint64_t *busy, uint64_t *total,
		  unsigned *ret_procs_running);
/*
 * A task's cgroup path from /proc/PID/cgroup text, the one precedence every stage uses
 * (exclusion, rules, explain, class and unit moves): the path in the hierarchy of the
 * cpu controller. That is the cgroup v1 line listing "cpu" where one does (a v1 or
 * hybrid host), else the unified hierarchy's "0::" line (cgroup2, where the cpu
 * controller is then). A line with an empty path counts as absent. 0, -ENOENT when
 * neither is there, -ENAMETOOLONG when the path does not fit len.
 */
int parse_cgroup(const char *buf, char *ret_path, size_t len);
/* Parses /proc/mounts text: where the v1 cpu hierarchy and the cgroup2 mount are. */
void parse_mounts(const char *text, char *ret_v1cpu, char *ret_v2, size_t len);
/*
 * Whether a cgroup or cgroup2 mount in /proc/mounts text has favordynmods. Every move
 * of another task write-locks cgroup_threadgroup_rwsem, one lock for all hierarchies;
 * favordynmods on any of them keeps it where that costs no RCU grace period.
 */
bool parse_mounts_favordynmods(const char *text);

/* What a proc mount's options say about who sees whose processes (proc(5)). */
struct parse_procfs {
	unsigned hidepid;       /* 0 off, 1 noaccess, 2 invisible, 4 ptraceable */
	bool gid_set;           /* gid= given */
	unsigned gid;
};
/*
 * One line of /proc/PID/mountinfo (the newline may be there or not): 1 when it is a
 * proc mount whose mount point, unescaped, is mnt, with its hidepid= and gid= in
 * *ret (a hidepid value this parser does not know counts as invisible); 0 when it is
 * another mount; -EINVAL when the line is malformed.
 */
int parse_mountinfo_proc(const char *line, const char *mnt, struct parse_procfs *ret);
/*
 * One line of /proc/PID/mountinfo, for finding a mount by what the kernel says of it
 * rather than by its mount point, which its owner chose. The kernel writes every
 * field; only paths and the source are the owner's, and those it escapes.
 */
struct parse_mount {
	unsigned id;              /* the mount ID: statx's STATX_MNT_ID */
	unsigned major, minor;    /* the superblock's device: st_dev of a file on it */
	bool whole;               /* its root is the file system's root ("/") */
	bool proc;                /* type proc: then procfs holds its options */
	bool at_mnt;              /* its mount point, unescaped, is the mnt asked for */
	struct parse_procfs procfs;
};
/* 0 and *ret, or -EINVAL for a malformed line. mnt may be NULL (at_mnt false). */
int parse_mountinfo(const char *line, const char *mnt, struct parse_mount *ret);

#endif
