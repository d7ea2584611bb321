/*
 * Fuzz target: the D-Bus API, from the method calls a caller sends to the answers it
 * gets, without a bus. The daemon's own bus code (ctl_bus_attach: its vtables, the
 * decoding of each method's arguments, the wait for the caller's credentials, the
 * request layer's limits, rules and view) serves one end of a peer-to-peer sd-bus link
 * over a socketpair; the other end is the caller, and stands in for the bus driver
 * too: it answers GetConnectionCredentials with what the input says the bus knows of
 * the caller. The daemon is the in-memory one of the ctl fuzz target
 * (tests/common/ctl_harness.h): a dry-run actuator, a fake /proc and cgroup tree in a
 * temporary directory, fake tasks above PID_MAX_LIMIT.
 *
 * Input: byte 0 is the caller: its uid (bits 0-1: 0, 1000, 1001, 65534), group 0 among
 * its groups (4), whether the driver answers at all (8: it says the caller is gone)
 * and gives its uid (0x10: it does not), its pid (0x20: the fake peer process, else
 * none), and its /proc (0x40: mounted hidepid=invisible; 0x80: hidepid=ptraceable).
 * Byte 1 is the daemon: ctl_group = root (0x10) and what is managed (bits 0-2, as the
 * ctl target's). Then the calls, at most 32: a byte that picks a method (the API's,
 * and calls with a wrong signature, an unknown name or path among them), then its
 * arguments in order: a u takes a byte (below 0xf0 one of the fake tasks' ids, else 4
 * more bytes, any id), an i a byte (the value byte % 50 - 25), an s a byte (below 0xf0
 * one of a few cgroup paths, else a length byte and that many bytes).
 *
 * Each call is sent alone and the link run until both ends are idle: it must be
 * answered exactly once; an answer that is not an error must grant an unprivileged
 * caller nothing the kernel would refuse it (a set or reset of another user's task,
 * a value lowered), nor show it a process that the /proc it was given would hide.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-id128.h>
#include <unistd.h>

#include "../common/ctl_harness.h"
#include "ctl/ctl_bus.h"
#include "fuzz.h"
#include "policy/latency.h"
#include "testonly.h"

#define MAX_CALLS 32

struct method {
	const char *path, *iface, *member, *sig;
};

static const struct method methods[] = {
	{ BUS_PATH, BUS_IFACE, "SetProcess", "ui" },
	{ BUS_PATH, BUS_IFACE, "SetThread", "ui" },
	{ BUS_PATH, BUS_IFACE, "SetCgroup", "si" },
	{ BUS_PATH, BUS_IFACE, "GetProcess", "u" },
	{ BUS_PATH, BUS_IFACE, "GetThread", "u" },
	{ BUS_PATH, BUS_IFACE, "GetCgroup", "s" },
	{ BUS_PATH, BUS_IFACE, "ResetProcess", "u" },
	{ BUS_PATH, BUS_IFACE, "ResetThread", "u" },
	{ BUS_PATH, BUS_IFACE, "ResetCgroup", "s" },
	{ BUS_PATH, BUS_IFACE, "SetForeground", "u" },
	{ BUS_S76_PATH, BUS_S76_NAME, "SetForegroundProcess", "u" },
	/* Answered by sd-bus before any code of the daemon's runs. */
	{ BUS_PATH, BUS_IFACE, "SetProcess", "u" },
	{ BUS_PATH, BUS_IFACE, "GetCgroup", "u" },
	{ BUS_PATH, BUS_IFACE, "SetCgroup", "ss" },
	{ BUS_PATH, BUS_IFACE, "Nonesuch", "u" },
	{ "/elsewhere", BUS_IFACE, "GetProcess", "u" },
};
#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

static const pid_t task_ids[] = { CTLH_PEER,   CTLH_PROC_A, CTLH_PROC_A + 1, CTLH_PROC_C,
				  CTLH_PROC_C + 1, CTLH_PROC_B, CTLH_PROC_D, CTLH_GHOST,
				  0,	       CTLH_BASE + 100 };
static const char *const paths[] = { "/user", "/sys", "/nocpu", "/gone", "relative", "/user/../sys",
				     "", "/user/", "//user", "/no/such" };
static const uid_t caller_uids[] = { 0, 1000, 1001, 65534 };

