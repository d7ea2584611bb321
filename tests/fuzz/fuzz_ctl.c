/*
 * Fuzz target: the ctl socket, from the bytes a client sends to the replies it gets.
 * First the message decoder on the whole input, as before. Then the input after a
 * 4-byte scenario is sent, as one client, to a connection that the daemon's own ctl
 * code serves (ctl_serve_fd) for a caller the scenario picks, against a daemon built
 * in memory (tests/common/ctl_harness.h, which the ctl server's unit test shares): a
 * dry-run latency actuator whose task operations refuse every task, and targets
 * resolved under a fake /proc and a fake cgroup hierarchy in a temporary
 * directory. Every request handler parses and answers what it is sent: status,
 * reload, set, get, list, reset, latency (refused: no BPF here) and sync. The replies
 * must decode, come in order, and never grant what the kernel would refuse the caller,
 * nor show it (get, explain, list), where the scenario mounts its /proc hidepid=2, a
 * task of another user's. Nothing outside the temporary directory is written; the fake tasks' pids are above
 * the kernel's PID_MAX_LIMIT, so no real task is ever named by them.
 */
#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../common/ctl_harness.h"
#include "ctl_proto.h"
#include "fuzz.h"
#include "policy/latency.h"
#include "testonly.h"

static const char *const keys[] = { "pid", "tid", "self", "cgroup", "value",
				    "errno", "message", "tasks", "source", "" };

/* ctl_proto_kv into buffers of several sizes, each exact so that an overrun is seen. */
static void kv(const struct ctl_msg *m)
{
	static const size_t sizes[] = { 1, 8, 256 };

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			char *v = malloc(sizes[s]);
			int r, value;
			const char *why;

			if (!v)
				abort();
			r = ctl_proto_kv(m->payload, m->hdr.len, keys[k], v, sizes[s]);
			FUZZ_CHECK(r == 0 || r == -ENOENT || r == -E2BIG || r == -EINVAL);
			if (r == 0) {
				/* The whole value: no NUL cut it short. */
				FUZZ_CHECK(strlen(v) < sizes[s]);
				FUZZ_CHECK(!strchr(v, '\n'));
				if (strcmp(keys[k], "value") == 0 &&
				    latency_parse(v, &value, &why) == 0)
					FUZZ_CHECK(value >= LAT_MIN && value <= LAT_MAX);
			}
			free(v);
		}
	}
}

/* One message of n bytes at buf: its prefixes are incomplete, and it encodes back. */
static void check_whole(const uint8_t *buf, size_t n, const struct ctl_msg *m)
{
	const size_t cuts[] = { 0, sizeof(m->hdr) - 1, sizeof(m->hdr), n - 1 };
	struct ctl_msg tmp;
	uint8_t *out;

	FUZZ_CHECK(n == sizeof(m->hdr) + m->hdr.len && m->hdr.len <= CTL_MAX_PAYLOAD);
	FUZZ_CHECK(m->payload == (const char *)buf + sizeof(m->hdr));
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		if (cuts[i] < n)
			FUZZ_CHECK(ctl_proto_decode(buf, cuts[i], &tmp) == 0);
	out = malloc(n);
	if (!out)
		abort();
	FUZZ_CHECK(ctl_proto_encode(out, m->hdr.type, m->hdr.seq, m->payload, m->hdr.len) == n);
	FUZZ_CHECK(memcmp(out, buf, n) == 0);
	free(out);
	FUZZ_CHECK(strcmp(ctl_proto_type_name(m->hdr.type), "unknown") != 0);
}

static void decoder(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		struct ctl_msg m;
		ssize_t n = ctl_proto_decode(data + off, size - off, &m);

		FUZZ_CHECK(n >= 0 || n == -EPROTO);
		if (n <= 0)
			break;
		FUZZ_CHECK((size_t)n <= size - off);
		check_whole(data + off, (size_t)n, &m);
		kv(&m);
		off += (size_t)n;
	}
}

/* ---- the fake system and the daemon: tests/common/ctl_harness.h ---- */

