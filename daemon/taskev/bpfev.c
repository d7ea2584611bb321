/*
 * Task events (taskev/, for the latency manager), the BPF event source: loads
 * rqevents.bpf.c, reads its ring buffer into struct evsrc_event for the owner's
 * callbacks (evsrc.h, whose driver it is), counts what the programs dropped, and walks
 * every process's exe with the task iterator. It only reads; it never changes a task.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <linux/capability.h>
#include <linux/types.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "util/caps.h"
#include "rqbalance.h"
#include "rqevents.skel.h"
#include "sample/bpfload.h"
#include "taskev/bpf/rqevents.bpf.h"
#include "taskev/bpfev.h"
#include "util/log.h"
#include "testonly.h"

_Static_assert(RQE_FORK == EVSRC_FORK && RQE_EXEC == EVSRC_EXEC && RQE_EXIT == EVSRC_EXIT,
	       "bpf/rqevents.bpf.h and evsrc.h disagree");

/*
 * Records delivered by one bpfev_dispatch, as the connector's bound: under a fork
 * storm the ring refills as fast as it is read, and a handler that drained it would
 * keep the loop from its tick, its ctl socket and its watchdog.
 */
#define BPFEV_DISPATCH_MAX 256
/* What the record callback returns to stop libbpf's loop at the bound. */
#define STOP_BATCH (-EAGAIN)

struct bpfev {
	struct rqevents *skel;
	struct ring_buffer *rb;
	struct evsrc_callbacks cb;
	void *ctx;
	struct evsrc_counters n;
	uint64_t dropped_seen;     /* the programs' drop count at the last dispatch */
	int delivered;             /* by the current dispatch */
	bool empty;
};

dev_t bpfev_dev(uint64_t kdev)
{
	/* include/linux/kdev_t.h: MINORBITS 20. */
	return makedev((unsigned)(kdev >> 20), (unsigned)(kdev & ((1u << 20) - 1)));
}

int bpfev_decode(const void *data, size_t len, struct evsrc_event *ret)
{
	struct rqe_event e;

	if (len < sizeof(e))
		return -EINVAL;
	memcpy(&e, data, sizeof(e));
	if ((e.kind != RQE_FORK && e.kind != RQE_EXEC && e.kind != RQE_EXIT) || e.tid <= 0 ||
	    e.tgid <= 0 || (e.kind == RQE_FORK && (e.parent_tid < 0 || e.parent_tgid < 0 ||
						     e.creator_tid < 0 || e.creator_tgid < 0)))
		return -EINVAL;
	*ret = (struct evsrc_event){
		.kind = (enum evsrc_kind)e.kind,
		.tid = e.tid,
		.tgid = e.tgid,
		.parent_tid = e.kind == RQE_FORK ? e.parent_tid : 0,
		.parent_tgid = e.kind == RQE_FORK ? e.parent_tgid : 0,
		.creator_tid = e.kind == RQE_FORK ? e.creator_tid : 0,
		.creator_tgid = e.kind == RQE_FORK ? e.creator_tgid : 0,
		.ts_ns = e.ts_ns,
		.start_ns = e.start_ns,
		.has_exe = e.kind == RQE_EXEC && (e.flags & RQE_F_EXE),
	};
	if (ret->has_exe) {
		ret->exe_dev = bpfev_dev(e.exe_dev);
		ret->exe_ino = (ino_t)e.exe_ino;
	}
	return 0;
}

size_t bpfev_decode_exes(const void *data, size_t len, struct evsrc_exe *ret, size_t max)
{
	size_t n = 0;

	for (size_t off = 0; off + sizeof(struct rqe_exe) <= len && n < max;
	     off += sizeof(struct rqe_exe)) {
		struct rqe_exe x;

		memcpy(&x, (const char *)data + off, sizeof(x));
		if (x.tgid <= 0)
			continue;
		ret[n] = (struct evsrc_exe){ .tgid = x.tgid, .start_ns = x.start_ns,
					     .has_exe = (x.flags & RQE_F_EXE) != 0 };
		if (ret[n].has_exe) {
			ret[n].dev = bpfev_dev(x.exe_dev);
			ret[n].ino = (ino_t)x.exe_ino;
		}
		n++;
	}
	return n;
}

static int on_record(void *ctx, void *data, size_t len)
{
	struct bpfev *ev = ctx;
	struct evsrc_event e;

	if (bpfev_decode(data, len, &e) < 0) {
		ev->n.ignored++;
	} else {
		ev->n.events++;
		if (ev->cb.event)
			ev->cb.event(ev->ctx, &e);
	}
	return ++ev->delivered >= BPFEV_DISPATCH_MAX ? STOP_BATCH : 0;
}

static int load(struct bpfev *ev, char *why, size_t why_len)
{
	int r;

	bpfload_begin("bpfev: ");
	ev->skel = rqevents__open();
	r = ev->skel ? rqevents__load(ev->skel) : -errno;
	if (r == 0)
		r = rqevents__attach(ev->skel);
	if (r == 0) {
		ev->rb = ring_buffer__new(bpf_map__fd(ev->skel->maps.events), on_record, ev, NULL);
		if (!ev->rb)
			r = -errno;
	}
	if (r < 0)
		bpfload_why(r, why, why_len);
	return r;
}

