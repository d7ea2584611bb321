/*
 * The ctl socket, one of the request layer's two doors (ctl_req.h): accepts rqctl's
 * connections, decodes their size-checked requests and answers them. It never lends
 * the daemon's privilege nor its view: a request is judged by the request layer on the
 * credentials the peer had when it connected (SO_PEERCRED, SO_PEERGROUPS, its
 * capabilities and what its /proc shows it, read at accept), and a connection whose
 * peer has since gone or changed its credentials is closed. Each connection is
 * bounded in size, time and number of requests, and takes one of the callers' slots
 * the request layer shares out.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "conf/conf.h"
#include "ctl/ctl.h"
#include "ctl/ctl_listen.h"
#include "ctl/ctl_peer.h"
#include "ctl/ctl_perm.h"
#include "ctl/ctl_req.h"
#include "ctl_proto.h"
#include "latmgr/latmgr_door.h"
#include "rqbalance.h"
#include "util/log.h"
#include "util/util.h"

struct conn {
	struct ctl_server *srv;
	struct conn *next, **pprev; /* in srv->conns */
	int fd;
	sd_event_source *io, *timer;
	sd_event_source *again; /* serves its next request, on a later turn of the loop */
	bool admin;             /* root or ctl_group: served ahead of others, never charged */
	struct ucred cred;      /* SO_PEERCRED: taken by the kernel at connect */
	int pidfd;              /* SO_PEERPIDFD: pins the peer process; -1 without (< 6.5) */
	struct ctl_peer peer;   /* its credentials at accept, compared before each request */
	struct ctl_caller who;  /* what it is judged on: its uid, gid and groups at connect,
				 * and whether it counts as holding CAP_SYS_NICE */
	unsigned msgs;
	uint64_t sync_tick;     /* a sync waits for this tick to end; 0: none waits */
	unsigned late;          /* times its deadline passed while its sync waited on the daemon */
	struct latmgr_mark sync_mark; /* ... and for the connector to pass this mark */
	uint32_t sync_seq;
	int slot;               /* its place among the callers (ctl_req_lim_admit); -1: none */
	bool blind;             /* pid 0: a process in a pid namespace the daemon cannot
				 * see, so not judged: served read-only requests alone */
	bool closing;           /* closed once the replies queued are written */
	bool overtime;          /* its deadline passed with a whole request waiting: served
				 * as its last (on_conn_timeout) */
	uint8_t *out;           /* replies not written yet: the socket was full */
	size_t out_len, out_off;
	size_t have;
	uint8_t buf[sizeof(struct ctl_hdr) + CTL_MAX_REQUEST];
};

/*
 * The requests of callers who are not admins come after every other source of the
 * loop (timers, signals, the tick, the connector, new connections, D-Bus, root's
 * requests): sd-event serves one source a turn, the most urgent first.
 */
#define CTL_PRIORITY_USERS (SD_EVENT_PRIORITY_NORMAL + 10)

static void conn_close(struct conn *c)
{
	*c->pprev = c->next;
	if (c->next)
		c->next->pprev = c->pprev;
	sd_event_source_disable_unref(c->io);
	sd_event_source_disable_unref(c->timer);
	sd_event_source_disable_unref(c->again);
	if (c->pidfd >= 0)
		close(c->pidfd);
	close(c->fd);
	ctl_req_lim_leave(c->srv->env->req, c->slot);
	c->srv->nconns--;
	free(c->out);
	free(c);
}

static bool pending(const struct conn *c)
{
	return c->out_off < c->out_len;
}

/*
 * Writes what the socket takes now, never waiting: the rest waits for EPOLLOUT, and
 * meanwhile no request of the connection is read or served, so a client that does not
 * read holds one reply at most and never the event loop. <0: the peer is gone.
 */
static int flush(struct conn *c)
{
	while (pending(c)) {
		ssize_t w = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
				 MSG_NOSIGNAL | MSG_DONTWAIT);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return sd_event_source_set_io_events(c->io, EPOLLOUT);
		if (w <= 0)
			return -EPIPE;
		c->out_off += (size_t)w;
	}
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_off = 0;
	return c->io ? sd_event_source_set_io_events(c->io, EPOLLIN) : 0;
}

