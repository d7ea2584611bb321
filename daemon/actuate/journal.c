/*
 * Actuate stage, the restore journal: written before every change, read at start
 * to give back what a crashed run left behind. It must never lose a record the
 * actuator relies on: every append is one write(2), straight to the file.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuate/journal.h"
#include "rqbalance.h"
#include "util/cpumask.h"
#include "util/log.h"
#include "util/safedir.h"
#include "util/sorted.h"
#include "util/util.h"
#include "testonly.h"

#define JOURNAL_HEADER "# rqbalance affinity journal v1\n"

struct journal {
	int fd;
	int dirfd;              /* the directory, reached following no link: every open goes here */
	unsigned lines;
	char name[NAME_MAX + 1];
	char path[PATH_MAX];    /* for messages only */
};

/* A crash can cut the last record short: end it, so that the next append stands alone. */
static int end_last_line(int fd)
{
	struct stat st;
	char c;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_size == 0)
		return 0;
	if (pread(fd, &c, 1, st.st_size - 1) != 1)
		return -EIO;
	if (c != '\n' && write(fd, "\n", 1) != 1)
		return -EIO;
	return 0;
}

/*
 * Opens and locks the file name in dirfd, a directory only root may write (safedir):
 * nothing another user planted is opened, and a FIFO or a link left there by root is
 * refused, not waited on or followed. A rewrite renames a new file over the old one:
 * if the lock was taken on a file that has just lost its name, try again.
 */
static int open_locked(int dirfd, const char *name)
{
	for (int tries = 0; tries < 3; tries++) {
		struct stat fst, pst;
		int fd = openat(dirfd, name,
				O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
		int r;

		if (fd < 0)
			return -errno;
		if (fstat(fd, &fst) < 0 || !S_ISREG(fst.st_mode)) {
			close(fd);
			return -EPERM;
		}
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			r = errno == EWOULDBLOCK ? -EBUSY : -errno;
			close(fd);
			return r;
		}
		if (fstatat(dirfd, name, &pst, AT_SYMLINK_NOFOLLOW) == 0 &&
		    fst.st_ino == pst.st_ino && fst.st_dev == pst.st_dev)
			return fd;
		close(fd);
	}
	return -EBUSY;
}

int journal_open(const char *dir, struct journal **ret)
{
	return journal_open_named(dir, JOURNAL_NAME, ret);
}

int journal_open_named(const char *dir, const char *name, struct journal **ret)
{
	char why[PATH_MAX + 128];
	struct journal *j;
	int dirfd, r;

	r = safedir_open(dir, true, &dirfd, why, sizeof(why));
	if (r < 0) {
		log_err("journal: %s", why);
		return r;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		close(dirfd);
		return -ENOMEM;
	}
	j->dirfd = dirfd;
	if (snprintf(j->name, sizeof(j->name), "%s", name) >= (int)sizeof(j->name) ||
	    snprintf(j->path, sizeof(j->path), "%s/%s", dir, name) >= (int)sizeof(j->path)) {
		r = -ENAMETOOLONG;
		goto fail;
	}
	j->fd = open_locked(dirfd, name);
	r = j->fd < 0 ? j->fd : end_last_line(j->fd);
	if (r == 0) {
		*ret = j;
		return 0;
	}
	if (j->fd >= 0)
		close(j->fd);
fail:
	close(dirfd);
	free(j);
	return r;
}

void journal_close(struct journal *j)
{
	if (!j)
		return;
	close(j->fd);
	close(j->dirfd);
	free(j);
}

const char *journal_path(const struct journal *j)
{
	return j->path;
}

unsigned journal_lines(const struct journal *j)
{
	return j->lines;
}

static int append(struct journal *j, const char *line, size_t len)
{
	ssize_t n = write(j->fd, line, len);

	if (n < 0)
		return -errno;
	if ((size_t)n != len)
		return -EIO;
	j->lines++;
	return 0;
}

int journal_append(struct journal *j, const char *line)
{
	return append(j, line, strlen(line));
}

static int format_set(const struct journal_rec *r, char *buf, size_t len)
{
	char prev[CPUMASK_STRLEN], set[CPUMASK_STRLEN];

	return snprintf(buf, len, "set %d %d %" PRIu64 " %s %s %" PRIu64 "\n", (int)r->tid,
			(int)r->tgid, r->start_time, cpumask_format(&r->prev, prev, sizeof(prev)),
			cpumask_format(&r->set, set, sizeof(set)), r->since);
}

int journal_set(struct journal *j, const struct journal_rec *r)
{
	char line[2 * CPUMASK_STRLEN + 128];
	int n = format_set(r, line, sizeof(line));

	return append(j, line, (size_t)n);
}

int journal_clear(struct journal *j, pid_t tid, uint64_t start_time)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "clear %d %" PRIu64 "\n", (int)tid, start_time);

	return append(j, line, (size_t)n);
}

