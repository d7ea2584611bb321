/*
 * The D-Bus API (see ctl_bus.h), the request layer's second door (ctl_req.h). Every call
 * is judged on the bus driver's record of the caller's connection (its uid, groups and
 * pid, which the bus took from the kernel when the caller connected), asked for once
 * a connection without blocking the loop and remembered for it (a unique name is never
 * given to another connection); meanwhile its calls wait in the request layer's pool
 * for that. Then each call takes one of the callers' slots the ctl socket's
 * connections take too (a user's share, root's reserve), and is judged and carried
 * out by ctl_req as a ctl request would be. CAP_SYS_NICE and CAP_SYS_PTRACE are never
 * counted here: the bus names a pid, not a pinned process, so there is nothing to read
 * a capability from that could not be another process by then.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "ctl/ctl_bus.h"
#include "ctl/ctl_req.h"
#include "latmgr/latmgr.h"
#include "sample/procfs.h"
#include "util/log.h"
#include "util/util.h"

#define ERR_NO_TASK "org.rqbalance1.Error.NoSuchTask"
#define ERR_NO_CGROUP "org.rqbalance1.Error.NoSuchCgroup"
#define ERR_NOT_MANAGED "org.rqbalance1.Error.NotManaged"

/* A call, decoded: what it asks, and of which target. */
struct bus_call {
	struct ctl_bus *b;
	struct bus_call *next;  /* its sender's next waiting call, in order */
	sd_bus_message *m;      /* the call, answered once its sender is known */
	enum ctl_req_op op;
	bool s76;               /* SetForegroundProcess: answered with nothing */
	int pidfd;              /* RegisterGame, UnregisterGame: the game's, m's own */
	struct lat_target t;
	int value;
};

/* A connection that called: who it is, once the driver said, and what waits for that. */
struct bus_sender {
	struct ctl_bus *b;
	struct bus_sender *next, **pprev; /* in b->senders */
	char *name;             /* its unique name; "" where it has none (a peer-to-peer link) */
	bool known;             /* who is the driver's answer */
	struct ctl_caller who;
	sd_bus_slot *lookup;    /* GetConnectionCredentials asked, not answered yet */
	struct bus_call *calls, **tail; /* waiting for the answer, in order */
	unsigned ncalls;
	sd_event_source *more;  /* known: serves its next waiting call on a later turn */
	uint64_t used_ns;       /* its last call (CLOCK_MONOTONIC): the least recent is forgotten */
};

static const char *op_name(const struct bus_call *c)
{
	return sd_bus_message_get_member(c->m);
}

static void call_free(struct bus_call *c)
{
	sd_bus_message_unref(c->m);
	free(c);
}

static struct bus_sender *sender_find(const struct ctl_bus *b, const char *name)
{
	for (struct bus_sender *s = b->senders; s; s = s->next)
		if (strcmp(s->name, name) == 0)
			return s;
	return NULL;
}

static struct bus_sender *sender_new(struct ctl_bus *b, const char *name)
{
	struct bus_sender *s = calloc(1, sizeof(*s));

	if (!s || !(s->name = strdup(name))) {
		free(s);
		return NULL;
	}
	s->b = b;
	s->tail = &s->calls;
	s->next = b->senders;
	s->pprev = &b->senders;
	if (s->next)
		s->next->pprev = &s->next;
	b->senders = s;
	b->nsenders++;
	return s;
}

/* Forgets s, and drops the calls still waiting (unanswered: only at the end). */
static void sender_free(struct bus_sender *s)
{
	struct bus_call *c;

	while ((c = s->calls)) {
		s->calls = c->next;
		ctl_req_lim_unwait(s->b->env->req);
		call_free(c);
	}
	*s->pprev = s->next;
	if (s->next)
		s->next->pprev = s->pprev;
	s->b->nsenders--;
	s->b->nknown -= s->known;
	sd_bus_slot_unref(s->lookup);
	sd_event_source_disable_unref(s->more);
	free(s->name);
	free(s);
}

