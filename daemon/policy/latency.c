/*
 * Policy: the latency-nice mapping, one table for every caller. Pure: no I/O, no
 * clock; what this kernel has (uclamp, slices) is decided by the actuator, not here.
 */
#include <errno.h>
#include <fnmatch.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/latency.h"
#include "rqbalance.h"

/* The kernel's sched_prio_to_weight[], nice -20 … 19: each step is about 1.25×. */
static const uint32_t nice_weight[40] = {
	88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
	9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
	1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
	110,   87,    70,    56,    45,    36,    29,    23,    18,    15,
};

uint32_t latency_nice_weight(int nice)
{
	if (nice < LAT_MIN)
		nice = LAT_MIN;
	if (nice > LAT_MAX)
		nice = LAT_MAX;
	return nice_weight[nice - LAT_MIN];
}

/*
 * A class's weight counts only among its siblings. At the top of the hierarchy a class
 * competes with the value's own weight, which is the value's nice's: a raise there gives
 * a task less. Below a parent (cgroup_root) the classes share the parent's weight, and a
 * class that alone has runnable tasks there gets all of it: a task an administrator
 * reniced to 19 would compete as one nice-0 group once its user asked for 19, which
 * anyone may ask. So a positive value moves a task into a class below a parent only
 * where the parent weighs no more than the task's nice did. A negative value is a
 * favour its caller was allowed: its bound is the parent's weight by design.
 */
bool latency_class_gains(int v, int nice, uint64_t parent_shares)
{
	return v > 0 && parent_shares > latency_nice_weight(nice);
}

uint32_t latency_shares_to_weight(uint32_t shares)
{
	/* cgroup2 and systemd: 100 is the default weight, as 1024 shares are in v1. */
	uint64_t w = ((uint64_t)shares * 100 + 512) / 1024;

	if (w < 1)
		w = 1;
	if (w > 10000)
		w = 10000;
	return (uint32_t)w;
}

/*
 * A ratio of the kernel's default slice, which is 0.7 ms x (1 + log2(min(CPUs, 8))):
 * a fixed scale would fall on either side of it by the CPU count (on 8 CPUs, 2.8 ms,
 * small positive values got shorter slices than 0). default x 2^(v/5): every five
 * steps halve or double the slice, so every negative value is shorter than the
 * default and every positive one longer, up to the kernel's bounds. At a bound the
 * steps beyond it share its slice, and a value the bound would put on the wrong side
 * of the default (or on it) keeps the default: monotone, strictly so between bounds.
 */
uint64_t latency_slice_ns(uint64_t def, int v)
{
	/* 2^(k/5) for k = 0…4, in millionths */
	static const uint64_t frac[5] = { 1000000, 1148698, 1319508, 1515717, 1741101 };
	uint64_t ns;
	int k;

	if (!def)
		def = LAT_SLICE_DEFAULT_NS;
	/* No slice is longer than the bound: nothing to give a positive value. */
	if (v == 0 || (v > 0 && def >= LAT_SLICE_MAX_NS))
		return 0;
	if (def > UINT32_MAX)
		def = UINT32_MAX; /* base_slice_ns is 32 bits: keeps the product in range */
	if (v > 0) {
		k = v > LAT_MAX ? LAT_MAX : v;
		ns = (def << (k / 5)) * frac[k % 5] / 1000000;
	} else {
		/* 2^(-k/5) = 2^(-ceil(k/5)) x 2^(rem/5) */
		k = v < LAT_MIN ? -LAT_MIN : -v;
		int up = (k + 4) / 5, rem = up * 5 - k;
		ns = (def * frac[rem] / 1000000) >> up;
	}
	if (ns < LAT_SLICE_MIN_NS)
		ns = LAT_SLICE_MIN_NS;
	if (ns > LAT_SLICE_MAX_NS)
		ns = LAT_SLICE_MAX_NS;
	if ((v < 0 && ns >= def) || (v > 0 && ns <= def))
		return 0;
	return ns;
}

/*
 * The weight for value v. A bound of pct caps a negative value's weight at what takes
 * pct % of a CPU from one competitor of default weight (a session, a service) when
 * both want all of it: 1024 x pct / (100 - pct), never below the default. A weight
 * cannot stall a task as a CFS quota does: what the others leave, anyone may use.
 */
