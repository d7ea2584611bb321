/*
 * Who a process is, for the latency rules: comm, exe, cmdline, real uid and cgroup,
 * read from PROC_ROOT/PID into a buffer the caller owns. A sample source: it only reads.
 */
#ifndef RQB_IDENT_H
#define RQB_IDENT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "model/model.h"

#define IDENT_COMM_MAX 16      /* the kernel's TASK_COMM_LEN */
#define IDENT_CMDLINE_MAX 4096 /* a longer cmdline is cut to 4095 bytes */

/* Where the strings of a struct proc_ident live; one per process being read. */
struct ident_buf {
	char comm[IDENT_COMM_MAX];
	char exe[PATH_MAX];
	char cmdline[IDENT_CMDLINE_MAX];
	char cgroup[PATH_MAX];
};

/*
 * What the kernel said a process runs (the BPF event source: at exec, or from a task
 * walk): the device and inode of the file, as stat(2) gives them.
 */
struct ident_exetab;

struct ident_exe {
	dev_t dev;
	ino_t ino;
};

/*
 * Reads process pid under proc_root ("/proc", or a fake tree in tests) into buf and
 * points ret's strings into it. Only the real uid is required: a string that cannot
 * be read is "". exe is "" also when the path the link names does not lead, in our
 * mount namespace, to the file the process runs: another namespace can put any file
 * at /usr/sbin/mysqld, and a deleted or replaced binary shows a stale path.
 * 0, -ESRCH when the process is gone (or went while it was read), or -errno.
 */
int ident_read(const char *proc_root, pid_t pid, struct ident_buf *buf, struct proc_ident *ret);
/*
 * The same, where the kernel said which file the process runs (kexe, NULL if not):
 * exe is then the first rule's exe in rules that is a plain path (no fnmatch(3)
 * pattern characters) and whose lstat() here is that very file, which needs no access
 * to /proc/PID/exe (CAP_SYS_PTRACE for another user's process); if none is, exe is
 * read from /proc/PID/exe as ident_read does, for the rules' patterns. Only the
 * fields some rule matches on are read (uid from status, comm, exe, cmdline, cgroup);
 * the others are "" (uid RULE_UID_ANY): they change no match.
 */
int ident_read_known(const char *proc_root, pid_t pid, const struct ident_exe *kexe,
		     const struct rule_set *rules, const struct ident_exetab *t,
		     struct ident_buf *buf, struct proc_ident *ret);

/* The fields a rule can match on: uid, comm, exe, cmdline, cgroup. */
#define IDENT_FIELDS 5
/*
 * What ident_read_known would find by going through rules, found once: the files of
 * the plain-path exe rules by (device, inode), lstat()ed when it is built, and the
 * fields some rule matches on. With it, an exec costs one lookup and one lstat
 * whatever the rule count; without it (t NULL), every plain-path rule is lstat()ed.
 * A rule's file replaced after the build is matched by its path (when /proc/PID/exe
 * names it here) until the table is built again (latmgr_exetab_build: at a reload and
 * when its folder changes).
 * Valid while rules is neither changed nor freed. 0, or -ENOMEM.
 */
int ident_exetab_build(const struct rule_set *rules, struct ident_exetab **ret);
void ident_exetab_free(struct ident_exetab *t);
/* Whether a rule's exe is a plain absolute path, which fnmatch(3) matches only to itself. */
bool ident_exe_is_path(const char *exe);

/* Parsers, for tests and fuzzing. */
/* The real uid from the text of /proc/PID/status. 0 or -EINVAL. */
int ident_parse_uid(const char *status, uid_t *ret);
/* The effective uid, from the same line (peers: whether a tool runs as root). */
int ident_parse_euid(const char *status, uid_t *ret);
/*
 * Turns the n bytes of /proc/PID/cmdline in buf (NUL-ended at buf[n]) into argv
 * joined by spaces, in place. full says the read filled the buffer, so the text may
 * have been cut: a UTF-8 sequence cut in the middle is then dropped.
 */
void ident_join_cmdline(char *buf, size_t n, bool full);

#endif