/* Keeps at most BUS_KNOWN connections remembered: the least recently heard go. */
static void forget_least_recent(struct ctl_bus *b)
{
	while (b->nknown > BUS_KNOWN) {
		struct bus_sender *old = NULL;

		for (struct bus_sender *s = b->senders; s; s = s->next)
			if (s->known && !s->calls && (!old || s->used_ns < old->used_ns))
				old = s;
		if (!old)
			return;
		sender_free(old);
	}
}

/* The error a call gets for -r: D-Bus's own names where one fits, else ours. */
static void set_error(sd_bus_error *e, const struct lat_target *t, int r, const char *why)
{
	const char *name;

	switch (r) {
	case -EPERM:
	case -EACCES:
		name = SD_BUS_ERROR_ACCESS_DENIED;
		break;
	case -EINVAL:
		name = SD_BUS_ERROR_INVALID_ARGS;
		break;
	case -ESRCH:
		name = ERR_NO_TASK;
		break;
	case -ENOENT:
		name = why ? (t->kind == LAT_T_CGROUP ? ERR_NO_CGROUP : ERR_NO_TASK) : ERR_NOT_MANAGED;
		if (!why)
			why = "not managed by rqbalance";
		break;
	case -EUSERS:
	case -E2BIG:
		name = SD_BUS_ERROR_LIMITS_EXCEEDED;
		break;
	default:
		sd_bus_error_set_errnof(e, -r, "%s", why ? why : strerror(-r));
		return;
	}
	sd_bus_error_set(e, name, why ? why : strerror(-r));
}

/*
 * The process game call c's pidfd stands for, pinned by its start time into c->t: its
 * pid read from the pidfd, that pid's start time read, then the pidfd read again: a
 * process that still runs then is the one whose start time was read, since a pid is
 * reused only once its process is gone. 0, or -EINVAL (not a pidfd), -ESRCH (exited).
 */
static int pin_pidfd(struct bus_call *c, const char **ret_why)
{
	const char *root = latmgr_proc_root(c->b->env->lm);
	pid_t pid, again;
	uint64_t start;
	int r;

	r = procfs_pidfd_pid(root, c->pidfd, &pid);
	if (r == 0 && procfs_start_time(root, pid, &start) < 0)
		r = -ESRCH;
	if (r == 0 && (procfs_pidfd_pid(root, c->pidfd, &again) < 0 || again != pid))
		r = -ESRCH;
	if (r == -EINVAL || (r < 0 && r != -ESRCH)) {
		*ret_why = "not a pidfd";
		return -EINVAL;
	}
	if (r < 0) {
		*ret_why = "the pidfd's process has exited";
		return r;
	}
	c->t.pid = pid;
	c->t.start_time = start;
	return 0;
}

/* Carries out c for caller k, through the one request procedure, and answers it. */
static void call_serve(struct bus_call *c, const struct ctl_caller *k)
{
	const char *sender = sd_bus_message_get_sender(c->m);
	struct ctl_request q = { .op = c->op, .name = op_name(c), .value = c->value,
				 .conn = sender ? sender : "" };
	sd_bus_error e = SD_BUS_ERROR_NULL;
	struct ctl_answer a = { 0 };
	int r = 0;

	if (q.op == CTL_REQ_OP_GAME || q.op == CTL_REQ_OP_UNGAME)
		r = pin_pidfd(c, &a.why);
	q.t = c->t;
	if (r == 0)
		r = ctl_req_run(c->b->env, k, &q, &a);
	if (r < 0) {
		set_error(&e, &q.t, r, a.why);
		sd_bus_reply_method_error(c->m, &e);
		sd_bus_error_free(&e);
	} else if (q.op == CTL_REQ_OP_GET) {
		sd_bus_reply_method_return(c->m, "is", a.value, a.source);
	} else if (q.op == CTL_REQ_OP_FOREGROUND) {
		sd_bus_reply_method_return(c->m, c->s76 ? "" : "i", a.value);
	} else if (q.op == CTL_REQ_OP_GAME) {
		sd_bus_reply_method_return(c->m, "i", a.value);
	} else if (q.op == CTL_REQ_OP_UNGAME) {
		sd_bus_reply_method_return(c->m, "");
	} else {
		sd_bus_reply_method_return(c->m, q.t.kind == LAT_T_CGROUP ? "" : "u", (uint32_t)a.n);
	}
}

