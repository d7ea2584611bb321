/*
 * Acquire for the ctl socket and the D-Bus API: reads a caller's credentials, and
 * what its /proc shows it, from /proc into plain structs. It decides nothing
 * (ctl_perm.c does) and never reads a file by pid without proving afterwards that the
 * pid still named the same process (or leaving that proof to its caller).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <linux/magic.h>

#include "ctl/ctl_peer.h"
#include "rqbalance.h"
#include "proc/procfs.h"
#include "util/log.h"
#include "util/safeopen.h"
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

/* How many pid namespaces list a task: the numbers on its status's "NSpid:" line. */
static int nspid_count(const char *status)
{
	char v[256];
	int n = 0;

	if (parse_status_field(status, "NSpid", v, sizeof(v)) < 0)
		return 1; /* a kernel before 4.1: no nested namespaces to tell */
	for (char *save = NULL, *t = strtok_r(v, " \t", &save); t; t = strtok_r(NULL, " \t", &save))
		n++;
	return n;
}

/* How many pid namespaces list pid, as the daemon's /proc shows it: 1 in its own. */
static int nspid_levels(const char *proc_root, pid_t pid)
{
	char buf[4096];

	if (procfs_status_text(proc_root, 0, pid, buf, sizeof(buf)) < 0)
		return -ESRCH;
	return nspid_count(buf);
}

/* What a mountinfo search looks for: the mount of ID id (0: the last proc mount at mnt). */
struct mi_search {
	unsigned id;
	const char *mnt;
	struct parse_mount found;
	bool got;
};

/* 1 where the search is over (the mount of that ID is found), else 0. */
static int mi_line(const char *line, struct mi_search *s)
{
	struct parse_mount m;

	if (parse_mountinfo(line, s->mnt, &m) < 0)
		return 0;
	if (s->id ? m.id != s->id : !(m.proc && m.at_mnt))
		return 0;
	s->found = m;
	s->got = true;
	return s->id != 0;
}

static uint64_t cpu_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/*
 * Searches the mountinfo file at path, read in chunks, within CTL_PEER_MOUNTINFO_MAX
 * bytes and CTL_PEER_MOUNTINFO_CPU_NS of the daemon's time (the kernel's work on a
 * table its owner sized is the daemon's time): 0 with s->got when found, -E2BIG where
 * either bound ran out first (the search then fails closed), -ESRCH when unreadable.
 */
static int mi_search(const char *path, struct mi_search *s)
{
	uint64_t until = cpu_ns() + CTL_PEER_MOUNTINFO_CPU_NS;
	size_t n = 0, done = 0;
	int fd, r = -E2BIG;
	char *buf;
	ssize_t got;

	buf = malloc(CTL_PEER_MOUNTINFO_MAX + 1);
	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return -ESRCH;
	}
	while (n < CTL_PEER_MOUNTINFO_MAX && cpu_ns() < until) {
		size_t want = CTL_PEER_MOUNTINFO_MAX - n;

		got = read(fd, buf + n,
			   want < CTL_PEER_MOUNTINFO_CHUNK ? want : CTL_PEER_MOUNTINFO_CHUNK);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			r = got < 0 ? -ESRCH : 0;
			break;
		}
		n += (size_t)got;
		buf[n] = '\0';
		/* Whole lines only; a line the read cut waits for the next. */
		for (char *eol; (eol = memchr(buf + done, '\n', n - done));
		     done = (size_t)(eol - buf) + 1) {
			*eol = '\0';
			if (mi_line(buf + done, s)) {
				r = 0;
				goto out;
			}
		}
	}
out:
	close(fd);
	free(buf);
	return r;
}

/*
 * The daemon's own proc mount at proc_root: its superblock and options. -ENOENT where
 * proc_root is no proc instance (a test's fake tree), -ESRCH where its line is not
 * found (never taken for a fake tree: the caller's view then fails closed).
 */
