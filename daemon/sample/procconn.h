/*
 * The proc connector (netlink, CN_IDX_PROC) through libnl-3: fork, exec and exit
 * events as they happen, so that a managed process's new threads and children, and a
 * process that a rule matches at exec, are seen within milliseconds. A sample source:
 * it only reads. When the socket overflows, events are lost: the owner is told, counts
 * it, and rescans /proc.
 *
 * struct procconn_event and struct procconn_callbacks are also what the BPF event source
 * (bpfev.h) delivers, which the daemon prefers where BPF loads: it adds what the
 * connector cannot say, the task's exact start time and the identity of the file an
 * exec runs.
 */
#ifndef RQB_PROCCONN_H
#define RQB_PROCCONN_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

enum procconn_event_kind { PROCCONN_FORK = 1, PROCCONN_EXEC, PROCCONN_EXIT };

struct procconn_event {
	enum procconn_event_kind kind;
	pid_t tid;          /* FORK: the new task; EXEC/EXIT: the task */
	pid_t tgid;         /* its process */
	/*
	 * FORK only: the kernel's real_parent. For a new process that is the forking
	 * task; for a new thread it is its process's parent, not the cloning thread.
	 */
	pid_t parent_tid;
	pid_t parent_tgid;
	/*
	 * FORK only: the task that created the new one (the kernel's current), whose
	 * nice, policy and cgroup it inherits; the same as the parent but after
	 * clone(CLONE_PARENT) and for threads. 0 where the source does not say (the
	 * connector).
	 */
	pid_t creator_tid;
	pid_t creator_tgid;
	uint64_t ts_ns;     /* kernel timestamp (CLOCK_MONOTONIC ns) */
	/*
	 * The task's start (FORK: the new task's) in CLOCK_BOOTTIME ns, the clock of
	 * /proc/PID/stat's start time; 0 where the source does not say (the connector).
	 */
	uint64_t start_ns;
	/* EXEC: the device and inode (as stat(2) gives them) of the file now run. */
	bool has_exe;
	dev_t exe_dev;
	ino_t exe_ino;
};

struct procconn_callbacks {
	void (*event)(void *ctx, const struct procconn_event *ev);
	/* Events were lost (ENOBUFS): the owner must rescan /proc. */
	void (*overflow)(void *ctx);
};

struct procconn;

/*
 * Opens the connector socket, subscribes (PROC_CN_MCAST_LISTEN) and makes it
 * non-blocking. 0 or -errno (-EPROTONOSUPPORT: no connector in this kernel;
 * -EPERM: not the initial network, user or pid namespace, or not allowed). Waits for the kernel's
 * ack; events from before it returns are not delivered: scan /proc after it.
 */
int procconn_open(const struct procconn_callbacks *cb, void *ctx, struct procconn **ret);
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

struct procconn_counters {
	uint64_t events;     /* fork/exec/exit delivered */
	uint64_t overflows;  /* times the socket overflowed */
	uint64_t ignored;    /* other connector messages (uid, comm, ack...) */
};
void procconn_counters(const struct procconn *pc, struct procconn_counters *ret);

#endif
