/*
 * Helpers any stage may link, the pure policy included: array growth and search, a
 * word in a list (no I/O); and, for the stages that may do I/O, the clock, reading a
 * small file and a pidfd probe. Nothing here logs: callers decide what a failure means.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rqbalance.h"
#include "util/util.h"

void *util_grow(void *arr, size_t *cap, size_t n, size_t size)
{
	size_t c;
	void *a;

	if (n < *cap)
		return arr;
	c = *cap ? *cap * 2 : 16;
	a = realloc(arr, c * size);
	if (a)
		*cap = c;
	return a;
}

void *util_shrink(void *arr, size_t *cap, size_t n, size_t size)
{
	size_t c = *cap / 2;
	void *a;

	if (c < 16 || n >= *cap / 4)
		return arr;
	a = realloc(arr, c * size);
	if (!a)
		return arr;
	*cap = c;
	return a;
}

size_t util_pid_lower_bound(const void *arr, size_t n, size_t size, size_t offset, pid_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		pid_t v;

		memcpy(&v, (const char *)arr + mid * size + offset, sizeof(v));
		if (v < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

ssize_t util_read_file(const char *path, char *buf, size_t len)
{
	return util_read_file_at(AT_FDCWD, path, buf, len);
}

ssize_t util_read_file_at(int dirfd, const char *path, char *buf, size_t len)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;

	if (fd < 0)
		return -errno;
	/* /proc files may come in several reads (seq_file hands out a page at a time). */
	while (n < len - 1) {
		ssize_t r = read(fd, buf + n, len - 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			r = -errno;
			close(fd);
			return r;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	return (ssize_t)n;
}

int util_read_u64(const char *path, uint64_t *ret)
{
	char buf[64], *end;
	ssize_t r = util_read_file(path, buf, sizeof(buf));

	if (r < 0)
		return (int)r;
	errno = 0;
	*ret = strtoull(buf, &end, 10);
	return errno || end == buf ? -EINVAL : 0;
}

void util_read_line(const char *dir, const char *name, char *buf, size_t len)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (util_read_file(path, buf, len) < 0)
		buf[0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

uint64_t util_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

int util_pidfd_alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int n = poll(&p, 1, 0);

	if (n < 0)
		return -errno;
	if (p.revents & POLLNVAL)
		return -EBADF;
	return p.revents & (POLLIN | POLLHUP) ? -ESRCH : 0;
}

bool util_pidfd_released(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) == 1 && (p.revents & POLLHUP);
}

int util_word_in(const char *list, const char *word, char sep)
{
	size_t wl = strlen(word);

	for (const char *p = list; p && *p;) {
		const char *end = strchr(p, sep);
		size_t l = end ? (size_t)(end - p) : strcspn(p, "\n");

		if (l == wl && strncmp(p, word, wl) == 0)
			return 1;
		p = end ? end + 1 : NULL;
	}
	return 0;
}

const char *util_proc_root(const char *root)
{
	return root && *root ? root : UTIL_PROC_ROOT;
}

int util_proc_path(char *buf, size_t len, const char *root, const char *fmt, ...)
{
	va_list ap;
	int n, m;

	n = snprintf(buf, len, "%s/", util_proc_root(root));
	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	va_start(ap, fmt);
	m = vsnprintf(buf + n, len - (size_t)n, fmt, ap);
	va_end(ap);
	return m < 0 || (size_t)m >= len - (size_t)n ? -ENAMETOOLONG : 0;
}

void util_put_field(FILE *f, const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p < 0x20 || *p == 0x7f || *p == '\\')
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
}
