/*
 * The BPF event source: fork, exec and exit events from the scheduler's process
 * tracepoints (rqevents.bpf.c) through a BPF ring buffer, delivered through the event
 * source interface (evsrc.h: bpfev_ops drives it) with what the proc connector cannot
 * say: each task's exact start time, and at exec the device and inode of the file the
 * kernel runs.
 * And a task iterator walk that says what every process runs now. A sample source:
 * it only reads. It needs CAP_BPF and CAP_PERFMON to load, none after, but where the
 * kernel checks CAP_BPF on every bpf() call, for a walk (bpfev_walks_unprivileged).
 *
 * Events the ring buffer had no room for are counted by the programs: each dispatch
 * that finds the count grown calls the overflow callback, and the owner rescans /proc.
 */
#ifndef RQB_BPFEV_H
#define RQB_BPFEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "taskev/evsrc.h"

struct bpfev;

/*
 * Loads and attaches the programs. 0, or -errno with why (-EPERM: needs CAP_BPF and
 * CAP_PERFMON; -EOPNOTSUPP: no kernel BTF). Events from before it returns are not
 * delivered: scan /proc after it.
 */
int bpfev_open(const struct evsrc_callbacks *cb, void *ctx, struct bpfev **ret, char *why,
	       size_t why_len);
/* Detaches and frees; NULL is fine. */
void bpfev_close(struct bpfev *ev);
/* The fd to poll for input (the ring buffer's map: EPOLLIN while it holds records). */
int bpfev_fd(const struct bpfev *ev);
/*
 * Delivers the events queued now, up to a bound (an event loop calls again while the
 * fd stays readable), then the overflow callback if events were dropped since the
 * last call; never blocks. Returns the number of events delivered, or -errno.
 */
int bpfev_dispatch(struct bpfev *ev);
/* Whether the last bpfev_dispatch read the ring buffer empty. */
bool bpfev_empty(const struct bpfev *ev);
/*
 * Walks every process (thread group leaders, no kernel threads) with the task
 * iterator: *ret (malloc'd, sorted by tgid) and *ret_n. 0 or -errno.
 */
int bpfev_exes(struct bpfev *ev, struct evsrc_exe **ret, size_t *ret_n);
/* Whether a walk works without CAP_BPF in the effective set (a probe: one walk). */
bool bpfev_walks_unprivileged(struct bpfev *ev);

/* Decoders, for tests and fuzzing. */
/* The kernel's dev_t (major << 20 | minor) as userspace's. */
dev_t bpfev_dev(uint64_t kdev);
/* One ring buffer record (struct rqe_event) into ret. 0, or -EINVAL if it is not one. */
int bpfev_decode(const void *data, size_t len, struct evsrc_event *ret);
/*
 * A walk's output (struct rqe_exe records) into ret, at most max: the number decoded;
 * a trailing part record is left out.
 */
size_t bpfev_decode_exes(const void *data, size_t len, struct evsrc_exe *ret, size_t max);

#endif