/* What the input says of the caller. */
struct caller {
	uid_t uid;
	bool wheel;     /* group 0 among its groups */
	bool gone;      /* the driver answers that the connection is gone */
	bool no_uid;    /* ... or leaves its uid out */
	bool pid;       /* it names the caller's process */
	bool hides;     /* the caller's /proc hides other users' processes */
	bool admin;     /* root, or ctl_group (root's group) and in it */
};

/* One call as sent, and its answer. */
struct sent {
	const struct method *mt;
	uint32_t id;
	int value;
	char path[300];
	int before;     /* the target's value before the call (0 for none) */
	int answers;
	bool ok;        /* a method return, not an error */
};

static bool verbose;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	verbose = getenv("RQB_FUZZ_LOG") && strcmp(getenv("RQB_FUZZ_LOG"), "1") == 0;
	ctlh_init("rqb-fuzz-bus");
	return 0;
}

/* ---- the other end: the caller, and the bus driver's GetConnectionCredentials ---- */

static int on_creds(sd_bus_message *m, void *userdata, sd_bus_error *e)
{
	const struct caller *w = userdata;
	sd_bus_message *r = NULL;
	uint32_t groups[2] = { w->uid, 0 };

	if (w->gone)
		return sd_bus_error_set(e, "org.freedesktop.DBus.Error.NameHasNoOwner",
					"the connection is gone");
	FUZZ_CHECK(sd_bus_message_new_method_return(m, &r) >= 0);
	FUZZ_CHECK(sd_bus_message_open_container(r, 'a', "{sv}") >= 0);
	if (!w->no_uid)
		FUZZ_CHECK(sd_bus_message_append(r, "{sv}", "UnixUserID", "u", (uint32_t)w->uid) >= 0);
	FUZZ_CHECK(sd_bus_message_open_container(r, 'e', "sv") >= 0);
	FUZZ_CHECK(sd_bus_message_append(r, "s", "UnixGroupIDs") >= 0);
	FUZZ_CHECK(sd_bus_message_open_container(r, 'v', "au") >= 0);
	FUZZ_CHECK(sd_bus_message_append_array(r, 'u', groups,
					       (w->wheel ? 2 : 1) * sizeof(groups[0])) >= 0);
	FUZZ_CHECK(sd_bus_message_close_container(r) >= 0);
	FUZZ_CHECK(sd_bus_message_close_container(r) >= 0);
	if (w->pid)
		FUZZ_CHECK(sd_bus_message_append(r, "{sv}", "ProcessID", "u", (uint32_t)CTLH_PEER) >= 0);
	/* A field the daemon does not know is skipped. */
	FUZZ_CHECK(sd_bus_message_append(r, "{sv}", "LinuxSecurityLabel", "s", "unconfined") >= 0);
	FUZZ_CHECK(sd_bus_message_close_container(r) >= 0);
	FUZZ_CHECK(sd_bus_send(NULL, r, NULL) >= 0);
	sd_bus_message_unref(r);
	return 1;
}

static const sd_bus_vtable driver_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD("GetConnectionCredentials", "s", "a{sv}", on_creds, 0),
	SD_BUS_VTABLE_END
};

static int on_answer(sd_bus_message *m, void *userdata, sd_bus_error *e)
{
	struct sent *s = userdata;

	(void)e;
	s->answers++;
	s->ok = !sd_bus_message_is_method_error(m, NULL);
	if (verbose)
		fprintf(stderr, "%s(%u%s%s) -> %s %s\n", s->mt->member, s->id, s->path[0] ? " " : "",
			s->path, s->ok ? "ok" : sd_bus_message_get_error(m)->name,
			s->ok ? "" : sd_bus_message_get_error(m)->message);
	return 1;
}

/* Runs both ends until neither has anything left to do. */
static void pump(sd_bus *a, sd_bus *b)
{
	for (int idle = 0, i = 0; idle < 2 && i < 100000; i++) {
		int ra = sd_bus_process(a, NULL), rb = sd_bus_process(b, NULL);

		FUZZ_CHECK(ra >= 0 && rb >= 0);
		idle = ra == 0 && rb == 0 ? idle + 1 : 0;
	}
}

/* ---- the input ---- */

struct reader {
	const uint8_t *p;
	size_t left;
};

static bool take(struct reader *r, uint8_t *ret)
{
	if (!r->left)
		return false;
	*ret = *r->p++;
	r->left--;
	return true;
}

