/*
 * The record a churn_child writes on its report pipe, and bench/churn_load reads: fixed
 * size and under PIPE_BUF, so that each is written and read whole.
 */
#ifndef RQB_BENCH_CHURN_H
#define RQB_BENCH_CHURN_H

#include <stdint.h>

#define CHURN_MAGIC 0x6e727563u /* "curn" */

enum churn_kind {
	CHURN_MATCH = 1,  /* a rule names it: it waited for its setting */
	CHURN_OTHER,      /* no rule names it: it checked it was left alone */
	CHURN_HOLD_READY, /* a thread holder has started its threads */
	CHURN_HOLD_DONE,  /* a thread holder has checked its threads */
	CHURN_BURST_READY, /* a fork storm's parent has its setting */
	CHURN_BURST,      /* a fork storm is over */
};

enum churn_outcome {
	CHURN_OK = 0,
	CHURN_MISSED,     /* CHURN_MATCH: no setting before its timeout */
	CHURN_WRONG,      /* the class cgroup, but another policy or slice; or threads wrong */
	CHURN_TOUCHED,    /* CHURN_OTHER: its cgroup, policy or slice changed */
};

struct churn_rec {
	uint32_t magic;
	uint8_t kind;         /* enum churn_kind */
	uint8_t outcome;      /* enum churn_outcome */
	uint16_t pad;
	int32_t pid;
	int32_t policy;       /* as last read */
	uint64_t start_time;  /* stat field 22: with pid, the process's identity */
	uint64_t slice_ns;    /* sched_runtime as last read */
	uint32_t delay_us;    /* MATCH: start to setting seen; BURST: the storm's length */
	uint32_t nthreads;    /* HOLD_*: threads started, or found right; BURST: forks */
	uint32_t nbad;        /* HOLD_DONE: threads found wrong */
	uint32_t pad2;
};

#endif