/*
 * The caller's uid, groups and pid from the driver's a{sv}; any other field is
 * skipped. 0, or -EBADMSG when the uid is missing.
 */
static int read_creds(sd_bus_message *m, struct ctl_caller *k)
{
	bool have_uid = false;
	const char *key;
	int r;

	r = sd_bus_message_enter_container(m, 'a', "{sv}");
	while (r > 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
		r = sd_bus_message_read(m, "s", &key);
		if (r >= 0 && strcmp(key, "UnixUserID") == 0) {
			uint32_t uid;

			r = sd_bus_message_read(m, "v", "u", &uid);
			k->uid = uid;
			have_uid = r > 0;
		} else if (r >= 0 && strcmp(key, "ProcessID") == 0) {
			uint32_t pid;

			r = sd_bus_message_read(m, "v", "u", &pid);
			k->pid = r > 0 && pid <= INT32_MAX ? (pid_t)pid : 0;
		} else if (r >= 0 && strcmp(key, "UnixGroupIDs") == 0) {
			const uint32_t *g;
			size_t size = 0;

			r = sd_bus_message_enter_container(m, 'v', "au");
			if (r > 0)
				r = sd_bus_message_read_array(m, 'u', (const void **)&g, &size);
			/* More groups than kept: none counts, as ctl fails closed. */
			if (r >= 0 && size / sizeof(*g) <= CTL_CALLER_GROUPS)
				for (size_t i = 0; i < size / sizeof(*g); i++)
					k->groups[k->ngroups++] = g[i];
			if (r >= 0)
				r = sd_bus_message_exit_container(m);
		} else if (r >= 0) {
			r = sd_bus_message_skip(m, "v");
		}
		if (r >= 0)
			r = sd_bus_message_exit_container(m);
	}
	return r < 0 ? r : have_uid ? 0 : -EBADMSG;
}

/*
 * Serves c for its known sender s, in one of the callers' slots (the ctl socket's
 * connections take them too): over its uid's share, or with none left but root's,
 * it is refused; so is it while its share owes the loop more time than it may
 * (ctl_req_lim_owed), which is charged what the call took, as a ctl request is.
 */
static void serve_known(struct bus_sender *s, struct bus_call *c)
{
	struct ctl_env *x = s->b->env;
	bool admin = ctl_req_admin(&s->who, x->conf);
	uint64_t now = util_now_ns();
	int slot, r;

	r = ctl_req_lim_admit(x->req, &s->who, admin, &slot);
	if (r < 0) {
		const char *why = r == -EUSERS ? "over its share of the callers"
					       : "no callers' slot left but root's";

		ctl_req_lim_log_refusal(x->req, "dbus: %s refused to uid %u: %s", op_name(c),
					s->who.uid, why);
		sd_bus_reply_method_errorf(c->m, SD_BUS_ERROR_LIMITS_EXCEEDED,
					   "uid %u: %s (%d of one user's at once)", s->who.uid, why,
					   CTL_REQ_PER_UID);
		return;
	}
	call_serve(c, &s->who);
	ctl_req_lim_leave(x->req, slot);
	if (!admin)
		ctl_req_lim_charge(x->req, s->who.share, util_now_ns() - now, util_now_ns());
}

/* How long known sender s must wait before its next call: 0 for an admin, or a share
 * that owes the loop no more time than it may (ctl_req_lim_owed). */
static uint64_t owed(const struct bus_sender *s, uint64_t now)
{
	const struct ctl_env *x = s->b->env;

	return ctl_req_admin(&s->who, x->conf) ? 0 : ctl_req_lim_owed(x->req, s->who.share, now);
}

static int on_more(sd_event_source *es, uint64_t usec, void *userdata);

