/*
 * The fixture test_spread.c and test_place.c share: a synthetic machine, a snapshot
 * of runnable tasks on it, the config, and the spread policy's state, run a tick at a
 * time through spread_decide, its plan dumped as text (spread_fx.c, in the kit).
 */
#ifndef RQB_TEST_SPREAD_FX_H
#define RQB_TEST_SPREAD_FX_H

#include "kit.h"
#include "policy/spread.h"
#include "rqbalance.h"

#define MS 1000000ULL

struct fx {
	struct topo *topo;
	struct snapshot *s;
	struct rqb_conf c;
	struct spread_conf sc;       /* c as the policy reads it (sconf) */
	struct spread_state st;
	struct plan plan;
	bool whole;                  /* the kernel keeps processes in one LLC (whole_processes) */
};

/* The policy's view of f->c, as the daemon builds it each tick. */
const struct spread_conf *sconf(struct fx *f);
/* The fixture on topology t, which it owns. */
struct fx *fx_on(struct topo *t);
struct fx *fx_new(const char *synthetic);
/* The fixture on an hwloc XML topology (tests/data) instead of a synthetic one. */
struct fx *fx_new_xml(const char *path);
void fx_free(struct fx *f);
/* A runnable task on cpu, allowed everywhere; start_time derives from tid. */
struct snap_task *add(struct fx *f, pid_t tid, int cpu);
/* t, narrowed to the CPU it is on: load that counts everywhere and never moves. */
struct snap_task *narrowed(struct snap_task *t);
/* Runs one tick at now_ms; returns the plan's dump. */
const char *tick(struct fx *f, uint64_t now_ms);
/* Runs one tick on a snapshot in replay format (what --record writes), at its time. */
const char *replay_tick(struct fx *f, const char *text);
/* Counts plan lines that start with op. */
int count_ops(const char *dump, const char *op);

#endif
