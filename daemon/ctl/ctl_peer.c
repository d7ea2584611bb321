/*
 * Acquire for the ctl socket and the D-Bus API: reads a caller's credentials, and
 * what its /proc shows it, from /proc into plain structs. It decides nothing
 * (ctl_perm.c does) and never reads a file by pid without proving afterwards that the
 * pid still named the same process (or leaving that proof to its caller).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl/ctl_peer.h"
#include "rqbalance.h"
#include "sample/procfs.h"
#include "util/util.h"

static int caps_of(const char *text, const char *key, uint64_t *ret)
{
	char v[32], *end;

	if (parse_status_field(text, key, v, sizeof(v)) < 0)
		return -ENOENT;
	errno = 0;
	*ret = strtoull(v, &end, 16);
	return errno || end == v ? -EINVAL : 0;
}

static int read_status(const char *proc_root, pid_t pid, struct ctl_peer *p)
{
	char buf[4096];

	if (procfs_status_text(proc_root, 0, pid, buf, sizeof(buf)) < 0)
		return -ESRCH;
	if (parse_status_field(buf, "Uid", p->uid, sizeof(p->uid)) < 0 ||
	    parse_status_field(buf, "Gid", p->gid, sizeof(p->gid)) < 0 ||
	    caps_of(buf, "CapEff", &p->cap_eff) < 0 || caps_of(buf, "CapPrm", &p->cap_prm) < 0)
		return -ESRCH;
	return 0;
}

/* Both files read, and equal: an unreadable map is never taken for a match. */
static bool same_file(const char *a, const char *b)
{
	char x[4096], y[4096];
	ssize_t nx = util_read_file(a, x, sizeof(x)), ny = util_read_file(b, y, sizeof(y));

	return nx >= 0 && nx == ny && memcmp(x, y, (size_t)nx) == 0;
}

static bool same_userns(const char *proc_root, pid_t pid)
{
	char mine[PATH_MAX], theirs[PATH_MAX];
	struct stat a, b;

	for (int i = 0; i < 2; i++) {
		const char *map = i ? "gid_map" : "uid_map";

		snprintf(mine, sizeof(mine), "%s/self/%s", proc_root, map);
		snprintf(theirs, sizeof(theirs), "%s/%d/%s", proc_root, (int)pid, map);
		if (!same_file(mine, theirs))
			return false;
	}
	/* Only a proof where it can be had: without CAP_SYS_PTRACE the link is denied. */
	snprintf(mine, sizeof(mine), "%s/self/ns/user", proc_root);
	snprintf(theirs, sizeof(theirs), "%s/%d/ns/user", proc_root, (int)pid);
	if (stat(mine, &a) == 0 && stat(theirs, &b) == 0)
		return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
	return true;
}

int ctl_peer_creds(const char *proc_root, pid_t tid, uint64_t start_time, struct ctl_peer *ret)
{
	char path[PATH_MAX];
	struct ctl_peer p = { 0 };
	struct stat st;

	snprintf(path, sizeof(path), "%s/%d", proc_root, (int)tid);
	if (read_status(proc_root, tid, &p) < 0 || stat(path, &st) < 0)
		return -ESRCH;
	p.owner = st.st_uid;
	if (start_time && (procfs_start_time(proc_root, tid, &p.start_time) < 0 ||
			   p.start_time != start_time))
		return -ESRCH;
	*ret = p;
	return 0;
}

int ctl_peer_read(const char *proc_root, pid_t pid, int pidfd, struct ctl_peer *ret)
{
	char path[PATH_MAX];
	struct ctl_peer p = { 0 };
	uint64_t again;
	struct stat st;

	if (procfs_start_time(proc_root, pid, &p.start_time) < 0 ||
	    read_status(proc_root, pid, &p) < 0)
		return -ESRCH;
	snprintf(path, sizeof(path), "%s/%d", proc_root, (int)pid);
	if (stat(path, &st) < 0)
		return -ESRCH;
	p.owner = st.st_uid;
	p.same_userns = same_userns(proc_root, pid);
	/* Everything above was about pid; now prove pid was still the same process. */
	if (pidfd >= 0 ? util_pidfd_alive(pidfd) < 0
		       : procfs_start_time(proc_root, pid, &again) < 0 || again != p.start_time)
		return -ESRCH;
	*ret = p;
	return 0;
}

/* How many pid namespaces list pid ("NSpid:" of its status): 1 in the daemon's own. */
static int nspid_levels(const char *proc_root, pid_t pid)
{
	char buf[4096], v[256];
	int n = 0;

	if (procfs_status_text(proc_root, 0, pid, buf, sizeof(buf)) < 0)
		return -ESRCH;
	if (parse_status_field(buf, "NSpid", v, sizeof(v)) < 0)
		return 1; /* a kernel before 4.1: no nested namespaces to tell */
	for (char *save = NULL, *t = strtok_r(v, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
		n++;
	return n;
}

int ctl_peer_view(const char *proc_root, pid_t pid, struct parse_procfs *ret)
{
	char path[PATH_MAX], *line = NULL;
	const char *mnt = pid ? "/proc" : proc_root;
	struct parse_procfs v, found;
	size_t cap = 0;
	int r = -ENOENT, levels;
	FILE *f;

	if (pid) {
		levels = nspid_levels(proc_root, pid);
		if (levels < 0)
			return levels;
		if (levels > 1)
			return -EXDEV;
		snprintf(path, sizeof(path), "%s/%d/mountinfo", proc_root, (int)pid);
	} else {
		snprintf(path, sizeof(path), "%s/self/mountinfo", proc_root);
	}
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT && !pid ? -ENOENT : -ESRCH;
	while (getline(&line, &cap, f) > 0)
		if (parse_mountinfo_proc(line, mnt, &v) == 1) {
			found = v;
			r = 0;
		}
	free(line);
	fclose(f);
	if (r == 0)
		*ret = found;
	return r;
}
