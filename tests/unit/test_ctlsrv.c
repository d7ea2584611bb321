/*
 * The ctl server without a daemon process: each case serves one connection of a
 * socketpair through ctl_serve_fd() against the in-memory daemon the ctl fuzz target
 * also uses (tests/common/ctl_harness.h: dry run, fake /proc and cgroup tree), as a
 * caller whose credentials the fake /proc gives, and compares the replies' texts.
 */
#include <inttypes.h>
#include <sys/socket.h>

#include "kit.h"

#include "../common/ctl_harness.h"
#include "ctl/ctl.h"
#include "ctl/ctl_req.h"
#include "ctl_proto.h"
#include "util/log.h"

struct conn_t {
	struct ctlh *d;
	int fd;                 /* the client's end */
	uint32_t seq;
	uint8_t *buf;           /* what the server wrote, not yet taken */
	size_t len, cap;
	char text[CTL_MAX_PAYLOAD + 256]; /* the replies taken by the last call, as text */
};

/* The super options of the caller's /proc for the next conn_open; NULL: no hidepid. */
static const char *peer_proc;

static int setup(void **state)
{
	struct ctlh_scenario sc = { .ctl_group = true };

	*state = ctlh_daemon_new(&sc);
	return 0;
}

static int teardown(void **state)
{
	peer_proc = NULL;
	ctlh_daemon_free(*state);
	log_set_level(-1); /* a reload sets the config's */
	return 0;
}

/* A connection from pid, uid and gid (and gid 0 as a supplementary group if wheel). */
static void conn_open(struct conn_t *c, struct ctlh *d, pid_t pid, uid_t uid, bool wheel,
		      bool cap_sys_nice)
{
	struct ucred cred = { .pid = pid, .uid = uid, .gid = uid };
	gid_t groups[2] = { uid, 0 };
	int sv[2];

	memset(c, 0, sizeof(*c));
	c->d = d;
	ctlh_peer_files(uid, uid, cap_sys_nice);
	if (peer_proc)
		ctlh_peer_proc(peer_proc);
	assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
	assert_int_equal(ctl_serve_fd(&d->ctl, ctlh_loop, sv[0], &cred, groups, wheel ? 2 : 1), 0);
	c->fd = sv[1];
}

static void conn_close(struct conn_t *c)
{
	close(c->fd);
	/* The server sees the end and closes its side. */
	ctlh_settle(c->d, -1, &c->buf, &c->len, &c->cap);
	free(c->buf);
}

/* The replies received so far, one "ok SEQ" or "err SEQ" line and its payload each. */
static const char *take(struct conn_t *c)
{
	size_t off = 0, at = 0;

	c->text[0] = '\0';
	while (off < c->len) {
		struct ctl_msg m;
		ssize_t k = ctl_proto_decode(c->buf + off, c->len - off, &m);

		assert_true(k > 0);
		at += (size_t)snprintf(c->text + at, sizeof(c->text) - at, "%s %u\n%.*s",
				       m.hdr.type == CTL_OK ? "ok" : "err", m.hdr.seq,
				       (int)m.hdr.len, m.payload);
		assert_true(at < sizeof(c->text));
		off += (size_t)k;
	}
	c->len = 0;
	return c->text;
}

static void send_raw(struct conn_t *c, const void *data, size_t n)
{
	ctlh_send_all(c->d, c->fd, data, n, &c->buf, &c->len, &c->cap);
	ctlh_settle(c->d, c->fd, &c->buf, &c->len, &c->cap);
}

/* Sends one request; returns the replies it brought. */
static const char *ask(struct conn_t *c, uint16_t type, const char *payload)
{
	uint8_t msg[sizeof(struct ctl_hdr) + CTL_MAX_REQUEST];
	size_t n = ctl_proto_encode(msg, type, ++c->seq, payload, (uint32_t)strlen(payload));

	send_raw(c, msg, n);
	return take(c);
}

/* Whether the server has closed the connection (read to its end). */
static bool closed(struct conn_t *c)
{
	char b;

	return recv(c->fd, &b, 1, MSG_DONTWAIT) == 0;
}

/* The status text with the open_fds count, which is the process's, as "N". */
static void mask_fds(char *text)
{
	char *p = strstr(text, "open_fds ");

	assert_non_null(p);
	p += strlen("open_fds ");
	memmove(p + 1, p + strcspn(p, "\n"), strlen(p + strcspn(p, "\n")) + 1);
	*p = 'N';
}

