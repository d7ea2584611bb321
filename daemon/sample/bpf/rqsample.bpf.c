/*
 * Sample stage, BPF side: what each CPU's run queue holds, for daemon/sample/bpf.c.
 * It only reads kernel memory; it never changes a task or the scheduler.
 *
 * Algorithm. A software cpu-clock perf event with a fixed sample_period fires on
 * every online CPU (idle ones too: the event is an hrtimer); where perf events are
 * refused, the scheduler's tracepoints do instead (see min_gap_ns). Its program finds the
 * CPU's struct rq, reads the counters and walks the rq's cfs_tasks list (every CFS
 * task queued there, the running one included), and writes one struct rqs_cpu into
 * the mmapped array slot of that CPU under a two-ended sequence count, so userspace
 * reads every CPU with no system call at all:
 *   - runnable CFS tasks: cfs.h_nr_runnable (6.14+), else h_nr_running minus
 *     h_nr_delayed (6.13), else h_nr_running (6.1..6.12). Since 6.12 a task that
 *     blocks may stay queued ("delayed dequeue") until its lag is spent; those are
 *     counted by h_nr_queued and rq->nr_running but are sleeping, and the list walk
 *     skips them by se.sched_delayed;
 *   - RT tasks: rt.rt_nr_running; the rest of rq->nr_running (deadline, stop, ext);
 *   - utilisation: the PELT util_avg of cfs, rt and dl, of 1024;
 *   - per listed task: tid, tgid, start_boottime, sum_exec_runtime, comm,
 *     PF_KTHREAD, cpus_mask (its first 1024 CPUs), and whether it is on the CPU;
 *     while userspace sets rqs_pairs (keep_pairs), who it wakes: the record that
 *     note_waking keeps of its last wakeup of another task, and the record of the
 *     task it woke (tid, CPU, whom that one woke, flips).
 * note_waking runs at sched_waking, on the waker's CPU in the waker's context, for
 * every wakeup of a sleeping task: it keeps, by waker, the last task woken and a flip
 * count as wake_wide() keeps its own. Not the kernel's last_wakee and wakee_flips:
 * those change only on the slow path of a wakeup (select_task_rq_fair()), which a
 * wakee still on its CPU (the wakelist) or still queued skips, so a ping-pong partner
 * that always finds the other still switching out never names it; and a wakeup from
 * an interrupt (the tick waking the RCU kthread, a timer waking the daemon) names
 * whatever task that interrupt came upon. The qemu tier once read one pair member
 * 1,500 times naming the RCU kthread and never its partner. Here a wakeup counts only
 * between two user tasks (neither PF_KTHREAD, the idle task included, nor the
 * daemon's), which leaves out what interrupts mostly wake; one that wakes a user task
 * (a timer expiring) still names the task it came upon. Cost: a map lookup and a
 * write per wakeup (an insert for a waker's first) while rqs_pairs is set, a flag
 * test while not; the map keeps the RQS_MAX_WAKERS wakers that woke anyone last.
 * The rq comes from the per-CPU variable runqueues through a weak __ksym
 * (sample_ksym) where the kernel can resolve it (it needs CONFIG_KALLSYMS_ALL), else
 * from the interrupted task, current->se.cfs_rq->rq (sample_task): every task,
 * the idle task included, has se.cfs_rq set to its CPU's cfs_rq, and every cfs_rq
 * points at its rq when CONFIG_FAIR_GROUP_SCHED is set. Userspace loads one or the
 * other. A task iterator (list_tasks) writes one struct rqs_task per runnable task
 * of the whole system, for the rare full walk.
 *
 * Limits. The rq is read without its lock: another CPU may be changing the list
 * while it is walked, so a sample may miss or repeat a task that moves at that
 * instant; the walk is bounded (RQS_MAX_VISIT entries, RQS_MAX_TASKS listed) and
 * says when it stopped short. Queued RT and deadline tasks other than the running
 * one are counted but not listed (the iterator finds them). A sample is up to one
 * period old. A CPU that goes offline takes its event with it (userspace then counts
 * that CPU through the iterator). The sequence count relies on x86's store order
 * (the target is x86). The list walk needs bpf_loop() (5.17+). Without
 * CONFIG_FAIR_GROUP_SCHED and without the ksym, no path exists and every sample
 * says RQS_PATH_BROKEN.
 */
#include "vmlinux.h"
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#include "rqsample.bpf.h"

/* The helpers that read kernel memory are offered only to GPL-compatible programs. */
char LICENSE[] SEC("license") = "Dual BSD/GPL";

#define PF_KTHREAD 0x00200000
#define TASK_RUNNING 0
#define barrier() asm volatile("" ::: "memory")

