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
	 * Who it wakes, while rqs_pairs is set (else 0), from the record note_waking keeps
	 * (struct rqs_wake): the task it last woke, the CPU that one last ran on, and whom
	 * that one last woke; and both tasks' flips, counted as the kernel's wake_wide()
	 * counts wakee_flips. The wakee may have exited since: a pair is believed only when
	 * each last woke the other.
	 */
	__u32 wakee;
	__s32 wakee_cpu;
	__u32 wakee_wakee;
	__u32 flips;
	__u32 wakee_flips;
	__u32 nvcsw;          /* its voluntary context switches (low 32 bits): times it slept */
};

/* Tasks whose last wakeup note_waking remembers; the least recently used go first. */
#define RQS_MAX_WAKERS 8192

/*
 * What note_waking keeps of one waker, by tid: whom it last woke, and how often it
 * woke another than the last (halved each second it wakes anyone, as the kernel's
 * wakee_flips). start_ns tells a reused tid from the task that wrote the record.
 */
struct rqs_wake {
	__u64 start_ns;       /* the waker's start_boottime */
	__u64 wakee_task;     /* the wakee's struct task_struct, read only with a check of its
				 pid and start_boottime: it may be gone or reused */
	__u64 wakee_start_ns; /* the wakee's start_boottime */
	__u64 decay_ns;       /* bpf_ktime_get_ns() when flips was last halved */
	__u32 wakee;          /* the wakee's tid */
	__u32 flips;
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
