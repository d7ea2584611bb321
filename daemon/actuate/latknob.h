/*
 * The per-task latency knobs, one row each: what a value's mapping (lat_knobs) says of
 * it, where a task's state (lat_state) and sched_attr hold it, its journal field, the
 * feature it needs, its explain label, and what the kernel asks of an unprivileged
 * caller who changes it. Every per-knob step of the actuator and of the views (compare,
 * copy, journal, replay, undo, explain) is a loop over this table: a new knob is a row.
 */
#ifndef RQB_LATKNOB_H
#define RQB_LATKNOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "actuate/latact.h"
#include "util/schedattr.h"

/* One field of a knob: an int or a uint64_t at these offsets. */
struct latknob_field {
	size_t state;    /* offsetof(struct lat_state, …) */
	size_t map;      /* offsetof(struct lat_knobs, …) */
	bool u64;        /* uint64_t; else int */
	/*
	 * The mapping's "leave it as it is", where the task keeps what it had before:
	 * -1 for any negative (uclamp), another number for itself (0: the slice), or
	 * INT64_MIN where the mapping always sets it (nice).
	 */
	int64_t leave;
	/* What a task has where the knob's feature is missing or the record is older. */
	int64_t none;
};

struct latknob {
	const char *name;       /* for the log, changed_since and explain's knob_NAME */
	unsigned bit;           /* enum lat_knob */
	unsigned nf;
	struct latknob_field f[2];
	/*
	 * Its journal field: NULL for the knobs of the first journal format, written in
	 * table order in each state; else a key, written after both states as
	 * " KEY=PREV/SET" only where either is not none, so older journals replay as they are.
	 */
	const char *journal;
	/* The latact_opts flag (offsetof) the kernel must have, or LATKNOB_ALWAYS. */
	size_t gate;
	const char *missing;    /* why it does nothing without that feature (explain) */
	enum lat_perm perm;     /* what the kernel asks of a caller who changes it (model.h) */
	/* The kernel's sched_attr for it, both ways; s's fields as they are read. */
	void (*to_attr)(const struct latact *la, const struct lat_state *s,
			struct rqb_sched_attr *a);
	void (*from_attr)(const struct latact *la, const struct rqb_sched_attr *a,
			  struct lat_state *s);
	/* What a child gets of it from a creator with SCHED_RESET_ON_FORK (sched_fork()). */
	void (*fork_reset)(struct lat_state *s);
	/* How explain says it. */
	void (*text)(const struct lat_state *s, char *ret, size_t size);
	/* Value v's want over what the task had (in *s); NULL: the fields' mapping, as given. */
	void (*want)(int v, const struct lat_knobs *k, struct lat_state *s);
};

#define LATKNOB_ALWAYS ((size_t)-1)

extern const struct latknob latknob_table[];
extern const size_t latknob_n;

/* Every knob's bit. */
unsigned latknob_all(void);
/* The knobs (their bits) in which a and b differ. */
unsigned latknob_differ(const struct lat_state *a, const struct lat_state *b);
/* Copies the knobs in mask from src to dst. */
void latknob_copy(unsigned mask, const struct lat_state *src, struct lat_state *dst);
/* The names of the knobs in mask, e.g. "nice slice"; "" for none. */
void latknob_names(unsigned mask, char *ret, size_t size);
/* Whether the knob's feature is on for la. */
bool latknob_on(const struct latact *la, const struct latknob *k);
/* A task's state with every knob at its none, and no cgroup. */
void latknob_init(struct lat_state *s);
/* What value v (mapped to k) asks of a task that had *s, into *s: knob by knob, gated. */
void latknob_want(const struct latact *la, int v, const struct lat_knobs *k, struct lat_state *s);
/* The sched_attr that writes s's knobs; the state read back from one. */
void latknob_to_attr(const struct latact *la, const struct lat_state *s, struct rqb_sched_attr *a);
void latknob_from_attr(const struct latact *la, const struct rqb_sched_attr *a,
		       struct lat_state *s);
/* What a child is made with of s's knobs where its creator has SCHED_RESET_ON_FORK. */
void latknob_fork_reset(struct lat_state *s);
/* The journal: a state's positional knobs ("P N S MIN MAX"); the keyed ones of a record. */
void latknob_format(const struct lat_state *s, char *ret, size_t size);
void latknob_format_keyed(const struct lat_state *prev, const struct lat_state *set, char *ret,
			  size_t size);
/* The reverse: the positional fields from strtok_r; one " KEY=PREV/SET" token. 0 or -EINVAL. */
int latknob_parse(char **save, struct lat_state *s);
int latknob_parse_keyed(const char *tok, struct lat_state *prev, struct lat_state *set);
/* A policy's name: "other", "batch", "idle", "fifo", "rr", "deadline". */
const char *latknob_policy_name(int policy);
/* Knob row's value in s as its permission rule measures it (struct lat_perm_thread). */
int64_t latknob_perm_measure(unsigned row, const struct lat_state *s);
/* The knobs a rule other than the owner's covers, measured now and after, into *ret. */
void latknob_perm(const struct lat_state *now, const struct lat_state *after,
		  struct lat_perm_thread *ret);

#endif