KIT_TEST_FX(test_status_to_anyone, setup, teardown)
{
	struct conn_t c;
	char want[2048], got[2048];

	conn_open(&c, *state, CTLH_PEER, 65534, false, false);
	snprintf(got, sizeof(got), "%s", ask(&c, CTL_STATUS, ""));
	mask_fds(got);
	snprintf(want, sizeof(want),
		 "ok 1\nversion %s\nsampler ctlh\ntick_ms 100\ntick_now_ms 100\nidle no\ndry_run yes\nticks 0\nmanaged 0\n"
		 "moves 0\nrestores 0\nleft_alone 0\ngone 0\nerrors_transient 0\n"
		 "errors_permanent 0\nsample_errors 0\nctl_connections 1\nopen_fds N\n"
		 "latency_tasks 0\nlatency_cgroups 0\nlatency_processes 0\n"
		 "latency_events none (test)\nlatency_overflows 0\nlatency_rescans 0\n"
		 "latency_rule_matches 0\nlatency_restored 0\nlatency_inherited_back 0\n"
		 "latency_errors 0\n"
		 "latency_class_cgroups off\nlatency_exec_wakes none\n"
		 "latency_exec_us n 0 p50 0 p99 0 max 0\n"
		 "tick_us sample 0.0 verify 0.0 latency 0.0 policy 0.0 act 0.0 max 0.0\nplacement_by rqbalance\n"
		 "sched_default_slice_ns 0\nsched_cgroup_mode unknown\ndbus off\n"
		 "llc 0 cpus 0 runnable 0 cache_kb 16384\nllc 1 cpus 1 runnable 0 cache_kb 16384\n"
		 "shaping no-cpu-controller neither a v1 cpu hierarchy nor cgroup2 with the cpu "
		 "controller: values buy only nice, policy and slice (no class cgroups; a cgroup "
		 "target gets no weight)\n",
		 RQB_VERSION);
	assert_string_equal(got, want);
	assert_false(closed(&c));
	conn_close(&c);
}

/*
 * Two kinds of core and an X3D mode: a "kind" line each, after the LLCs, then the mode;
 * a type with a space cannot split its line's words. The fake system is put back before
 * anything is checked, for the tests after this one.
 */
KIT_TEST_FX(test_status_kinds_and_x3d, setup, teardown)
{
	struct topo_kind *k = ctlh_topo->kinds;
	struct conn_t c;
	char got[2048];

	k[0] = (struct topo_kind){ .ncpus = 1, .efficiency = 0, .type = "Intel Atom" };
	k[1] = (struct topo_kind){ .ncpus = 1, .efficiency = 1, .max_mhz = 5700 };
	CPU_ZERO(&k[0].cpus);
	CPU_SET(1, &k[0].cpus);
	CPU_ZERO(&k[1].cpus);
	CPU_SET(0, &k[1].cpus);
	ctlh_topo->nkinds = 2;
	ctlh_topo->x3d_mode = TOPO_X3D_CACHE;
	conn_open(&c, *state, CTLH_PEER, 65534, false, false);
	snprintf(got, sizeof(got), "%s", ask(&c, CTL_STATUS, ""));
	conn_close(&c);
	ctlh_topo->nkinds = 0;
	ctlh_topo->x3d_mode = TOPO_X3D_NONE;
	assert_non_null(strstr(got, "llc 1 cpus 1 runnable 0 cache_kb 16384\n"
				    "kind 0 cpus 1 efficiency 0 type Intel_Atom max_mhz 0\n"
				    "kind 1 cpus 0 efficiency 1 max_mhz 5700\n"
				    "x3d_mode cache\n"
				    /* two LLCs of one size: no larger one, so the fastest kind */
				    "fast_cpus 0\nshaping "));
}

KIT_TEST_FX(test_reload_for_root_and_ctl_group, setup, teardown)
{
	struct conn_t c;

	conn_open(&c, *state, CTLH_PEER, 1000, false, false);
	assert_string_equal(ask(&c, CTL_RELOAD, ""),
			    "err 1\nerrno 1\nmessage permission denied: reload is for root or "
			    "ctl_group\n");
	conn_close(&c);
	conn_open(&c, *state, CTLH_PEER, 0, false, false);
	assert_string_equal(ask(&c, CTL_RELOAD, ""), "ok 1\n");
	conn_close(&c);
	log_set_level(-1);
	/* ctl_group is root (gid 0): a member of it may reload. */
	conn_open(&c, *state, CTLH_PEER, 1000, true, false);
	assert_string_equal(ask(&c, CTL_RELOAD, ""), "ok 1\n");
	conn_close(&c);
}