/* Set between open and load: the daemon's own tasks are counted apart. */
const volatile __u32 self_tgid = 0;
/* Set (and cleared) by userspace at any time, through the mmapped .bss: read wake pairs. */
__u32 rqs_pairs = 0;

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct rqs_cpu);
	__uint(max_entries, 1); /* userspace sets the number of possible CPUs */
} cpus SEC(".maps");

extern const struct rq runqueues __ksym __weak;

/* Names older kernels used; CO-RE ignores the ___suffix when it matches types. */
struct cfs_rq___old {
	unsigned int h_nr_running; /* h_nr_queued from 6.14 */
	unsigned int h_nr_delayed; /* 6.13 only */
} __attribute__((preserve_access_index));

struct task_struct___old {
	unsigned int cpu; /* before 5.16; since, in thread_info */
} __attribute__((preserve_access_index));

static __always_inline int delayed(struct task_struct *p)
{
	if (!bpf_core_field_exists(p->se.sched_delayed))
		return 0;
	return BPF_CORE_READ(p, se.sched_delayed);
}

static __always_inline __s32 task_cpu(struct task_struct *p)
{
	struct task_struct___old *o = (void *)p;

	if (bpf_core_field_exists(p->thread_info.cpu))
		return BPF_CORE_READ(p, thread_info.cpu);
	return BPF_CORE_READ(o, cpu);
}

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u32);
	__type(value, struct rqs_wake);
	__uint(max_entries, RQS_MAX_WAKERS);
} wakes SEC(".maps");

/* e's wakee, that one's CPU, whom it woke, and both flips, from the wakes records. */
static __always_inline void read_wakes(struct rqs_task *e)
{
	struct rqs_wake *w = bpf_map_lookup_elem(&wakes, &e->tid);
	struct task_struct *q;
	struct rqs_wake *v;
	__u32 wakee;

	if (!w || w->start_ns != e->start_ns)
		return;
	wakee = w->wakee;
	q = (struct task_struct *)w->wakee_task;
	if ((__u32)BPF_CORE_READ(q, pid) != wakee ||
	    BPF_CORE_READ(q, start_boottime) != w->wakee_start_ns)
		return;
	e->wakee = wakee;
	e->flips = w->flips;
	e->wakee_cpu = task_cpu(q);
	v = bpf_map_lookup_elem(&wakes, &wakee);
	if (v && v->start_ns == w->wakee_start_ns) {
		e->wakee_wakee = v->wakee;
		e->wakee_flips = v->flips;
	}
}

/* Everything but the CURR flag. */
static __always_inline void fill(struct rqs_task *e, struct task_struct *p, __u32 tgid,
				 __s32 cpu, int pairs)
{
	e->tid = BPF_CORE_READ(p, pid);
	e->tgid = tgid;
	e->cpu = cpu;
	e->flags = (BPF_CORE_READ(p, flags) & PF_KTHREAD) ? RQS_F_KTHREAD : 0;
	e->start_ns = BPF_CORE_READ(p, start_boottime);
	e->runtime_ns = BPF_CORE_READ(p, se.sum_exec_runtime);
	bpf_core_read(e->comm, sizeof(e->comm), &p->comm);
	/* NR_CPUS bits, which may be fewer than the 1024 the record holds, or more. */
	__builtin_memset(e->allowed, 0, sizeof(e->allowed));
	if (bpf_core_field_size(p->cpus_mask) >= sizeof(e->allowed))
		bpf_core_read(e->allowed, sizeof(e->allowed), &p->cpus_mask);
	else
		bpf_core_read(e->allowed, bpf_core_field_size(p->cpus_mask), &p->cpus_mask);
	e->wakee = e->wakee_wakee = e->flips = e->wakee_flips = e->nvcsw = 0;
	e->wakee_cpu = -1;
	if (pairs) {
		e->flags |= RQS_F_PAIRS;
		e->nvcsw = (__u32)BPF_CORE_READ(p, nvcsw);
		read_wakes(e);
	}
}

static __always_inline void read_counts(struct rqs_cpu *rec, struct rq *rq)
{
	struct cfs_rq *cfs = &rq->cfs;
	struct cfs_rq___old *old = (void *)cfs;
	__u32 queued, runnable, other;

	if (bpf_core_field_exists(cfs->h_nr_runnable)) {
		queued = BPF_CORE_READ(cfs, h_nr_queued);
		runnable = BPF_CORE_READ(cfs, h_nr_runnable);
	} else {
		queued = BPF_CORE_READ(old, h_nr_running);
		runnable = queued;
		if (bpf_core_field_exists(old->h_nr_delayed))
			runnable -= BPF_CORE_READ(old, h_nr_delayed);
	}
	rec->nr_running = BPF_CORE_READ(rq, nr_running);
	rec->cfs_queued = queued;
	rec->cfs_runnable = runnable > queued ? 0 : runnable;
	rec->rt = BPF_CORE_READ(rq, rt.rt_nr_running);
	other = rec->nr_running - queued - rec->rt;
	rec->dl = other > rec->nr_running ? 0 : other;
	rec->util = BPF_CORE_READ(rq, cfs.avg.util_avg) + BPF_CORE_READ(rq, avg_rt.util_avg) +
		    BPF_CORE_READ(rq, avg_dl.util_avg);
}