static const uid_t caller_uids[] = { 0, 1000, 1001, 65534 };

static bool verbose; /* RQB_FUZZ_LOG=1: the log, and every reply, on stderr */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	fuzz_quiet();
	verbose = getenv("RQB_FUZZ_LOG") && strcmp(getenv("RQB_FUZZ_LOG"), "1") == 0;
	ctlh_init("rqb-fuzz-ctl");
	return 0;
}

/* The scenario's bytes 0, 2 and 3 say how the daemon is set. */
static struct ctlh *daemon_new(const uint8_t *sc)
{
	struct ctlh_scenario s = { .ctl_group = sc[0] & 0x10, .managed = sc[2], .classes = sc[2] & 8,
				   .ticks = sc[2] >> 5, .runnable = sc[3] };

	return ctlh_daemon_new(&s);
}

/* ---- the caller ---- */

struct caller {
	struct ucred cred;
	gid_t groups[2];
	int ngroups;
	bool admin;   /* root or ctl_group: anything goes */
	bool nice;    /* CAP_SYS_NICE counted: any task, any value */
	bool hidden;  /* its /proc hides other users' tasks from it (hidepid=2, not in group 0) */
};

/* The peer's /proc files: its credentials as the scenario's byte 0 gives them. */
static void peer_files(const struct caller *w, bool cap)
{
	ctlh_peer_files(w->cred.uid, w->cred.gid, cap);
}

static void caller_of(const uint8_t *sc, const struct rqb_conf *conf, struct caller *ret)
{
	struct stat st;
	char path[PATH_MAX];
	uid_t uid = caller_uids[sc[0] & 3];
	bool cap = sc[0] & 8;

	memset(ret, 0, sizeof(*ret));
	ret->cred = (struct ucred){ .pid = CTLH_PEER, .uid = uid, .gid = sc[0] & 0x40 ? 0 : uid };
	ret->groups[ret->ngroups++] = uid;
	if (sc[0] & 4)
		ret->groups[ret->ngroups++] = 0;
	ret->admin = uid == 0 ||
		     (conf->ctl_group[0] && (ret->cred.gid == 0 || (sc[0] & 4)));
	peer_files(ret, cap);
	/* Byte 0's top bit: its /proc is mounted hidepid=2, which root's group sees past. */
	if (sc[0] & 0x80)
		ctlh_peer_proc("rw,nosuid,nodev,noexec,relatime,hidepid=invisible");
	ret->hidden = (sc[0] & 0x80) && !ret->admin && ret->cred.gid != 0 && !(sc[0] & 4);
	/* The daemon counts the capability only while /proc/PID is the caller's. */
	snprintf(path, sizeof(path), "%s/%d", ctlh_proc_root, CTLH_PEER);
	ret->nice = cap && stat(path, &st) == 0 && st.st_uid == uid;
}

/* ---- the oracle ---- */

struct sent {
	struct ctl_hdr hdr;
	const char *payload;
	bool late;    /* served after the peer's credentials changed */
};

/* The value the target has now, as managed() set it: 0 when it has none. */
static int value_now(const struct ctlh *d, const struct sent *s)
{
	char v[LAT_PATH_MAX];
	pid_t pid;

	if (ctl_proto_kv(s->payload, s->hdr.len, "cgroup", v, sizeof(v)) == 0) {
		const struct lat_cg_entry *g = latact_find_cgroup(&d->lat, v);

		return g ? g->value : 0;
	}
	if (ctl_proto_kv(s->payload, s->hdr.len, "self", v, sizeof(v)) == 0)
		return 0;
	if (ctl_proto_kv(s->payload, s->hdr.len, "pid", v, sizeof(v)) < 0 &&
	    ctl_proto_kv(s->payload, s->hdr.len, "tid", v, sizeof(v)) < 0)
		return 0;
	pid = atoi(v);
	return latmgr_value_of(&d->lm, pid, pid) == LAT_NONE ? 0 : latmgr_value_of(&d->lm, pid, pid);
}