/* s's first waiting call is served on a later turn of the loop, not before at_ns. */
static int later(struct bus_sender *s, sd_event *e, uint64_t at_ns)
{
	int r = 0;

	if (!s->more) {
		r = sd_event_add_time(e, &s->more, CLOCK_MONOTONIC, 0, 0, on_more, s);
		if (r >= 0 && !ctl_req_admin(&s->who, s->b->env->conf))
			r = sd_event_source_set_priority(s->more, SD_EVENT_PRIORITY_NORMAL + 10);
	}
	if (r >= 0)
		r = sd_event_source_set_time(s->more, at_ns / 1000);
	if (r >= 0)
		r = sd_event_source_set_enabled(s->more, SD_EVENT_ONESHOT);
	return r;
}

/*
 * Serves the first of known sender s's waiting calls; the next waits for a later turn
 * of the loop (s->more), as a ctl connection's next request does, so that one sender's
 * calls never hold the loop together. While its share owes the loop time, the call
 * waits until that is paid, as a ctl connection does: it is answered late, not
 * refused. Without a loop (a peer-to-peer link) all go now.
 */
static void serve_next(struct bus_sender *s)
{
	struct ctl_bus *b = s->b;
	sd_event *e = sd_bus_get_event(b->bus);
	struct bus_call *c;
	uint64_t now, wait;

	while ((c = s->calls)) {
		now = util_now_ns();
		if (e && (wait = owed(s, now)) > 0 && later(s, e, now + wait) >= 0)
			return;
		s->calls = c->next;
		if (!s->calls)
			s->tail = &s->calls;
		s->ncalls--;
		ctl_req_lim_unwait(b->env->req);
		serve_known(s, c);
		call_free(c);
		if (s->calls && e && later(s, e, 0) >= 0)
			return;
	}
}

static int on_more(sd_event_source *es, uint64_t usec, void *userdata)
{
	struct bus_sender *s = userdata;

	(void)es;
	(void)usec;
	serve_next(s);
	forget_least_recent(s->b);
	return 0;
}

static int on_creds(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	struct bus_sender *s = userdata;
	struct ctl_bus *b = s->b;
	struct ctl_caller k = { .gid = (gid_t)-1, .via = "dbus" };
	struct bus_call *c;
	int r;

	(void)ret_error;
	s->lookup = sd_bus_slot_unref(s->lookup);
	r = sd_bus_message_is_method_error(reply, NULL) ? -sd_bus_message_get_errno(reply)
							: read_creds(reply, &k);
	/* What its /proc shows it: by the pid the bus took, which no pidfd pins. */
	if (r == 0)
		r = ctl_req_caller_view(b->env, &k, -1, 0);
	if (r < 0) {
		log_debug("dbus: %s: no credentials: %s", s->name, strerror(r == 0 ? EIO : -r));
		for (c = s->calls; c; c = c->next)
			sd_bus_reply_method_errorf(c->m, SD_BUS_ERROR_ACCESS_DENIED,
						   "permission denied: the bus gave no credentials "
						   "for %s", s->name);
		sender_free(s);
		return 0;
	}
	s->who = k;
	s->known = true;
	b->nknown++;
	s->used_ns = util_now_ns();
	serve_next(s);
	forget_least_recent(b);
	return 0;
}

/*
 * Takes call m (its arguments in proto): served now where its sender is known, else
 * parked in the request layer's pool until the driver says who sent it. 1: answered
 * or to be; <0: an error reply now.
 */
