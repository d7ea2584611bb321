/*
 * The safe open, on a tree a test writes: what a user may plant there (a link out of
 * it, a FIFO, a directory, a huge file, another user's file) is refused or stays
 * inside, and nothing blocks (an alarm fails the program instead of a hang).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/safeopen.h"
#include "kit.h"

struct tree {
	char top[32];       /* holds both: /tmp/rqb-safeopen.XXXXXX */
	char root[64];      /* the root files are resolved under: TOP/root */
	char outside[64];   /* a file beside it, never to be read: TOP/secret */
	int fd;             /* root, O_PATH */
};

static void at(char *buf, const struct tree *t, const char *name)
{
	snprintf(buf, PATH_MAX, "%s/%s", t->root, name);
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));
	char p[PATH_MAX];

	assert_non_null(t);
	kit_tmp(t->top, sizeof(t->top), "safeopen");
	snprintf(t->root, sizeof(t->root), "%s/root", t->top);
	snprintf(t->outside, sizeof(t->outside), "%s/secret", t->top);
	assert_int_equal(mkdir(t->root, 0755), 0);
	kit_put(t->top, "secret", "outside\n");
	at(p, t, "etc");
	assert_int_equal(mkdir(p, 0755), 0);
	kit_put(p, "profile", "balanced\n");
	t->fd = open(t->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	assert_true(t->fd >= 0);
	*state = t;
	alarm(20); /* a test that blocks fails, it does not hang the suite */
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;

	alarm(0);
	close(t->fd);
	assert_int_equal(kit_rm(t->top), 0);
	free(t);
	return 0;
}

KIT_TEST_FX(reads_a_regular_file, setup, teardown)
{
	struct tree *t = *state;
	char buf[64];

	assert_int_equal(safeopen_read(t->fd, "etc/profile", 0, buf, sizeof(buf)), 9);
	assert_string_equal(buf, "balanced\n");
	/* An absolute path is the root's. */
	assert_int_equal(safeopen_read(t->fd, "/etc/profile", 0, buf, sizeof(buf)), 9);
	assert_int_equal(safeopen_read(t->fd, "etc/missing", 0, buf, sizeof(buf)), -ENOENT);
}

KIT_TEST_FX(link_last_refused, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], buf[64];
	int fd;

	/* A link to the file outside, and one to a file inside: neither is followed. */
	at(p, t, "etc/active");
	assert_int_equal(symlink(t->outside, p), 0);
	assert_int_equal(safeopen_read(t->fd, "etc/active", 0, buf, sizeof(buf)), -ELOOP);
	at(p, t, "etc/alias");
	assert_int_equal(symlink("profile", p), 0);
	assert_int_equal(safeopen_file(t->fd, "etc/alias", 0, 1024, &fd), -ELOOP);
	assert_string_equal(safeopen_strerror(-ELOOP), "a symbolic link, not followed");
}

KIT_TEST_FX(link_escaping_stays_inside, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], buf[64];

	/* "../.." and an absolute link in the middle of a path resolve under the root. */
	at(p, t, "up");
	assert_int_equal(symlink("../../..", p), 0);
	assert_int_equal(safeopen_read(t->fd, "up/secret", 0, buf, sizeof(buf)), -ENOENT);
	assert_int_equal(safeopen_read(t->fd, "../secret", 0, buf, sizeof(buf)), -ENOENT);
	at(p, t, "abs");
	assert_int_equal(symlink(t->top, p), 0);
	assert_int_equal(safeopen_read(t->fd, "abs/secret", 0, buf, sizeof(buf)), -ENOENT);
	/* What the link names inside the root is what is read. */
	kit_put(t->root, "secret", "inside\n");
	assert_int_equal(safeopen_read(t->fd, "up/secret", 0, buf, sizeof(buf)), 7);
	assert_string_equal(buf, "inside\n");
	at(p, t, "etc/home");
	assert_int_equal(symlink("/", p), 0);
	assert_int_equal(safeopen_read(t->fd, "etc/home/etc/profile", 0, buf, sizeof(buf)), 9);
}

KIT_TEST(magic_link_refused)
{
	int root = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	char buf[64];

	assert_true(root >= 0);
	assert_int_equal(safeopen_read(root, "/proc/self/root/proc/self/comm", 0, buf,
				       sizeof(buf)), -ELOOP);
	assert_true(safeopen_read(root, "/proc/self/comm", 0, buf, sizeof(buf)) > 0);
	close(root);
}

KIT_TEST_FX(fifo_refused_without_blocking, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], buf[64];
	int fd;

	at(p, t, "etc/fifo");
	assert_int_equal(mkfifo(p, 0666), 0);
	/* Opened for reading, a FIFO with no writer would block for good. */
	assert_int_equal(safeopen_read(t->fd, "etc/fifo", 0, buf, sizeof(buf)), -EINVAL);
	assert_int_equal(safeopen_dir(t->fd, "etc/fifo", &fd), -ENOTDIR);
}

KIT_TEST_FX(directory_refused, setup, teardown)
{
	struct tree *t = *state;
	char buf[64];
	int fd;

	assert_int_equal(safeopen_read(t->fd, "etc", 0, buf, sizeof(buf)), -EISDIR);
	assert_int_equal(safeopen_read(t->fd, "/", 0, buf, sizeof(buf)), -EISDIR);
	assert_int_equal(safeopen_dir(t->fd, "etc", &fd), 0);
	close(fd);
}

KIT_TEST_FX(dir_link_refused, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX];
	int fd = -1;

	at(p, t, "etclink");
	assert_int_equal(symlink("etc", p), 0);
	assert_int_equal(safeopen_dir(t->fd, "etclink", &fd), -ENOTDIR);
	assert_int_equal(fd, -1);
}

KIT_TEST_FX(size_bound, setup, teardown)
{
	struct tree *t = *state;
	char big[101], buf[100];
	int fd;

	memset(big, 'x', 100);
	big[100] = '\0';
	kit_put(t->root, "big", big);
	assert_int_equal(safeopen_file(t->fd, "big", 0, 99, &fd), -EFBIG);
	assert_int_equal(safeopen_file(t->fd, "big", 0, 100, &fd), 0);
	close(fd);
	/* safeopen_read's bound is its buffer, less the NUL. */
	assert_int_equal(safeopen_read(t->fd, "big", 0, buf, sizeof(buf)), -EFBIG);
	assert_int_equal(safeopen_read(t->fd, "big", 0, big, sizeof(big)), 100);
}

KIT_TEST_FX(other_users_file, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], buf[64];

	if (geteuid() != 0)
		skip();
	at(p, t, "etc/profile");
	assert_int_equal(chown(p, 65534, 65534), 0);
	assert_int_equal(safeopen_read(t->fd, "etc/profile", SAFEOPEN_ROOT_OWNED, buf,
				       sizeof(buf)), -EPERM);
	assert_int_equal(safeopen_read(t->fd, "etc/profile", 0, buf, sizeof(buf)), 9);
}