KIT_TEST_FX(test_set_negative_needs_cap_sys_nice, setup, teardown)
{
	struct conn_t c;

	conn_open(&c, *state, CTLH_PEER, 1000, false, false);
	assert_string_equal(ask(&c, CTL_SET, "cgroup /user\nvalue -5\n"),
			    "err 1\nerrno 1\nmessage permission denied: lowering a value needs "
			    "CAP_SYS_NICE (or RLIMIT_NICE)\n");
	/* Its own cgroup (it owns the weight file), a positive value: granted. */
	assert_string_equal(ask(&c, CTL_SET, "cgroup /user\nvalue 5\n"), "ok 2\ncgroup /user\n");
	/* Not its own. */
	assert_string_equal(ask(&c, CTL_SET, "cgroup /sys\nvalue 5\n"),
			    "err 3\nerrno 1\nmessage permission denied: not yours (needs the same "
			    "uid or CAP_SYS_NICE)\n");
	conn_close(&c);
	conn_open(&c, *state, CTLH_PEER, 1000, false, true);
	assert_string_equal(ask(&c, CTL_SET, "cgroup /user\nvalue -5\n"), "ok 1\ncgroup /user\n");
	conn_close(&c);
}

KIT_TEST_FX(test_malformed_closes, setup, teardown)
{
	struct ctl_hdr h = { CTL_MAGIC ^ 1, CTL_VERSION, CTL_STATUS, 0, 1 };
	struct conn_t c;

	conn_open(&c, *state, CTLH_PEER, 1000, false, false);
	assert_non_null(strstr(ask(&c, CTL_STATUS, ""), "ok 1\nversion "));
	send_raw(&c, &h, sizeof(h));
	assert_string_equal(take(&c), "err 0\nerrno 71\nmessage malformed message\n");
	assert_true(closed(&c));
	assert_int_equal(((struct ctlh *)*state)->ctl.nconns, 0);
	conn_close(&c);
}

KIT_TEST_FX(test_seventeenth_refused, setup, teardown)
{
	uint8_t msgs[(CTL_MAX_MSGS + 1) * sizeof(struct ctl_hdr)];
	char want[4096] = "";
	struct conn_t c;
	size_t n = 0;

	conn_open(&c, *state, CTLH_PEER, 1000, false, false);
	/* All at once: the server takes them as they come, and answers only 16. */
	for (uint32_t i = 1; i <= CTL_MAX_MSGS + 1; i++)
		n += ctl_proto_encode(msgs + n, CTL_GET, i, NULL, 0);
	send_raw(&c, msgs, n);
	for (uint32_t i = 1; i <= CTL_MAX_MSGS; i++)
		snprintf(want + strlen(want), sizeof(want) - strlen(want),
			 "err %u\nerrno 22\nmessage name one target: pid N, tid N, cgroup PATH or "
			 "self\n", i);
	assert_string_equal(take(&c), want);
	assert_true(closed(&c));
	conn_close(&c);
}

KIT_TEST_FX(test_credentials_changed, setup, teardown)
{
	struct conn_t c;

	conn_open(&c, *state, CTLH_PEER, 1000, false, false);
	assert_string_equal(ask(&c, CTL_RELOAD, ""),
			    "err 1\nerrno 1\nmessage permission denied: reload is for root or "
			    "ctl_group\n");
	ctlh_peer_setuid();
	assert_string_equal(ask(&c, CTL_STATUS, ""),
			    "err 2\nerrno 1\nmessage permission denied: the process that connected "
			    "has changed its credentials or executed a privileged program since\n");
	assert_true(closed(&c));
	conn_close(&c);
}

KIT_TEST_FX(test_pid_namespace, setup, teardown)
{
	struct conn_t c;

	conn_open(&c, *state, 0, 1000, false, false);
	assert_string_equal(ask(&c, CTL_GET, "cgroup /user\n"),
			    "err 1\nerrno 2\nmessage not managed by rqbalance\n");
	assert_string_equal(ask(&c, CTL_SET, "cgroup /user\nvalue 5\n"),
			    "err 2\nerrno 1\nmessage permission denied: your process is in a pid "
			    "namespace rqbalanced cannot see; only status, get, list, latency and "
			    "sync are served\n");
	assert_non_null(strstr(ask(&c, CTL_STATUS, ""), "ok 3\nversion "));
	assert_false(closed(&c));
	conn_close(&c);
}

