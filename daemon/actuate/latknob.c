/*
 * Actuate stage, latency: the table of per-task knobs (latknob.h) and the loops over
 * it. Pure: it reads and writes structs only, never a task; the kernel facts behind
 * each row are in KERNEL-NOTES and in the row's comment.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actuate/latknob.h"

#define ST(x) offsetof(struct lat_state, x)
#define MP(x) offsetof(struct lat_knobs, x)
#define OPT(x) offsetof(struct latact_opts, x)

/* ---- per-row operations, where the fields alone do not say it ---- */

static void policy_to_attr(const struct latact *la, const struct lat_state *s,
			   struct rqb_sched_attr *a)
{
	(void)la;
	a->sched_policy = (uint32_t)s->policy;
}

static void policy_from_attr(const struct latact *la, const struct rqb_sched_attr *a,
			     struct lat_state *s)
{
	(void)la;
	s->policy = (int)a->sched_policy;
}

/* A real-time policy becomes SCHED_OTHER; SCHED_BATCH and SCHED_IDLE are kept. */
static void policy_fork_reset(struct lat_state *s)
{
	if (s->policy != SCHED_OTHER && s->policy != SCHED_BATCH && s->policy != SCHED_IDLE)
		s->policy = SCHED_OTHER;
}

static void policy_text(const struct lat_state *s, char *ret, size_t size)
{
	snprintf(ret, size, "%s", latknob_policy_name(s->policy));
}

/* A negative value takes a task to SCHED_OTHER; a positive one to the mapping's, if any. */
static void policy_want(int v, const struct lat_knobs *k, struct lat_state *s)
{
	if (v < 0)
		s->policy = SCHED_OTHER;
	else if (v > 0 && k->policy != SCHED_OTHER)
		s->policy = k->policy;
}

static void nice_to_attr(const struct latact *la, const struct lat_state *s,
			 struct rqb_sched_attr *a)
{
	(void)la;
	a->sched_nice = s->nice;
}

static void nice_from_attr(const struct latact *la, const struct rqb_sched_attr *a,
			   struct lat_state *s)
{
	(void)la;
	s->nice = a->sched_nice;
}

static void nice_fork_reset(struct lat_state *s)
{
	if (s->nice < 0)
		s->nice = 0;
}

static void nice_text(const struct lat_state *s, char *ret, size_t size)
{
	snprintf(ret, size, "%d", s->nice);
}

static void slice_to_attr(const struct latact *la, const struct lat_state *s,
			  struct rqb_sched_attr *a)
{
	a->sched_runtime = la->o.slices ? s->slice_ns : 0;
}

/*
 * The kernel reports its default as a number: 0 says "the default" and follows it.
 * A task that has not run since the default changed still shows the old one.
 */
static void slice_from_attr(const struct latact *la, const struct rqb_sched_attr *a,
			    struct lat_state *s)
{
	s->slice_ns = la->o.slices && a->sched_runtime != la->default_slice_ns &&
			      (!la->was_default_slice_ns ||
			       a->sched_runtime != la->was_default_slice_ns)
			      ? a->sched_runtime : 0;
}

static void slice_fork_reset(struct lat_state *s)
{
	s->slice_ns = 0;
}

static void slice_text(const struct lat_state *s, char *ret, size_t size)
{
	if (s->slice_ns)
		snprintf(ret, size, "%.2f ms", (double)s->slice_ns / 1e6);
	else
		snprintf(ret, size, "the kernel's default");
}

/* Both clamps in one write, or neither: the kernel would default the other. */
static void uclamp_to_attr(const struct latact *la, const struct lat_state *s,
			   struct rqb_sched_attr *a)
{
	if (!la->o.uclamp || s->umin < 0 || s->umax < 0)
		return;
	a->sched_flags |= SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX;
	a->sched_util_min = (uint32_t)s->umin;
	a->sched_util_max = (uint32_t)s->umax;
}

static void uclamp_from_attr(const struct latact *la, const struct rqb_sched_attr *a,
			     struct lat_state *s)
{
	s->umin = la->o.uclamp ? (int)a->sched_util_min : -1;
	s->umax = la->o.uclamp ? (int)a->sched_util_max : -1;
}

