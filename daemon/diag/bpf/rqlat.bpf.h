/*
 * What rqlat.bpf.c hands to userspace (daemon/diag/rqlat.c): plain C, shared by
 * both sides. Include <linux/types.h> (userspace) or vmlinux.h (BPF) first.
 */
#ifndef RQB_RQLAT_BPF_H
#define RQB_RQLAT_BPF_H

/* log2 buckets of microseconds: [0,1) [1,2) [2,4) … [2^24, ∞) µs, as runqlat's. */
#define RQL_BUCKETS 26
/* Histogram slots: one per latency-nice value -20…19, then "none", then cgroups. */
#define RQL_VALUE_MIN (-20)
#define RQL_NVALUES 40
#define RQL_NONE RQL_NVALUES
#define RQL_NCLASSES (RQL_NVALUES + 1)
#define RQL_MAX_CGROUPS 16
#define RQL_SLOTS (RQL_NCLASSES + RQL_MAX_CGROUPS)
/* Threads the tid → class map holds; beyond it a task counts as "none". */
#define RQL_MAX_TASKS 32768

/*
 * The bucket of a wait: floor(log2(µs)), 0 below 2 µs, the last one open-ended. A
 * loop-free binary search, which the verifier takes at once; shared so that the unit
 * test checks the very function the program runs.
 */
static inline __u32 rql_bucket(__u64 wait_ns)
{
	__u64 v = wait_ns / 1000;
	__u32 r = 0, s;

	s = (__u32)(v > 0xffffffffULL) << 5; v >>= s; r |= s;
	s = (__u32)(v > 0xffff) << 4; v >>= s; r |= s;
	s = (__u32)(v > 0xff) << 3; v >>= s; r |= s;
	s = (__u32)(v > 0xf) << 2; v >>= s; r |= s;
	s = (__u32)(v > 0x3) << 1; v >>= s; r |= s;
	r |= (__u32)(v >> 1);
	return r < RQL_BUCKETS ? r : RQL_BUCKETS - 1;
}

struct rql_hist {
	__u64 count[RQL_BUCKETS];  /* waits per bucket */
	__u64 total;               /* waits counted */
	__u64 sum_ns;              /* their sum, ns */
	__u64 max_ns;              /* the longest, ns (per CPU; userspace takes the max) */
};

#endif
