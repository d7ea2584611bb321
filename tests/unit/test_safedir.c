/*
 * The safe directory opener, on a tree a test makes under a temporary directory: what
 * another user could plant there (a link, a file, a directory they own or may write)
 * is refused with a reason naming it, and what root alone may write is opened.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/safedir.h"
#include "kit.h"

struct tree {
	char top[32]; /* /tmp/rqb-safedir.XXXXXX, root's, 0700 */
};

/* TOP/name into buf. */
static const char *at(char *buf, const struct tree *t, const char *name)
{
	snprintf(buf, PATH_MAX, "%s/%s", t->top, name);
	return buf;
}

static void mkdir_mode(const struct tree *t, const char *name, mode_t mode)
{
	char p[PATH_MAX];

	assert_int_equal(mkdir(at(p, t, name), 0700), 0);
	assert_int_equal(chmod(p, mode), 0); /* past the umask */
}

/* Whether fd is the directory at path. */
static bool same_dir(int fd, const char *path)
{
	struct stat a, b;

	assert_int_equal(fstat(fd, &a), 0);
	assert_int_equal(stat(path, &b), 0);
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));

	assert_non_null(t);
	kit_tmp(t->top, sizeof(t->top), "safedir");
	mkdir_mode(t, "ok", 0755);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;

	assert_int_equal(kit_rm(t->top), 0);
	free(t);
	return 0;
}

KIT_TEST_FX(opens_roots_directory, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], why[256] = "";
	int fd = -2;

	assert_int_equal(safedir_open(at(p, t, "ok"), false, &fd, why, sizeof(why)), 0);
	assert_true(fd >= 0);
	assert_true(same_dir(fd, p));
	assert_int_equal(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
	close(fd);
	/* Doubled and trailing slashes name the same directory. */
	snprintf(p, sizeof(p), "%s//ok/", t->top);
	assert_int_equal(safedir_open(p, false, &fd, why, sizeof(why)), 0);
	assert_true(same_dir(fd, at(p, t, "ok")));
	close(fd);
	assert_int_equal(safedir_open("/", false, &fd, why, sizeof(why)), 0);
	assert_true(same_dir(fd, "/"));
	close(fd);
	assert_int_equal(safedir_check_path(at(p, t, "ok"), why, sizeof(why)), 0);
}

/* Group- or other-writable, sticky or not: refused, with the mode in the reason. */
KIT_TEST_FX(writable_by_others_refused, setup, teardown)
{
	static const mode_t modes[] = { 0775, 0757, 01777, 0770 };
	struct tree *t = *state;
	char p[PATH_MAX], name[16], why[256];
	int fd;

	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		snprintf(name, sizeof(name), "w%zu", i);
		mkdir_mode(t, name, modes[i]);
		why[0] = '\0';
		fd = -2;
		assert_int_equal(safedir_open(at(p, t, name), false, &fd, why, sizeof(why)),
				 -EPERM);
		assert_int_equal(fd, -1);
		assert_non_null(strstr(why, p));
		assert_non_null(strstr(why, "mode"));
		assert_int_equal(safedir_check_path(p, why, sizeof(why)), -EPERM);
		/* Even made with create, which finds it there. */
		assert_int_equal(safedir_open(p, true, &fd, why, sizeof(why)), -EPERM);
		assert_int_equal(fd, -1);
	}
}

KIT_TEST_FX(other_owner_refused, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], why[256] = "";
	int fd = -2;

	if (geteuid() != 0)
		skip();
	assert_int_equal(chown(at(p, t, "ok"), 65534, 65534), 0);
	assert_int_equal(safedir_open(p, false, &fd, why, sizeof(why)), -EPERM);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(why, "uid 65534"));
	assert_non_null(strstr(why, p));
}

/* The parents may be anyone's and writable by all: only the directory itself counts. */
KIT_TEST_FX(parents_may_be_anyones, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], why[256] = "";
	int fd = -2;

	mkdir_mode(t, "open", 0777);
	if (geteuid() == 0)
		assert_int_equal(chown(at(p, t, "open"), 65534, 65534), 0);
	mkdir_mode(t, "open/mine", 0755);
	assert_int_equal(safedir_open(at(p, t, "open/mine"), false, &fd, why, sizeof(why)), 0);
	assert_true(same_dir(fd, p));
	close(fd);
}

KIT_TEST_FX(link_not_followed, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], q[PATH_MAX], why[256] = "";
	int fd = -2;

	/*
	 * A link to a safe directory, last or in the middle, is still refused: O_PATH with
	 * O_NOFOLLOW would open the link itself, O_DIRECTORY makes that -ENOTDIR.
	 */
	assert_int_equal(symlink(at(q, t, "ok"), at(p, t, "link")), 0);
	mkdir_mode(t, "ok/sub", 0755);
	assert_int_equal(safedir_open(p, false, &fd, why, sizeof(why)), -ENOTDIR);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(why, "symbolic link"));
	assert_int_equal(safedir_open(at(p, t, "link/sub"), false, &fd, why, sizeof(why)),
			 -ENOTDIR);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(why, "\"link\""));
	/* create does not make a directory where the link stands. */
	assert_int_equal(safedir_open(at(p, t, "link"), true, &fd, why, sizeof(why)), -ENOTDIR);
	assert_int_equal(fd, -1);
	assert_int_equal(safedir_check_path(p, why, sizeof(why)), -ENOTDIR);
}

