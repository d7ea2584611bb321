/*
 * The kernel types rqsample.bpf.c, rqlat.bpf.c and rqevents.bpf.c read, for a build machine without
 * /sys/kernel/btf/vmlinux (the Makefile prefers a vmlinux.h that bpftool dumps from
 * the building kernel's BTF). Only the fields the programs use, with the kernel's
 * names and types; preserve_access_index makes every access a CO-RE relocation, so
 * libbpf finds the real offsets in the running kernel's BTF at load, and the field
 * order and the fields left out here do not matter. Fields that a kernel between
 * 6.1 and 6.18 may lack are tested with bpf_core_field_exists() in the program.
 * The BPF uapi (map types, helpers' types) comes from the system's linux/ headers.
 */
#ifndef RQB_VMLINUX_MIN_H
#define RQB_VMLINUX_MIN_H

#include <linux/types.h>
#include <linux/bpf.h>
#include <linux/bpf_perf_event.h>

typedef _Bool bool;
typedef int pid_t;
typedef __u32 dev_t;

#pragma clang attribute push(__attribute__((preserve_access_index)), apply_to = record)

struct list_head {
	struct list_head *next;
	struct list_head *prev;
};

struct sched_avg {
	unsigned long util_avg;
};

struct cfs_rq;

struct kernfs_node {
	__u64 id;                     /* a cgroup directory's inode number on 64-bit */
};

struct cgroup {
	struct kernfs_node *kn;
};

struct cgroup_subsys_state {
	struct cgroup *cgroup;
};

enum cgroup_subsys_id {
	cpu_cgrp_id = 2,              /* the real value comes from the kernel's BTF */
};

struct css_set {
	struct cgroup_subsys_state *subsys[14];
};

struct sched_entity {
	struct list_head group_node;  /* on rq->cfs_tasks while queued */
	unsigned char sched_delayed;  /* 6.12+: blocked, dequeue delayed */
	__u64 sum_exec_runtime;
	struct cfs_rq *cfs_rq;        /* CONFIG_FAIR_GROUP_SCHED */
};

struct thread_info {
	__u32 cpu;                    /* 5.16+ with THREAD_INFO_IN_TASK */
};

struct cpumask {
	unsigned long bits[16];       /* NR_CPUS bits: CO-RE gives the real size */
};

typedef struct cpumask cpumask_t;

struct super_block {
	dev_t s_dev;                  /* the kernel's encoding: major << 20 | minor */
};

struct inode {
	unsigned long i_ino;
	struct super_block *i_sb;
};

struct file {
	struct inode *f_inode;
};

struct mm_struct {
	struct file *exe_file;
};

struct linux_binprm {
	struct file *file;
};

struct sched_info {
	unsigned long long last_queued;    /* CONFIG_SCHED_INFO: rq_clock() when queued, 0 once run */
};

struct task_struct {
	struct thread_info thread_info;
	unsigned int __state;
	unsigned int flags;
	int on_rq;
	struct sched_entity se;
	int pid;
	int tgid;
	struct css_set *cgroups;
	__u64 start_boottime;
	struct task_struct *real_parent;
	struct mm_struct *mm;
	char comm[16];
	cpumask_t cpus_mask;
	unsigned long nvcsw;               /* voluntary context switches: times it slept */
	struct sched_info sched_info;
};

struct rq;

struct cfs_rq {
	unsigned int h_nr_queued;     /* 6.14+; h_nr_running before */
	unsigned int h_nr_runnable;   /* 6.14+ */
	struct sched_avg avg;
	struct rq *rq;                /* CONFIG_FAIR_GROUP_SCHED */
};

struct rt_rq {
	unsigned int rt_nr_running;
};

struct rq {
	unsigned int nr_running;
	__u64 clock;                  /* rq_clock(): what sched_info.last_queued is in */
	struct cfs_rq cfs;
	struct rt_rq rt;
	struct task_struct *curr;
	int cpu;
	struct list_head cfs_tasks;
	struct sched_avg avg_rt;
	struct sched_avg avg_dl;
};

struct seq_file;

struct bpf_iter_meta {
	struct seq_file *seq;
	__u64 session_id;
	__u64 seq_num;
};

struct bpf_iter__task {
	struct bpf_iter_meta *meta;
	struct task_struct *task;
};

#pragma clang attribute pop

#endif
