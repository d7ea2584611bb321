/*
 * The ctl socket's peer: the credentials a connection is judged on, read once at
 * accept and again before each request, so that a connection whose process has
 * executed a set-user-ID program or changed its credentials since is caught.
 */
#ifndef RQB_CTL_PEER_H
#define RQB_CTL_PEER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <time.h>

#include "proc/parse.h"

struct ctl_peer {
	uint64_t start_time;  /* /proc/PID/stat field 22, clock ticks after boot */
	char uid[64];         /* the "Uid:" line of /proc/PID/status: real, effective, saved, fs */
	char gid[64];         /* its "Gid:" line */
	uint64_t cap_eff;     /* CapEff: the capability bits, in the peer's own user namespace */
	uint64_t cap_prm;     /* CapPrm */
	uid_t owner;          /* owner of /proc/PID: the euid while dumpable, root once not */
	bool same_userns;     /* in the daemon's own user namespace (ctl_peer_read says how) */
};

/*
 * Reads process pid's credentials from proc_root (/proc) into *ret, then makes sure
 * they were pid's and not a process that reused its pid: pidfd (SO_PEERPIDFD) has
 * reported no exit, or, with pidfd -1 (before Linux 6.5), the start time read before
 * is the one read after. 0, or -ESRCH when the process is gone or unreadable.
 *
 * same_userns: its uid_map and gid_map, as the daemon reads them, are the daemon's
 * own (and, where the daemon may resolve both /proc/PID/ns/user links, which needs
 * CAP_SYS_PTRACE over another user's process, the namespaces are one). The maps of a
 * user namespace show its parent's IDs, those of a child the reader's: a child whose
 * maps read as the daemon's own can only be made with CAP_SETUID and CAP_SETGID over
 * every ID the daemon's namespace maps, by its root.
 */
int ctl_peer_read(const char *proc_root, pid_t pid, int pidfd, struct ctl_peer *ret);
/*
 * Task tid's credentials as its status shows them (uid, gid, capabilities) and the
 * owner of proc_root/TID, for ctl_perm_visible; then, with start_time not 0, proof
 * that tid is still the task of that start time. 0, or -ESRCH when gone, unreadable or
 * another task.
 */
int ctl_peer_creds(const char *proc_root, pid_t tid, uint64_t start_time, struct ctl_peer *ret);

/*
 * What process pid's /proc shows it, judged on what the kernel says, never on a
 * mount point's text: the proc instance the kernel resolves at "/proc" under pid's
 * own root. Where the daemon may follow /proc/PID/root (ptrace read access: root
 * with CAP_SYS_PTRACE), that instance is trusted where it lists the daemon's own pid
 * namespace (its "self" is the daemon, of one NSpid), with the options of its one
 * mountinfo line, found by the mount ID statx gives. Without, the last proc mount at
 * /proc in pid's mountinfo is trusted only where it is the daemon's own superblock.
 * Any mountinfo read stops at CTL_PEER_MOUNTINFO_MAX bytes and
 * CTL_PEER_MOUNTINFO_CPU_NS of the daemon's time, and then fails closed: its size is
 * the caller's to choose. With pid 0, the daemon's own: the proc mount at proc_root.
 * 0 and *ret; -ENOENT when no proc is mounted there (a test's fake tree, a chroot
 * without one); -EXDEV when pid's /proc lists another pid namespace than the daemon's,
 * or pid is in a pid namespace below the daemon's (its status lists more than one
 * NSpid); -E2BIG where a bound ran out; -ESRCH when unreadable (gone).
 */
#define CTL_PEER_MOUNTINFO_MAX (128 * 1024)
/*
 * Bytes a read asks the kernel for: it formats about that much, a few lines, before
 * the CPU bound is looked at again; a line costs a walk up its mount's parents, which
 * the owner may stack 100,000 deep (some 5 ms a line).
 */
#define CTL_PEER_MOUNTINFO_CHUNK 1024
#define CTL_PEER_MOUNTINFO_CPU_NS 20000000ull   /* 20 ms */
#define CTL_PEER_PROC_ROOT_INO 1                /* a proc instance's root directory */
int ctl_peer_view(const char *proc_root, pid_t pid, struct parse_procfs *ret);

/* A user namespace's uid_map, as the daemon reads it: which of the daemon's uids it maps. */
#define CTL_IDMAP_MAX 16
struct ctl_idmap {
	bool same;           /* the daemon's own namespace (the maps read alike) */
	int n;               /* ranges; -1 where there are more than CTL_IDMAP_MAX */
	struct ctl_idrange {
		uint32_t outside; /* the first of the daemon's uids it maps */
		uint32_t count;
	} r[CTL_IDMAP_MAX];
};
/*
 * Reads process pid's uid_map (the daemon's own from proc_root/self) into *ret: 0, or
 * -ESRCH when unreadable. Whether pid is still the process meant is its caller's proof.
 */
int ctl_peer_idmap(const char *proc_root, pid_t pid, struct ctl_idmap *ret);

/*
 * Who holds which subordinate uids (/etc/subuid, as useradd writes it and newuidmap
 * reads it): one person's, however many uids it maps into a namespace of its own.
 */
struct ctl_subid {
	uid_t owner;
	uint32_t first, count;
};
struct ctl_subids {
	size_t n;
	struct ctl_subid *v;
	bool read;              /* the file was read once: what follows says which */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};
#define CTL_SUBIDS_MAX 65536 /* entries kept; a longer file is cut (logged) */
/*
 * Reads path into *s unless it is the file read last time, unchanged (a stat a call).
 * An owner named by a name is resolved here, at the read; a name that resolves to no
 * user, or a line that is no entry, is skipped. A missing file is an empty table.
 * 0 or -errno (the old table kept).
 */
int ctl_peer_subids(const char *path, struct ctl_subids *s);
void ctl_peer_subids_free(struct ctl_subids *s);

#endif
