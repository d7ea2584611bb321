/*
 * Acquire for the ctl socket and the D-Bus API: reads a caller's credentials, and
 * what its /proc shows it, from /proc into plain structs. It decides nothing
 * (ctl_perm.c does) and never reads a file by pid without proving afterwards that the
 * pid still named the same process (or leaving that proof to its caller).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl/ctl_peer.h"
#include "rqbalance.h"
#include "sample/procfs.h"
#include "util/log.h"
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

/* One uid_map line: inside outside count. */
static int idmap_line(const char *line, struct ctl_idrange *ret)
{
	unsigned long in, out, count;

	if (sscanf(line, "%lu %lu %lu", &in, &out, &count) != 3 || out > UINT32_MAX ||
	    count > UINT32_MAX)
		return -EINVAL;
	*ret = (struct ctl_idrange){ .outside = (uint32_t)out, .count = (uint32_t)count };
	return 0;
}

int ctl_peer_idmap(const char *proc_root, pid_t pid, struct ctl_idmap *ret)
{
	char path[PATH_MAX], mine[PATH_MAX], buf[8192];
	struct ctl_idmap m = { 0 };
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%d/uid_map", proc_root, (int)pid);
	n = util_read_file(path, buf, sizeof(buf));
	if (n < 0)
		return -ESRCH;
	for (char *save = NULL, *l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (m.n == CTL_IDMAP_MAX) {
			m.n = -1;
			break;
		}
		if (idmap_line(l, &m.r[m.n]) == 0)
			m.n++;
	}
	snprintf(path, sizeof(path), "%s/%d/uid_map", proc_root, (int)pid);
	snprintf(mine, sizeof(mine), "%s/self/uid_map", proc_root);
	m.same = same_file(mine, path);
	*ret = m;
	return 0;
}

/* An owner as /etc/subuid names it: a user name, or a uid. */
static int subid_owner(const char *name, uid_t *ret)
{
	struct passwd pw, *res = NULL;
	char buf[4096], *end;
	unsigned long v;

	errno = 0;
	v = strtoul(name, &end, 10);
	if (*name && !*end && !errno && v < (uid_t)-1) {
		*ret = (uid_t)v;
		return 0;
	}
	if (getpwnam_r(name, &pw, buf, sizeof(buf), &res) != 0 || !res)
		return -ENOENT;
	*ret = pw.pw_uid;
	return 0;
}

static int subid_line(char *line, struct ctl_subid *ret)
{
	char *first = strchr(line, ':'), *count, *end1, *end2;
	unsigned long f, c;

	if (!first || !(count = strchr(first + 1, ':')))
		return -EINVAL;
	*first++ = '\0';
	*count++ = '\0';
	errno = 0;
	f = strtoul(first, &end1, 10);
	c = strtoul(count, &end2, 10);
	if (errno || end1 == first || *end1 || end2 == count || (*end2 && *end2 != '\n') ||
	    f > UINT32_MAX || c == 0 || c > UINT32_MAX || subid_owner(line, &ret->owner) < 0)
		return -EINVAL;
	ret->first = (uint32_t)f;
	ret->count = (uint32_t)c;
	return 0;
}

void ctl_peer_subids_free(struct ctl_subids *s)
{
	free(s->v);
	*s = (struct ctl_subids){ 0 };
}

int ctl_peer_subids(const char *path, struct ctl_subids *s)
{
	struct ctl_subids t = { .read = true };
	char *line = NULL;
	size_t cap = 0, vcap = 0;
	struct stat st;
	FILE *f;

	if (stat(path, &st) < 0) {
		if (errno != ENOENT)
			return -errno;
		ctl_peer_subids_free(s);
		s->read = true;
		return 0;
	}
	if (s->read && s->dev == st.st_dev && s->ino == st.st_ino && s->size == st.st_size &&
	    s->mtime.tv_sec == st.st_mtim.tv_sec && s->mtime.tv_nsec == st.st_mtim.tv_nsec)
		return 0;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		struct ctl_subid e;
		struct ctl_subid *v;

		if (subid_line(line, &e) < 0)
			continue;
		if (t.n == CTL_SUBIDS_MAX) {
			log_warn("ctl: %s: more than %d entries: the rest are not counted", path,
				 CTL_SUBIDS_MAX);
			break;
		}
		v = util_grow(t.v, &vcap, t.n, sizeof(*v));
		if (!v) {
			free(line);
			fclose(f);
			free(t.v);
			return -ENOMEM;
		}
		t.v = v;
		t.v[t.n++] = e;
	}
	free(line);
	fclose(f);
	t.dev = st.st_dev;
	t.ino = st.st_ino;
	t.size = st.st_size;
	t.mtime = st.st_mtim;
	ctl_peer_subids_free(s);
	*s = t;
	return 0;
}
