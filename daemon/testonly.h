/*
 * Functions the daemon does not call: tests and fuzzers use them to look inside a
 * module (a counter, a record, a dump) or to drive it as the daemon's own caller would.
 * Each is defined in its module's file, which includes this header for the prototype;
 * nothing else of the daemon's does, so that a module's header shows what the daemon
 * uses. It names the modules' types only: a test includes their headers itself.
 */
#ifndef RQB_TESTONLY_H
#define RQB_TESTONLY_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct bpf_stats;
struct bpfev;
struct evsrc_counters;
struct journal;
struct latmgr;
struct plan;
struct proc_stats;
struct procconn;
struct rqb_conf;
struct sampler;
struct spread_pin;
struct spread_state;

/* ---- latmgr/latmgr.c ---- */
/* The value a task has from rqbalance (thread entry, else its process), or LAT_NONE. */
int latmgr_value_of(const struct latmgr *m, pid_t tid, pid_t tgid);

/* ---- policy/spread_tick.c ---- */
const struct spread_pin *spread_find_pin(const struct spread_state *st, pid_t tid, uint64_t start_time);

/* ---- diag/rqlat.c ---- */
/* The bucket a wait of wait_ns falls in: floor(log2(µs)), 0 below 2 µs, capped. */
unsigned rqlat_bucket(uint64_t wait_ns);

/* ---- taskev/bpfev.c ---- */
/* overflows counts the dispatches that found drops; dropped, the events lost. */
void bpfev_counters(const struct bpfev *ev, struct evsrc_counters *ret, uint64_t *ret_dropped);

/* ---- taskev/procconn.c ---- */
/* overflows: times the socket overflowed; ignored: other connector messages (acks...). */
void procconn_counters(const struct procconn *pc, struct evsrc_counters *ret);

/* ---- actuate/journal.c ---- */
/*
 * Opens (creating) dir/affinity.journal and takes an exclusive lock on it:
 * -EBUSY when another rqbalanced holds it.
 */
int journal_open(const char *dir, struct journal **ret);

/* ---- conf/conf.c ---- */
/* Sets one key from its text form, as the file would; 0 or -EINVAL with reason. */
int conf_set(struct rqb_conf *c, const char *section, const char *key, const char *value,
	     const char **ret_reason);

/* ---- sample/bpf.c ---- */
void bpf_sampler_stats(const struct sampler *sm, struct bpf_stats *ret);
/* ---- sample/proc.c ---- */
void proc_sampler_stats(const struct sampler *sm, struct proc_stats *ret);

/* ---- plan/plan.c ---- */
void plan_dump(const struct plan *p, FILE *out);

#endif