/*
 * A set or reset answered ok for an unprivileged caller: the target was its own, and
 * a value went down only as far as RLIMIT_NICE allows (0 for the fake tasks: not at
 * all). A cgroup is its own when the weight file is (only cg/user, uid 1000's).
 */
static void check_granted(const struct caller *w, const struct sent *s, int before)
{
	char v[LAT_PATH_MAX], path[PATH_MAX * 2], real[PATH_MAX], user[PATH_MAX];
	int want = 0;
	bool mine;

	if (w->admin || w->nice)
		return;
	if (ctl_proto_kv(s->payload, s->hdr.len, "cgroup", v, sizeof(v)) == 0) {
		snprintf(path, sizeof(path), "%s%s", ctlh_cg_mount, v);
		snprintf(user, sizeof(user), "%s/user", ctlh_cg_mount);
		mine = realpath(path, real) && strcmp(real, user) == 0 && w->cred.uid == 1000;
	} else if (ctl_proto_kv(s->payload, s->hdr.len, "self", v, sizeof(v)) == 0) {
		mine = true;
	} else if (ctl_proto_kv(s->payload, s->hdr.len, "pid", v, sizeof(v)) == 0) {
		mine = ctlh_task_is(atoi(v), true, w->cred.uid);
	} else {
		FUZZ_CHECK(ctl_proto_kv(s->payload, s->hdr.len, "tid", v, sizeof(v)) == 0);
		mine = ctlh_task_is(atoi(v), false, w->cred.uid);
	}
	FUZZ_CHECK(mine);
	if (s->hdr.type == CTL_SET) {
		FUZZ_CHECK(ctl_proto_kv(s->payload, s->hdr.len, "value", v, sizeof(v)) == 0);
		want = atoi(v);
	}
	FUZZ_CHECK(want >= before);
}

/* The requests in the stream, as the server cuts it; at most CTL_MAX_MSGS are served. */
static size_t requests(const uint8_t *data, size_t size, size_t split, struct sent *ret)
{
	size_t n = 0, off = 0;

	while (off < size && n < CTL_MAX_MSGS) {
		struct ctl_msg m;
		ssize_t k = ctl_proto_decode(data + off, size - off, &m);

		if (k <= 0 || !ctl_proto_is_request(m.hdr.type) || m.hdr.len > CTL_MAX_REQUEST)
			break;
		ret[n].hdr = m.hdr;
		ret[n].payload = m.payload;
		ret[n].late = off + (size_t)k > split;
		n++;
		off += (size_t)k;
	}
	return n;
}

/* What a get, explain or list answered ok shows a hidden caller: only its own tasks. */
static void check_shown(const struct caller *w, const struct sent *s, const struct ctl_msg *m)
{
	char v[LAT_PATH_MAX];

	if (!w->hidden)
		return;
	if (s->hdr.type == CTL_LIST) {
		for (const char *p = m->payload, *end = m->payload + m->hdr.len; p < end;) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));

			if ((size_t)(end - p) > 5 && memcmp(p, "task\t", 5) == 0)
				FUZZ_CHECK(ctlh_task_is((pid_t)atoi(p + 5), false, w->cred.uid));
			p = nl ? nl + 1 : end;
		}
		return;
	}
	if (s->hdr.type != CTL_GET && s->hdr.type != CTL_EXPLAIN)
		return;
	if (ctl_proto_kv(s->payload, s->hdr.len, "pid", v, sizeof(v)) == 0 ||
	    ctl_proto_kv(s->payload, s->hdr.len, "tid", v, sizeof(v)) == 0)
		FUZZ_CHECK(ctlh_task_is((pid_t)atoi(v), false, w->cred.uid));
}

