/*
 * Task events, BPF side: fork, exec and exit events, and what each process runs, for
 * daemon/taskev/bpfev.c. It only reads kernel memory and writes its own maps; it never
 * changes a task.
 *
 * Algorithm. Three tp_btf programs on the scheduler's process tracepoints write one
 * struct rqe_event each into a ring buffer that the daemon's event loop reads:
 * sched_process_fork (the new task; its real_parent as the proc connector names it,
 * for a new thread its process's parent; and the task that cloned it, current, which
 * the tracepoint calls parent and from which the kernel copied its nice, policy and
 * cgroup: after clone(CLONE_PARENT) not the real parent), sched_process_exec (the
 * task after the exec, and the device and inode of the file the kernel runs:
 * bprm->file) and sched_process_exit (each exiting thread). Each record carries the
 * task's start_boottime, which /proc/PID/stat's start time is made from, so that
 * userspace can tell a pid's owners apart exactly. A task iterator (list_exes) writes one
 * struct rqe_exe per process (thread group leaders only): mm->exe_file's device and
 * inode, for processes that were running before the daemon started or whose exec
 * events were lost.
 *
 * Limits. A full ring buffer drops the event: bpf_ringbuf_reserve() fails, and the
 * drop is counted in `dropped`, which userspace reads from the mmapped .bss and
 * answers with a rescan of /proc. The device is the superblock's s_dev: stat(2)
 * reports the same on most file systems, but not where getattr reports another
 * (btrfs subvolumes, some overlayfs set-ups); there the daemon matches nothing by
 * identity and falls back to /proc/PID/exe. Costs one record per event (the
 * proc connector builds one for every listener too).
 *
 * Wakeups. Only an exec wakes the daemon at once: a rule acts there, and the exec's
 * task should have its value before it runs far. A fork or an exit is bookkeeping (the
 * kernel has already given a child its creator's nice, policy and cgroup), so it
 * waits in the ring for the next exec, the daemon's next tick (which reads the ring)
 * or RQE_WAKE_BYTES of records. While the daemon has no rule and manages nothing
 * (exec_lazy), an exec waits so too: an idle daemon is not woken by the machine's
 * execs. A fork-heavy workload (hackbench makes and ends 32
 * processes 25 times a second) woke the daemon, at its nice -10, about 1,400 times a
 * second, each wakeup a preemption of the workload.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "rqevents.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, RQE_RING_BYTES);
} events SEC(".maps");

/* bpf_ringbuf_submit() flags and bpf_ringbuf_query()'s field (UAPI values). */
#define RQE_RB_NO_WAKEUP 1
#define RQE_RB_FORCE_WAKEUP 2
#define RQE_RB_AVAIL_DATA 0
#define RQE_WAKE_BYTES (RQE_RING_BYTES / 8)

/* Events the ring buffer had no room for; userspace reads it from the mmapped .bss. */
volatile __u64 dropped = 0;
/*
 * Set by userspace (mmapped .bss) while no rule exists and nothing is managed: an exec
 * can then lead to nothing at once, so it waits in the ring as a fork does.
 */
volatile __u32 exec_lazy = 0;

static __always_inline struct rqe_event *reserve(__u32 kind, struct task_struct *p)
{
	struct rqe_event *e = bpf_ringbuf_reserve(&events, sizeof(*e), 0);

	if (!e) {
		__sync_fetch_and_add(&dropped, 1);
		return NULL;
	}
	e->kind = kind;
	e->flags = 0;
	e->tid = BPF_CORE_READ(p, pid);
	e->tgid = BPF_CORE_READ(p, tgid);
	e->parent_tid = 0;
	e->parent_tgid = 0;
	e->creator_tid = 0;
	e->creator_tgid = 0;
	e->ts_ns = bpf_ktime_get_ns();
	e->start_ns = BPF_CORE_READ(p, start_boottime);
	e->exe_dev = 0;
	e->exe_ino = 0;
	return e;
}

/*
 * A fork or an exit wakes the daemon only once RQE_WAKE_BYTES wait. An exec forces
 * the wakeup: after records submitted without one, the ring's own rule (wake when the
 * reader has caught up to this record) would not wake the reader.
 */
static __always_inline __u64 lazy_wakeup(void)
{
	return bpf_ringbuf_query(&events, RQE_RB_AVAIL_DATA) >= RQE_WAKE_BYTES ?
		       RQE_RB_FORCE_WAKEUP : RQE_RB_NO_WAKEUP;
}

/* The file's identity: 1 if f names an inode. */
static __always_inline int file_id(struct file *f, __u64 *ret_dev, __u64 *ret_ino)
{
	struct inode *ino = f ? BPF_CORE_READ(f, f_inode) : NULL;

	if (!ino)
		return 0;
	*ret_dev = BPF_CORE_READ(ino, i_sb, s_dev);
	*ret_ino = BPF_CORE_READ(ino, i_ino);
	return 1;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(rqe_fork, struct task_struct *parent, struct task_struct *child)
{
	struct rqe_event *e = reserve(RQE_FORK, child);
	struct task_struct *rp;

	if (!e)
		return 0;
	rp = BPF_CORE_READ(child, real_parent);
	if (rp) {
		e->parent_tid = BPF_CORE_READ(rp, pid);
		e->parent_tgid = BPF_CORE_READ(rp, tgid);
	}
	/* The tracepoint's parent is current: the task the child inherits from. */
	e->creator_tid = BPF_CORE_READ(parent, pid);
	e->creator_tgid = BPF_CORE_READ(parent, tgid);
	bpf_ringbuf_submit(e, lazy_wakeup());
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(rqe_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct rqe_event *e = reserve(RQE_EXEC, p);

	if (!e)
		return 0;
	if (file_id(BPF_CORE_READ(bprm, file), &e->exe_dev, &e->exe_ino))
		e->flags |= RQE_F_EXE;
	bpf_ringbuf_submit(e, exec_lazy ? lazy_wakeup() : RQE_RB_FORCE_WAKEUP);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(rqe_exit, struct task_struct *p)
{
	struct rqe_event *e = reserve(RQE_EXIT, p);

	if (e)
		bpf_ringbuf_submit(e, lazy_wakeup());
	return 0;
}

SEC("iter/task")
int list_exes(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *p = ctx->task;
	struct rqe_exe x = {};
	struct mm_struct *mm;

	if (!p || BPF_CORE_READ(p, pid) != BPF_CORE_READ(p, tgid))
		return 0;
	mm = BPF_CORE_READ(p, mm);
	/* Kernel threads have no mm: not a process a rule can name. */
	if (!mm && (BPF_CORE_READ(p, flags) & 0x00200000))
		return 0;
	x.tgid = BPF_CORE_READ(p, tgid);
	x.start_ns = BPF_CORE_READ(p, start_boottime);
	if (mm && file_id(BPF_CORE_READ(mm, exe_file), &x.exe_dev, &x.exe_ino))
		x.flags = RQE_F_EXE;
	bpf_seq_write(seq, &x, sizeof(x));
	return 0;
}
