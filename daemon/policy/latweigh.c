/*
 * Policy: a class's weight by the busy tasks it runs (latweigh.h). Pure: the counts
 * come in from the snapshot, the multipliers go out in a plan; no I/O, no clock.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/latweigh.h"

bool latweigh_splits(const char *mode, unsigned major, unsigned minor)
{
	if (strcmp(mode, "unknown") == 0)
		return major < 7 || (major == 7 && minor < 3);
	return strcmp(mode, "smp") == 0;
}

void latweigh_describe(const char *mode, unsigned major, unsigned minor, char *ret,
		       size_t len)
{
	bool unknown = strcmp(mode, "unknown") == 0;

	if (!len)
		return;
	if (latweigh_splits(mode, major, minor) && unknown)
		snprintf(ret, len, "scaled: a class weighs its value's weight times its busy "
			 "tasks, at most one a CPU (Linux %u.%u, before 7.3, splits a group's "
			 "weight among the CPUs it runs on)", major, minor);
	else if (latweigh_splits(mode, major, minor))
		snprintf(ret, len, "scaled: a class weighs its value's weight times its busy "
			 "tasks, at most one a CPU (cgroup_mode %s splits a group's weight among "
			 "the CPUs it runs on)", mode);
	else if (unknown)
		snprintf(ret, len, "not scaled: a class weighs its value's weight (Linux %u.%u "
			 "with cgroup_mode unreadable: taken at 7.3's default, concur, which "
			 "weighs each task by itself)", major, minor);
	else
		snprintf(ret, len, "not scaled: a class weighs its value's weight (cgroup_mode "
			 "%s does not split a group's weight among the CPUs it runs on)", mode);
}

/* The count a class is weighed for: its busy tasks, at most one a CPU, at least one. */
static unsigned count_of(const struct latweigh_in *in, int i)
{
	unsigned n = in->busy[i];

	if (!in->splits)
		return 1;
	if (n > in->cpus[i])
		n = in->cpus[i];
	return n ? n : 1;
}

/* The multiplier for class i after a tick that counts n (the hold, latweigh.h). */
static unsigned follow(struct latweigh_state *st, int i, unsigned n, uint64_t now_ns)
{
	unsigned k = st->k[i] ? st->k[i] : 1;

	if (n >= k) {
		st->low_since_ns[i] = 0;
		return n;
	}
	if (!st->low_since_ns[i]) {
		/* now_ns may be 0 (a replay without times): one nanosecond on. */
		st->low_since_ns[i] = now_ns ? now_ns : 1;
		st->low_max[i] = n;
		return k;
	}
	if (n > st->low_max[i])
		st->low_max[i] = n;
	if (now_ns - st->low_since_ns[i] < LATWEIGH_HOLD_NS)
		return k;
	st->low_since_ns[i] = 0;
	return st->low_max[i];
}

int latweigh_decide(const struct latweigh_in *in, struct latweigh_state *st, struct plan *ret)
{
	int added = 0;

	for (int i = 0; i < LATWEIGH_NVALUES; i++) {
		unsigned was = st->k[i] ? st->k[i] : 1;
		unsigned k = in->splits ? follow(st, i, count_of(in, i), in->now_ns) : 1;
		struct plan_action a = { .op = PLAN_LAT_CLASS, .value = i + LAT_MIN, .class_k = k,
					 .from_llc = -1, .to_llc = -1 };

		if (!in->splits)
			st->low_since_ns[i] = 0;
		if (k == was) {
			st->k[i] = k;
			continue;
		}
		if (plan_add(ret, &a) < 0)
			return -ENOMEM;
		st->k[i] = k;
		added++;
	}
	return added;
}

uint64_t latweigh_class_weight(const struct lat_conf *c, int v, unsigned k, bool v2)
{
	struct lat_knobs kn;
	uint64_t w;

	lat_map(c, v, &kn);
	w = (uint64_t)kn.shares * (k ? k : 1);
	if (v2) {
		/* As lat_shares_to_weight rounds, without its 32-bit argument. */
		w = (w * 100 + 512) / 1024;
		return w < 1 ? 1 : w > LATWEIGH_V2_MAX ? LATWEIGH_V2_MAX : w;
	}
	return w < 2 ? 2 : w > LATWEIGH_V1_MAX ? LATWEIGH_V1_MAX : w;
}
