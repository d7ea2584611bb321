/*
 * sched_getattr/sched_setattr: glibc 2.36 has no wrapper, and <linux/sched/types.h>
 * clashes with its headers, so the kernel's layout (VER1, 56 bytes) is declared here.
 */
#ifndef RQB_SCHEDATTR_H
#define RQB_SCHEDATTR_H

#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#ifndef SCHED_FLAG_RESET_ON_FORK
#define SCHED_FLAG_RESET_ON_FORK 0x01
#endif
#define SCHED_FLAG_KEEP_POLICY 0x08
#define SCHED_FLAG_KEEP_PARAMS 0x10
#define SCHED_FLAG_UTIL_CLAMP_MIN 0x20
#define SCHED_FLAG_UTIL_CLAMP_MAX 0x40

struct rqb_sched_attr {
	uint32_t size;
	uint32_t sched_policy;
	uint64_t sched_flags;
	int32_t sched_nice;
	uint32_t sched_priority;
	uint64_t sched_runtime;   /* SCHED_OTHER/BATCH: the EEVDF slice in ns, 6.12+ */
	uint64_t sched_deadline;
	uint64_t sched_period;
	uint32_t sched_util_min;  /* 0…1024 */
	uint32_t sched_util_max;
};

/* 0 or -errno. */
static inline int rqb_sched_getattr(pid_t tid, struct rqb_sched_attr *ret)
{
	ret->size = sizeof(*ret);
	return syscall(SYS_sched_getattr, tid, ret, sizeof(*ret), 0) < 0 ? -errno : 0;
}

static inline int rqb_sched_setattr(pid_t tid, const struct rqb_sched_attr *a)
{
	return syscall(SYS_sched_setattr, tid, a, 0) < 0 ? -errno : 0;
}

#endif