static void uclamp_fork_reset(struct lat_state *s)
{
	if (s->umin >= 0)
		s->umin = 0;
	if (s->umax >= 0)
		s->umax = 1024;
}

static void uclamp_text(const struct lat_state *s, char *ret, size_t size)
{
	snprintf(ret, size, "%d-%d", s->umin, s->umax);
}

/*
 * sched_setattr() sets or clears the task's sched_reset_on_fork on every call from
 * this flag: writing what the task holds keeps its own.
 */
static void rof_to_attr(const struct latact *la, const struct lat_state *s,
			struct rqb_sched_attr *a)
{
	(void)la;
	if (s->rof > 0)
		a->sched_flags |= SCHED_FLAG_RESET_ON_FORK;
}

static void rof_from_attr(const struct latact *la, const struct rqb_sched_attr *a,
			  struct lat_state *s)
{
	(void)la;
	s->rof = (a->sched_flags & SCHED_FLAG_RESET_ON_FORK) != 0;
}

/* The child does not keep it (sched_fork() clears it). */
static void rof_fork_reset(struct lat_state *s)
{
	s->rof = 0;
}

static void rof_text(const struct lat_state *s, char *ret, size_t size)
{
	snprintf(ret, size, "%s", s->rof > 0 ? "on" : "off");
}

/*
 * The knobs. The first four are written, in this order, as the first journal format's
 * positional fields ("POLICY NICE SLICE UMIN UMAX"); later ones carry a key.
 */
const struct latknob latknob_table[] = {
	{
		.name = "policy", .bit = LAT_K_POLICY, .nf = 1,
		.f = { { ST(policy), MP(policy), false, SCHED_OTHER, SCHED_OTHER } },
		.gate = LATKNOB_ALWAYS, .perm = LAT_PERM_LEAVE_IDLE,
		.to_attr = policy_to_attr, .from_attr = policy_from_attr,
		.fork_reset = policy_fork_reset, .text = policy_text, .want = policy_want,
	},
	{
		.name = "nice", .bit = LAT_K_NICE, .nf = 1,
		/* Every value sets its nice: no "leave". */
		.f = { { ST(nice), MP(nice), false, INT64_MIN, 0 } },
		.gate = LATKNOB_ALWAYS, .perm = LAT_PERM_NICE_DOWN,
		.to_attr = nice_to_attr, .from_attr = nice_from_attr,
		.fork_reset = nice_fork_reset, .text = nice_text,
	},
	{
		.name = "slice", .bit = LAT_K_SLICE, .nf = 1,
		.f = { { ST(slice_ns), MP(slice_ns), true, 0, 0 } },
		.gate = OPT(slices),
		.missing = "this kernel takes no slice from sched_setattr (EEVDF slices: 6.12)",
		.perm = LAT_PERM_OWNER,
		.to_attr = slice_to_attr, .from_attr = slice_from_attr,
		.fork_reset = slice_fork_reset, .text = slice_text,
	},
	{
		.name = "uclamp", .bit = LAT_K_UCLAMP, .nf = 2,
		.f = { { ST(umin), MP(uclamp_min), false, -1, -1 },
		       { ST(umax), MP(uclamp_max), false, -1, -1 } },
		.gate = OPT(uclamp), .missing = "this kernel has no uclamp (CONFIG_UCLAMP_TASK)",
		.perm = LAT_PERM_OWNER,
		.to_attr = uclamp_to_attr, .from_attr = uclamp_from_attr,
		.fork_reset = uclamp_fork_reset, .text = uclamp_text,
	},
	{
		.name = "reset_on_fork", .bit = LAT_K_RESET_ON_FORK, .nf = 1,
		.f = { { ST(rof), MP(reset_on_fork), false, -1, 0 } },
		.journal = "rof", .gate = LATKNOB_ALWAYS, .perm = LAT_PERM_CLEAR,
		.to_attr = rof_to_attr, .from_attr = rof_from_attr,
		.fork_reset = rof_fork_reset, .text = rof_text,
	},
};

const size_t latknob_n = sizeof(latknob_table) / sizeof(latknob_table[0]);

/* ---- the loops ---- */