static uint32_t weight_for(const struct lat_conf *c, int v)
{
	uint64_t cap;
	uint32_t w = latency_nice_weight(v);

	if (v >= 0 || !c->boost_cpu_pct || c->boost_cpu_pct >= 100)
		return w;
	cap = 1024ULL * c->boost_cpu_pct / (100 - c->boost_cpu_pct);
	if (cap < 1024)
		cap = 1024;
	return w < cap ? w : (uint32_t)cap;
}

void latency_map(const struct lat_conf *c, int v, struct lat_knobs *ret)
{
	struct lat_knobs k = { .policy = SCHED_OTHER, .uclamp_min = -1, .uclamp_max = -1,
			       .reset_on_fork = -1 };

	if (v < LAT_MIN)
		v = LAT_MIN;
	if (v > LAT_MAX)
		v = LAT_MAX;
	k.slice_ns = latency_slice_ns(c->default_slice_ns, v);
	k.shares = weight_for(c, v);
	/*
	 * Weight is what buys latency, in both directions: the nice value's among the
	 * tasks of one group (an autogroup, a unit), the class's across groups.
	 */
	k.nice = v;
	k.use_class = v != 0 && c->class_cgroups;
	if (v != 0 && c->reset_on_fork)
		k.reset_on_fork = 1;
	if (v < 0) {
		if (c->uclamp)
			k.uclamp_min = -v * 1024 / 20;
	} else if (v > 0) {
		if (v >= c->batch_from)
			k.policy = SCHED_BATCH;
		if (v == LAT_MAX && c->idle_at_19) {
			k.policy = SCHED_IDLE;
			k.cg_idle = true;
		}
		if (c->uclamp)
			k.uclamp_max = 1024 - v * 512 / LAT_MAX;
	}
	*ret = k;
}

int latency_parse(const char *s, int *ret, const char **ret_reason)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (s[0] == '\0' || *end != '\0' || errno) {
		*ret_reason = "not a number";
		return -EINVAL;
	}
	if (v < LAT_MIN || v > LAT_MAX) {
		*ret_reason = "out of range -20…19";
		return -EINVAL;
	}
	*ret = (int)v;
	return 0;
}

/* What keeps the members from one value: processes without it, or with another. */
static void count_others(const struct lat_unit_view *v, int *ret_value, size_t *ret_none,
			 size_t *ret_diff)
{
	int value = LAT_NONE;

	*ret_none = *ret_diff = 0;
	for (size_t i = 0; i < v->n; i++)
		if (v->m[i].value != LAT_NONE) {
			value = v->m[i].value;
			break;
		}
	for (size_t i = 0; i < v->n; i++) {
		if (v->m[i].value == LAT_NONE)
			(*ret_none)++;
		else if (v->m[i].value != value)
			(*ret_diff)++;
	}
	*ret_value = value;
}

/* More than one user among the members, and a value some user gave, not a rule or root. */
static bool users_differ_untrusted(const struct lat_unit_view *v)
{
	bool differ = false, untrusted = false;

	for (size_t i = 0; i < v->n; i++) {
		const struct lat_member *m = &v->m[i];

		differ |= m->ruid != v->m[0].ruid || m->euid != v->m[0].ruid;
		untrusted |= !m->trusted;
	}
	return differ && untrusted;
}

/* Whether d's weight (0: idle) is above a weight below the default that someone set. */
static bool raises_held_back(const struct lat_unit_view *v, const struct lat_unit_decision *d)
{
	if (v->before_idle)
		return d->weight != 0;
	return v->before_weight && v->before_weight < LAT_UNIT_WEIGHT_DEFAULT && d->weight &&
	       d->weight > v->before_weight;
}

static void unit_refuse(struct lat_unit_decision *d, enum lat_unit_verdict verdict,
			const char *why)
{
	d->verdict = verdict;
	snprintf(d->why, sizeof(d->why), "%s: only the task's nice applies", why);
}