/* 3000 managed tasks, more than one reply holds: the list says how many there are. */
#define FIRST "ok 1\ntask\t4194500\t4194500\t7\tctl uid 1000\tthread\tother\t0\t/user\t?\n"
KIT_TEST_FX(test_list_truncated, setup, teardown)
{
	struct ctlh *d = *state;
	struct latact *la = &d->lat;
	const char *text, *last;
	struct conn_t c;
	size_t lines = 0;

	for (size_t i = 0; i < la->n; i++)
		free(la->e[i]);
	la->n = 0;
	free(la->e);
	la->cap = 3000;
	la->e = calloc(la->cap, sizeof(*la->e));
	assert_non_null(la->e);
	for (int i = 0; i < 3000; i++)
		ctlh_task_entry(la, CTLH_BASE + 100 + i, CTLH_BASE + 100 + i, 7, "/user");
	conn_open(&c, d, CTLH_PEER, 1000, false, false);
	text = ask(&c, CTL_LIST, "");
	assert_true(strlen(text) - strlen("ok 1\n") <= CTL_MAX_PAYLOAD);
	assert_memory_equal(text, FIRST, strlen(FIRST));
	for (const char *p = text; (p = strchr(p, '\n')); p++)
		lines++;
	last = text + strlen(text) - 1;
	while (last > text && last[-1] != '\n')
		last--;
	assert_string_equal(last, "truncated\t3000\n");
	/* "ok 1", the 1109 tasks of 59 bytes that fit in 65536 - 64, the truncated line. */
	assert_int_equal(lines, 1 + 1109 + 1);
	conn_close(&c);
}

/* The tasks of uid 1000 (A), of root (thread C + 1, process B) and one gone, with values. */
static void other_users_tasks(struct ctlh *d)
{
	ctlh_task_entry(&d->lat, CTLH_PROC_A, CTLH_PROC_A, 5, "/user");
	ctlh_task_entry(&d->lat, CTLH_PROC_C + 1, CTLH_PROC_C, -3, "");
	ctlh_task_entry(&d->lat, CTLH_PROC_B, CTLH_PROC_B, 2, "");
	ctlh_task_entry(&d->lat, CTLH_GHOST, CTLH_GHOST, 19, "");
}

static bool lists(const char *text, pid_t tid)
{
	char line[32];

	snprintf(line, sizeof(line), "task\t%d\t", (int)tid);
	return strstr(text, line) != NULL;
}

/* Where the caller's /proc is hidepid=invisible, it is shown only its own tasks. */
KIT_TEST_FX(test_hidepid_shows_a_user_its_own, setup, teardown)
{
	struct ctlh *d = *state;
	struct conn_t c;
	const char *text;

	other_users_tasks(d);
	peer_proc = "rw,nosuid,nodev,noexec,relatime,hidepid=invisible";
	conn_open(&c, d, CTLH_PEER, 1000, false, false);
	text = ask(&c, CTL_LIST, "");
	assert_true(lists(text, CTLH_PROC_A));
	assert_false(lists(text, CTLH_PROC_C + 1) || lists(text, CTLH_PROC_B) ||
		     lists(text, CTLH_GHOST));
	assert_string_equal(ask(&c, CTL_GET, "pid 4194405\n"),
			    "err 2\nerrno 3\nmessage no such task\n");
	assert_string_equal(ask(&c, CTL_EXPLAIN, "pid 4194405\n"),
			    "err 3\nerrno 3\nmessage no such task\n");
	/* A thread of its own process that is another user's is no thread of its. */
	assert_string_equal(ask(&c, CTL_GET, "tid 4194404\n"),
			    "err 4\nerrno 3\nmessage no such thread\n");
	assert_non_null(strstr(ask(&c, CTL_GET, "pid 4194401\n"), "ok 5\nvalue 5\n"));
	assert_non_null(strstr(ask(&c, CTL_EXPLAIN, "pid 4194401\n"), "ok 6\ntarget process"));
	conn_close(&c);

	/* With gid= naming a group of its, it sees every task there is, as in that /proc. */
	peer_proc = "rw,hidepid=invisible,gid=1000";
	conn_open(&c, d, CTLH_PEER, 1000, false, false);
	text = ask(&c, CTL_LIST, "");
	assert_true(lists(text, CTLH_PROC_A) && lists(text, CTLH_PROC_B) &&
		    lists(text, CTLH_PROC_C + 1));
	assert_false(lists(text, CTLH_GHOST));
	conn_close(&c);

	/* Root and ctl_group see everything whatever their /proc says. */
	peer_proc = "rw,hidepid=invisible";
	conn_open(&c, d, CTLH_PEER, 1000, true, false);
	text = ask(&c, CTL_LIST, "");
	assert_true(lists(text, CTLH_PROC_B) && lists(text, CTLH_GHOST));
	conn_close(&c);
}

