/*
 * Helpers every stage may link (util.c). The pure policy may call the ones without
 * I/O: util_grow, util_shrink, util_pid_lower_bound, util_word_in.
 */
#ifndef RQB_UTIL_H
#define RQB_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Monotonic time in ns: the one clock inside the daemon. */
uint64_t util_now_ns(void);

/*
 * Makes room for one more element in a growing array of n elements of size bytes:
 * doubles *cap (from 16) when n has reached it. Returns the array to use from now on,
 * or NULL (the old array and *cap intact) when out of memory.
 */
void *util_grow(void *arr, size_t *cap, size_t n, size_t size);
/*
 * After a removal: halves *cap (not below 16) once n has fallen under a quarter of it,
 * so that a burst of entries does not keep its memory. Returns the array to use from
 * now on (the old one, intact, if realloc fails).
 */
void *util_shrink(void *arr, size_t *cap, size_t n, size_t size);

/*
 * 0 while the process (or thread) of a pidfd runs, -ESRCH once it has exited, or
 * -errno. A pidfd turns readable at the exit: unlike signal 0, asking needs no
 * CAP_KILL over another user's task, which the service's capability set leaves out.
 */
int util_pidfd_alive(int pidfd);
/*
 * Whether the task of a pidfd has been released (reaped): its number is free for
 * another task. Only kernels that report POLLHUP on a pidfd (6.9 on) say so; false
 * elsewhere, and while it runs or waits as a zombie.
 */
bool util_pidfd_released(int pidfd);

/*
 * In an array of n elements of size bytes sorted by the pid_t at offset in each: the
 * index of the first element whose pid is not below key (n if none).
 */
size_t util_pid_lower_bound(const void *arr, size_t n, size_t size, size_t offset, pid_t key);

/* True if word is one of the sep-separated entries of list ("cpu" in "cpu,cpuacct"). */
int util_word_in(const char *list, const char *word, char sep);

/*
 * Reads the file at path into buf, at most len - 1 bytes, and ends it with a NUL
 * (the bytes read may hold NULs of their own). The byte count, or -errno.
 */
ssize_t util_read_file(const char *path, char *buf, size_t len);
/*
 * The same, path relative to the directory dirfd (a /proc/PID the caller holds, so
 * that a reused pid is not read instead). For files of the kernel's or root's: a file
 * another user may have written goes through util/safeopen.h.
 */
ssize_t util_read_file_at(int dirfd, const char *path, char *buf, size_t len);
/* A file holding one decimal number (a cgroup's weight, say): 0, or -errno (-EINVAL). */
int util_read_u64(const char *path, uint64_t *ret);
/* The first line of file name in dir, its newline cut; "" where it cannot be read. */
void util_read_line(const char *dir, const char *name, char *buf, size_t len);

/* Where procfs is unless a caller is told otherwise (tests point at a fake tree). */
#define UTIL_PROC_ROOT "/proc"
/* root, or UTIL_PROC_ROOT when root is NULL or "". */
const char *util_proc_root(const char *root);
/*
 * Builds the path "ROOT/REST" into buf, REST formatted from fmt ("%d/stat"), ROOT as
 * util_proc_root(root) gives it, so that a path under /proc is spelled in one place.
 * 0, or -ENAMETOOLONG (buf then holds a cut path, not to be used).
 */
int util_proc_path(char *buf, size_t len, const char *root, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/*
 * One field of a tab-separated line, any bytes in it: a backslash, a tab, a newline and
 * the other controls go as \xHH, so a name never ends its field or its line early
 * (rqctl undoes it).
 */
void util_put_field(FILE *f, const char *s);
#endif