/* Queues a whole reply and writes what the socket takes (flush). */
static int reply(struct conn *c, uint16_t type, uint32_t seq, const char *text)
{
	size_t len = strlen(text), need;
	char too_long[64];
	uint8_t *out;

	if (len > CTL_MAX_PAYLOAD) {
		/* What rqctl would refuse as a protocol error: an error it can show. */
		snprintf(too_long, sizeof(too_long), "errno %d\nmessage reply too long\n",
			 EMSGSIZE);
		type = CTL_ERR;
		text = too_long;
		len = strlen(text);
	}
	need = c->out_len + sizeof(struct ctl_hdr) + len;
	out = realloc(c->out, need);
	if (!out)
		return -ENOMEM;
	c->out = out;
	c->out_len += ctl_proto_encode(out + c->out_len, type, seq, text, (uint32_t)len);
	return flush(c);
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

/* ---- latency requests ---- */

/* The target a request names, decoded; ctl_req_run checks it. */
static int parse_target(struct conn *c, const struct ctl_msg *m, struct lat_target *t,
			const char **why)
{
	const char *p = m->payload;
	size_t len = m->hdr.len;
	char v[LAT_PATH_MAX];
	int found = 0, lines;

	memset(t, 0, sizeof(*t));
	if (ctl_proto_kv(p, len, "pid", v, sizeof(v)) == 0 && ++found && ctl_proto_pid(v, &t->pid) == 0)
		t->kind = LAT_T_PROCESS;
	if (ctl_proto_kv(p, len, "tid", v, sizeof(v)) == 0 && ++found && ctl_proto_pid(v, &t->pid) == 0)
		t->kind = LAT_T_THREAD;
	if (ctl_proto_kv(p, len, "self", v, sizeof(v)) == 0 && ++found) {
		/* The peer, as checked before this request (peer_stale). */
		t->kind = LAT_T_PROCESS;
		t->pid = c->cred.pid;
		t->start_time = c->peer.start_time;
	}
	if (ctl_proto_kv(p, len, "cgroup", v, sizeof(v)) == 0 && ++found) {
		t->kind = LAT_T_CGROUP;
		snprintf(t->path, sizeof(t->path), "%s", v);
	}
	lines = ctl_proto_kv_count(p, len, "pid") + ctl_proto_kv_count(p, len, "tid") +
		ctl_proto_kv_count(p, len, "self") + ctl_proto_kv_count(p, len, "cgroup");
	if (found != 1 || lines != 1 || (t->kind != LAT_T_CGROUP && t->pid <= 0)) {
		*why = "name one target: pid N, tid N, cgroup PATH or self";
		return -EINVAL;
	}
	return 0;
}

/* The list stops short of the protocol's limit, with room for its "truncated" line. */
#define LIST_MAX (CTL_MAX_PAYLOAD - 96)

/* The request procedure's answer to m, encoded for rqctl. */
static int reply_answer(struct conn *c, const struct ctl_msg *m, const struct ctl_request *q,
			int r, const struct ctl_answer *a)
{
	char text[32];

	if (r == -ENOENT && !a->why)
		return reply_err(c, m->hdr.seq, ENOENT, "not managed by rqbalance");
	if (r < 0)
		return reply_err(c, m->hdr.seq, -r, a->why ? a->why : strerror(-r));
	switch (q->op) {
	case CTL_REQ_OP_EXPLAIN:
		return reply(c, CTL_OK, m->hdr.seq, a->explain);
	case CTL_REQ_OP_RESET:
		snprintf(text, sizeof(text), "tasks %d\n", a->n);
		return reply(c, CTL_OK, m->hdr.seq, text);
	default:
		return reply(c, CTL_OK, m->hdr.seq, a->text);
	}
}

static int handle_latency(struct conn *c, const struct ctl_msg *m)
{
	static const enum ctl_req_op ops[] = {
		[CTL_GET] = CTL_REQ_OP_GET, [CTL_EXPLAIN] = CTL_REQ_OP_EXPLAIN,
		[CTL_SET] = CTL_REQ_OP_SET, [CTL_RESET] = CTL_REQ_OP_RESET,
	};
	struct ctl_env *x = c->srv->env;
	struct ctl_request q = { .op = ops[m->hdr.type], .name = ctl_proto_type_name(m->hdr.type) };
	struct ctl_answer a;
	const char *why = NULL;
	char v[32];
	int r;

	if (m->hdr.type == CTL_LIST) {
		struct ctl_req_eyes eyes = { .x = x, .k = &c->who };
		char *list = latmgr_list(x->lm, ctl_req_sees, &eyes, LIST_MAX), *all = NULL;

		/* Where tasks were left unjudged, the list says so: "judged N". */
		if (list && eyes.cut && asprintf(&all, "%sjudged\t%u\n", list, eyes.judged) >= 0) {
			free(list);
			list = all;
		}
		r = list ? reply(c, CTL_OK, m->hdr.seq, list) : reply_err(c, m->hdr.seq, ENOMEM, "out of memory");
		free(list);
		return r;
	}
	r = parse_target(c, m, &q.t, &why);
	if (r < 0)
		return reply_err(c, m->hdr.seq, -r, why);
	if (m->hdr.type == CTL_SET &&
	    (ctl_proto_kv_count(m->payload, m->hdr.len, "value") != 1 ||
	     ctl_proto_kv(m->payload, m->hdr.len, "value", v, sizeof(v)) < 0 ||
	     latmgr_parse_value(v, &q.value, &why) < 0))
		return reply_err(c, m->hdr.seq, EINVAL, why ? why : "one value is needed: value N");
	r = reply_answer(c, m, &q, ctl_req_run(x, &c->who, &q, &a), &a);
	free(a.explain);
	return r;
}

/* Like status, for anyone: how long tasks waited for a CPU, by class. */
static int handle_histograms(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_env *x = c->srv->env;
	char why[512], *text;
	int r;

	text = x->ops->histograms(x->daemon, why, sizeof(why));
	if (!text && errno == EOPNOTSUPP)
		return reply_err(c, m->hdr.seq, EOPNOTSUPP, why);
	if (!text)
		return reply_err(c, m->hdr.seq, errno, strerror(errno));
	r = reply(c, CTL_OK, m->hdr.seq, text);
	free(text);
	return r;
}

/*
 * A barrier: marks the connector (every event queued so far must be handled), then
 * parks the connection until that is so and a tick that begins after this one has
 * ended (ctl_after_tick answers it). Nothing blocks: a fork storm, a resync after an
 * overflow, or a slow tick only delay the answer; the connection's time limit still
 * holds, stretched by CTL_SYNC_TICKS ticks, which cover a resync's wait.
 */
static int park_sync(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_env *x = c->srv->env;
	uint64_t deadline, tick_ns = x->conf->interval_ms * NSEC_PER_MSEC;

	latmgr_mark(x->lm, util_now_ns(), tick_ns, &c->sync_mark);
	c->sync_tick = x->ops->ticks(x->daemon) + 1;
	c->sync_seq = m->hdr.seq;
	if (x->ops->wake)
		x->ops->wake(x->daemon);
	if (sd_event_source_get_time(c->timer, &deadline) >= 0)
		sd_event_source_set_time(c->timer, deadline + CTL_SYNC_TICKS * tick_ns / 1000);
	return 0;
}

static int handle(struct conn *c, const struct ctl_msg *m)
{
	struct ctl_env *x = c->srv->env;
	char *errors = NULL, text[16384];
	int r;

	switch (m->hdr.type) {
	case CTL_STATUS:
		x->ops->status(x->daemon, &c->who, text, sizeof(text));
		return reply(c, CTL_OK, m->hdr.seq, text);
	case CTL_RELOAD:
		if (!ctl_req_admin(&c->who, x->conf)) {
			ctl_req_lim_log_refusal(x->req, "ctl: reload refused to uid %u (pid %d)",
						c->cred.uid, c->cred.pid);
			return reply_err(c, m->hdr.seq, EPERM,
					 "permission denied: reload is for root or ctl_group");
		}
		log_notice("ctl: reload asked by uid %u (pid %d)", c->cred.uid, c->cred.pid);
		r = x->ops->reload(x->daemon, &errors);
		r = r < 0 ? reply_err(c, m->hdr.seq, -r, errors ? errors : "reload failed")
			  : reply(c, CTL_OK, m->hdr.seq, "");
		free(errors);
		return r;
	case CTL_SET:
	case CTL_GET:
	case CTL_LIST:
	case CTL_RESET:
	case CTL_EXPLAIN:
		return handle_latency(c, m);
	case CTL_LATENCY:
		return handle_histograms(c, m);
	case CTL_SYNC:
		return park_sync(c, m);
	}
	return reply_err(c, m->hdr.seq, EPROTO, "not a request");
}

/*
 * 0 while the peer is the process, with the credentials, that the connection was
 * accepted on. A peer that has exited is gone for good, even while a child it forked
 * holds the socket: its pidfd (or, before Linux 6.5, its start time) tells it from a
 * process that reused its pid.
 */
static int peer_stale(struct conn *c, const char **ret_why)
{
	struct ctl_peer now;

	if (ctl_peer_read(latmgr_proc_root(c->srv->env->lm), c->cred.pid, c->pidfd, &now) < 0 ||
	    now.start_time != c->peer.start_time) {
		*ret_why = "the process that connected is gone";
		return -EPERM;
	}
	if (ctl_perm_peer_same(&c->peer, &now, ret_why) < 0)
		return -EPERM;
	return 0;
}

/* Refuses a request on a stale connection, which is then closed (returns <0). */
static int refuse_stale(struct conn *c, const struct ctl_msg *m, const char *why)
{
	char text[256];

	ctl_req_lim_log_refusal(c->srv->env->req,
				"ctl: %s refused to uid %u (pid %d), connection closed: %s",
				ctl_proto_type_name(m->hdr.type), c->cred.uid, c->cred.pid, why);
	snprintf(text, sizeof(text), "permission denied: %s", why);
	reply_err(c, m->hdr.seq, EPERM, text);
	return -EPERM;
}

/*
 * A peer out of sight has no credentials to judge beyond its uid: it may ask what
 * anyone may ask and nothing that changes a task, a cgroup or the daemon.
 */
static int serve_blind(struct conn *c, const struct ctl_msg *m)
{
	switch (m->hdr.type) {
	case CTL_STATUS:
	case CTL_GET:
	case CTL_LIST:
	case CTL_LATENCY:
	case CTL_SYNC:
		return handle(c, m);
	}
	ctl_req_lim_log_refusal(c->srv->env->req,
				"ctl: %s refused to uid %u: its process is in a pid namespace "
				"rqbalanced cannot see",
				ctl_proto_type_name(m->hdr.type), c->cred.uid);
	return reply_err(c, m->hdr.seq, EPERM,
			 "permission denied: your process is in a pid namespace rqbalanced "
			 "cannot see; only status, get, list, latency and sync are served");
}

/* Whether the connection holds a request it may be served now. */
static bool ready(struct conn *c)
{
	struct ctl_msg m;

	/* Requests after a parked sync wait for its answer, in order. */
	return !c->sync_tick && !c->closing && !pending(c) &&
	       ctl_proto_decode(c->buf, c->have, &m) != 0;
}

/*
 * The next request waits for a later turn of the loop, after at_ns: nothing more of the
 * connection is read meanwhile, and every other source, its own deadline among them,
 * comes first.
 */
static int later(struct conn *c, uint64_t at_ns)
{
	int r = sd_event_source_set_enabled(c->io, SD_EVENT_OFF);

	if (r >= 0)
		r = sd_event_source_set_time(c->again, at_ns / 1000);
	if (r >= 0)
		r = sd_event_source_set_enabled(c->again, SD_EVENT_ONESHOT);
	return r;
}

/*
 * Serves one whole request of the buffer, the next on a later turn (later): one
 * connection never holds the loop for more than one request, and the time it took is
 * charged to its caller's share; a share that owes too much waits. <0 means close the
 * connection.
 */
static int conn_serve(struct conn *c)
{
	struct ctl_req_lim *l = c->srv->env->req;
	uint64_t now, wait;
	const char *why;
	struct ctl_msg m;
	ssize_t n;

	if (ready(c) && (n = ctl_proto_decode(c->buf, c->have, &m)) != 0) {
		if (n < 0 || !ctl_proto_is_request(m.hdr.type) || m.hdr.len > CTL_MAX_REQUEST) {
			/* A flood of bad clients must not flood the log: 1st, 2nd, 4th, 8th... */
			unsigned long bad = ++c->srv->bad;

			if ((bad & (bad - 1)) == 0)
				log_info("ctl: malformed message from pid %d, closing (%lu so far)",
					 c->cred.pid, c->srv->bad);
			reply_err(c, 0, EPROTO, "malformed message");
			return -EPROTO;
		}
		now = util_now_ns();
		if (!c->admin && (wait = ctl_req_lim_owed(l, c->who.share, now)) > 0)
			return later(c, now + wait);
		/* In the order served: a test sees who went first. */
		log_debug("ctl: %s from uid %u (pid %d)", ctl_proto_type_name(m.hdr.type),
			  c->cred.uid, c->cred.pid);
		if (!c->blind && peer_stale(c, &why) < 0)
			return refuse_stale(c, &m, why);
		if ((c->blind ? serve_blind(c, &m) : handle(c, &m)) < 0)
			return -ECONNRESET;
		if (!c->admin)
			ctl_req_lim_charge(l, c->who.share, util_now_ns() - now, util_now_ns());
		memmove(c->buf, c->buf + n, c->have - (size_t)n);
		c->have -= (size_t)n;
		/* The last request's answer is still written, then the connection ends. */
		if (++c->msgs >= CTL_MAX_MSGS || c->overtime)
			c->closing = true;
	}
	/* A sync parked as the last request ends the connection once it is answered. */
	if (c->closing && !pending(c) && !c->sync_tick)
		return -ECONNRESET;
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
	return ready(c) ? later(c, 0) : 0;
}

static int on_again(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct conn *c = userdata;

	(void)s;
	(void)usec;
	if (sd_event_source_set_enabled(c->io, SD_EVENT_ON) < 0 || conn_serve(c) < 0)
		conn_close(c);
	return 0;
}

static int on_conn_io(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct conn *c = userdata;
	ssize_t n;

	(void)s;
	if (revents & EPOLLOUT) {
		/* Written out: the requests read meanwhile are served. */
		if (flush(c) < 0 || (!pending(c) && conn_serve(c) < 0))
			conn_close(c);
		return 0;
	}
	if (revents & (EPOLLERR | EPOLLHUP) && !(revents & EPOLLIN)) {
		conn_close(c);
		return 0;
	}
	n = recv(fd, c->buf + c->have, sizeof(c->buf) - c->have, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	if (n <= 0) {
		conn_close(c);
		return 0;
	}
	c->have += (size_t)n;
	if (conn_serve(c) < 0)
		conn_close(c);
	return 0;
}

void ctl_after_tick(struct ctl_server *s)
{
	struct ctl_env *x = s->env;
	uint64_t ticks = x->ops->ticks(x->daemon);
	char text[64];

	for (struct conn *c = s->conns, *next; c; c = next) {
		next = c->next;
		if (!c->sync_tick || ticks < c->sync_tick || !latmgr_passed(x->lm, &c->sync_mark))
			continue;
		c->sync_tick = 0;
		snprintf(text, sizeof(text), "ticks %" PRIu64 "\n", ticks);
		if (reply(c, CTL_OK, c->sync_seq, text) < 0 || conn_serve(c) < 0)
			conn_close(c);
	}
}

/*
 * Whether a whole request waits to be served: what the socket holds is read first, as
 * on_conn_io would have, had the loop come to it.
 */
static bool request_waiting(struct conn *c)
{
	ssize_t n;

	if (!pending(c) && c->have < sizeof(c->buf)) {
		n = recv(c->fd, c->buf + c->have, sizeof(c->buf) - c->have, MSG_DONTWAIT);
		if (n > 0)
			c->have += (size_t)n;
	}
	return ready(c);
}

static int on_conn_timeout(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct conn *c = userdata;
	struct ctl_env *x = c->srv->env;
	uint64_t tick_us = x->conf->interval_ms * 1000ULL;

	(void)usec;
	/*
	 * A sync parked on the daemon's own tick waits for the daemon, not the client: a
	 * daemon that runs late (a loaded machine, a stalled guest) does not end it, the
	 * daemon's ticks do. It gets CTL_SYNC_TICKS ticks past the one it waits for, counted
	 * as the daemon ends them, whatever the clock says meanwhile; a daemon whose ticks
	 * stopped lets it go after CTL_SYNC_LATE such waits.
	 */
	if (c->sync_tick && x->ops->ticks(x->daemon) < c->sync_tick + CTL_SYNC_TICKS &&
	    ++c->late <= CTL_SYNC_LATE &&
	    sd_event_source_set_time_relative(s, CTL_SYNC_TICKS * tick_us) >= 0 &&
	    sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) >= 0)
		return 0;
	/*
	 * A request that came whole before the loop got to it (a long tick, a move that
	 * waits for the kernel, root's requests and every other source ahead of a user's)
	 * is the daemon's lateness, not the client's: it is served, as the connection's
	 * last, and its answer gets one more connection life to be written. A client that
	 * is itself slow (a request cut short, none at all) is closed as before.
	 */
	if (!c->overtime && request_waiting(c)) {
		c->overtime = true;
		log_debug("ctl: connection from pid %d: its deadline passed with a request "
			  "waiting for the daemon: served as its last", c->cred.pid);
		if (sd_event_source_set_time_relative(s, CTL_CONN_TIMEOUT_USEC) >= 0 &&
		    sd_event_source_set_enabled(s, SD_EVENT_ONESHOT) >= 0 && conn_serve(c) >= 0)
			return 0;
	}
	log_debug("ctl: connection from pid %d timed out", c->cred.pid);
	conn_close(c);
	return 0;
}

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

/* 0, with c->pidfd -1 where the kernel has no SO_PEERPIDFD; else -errno: gone. */
static int peer_pidfd(struct conn *c)
{
	socklen_t len = sizeof(c->pidfd);

	if (getsockopt(c->fd, SOL_SOCKET, SO_PEERPIDFD, &c->pidfd, &len) == 0)
		return 0;
	c->pidfd = -1;
	return errno == ENOPROTOOPT ? 0 : -errno;
}

/*
 * Takes the peer's credentials once: what the kernel took at connect (SO_PEERCRED),
 * and its capabilities and user namespace, read now through the pidfd-pinned
 * process. Every request is judged on these; <0: refused, close.
 */
#define CAP_SYS_PTRACE_BIT 19

static int peer_accept(struct conn *c)
{
	struct ctl_env *x = c->srv->env;
	const char *why = NULL;
	int r;

	if (c->cred.pid == 0) {
		/*
		 * Its process is out of sight (another pid namespace): nothing to judge, and
		 * its /proc shows none of the daemon's processes (ctl_req_caller_view).
		 */
		c->blind = true;
		log_debug("ctl: uid %u connected from a pid namespace rqbalanced cannot see: "
			  "read-only", c->cred.uid);
		return ctl_req_caller_view(x, &c->who, -1, 0);
	}
	r = peer_pidfd(c);
	if (r == 0)
		r = ctl_peer_read(latmgr_proc_root(x->lm), c->cred.pid, c->pidfd, &c->peer);
	/* What its /proc shows it, proven to be read of the same process. */
	if (r == 0)
		r = ctl_req_caller_view(x, &c->who, c->pidfd, c->peer.start_time);
	if (r < 0) {
		log_debug("ctl: connection from uid %u (pid %d) closed: its process is gone",
			  c->cred.uid, c->cred.pid);
		return r;
	}
	r = ctl_perm_peer_accept(c->cred.uid, c->cred.gid, &c->peer, &c->who.cap_sys_nice, &why);
	if (r < 0)
		ctl_req_lim_log_refusal(x->req, "ctl: connection from uid %u (pid %d) refused: %s",
					c->cred.uid, c->cred.pid, why);
	c->who.cap_sys_ptrace = ctl_perm_peer_cap(c->cred.uid, &c->peer, CAP_SYS_PTRACE_BIT);
	return r;
}

static int on_accept(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct ctl_server *srv = userdata;
	socklen_t len = sizeof(struct ucred), glen;
	gid_t groups[64];
	struct ucred cred;
	int cfd, r;

	(void)revents;
	cfd = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
	if (cfd < 0)
		return 0;
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		close(cfd);
		return 0;
	}
	glen = sizeof(groups);
	if (getsockopt(cfd, SOL_SOCKET, SO_PEERGROUPS, groups, &glen) < 0)
		glen = 0;
	r = ctl_serve_fd(srv, sd_event_source_get_event(s), cfd, &cred, groups,
			 (int)(glen / sizeof(gid_t)));
	if (r == -EBUSY || r == -EUSERS)
		srv->refused++;
	return 0;
}