/* The state of one run queue walk, handed to each bpf_loop() step. */
struct walk {
	struct rqs_cpu *rec;
	struct list_head *head, *pos;
	struct task_struct *curr;
	unsigned long off;      /* from a task to its se.group_node */
	__u32 cpu;
	__u32 n;                /* tasks listed */
	int seen_curr;
};

/* Lists p (running if it is curr) unless it is ours. */
static __always_inline void list_one(struct walk *w, struct task_struct *p)
{
	__u32 tgid = BPF_CORE_READ(p, tgid), n = w->n;
	struct rqs_cpu *rec = w->rec;
	struct rqs_task *e;

	if (tgid == self_tgid) {
		rec->self++;
		return;
	}
	if (n >= RQS_MAX_TASKS) {
		rec->complete = 0;
		return;
	}
	/*
	 * Opaque to the compiler, so that the mask stays although n < RQS_MAX_TASKS is
	 * known here: a store lands inside the record whatever a verifier concludes of n.
	 * 6.1's verifier checks a bpf_loop() callback as if it ran once: it took n for the
	 * constant it had at the call, found this check never true and removed it as dead
	 * code, and a run queue of more than RQS_MAX_TASKS tasks then had entries written
	 * past the record, out of the map: the 6.1 guest panicked under hackbench.
	 */
	asm volatile("" : "+r"(n));
	e = &rec->tasks[n & (RQS_MAX_TASKS - 1)];
	/* A task alone on its CPU is never moved: its pair is read where it has company. */
	fill(e, p, tgid, w->cpu, rqs_pairs && rec->cfs_runnable >= 2);
	if (p == w->curr)
		e->flags |= RQS_F_CURR;
	w->n = n + 1;
}

/* One list entry; bpf_loop() keeps the verifier's work to one step, not 64. */
static long walk_step(__u32 i, void *ctx)
{
	struct walk *w = ctx;
	/* A local: inside BPF_CORE_READ, w->pos would be a relocation against struct walk. */
	struct list_head *pos = w->pos;
	struct task_struct *p;

	if (pos == w->head || !pos)
		return 1;
	p = (void *)((unsigned long)pos - w->off);
	w->pos = BPF_CORE_READ(pos, next);
	if (delayed(p))
		return 0;
	if (p == w->curr)
		w->seen_curr = 1;
	list_one(w, p);
	return 0;
}

static __always_inline void walk(struct rqs_cpu *rec, struct rq *rq, __u32 cpu)
{
	struct walk w = {
		.rec = rec,
		.head = &rq->cfs_tasks,
		.pos = BPF_CORE_READ(rq, cfs_tasks.next),
		.curr = BPF_CORE_READ(rq, curr),
		.off = bpf_core_field_offset(struct task_struct, se) +
		       bpf_core_field_offset(struct sched_entity, group_node),
		.cpu = cpu,
	};

	struct task_struct *curr = w.curr;

	/*
	 * 0, read from the map so that a verifier knows no value for it: one that took it
	 * for the constant 0 in every step of the loop would remove list_one()'s bound.
	 */
	w.n = *(volatile __u32 *)&rec->ntasks;
	rec->complete = 1;
	bpf_loop(RQS_MAX_VISIT, walk_step, &w, 0);
	if (w.pos != w.head)
		rec->complete = 0;
	/* An RT, deadline or stop task on the CPU is on no CFS list. */
	if (!w.seen_curr && curr && BPF_CORE_READ(curr, pid) != 0)
		list_one(&w, curr);
	rec->ntasks = w.n;
}

static __always_inline int sample_rq(struct rq *rq, __u32 path)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct rqs_cpu *rec = bpf_map_lookup_elem(&cpus, &cpu);
	__u64 seq;

	if (!rec)
		return 0;
	seq = rec->seq_head;
	if (seq & 1)
		seq++;
	rec->seq_tail = seq + 1;
	barrier();
	rec->seq_head = seq + 1;
	barrier();
	rec->ts_ns = bpf_ktime_get_ns();
	rec->samples++;
	rec->self = 0;
	rec->ntasks = 0;
	rec->complete = 0;
	rec->cpu = rq ? BPF_CORE_READ(rq, cpu) : (__u32)-1;
	if (rq && rec->cpu == cpu) {
		rec->path = path;
		read_counts(rec, rq);
		walk(rec, rq, cpu);
	} else {
		rec->path = RQS_PATH_BROKEN;
	}
	barrier();
	rec->seq_head = seq + 2;
	barrier();
	rec->seq_tail = seq + 2;
	return 0;
}

