/*
 * The ctl socket: accepts rqctl's connections, decodes their size-checked requests
 * and answers them. It never lends the daemon's privilege: a request that changes
 * anything is checked against the peer's credentials (SO_PEERCRED, SO_PEERGROUPS).
 * Each connection is bounded in size, time and number of requests.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "cpumask.h"
#include "ctl.h"
#include "ctl_server.h"
#include "daemon.h"
#include "log.h"
#include "rqbalance.h"

struct conn {
	struct ctl_server *srv;
	struct conn *next, **pprev; /* in srv->conns */
	int fd;
	sd_event_source *io, *timer;
	struct ucred cred;
	gid_t groups[64];
	int ngroups;
	unsigned msgs;
	size_t have;
	uint8_t buf[sizeof(struct ctl_hdr) + CTL_MAX_REQUEST];
};

static void conn_close(struct conn *c)
{
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	sd_event_source_disable_unref(c->io);
	sd_event_source_disable_unref(c->timer);
	close(c->fd);
	c->srv->nconns--;
	free(c);
}

/* Writes a whole reply; the socket is blocking for writes, and replies are small. */
static int reply(struct conn *c, uint16_t type, uint32_t seq, const char *text)
{
	size_t len = strlen(text), n, off = 0;
	uint8_t *out = malloc(sizeof(struct ctl_hdr) + len);

	if (!out)
		return -ENOMEM;
	n = ctl_encode(out, type, seq, text, (uint32_t)len);
	while (off < n) {
		ssize_t w = send(c->fd, out + off, n - off, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			free(out);
			return -EPIPE;
		}
		off += (size_t)w;
	}
	free(out);
	return 0;
}

static int reply_err(struct conn *c, uint32_t seq, int err, const char *msg)
{
	char text[4096];
	int n = (int)strlen(msg);

	while (n > 0 && msg[n - 1] == '\n')
		n--;
	snprintf(text, sizeof(text), "errno %d\nmessage %.*s\n", err, n, msg);
	return reply(c, CTL_ERR, seq, text);
}

/* Root, or a member of ctl_group, may change what the daemon does. */
static bool may_control(const struct conn *c, const struct rqb_conf *conf)
{
	struct group *g;

	if (c->cred.uid == 0)
		return true;
	if (!conf->ctl_group[0] || !(g = getgrnam(conf->ctl_group)))
		return false;
	if (c->cred.gid == g->gr_gid)
		return true;
	for (int i = 0; i < c->ngroups; i++)
		if (c->groups[i] == g->gr_gid)
			return true;
	return false;
}

static void status_text(const struct daemon *d, char *out, size_t len)
{
	const struct act_counters *k = &d->act.cnt;
	size_t off = 0;

#define PUT(...) (off += (size_t)snprintf(out + off, off < len ? len - off : 0, __VA_ARGS__))
	PUT("version %s\nsampler %s\ntick_ms %u\ndry_run %s\nticks %" PRIu64 "\n", RQB_VERSION,
	    d->sampler->ops->name, d->conf.interval_ms, d->conf.dry_run ? "yes" : "no", d->ticks);
	PUT("managed %zu\nmoves %" PRIu64 "\nrestores %" PRIu64 "\nleft_alone %" PRIu64
	    "\ngone %" PRIu64 "\nerrors_transient %" PRIu64 "\nerrors_permanent %" PRIu64
	    "\nsample_errors %" PRIu64 "\n",
	    act_managed(&d->act), k->moves, k->restores, k->left_alone, k->gone, k->transient,
	    k->permanent, d->sample_errors);
	for (int l = 0; l < d->topo->nllcs; l++) {
		char cpus[CPUMASK_STRLEN];
		unsigned nr = 0;

		for (int c = 0; c < d->topo->nr_cpu_ids; c++)
			if (d->topo->cpus[c].present && d->topo->cpus[c].llc == l)
				nr += d->snap->cpus[c].nr_running;
		PUT("llc %d cpus %s runnable %u\n", l,
		    cpumask_format(&d->topo->llcs[l].cpus, cpus, sizeof(cpus)), nr);
	}
#undef PUT
}

static int handle(struct conn *c, const struct ctl_msg *m)
{
	struct daemon *d = c->srv->d;
	char *errors = NULL, text[16384];
	int r;

	switch (m->hdr.type) {
	case CTL_STATUS:
		status_text(d, text, sizeof(text));
		return reply(c, CTL_OK, m->hdr.seq, text);
	case CTL_RELOAD:
		if (!may_control(c, &d->conf)) {
			log_notice("ctl: reload refused to uid %u (pid %d)", c->cred.uid, c->cred.pid);
			return reply_err(c, m->hdr.seq, EPERM,
					 "permission denied: reload is for root or ctl_group");
		}
		log_notice("ctl: reload asked by uid %u (pid %d)", c->cred.uid, c->cred.pid);
		r = daemon_reload(d, &errors);
		r = r < 0 ? reply_err(c, m->hdr.seq, -r, errors ? errors : "reload failed")
			  : reply(c, CTL_OK, m->hdr.seq, "");
		free(errors);
		return r;
	}
	return reply_err(c, m->hdr.seq, EPROTO, "not a request");
}

