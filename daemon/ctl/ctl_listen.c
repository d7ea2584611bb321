/*
 * The ctl socket's file, bound where nobody but root can put a link or a socket of
 * their own at its name. Part of the ctl door (ctl.c); it never follows a path twice.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl/ctl.h"
#include "ctl/ctl_listen.h"
#include "ctl/ctl_req.h"
#include "util/log.h"
#include "util/safedir.h"

/*
 * The socket's address through the directory's descriptor (/proc/self/fd/N/NAME), so
 * that bind and connect reach the directory that was checked, not whatever its path
 * names by then.
 */
static int dir_addr(const struct ctl_server *s, struct sockaddr_un *a)
{
	a->sun_family = AF_UNIX;
	if (snprintf(a->sun_path, sizeof(a->sun_path), "/proc/self/fd/%d/%s", s->dirfd,
		     s->name) >= (int)sizeof(a->sun_path))
		return -ENAMETOOLONG;
	return 0;
}

/* A socket file left by a daemon that is gone is removed; one still served is not. */
static int clear_stale(const struct ctl_server *s, const struct sockaddr_un *a)
{
	int fd, r;

	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (const struct sockaddr *)a, sizeof(*a));
	close(fd);
	if (r == 0)
		return -EADDRINUSE;
	if (unlinkat(s->dirfd, s->name, 0) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

int ctl_listen_bind(struct ctl_server *s, const char *path)
{
	struct sockaddr_un a;
	char dir[sizeof(s->path)], why[PATH_MAX + 128];
	const char *slash = strrchr(path, '/');
	mode_t mask;
	int r;

	if (strlen(path) >= sizeof(a.sun_path) || !slash || !slash[1])
		return -ENAMETOOLONG;
	snprintf(dir, sizeof(dir), "%.*s", slash == path ? 1 : (int)(slash - path), path);
	snprintf(s->name, sizeof(s->name), "%s", slash + 1);
	r = safedir_open(dir, true, &s->dirfd, why, sizeof(why));
	if (r < 0) {
		log_err("ctl socket %s: %s", path, why);
		return r;
	}
	r = dir_addr(s, &a);
	if (r == 0)
		r = clear_stale(s, &a);
	if (r < 0)
		return r;
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->fd < 0)
		return -errno;
	mask = umask(0111);
	r = bind(s->fd, (struct sockaddr *)&a, sizeof(a));
	umask(mask);
	/*
	 * As many connections wait in the kernel's queue as there are callers' slots:
	 * whoever connects while the loop is busy waits for its turn there, unread.
	 */
	if (r < 0 || listen(s->fd, CTL_REQ_SLOTS) < 0)
		return -errno;
	return 0;
}
