/*
 * Kernel features: what this kernel offers, and what rqbalance can use of it.
 * (Not "features.h": that name would shadow glibc's own header.)
 */
#ifndef RQB_FEATURES_H
#define RQB_FEATURES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "sample/topo.h"

enum feat_id {
	FEAT_LLC_GROUPS,     /* two or more LLCs: something to spread across */
	FEAT_PIDFD_THREAD,   /* pidfd_open(PIDFD_THREAD), 6.9+ */
	FEAT_EEVDF_SLICE,    /* sched_attr.sched_runtime as the EEVDF slice, 6.12+ */
	FEAT_UCLAMP,         /* CONFIG_UCLAMP_TASK */
	FEAT_CGROUP_V1_CPU,  /* a v1 hierarchy with the cpu controller */
	FEAT_CGROUP_V2_CPU,  /* a cgroup2 mount with the cpu controller enabled */
	FEAT_BTF,            /* /sys/kernel/btf/vmlinux, for BPF CO-RE */
	FEAT_SCHEDSTATS,     /* /proc/schedstat */
	FEAT_AUTOGROUP,      /* autogroup on: nice competes only inside a session */
	FEAT_TASK_EVENTS,    /* fork/exec/exit events: BPF, the proc connector, or none */
	FEAT_WAKE_PAIRS,     /* who wakes whom, for keep_pairs: the bpf sampler, or none */
	FEAT_PLACEMENT,      /* keep_together, latency_apart: on, off, or standing down */
	FEAT_CGROUP_MODE,    /* 7.3's debugfs sched/cgroup_mode: how a group's weight counts */
	FEAT_COUNT
};

enum feat_state {
	FEAT_MISSING, /* the kernel does not offer it (detail says why) */
	FEAT_FOUND,   /* offered; no part of rqbalance relies on it yet */
	FEAT_USED,    /* offered and in use */
};

struct feature {
	enum feat_state state;
	char detail[320];
};

struct features {
	char kernel[160];                 /* uname: release and machine */
	struct feature f[FEAT_COUNT];
	uint64_t default_slice_ns;        /* the kernel's default slice (features_default_slice) */
	char default_slice_src[96];       /* where it was read */
	char cgroup_mode[16];             /* the selected cgroup_mode, or "unknown" */
};

/*
 * Probes the running kernel. root prefixes /proc and /sys (tests point it at a fake
 * tree); the syscall probes act on the calling process only. The LLCs of t count as
 * groups to spread across where they have min_llc_cores cores or more.
 */
void features_probe(const char *root, const struct topo *t, unsigned min_llc_cores,
		    struct features *ret);
/*
 * llc-groups alone: whether t has two LLCs or more of min_llc_cores cores (after a
 * reload or a CPU going offline). Returns whether its state or detail changed.
 */
bool features_llcs(struct features *f, const struct topo *t, unsigned min_llc_cores);
/*
 * wake-pairs: keep_pairs off, or the pairs seen (seen_by says how), or not seen
 * (why_not says why; keep_pairs then acts on no pair).
 */
void features_set_pairs(struct features *f, bool keep_pairs, const char *seen_by,
			const char *why_not);
#define FEAT_PAIRS_BPF "the bpf sampler notes who wakes whom at sched_waking, and weighs " \
		       "it as the kernel's wake_wide() does"
#define FEAT_PAIRS_REPLAY "the replayed snapshots' partner= fields"
/* Who places tasks by cache besides rqbalance (features_kernel_places). */
enum kernel_places {
	KERNEL_PLACES_NOT,       /* nobody: the placement rules act, spread as ever */
	KERNEL_PLACES_CACHE,     /* the kernel's cache-aware scheduling keeps processes in one
				  * LLC: keep_together and latency_apart stand down, spread
				  * moves no task away from its process (whole_processes) */
	KERNEL_PLACES_SCHED_EXT, /* a sched_ext scheduler places every task it takes: spread
				  * and placement stand down, their pins given back */
};
/*
 * Whether the kernel places tasks by cache itself: a sched_ext scheduler loaded, or
 * cache-aware scheduling switched on (debugfs sched/llc_balancing/enabled, or the
 * SCHED_CACHE sched feature), or built in (built: features_sched_cache_built's source,
 * "" where not built) where debugfs does not say or is not mounted; never with fewer
 * than two LLCs (nllcs), where it does nothing. why:
 * what, for the log. Cheap enough to call once a second (sched_ext comes and goes).
 */
enum kernel_places features_kernel_places(const char *root, const char *built, int nllcs,
					  char *why, size_t len);
/*
 * Whether the running kernel (release) is built with CONFIG_SCHED_CACHE=y: from its
 * config in /boot, /usr/lib/modules, /lib/modules or /proc/config.gz, the first there,
 * else from its BTF. src: where that was read, for the log. Read at start and reload.
 */
bool features_sched_cache_built(const char *root, const char *release, char *src, size_t len);
/*
 * placement: which of the placement rules are on (on: their names, "" for none, as
 * conf_placement_rules writes them), or that they stand down (kernel_why from
 * features_kernel_places; NULL: they do not). Returns whether the state or detail
 * changed.
 */
bool features_set_placement(struct features *f, const char *on, const char *kernel_why);
const char *features_name(enum feat_id id);
/*
 * The kernel's default EEVDF slice (base_slice_ns), which follows the online CPUs and
 * the debugfs tunable: sched_getattr of the calling thread with no slice of its own
 * (6.12+; the thread's own slice is set back after), else root's debugfs
 * sched/base_slice_ns, else the kernel's formula for ncpus online CPUs. src: which,
 * for the report.
 */
uint64_t features_default_slice(const char *root, int ncpus, char *src, size_t len);
/* debugfs sched/base_slice_ns under root, 0 where it cannot be read. */
uint64_t features_base_slice_debugfs(const char *root);
/* The kernel's formula: 0.7 ms x (1 + log2(min(ncpus, 8))), log2 rounded down. */
uint64_t features_slice_formula(int ncpus);
/*
 * 7.3's debugfs sched/cgroup_mode (e.g. "up smp (concur) max tasks": the modes, the
 * selected one in parentheses): the selected word into ret, 0; "unknown" and -errno
 * where debugfs is not mounted or readable, the file is missing (before 7.3), or it
 * names no mode in parentheses (-EINVAL).
 */
int features_cgroup_mode(const char *root, char *ret, size_t len);
/* The selected mode in text as cgroup_mode gives it: 0, or -EINVAL. */
int features_parse_cgroup_mode(const char *text, char *ret, size_t len);
/* Whether root's kernel.sched_autogroup_enabled is 1 (read each time: it may change). */
bool features_autogroup_on(const char *root);
/* Sets one feature (the latency manager's event source, known once it starts). */
void features_set(struct features *f, enum feat_id id, enum feat_state st, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* A table, one feature a line: name, state, detail. */
void features_print(const struct features *f, FILE *out);
/*
 * One log line each: what was found, what could not be used and why. task-events and
 * wake-pairs are left out: the daemon logs them with features_log_one once the latency
 * manager and the sampler start.
 */
void features_log(const struct features *f);
/* One feature's line: "features: NAME: detail", or "features: cannot use NAME: why". */
void features_log_one(const struct features *f, enum feat_id id);

#endif