static int take(struct ctl_bus *b, sd_bus_message *m, const struct bus_call *proto,
		sd_bus_error *e)
{
	const char *name = sd_bus_message_get_sender(m);
	struct bus_sender *s = sender_find(b, name ? name : "");
	struct bus_call *c, now = *proto;
	int r;

	now.b = b;
	now.m = m;
	/*
	 * Served now, unless calls of its own wait for a later turn, or its share owes the
	 * loop time: it queues behind them.
	 */
	if (s && s->known && !s->calls &&
	    (!sd_bus_get_event(b->bus) || owed(s, util_now_ns()) == 0)) {
		s->used_ns = util_now_ns();
		serve_known(s, &now);
		return 1;
	}
	if (!s && !(s = sender_new(b, name ? name : "")))
		return -ENOMEM;
	r = ctl_req_lim_wait(b->env->req, s->ncalls);
	c = r == 0 ? malloc(sizeof(*c)) : NULL;
	if (!c) {
		if (r == 0)
			ctl_req_lim_unwait(b->env->req);
		if (!s->ncalls)
			sender_free(s);
		if (r == 0)
			return -ENOMEM;
		return sd_bus_error_set(e, SD_BUS_ERROR_LIMITS_EXCEEDED,
					r == -EUSERS ? "too many calls of this connection wait for "
						       "its credentials"
						     : "too many calls wait for their callers' "
						       "credentials");
	}
	*c = now;
	c->m = sd_bus_message_ref(m);
	c->next = NULL;
	*s->tail = c;
	s->tail = &c->next;
	s->ncalls++;
	if (s->lookup)
		return 1;
	/* Known, and the only call waiting: nothing is armed for it yet. */
	if (s->known) {
		if (s->ncalls == 1)
			serve_next(s);
		return 1;
	}
	r = sd_bus_call_method_async(b->bus, &s->lookup, "org.freedesktop.DBus",
				     "/org/freedesktop/DBus", "org.freedesktop.DBus",
				     "GetConnectionCredentials", on_creds, s, "s", s->name);
	if (r < 0) {
		/* c is its only call (no lookup was under way): answered with r. */
		sender_free(s);
		return r;
	}
	return 1;
}

static int bad_value(sd_bus_error *e, int v)
{
	return sd_bus_error_setf(e, SD_BUS_ERROR_INVALID_ARGS,
				 "value %d: a latency-nice value is %d to %d", v, LAT_MIN, LAT_MAX);
}

/* The methods on a process or a thread: (u pid) or (u pid, i value). */
static int on_task(sd_bus_message *m, void *userdata, sd_bus_error *e)
{
	const char *member = sd_bus_message_get_member(m);
	struct bus_call c = { 0 };
	uint32_t pid;
	int r;

	c.op = strncmp(member, "Set", 3) == 0 ? CTL_REQ_OP_SET : strncmp(member, "Get", 3) == 0 ? CTL_REQ_OP_GET
										    : CTL_REQ_OP_RESET;
	c.t.kind = strstr(member, "Thread") ? LAT_T_THREAD : LAT_T_PROCESS;
	r = c.op == CTL_REQ_OP_SET ? sd_bus_message_read(m, "ui", &pid, &c.value)
			   : sd_bus_message_read(m, "u", &pid);
	if (r < 0)
		return r;
	if (pid == 0 || pid > INT32_MAX)
		return sd_bus_error_setf(e, SD_BUS_ERROR_INVALID_ARGS, "pid %u: not a pid", pid);
	if (c.op == CTL_REQ_OP_SET && (c.value < LAT_MIN || c.value > LAT_MAX))
		return bad_value(e, c.value);
	c.t.pid = (pid_t)pid;
	return take(userdata, m, &c, e);
}

/* The methods on a cgroup: (s path) or (s path, i value). */
static int on_cgroup(sd_bus_message *m, void *userdata, sd_bus_error *e)
{
	const char *member = sd_bus_message_get_member(m), *path;
	struct bus_call c = { .t.kind = LAT_T_CGROUP };
	int r;

	c.op = strncmp(member, "Set", 3) == 0 ? CTL_REQ_OP_SET : strncmp(member, "Get", 3) == 0 ? CTL_REQ_OP_GET
										    : CTL_REQ_OP_RESET;
	r = c.op == CTL_REQ_OP_SET ? sd_bus_message_read(m, "si", &path, &c.value)
			   : sd_bus_message_read(m, "s", &path);
	if (r < 0)
		return r;
	if (c.op == CTL_REQ_OP_SET && (c.value < LAT_MIN || c.value > LAT_MAX))
		return bad_value(e, c.value);
	if (strlen(path) >= sizeof(c.t.path) || !latact_cgroup_path_ok(path))
		return sd_bus_error_setf(e, SD_BUS_ERROR_INVALID_ARGS, "%s",
					 "not an absolute cgroup path without . or .. "
					 "components or blanks");
	snprintf(c.t.path, sizeof(c.t.path), "%s", path);
	return take(userdata, m, &c, e);
}