KIT_TEST_FX(file_not_directory, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], why[256] = "";
	struct stat st;
	FILE *f;
	int fd = -2;

	f = fopen(at(p, t, "ok/file"), "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(safedir_open(p, false, &fd, why, sizeof(why)), -ENOTDIR);
	assert_int_equal(fd, -1);
	assert_int_equal(safedir_open(at(p, t, "ok/file/below"), true, &fd, why, sizeof(why)),
			 -ENOTDIR);
	assert_int_equal(fd, -1);
	/* safedir_check alone, on a stat of that file. */
	assert_int_equal(stat(at(p, t, "ok/file"), &st), 0);
	assert_int_equal(safedir_check(p, &st, why, sizeof(why)), -ENOTDIR);
	assert_non_null(strstr(why, "not a directory"));
}

/* Without create, a missing directory gives the deepest one that exists, checked. */
KIT_TEST_FX(missing_gives_deepest, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], q[PATH_MAX], why[256] = "";
	int fd = -2;

	assert_int_equal(safedir_open(at(p, t, "ok/a/b"), false, &fd, why, sizeof(why)),
			 -ENOENT);
	assert_true(fd >= 0);
	assert_true(same_dir(fd, at(q, t, "ok")));
	close(fd);
	assert_int_equal(access(p, F_OK), -1); /* nothing was made */
	assert_int_equal(safedir_check_path(p, why, sizeof(why)), 0);
	/* Missing below a directory others may write: that one is refused. */
	mkdir_mode(t, "open", 0777);
	why[0] = '\0';
	assert_int_equal(safedir_open(at(p, t, "open/a"), false, &fd, why, sizeof(why)), -EPERM);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(why, at(q, t, "open")));
	assert_null(strstr(why, "open/a"));
	assert_int_equal(safedir_check_path(p, why, sizeof(why)), -EPERM);
}

KIT_TEST_FX(create_makes_the_rest, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], why[256] = "";
	mode_t old = umask(0); /* the mode made is the code's alone */
	struct stat st;
	int fd = -2;

	assert_int_equal(safedir_open(at(p, t, "ok/a/b"), true, &fd, why, sizeof(why)), 0);
	umask(old);
	assert_true(fd >= 0);
	assert_true(same_dir(fd, p));
	close(fd);
	assert_int_equal(stat(p, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0755);
	/* Again, now that it exists. */
	assert_int_equal(safedir_open(p, true, &fd, why, sizeof(why)), 0);
	close(fd);
}

KIT_TEST(relative_or_long_refused)
{
	char why[256] = "", *big;
	int fd = -2;

	(void)state;
	assert_int_equal(safedir_open("tmp/x", true, &fd, why, sizeof(why)), -EINVAL);
	assert_int_equal(fd, -1);
	assert_non_null(strstr(why, "\"tmp/x\""));
	assert_int_equal(safedir_open("", false, &fd, why, sizeof(why)), -EINVAL);
	assert_int_equal(safedir_check_path("x", why, sizeof(why)), -EINVAL);
	big = malloc(PATH_MAX + 2);
	assert_non_null(big);
	memset(big, 'a', PATH_MAX + 1);
	big[0] = '/';
	big[PATH_MAX + 1] = '\0';
	assert_int_equal(safedir_open(big, false, &fd, why, sizeof(why)), -EINVAL);
	assert_int_equal(fd, -1);
	assert_int_equal(safedir_open_parent(big, &fd, why, sizeof(why)), -EINVAL);
	assert_int_equal(fd, -1);
	free(big);
	assert_int_equal(safedir_open_parent("file", &fd, why, sizeof(why)), -EINVAL);
	assert_int_equal(fd, -1);
	assert_int_equal(safedir_check_parent("dir/file", why, sizeof(why)), -EINVAL);
}

KIT_TEST_FX(parent_of_a_file, setup, teardown)
{
	struct tree *t = *state;
	char p[PATH_MAX], q[PATH_MAX], why[256] = "";
	int fd = -2;

	/* The file need not exist: its directory is what is opened. */
	assert_int_equal(safedir_open_parent(at(p, t, "ok/metrics.prom"), &fd, why, sizeof(why)),
			 0);
	assert_true(same_dir(fd, at(q, t, "ok")));
	close(fd);
	assert_int_equal(safedir_open_parent("/file", &fd, why, sizeof(why)), 0);
	assert_true(same_dir(fd, "/"));
	close(fd);
	assert_int_equal(safedir_check_parent(at(p, t, "ok/x"), why, sizeof(why)), 0);
	/* A parent not made yet: -ENOENT to open, fine for the config check. */
	assert_int_equal(safedir_open_parent(at(p, t, "ok/new/x"), &fd, why, sizeof(why)),
			 -ENOENT);
	assert_true(same_dir(fd, q));
	close(fd);
	assert_int_equal(safedir_check_parent(p, why, sizeof(why)), 0);
	/* A parent others may write, or a link: refused. */
	mkdir_mode(t, "open", 0777);
	assert_int_equal(safedir_open_parent(at(p, t, "open/x"), &fd, why, sizeof(why)), -EPERM);
	assert_int_equal(fd, -1);
	assert_int_equal(safedir_check_parent(p, why, sizeof(why)), -EPERM);
	assert_int_equal(symlink(at(q, t, "ok"), at(p, t, "link")), 0);
	assert_int_equal(safedir_check_parent(at(p, t, "link/x"), why, sizeof(why)), -ENOTDIR);
}