static int own_view(const char *proc_root, dev_t *ret_dev, struct parse_procfs *ret)
{
	struct mi_search s = { 0 };
	char path[PATH_MAX];
	struct statx stx;
	struct statfs sf;
	int r;

	if (statfs(proc_root, &sf) < 0 || sf.f_type != PROC_SUPER_MAGIC)
		return -ENOENT;
	if (statx(AT_FDCWD, proc_root, 0, STATX_INO | STATX_MNT_ID, &stx) < 0 ||
	    stx.stx_ino != CTL_PEER_PROC_ROOT_INO)
		return -ESRCH;
	/* Before Linux 5.8 no mount ID: the last proc mounted there, of that superblock. */
	s.id = stx.stx_mask & STATX_MNT_ID ? (unsigned)stx.stx_mnt_id : 0;
	s.mnt = proc_root;
	snprintf(path, sizeof(path), "%s/self/mountinfo", proc_root);
	r = mi_search(path, &s);
	if (r < 0)
		return r;
	if (!s.got || !s.found.proc || !s.found.whole || s.found.major != stx.stx_dev_major ||
	    s.found.minor != stx.stx_dev_minor)
		return -ESRCH;
	*ret_dev = makedev(stx.stx_dev_major, stx.stx_dev_minor);
	*ret = s.found.procfs;
	return 0;
}

/*
 * Whether the proc instance procfd lists the daemon's own pid namespace: the daemon
 * is in it (its "self" names a pid), and its status there lists one number, so the
 * instance's namespace is the daemon's own level, which holds only the daemon's own.
 * A proc of a namespace below has no "self" for the daemon; one of a namespace above
 * lists more numbers. No mount another user made over a part of it is crossed.
 */
static bool lists_own_pidns(int procfd)
{
	char link[32], path[64], status[4096];
	int fd, n = 0;
	ssize_t len, got;
	char *end;
	long pid;

	if (safeopen_beneath(procfd, "self", O_PATH | O_NOFOLLOW, &fd) < 0)
		return false;
	len = readlinkat(fd, "", link, sizeof(link) - 1);
	close(fd);
	if (len <= 0)
		return false;
	link[len] = '\0';
	errno = 0;
	pid = strtol(link, &end, 10);
	if (errno || *end || pid <= 0)
		return false;
	snprintf(path, sizeof(path), "%ld/status", pid);
	if (safeopen_beneath(procfd, path, O_RDONLY, &fd) < 0)
		return false;
	while ((size_t)n < sizeof(status) - 1 &&
	       (got = read(fd, status + n, sizeof(status) - 1 - (size_t)n)) > 0)
		n += (int)got;
	close(fd);
	status[n] = '\0';
	return nspid_count(status) == 1;
}

/*
 * The caller's /proc as the kernel resolves it for the caller (its root, then
 * "proc"), through the daemon's /proc: needs ptrace read access to pid (CAP_SYS_PTRACE
 * for another user's), -EACCES or -EPERM without. -ENOENT where no proc instance's
 * root is there; -ESRCH when gone.
 */
static int open_peer_proc(const char *proc_root, pid_t pid, int *ret_fd, struct stat *ret_st)
{
	char path[PATH_MAX];
	struct statfs sf;
	int root, fd, r;

	/*
	 * The link is the kernel's, followed on purpose; what the caller made under it is
	 * resolved by safeopen, as the kernel resolves it for the caller.
	 */
	snprintf(path, sizeof(path), "%s/%d/root", proc_root, (int)pid);
	root = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return errno == EACCES || errno == EPERM ? -errno : -ESRCH;
	r = safeopen_path(root, "proc", &fd);
	close(root);
	if (r < 0)
		return -ENOENT;
	if (fstatfs(fd, &sf) < 0 || sf.f_type != PROC_SUPER_MAGIC || fstat(fd, ret_st) < 0 ||
	    ret_st->st_ino != CTL_PEER_PROC_ROOT_INO) {
		close(fd);
		return -ENOENT;
	}
	*ret_fd = fd;
	return 0;
}