/* Every reply decodes, answers the next request in order, and grants nothing wrong. */
static void check_replies(const struct ctlh *d, const struct caller *w, const uint8_t *buf,
			  size_t len, const struct sent *req, size_t nreq, const int *before,
			  bool changed)
{
	size_t off = 0, i = 0;

	while (off < len) {
		struct ctl_msg m;
		ssize_t k = ctl_proto_decode(buf + off, len - off, &m);

		FUZZ_CHECK(k > 0);
		FUZZ_CHECK(m.hdr.type == CTL_OK || m.hdr.type == CTL_ERR);
		off += (size_t)k;
		if (verbose)
			fprintf(stderr, "reply %s seq %u:\n%.*s\n", ctl_proto_type_name(m.hdr.type),
				m.hdr.seq, (int)m.hdr.len, m.payload);
		if (m.hdr.type == CTL_ERR) {
			char v[32];

			FUZZ_CHECK(ctl_proto_kv(m.payload, m.hdr.len, "errno", v, sizeof(v)) == 0);
			FUZZ_CHECK(atoi(v) > 0);
			i++;
			continue;
		}
		/* An ok is a request's answer, in the order they came. */
		FUZZ_CHECK(i < nreq && m.hdr.seq == req[i].hdr.seq);
		if (req[i].hdr.type == CTL_RELOAD)
			FUZZ_CHECK(w->admin);
		if (req[i].hdr.type == CTL_SET || req[i].hdr.type == CTL_RESET)
			check_granted(w, &req[i], before[i]);
		check_shown(w, &req[i], &m);
		/* A peer that changed its credentials is served nothing more. */
		if (changed && req[i].late && req[i].hdr.type != CTL_SYNC)
			FUZZ_CHECK(!"a request served after the peer changed its credentials");
		i++;
	}
	(void)d;
}

/* ---- the connection ---- */

/* Fills the caller's share of the connections first: its own is then refused. */
static void crowd(struct ctlh *d, const struct caller *w, int *fds, int *n)
{
	for (*n = 0; *n < CTL_REQ_PER_UID;) {
		int sv[2];

		FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
		if (ctl_serve_fd(&d->ctl, ctlh_loop, sv[0], &w->cred, w->groups, w->ngroups) < 0) {
			close(sv[1]);
			return;
		}
		fds[(*n)++] = sv[1];
	}
}

static void dispatch(const uint8_t *sc, const uint8_t *data, size_t size)
{
	struct ctlh *d = daemon_new(sc);
	struct sent req[CTL_MAX_MSGS];
	int before[CTL_MAX_MSGS], crowd_fds[CTL_REQ_PER_UID], ncrowd = 0, sv[2], r;
	size_t split = size * sc[1] / 256, nreq, len = 0, cap = 0;
	bool change = sc[0] & 0x20;
	uint8_t *buf = NULL;
	struct caller w;

	caller_of(sc, &d->conf, &w);
	nreq = requests(data, size, change ? split : size, req);
	for (size_t i = 0; i < nreq; i++)
		before[i] = value_now(d, &req[i]);
	if (sc[2] & 0x10)
		crowd(d, &w, crowd_fds, &ncrowd);
	FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) == 0);
	r = ctl_serve_fd(&d->ctl, ctlh_loop, sv[0], &w.cred, w.groups, w.ngroups);
	/* A user's share is CTL_REQ_PER_UID connections; root and ctl_group have no share. */
	FUZZ_CHECK(r == 0 || (r == -EUSERS && !w.admin && ncrowd == CTL_REQ_PER_UID));
	if (r == 0) {
		ctlh_send_all(d, sv[1], data, change ? split : size, &buf, &len, &cap);
		if (change) {
			ctlh_peer_setuid();
			ctlh_send_all(d, sv[1], data + split, size - split, &buf, &len, &cap);
		}
		ctlh_settle(d, sv[1], &buf, &len, &cap);
		check_replies(d, &w, buf, len, req, nreq, before, change);
	}
	close(sv[1]);
	for (int i = 0; i < ncrowd; i++)
		close(crowd_fds[i]);
	ctlh_daemon_free(d);
	free(buf);
	fuzz_quiet(); /* a reload sets the config's log level */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	decoder(data, size);
	if (size >= 4)
		dispatch(data, data + 4, size - 4);
	return 0;
}