static int64_t field_get(const struct latknob_field *f, const void *base, size_t off)
{
	const char *p = (const char *)base + off;
	uint64_t u;
	int i;

	if (f->u64) {
		memcpy(&u, p, sizeof(u));
		return (int64_t)u;
	}
	memcpy(&i, p, sizeof(i));
	return i;
}

static void field_set(const struct latknob_field *f, void *base, size_t off, int64_t v)
{
	char *p = (char *)base + off;

	if (f->u64) {
		uint64_t u = (uint64_t)v;

		memcpy(p, &u, sizeof(u));
	} else {
		int i = (int)v;

		memcpy(p, &i, sizeof(i));
	}
}

unsigned latknob_all(void)
{
	unsigned m = 0;

	for (size_t i = 0; i < latknob_n; i++)
		m |= latknob_table[i].bit;
	return m;
}

unsigned latknob_differ(const struct lat_state *a, const struct lat_state *b)
{
	unsigned m = 0;

	for (size_t i = 0; i < latknob_n; i++) {
		const struct latknob *k = &latknob_table[i];

		for (unsigned j = 0; j < k->nf; j++)
			if (field_get(&k->f[j], a, k->f[j].state) != field_get(&k->f[j], b, k->f[j].state))
				m |= k->bit;
	}
	return m;
}

void latknob_copy(unsigned mask, const struct lat_state *src, struct lat_state *dst)
{
	for (size_t i = 0; i < latknob_n; i++) {
		const struct latknob *k = &latknob_table[i];

		for (unsigned j = 0; j < k->nf && (mask & k->bit); j++)
			field_set(&k->f[j], dst, k->f[j].state, field_get(&k->f[j], src, k->f[j].state));
	}
}

void latknob_names(unsigned mask, char *ret, size_t size)
{
	size_t len = 0;

	ret[0] = '\0';
	for (size_t i = 0; i < latknob_n && len < size; i++)
		if (mask & latknob_table[i].bit)
			len += (size_t)snprintf(ret + len, size - len, "%s%s", len ? " " : "",
						latknob_table[i].name);
}

bool latknob_on(const struct latact *la, const struct latknob *k)
{
	bool on;

	if (k->gate == LATKNOB_ALWAYS)
		return true;
	memcpy(&on, (const char *)&la->o + k->gate, sizeof(on));
	return on;
}

void latknob_init(struct lat_state *s)
{
	memset(s, 0, sizeof(*s));
	for (size_t i = 0; i < latknob_n; i++) {
		const struct latknob *k = &latknob_table[i];

		for (unsigned j = 0; j < k->nf; j++)
			field_set(&k->f[j], s, k->f[j].state, k->f[j].none);
	}
}

void latknob_want(const struct latact *la, int v, const struct lat_knobs *m, struct lat_state *s)
{
	for (size_t i = 0; i < latknob_n; i++) {
		const struct latknob *k = &latknob_table[i];

		if (!latknob_on(la, k))
			continue;
		if (k->want) {
			k->want(v, m, s);
			continue;
		}
		for (unsigned j = 0; j < k->nf; j++) {
			int64_t x = field_get(&k->f[j], m, k->f[j].map), leave = k->f[j].leave;

			if (leave == INT64_MIN || (leave < 0 ? x >= 0 : x != leave))
				field_set(&k->f[j], s, k->f[j].state, x);
		}
	}
}

void latknob_to_attr(const struct latact *la, const struct lat_state *s, struct rqb_sched_attr *a)
{
	for (size_t i = 0; i < latknob_n; i++)
		latknob_table[i].to_attr(la, s, a);
}

void latknob_from_attr(const struct latact *la, const struct rqb_sched_attr *a,
		       struct lat_state *s)
{
	for (size_t i = 0; i < latknob_n; i++)
		latknob_table[i].from_attr(la, a, s);
}

void latknob_fork_reset(struct lat_state *s)
{
	for (size_t i = 0; i < latknob_n; i++)
		latknob_table[i].fork_reset(s);
}