int ctl_serve_fd(struct ctl_server *srv, sd_event *e, int fd, const struct ucred *cred,
		 const gid_t *groups, int ngroups)
{
	struct conn *c;
	uint64_t now;
	uid_t share;
	int r;

	if (!(c = calloc(1, sizeof(*c)))) {
		close(fd);
		return -EBUSY;
	}
	c->srv = srv;
	c->fd = fd;
	c->pidfd = -1;
	c->slot = -1;
	c->next = srv->conns;
	c->pprev = &srv->conns;
	if (c->next)
		c->next->pprev = &c->next;
	srv->conns = c;
	srv->nconns++;
	c->cred = *cred;
	c->who.uid = cred->uid;
	c->who.gid = cred->gid;
	c->who.pid = cred->pid;
	c->who.via = "ctl";
	c->who.ngroups = ngroups < 0 ? 0 : ngroups > CTL_CALLER_GROUPS ? CTL_CALLER_GROUPS : ngroups;
	if (c->who.ngroups)
		memcpy(c->who.groups, groups, (size_t)c->who.ngroups * sizeof(gid_t));
	/*
	 * A person's share of the callers, and root's reserve, so that one flood locks
	 * nobody out: judged on what the kernel gave at accept, before anything of the
	 * peer's is read, so that a refused connection costs the loop next to nothing; and
	 * judged again where what was read of it (its user namespace's map) puts it in
	 * another share.
	 */
	ctl_req_share(srv->env, &c->who, NULL);
	share = c->who.share;
	r = ctl_req_lim_admit(srv->env->req, &c->who, ctl_req_admin(&c->who, srv->env->conf),
			      &c->slot);
	if (r == 0)
		r = peer_accept(c);
	if (r == 0 && c->who.share != share) {
		ctl_req_lim_leave(srv->env->req, c->slot);
		c->slot = -1;
		r = ctl_req_lim_admit(srv->env->req, &c->who,
				      ctl_req_admin(&c->who, srv->env->conf), &c->slot);
	}
	c->admin = ctl_req_admin(&c->who, srv->env->conf);
	/*
	 * The deadline counts from now, not from the loop's last wake (sd_event_now), which
	 * a long source before this one leaves seconds behind.
	 */
	now = util_now_ns() / 1000;
	if (r == 0) {
		r = sd_event_add_io(e, &c->io, fd, EPOLLIN, on_conn_io, c);
		if (r >= 0)
			r = sd_event_add_time(e, &c->timer, CLOCK_MONOTONIC,
					      now + CTL_CONN_TIMEOUT_USEC, 0, on_conn_timeout, c);
		if (r >= 0)
			r = sd_event_add_time(e, &c->again, CLOCK_MONOTONIC, 0, 0, on_again, c);
		if (r >= 0)
			r = sd_event_source_set_enabled(c->again, SD_EVENT_OFF);
		/* Root and ctl_group ahead of everyone else's requests, the timers too. */
		if (r >= 0 && !c->admin)
			r = sd_event_source_set_priority(c->io, CTL_PRIORITY_USERS);
		if (r >= 0 && !c->admin)
			r = sd_event_source_set_priority(c->again, CTL_PRIORITY_USERS);
	}
	if (r < 0)
		conn_close(c);
	return r < 0 ? r : 0;
}

int ctl_init(struct ctl_server *s, sd_event *e, const char *path, struct ctl_env *env)
{
	int n = sd_listen_fds(1), r;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->dirfd = -1;
	s->env = env;
	snprintf(s->path, sizeof(s->path), "%s", path);
	if (n > 0 && sd_is_socket_unix(SD_LISTEN_FDS_START, SOCK_STREAM, 1, NULL, 0) > 0) {
		s->fd = SD_LISTEN_FDS_START;
		s->activated = true;
		fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
	} else {
		r = ctl_listen_bind(s, path);
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
		if (!s->activated && s->dirfd >= 0)
			unlinkat(s->dirfd, s->name, 0);
	}
	if (s->dirfd >= 0)
		close(s->dirfd);
	s->fd = -1;
	s->dirfd = -1;
}
