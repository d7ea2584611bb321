/*
 * Shared by the stages that write files: opens the directories they write in so that
 * no link or name another user planted is followed. It only opens and checks; what
 * goes in the directory is the caller's.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/safedir.h"

int safedir_check(const char *dir, const struct stat *st, char *why, size_t len)
{
	if (!S_ISDIR(st->st_mode)) {
		snprintf(why, len, "\"%s\" is not a directory", dir);
		return -ENOTDIR;
	}
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(why, len, "directory \"%s\" belongs to uid %u, not root", dir,
			 (unsigned)st->st_uid);
		return -EPERM;
	}
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(why, len, "directory \"%s\" may be written by others than root (mode %04o)",
			 dir, (unsigned)(st->st_mode & 07777));
		return -EPERM;
	}
	return 0;
}

/* The next component of dir below fd, made first where create asks for it. */
static int step(int fd, const char *comp, bool create, const char *dir, char *why, size_t len)
{
	int next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

	if (next < 0 && errno == ENOENT && create) {
		if (mkdirat(fd, comp, 0755) < 0 && errno != EEXIST) {
			snprintf(why, len, "cannot make \"%s\" in \"%s\": %s", comp, dir,
				 strerror(errno));
			return -errno;
		}
		next = openat(fd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	}
	if (next >= 0)
		return next;
	if (errno == ELOOP || errno == ENOTDIR)
		snprintf(why, len, "\"%s\" in the path of \"%s\" is not a directory "
			 "(a symbolic link is not followed)", comp, dir);
	else if (errno != ENOENT)
		snprintf(why, len, "\"%s\": %s", dir, strerror(errno));
	return -errno;
}

/* Checks the directory fd, named dir; closes it on failure. */
static int check_fd(int fd, const char *dir, char *why, size_t len)
{
	struct stat st;
	int r;

	if (fstat(fd, &st) < 0) {
		r = -errno;
		snprintf(why, len, "\"%s\": %s", dir, strerror(-r));
	} else {
		r = safedir_check(dir, &st, why, len);
	}
	if (r < 0)
		close(fd);
	return r;
}

int safedir_open(const char *dir, bool create, int *ret_fd, char *why, size_t len)
{
	char buf[PATH_MAX], *save = NULL, *comp;
	size_t reached = 1; /* the length of dir's part opened: "/" */
	int fd, next, r = 0;

	*ret_fd = -1;
	if (dir[0] != '/' || strlen(dir) >= sizeof(buf)) {
		snprintf(why, len, "\"%s\" is not an absolute path", dir);
		return -EINVAL;
	}
	snprintf(buf, sizeof(buf), "%s", dir);
	fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (comp = strtok_r(buf, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
		next = step(fd, comp, create, dir, why, len);
		if (next < 0) {
			r = next;
			break;
		}
		close(fd);
		fd = next;
		reached = (size_t)(comp - buf) + strlen(comp);
	}
	if (r < 0 && r != -ENOENT) {
		close(fd);
		return r;
	}
	/* Named as far as it exists: where it is missing, the rest would be made there. */
	snprintf(buf, sizeof(buf), "%.*s", (int)reached, dir);
	next = check_fd(fd, buf, why, len);
	if (next < 0)
		return next;
	*ret_fd = fd;
	return r;
}

int safedir_check_path(const char *dir, char *why, size_t len)
{
	int fd, r = safedir_open(dir, false, &fd, why, len);

	if (fd >= 0)
		close(fd);
	return r == -ENOENT ? 0 : r;
}

int safedir_open_parent(const char *path, int *ret_fd, char *why, size_t len)
{
	char dir[PATH_MAX];
	const char *slash = strrchr(path, '/');

	*ret_fd = -1;
	if (path[0] != '/' || strlen(path) >= sizeof(dir)) {
		snprintf(why, len, "\"%s\" is not an absolute path", path);
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	return safedir_open(dir, false, ret_fd, why, len);
}

int safedir_check_parent(const char *path, char *why, size_t len)
{
	int fd, r = safedir_open_parent(path, &fd, why, len);

	if (fd >= 0)
		close(fd);
	return r == -ENOENT ? 0 : r;
}