/*
 * With no proc mounted at the caller's /proc, or from a process out of sight (another
 * pid namespace), nothing of another user's is shown.
 */
KIT_TEST_FX(test_no_view_fails_closed, setup, teardown)
{
	struct ctlh *d = *state;
	struct conn_t c;
	const char *text;

	other_users_tasks(d);
	conn_open(&c, d, CTLH_PEER, 1000, false, false);
	text = ask(&c, CTL_LIST, "");
	assert_true(lists(text, CTLH_PROC_A) && lists(text, CTLH_PROC_B));
	conn_close(&c);
	ctlh_peer_files(1000, 1000, false);
	ctlh_peer_proc(NULL);
	memset(&c, 0, sizeof(c));
	{
		struct ucred cred = { .pid = CTLH_PEER, .uid = 1000, .gid = 1000 };
		gid_t groups[1] = { 1000 };
		int sv[2];

		c.d = d;
		assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0,
					    sv), 0);
		assert_int_equal(ctl_serve_fd(&d->ctl, ctlh_loop, sv[0], &cred, groups, 1), 0);
		c.fd = sv[1];
	}
	text = ask(&c, CTL_LIST, "");
	assert_true(lists(text, CTLH_PROC_A));
	assert_false(lists(text, CTLH_PROC_B));
	conn_close(&c);
	/* Out of sight: only what it could ptrace-read, its own. */
	conn_open(&c, d, 0, 1000, false, false);
	text = ask(&c, CTL_LIST, "");
	assert_true(lists(text, CTLH_PROC_A));
	assert_false(lists(text, CTLH_PROC_B));
	conn_close(&c);
}

/* status's findings name another tool's processes only as the caller's /proc would. */
KIT_TEST_FX(test_finding_names_only_what_it_may_see, setup, teardown)
{
	struct ctlh *d = *state;
	struct ctl_caller k = { .uid = 1000, .gid = 1000, .via = "ctl",
				.view = { { 0 }, { .hidepid = CTL_HIDEPID_INVISIBLE } } };
	struct peers_finding f = { .id = "gamemoded", .npids = 6,
				   .pid = { CTLH_PROC_A, CTLH_PROC_A + 1, CTLH_PROC_B,
					    CTLH_PROC_D } },
			     out;
	const char *pids = "pids 4194401, 4194402, 4194405, 4194407 and 2 more";

	snprintf(f.text, sizeof(f.text), "gamemoded (%s) runs: it sets the nice", pids);
	f.pids_at = (unsigned)strlen("gamemoded (");
	f.pids_len = (unsigned)strlen(pids);
	assert_true(ctl_req_finding(&d->env, &k, &f, &out));
	assert_string_equal(out.text, "gamemoded (pids 4194401, 4194402) runs: it sets the nice");
	k.uid = 1001;
	k.gid = 1001;
	assert_true(ctl_req_finding(&d->env, &k, &f, &out));
	assert_string_equal(out.text, "gamemoded (pid 4194407) runs: it sets the nice");
	k.uid = 65534;
	assert_false(ctl_req_finding(&d->env, &k, &f, &out));
	/* Where no /proc hides, and to root, as it is. */
	k.view[1].hidepid = CTL_HIDEPID_OFF;
	assert_true(ctl_req_finding(&d->env, &k, &f, &out));
	assert_string_equal(out.text, f.text);
	k.uid = 0;
	k.view[1].hidepid = CTL_HIDEPID_INVISIBLE;
	assert_true(ctl_req_finding(&d->env, &k, &f, &out));
	assert_string_equal(out.text, f.text);
}

