/*
 * Files in places another user controls: under another process's root
 * (/proc/PID/root), in a directory a user gave (rqctl import-ananicy). Every such file
 * is opened here, so that a link, a FIFO, a device or a huge file planted there can
 * neither redirect the open, nor block it, nor make it act on a device.
 */
#ifndef RQB_SAFEOPEN_H
#define RQB_SAFEOPEN_H

#include <stddef.h>
#include <sys/types.h>

/* Refuse a file that neither root nor the caller's user owns (another user planted it). */
#define SAFEOPEN_ROOT_OWNED 0x1u

/*
 * Opens path for reading, resolved under the directory dirfd as if it were "/"
 * (openat2's RESOLVE_IN_ROOT: an absolute path, "..", or a link in the middle of the
 * path never leaves it), following no magic link (/proc/PID/fd/N, /proc/PID/root)
 * and no link in the last component. Only a regular file of at most max_size bytes is
 * opened: the object is looked at through an O_PATH descriptor first, so that a FIFO
 * or a device is never opened at all. The descriptor is O_NONBLOCK | O_CLOEXEC |
 * O_NOCTTY. 0 and *ret_fd, or -errno: -ENOENT, -ELOOP (a link), -EISDIR, -EINVAL
 * (neither a regular file nor a directory: a FIFO, a socket, a device), -EFBIG,
 * -EPERM (SAFEOPEN_ROOT_OWNED and another user's), -ENOSYS where the kernel has no
 * openat2 (Linux < 5.6): then nothing is opened at all.
 */
int safeopen_file(int dirfd, const char *path, unsigned flags, off_t max_size, int *ret_fd);

/*
 * Reads the file safeopen_file opens into buf, whole: at most len - 1 bytes, ended
 * with a NUL (-EFBIG if it holds more). The byte count, or -errno.
 */
ssize_t safeopen_read(int dirfd, const char *path, unsigned flags, char *buf, size_t len);

/*
 * Opens the directory path under dirfd, resolved as safeopen_file resolves, for a
 * walk (O_RDONLY | O_DIRECTORY): 0 and *ret_fd, or -errno (-ENOTDIR for anything
 * else, a link included: the kernel looks before it opens).
 */
int safeopen_dir(int dirfd, const char *path, int *ret_fd);

/*
 * Looks at path under dirfd, resolved as safeopen_file resolves (a link in the last
 * component not followed), with an O_PATH descriptor: nothing is opened, the object
 * is only there to be looked at (fstat, fstatfs, statx) or walked from. 0 and
 * *ret_fd, or -errno.
 */
int safeopen_path(int dirfd, const char *path, int *ret_fd);

/*
 * Opens path under dirfd, with flags O_RDONLY or O_PATH (| O_NOFOLLOW for a link
 * itself), crossing no mount point and following no link at all: for a file system
 * the kernel writes (a proc instance) where another user may have mounted over a part
 * of it. 0 and *ret_fd, or -errno (-EXDEV: a mount on the way, -ELOOP: a link).
 */
int safeopen_beneath(int dirfd, const char *path, int flags, int *ret_fd);

/* Why a safeopen call failed, in words for a log or a user ("a symbolic link, not followed"). */
const char *safeopen_strerror(int r);

#endif