void latknob_format(const struct lat_state *s, char *ret, size_t size)
{
	size_t len = 0;

	ret[0] = '\0';
	for (size_t i = 0; i < latknob_n; i++) {
		const struct latknob *k = &latknob_table[i];

		for (unsigned j = 0; j < k->nf && !k->journal && len < size; j++) {
			int64_t v = field_get(&k->f[j], s, k->f[j].state);

			if (k->f[j].u64)
				len += (size_t)snprintf(ret + len, size - len, "%s%" PRIu64,
							len ? " " : "", (uint64_t)v);
			else
				len += (size_t)snprintf(ret + len, size - len, "%s%d", len ? " " : "",
							(int)v);
		}
	}
}

void latknob_format_keyed(const struct lat_state *prev, const struct lat_state *set, char *ret,
			  size_t size)
{
	size_t len = 0;

	ret[0] = '\0';
	for (size_t i = 0; i < latknob_n && len < size; i++) {
		const struct latknob *k = &latknob_table[i];
		int64_t p, s;

		/* A keyed knob has one field. */
		if (!k->journal)
			continue;
		p = field_get(&k->f[0], prev, k->f[0].state);
		s = field_get(&k->f[0], set, k->f[0].state);
		if (p != k->f[0].none || s != k->f[0].none)
			len += (size_t)snprintf(ret + len, size - len, " %s=%" PRId64 "/%" PRId64,
						k->journal, p, s);
	}
}

int latknob_parse(char **save, struct lat_state *s)
{
	for (size_t i = 0; i < latknob_n; i++) {
		const struct latknob *k = &latknob_table[i];

		for (unsigned j = 0; j < k->nf && !k->journal; j++) {
			char *t = strtok_r(NULL, " ", save);

			if (!t)
				return -EINVAL;
			field_set(&k->f[j], s, k->f[j].state,
				  k->f[j].u64 ? (int64_t)strtoull(t, NULL, 10) : atoi(t));
		}
		for (unsigned j = 0; j < k->nf && k->journal; j++)
			field_set(&k->f[j], s, k->f[j].state, k->f[j].none);
	}
	return 0;
}

int latknob_parse_keyed(const char *tok, struct lat_state *prev, struct lat_state *set)
{
	for (size_t i = 0; i < latknob_n; i++) {
		const struct latknob *k = &latknob_table[i];
		size_t n = k->journal ? strlen(k->journal) : 0;
		long long p, s;
		int end = 0;

		if (!n || strncmp(tok, k->journal, n) != 0 || tok[n] != '=')
			continue;
		if (sscanf(tok + n + 1, "%lld/%lld%n", &p, &s, &end) != 2 || tok[n + 1 + end] ||
		    p < INT32_MIN || p > INT32_MAX || s < INT32_MIN || s > INT32_MAX)
			return -EINVAL;
		field_set(&k->f[0], prev, k->f[0].state, p);
		field_set(&k->f[0], set, k->f[0].state, s);
		return 0;
	}
	return -EINVAL;
}

const char *latknob_policy_name(int policy)
{
	switch (policy) {
	case SCHED_OTHER: return "other";
	case SCHED_FIFO: return "fifo";
	case SCHED_RR: return "rr";
	case SCHED_BATCH: return "batch";
	case SCHED_IDLE: return "idle";
	case 6: return "deadline";
	default: return "?";
	}
}

int64_t latknob_perm_measure(unsigned row, const struct lat_state *s)
{
	const struct latknob *k = &latknob_table[row];
	int64_t v = field_get(&k->f[0], s, k->f[0].state);

	switch (k->perm) {
	case LAT_PERM_LEAVE_IDLE:
		return v == SCHED_IDLE;
	case LAT_PERM_CLEAR:
		return v > 0;
	default:
		return v;
	}
}

void latknob_perm(const struct lat_state *now, const struct lat_state *after,
		  struct lat_perm_thread *ret)
{
	ret->n = 0;
	for (unsigned i = 0; i < latknob_n && ret->n < LAT_PERM_KNOBS; i++) {
		const struct latknob *k = &latknob_table[i];

		if (k->perm == LAT_PERM_OWNER)
			continue;
		ret->k[ret->n++] = (struct lat_perm_knob){ .name = k->name, .row = i,
							   .rule = k->perm,
							   .now = latknob_perm_measure(i, now),
							   .after = latknob_perm_measure(i, after) };
	}
}
