/*
 * Inside placement: the rule table place.c loops over, one row a rule and one file a
 * rule (place_together.c, place_apart.c, place_fast.c), and the kit every rule shares
 * (place_kit.c). Nothing outside daemon/policy/ includes this.
 */
#ifndef RQB_PLACE_INT_H
#define RQB_PLACE_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "policy/spread.h"
#include "policy/spread_int.h"

/* A latency task that ran no later than this ago still counts (latency_apart, fast_cores). */
#define APART_IDLE_NS (5 * NSEC_PER_SEC)

/*
 * What decide returns where its rule, though on, has nothing to place on this machine
 * (fast_cores on a part with one kind of core): place.c then treats it as off.
 */
#define PLACE_STAND_DOWN 1

/* One placement rule: a row of place.c's table. */
struct place_rule {
	const char *name;          /* its [balance] key */
	size_t gate;               /* offsetof(struct spread_conf, its bool key) */
	enum spread_pin_kind kind; /* the pins it makes; it releases only these */
	bool lats;                 /* reads the latency tasks' memory (st->lats) */
	/* On: its memory, releases and pins for this tick. 0, PLACE_STAND_DOWN or -ENOMEM. */
	int (*decide)(struct spread_tick *tk);
	/* Off: forgets its memory; place.c gives back its pins, why "off". */
	void (*forget)(struct spread_state *st);
	/* One of its pins, of process tgid, was lost (refused, undone); NULL: no matter. */
	void (*lost)(struct spread_state *st, pid_t tgid);
};

/* The rules (place_together.c, place_apart.c, place_fast.c). */
int place_together_decide(struct spread_tick *tk);
void place_together_forget(struct spread_state *st);
void place_together_pin_lost(struct spread_state *st, pid_t tgid);
int place_apart_decide(struct spread_tick *tk);
void place_apart_forget(struct spread_state *st);
int place_fast_decide(struct spread_tick *tk);
void place_fast_forget(struct spread_state *st);

/* ---- the kit (place_kit.c) ---- */

/* Why a pin of one rule goes back now, arg the rule's own; NULL to keep it. */
typedef const char *place_keep_fn(const struct spread_tick *tk, const struct spread_pin *p,
				  const void *arg);

/* Gives back every pin of kind that keep() refuses, within the budget. 0 or -ENOMEM. */
int place_kit_release(struct spread_tick *tk, enum spread_pin_kind kind, place_keep_fn *keep,
		      const void *arg);
/* A task a rule may pin now (see place_kit.c). */
bool place_kit_pinnable(const struct spread_tick *tk, const struct snap_task *t);
/* The least loaded spreadable LLC per CPU other than not, none of skip's; -1 if none. */
int place_kit_least_loaded(const struct spread_tick *tk, int not, const unsigned char *skip);
/* A state that changes only after the opposite has held for min_residency_ms. */
void place_kit_settle(const struct spread_tick *tk, bool now, bool *state, uint64_t *since_ns);
/* The latency tasks the snapshot names, merged into st->lats. 0 or -ENOMEM. */
int place_kit_update_lats(const struct spread_tick *tk);
/* The memory of latency task tid started at start; NULL if none. */
struct place_lat *place_kit_find_lat(struct spread_state *st, pid_t tid, uint64_t start);

#endif