int journal_parse_line(const char *line, char *ret_op, struct journal_rec *ret)
{
	struct journal_rec r = { 0 };
	char prev[CPUMASK_STRLEN], set[CPUMASK_STRLEN];
	int tid, tgid, n = 0;

	int m = 0;

	if (sscanf(line, "set %d %d %" SCNu64 " %4095s %4095s%n", &tid, &tgid, &r.start_time,
		   prev, set, &n) == 5 &&
	    (line[n] == '\0' || line[n] == '\n' ||
	     (sscanf(line + n, " %" SCNu64 "%n", &r.since, &m) == 1 &&
	      (line[n + m] == '\0' || line[n + m] == '\n')))) {
		if (tid <= 0 || tgid <= 0 || cpumask_parse(prev, &r.prev) < 0 ||
		    cpumask_parse(set, &r.set) < 0 || CPU_COUNT(&r.prev) == 0 ||
		    CPU_COUNT(&r.set) == 0)
			return -EINVAL;
		r.tid = tid;
		r.tgid = tgid;
		*ret_op = 's';
		*ret = r;
		return 0;
	}
	n = 0;
	if (sscanf(line, "clear %d %" SCNu64 "%n", &tid, &r.start_time, &n) == 2 &&
	    (line[n] == '\0' || line[n] == '\n') && tid > 0) {
		r.tid = tid;
		*ret_op = 'c';
		*ret = r;
		return 0;
	}
	return -EINVAL;
}

/* Records set and not yet cleared, in file order. */
struct active {
	struct journal_rec *r;
	size_t n, cap;
};

static int active_add(struct active *a, const struct journal_rec *r)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->r[i].tid == r->tid && a->r[i].start_time == r->start_time) {
			/* A later set of the same task: the first prev is what it had. */
			a->r[i].was = a->r[i].set;
			a->r[i].set = r->set;
			return 0;
		}
	struct journal_rec *arr = util_grow(a->r, &a->cap, a->n, sizeof(*arr));

	if (!arr)
		return -ENOMEM;
	a->r = arr;
	a->r[a->n] = *r;
	a->r[a->n++].was = r->prev;
	return 0;
}

static void active_del(struct active *a, pid_t tid, uint64_t start)
{
	for (size_t i = 0; i < a->n; i++)
		if (a->r[i].tid == tid && a->r[i].start_time == start) {
			sorted_remove(a->r, &a->n, sizeof(*a->r), i);
			return;
		}
}

struct replay_ctx {
	struct journal *j;
	struct active act;
	unsigned bad;
	int r;
};

static void replay_line(void *ctx, unsigned lineno, char *line)
{
	struct replay_ctx *c = ctx;
	struct journal_rec rec;
	char op;

	if (c->r < 0)
		return;
	if (journal_parse_line(line, &op, &rec) < 0) {
		log_warn("%s:%u: malformed journal record skipped", c->j->path, lineno);
		c->bad++;
		return;
	}
	if (op == 's')
		c->r = active_add(&c->act, &rec);
	else
		active_del(&c->act, rec.tid, rec.start_time);
}

int journal_replay(struct journal *j, void (*fn)(void *ctx, const struct journal_rec *r),
		   void *ctx, unsigned *ret_bad)
{
	struct replay_ctx c = { .j = j };
	int r = journal_each_line(j, replay_line, &c);

	if (r == 0)
		r = c.r;
	for (size_t i = 0; r == 0 && i < c.act.n; i++)
		fn(ctx, &c.act.r[i]);
	free(c.act.r);
	if (ret_bad)
		*ret_bad = c.bad;
	return r;
}

int journal_rewrite(struct journal *j, const struct journal_rec *recs, size_t n)
{
	char line[2 * CPUMASK_STRLEN + 128];
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int r;

	if (!f)
		return -ENOMEM;
	fputs(JOURNAL_HEADER, f);
	for (size_t i = 0; i < n; i++) {
		format_set(&recs[i], line, sizeof(line));
		fputs(line, f);
	}
	r = fclose(f) == 0 && text ? journal_rewrite_text(j, text) : -ENOMEM;
	free(text);
	return r;
}

int journal_each_line(struct journal *j, void (*fn)(void *ctx, unsigned lineno, char *line),
		      void *ctx)
{
	unsigned lineno = 0;
	char *line = NULL;
	size_t cap = 0;
	int fd;
	FILE *f;

	fd = openat(j->dirfd, j->name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "r");
	if (!f) {
		close(fd);
		return -ENOMEM;
	}
	while (getline(&line, &cap, f) > 0) {
		lineno++;
		if (line[0] == '#' || line[0] == '\n')
			continue;
		line[strcspn(line, "\n")] = '\0';
		fn(ctx, lineno, line);
	}
	free(line);
	fclose(f);
	return 0;
}

int journal_rewrite_text(struct journal *j, const char *text)
{
	char tmp[NAME_MAX + 8];
	size_t len = strlen(text);
	int fd, r = 0;

	/* A .new a crash left is ours (the directory is root's alone): made afresh. */
	snprintf(tmp, sizeof(tmp), "%s.new", j->name);
	if (unlinkat(j->dirfd, tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = openat(j->dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len)
		r = -EIO;
	/* The new file takes the lock before it takes the name. */
	if (r == 0 && flock(fd, LOCK_EX | LOCK_NB) < 0)
		r = -errno;
	if (r == 0 && renameat(j->dirfd, tmp, j->dirfd, j->name) < 0)
		r = -errno;
	if (r < 0) {
		close(fd);
		unlinkat(j->dirfd, tmp, 0);
		return r;
	}
	close(j->fd);
	j->fd = fd;
	/* Appends go to the end: reopen flags cannot change, so seek there explicitly. */
	if (fcntl(fd, F_SETFL, O_APPEND) < 0)
		return -errno;
	j->lines = 0;
	return 0;
}