void latency_unit_decide(const struct lat_conf *c, const struct lat_unit_view *v,
		     struct lat_unit_decision *ret)
{
	struct lat_unit_decision d = { .value = LAT_NONE };
	struct lat_knobs k;
	size_t none, diff;
	int value;

	count_others(v, &value, &none, &diff);
	if (v->delegated) {
		unit_refuse(&d, LAT_UNIT_DELEGATED, "in a unit's delegated subtree (a user "
			    "manager's, or a service's own), which is not rqbalance's to set");
	} else if (!v->unit || !v->unit[0]) {
		unit_refuse(&d, LAT_UNIT_NOT_A_UNIT, "its cgroup is no systemd unit's");
	} else if (v->truncated) {
		unit_refuse(&d, LAT_UNIT_TOO_MANY, "its unit has too many processes to check");
	} else if (diff) {
		d.others = diff;
		d.verdict = LAT_UNIT_OTHERS;
		snprintf(d.why, sizeof(d.why), "%s is shared with %zu process%s of another "
			 "value: only the task's nice applies", v->unit, diff, diff == 1 ? "" : "es");
	} else if (none || value == LAT_NONE) {
		d.others = none;
		d.verdict = LAT_UNIT_SHARED;
		snprintf(d.why, sizeof(d.why), "%s is shared with %zu process%s without a "
			 "value: only the task's nice applies; give it a scope of its own "
			 "(systemd-run --scope)", v->unit, none, none == 1 ? "" : "es");
	} else if (users_differ_untrusted(v)) {
		unit_refuse(&d, LAT_UNIT_USERS, "its unit is shared with another user's "
			    "processes, and a user's request changes no unit another user shares");
	} else {
		latency_map(c, value, &k);
		d.value = value;
		d.weight = k.cg_idle ? 0 : latency_shares_to_weight(k.shares);
		if (raises_held_back(v, &d)) {
			d.value = LAT_NONE;
			d.weight = 0;
			unit_refuse(&d, LAT_UNIT_HELD_BACK, "its unit's CPUWeight was set below the "
				    "default by someone else, and the value would raise it");
		}
	}
	*ret = d;
}

/* Whether name is a class's: rqbalance-latN with N a value. */
static bool class_name(const char *name)
{
	static const char prefix[] = "rqbalance-lat";
	char *end;
	long v;

	if (strncmp(name, prefix, sizeof(prefix) - 1) != 0 || !name[sizeof(prefix) - 1])
		return false;
	v = strtol(name + sizeof(prefix) - 1, &end, 10);
	return !*end && v >= LAT_MIN && v <= LAT_MAX;
}

bool latency_cg_movable(const struct lat_conf *c, const char *class_parent, const char *cur)
{
	const char *slash = strrchr(cur, '/');
	size_t plen;

	if (strcmp(cur, "/") == 0)
		return true;
	if (slash && class_name(slash + 1)) {
		/* The parent as the path spells it: "" stands for the top. */
		plen = (size_t)(slash - cur);
		if (strcmp(class_parent, "/") == 0 ? plen == 0
						    : strlen(class_parent) == plen &&
							      strncmp(cur, class_parent, plen) == 0)
			return true;
	}
	for (unsigned i = 0; i < c->nmove_from; i++)
		if (fnmatch(c->move_from[i], cur, FNM_PATHNAME) == 0)
			return true;
	return false;
}

enum lat_cg_verdict latency_cg_decide(const struct lat_cg_view *v)
{
	if (!v->held)
		return v->movable ? LAT_CG_OURS : LAT_CG_PLACED;
	if (strcmp(v->cur, v->held) == 0)
		return LAT_CG_OURS;
	return v->held_before && strcmp(v->cur, v->held_before) == 0 ? LAT_CG_OURS : LAT_CG_MOVED;
}

const char *latency_cg_why(enum lat_cg_verdict verdict)
{
	switch (verdict) {
	case LAT_CG_MOVED:
		return "moved there by someone else: theirs now, only nice, policy and slice are "
		       "rqbalance's";
	case LAT_CG_PLACED:
		return "someone else's cgroup (not the top, a class of rqbalance's, nor one "
		       "[latency] move_from names): left there, only nice, policy and slice are "
		       "rqbalance's";
	default:
		return "";
	}
}