static bool arg_u(struct reader *r, uint32_t *ret)
{
	uint8_t b, x[4];

	if (!take(r, &b))
		return false;
	if (b < 0xf0) {
		*ret = (uint32_t)task_ids[b % (sizeof(task_ids) / sizeof(task_ids[0]))];
		return true;
	}
	for (int i = 0; i < 4; i++)
		if (!take(r, &x[i]))
			return false;
	*ret = (uint32_t)x[0] | (uint32_t)x[1] << 8 | (uint32_t)x[2] << 16 | (uint32_t)x[3] << 24;
	return true;
}

static bool arg_s(struct reader *r, char *ret, size_t size)
{
	uint8_t b, n;
	size_t i;

	if (!take(r, &b))
		return false;
	if (b < 0xf0) {
		snprintf(ret, size, "%s", paths[b % (sizeof(paths) / sizeof(paths[0]))]);
		return true;
	}
	if (!take(r, &n))
		return false;
	for (i = 0; i < n && i + 1 < size; i++)
		if (!take(r, (uint8_t *)&ret[i]))
			return false;
	ret[i] = '\0';
	return true;
}

/* The next call's method and arguments into *s; false at the end of the input. */
static bool next_call(struct reader *r, struct sent *s)
{
	uint8_t b;

	memset(s, 0, sizeof(*s));
	if (!take(r, &b))
		return false;
	s->mt = &methods[b % NMETHODS];
	for (const char *t = s->mt->sig; *t; t++) {
		if (*t == 'u' && !arg_u(r, &s->id))
			return false;
		if (*t == 'i') {
			if (!take(r, &b))
				return false;
			s->value = b % 50 - 25;
		}
		if (*t == 's' && !arg_s(r, s->path, sizeof(s->path)))
			return false;
	}
	return true;
}

static int append_args(sd_bus_message *m, const struct sent *s)
{
	int r = 0;
	bool first_s = true;

	for (const char *t = s->mt->sig; *t && r >= 0; t++) {
		if (*t == 'u')
			r = sd_bus_message_append_basic(m, 'u', &s->id);
		else if (*t == 'i')
			r = sd_bus_message_append_basic(m, 'i', &s->value);
		else if (*t == 's')
			r = sd_bus_message_append_basic(m, 's', first_s ? s->path : "x");
		first_s = first_s && *t != 's';
	}
	return r;
}

/* ---- the oracle ---- */

static bool is(const struct sent *s, const char *member)
{
	return strcmp(s->mt->member, member) == 0;
}

/* Its value now, as the daemon holds it: 0 for none. */
static int value_now(const struct ctlh *d, const struct sent *s)
{
	int v;

	if (strchr(s->mt->sig, 's')) {
		const struct lat_cg_entry *g = latact_find_cgroup(&d->lat, s->path);

		return g ? g->value : 0;
	}
	v = latmgr_value_of(&d->lm, (pid_t)s->id, (pid_t)s->id);
	return v == LAT_NONE ? 0 : v;
}

static bool cgroup_is_users(const char *path, uid_t uid)
{
	char full[PATH_MAX * 2], real[PATH_MAX], user[PATH_MAX];

	snprintf(full, sizeof(full), "%s%s", ctlh_cg_mount, path);
	snprintf(user, sizeof(user), "%s/user", ctlh_cg_mount);
	return realpath(full, real) && strcmp(real, user) == 0 && uid == 1000;
}

static void check_answer(const struct caller *w, const struct sent *s)
{
	bool thread = strstr(s->mt->member, "Thread") != NULL, cg = strchr(s->mt->sig, 's');

	FUZZ_CHECK(s->answers == 1);
	if (!s->ok)
		return;
	/* The wrong calls never reach the daemon's code, which would refuse them anyway. */
	FUZZ_CHECK(s->mt < &methods[11]);
	if (w->admin)
		return;
	/* Nothing is served on credentials the bus did not give. */
	FUZZ_CHECK(!w->gone && !w->no_uid);
	if (is(s, "GetProcess") || is(s, "GetThread")) {
		/* Shown only what its /proc would show it: another user's, never. */
		if (w->hides || !w->pid)
			FUZZ_CHECK(ctlh_task_is((pid_t)s->id, false, w->uid));
		return;
	}
	if (is(s, "GetCgroup"))
		return;
	if (is(s, "SetForeground") || is(s, "SetForegroundProcess")) {
		FUZZ_CHECK(s->id == 0 || ctlh_task_is((pid_t)s->id, true, w->uid));
		return;
	}
	/* A set or reset: the caller's own target, and never a value lowered. */
	FUZZ_CHECK(cg ? cgroup_is_users(s->path, w->uid) : ctlh_task_is((pid_t)s->id, !thread, w->uid));
	FUZZ_CHECK((is(s, "SetProcess") || is(s, "SetThread") || is(s, "SetCgroup") ? s->value : 0) >=
		   s->before);
}

