/*
 * What rqsample.bpf.c hands to userspace (daemon/sample/bpf.c): plain C, shared by
 * both sides, so the layouts cannot drift. Include <linux/types.h> (userspace) or
 * vmlinux.h (BPF) first.
 */
#ifndef RQB_RQSAMPLE_H
#define RQB_RQSAMPLE_H

/* Runnable tasks one per-CPU sample lists; a longer queue is counted, not listed. */
#define RQS_MAX_TASKS 32
/* List entries one sample visits, delayed-dequeue sleepers included. */
#define RQS_MAX_VISIT 64
#define RQS_COMM_LEN 16
/* Words of a task's allowed CPUs: 1024 CPUs, glibc's cpu_set_t. */
#define RQS_MASK_WORDS 16

/* How the perf_event program found its CPU's run queue (rqs_cpu.path). */
enum rqs_path {
	RQS_PATH_NONE = 0,    /* no sample yet */
	RQS_PATH_KSYM = 1,    /* the per-CPU runqueues variable, through __ksym */
	RQS_PATH_TASK = 2,    /* current->se.cfs_rq->rq */
	RQS_PATH_BROKEN = 3,  /* neither: the kernel lacks what the path needs */
};

/* rqs_task.flags */
#define RQS_F_KTHREAD 0x1u  /* PF_KTHREAD */
#define RQS_F_CURR 0x2u     /* on the CPU at the sample */
#define RQS_F_PAIRS 0x4u    /* the wake pair fields below were read */

struct rqs_task {
	__u32 tid;
	__u32 tgid;
	__u32 flags;          /* RQS_F_* */
	__s32 cpu;            /* the CPU it is queued on, or last ran on */
	__u64 start_ns;       /* start_boottime: ns after boot, suspend included */
	__u64 runtime_ns;     /* se.sum_exec_runtime: CPU time used since it started */
	char comm[RQS_COMM_LEN];
	__u64 allowed[RQS_MASK_WORDS]; /* cpus_mask, as sched_getaffinity() before it ANDs
					  the online CPUs */
	/*
	 * Who it wakes, as the kernel's wake_wide() sees it, while rqs_pairs is set (else
	 * 0): last_wakee's tid, the CPU that one last ran on, and whom that one last woke;
	 * and both tasks' wakee_flips (bumped each time a task wakes another than the last,
	 * halved each second it wakes anyone). The wakee may have exited since: a pair is
	 * believed only when each last woke the other.
	 */
	__u32 wakee;
	__s32 wakee_cpu;
	__u32 wakee_wakee;
	__u32 flips;
	__u32 wakee_flips;
	__u32 nvcsw;          /* its voluntary context switches (low 32 bits): times it slept */
	__u32 wakee_tgid;     /* last_wakee's process: the daemon's own, woken by its timer
				 in an interrupt that this task happened to be under */
};

/*
 * One CPU's latest sample, written only by that CPU. seq_tail is made odd first and
 * seq_head last; a reader that copies from seq_head to seq_tail and finds them equal
 * and even has a whole record.
 */
struct rqs_cpu {
	__u64 seq_head;
	__u64 ts_ns;          /* bpf_ktime_get_ns() (CLOCK_MONOTONIC) at the sample */
	__u64 samples;        /* samples taken on this CPU since load */
	__u32 path;           /* enum rqs_path */
	__u32 cpu;            /* rq->cpu, as a check */
	__u32 nr_running;     /* rq->nr_running: every class, delayed-dequeue sleepers too */
	__u32 cfs_queued;     /* cfs.h_nr_queued (h_nr_running before 6.14) */
	__u32 cfs_runnable;   /* CFS tasks able to run: delayed-dequeue sleepers left out */
	__u32 rt;             /* rt.rt_nr_running */
	__u32 dl;             /* nr_running - cfs_queued - rt: deadline tasks, and stop */
	__u32 util;           /* util_avg of cfs + rt + dl, of 1024 */
	__u32 self;           /* the daemon's own tasks among the runnable */
	__u32 ntasks;         /* entries used in tasks */
	__u32 complete;       /* 1 when tasks lists every runnable CFS task */
	__u32 pad;
	struct rqs_task tasks[RQS_MAX_TASKS];
	__u64 seq_tail;
};

#endif
