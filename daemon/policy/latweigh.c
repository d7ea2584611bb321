/*
 * Policy: a class's weight by the busy tasks it runs (latweigh.h). Pure: the counts
 * come in from the snapshot, the multipliers go out in a plan; no I/O, no clock.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "policy/latweigh.h"

enum latweigh_kernel latweigh_kernel_of(const char *mode, unsigned major, unsigned minor)
{
	static const struct {
		const char *mode;
		enum latweigh_kernel kind;
	} modes[] = {
		{ "smp", LATWEIGH_SPLIT },  { "concur", LATWEIGH_CONCUR }, { "tasks", LATWEIGH_TASKS },
		{ "max", LATWEIGH_MAX },    { "up", LATWEIGH_WHOLE },
	};

	if (major < 7 || (major == 7 && minor < 3))
		return LATWEIGH_SPLIT;
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (strcmp(mode, modes[i].mode) == 0)
			return modes[i].kind;
	return LATWEIGH_CONCUR;
}

bool latweigh_scales(enum latweigh_kernel kind)
{
	return kind != LATWEIGH_WHOLE;
}

void latweigh_describe(const char *mode, unsigned major, unsigned minor, char *ret,
		       size_t len)
{
	static const char *const how[] = {
		[LATWEIGH_SPLIT] = "splits a group's weight among the CPUs it runs on",
		[LATWEIGH_CONCUR] = "splits a group's weight among the CPUs it runs on and "
				    "multiplies it by its busy tasks, one short, at most the CPUs",
		[LATWEIGH_TASKS] = "splits a group's weight among the CPUs it runs on and "
				   "multiplies it by its busy tasks, one short",
		[LATWEIGH_MAX] = "splits a group's weight among the CPUs it runs on and "
				 "multiplies it by the online CPUs",
	};
	enum latweigh_kernel kind = latweigh_kernel_of(mode, major, minor);
	char why[128];

	if (!len)
		return;
	if (strcmp(mode, "unknown") != 0)
		snprintf(why, sizeof(why), "cgroup_mode %s", mode);
	else if (kind == LATWEIGH_SPLIT)
		snprintf(why, sizeof(why), "Linux %u.%u, before 7.3,", major, minor);
	else
		snprintf(why, sizeof(why), "Linux %u.%u with cgroup_mode unreadable, taken at "
			 "7.3's default concur,", major, minor);
	if (kind == LATWEIGH_WHOLE)
		snprintf(ret, len, "not scaled: a class weighs its value's weight (%s gives a "
			 "group's whole weight on each CPU it runs on)", why);
	else
		snprintf(ret, len, "scaled: a class weighs its value's weight times its busy "
			 "tasks, at most one a CPU, over the kernel's own multiplier (%s %s)",
			 why, how[kind]);
}

/* The count a class is weighed for: its busy tasks, at most one a CPU, at least one. */
static unsigned count_of(const struct latweigh_in *in, int i)
{
	unsigned n = in->busy[i];

	if (n > in->cpus[i])
		n = in->cpus[i];
	return n ? n : 1;
}

/*
 * What the kernel multiplies class i's weight by (latweigh_kernel) when it runs k busy
 * tasks on k CPUs, or n > k tasks on them (k held at the CPUs they may run on): the
 * kernel counts its runnable tasks, n, not the CPUs.
 */
static unsigned kernel_div(const struct latweigh_in *in, int i, unsigned k)
{
	unsigned n = in->busy[i] > k ? in->busy[i] : k;
	unsigned t = n > 1 ? n - 1 : 1;
	unsigned online = in->online ? in->online : 1;

	switch (in->kind) {
	case LATWEIGH_CONCUR:
		return t < online ? t : online;
	case LATWEIGH_TASKS:
		return t;
	case LATWEIGH_MAX:
		return online;
	default:
		return 1;
	}
}

/* The count class i is weighed for after a tick that counts n (the hold, latweigh.h). */
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
	bool scales = latweigh_scales(in->kind);
	int added = 0;

	for (int i = 0; i < LATWEIGH_NVALUES; i++) {
		unsigned was = st->k[i] ? st->k[i] : 1, was_div = st->div[i] ? st->div[i] : 1;
		unsigned k = scales ? follow(st, i, count_of(in, i), in->now_ns) : 1;
		unsigned div = scales ? kernel_div(in, i, k) : 1;
		struct plan_action a = { .op = PLAN_LAT_CLASS, .value = i + LAT_MIN, .class_k = k,
					 .class_div = div, .from_llc = -1, .to_llc = -1 };

		if (!scales)
			st->low_since_ns[i] = 0;
		if (k == was && div == was_div) {
			st->k[i] = k;
			st->div[i] = div;
			continue;
		}
		if (plan_add(ret, &a) < 0)
			return -ENOMEM;
		st->k[i] = k;
		st->div[i] = div;
		added++;
	}
	return added;
}

uint64_t latweigh_class_weight(const struct lat_conf *c, int v, unsigned k, unsigned div,
			       bool v2)
{
	struct lat_knobs kn;
	uint64_t w, d = div ? div : 1;

	latency_map(c, v, &kn);
	w = (uint64_t)kn.shares * (k ? k : 1);
	if (v2) {
		/* As latency_shares_to_weight rounds, without its 32-bit argument. */
		w = (w * 100 + 512 * d) / (1024 * d);
		return w < 1 ? 1 : w > LATWEIGH_V2_MAX ? LATWEIGH_V2_MAX : w;
	}
	w = (w + d / 2) / d;
	return w < 2 ? 2 : w > LATWEIGH_V1_MAX ? LATWEIGH_V1_MAX : w;
}
