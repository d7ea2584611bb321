/*
 * Task events (taskev/, for the latency manager): fork, exec and exit events from the
 * kernel's proc connector (libnl-3), one of the event source drivers (evsrc.h).
 * It only reads: it never touches a task, and sends nothing but its own (un)subscription.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <netlink/netlink.h>
#include <netlink/msg.h>
#include <netlink/socket.h>

#include "rqbalance.h"
#include "taskev/procconn.h"
#include "util/util.h"
#include "testonly.h"

/* Only delays overflow under a fork storm, but covers the bursts of a busy build. */
#define PROCCONN_RCVBUF_BYTES (4 << 20)
/* One connector message is under 100 bytes; a fixed buffer saves libnl's MSG_PEEK call. */
#define PROCCONN_MSGBUF_BYTES 4096
/*
 * Datagrams read by one procconn_dispatch: under a fork storm the socket refills as fast as it
 * is read, and a handler that drained it would keep the loop from its tick, its ctl
 * socket and its watchdog. What is left is read when the loop comes back to it.
 */
#define PROCCONN_DISPATCH_MAX 256
/* The kernel acks in the sender's context; this only bounds a wait that should not happen. */
#define PROCCONN_ACK_WAIT_NS (200 * NSEC_PER_MSEC)

struct procconn {
	struct nl_sock *sk;       /* NETLINK_CONNECTOR, in group CN_IDX_PROC, non-blocking */
	struct nl_cb *nlcb;       /* the socket's callbacks, with our MSG_IN handler */
	struct evsrc_callbacks cb;   /* the owner's, with ctx */
	void *ctx;
	struct evsrc_counters n;     /* since procconn_open */
	uint32_t seq;             /* cn_msg seq and ack of our LISTEN: the port, unique */
	int ack_err;              /* -1 until our ack arrives, then the kernel's errno (0: ok) */
	bool subscribing;         /* inside procconn_open: nothing is delivered yet */
	int delivered;            /* events delivered by the current procconn_dispatch */
	bool empty;               /* the last procconn_dispatch stopped at an empty socket */
};

/* libnl's codes back to errno, as far as nl_syserr2nlerr() keeps them apart. */
static int nle_errno(int nle)
{
	switch (abs(nle)) {
	case NLE_NOMEM:
		return ENOMEM;
	case NLE_PERM:
		return EPERM;
	case NLE_NOACCESS:
		return EACCES;
	case NLE_PROTO_MISMATCH:
		return EPROTONOSUPPORT;
	case NLE_AF_NOSUPPORT:
		return EAFNOSUPPORT;
	case NLE_BAD_SOCK:
		return EBADF;
	case NLE_AGAIN:
		return EAGAIN;
	case NLE_INTR:
		return EINTR;
	case NLE_INVAL:
		return EINVAL;
	default:
		return EIO;
	}
}

static int send_op(struct procconn *pc, enum proc_cn_mcast_op op)
{
	struct cn_msg cn = {
		.id = { .idx = CN_IDX_PROC, .val = CN_VAL_PROC },
		.seq = pc->seq,
		.ack = pc->seq,
		.len = sizeof(uint32_t),
	};
	uint32_t op32 = op; /* the kernel wants exactly sizeof(enum): the pre-6.6 layout */
	unsigned char buf[sizeof(cn) + sizeof(op32)];
	int r;

	memcpy(buf, &cn, sizeof(cn));
	memcpy(buf + sizeof(cn), &op32, sizeof(op32));
	errno = 0;
	r = nl_send_simple(pc->sk, NLMSG_DONE, 0, buf, sizeof(buf));
	/* libnl turns ECONNREFUSED into NLE_FAILURE: no connector in this network namespace. */
	if (r < 0 && errno == ECONNREFUSED)
		return -EPERM;
	return r < 0 ? -nle_errno(r) : 0;
}

/* The bytes a message of this kind must carry; 0 for kinds we do not translate. */
static size_t needed_len(uint32_t what)
{
	struct proc_event pe;
	size_t head = offsetof(struct proc_event, event_data);

	switch (what) {
	case PROC_EVENT_NONE:
		return head + sizeof(pe.event_data.ack);
	case PROC_EVENT_FORK:
		return head + sizeof(pe.event_data.fork);
	case PROC_EVENT_EXEC:
		return head + sizeof(pe.event_data.exec);
	case PROC_EVENT_EXIT:
		return head + sizeof(pe.event_data.exit);
	default:
		return 0;
	}
}