/* Serves every whole request in the buffer; <0 means close the connection. */
static int serve(struct conn *c)
{
	struct ctl_msg m;
	ssize_t n;

	while ((n = ctl_decode(c->buf, c->have, &m)) != 0) {
		if (n < 0 || !ctl_is_request(m.hdr.type) || m.hdr.len > CTL_MAX_REQUEST) {
			/* A flood of bad clients must not flood the log: 1st, 2nd, 4th, 8th... */
			unsigned long bad = ++c->srv->bad;

			if ((bad & (bad - 1)) == 0)
				log_info("ctl: malformed message from pid %d, closing (%lu so far)",
					 c->cred.pid, c->srv->bad);
			reply_err(c, 0, EPROTO, "malformed message");
			return -EPROTO;
		}
		if (handle(c, &m) < 0 || ++c->msgs >= CTL_MAX_MSGS)
			return -ECONNRESET;
		memmove(c->buf, c->buf + n, c->have - (size_t)n);
		c->have -= (size_t)n;
	}
	/* A header that promises more than a request may hold is refused at once. */
	if (c->have >= sizeof(struct ctl_hdr)) {
		struct ctl_hdr h;

		memcpy(&h, c->buf, sizeof(h));
		if (h.len > CTL_MAX_REQUEST) {
			c->srv->bad++;
			reply_err(c, h.seq, EMSGSIZE, "request too long");
			return -EMSGSIZE;
		}
	}
	return 0;
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct conn *c = userdata;
	ssize_t n;

	(void)s;
	(void)revents;
	n = recv(fd, c->buf + c->have, sizeof(c->buf) - c->have, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		conn_close(c);
		return 0;
	}
	c->have += (size_t)n;
	if (serve(c) < 0)
		conn_close(c);
	return 0;
}

static int on_conn_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct conn *c = userdata;

	(void)s;
	(void)usec;
	log_debug("ctl: connection from pid %d timed out", c->cred.pid);
	conn_close(c);
	return 0;
}

static void peer_groups(struct conn *c)
{
	socklen_t len = sizeof(c->groups);

	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, c->groups, &len) == 0)
		c->ngroups = (int)(len / sizeof(gid_t));
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct ctl_server *srv = userdata;
	sd_event *e = sd_event_source_get_event(s);
	socklen_t len = sizeof(struct ucred);
	struct conn *c;
	uint64_t now;
	int cfd;

	(void)revents;
	cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return 0;
	if (srv->nconns >= CTL_MAX_CONNS || !(c = calloc(1, sizeof(*c)))) {
		srv->refused++;
		close(cfd);
		return 0;
	}
	c->srv = srv;
	c->fd = cfd;
	c->next = srv->conns;
	c->pprev = &srv->conns;
	if (c->next)
		c->next->pprev = &c->next;
	srv->conns = c;
	srv->nconns++;
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &c->cred, &len) < 0) {
		conn_close(c);
		return 0;
	}
	peer_groups(c);
	/* Replies are written blocking: a client that does not read must not stall us. */
	setsockopt(cfd, SOL_SOCKET, SO_SNDTIMEO, &(struct timeval){ .tv_sec = 1 },
		   sizeof(struct timeval));
	sd_event_now(e, CLOCK_MONOTONIC, &now);
	if (sd_event_add_io(e, &c->io, cfd, EPOLLIN, on_conn_io, c) < 0 ||
	    sd_event_add_time(e, &c->timer, CLOCK_MONOTONIC, now + CTL_CONN_TIMEOUT_USEC, 0,
			      on_conn_timeout, c) < 0)
		conn_close(c);
	return 0;
}

/* A socket file left by a daemon that is gone is removed; one still served is not. */
static int clear_stale(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd, r;

	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	close(fd);
	if (r == 0)
		return -EADDRINUSE;
	if (unlink(path) < 0 && errno != ENOENT)
		return -errno;
	return 0;
}

static int create(struct ctl_server *s, const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int r;

	char dir[sizeof(a.sun_path)], *slash;

	if (strlen(path) >= sizeof(a.sun_path))
		return -ENAMETOOLONG;
	strcpy(a.sun_path, path);
	strcpy(dir, path);
	slash = strrchr(dir, '/');
	if (slash && slash != dir) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0 && errno != EEXIST)
			return -errno;
	}
	r = clear_stale(path);
	if (r < 0)
		return r;
	s->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->fd < 0)
		return -errno;
	if (bind(s->fd, (struct sockaddr *)&a, sizeof(a)) < 0 || chmod(path, 0666) < 0 ||
	    listen(s->fd, 16) < 0)
		return -errno;
	return 0;
}

int ctl_init(struct ctl_server *s, sd_event *e, const char *path, struct daemon *d)
{
	int n = sd_listen_fds(1), r;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->d = d;
	snprintf(s->path, sizeof(s->path), "%s", path);
	if (n > 0 && sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) > 0) {
		s->fd = SD_LISTEN_FDS_START;
		s->activated = true;
		fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
	} else {
		r = create(s, path);
		if (r < 0) {
			if (s->fd >= 0)
				close(s->fd);
			s->fd = -1;
			return r;
		}
	}
	r = sd_event_add_io(e, &s->src, s->fd, EPOLLIN, on_accept, s);
	if (r < 0)
		return r;
	log_info("ctl: serving %s%s", s->activated ? "the socket passed in" : path,
		 s->activated ? " (socket activation)" : "");
	return 0;
}

void ctl_fini(struct ctl_server *s)
{
	while (s->conns)
		conn_close(s->conns);
	sd_event_source_disable_unref(s->src);
	s->src = NULL;
	if (s->fd >= 0) {
		close(s->fd);
		if (!s->activated)
			unlink(s->path);
	}
	s->fd = -1;
}