/*
 * One share a person (the third review's finding 3): the subordinate uids /etc/subuid
 * gives a user count as that user's, and so do the callers of a user namespace that
 * maps them; a namespace that maps one uid counts as that uid; one that maps uids no
 * one person holds (a container root made) shares one share with every such caller.
 */
KIT_TEST_FX(test_shares, setup, teardown)
{
	char path[] = "/tmp/rqb-subuid.XXXXXX";
	struct ctl_subids s = { 0 };
	struct ctl_idmap own = { .same = true, .n = 1, .r = { { 0, UINT32_MAX } } };
	struct ctl_idmap user8 = { .n = 2, .r = { { 1000, 1 }, { 100000, 8 } } };
	struct ctl_idmap subs_only = { .n = 1, .r = { { 100020, 100 } } };
	struct ctl_idmap single = { .n = 1, .r = { { 1002, 1 } } };
	struct ctl_idmap container = { .n = 1, .r = { { 300000, 65536 } } };
	struct ctl_idmap many = { .n = -1 };
	struct ctl_req_lim l = { 0 };
	struct ctl_caller k = { 0 };
	int fd = mkstemp(path), slot, n = 0;

	(void)state;
	assert_true(fd >= 0);
	dprintf(fd, "1000:100000:65536\nno-such-user-rqb:200000:65536\nbroken line\n"
		    "1001:400000:0\n1001:500000:10\n");
	close(fd);
	assert_int_equal(ctl_peer_subids(path, &s), 0);
	assert_int_equal(s.n, 2);
	/* A subordinate uid is its owner's, wherever it calls from. */
	assert_int_equal(ctl_req_lim_share_of(&s, 100005, NULL), 1000);
	assert_int_equal(ctl_req_lim_share_of(&s, 100005, &own), 1000);
	assert_int_equal(ctl_req_lim_share_of(&s, 500009, &user8), 1001);
	assert_int_equal(ctl_req_lim_share_of(&s, 1000, &own), 1000);
	assert_int_equal(ctl_req_lim_share_of(&s, 1003, &own), 1003);
	/* A namespace's callers count as whose subordinate uids it maps. */
	assert_int_equal(ctl_req_lim_share_of(&s, 1000, &user8), 1000);
	assert_int_equal(ctl_req_lim_share_of(&s, 65534, &subs_only), 1000);
	assert_int_equal(ctl_req_lim_share_of(&s, 1002, &single), 1002);
	assert_int_equal(ctl_req_lim_share_of(&s, 300001, &container), CTL_SHARE_FOREIGN);
	assert_int_equal(ctl_req_lim_share_of(&s, 300001, &many), CTL_SHARE_FOREIGN);
	/* Eight subordinate uids of one user take one user's share between them. */
	for (uid_t u = 100000; u < 100008; u++) {
		k.uid = u;
		k.share = ctl_req_lim_share_of(&s, u, &user8);
		for (int i = 0; i < 4; i++)
			if (ctl_req_lim_admit(&l, &k, false, &slot) == 0)
				n++;
	}
	assert_int_equal(n, CTL_REQ_PER_UID);
	k.uid = k.share = 1003;
	assert_int_equal(ctl_req_lim_admit(&l, &k, false, &slot), 0);
	/* An unchanged file is not read again; a changed one is. */
	assert_int_equal(ctl_peer_subids(path, &s), 0);
	assert_int_equal(s.n, 2);
	fd = open(path, O_WRONLY | O_APPEND);
	assert_true(fd >= 0);
	dprintf(fd, "1003:600000:65536\n");
	close(fd);
	assert_int_equal(ctl_peer_subids(path, &s), 0);
	assert_int_equal(s.n, 3);
	unlink(path);
	assert_int_equal(ctl_peer_subids(path, &s), 0);
	assert_int_equal(s.n, 0);
	ctl_peer_subids_free(&s);
}