/* 0 and *ret filled for fork, exec and exit; -EINVAL for anything else. */
static int translate(const struct proc_event *pe, struct evsrc_event *ret)
{
	struct evsrc_event ev = { .ts_ns = pe->timestamp_ns };

	switch (pe->what) {
	case PROC_EVENT_FORK:
		ev.kind = EVSRC_FORK;
		ev.tid = pe->event_data.fork.child_pid;
		ev.tgid = pe->event_data.fork.child_tgid;
		ev.parent_tid = pe->event_data.fork.parent_pid;
		ev.parent_tgid = pe->event_data.fork.parent_tgid;
		break;
	case PROC_EVENT_EXEC:
		ev.kind = EVSRC_EXEC;
		ev.tid = pe->event_data.exec.process_pid;
		ev.tgid = pe->event_data.exec.process_tgid;
		break;
	case PROC_EVENT_EXIT:
		ev.kind = EVSRC_EXIT;
		ev.tid = pe->event_data.exit.process_pid;
		ev.tgid = pe->event_data.exit.process_tgid;
		break;
	default:
		return -EINVAL;
	}
	*ret = ev;
	return 0;
}

static void note_ack(struct procconn *pc, const struct cn_msg *cn, const struct proc_event *pe)
{
	/*
	 * Acks go to every listener. The kernel overwrites the echoed seq with its own
	 * per-CPU counter, so only ack (ours + 1) says whose it is.
	 */
	if (cn->ack == pc->seq + 1)
		pc->ack_err = (int)pe->event_data.ack.err;
}

/*
 * Copies the proc_event out of a kernel message: it sits 4 bytes off 8-byte alignment.
 * 0, or -EINVAL for a message that is not a whole proc connector event.
 */
static int extract(struct nl_msg *msg, struct cn_msg *ret_cn, struct proc_event *ret_pe)
{
	struct nlmsghdr *nlh = nlmsg_hdr(msg);
	size_t len = (size_t)nlmsg_datalen(nlh);
	struct cn_msg cn;

	if (nlmsg_get_src(msg)->nl_pid != 0 || len < sizeof(cn))
		return -EINVAL;
	memcpy(&cn, nlmsg_data(nlh), sizeof(cn));
	if (cn.id.idx != CN_IDX_PROC || cn.id.val != CN_VAL_PROC || cn.len > len - sizeof(cn) ||
	    cn.len < offsetof(struct proc_event, event_data))
		return -EINVAL;
	memset(ret_pe, 0, sizeof(*ret_pe));
	memcpy(ret_pe, (const char *)nlmsg_data(nlh) + sizeof(cn),
	       cn.len < sizeof(*ret_pe) ? cn.len : sizeof(*ret_pe));
	if (cn.len < needed_len(ret_pe->what))
		return -EINVAL;
	*ret_cn = cn;
	return 0;
}

/* NL_CB_MSG_IN: connector messages are NLMSG_DONE, which NL_CB_VALID never sees. */
static int on_msg(struct nl_msg *msg, void *arg)
{
	struct procconn *pc = arg;
	struct cn_msg cn;
	struct proc_event pe;
	struct evsrc_event ev;

	if (extract(msg, &cn, &pe) < 0) {
		pc->n.ignored++;
		return NL_SKIP;
	}
	if (pe.what == PROC_EVENT_NONE)
		note_ack(pc, &cn, &pe);
	if (pc->subscribing || translate(&pe, &ev) < 0) {
		pc->n.ignored++;
		return NL_SKIP;
	}
	pc->n.events++;
	pc->delivered++;
	if (pc->cb.event)
		pc->cb.event(pc->ctx, &ev);
	return NL_SKIP;
}

/* One datagram: >0 read (or overflow noted), 0 when nothing is queued, or -errno. */
static int read_once(struct procconn *pc)
{
	int r = nl_recvmsgs_report(pc->sk, pc->nlcb);

	if (r >= 0)
		return r;
	if (r == -NLE_AGAIN)
		return 0;
	if (r != -NLE_NOMEM)
		return -nle_errno(r);
	/* ENOBUFS: the kernel dropped events; the socket works on from the next one. */
	pc->n.overflows++;
	if (!pc->subscribing && pc->cb.overflow)
		pc->cb.overflow(pc->ctx);
	return 1;
}

static int wait_readable(struct procconn *pc, uint64_t deadline_ns)
{
	struct pollfd pfd = { .fd = procconn_fd(pc), .events = POLLIN };
	uint64_t now = util_now_ns();
	int r;

	if (now >= deadline_ns)
		return -ETIMEDOUT;
	r = poll(&pfd, 1, (int)((deadline_ns - now) / NSEC_PER_MSEC) + 1);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	return 0;
}

/*
 * Sends LISTEN and reads up to the kernel's ack. Without an ack the request was dropped,
 * as the kernel does for a sender outside the initial user or pid namespace.
 */