int bpfev_open(const struct evsrc_callbacks *cb, void *ctx, struct bpfev **ret, char *why,
	       size_t why_len)
{
	struct bpfev *ev;
	int r;

	if (access("/sys/kernel/btf/vmlinux", R_OK) < 0) {
		snprintf(why, why_len, "no kernel BTF (/sys/kernel/btf/vmlinux): CO-RE cannot "
			 "relocate");
		return -EOPNOTSUPP;
	}
	ev = calloc(1, sizeof(*ev));
	if (!ev) {
		snprintf(why, why_len, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	ev->cb = *cb;
	ev->ctx = ctx;
	r = load(ev, why, why_len);
	if (r < 0) {
		bpfev_close(ev);
		return r;
	}
	ev->dropped_seen = ev->skel->bss->dropped;
	*ret = ev;
	return 0;
}

void bpfev_close(struct bpfev *ev)
{
	if (!ev)
		return;
	ring_buffer__free(ev->rb);
	rqevents__destroy(ev->skel);
	free(ev);
}

int bpfev_fd(const struct bpfev *ev)
{
	return bpf_map__fd(ev->skel->maps.events);
}

int bpfev_dispatch(struct bpfev *ev)
{
	uint64_t dropped;
	int r;

	ev->delivered = 0;
	r = ring_buffer__consume(ev->rb);
	ev->empty = r >= 0;
	/* After the read: a drop counted since is seen now, or by the next dispatch. */
	dropped = __atomic_load_n(&ev->skel->bss->dropped, __ATOMIC_ACQUIRE);
	if (dropped != ev->dropped_seen) {
		ev->dropped_seen = dropped;
		ev->n.overflows++;
		if (ev->cb.overflow)
			ev->cb.overflow(ev->ctx);
	}
	if (r < 0 && r != STOP_BATCH)
		return r;
	return ev->delivered;
}

bool bpfev_empty(const struct bpfev *ev)
{
	return ev->empty;
}

void bpfev_counters(const struct bpfev *ev, struct evsrc_counters *ret, uint64_t *ret_dropped)
{
	*ret = ev->n;
	if (ret_dropped)
		*ret_dropped = ev->dropped_seen;
}

static int iter_fd(struct bpfev *ev, bool raise)
{
	int fd = bpf_iter_create(bpf_link__fd(ev->skel->links.list_exes)), err;

	/* Some kernels want CAP_BPF for every bpf() call when unprivileged BPF is off. */
	if (fd < 0 && (errno == EPERM || errno == EACCES) && raise && caps_raise(CAP_BPF) == 0) {
		fd = bpf_iter_create(bpf_link__fd(ev->skel->links.list_exes));
		err = errno;
		caps_lower(CAP_BPF);
		errno = err;
	}
	return fd < 0 ? -errno : fd;
}

int bpfev_exes(struct bpfev *ev, struct evsrc_exe **ret, size_t *ret_n)
{
	size_t have = 0, cap = 0, n;
	char *buf = NULL;
	struct evsrc_exe *exes;
	int fd = iter_fd(ev, true), r = 0;

	if (fd < 0)
		return fd;
	for (;;) {
		ssize_t got;

		if (cap - have < 4096) {
			char *b = realloc(buf, cap ? cap * 2 : 65536);

			if (!b) {
				r = -ENOMEM;
				break;
			}
			buf = b;
			cap = cap ? cap * 2 : 65536;
		}
		got = read(fd, buf + have, cap - have);
		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0) {
			r = got < 0 ? -errno : 0;
			break;
		}
		have += (size_t)got;
	}
	close(fd);
	n = have / sizeof(struct rqe_exe);
	exes = r == 0 ? malloc((n ? n : 1) * sizeof(*exes)) : NULL;
	if (r == 0 && !exes)
		r = -ENOMEM;
	if (r == 0) {
		n = bpfev_decode_exes(buf, have, exes, n);
		evsrc_exe_sort(exes, n);
		*ret = exes;
		*ret_n = n;
	}
	free(buf);
	return r;
}

bool bpfev_walks_unprivileged(struct bpfev *ev)
{
	int fd = iter_fd(ev, false);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* ---- the event source driver (evsrc.h) ---- */

static int es_open(struct evsrc *es, char *why, size_t why_len)
{
	struct bpfev *ev;
	int r = bpfev_open(&es->cb, es->ctx, &ev, why, why_len);

	if (r == 0)
		es->priv = ev;
	return r;
}

static void es_close(struct evsrc *es)
{
	bpfev_close(es->priv);
}

static int es_fd(const struct evsrc *es)
{
	return bpfev_fd(es->priv);
}

static int es_dispatch(struct evsrc *es)
{
	return bpfev_dispatch(es->priv);
}

static bool es_empty(const struct evsrc *es)
{
	return bpfev_empty(es->priv);
}

static int es_exes(struct evsrc *es, struct evsrc_exe **ret, size_t *ret_n)
{
	return bpfev_exes(es->priv, ret, ret_n);
}

static bool es_walks_unprivileged(struct evsrc *es)
{
	return bpfev_walks_unprivileged(es->priv);
}

static void es_exec_wakes(struct evsrc *es, bool wake)
{
	struct bpfev *ev = es->priv;

	if (ev && ev->skel && ev->skel->bss)
		__atomic_store_n(&ev->skel->bss->exec_lazy, wake ? 0 : 1, __ATOMIC_RELEASE);
}

/* Forks and exits wake the poller only once RQE_WAKE_BYTES wait (rqevents.bpf.c). */
const struct evsrc_ops bpfev_ops = {
	.name = "bpf",
	.lost = "BPF ring buffer full",
	.tick_read = true,
	.open = es_open,
	.close = es_close,
	.fd = es_fd,
	.dispatch = es_dispatch,
	.empty = es_empty,
	.exes = es_exes,
	.walks_unprivileged = es_walks_unprivileged,
	.exec_wakes = es_exec_wakes,
};
