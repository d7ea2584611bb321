/*
 * Policy: the latency-nice mapping, one table for every caller. Pure: no I/O, no
 * clock; what this kernel has (uclamp, slices) is decided by the actuator, not here.
 */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include "latency.h"
#include "rqbalance.h"

/* The kernel's sched_prio_to_weight[], nice -20 … 19: each step is about 1.25×. */
static const uint32_t nice_weight[40] = {
	88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916,
	9548,  7620,  6100,  4904,  3906,  3121,  2501,  1991,  1586,  1277,
	1024,  820,   655,   526,   423,   335,   272,   215,   172,   137,
	110,   87,    70,    56,    45,    36,    29,    23,    18,    15,
};

uint32_t lat_nice_weight(int nice)
{
	if (nice < LAT_MIN)
		nice = LAT_MIN;
	if (nice > LAT_MAX)
		nice = LAT_MAX;
	return nice_weight[nice - LAT_MIN];
}

uint32_t lat_shares_to_weight(uint32_t shares)
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
 * 1.6 ms × 2^(v/5): every five steps halve or double the slice. -20 gives the
 * kernel's shortest, 0.1 ms; 19 gives about 22 ms. 0 keeps the kernel's default.
 */
static uint64_t slice_ns(int v)
{
	static const uint64_t base_ns = 1600000;
	/* 2^(k/5) for k = 0…4, in thousandths */
	static const uint64_t frac[5] = { 1000, 1149, 1320, 1516, 1741 };
	uint64_t ns;
	int k;

	if (v == 0)
		return 0;
	if (v > 0) {
		k = v;
		ns = (base_ns << (k / 5)) * frac[k % 5] / 1000;
	} else {
		/* 2^(-k/5) = 2^(-ceil) × 2^(rem/5) */
		k = -v;
		int up = (k + 4) / 5, rem = up * 5 - k;
		ns = (base_ns >> up) * frac[rem] / 1000;
	}
	if (ns < LAT_SLICE_MIN_NS)
		ns = LAT_SLICE_MIN_NS;
	if (ns > LAT_SLICE_MAX_NS)
		ns = LAT_SLICE_MAX_NS;
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
	uint32_t w = lat_nice_weight(v);

	if (v >= 0 || !c->boost_cpu_pct || c->boost_cpu_pct >= 100)
		return w;
	cap = 1024ULL * c->boost_cpu_pct / (100 - c->boost_cpu_pct);
	if (cap < 1024)
		cap = 1024;
	return w < cap ? w : (uint32_t)cap;
}

void lat_map(const struct lat_conf *c, int v, struct lat_knobs *ret)
{
	struct lat_knobs k = { .policy = SCHED_OTHER, .uclamp_min = -1, .uclamp_max = -1 };

	if (v < LAT_MIN)
		v = LAT_MIN;
	if (v > LAT_MAX)
		v = LAT_MAX;
	k.slice_ns = slice_ns(v);
	k.shares = weight_for(c, v);
	/*
	 * Weight is what buys latency, in both directions: the nice value's among the
	 * tasks of one group (an autogroup, a unit), the class's across groups.
	 */
	k.nice = v;
	k.use_class = v != 0 && c->class_cgroups;
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

int lat_parse(const char *s, int *ret, const char **ret_reason)
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
