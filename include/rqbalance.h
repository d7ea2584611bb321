/* Shared constants for rqbalanced and its tests. */
#ifndef RQB_RQBALANCE_H
#define RQB_RQBALANCE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#ifndef RQB_VERSION
#define RQB_VERSION "0.0.0"
#endif
#ifndef RQB_SYSCONFDIR
#define RQB_SYSCONFDIR "/etc"
#endif
#ifndef RQB_RUNDIR
#define RQB_RUNDIR "/run/rqbalance"
#endif

#define RQB_DEFAULT_CONFIG RQB_SYSCONFDIR "/rqbalance/rqbalance.conf"

/* Largest CPU number + 1 that rqbalance handles: the size of cpu_set_t. */
#define RQB_MAX_CPUS 1024

#define NSEC_PER_USEC 1000ULL
#define NSEC_PER_MSEC 1000000ULL
#define NSEC_PER_SEC 1000000000ULL

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
