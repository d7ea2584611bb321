/*
 * Logging for every stage, and the helpers every stage shares (the clock, array
 * growth, reading a small file). Writes to stderr (with <N> level prefixes when
 * journald reads it) or to syslog; it never decides anything and never exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "rqbalance.h"

static int log_level = LOG_INFO;
static bool log_syslog;
static bool log_journal;  /* stderr is connected to journald */
static const char *log_ident = "rqbalanced";

static const char *const level_names[] = {
	[LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
	[LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_init(const char *ident, int use_syslog)
{
	log_ident = ident;
	log_syslog = use_syslog;
	log_journal = getenv("JOURNAL_STREAM") != NULL;
	if (log_syslog)
		openlog(ident, LOG_PID, LOG_DAEMON);
}

void log_fini(void)
{
	if (log_syslog)
		closelog();
}

void log_set_level(int level)
{
	log_level = level;
}

int log_get_level(void)
{
	return log_level;
}

int log_level_from_name(const char *name)
{
	for (size_t i = LOG_ERR; i < ARRAY_SIZE(level_names); i++)
		if (strcmp(name, level_names[i]) == 0)
			return (int)i;
	return -1;
}

const char *log_level_name(int level)
{
	if (level < 0 || (size_t)level >= ARRAY_SIZE(level_names))
		return "?";
	return level_names[level];
}

void log_msg(int level, const char *fmt, ...)
{
	va_list ap;

	if (level > log_level)
		return;
	va_start(ap, fmt);
	if (log_syslog) {
		vsyslog(level, fmt, ap);
	} else {
		char msg[2048];

		vsnprintf(msg, sizeof(msg), fmt, ap);
		if (log_journal)
			fprintf(stderr, "<%d>%s\n", level, msg);
		else if (level <= LOG_WARNING)
			fprintf(stderr, "%s: %s: %s\n", log_ident, level_names[level], msg);
		else
			fprintf(stderr, "%s: %s\n", log_ident, msg);
	}
	va_end(ap);
}

void *rqb_grow(void *arr, size_t *cap, size_t n, size_t size)
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

void *rqb_shrink(void *arr, size_t *cap, size_t n, size_t size)
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

size_t rqb_pid_lower_bound(const void *arr, size_t n, size_t size, size_t offset, pid_t key)
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

ssize_t rqb_read_file(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
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

uint64_t rqb_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

int rqb_pidfd_alive(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };
	int n = poll(&p, 1, 0);

	if (n < 0)
		return -errno;
	if (p.revents & POLLNVAL)
		return -EBADF;
	return p.revents & (POLLIN | POLLHUP) ? -ESRCH : 0;
}

int rqb_word_in(const char *list, const char *word, char sep)
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
