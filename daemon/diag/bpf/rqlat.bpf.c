/*
 * Diagnostics, BPF side: run-queue wait histograms, for daemon/diag/rqlat.c.
 * It only reads kernel memory and its own maps; it never changes a task.
 *
 * Two ways to time a wait; userspace loads the programs of one ([daemon]
 * histograms_from).
 *
 * "queue" (one program): the kernel's own mark. With CONFIG_SCHED_INFO (every
 * Debian kernel) enqueue_task() puts rq_clock() in p->sched_info.last_queued when a
 * task is queued (woken, new, or preempted and still runnable), and
 * sched_info_arrive() turns it into run_delay when the task gets the CPU, in
 * context_switch(), after the sched_switch tracepoint. So at sched_switch the wait
 * of next is this CPU's rq->clock (updated by __schedule() before the pick) minus
 * next->sched_info.last_queued, the very interval the kernel adds to run_delay
 * (/proc/PID/schedstat). A task moved to another CPU while waiting is marked again
 * there: only its wait on the run queue it runs from is counted. No wakeup program
 * and no task storage: about a third of "wakeup"'s cost (bench/bpfcost).
 *
 * "wakeup" (as runqlat; three programs): sched_wakeup and sched_wakeup_new stamp the
 * task's enqueue time in task-local storage; sched_switch stamps a preempted prev
 * that stays runnable (prev->__state, or ->state before 5.14, is TASK_RUNNING), and
 * for next takes wait = now - stamp and clears the stamp. Counts from the wakeup
 * wherever the task then waited, migrations included.
 *
 * Either way the wait goes to a log2 histogram of microseconds: bucket =
 * floor(log2(wait_us)), 0 below 2 µs, the last bucket open-ended. Histograms sit in
 * a per-CPU array (no atomics; userspace sums the CPUs), one slot per latency-nice
 * class: the value userspace wrote for the thread's tid in the classes map, or
 * "none" where it has none (unmanaged tasks, kernel threads). A second slot is
 * counted where the thread's cgroup in the cpu controller's hierarchy
 * (css_set->subsys[cpu_cgrp_id]->cgroup->kn->id: the v1 cpu hierarchy, or the
 * cgroup2 cgroup whose cpu settings apply) is one the cgroups map names; a
 * directory's inode number is that id on 64-bit kernels.
 *
 * Limits. "wakeup" counts only waits that start with a wakeup or a preemption seen
 * since the programs were attached; "queue" counts a wait already under way at
 * attach too. The class is the one the thread has when it gets the CPU, as
 * userspace last wrote it: a value given a moment ago may still count as "none". A
 * cgroup counts only its own tasks, not its descendants'. Per-CPU slots are read
 * while they change: a read may miss the latest few events. The cost ("wakeup") is
 * about 200 ns per event on this machine (KERNEL-NOTES: task-local storage).
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "rqlat.bpf.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define TASK_RUNNING 0

/* Set by userspace (the skeleton's mmapped .bss): cgroups in the cgroups map. */
volatile __u32 ncgroups = 0;

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, __u64);
} stamps SEC(".maps");

/* tid → slot (value - RQL_VALUE_MIN), written by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RQL_MAX_TASKS);
	__type(key, __u32);
	__type(value, __u32);
} classes SEC(".maps");

/* cgroup id → slot (RQL_NCLASSES + i), written by userspace. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, RQL_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, __u32);
} cgroups SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, RQL_SLOTS);
	__type(key, __u32);
	__type(value, struct rql_hist);
} hists SEC(".maps");

struct task_struct___old {
	long state; /* __state from 5.14 */
} __attribute__((preserve_access_index));

static __always_inline unsigned int task_state(struct task_struct *p)
{
	struct task_struct___old *o = (void *)p;

	if (bpf_core_field_exists(p->__state))
		return BPF_CORE_READ(p, __state);
	return (unsigned int)BPF_CORE_READ(o, state);
}