/* The callers' slots both doors share: a user's share, root's reserve, the waiting pool. */
KIT_TEST_FX(test_limits, setup, teardown)
{
	struct ctl_req_lim l = { 0 };
	struct ctl_caller k = { .uid = 1000, .share = 1000 };
	int slot[CTL_REQ_SLOTS + 1], n = 0, extra;

	(void)state;
	for (int i = 0; i < CTL_REQ_PER_UID; i++)
		assert_int_equal(ctl_req_lim_admit(&l, &k, false, &slot[n++]), 0);
	assert_int_equal(ctl_req_lim_admit(&l, &k, false, &extra), -EUSERS);
	/* Three more users fill what all but root and ctl_group may take: 56. */
	for (uid_t u = 1001; u <= 1003; u++) {
		k.uid = k.share = u;
		for (int i = 0; i < CTL_REQ_PER_UID && n < CTL_REQ_SLOTS - CTL_REQ_RESERVED; i++)
			assert_int_equal(ctl_req_lim_admit(&l, &k, false, &slot[n++]), 0);
	}
	assert_int_equal(n, CTL_REQ_SLOTS - CTL_REQ_RESERVED);
	k.uid = k.share = 1004;
	assert_int_equal(ctl_req_lim_admit(&l, &k, false, &extra), -EBUSY);
	/* Root has its 8, and no share of its own. */
	k.uid = k.share = 0;
	for (int i = 0; i < CTL_REQ_RESERVED; i++)
		assert_int_equal(ctl_req_lim_admit(&l, &k, true, &slot[n++]), 0);
	assert_int_equal(ctl_req_lim_admit(&l, &k, true, &extra), -EBUSY);
	assert_int_equal(l.held, CTL_REQ_SLOTS);
	/* A slot left is free again, for whoever may take it. */
	ctl_req_lim_leave(&l, slot[0]);
	ctl_req_lim_leave(&l, slot[0]);
	assert_int_equal(l.held, CTL_REQ_SLOTS - 1);
	k.uid = k.share = 1000;
	assert_int_equal(ctl_req_lim_admit(&l, &k, false, &extra), 0);
	assert_int_equal(l.refused, 3);

	/* The calls waiting for credentials: 4 of one source, CTL_REQ_WAITING in all. */
	for (unsigned i = 0; i < CTL_REQ_WAITING_SOURCE; i++)
		assert_int_equal(ctl_req_lim_wait(&l, i), 0);
	assert_int_equal(ctl_req_lim_wait(&l, CTL_REQ_WAITING_SOURCE), -EUSERS);
	while (l.waiting < CTL_REQ_WAITING)
		assert_int_equal(ctl_req_lim_wait(&l, 0), 0);
	assert_int_equal(ctl_req_lim_wait(&l, 0), -EBUSY);
	ctl_req_lim_unwait(&l);
	assert_int_equal(ctl_req_lim_wait(&l, 0), 0);
}

/*
 * The loop's time a share owes: paid back at CTL_REQ_LOOP_PCT of the time that
 * passes; over CTL_REQ_OWED_NS its requests wait until it is not; others owe nothing.
 */
KIT_TEST_FX(test_loop_time, setup, teardown)
{
	const uint64_t ms = 1000000, t0 = 1000 * ms;
	struct ctl_req_lim l = { 0 };

	(void)state;
	assert_int_equal(ctl_req_lim_owed(&l, 1000, t0), 0);
	ctl_req_lim_charge(&l, 1000, CTL_REQ_OWED_NS, t0);
	assert_int_equal(ctl_req_lim_owed(&l, 1000, t0), 0);
	ctl_req_lim_charge(&l, 1000, 40 * ms, t0);
	/* 40 ms over: paid back in 40 / (25 / 100) = 160 ms. */
	assert_int_equal(ctl_req_lim_owed(&l, 1000, t0), 40 * ms * 100 / CTL_REQ_LOOP_PCT);
	assert_int_equal(ctl_req_lim_owed(&l, 1000, t0 + 80 * ms),
			 20 * ms * 100 / CTL_REQ_LOOP_PCT);
	assert_int_equal(ctl_req_lim_owed(&l, 1000, t0 + 160 * ms), 0);
	assert_int_equal(ctl_req_lim_owed(&l, 1001, t0), 0);
	assert_int_equal(l.waited, 2);
	/* A debt paid back makes room for another share's when every entry is taken. */
	for (uid_t u = 2000; u < 2000 + CTL_REQ_DEBTORS; u++)
		ctl_req_lim_charge(&l, u, 200 * ms, t0);
	assert_true(ctl_req_lim_owed(&l, 2000 + CTL_REQ_DEBTORS - 1, t0) > 0);
	ctl_req_lim_charge(&l, 3000, 300 * ms, t0 + 1000 * ms);
	assert_true(ctl_req_lim_owed(&l, 3000, t0 + 1000 * ms) > 0);
}


void kit_before(void)
{
	log_set_level(-1);
	ctlh_init("rqb-test-ctlsrv");
}
