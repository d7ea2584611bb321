/*
 * Reads that another user can hold up for good (timedread.c): /proc/PID/cmdline (and
 * environ) is that process's memory, which it may map from a FUSE file whose server
 * never answers; the read then waits in the kernel, uninterruptibly but for a fatal
 * signal. Such a read runs on a worker thread, and the event loop waits for it at
 * most a bound: a worker still reading then is left to finish on its own, and the
 * next read gets a new one.
 */
#ifndef RQB_TIMEDREAD_H
#define RQB_TIMEDREAD_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Workers left reading at most; past that no read starts (each holds a thread). */
#define TIMEDREAD_STUCK_MAX 4
/* The wait the daemon gives a read of another process's memory (a few µs when it is not held). */
#define TIMEDREAD_PROC_NS (20 * 1000 * 1000ull)

/*
 * Reads fd (a descriptor of its own is given to the worker: the caller closes fd) to
 * its end, at most len - 1 bytes, into buf, ended with a NUL, waiting at most
 * bound_ns. The byte count; -ETIMEDOUT when the bound passed (the read goes on,
 * left); -EBUSY without a try while TIMEDREAD_STUCK_MAX reads are left; or -errno.
 * buf is untouched on failure. Called from one thread only (the event loop's).
 */
ssize_t timedread(int fd, char *buf, size_t len, uint64_t bound_ns);

/*
 * A read of a file of /proc that is a process's memory (cmdline): fd's file to its
 * end into buf as timedread does, within TIMEDREAD_PROC_NS. Only procfs serves
 * another process's memory, so a file elsewhere (a test's tree of plain files) is
 * read at once, and what it holds does not depend on how soon a worker ran.
 */
ssize_t timedread_proc(int fd, char *buf, size_t len);

/* How many reads are left waiting now (they end when their file answers, or never). */
unsigned timedread_stuck(void);

/* Ends the idle worker; a worker left reading ends when its read does. */
void timedread_fini(void);

#endif