/*
 * With ptrace access: the caller's own proc instance, judged on the pid namespace it
 * lists; its options from its one mountinfo line, found by the mount ID the kernel
 * gave, unless it is the daemon's own superblock. (statmount(2) would give them with
 * no table read, but for another mount namespace it takes CAP_SYS_ADMIN, which the
 * daemon drops once set up.)
 */
static int peer_view_kernel(const char *proc_root, pid_t pid, int procfd, const struct stat *st,
			    dev_t own_dev, const struct parse_procfs *own, struct parse_procfs *ret)
{
	struct mi_search s = { 0 };
	char path[PATH_MAX];
	struct statx stx;
	int r;

	if (st->st_dev == own_dev) {
		*ret = *own; /* the daemon's own instance: its namespace, its options */
		return 0;
	}
	if (!lists_own_pidns(procfd))
		return -EXDEV;
	if (statx(procfd, "", AT_EMPTY_PATH, STATX_MNT_ID, &stx) < 0 ||
	    !(stx.stx_mask & STATX_MNT_ID))
		return -ENOENT;
	s.id = (unsigned)stx.stx_mnt_id;
	snprintf(path, sizeof(path), "%s/%d/mountinfo", proc_root, (int)pid);
	r = mi_search(path, &s);
	if (r < 0)
		return r;
	if (!s.got || !s.found.proc || !s.found.whole ||
	    makedev(s.found.major, s.found.minor) != st->st_dev)
		return -ENOENT; /* gone from the table since: not judged on another line */
	*ret = s.found.procfs;
	return 0;
}

/*
 * Without: the last proc mount at /proc in the caller's mountinfo, trusted only where
 * it is the daemon's own superblock (same namespace, same options); any other fails
 * closed, as nothing here says which namespace it lists. With own NULL, where the
 * daemon's proc_root is no proc instance (a test's fake tree, which has no kernel to
 * ask), its options as the text gives them.
 */
static int peer_view_text(const char *proc_root, pid_t pid, dev_t own_dev,
			  const struct parse_procfs *own, struct parse_procfs *ret)
{
	struct mi_search s = { .mnt = "/proc" };
	char path[PATH_MAX];
	int r;

	snprintf(path, sizeof(path), "%s/%d/mountinfo", proc_root, (int)pid);
	r = mi_search(path, &s);
	if (r < 0)
		return r;
	if (!s.got)
		return -ENOENT;
	if (!own) {
		*ret = s.found.procfs;
		return 0;
	}
	if (!s.found.whole || makedev(s.found.major, s.found.minor) != own_dev)
		return -EXDEV;
	*ret = *own;
	return 0;
}

int ctl_peer_view(const char *proc_root, pid_t pid, struct parse_procfs *ret)
{
	struct parse_procfs own;
	dev_t own_dev = 0;
	struct stat st;
	int levels, r, fd;

	if (!pid)
		return own_view(proc_root, &own_dev, ret);
	levels = nspid_levels(proc_root, pid);
	if (levels < 0)
		return levels;
	if (levels > 1)
		return -EXDEV;
	r = own_view(proc_root, &own_dev, &own);
	if (r == -ENOENT)
		return peer_view_text(proc_root, pid, 0, NULL, ret);
	if (r < 0)
		return r;
	r = open_peer_proc(proc_root, pid, &fd, &st);
	if (r == -EACCES || r == -EPERM)
		return peer_view_text(proc_root, pid, own_dev, &own, ret);
	if (r < 0)
		return r;
	r = peer_view_kernel(proc_root, pid, fd, &st, own_dev, &own, ret);
	close(fd);
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
static int owner_uid(const char *name, uid_t *ret)
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
	    f > UINT32_MAX || c == 0 || c > UINT32_MAX || owner_uid(line, &ret->owner) < 0)
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