static __always_inline void stamp(struct task_struct *p)
{
	__u64 *ts;

	if (!p || BPF_CORE_READ(p, pid) == 0)
		return;
	ts = bpf_task_storage_get(&stamps, p, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ts)
		*ts = bpf_ktime_get_ns();
}

static __always_inline void add(__u32 slot, __u64 wait_ns, __u32 bucket)
{
	struct rql_hist *h = bpf_map_lookup_elem(&hists, &slot);
	__u64 b = bucket;

	/*
	 * rql_bucket() bounds it already, but 6.1's verifier loses that bound across the
	 * 32-bit zero extension: bound it again, on the register that indexes.
	 */
	asm volatile("" : "+r"(b));
	if (!h || b >= RQL_BUCKETS)
		return;
	h->count[b]++;
	h->total++;
	h->sum_ns += wait_ns;
	if (wait_ns > h->max_ns)
		h->max_ns = wait_ns;
}

static __always_inline __u64 cpu_cgroup_id(struct task_struct *p)
{
	int id;
	struct css_set *cs;
	struct cgroup_subsys_state *css = NULL;

	if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, cpu_cgrp_id))
		return 0;
	id = bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id);
	if (id < 0 || id >= 16)
		return 0;
	cs = BPF_CORE_READ(p, cgroups);
	if (!cs || bpf_core_read(&css, sizeof(css), &cs->subsys[id]) || !css)
		return 0;
	return BPF_CORE_READ(css, cgroup, kn, id);
}

/* Counts a wait of wait_ns that p ended by getting the CPU. */
static __always_inline void count(struct task_struct *p, __u32 tid, __u64 wait_ns)
{
	__u32 slot, bucket, *cls;

	bucket = rql_bucket(wait_ns);
	cls = bpf_map_lookup_elem(&classes, &tid);
	slot = cls && *cls < RQL_NCLASSES ? *cls : RQL_NONE;
	add(slot, wait_ns, bucket);
	if (ncgroups) {
		__u64 cgid = cpu_cgroup_id(p);
		__u32 *cs = cgid ? bpf_map_lookup_elem(&cgroups, &cgid) : NULL;

		if (cs && *cs >= RQL_NCLASSES && *cs < RQL_SLOTS)
			add(*cs, wait_ns, bucket);
	}
}

/* "wakeup": the wait since p's stamp. */
static __always_inline void account(struct task_struct *p)
{
	__u64 *ts, now;

	if (!p)
		return;
	ts = bpf_task_storage_get(&stamps, p, 0, 0);
	if (!ts || !*ts)
		return;
	now = bpf_ktime_get_ns();
	count(p, BPF_CORE_READ(p, pid), now > *ts ? now - *ts : 0);
	*ts = 0;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(rql_wakeup, struct task_struct *p)
{
	stamp(p);
	return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(rql_wakeup_new, struct task_struct *p)
{
	stamp(p);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(rql_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (prev && task_state(prev) == TASK_RUNNING)
		stamp(prev);
	account(next);
	return 0;
}

/*
 * "queue": next's wait since the kernel marked it queued on this CPU's run queue,
 * reached as next->se.cfs_rq->rq (CONFIG_FAIR_GROUP_SCHED; set for a task of any
 * class when it is placed on a CPU): the runqueues ksym needs CONFIG_KALLSYMS_ALL,
 * which not every kernel has (KERNEL-NOTES). The idle task (pid 0) is never marked;
 * a zero mark is a task the kernel did not see queued.
 */
SEC("tp_btf/sched_switch")
int BPF_PROG(rql_queued, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	struct cfs_rq *cfs;
	struct rq *rq;
	__u64 queued, now;

	/*
	 * Direct loads through the tracepoint's BTF pointers, not bpf_probe_read: a
	 * fault reads 0, and this is the one program on every switch.
	 */
	if (!next || next->pid == 0)
		return 0;
	queued = next->sched_info.last_queued;
	cfs = next->se.cfs_rq;
	rq = cfs ? cfs->rq : NULL;
	if (!queued || !rq)
		return 0;
	now = rq->clock;
	count(next, next->pid, now > queued ? now - queued : 0);
	return 0;
}
