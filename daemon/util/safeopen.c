/*
 * Shared by the readers of files another user may have written (sample's peers, rqctl's
 * import): opens them so that nothing planted there is followed, blocks or is acted on.
 * It only opens and reads: what the text means, and who may see it, is the caller's.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/safeopen.h"

/* openat2 gives EAGAIN when a rename races a ".." walk under RESOLVE_IN_ROOT: try again. */
#define SAFEOPEN_TRIES 4

/*
 * path under dirfd with the resolve rules of the header; fd or -errno. openat2 takes
 * O_PATH with no flag that opening would act on (O_NONBLOCK, O_NOCTTY: EINVAL).
 */
static int open_under(int dirfd, const char *path, int flags)
{
	int extra = flags & O_PATH ? 0 : O_NOCTTY | O_NONBLOCK;
	struct open_how how = {
		.flags = (unsigned)(flags | O_NOFOLLOW | O_CLOEXEC | extra),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd = -1;

	for (int i = 0; i < SAFEOPEN_TRIES; i++) {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	return fd < 0 ? -errno : (int)fd;
}

/* Whether st is a file safeopen_file may open: 0 or -errno as its header says. */
static int check_stat(const struct stat *st, unsigned flags, off_t max_size)
{
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	if (st->st_size > max_size)
		return -EFBIG;
	if ((flags & SAFEOPEN_ROOT_OWNED) && st->st_uid != 0 && st->st_uid != geteuid())
		return -EPERM;
	return 0;
}

/*
 * The file an O_PATH descriptor stands for, opened for reading: through its
 * /proc/self/fd link, the one way to open the very object looked at.
 */
static int reopen(int pathfd, const struct stat *seen)
{
	char link[64];
	struct stat st;
	int fd;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", pathfd);
	fd = open(link, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_dev != seen->st_dev || st.st_ino != seen->st_ino) {
		close(fd);
		return -ESTALE;
	}
	return fd;
}

int safeopen_file(int dirfd, const char *path, unsigned flags, off_t max_size, int *ret_fd)
{
	struct stat st;
	int pfd, fd, r;

	pfd = open_under(dirfd, path, O_PATH);
	if (pfd < 0)
		return pfd;
	if (fstat(pfd, &st) < 0)
		r = -errno;
	else if (S_ISLNK(st.st_mode))
		r = -ELOOP; /* O_PATH | O_NOFOLLOW opens the link itself */
	else
		r = check_stat(&st, flags, max_size);
	fd = r < 0 ? r : reopen(pfd, &st);
	close(pfd);
	if (fd < 0)
		return fd;
	*ret_fd = fd;
	return 0;
}

ssize_t safeopen_read(int dirfd, const char *path, unsigned flags, char *buf, size_t len)
{
	size_t n = 0;
	char extra;
	ssize_t r;
	int fd;

	r = safeopen_file(dirfd, path, flags, (off_t)len - 1, &fd);
	if (r < 0)
		return r;
	while (n < len - 1) {
		r = read(fd, buf + n, len - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	/* It grew since it was looked at: the bound holds for what is there now. */
	if (r > 0 && n == len - 1 && read(fd, &extra, 1) > 0)
		r = -EFBIG;
	else if (r < 0)
		r = -errno;
	close(fd);
	if (r < 0)
		return r;
	buf[n] = '\0';
	return (ssize_t)n;
}

int safeopen_dir(int dirfd, const char *path, int *ret_fd)
{
	int fd = open_under(dirfd, path, O_RDONLY | O_DIRECTORY);

	if (fd < 0)
		return fd;
	*ret_fd = fd;
	return 0;
}

int safeopen_path(int dirfd, const char *path, int *ret_fd)
{
	int fd = open_under(dirfd, path, O_PATH);

	if (fd < 0)
		return fd;
	*ret_fd = fd;
	return 0;
}

int safeopen_beneath(int dirfd, const char *path, int flags, int *ret_fd)
{
	struct open_how how = {
		.flags = (unsigned)(flags | O_CLOEXEC | (flags & O_PATH ? 0 : O_NOCTTY | O_NONBLOCK)),
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS |
			   RESOLVE_NO_MAGICLINKS,
	};
	long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));

	if (fd < 0)
		return -errno;
	*ret_fd = (int)fd;
	return 0;
}

const char *safeopen_strerror(int r)
{
	switch (r) {
	case -ELOOP:
		return "a symbolic link, not followed";
	case -EINVAL:
		return "not a regular file (a FIFO, a socket or a device), not opened";
	case -EISDIR:
		return "a directory";
	case -EFBIG:
		return "larger than read here";
	case -EPERM:
		return "owned by another user than root";
	case -ENOSYS:
		return "this kernel has no openat2 (Linux 5.6), which reading it safely needs";
	default:
		return strerror(-r);
	}
}