static int subscribe(struct procconn *pc)
{
	uint64_t deadline = util_now_ns() + PROCCONN_ACK_WAIT_NS;
	int r;

	pc->ack_err = -1;
	pc->subscribing = true;
	r = send_op(pc, PROC_CN_MCAST_LISTEN);
	while (r >= 0 && pc->ack_err < 0) {
		r = read_once(pc);
		if (r == 0)
			r = wait_readable(pc, deadline);
	}
	pc->subscribing = false;
	if (r == -ETIMEDOUT)
		return -EPERM;
	if (r < 0)
		return r;
	return -pc->ack_err;
}

static int set_rcvbuf(struct procconn *pc, int bytes)
{
	int r;

	/* SO_RCVBUF stops at net.core.rmem_max; a privileged daemon may go past it. */
	if (setsockopt(procconn_fd(pc), SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof(bytes)) == 0)
		return 0;
	r = nl_socket_set_buffer_size(pc->sk, bytes, 0);
	return r < 0 ? -nle_errno(r) : 0;
}

/* Joins CN_IDX_PROC on a fresh, non-blocking socket whose handler is on_msg. */
static int connect_sock(struct procconn *pc)
{
	int r;

	nl_socket_disable_seq_check(pc->sk);
	nl_socket_disable_auto_ack(pc->sk);
	r = nl_socket_modify_cb(pc->sk, NL_CB_MSG_IN, NL_CB_CUSTOM, on_msg, pc);
	if (r >= 0)
		r = nl_socket_set_msg_buf_size(pc->sk, PROCCONN_MSGBUF_BYTES);
	if (r >= 0)
		r = nl_connect(pc->sk, NETLINK_CONNECTOR);
	if (r >= 0)
		r = nl_socket_add_membership(pc->sk, CN_IDX_PROC);
	if (r >= 0)
		r = nl_socket_set_nonblocking(pc->sk);
	if (r < 0)
		return -nle_errno(r);
	pc->nlcb = nl_socket_get_cb(pc->sk);
	return pc->nlcb ? 0 : -ENOMEM;
}

int procconn_open(const struct evsrc_callbacks *cb, void *ctx, struct procconn **ret)
{
	struct procconn *pc = calloc(1, sizeof(*pc));
	int r;

	if (!pc)
		return -ENOMEM;
	pc->cb = *cb;
	pc->ctx = ctx;
	pc->ack_err = -1;
	pc->sk = nl_socket_alloc();
	if (!pc->sk) {
		free(pc);
		return -ENOMEM;
	}
	r = connect_sock(pc);
	if (r == 0)
		r = set_rcvbuf(pc, PROCCONN_RCVBUF_BYTES);
	if (r == 0) {
		pc->seq = nl_socket_get_local_port(pc->sk);
		r = subscribe(pc);
	}
	if (r < 0) {
		procconn_close(pc);
		return r;
	}
	*ret = pc;
	return 0;
}

void procconn_close(struct procconn *pc)
{
	if (!pc)
		return;
	/*
	 * Before 6.6 the kernel counts listeners globally and never notices a closed
	 * socket: without IGNORE it would build every event for nobody from now on.
	 */
	if (pc->ack_err == 0)
		(void)send_op(pc, PROC_CN_MCAST_IGNORE);
	if (pc->nlcb)
		nl_cb_put(pc->nlcb);
	nl_socket_free(pc->sk);
	free(pc);
}

int procconn_fd(const struct procconn *pc)
{
	return nl_socket_get_fd(pc->sk);
}

int procconn_dispatch(struct procconn *pc)
{
	int r, n = 0;

	pc->delivered = 0;
	do
		r = read_once(pc);
	while (r > 0 && ++n < PROCCONN_DISPATCH_MAX);
	pc->empty = r == 0;
	return r < 0 ? r : pc->delivered;
}

bool procconn_empty(const struct procconn *pc)
{
	return pc->empty;
}

void procconn_counters(const struct procconn *pc, struct evsrc_counters *ret)
{
	*ret = pc->n;
}

/* ---- the event source driver (evsrc.h) ---- */

static int es_open(struct evsrc *es, char *why, size_t why_len)
{
	struct procconn *pc;
	int r = procconn_open(&es->cb, es->ctx, &pc);

	(void)why;
	(void)why_len;
	if (r == 0)
		es->priv = pc;
	return r;
}

static void es_close(struct evsrc *es)
{
	procconn_close(es->priv);
}

static int es_fd(const struct evsrc *es)
{
	return procconn_fd(es->priv);
}

static int es_dispatch(struct evsrc *es)
{
	return procconn_dispatch(es->priv);
}

static bool es_empty(const struct evsrc *es)
{
	return procconn_empty(es->priv);
}

/* No task walk: exe rules read /proc/PID/exe, and nothing needs a capability after open. */
const struct evsrc_ops procconn_ops = {
	.name = "connector",
	.lost = "proc connector overflowed",
	.open = es_open,
	.close = es_close,
	.fd = es_fd,
	.dispatch = es_dispatch,
	.empty = es_empty,
};
