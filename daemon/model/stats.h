/*
 * What the daemon shows of itself: one struct that daemon_stats (core/daemon.c) fills
 * from every stage's counters, and that both rqctl status (core/status.c) and the metrics
 * file (core/metrics.c) print, so that the two never count one thing two ways.
 */
#ifndef RQB_STATS_H
#define RQB_STATS_H

#include <stdbool.h>
#include <stdint.h>

struct snapshot;
struct topo;

/* A tick's stages, timed: where the daemon's own CPU goes. */
enum tick_stage { TICK_SAMPLE, TICK_VERIFY, TICK_LATENCY, TICK_POLICY, TICK_ACT, TICK_STAGES };

struct daemon_stats {
	/* Who places tasks by cache: "rqbalance", "kernel" (its cache-aware scheduling) or
	 * "sched_ext" (a BPF scheduler), and why, "" for rqbalance. */
	const char *placement_by;
	const char *placement_why;
	const char *sampler;            /* the sampler's name */
	const char *cgroup_mode;        /* 7.3's debugfs sched/cgroup_mode, or "unknown" */
	uint64_t default_slice_ns;      /* the kernel's default slice, a value's slices' unit */
	bool dry_run;
	uint32_t interval_ms;           /* the configured tick */
	uint32_t tick_now_ms;           /* the tick now: interval_ms, or an idle heartbeat */
	uint64_t ticks;
	uint64_t sample_errors;         /* failed samples since the last warning about them */
	uint64_t sample_failures;       /* ticks whose sample failed, ever */
	double tick_avg_us[TICK_STAGES];   /* a tick's stages, on average */
	double tick_max_us;             /* the longest whole tick */
	/* affinity */
	uint64_t managed;               /* tasks whose affinity rqbalance set now */
	uint64_t moves, restores;
	uint64_t gone, left_alone;      /* dropped without giving back, by reason */
	uint64_t transient, permanent;  /* errors, by kind */
	/* latency */
	uint64_t lat_tasks, lat_cgroups, lat_processes;
	uint64_t lat_applied, lat_restored, lat_errors, lat_refused;
	uint64_t lat_inherited_back;    /* values a new thread or child inherited, given back */
	const char *events_state;       /* "bpf", "connector", or "none (why)" */
	bool events_up;                 /* fork and exec events arrive */
	bool events_bpf;                /* and from BPF */
	bool exec_lazy;                 /* an exec waits for the next tick (nothing to do) */
	uint64_t events, overflows, rescans, rule_matches;
	/* From an exec event to its rule's value written, over the last exec_timed execs. */
	uint32_t exec_timed, exec_us_p50, exec_us_p99, exec_us_max;
	const char *class_mount;        /* where the class cgroups are; NULL when off */
	const char *class_root;         /* below that mount; "" for its top */
	/* the doors */
	unsigned ctl_connections;
	bool dbus, dbus_s76;            /* org.rqbalance1 owned; com.system76.Scheduler too */
	/* per LLC */
	const struct topo *topo;
	const struct snapshot *snap;    /* the last tick's */
};

#endif