/* ---- one input ---- */

static void caller_of(uint8_t b, const struct rqb_conf *conf, struct caller *ret)
{
	*ret = (struct caller){ .uid = caller_uids[b & 3], .wheel = b & 4, .gone = b & 8,
				.no_uid = b & 0x10, .pid = b & 0x20, .hides = b & 0xc0 };
	ret->admin = ret->uid == 0 || (conf->ctl_gid_set && ret->wheel);
	ctlh_peer_files(ret->uid, ret->uid, false);
	ctlh_peer_proc(b & 0x80 ? "rw,hidepid=ptraceable" : b & 0x40 ? "rw,hidepid=invisible" : "rw");
}

static void link_up(sd_bus **ret_daemon, sd_bus **ret_caller, struct caller *w)
{
	sd_bus *a = NULL, *b = NULL;
	sd_id128_t id;
	int sv[2];

	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
	FUZZ_CHECK(sd_id128_randomize(&id) >= 0);
	FUZZ_CHECK(sd_bus_new(&a) >= 0 && sd_bus_set_fd(a, sv[0], sv[0]) >= 0);
	FUZZ_CHECK(sd_bus_set_server(a, 1, id) >= 0 && sd_bus_set_anonymous(a, 1) >= 0);
	FUZZ_CHECK(sd_bus_new(&b) >= 0 && sd_bus_set_fd(b, sv[1], sv[1]) >= 0);
	FUZZ_CHECK(sd_bus_set_anonymous(b, 1) >= 0);
	FUZZ_CHECK(sd_bus_start(a) >= 0 && sd_bus_start(b) >= 0);
	FUZZ_CHECK(sd_bus_add_object_vtable(b, NULL, "/org/freedesktop/DBus", "org.freedesktop.DBus",
					    driver_vtable, w) >= 0);
	pump(a, b);
	*ret_daemon = a;
	*ret_caller = b;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ctlh_scenario sc = { 0 };
	struct reader rd = { data, size };
	struct ctlh *d;
	struct caller w;
	sd_bus *server, *client;
	uint8_t b0, b1;

	if (!take(&rd, &b0) || !take(&rd, &b1))
		return 0;
	sc.ctl_group = b1 & 0x10;
	sc.managed = b1 & 7;
	d = ctlh_daemon_new(&sc);
	caller_of(b0, &d->conf, &w);
	link_up(&server, &client, &w);
	FUZZ_CHECK(ctl_bus_attach(&d->bus, server, &d->env) == 0);
	for (int n = 0; n < MAX_CALLS; n++) {
		sd_bus_message *m = NULL;
		struct sent s;

		if (!next_call(&rd, &s))
			break;
		FUZZ_CHECK(sd_bus_message_new_method_call(client, &m, BUS_NAME, s.mt->path, s.mt->iface,
							  s.mt->member) >= 0);
		/* A string sd-bus will not send (not UTF-8) is no call. */
		if (append_args(m, &s) < 0) {
			sd_bus_message_unref(m);
			continue;
		}
		s.before = value_now(d, &s);
		FUZZ_CHECK(sd_bus_call_async(client, NULL, m, on_answer, &s, 0) >= 0);
		sd_bus_message_unref(m);
		pump(server, client);
		check_answer(&w, &s);
	}
	/* Nothing is left waiting: the pool is empty again. */
	FUZZ_CHECK(d->req.waiting == 0 && d->req.held == 0);
	ctl_bus_fini(&d->bus);
	sd_bus_flush_close_unref(client);
	ctlh_daemon_free(d);
	fuzz_quiet(); /* nothing here sets the log level, but keep the others' habit */
	return 0;
}