/* SetForeground (u pid) -> (i value), and system76-scheduler's SetForegroundProcess. */
static int on_foreground(sd_bus_message *m, void *userdata, sd_bus_error *e)
{
	struct bus_call c = { .op = CTL_REQ_OP_FOREGROUND, .t.kind = LAT_T_PROCESS };
	uint32_t pid;
	int r;

	c.s76 = strcmp(sd_bus_message_get_member(m), "SetForegroundProcess") == 0;
	r = sd_bus_message_read(m, "u", &pid);
	if (r < 0)
		return r;
	if (pid > INT32_MAX)
		return sd_bus_error_setf(e, SD_BUS_ERROR_INVALID_ARGS, "pid %u: not a pid", pid);
	c.t.pid = (pid_t)pid;
	return take(userdata, m, &c, e);
}

/*
 * RegisterGame (h pidfd) -> (i value) and UnregisterGame (h pidfd): the game is named
 * by a pidfd, read when the call is served (the message holds the fd until then).
 */
static int on_game(sd_bus_message *m, void *userdata, sd_bus_error *e)
{
	struct bus_call c = { .t.kind = LAT_T_PROCESS };
	int r;

	c.op = strcmp(sd_bus_message_get_member(m), "RegisterGame") == 0 ? CTL_REQ_OP_GAME
									  : CTL_REQ_OP_UNGAME;
	r = sd_bus_message_read(m, "h", &c.pidfd);
	if (r < 0)
		return r;
	return take(userdata, m, &c, e);
}

static int get_fg_value(sd_bus *bus, const char *path, const char *iface, const char *prop,
			sd_bus_message *reply, void *userdata, sd_bus_error *e)
{
	struct ctl_bus *b = userdata;

	(void)bus;
	(void)path;
	(void)iface;
	(void)prop;
	(void)e;
	return sd_bus_message_append(reply, "i", b->env->conf->lat_foreground);
}

/* Every method is judged by rqbalanced itself: sd-bus is not to check privileges. */
#define U SD_BUS_VTABLE_UNPRIVILEGED
static const sd_bus_vtable vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD_WITH_NAMES("SetProcess", "ui", SD_BUS_PARAM(pid) SD_BUS_PARAM(value), "u",
				 SD_BUS_PARAM(tasks), on_task, U),
	SD_BUS_METHOD_WITH_NAMES("SetThread", "ui", SD_BUS_PARAM(tid) SD_BUS_PARAM(value), "u",
				 SD_BUS_PARAM(tasks), on_task, U),
	SD_BUS_METHOD_WITH_NAMES("SetCgroup", "si", SD_BUS_PARAM(path) SD_BUS_PARAM(value), "",
				 , on_cgroup, U),
	SD_BUS_METHOD_WITH_NAMES("GetProcess", "u", SD_BUS_PARAM(pid), "is",
				 SD_BUS_PARAM(value) SD_BUS_PARAM(source), on_task, U),
	SD_BUS_METHOD_WITH_NAMES("GetThread", "u", SD_BUS_PARAM(tid), "is",
				 SD_BUS_PARAM(value) SD_BUS_PARAM(source), on_task, U),
	SD_BUS_METHOD_WITH_NAMES("GetCgroup", "s", SD_BUS_PARAM(path), "is",
				 SD_BUS_PARAM(value) SD_BUS_PARAM(source), on_cgroup, U),
	SD_BUS_METHOD_WITH_NAMES("ResetProcess", "u", SD_BUS_PARAM(pid), "u",
				 SD_BUS_PARAM(tasks), on_task, U),
	SD_BUS_METHOD_WITH_NAMES("ResetThread", "u", SD_BUS_PARAM(tid), "u",
				 SD_BUS_PARAM(tasks), on_task, U),
	SD_BUS_METHOD_WITH_NAMES("ResetCgroup", "s", SD_BUS_PARAM(path), "", , on_cgroup, U),
	SD_BUS_METHOD_WITH_NAMES("SetForeground", "u", SD_BUS_PARAM(pid), "i",
				 SD_BUS_PARAM(value), on_foreground, U),
	SD_BUS_METHOD_WITH_NAMES("RegisterGame", "h", SD_BUS_PARAM(pidfd), "i",
				 SD_BUS_PARAM(value), on_game, U),
	SD_BUS_METHOD_WITH_NAMES("UnregisterGame", "h", SD_BUS_PARAM(pidfd), "", , on_game, U),
	SD_BUS_PROPERTY("ForegroundValue", "i", get_fg_value, 0, 0),
	SD_BUS_VTABLE_END
};

