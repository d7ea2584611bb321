/*
 * The proc connector (netlink, CN_IDX_PROC) through libnl-3: fork, exec and exit
 * events as they happen, so that a managed process's new threads and children, and a
 * process that a rule matches at exec, are seen within milliseconds. A sample source:
 * it only reads. When the socket overflows, events are lost: the owner is told, counts
 * it, and rescans /proc.
 *
 * One of the two event sources (evsrc.h: procconn_ops drives it). The daemon prefers
 * the BPF one (bpfev.h) where it loads: it adds what the connector cannot say, the
 * task's exact start time and the identity of the file an exec runs.
 */
#ifndef RQB_PROCCONN_H
#define RQB_PROCCONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "taskev/evsrc.h"

struct procconn;

/*
 * Opens the connector socket, subscribes (PROC_CN_MCAST_LISTEN) and makes it
 * non-blocking. 0 or -errno (-EPROTONOSUPPORT: no connector in this kernel;
 * -EPERM: not the initial network, user or pid namespace, or not allowed). Waits for the kernel's
 * ack; events from before it returns are not delivered: scan /proc after it.
 */
int procconn_open(const struct evsrc_callbacks *cb, void *ctx, struct procconn **ret);
/* Unsubscribes and closes; NULL is fine. */
void procconn_close(struct procconn *pc);
/* The fd to poll for input (sd_event_add_io with EPOLLIN). */
int procconn_fd(const struct procconn *pc);
/*
 * Reads the events queued now, up to a bound (an event loop calls again while the fd
 * stays readable), and calls the callbacks; never blocks. Returns the number of
 * events delivered, or -errno on a socket error other than overflow.
 */
int procconn_dispatch(struct procconn *pc);
/*
 * Whether the last procconn_dispatch read the socket empty. After an overflow the kernel
 * reports no further loss until the socket has been read empty (netlink's congested
 * state): a resync meant to cover every loss must come after that.
 */
bool procconn_empty(const struct procconn *pc);


#endif
