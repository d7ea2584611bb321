/*
 * Task events (taskev/, for the latency manager): a process's identity for the latency
 * rules, read from one proc root that tests can point at a fake tree. It only reads, and
 * decides nothing: which rule matches is the policy's (policy/rules.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rqbalance.h"
#include "proc/procfs.h"
#include "taskev/ident.h"
#include "util/log.h"
#include "util/timedread.h"
#include "util/util.h"

int ident_parse_uid(const char *status, uid_t *ret)
{
	struct parse_status s;

	if (!(parse_status(status, &s) & PARSE_STATUS_RUID))
		return -EINVAL;
	*ret = s.ruid;
	return 0;
}

int ident_parse_euid(const char *status, uid_t *ret)
{
	struct parse_status s;

	if (!(parse_status(status, &s) & PARSE_STATUS_EUID))
		return -EINVAL;
	*ret = s.euid;
	return 0;
}

/* Whether the comma-separated list [s, end) holds word. */
void ident_join_cmdline(char *buf, size_t n, bool full)
{
	if (full) {
		size_t keep = n;

		/* Back up over continuation bytes to the lead byte, then see if all came. */
		while (keep > 0 && ((unsigned char)buf[keep - 1] & 0xc0) == 0x80)
			keep--;
		if (keep > 0 && (unsigned char)buf[keep - 1] >= 0xc0) {
			unsigned char lead = (unsigned char)buf[keep - 1];
			size_t need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : 2;

			n = n - (keep - 1) >= need ? n : keep - 1;
		}
	}
	/* argv ends with a NUL; between arguments each NUL becomes one space. */
	while (n > 0 && buf[n - 1] == '\0')
		n--;
	for (size_t i = 0; i < n; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[n] = '\0';
}

static void read_exe(const char *dir, char *exe, size_t len)
{
	struct stat runs, named;
	char path[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/exe", dir);
	n = readlink(path, exe, len);
	/* A kernel thread has no exe; a path that fills the buffer may have been cut. */
	if (n <= 0 || (size_t)n >= len) {
		exe[0] = '\0';
		return;
	}
	exe[n] = '\0';
	/*
	 * The text is the path in the process's own mount namespace, which an
	 * unprivileged user namespace can fill at will: believe it only if it leads here
	 * to the very file the process runs.
	 */
	if (stat(path, &runs) < 0 || stat(exe, &named) < 0 || runs.st_dev != named.st_dev ||
	    runs.st_ino != named.st_ino)
		exe[0] = '\0';
}

bool ident_exe_is_path(const char *exe)
{
	return exe[0] == '/' && !strpbrk(exe, "*?[\\");
}

/* The plain-path exe rules' files by (device, inode), and what the rules match on. */
struct ident_exetab {
	struct exeslot {
		dev_t dev;
		ino_t ino;
		unsigned rule;   /* the first rule naming that file, + 1; 0 = free */
	} *s;
	size_t cap;              /* a power of two, over twice the entries; 0 = none */
	bool need[IDENT_FIELDS]; /* fields_needed's answer for the set */
};

static size_t exeslot_home(const struct ident_exetab *t, dev_t dev, ino_t ino)
{
	uint64_t h = ((uint64_t)dev * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)ino * 0xff51afd7ed558ccdull);

	return (size_t)(h ^ (h >> 29)) & (t->cap - 1);
}

static struct exeslot *exeslot_find(const struct ident_exetab *t, dev_t dev, ino_t ino)
{
	size_t i = exeslot_home(t, dev, ino);

	while (t->s[i].rule && (t->s[i].dev != dev || t->s[i].ino != ino))
		i = (i + 1) & (t->cap - 1);
	return &t->s[i];
}

/* What a process's identity must hold for rules to match on it: all of it without rules. */
static void fields_needed(const struct rule_set *rules, bool ret[IDENT_FIELDS])
{
	enum { UID, COMM, EXE, CMDLINE, CGROUP };

	for (int f = 0; f < IDENT_FIELDS; f++)
		ret[f] = !rules;
	for (unsigned i = 0; rules && i < rules->n; i++) {
		const struct rule *r = &rules->r[i];

		ret[UID] |= r->uid != RULE_UID_ANY;
		ret[COMM] |= r->comm[0] != '\0';
		ret[EXE] |= r->exe[0] != '\0';
		ret[CMDLINE] |= r->cmdline[0] != '\0';
		ret[CGROUP] |= r->cgroup[0] != '\0';
	}
}

int ident_exetab_build(const struct rule_set *rules, struct ident_exetab **ret)
{
	struct ident_exetab *t = calloc(1, sizeof(*t));
	unsigned paths = 0;

	if (!t)
		return -ENOMEM;
	fields_needed(rules, t->need);
	for (unsigned i = 0; rules && i < rules->n; i++)
		paths += ident_exe_is_path(rules->r[i].exe);
	for (t->cap = paths ? 16 : 0; t->cap && t->cap < 2 * (size_t)paths + 2;)
		t->cap *= 2;
	if (t->cap && !(t->s = calloc(t->cap, sizeof(*t->s)))) {
		free(t);
		return -ENOMEM;
	}
	/* lstat, not stat: a rule naming a symbolic link matches nothing (see below). */
	for (unsigned i = 0; t->cap && i < rules->n; i++) {
		struct exeslot *sl;
		struct stat st;

		if (!ident_exe_is_path(rules->r[i].exe) || lstat(rules->r[i].exe, &st) < 0 ||
		    !S_ISREG(st.st_mode))
			continue;
		sl = exeslot_find(t, st.st_dev, st.st_ino);
		if (!sl->rule)
			*sl = (struct exeslot){ .dev = st.st_dev, .ino = st.st_ino, .rule = i + 1 };
	}
	*ret = t;
	return 0;
}

void ident_exetab_free(struct ident_exetab *t)
{
	if (t)
		free(t->s);
	free(t);
}

static bool is_file(const char *p, const struct ident_exe *k, size_t len)
{
	struct stat st;

	return strlen(p) < len && lstat(p, &st) == 0 && S_ISREG(st.st_mode) &&
	       st.st_dev == k->dev && st.st_ino == k->ino;
}

/*
 * The first plain-path exe of the rules that is, here, the file the kernel said the
 * process runs. lstat, not stat: a rule naming a symbolic link matches nothing, as
 * with /proc/PID/exe, which names the file the link leads to. With a table, one
 * lookup and one lstat, which checks that the path still is that file (a rule's file
 * replaced since the table was built is found by its path, until the next build,
 * which a change in its folder brings); without, every plain-path rule is tried.
 */
static bool exe_from_rules(const struct ident_exe *k, const struct rule_set *rules,
			   const struct ident_exetab *t, char *exe, size_t len)
{
	const char *p;

	if (t) {
		const struct exeslot *sl = t->cap ? exeslot_find(t, k->dev, k->ino) : NULL;

		if (!sl || !sl->rule || sl->rule > rules->n)
			return false;
		p = rules->r[sl->rule - 1].exe;
		if (!is_file(p, k, len))
			return false;
		snprintf(exe, len, "%s", p);
		return true;
	}
	for (unsigned i = 0; rules && i < rules->n; i++) {
		p = rules->r[i].exe;
		if (ident_exe_is_path(p) && is_file(p, k, len)) {
			snprintf(exe, len, "%s", p);
			return true;
		}
	}
	return false;
}

/*
 * The cmdline is the process's memory, which it may map from a FUSE file that never
 * answers: read within a bound (util/timedread.h), and "" where it did not come.
 */
static void read_cmdline(const char *dir, char *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/cmdline", dir);
	/* O_NONBLOCK: a FIFO where a test's tree has one does not hold the open. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	n = fd < 0 ? -errno : timedread_proc(fd, buf, len);
	if (fd >= 0)
		close(fd);
	if (n == -ETIMEDOUT)
		log_warn("ident: %s did not come within %llu ms (its memory held up?): read as "
			 "empty; %u such reads left waiting", path, TIMEDREAD_PROC_NS / 1000000,
			 timedread_stuck());
	if (n < 0) {
		buf[0] = '\0';
		return;
	}
	ident_join_cmdline(buf, (size_t)n, (size_t)n == len - 1);
}


int ident_read_known(const char *proc_root, pid_t pid, const struct ident_exe *kexe,
		     const struct rule_set *rules, const struct ident_exetab *t,
		     struct ident_buf *buf, struct proc_ident *ret)
{
	char dir[PATH_MAX];
	uid_t uid = RULE_UID_ANY;
	struct parse_status st;
	bool need[IDENT_FIELDS];
	int r;

	/*
	 * Only what some rule matches on is read (an exec is matched while the task
	 * runs on, and each read delays its value); the rest is left "".
	 */
	if (t)
		memcpy(need, t->need, sizeof(need));
	else
		fields_needed(rules, need);
	buf->comm[0] = buf->exe[0] = buf->cmdline[0] = buf->cgroup[0] = '\0';
	snprintf(dir, sizeof(dir), "%s/%d", proc_root, (int)pid);
	if (need[0]) {
		r = procfs_status(proc_root, 0, pid, &st);
		if (r < 0)
			return r;
		if (!(r & PARSE_STATUS_RUID))
			return -EINVAL;
		uid = st.ruid;
	}
	if (need[1])
		util_read_line(dir, "comm", buf->comm, sizeof(buf->comm));
	if (need[2] && (!kexe || !exe_from_rules(kexe, rules, t, buf->exe, sizeof(buf->exe))))
		read_exe(dir, buf->exe, sizeof(buf->exe));
	if (need[3])
		read_cmdline(dir, buf->cmdline, sizeof(buf->cmdline));
	if (need[4] && procfs_cgroup(proc_root, 0, pid, buf->cgroup, sizeof(buf->cgroup)) < 0)
		buf->cgroup[0] = '\0';
	/* Gone half-way, it may have left some strings empty: not an identity to match. */
	if (access(dir, F_OK) < 0)
		return -ESRCH;
	*ret = (struct proc_ident){ .pid = pid, .uid = uid, .comm = buf->comm, .exe = buf->exe,
				    .cmdline = buf->cmdline, .cgroup = buf->cgroup };
	return 0;
}

int ident_read(const char *proc_root, pid_t pid, struct ident_buf *buf, struct proc_ident *ret)
{
	return ident_read_known(proc_root, pid, NULL, NULL, NULL, buf, ret);
}