static const sd_bus_vtable s76_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD_WITH_NAMES("SetForegroundProcess", "u", SD_BUS_PARAM(pid), "", ,
				 on_foreground, U),
	SD_BUS_VTABLE_END
};
#undef U

/* RequestName's answer: 1 when the daemon owns the name now, else 0 and *ret_why. */
static int owned(sd_bus_message *reply, const char **ret_why)
{
	const sd_bus_error *e = sd_bus_message_get_error(reply);
	uint32_t ret = 0;

	if (e) {
		*ret_why = e->message ? e->message : e->name;
		return 0;
	}
	if (sd_bus_message_read(reply, "u", &ret) < 0)
		ret = 0;
	*ret_why = NULL; /* another owns it */
	return ret == 1 || ret == 4; /* primary owner, or was already */
}

static int on_name(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	struct ctl_bus *b = userdata;
	const char *why;

	(void)ret_error;
	b->serving = owned(reply, &why);
	if (b->serving)
		log_info("dbus: serving %s on the system bus", BUS_NAME);
	else if (why)
		log_notice("dbus: cannot own %s: %s: the D-Bus API is off (does the bus "
			   "policy %s.conf allow it?)", BUS_NAME, why, BUS_NAME);
	else
		log_notice("dbus: %s is owned by another process (another rqbalanced?): the "
			   "D-Bus API is off", BUS_NAME);
	return 0;
}

static int on_s76_name(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error)
{
	struct ctl_bus *b = userdata;
	const char *why;

	(void)ret_error;
	b->s76 = owned(reply, &why);
	if (b->s76)
		log_info("dbus: serving %s's SetForegroundProcess too", BUS_S76_NAME);
	else
		log_info("dbus: %s is owned by another service: its shell plugins talk to it%s%s",
			 BUS_S76_NAME, why ? ": " : "", why ? why : "");
	return 0;
}

/*
 * Whether m comes from who. A match's sender= does not ensure it: dbus-daemon routes a
 * unicast signal to its destination whatever the destination's matches say, and sd-bus
 * lets a unique-name sender through a match on a well-known one. Only the bus driver
 * sends as org.freedesktop.DBus, and only sd-bus itself as org.freedesktop.DBus.Local:
 * the bus stamps every other message with its sender's unique name.
 */
static bool sent_by(sd_bus_message *m, const char *who)
{
	const char *sender = sd_bus_message_get_sender(m);

	if (sender && strcmp(sender, who) == 0)
		return true;
	log_debug("dbus: ignored %s.%s from %s: only %s sends it", sd_bus_message_get_interface(m),
		  sd_bus_message_get_member(m), sender ? sender : "a connection with no name", who);
	return false;
}

/* system76-scheduler, started after the daemon, took its name back: it is its. */
static int on_name_lost(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct ctl_bus *b = userdata;
	const char *name = NULL;

	(void)ret_error;
	if (!sent_by(m, "org.freedesktop.DBus"))
		return 0;
	if (sd_bus_message_read(m, "s", &name) < 0 || !name)
		return 0;
	if (strcmp(name, BUS_S76_NAME) == 0 && b->s76) {
		b->s76 = false;
		log_info("dbus: %s was taken over by another service: its shell plugins talk "
			 "to it now", BUS_S76_NAME);
	} else if (strcmp(name, BUS_NAME) == 0 && b->serving) {
		b->serving = false;
		log_notice("dbus: lost %s: the D-Bus API is off", BUS_NAME);
	}
	return 0;
}

/*
 * A connection left the bus: the games it registered are given back (their grant is
 * the connection's), and calls of its still waiting are dropped, so that none is
 * served after this, which would grant what nothing would end. Every departure since
 * the match was made is told, in the order of the calls (the bus driver sends both),
 * and the match is made before the name is asked for.
 */