static __always_inline int via_ksym(void)
{
	if (!&runqueues)
		return sample_rq(NULL, RQS_PATH_BROKEN);
	return sample_rq((struct rq *)bpf_this_cpu_ptr(&runqueues), RQS_PATH_KSYM);
}

static __always_inline int via_task(void)
{
	struct task_struct *t = (void *)bpf_get_current_task();

	if (!bpf_core_field_exists(t->se.cfs_rq) ||
	    !bpf_core_field_exists(((struct cfs_rq *)0)->rq))
		return sample_rq(NULL, RQS_PATH_BROKEN);
	return sample_rq(BPF_CORE_READ(t, se.cfs_rq, rq), RQS_PATH_TASK);
}

SEC("perf_event")
int sample_ksym(struct bpf_perf_event_data *ctx)
{
	return via_ksym();
}

SEC("perf_event")
int sample_task(struct bpf_perf_event_data *ctx)
{
	return via_task();
}

/*
 * The tracepoint trigger, where no perf event may be opened (Debian's
 * kernel.perf_event_paranoid = 3 wants CAP_SYS_ADMIN for any): sched_stat_runtime
 * fires at each scheduler tick of a CPU that runs a CFS task (update_curr), and
 * sched_switch at each switch, both on the CPU whose rq they read (the current
 * task's). A CPU samples itself at most once every min_gap_ns. A CPU that only runs
 * an RT task, or idles, takes no tick samples: as with a silent perf event, userspace
 * then tells idle from held through /proc/stat.
 */
const volatile __u64 min_gap_ns = 0;

static __always_inline int too_soon(void)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct rqs_cpu *rec = bpf_map_lookup_elem(&cpus, &cpu);

	return !rec || (rec->samples && bpf_ktime_get_ns() - rec->ts_ns < min_gap_ns);
}

SEC("tp_btf/sched_stat_runtime")
int tick_ksym(void *ctx)
{
	return too_soon() ? 0 : via_ksym();
}

SEC("tp_btf/sched_stat_runtime")
int tick_task(void *ctx)
{
	return too_soon() ? 0 : via_task();
}

SEC("tp_btf/sched_switch")
int switch_ksym(void *ctx)
{
	return too_soon() ? 0 : via_ksym();
}

SEC("tp_btf/sched_switch")
int switch_task(void *ctx)
{
	return too_soon() ? 0 : via_task();
}

/* Keeps the waker's record: see the head of this file. */
SEC("tp_btf/sched_waking")
int BPF_PROG(note_waking, struct task_struct *p)
{
	struct task_struct *cur;
	struct rqs_wake *w, fresh = {};
	__u64 now;
	__u32 tid;

	if (!rqs_pairs)
		return 0;
	cur = bpf_get_current_task_btf();
	if (cur == p || ((cur->flags | p->flags) & PF_KTHREAD) || cur->tgid == self_tgid ||
	    p->tgid == self_tgid)
		return 0;
	tid = cur->pid;
	w = bpf_map_lookup_elem(&wakes, &tid);
	if (!w || w->start_ns != cur->start_boottime) {
		fresh.start_ns = cur->start_boottime;
		fresh.decay_ns = bpf_ktime_get_ns();
		bpf_map_update_elem(&wakes, &tid, &fresh, BPF_ANY);
		w = bpf_map_lookup_elem(&wakes, &tid);
		if (!w)
			return 0;
	}
	now = bpf_ktime_get_ns();
	if (now - w->decay_ns > 1000000000ull) {
		w->flips >>= 1;
		w->decay_ns = now;
	}
	if (w->wakee != (__u32)p->pid || w->wakee_start_ns != p->start_boottime) {
		w->wakee = p->pid;
		w->wakee_start_ns = p->start_boottime;
		w->wakee_task = (__u64)p;
		w->flips++;
	}
	return 0;
}

SEC("iter/task")
int list_tasks(struct bpf_iter__task *ctx)
{
	struct seq_file *seq = ctx->meta->seq;
	struct task_struct *p = ctx->task;
	struct rqs_task e = {};
	__u32 tgid;

	if (!p)
		return 0;
	if (BPF_CORE_READ(p, __state) != TASK_RUNNING || !BPF_CORE_READ(p, on_rq) || delayed(p))
		return 0;
	tgid = BPF_CORE_READ(p, tgid);
	if (tgid == self_tgid)
		return 0;
	fill(&e, p, tgid, task_cpu(p), rqs_pairs);
	bpf_seq_write(seq, &e, sizeof(e));
	return 0;
}
