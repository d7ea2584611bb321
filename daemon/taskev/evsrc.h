/*
 * The event source interface: fork, exec and exit events as they happen, whichever way
 * the kernel gives them, as struct sampler_ops is for samplers. Two drivers:
 * bpfev_ops (bpfev.c: BPF tracepoints into a ring buffer, which also say each task's
 * exact start time and the file an exec runs) and procconn_ops (procconn.c: the proc
 * connector). The owner holds one struct evsrc and never asks which it is. A sample
 * source: it only reads.
 *
 * Events can be lost (a full ring buffer, a socket overflow): the source then calls
 * the overflow callback, and the owner rescans /proc.
 */
#ifndef RQB_EVSRC_H
#define RQB_EVSRC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum evsrc_kind { EVSRC_FORK = 1, EVSRC_EXEC, EVSRC_EXIT };

struct evsrc_event {
	enum evsrc_kind kind;
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

struct evsrc_callbacks {
	void (*event)(void *ctx, const struct evsrc_event *ev);
	/* Events were lost: the owner must rescan /proc. */
	void (*overflow)(void *ctx);
};

struct evsrc_counters {
	uint64_t events;     /* fork/exec/exit delivered */
	uint64_t overflows;  /* times events were lost (each once reported) */
	uint64_t ignored;    /* other messages or records (acks, malformed ones...) */
};

/* A process as a task walk saw it: its start, and the file it runs where it has one. */
struct evsrc_exe {
	pid_t tgid;
	uint64_t start_ns;  /* CLOCK_BOOTTIME ns, as evsrc_event's */
	bool has_exe;
	dev_t dev;          /* as stat(2) gives it */
	ino_t ino;
};

struct evsrc;

struct evsrc_ops {
	const char *name;   /* "bpf", "connector": rqctl status's events line */
	const char *lost;   /* what a loss is, for the log: "BPF ring buffer full" */
	/*
	 * Some of its events wake no poller of its fd (BPF's forks and exits): the owner
	 * dispatches once a tick as well, so they wait a tick at most.
	 */
	bool tick_read;
	/*
	 * Opens it for es (es->cb and es->ctx set; it sets es->priv). Events from before
	 * it returns are not delivered: scan /proc after it. 0, or -errno with why.
	 */
	int (*open)(struct evsrc *es, char *why, size_t why_len);
	void (*close)(struct evsrc *es);
	/* The fd to poll for input (sd_event_add_io with EPOLLIN). */
	int (*fd)(const struct evsrc *es);
	/*
	 * Delivers the events queued now, up to a bound (an event loop calls again while
	 * the fd stays readable), then the overflow callback if events were lost; never
	 * blocks. Returns the number delivered, or -errno.
	 */
	int (*dispatch)(struct evsrc *es);
	/*
	 * Whether the last dispatch read the queue empty. After a loss the kernel may
	 * report no further one until then (the connector's congested socket): a rescan
	 * meant to cover every loss must come after that.
	 */
	bool (*empty)(const struct evsrc *es);
	/*
	 * Every process (no kernel threads) and the file it runs, from the kernel: *ret
	 * (malloc'd, sorted by tgid) and *ret_n; 0 or -errno. NULL: the source cannot.
	 */
	int (*exes)(struct evsrc *es, struct evsrc_exe **ret, size_t *ret_n);
	/*
	 * Whether exes works without CAP_BPF in the effective set (a probe: one walk).
	 * NULL: the source needs no capability after open.
	 */
	bool (*walks_unprivileged)(struct evsrc *es);
	/*
	 * Whether an exec wakes the owner at once (the default) or waits like a fork, to
	 * be read at the next tick or once enough queue up. NULL: every event wakes.
	 */
	void (*exec_wakes)(struct evsrc *es, bool wake);
};

struct evsrc {
	const struct evsrc_ops *ops;
	struct evsrc_callbacks cb;  /* the owner's, called with ctx */
	void *ctx;
	void *priv;                 /* the driver's */
};

/* The drivers. */
extern const struct evsrc_ops bpfev_ops;     /* bpfev.c */
extern const struct evsrc_ops procconn_ops;  /* procconn.c */

/*
 * Opens the source ops drives, with the owner's callbacks and ctx. 0, or -errno with
 * why (the driver's reason, else strerror).
 */
int evsrc_open(const struct evsrc_ops *ops, const struct evsrc_callbacks *cb, void *ctx,
	       struct evsrc **ret, char *why, size_t why_len);
/* Closes and frees; NULL is fine. */
void evsrc_close(struct evsrc *es);
/* Every process's exe (ops->exes), or -EOPNOTSUPP where the source cannot say. */
int evsrc_exes(struct evsrc *es, struct evsrc_exe **ret, size_t *ret_n);
/* Whether a walk works without CAP_BPF effective (true for a source that needs none). */
bool evsrc_walks_unprivileged(struct evsrc *es);
/* Sorts a walk's processes by tgid, as evsrc_exe_find wants them. */
void evsrc_exe_sort(struct evsrc_exe *exes, size_t n);
/* A walk's entry for tgid, or NULL. */
const struct evsrc_exe *evsrc_exe_find(const struct evsrc_exe *exes, size_t n, pid_t tgid);

static inline int evsrc_fd(const struct evsrc *es)
{
	return es->ops->fd(es);
}

static inline int evsrc_dispatch(struct evsrc *es)
{
	return es->ops->dispatch(es);
}

static inline bool evsrc_empty(const struct evsrc *es)
{
	return es->ops->empty(es);
}

#endif
