/*
 * What rqevents.bpf.c hands to userspace (daemon/taskev/bpfev.c): plain C, shared by
 * both sides. Include <linux/types.h> (userspace) or vmlinux.h (BPF) first.
 */
#ifndef RQB_RQEVENTS_BPF_H
#define RQB_RQEVENTS_BPF_H

/* The ring buffer: 72-byte records (with the kernel's 8-byte header), 14,563 of them. */
#define RQE_RING_BYTES (1 << 20)

/* enum evsrc_kind's values (daemon/taskev/evsrc.h), checked in bpfev.c. */
#define RQE_FORK 1
#define RQE_EXEC 2
#define RQE_EXIT 3

/* exe_dev and exe_ino say which file the task runs (EXEC). */
#define RQE_F_EXE 1

/* One fork, exec or exit, as the tracepoint saw it. */
struct rqe_event {
	__u32 kind;           /* RQE_FORK, RQE_EXEC, RQE_EXIT */
	__u32 flags;          /* RQE_F_* */
	__s32 tid;            /* FORK: the new task; EXEC/EXIT: the task */
	__s32 tgid;
	__s32 parent_tid;     /* FORK: the new task's real_parent, as the proc connector's */
	__s32 parent_tgid;
	__s32 creator_tid;    /* FORK: the task that cloned it (the tracepoint's parent) */
	__s32 creator_tgid;
	__u64 ts_ns;          /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	__u64 start_ns;       /* the task's start_boottime: CLOCK_BOOTTIME ns */
	__u64 exe_dev;        /* the kernel's dev_t (major << 20 | minor) of its superblock */
	__u64 exe_ino;
};

/* One process of a task iterator walk: what it runs now. */
struct rqe_exe {
	__s32 tgid;
	__u32 flags;          /* RQE_F_EXE, or 0 for a process without an mm (exiting) */
	__u64 start_ns;
	__u64 exe_dev;
	__u64 exe_ino;
};

#endif