static int on_left(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct ctl_bus *b = userdata;
	const char *name, *old, *new;
	struct bus_sender *s;

	(void)ret_error;
	if (!sent_by(m, "org.freedesktop.DBus"))
		return 0;
	if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0 || name[0] != ':' || new[0])
		return 0;
	if ((s = sender_find(b, name)))
		sender_free(s);
	ctl_req_conn_gone(b->env, name);
	return 0;
}

static int on_disconnect(sd_bus_message *m, void *userdata, sd_bus_error *ret_error)
{
	struct ctl_bus *b = userdata;

	(void)ret_error;
	if (!sent_by(m, "org.freedesktop.DBus.Local"))
		return 0;
	log_notice("dbus: the system bus went away: the D-Bus API is off until a restart");
	b->serving = b->s76 = false;
	/* No connection's end can be told now: every game ends. */
	ctl_req_conn_gone(b->env, NULL);
	return 0;
}

int ctl_bus_attach(struct ctl_bus *b, sd_bus *bus, struct ctl_env *env)
{
	int r;

	memset(b, 0, sizeof(*b));
	b->env = env;
	b->bus = bus;
	r = sd_bus_add_object_vtable(b->bus, &b->obj, BUS_PATH, BUS_IFACE, vtable, b);
	if (r >= 0)
		r = sd_bus_add_object_vtable(b->bus, &b->s76_obj, BUS_S76_PATH, BUS_S76_NAME,
					     s76_vtable, b);
	return r < 0 ? r : 0;
}

void ctl_bus_init(struct ctl_bus *b, sd_event *e, struct ctl_env *env)
{
	sd_bus *bus = NULL;
	int r;

	memset(b, 0, sizeof(*b));
	b->env = env;
	if (!env->conf->dbus)
		return;
	r = sd_bus_open_system(&bus);
	if (r < 0) {
		log_notice("dbus: no system bus (%s): the D-Bus API is off", strerror(-r));
		return;
	}
	r = ctl_bus_attach(b, bus, env);
	if (r >= 0)
		r = sd_bus_match_signal(b->bus, &b->gone, "org.freedesktop.DBus.Local",
					"/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
					"Disconnected", on_disconnect, b);
	if (r >= 0)
		r = sd_bus_match_signal_async(b->bus, &b->lost, "org.freedesktop.DBus",
					      "/org/freedesktop/DBus", "org.freedesktop.DBus",
					      "NameLost", on_name_lost, NULL, b);
	if (r >= 0)
		r = sd_bus_match_signal_async(b->bus, &b->left, "org.freedesktop.DBus",
					      "/org/freedesktop/DBus", "org.freedesktop.DBus",
					      "NameOwnerChanged", on_left, NULL, b);
	if (r >= 0)
		r = sd_bus_request_name_async(b->bus, &b->name, BUS_NAME, 0, on_name, b);
	/* system76-scheduler's own name: it may take it over when it starts later. */
	if (r >= 0)
		r = sd_bus_request_name_async(b->bus, &b->s76_name, BUS_S76_NAME,
					      SD_BUS_NAME_ALLOW_REPLACEMENT, on_s76_name, b);
	if (r >= 0)
		r = sd_bus_attach_event(b->bus, e, SD_EVENT_PRIORITY_NORMAL);
	if (r < 0) {
		log_notice("dbus: cannot serve on the system bus (%s): the D-Bus API is off",
			   strerror(-r));
		ctl_bus_fini(b);
		b->env = env;
	}
}

void ctl_bus_fini(struct ctl_bus *b)
{
	while (b->senders)
		sender_free(b->senders);
	sd_bus_slot_unref(b->obj);
	sd_bus_slot_unref(b->s76_obj);
	sd_bus_slot_unref(b->name);
	sd_bus_slot_unref(b->s76_name);
	sd_bus_slot_unref(b->gone);
	sd_bus_slot_unref(b->lost);
	sd_bus_slot_unref(b->left);
	if (b->bus) {
		sd_bus_detach_event(b->bus);
		sd_bus_flush_close_unref(b->bus);
	}
	memset(b, 0, sizeof(*b));
}
