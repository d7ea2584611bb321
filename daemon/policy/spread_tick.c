/*
 * Policy stage: what every rule of a spread tick shares, spread's own and the
 * placement rules' (place*.c): the pins and recent moves, rule (e) as a predicate,
 * and planning a pin or its release (the per-task predicates are inline in
 * spread_int.h). Pure: no I/O.
 * It calls no other policy file, so that the rules above it form no circle.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stddef.h>
#include <string.h>

#include "policy/spread.h"
#include "policy/spread_int.h"
#include "rqbalance.h"
#include "util/cpumask.h"
#include "util/sorted.h"
#include "util/util.h"
#include "testonly.h"

/* ---- the policy's memory: pins and recent moves, sorted by tid ---- */

const struct spread_pin *spread_find_pin(const struct spread_state *st, pid_t tid, uint64_t start_time)
{
	ssize_t i = spread_pin_idx(st, tid, start_time);

	return i < 0 ? NULL : &st->pins[i];
}

int spread_add_pin(struct spread_state *st, const struct spread_pin *p)
{
	size_t i;

	struct spread_pin *pins = util_grow(st->pins, &st->pins_cap, st->npins, sizeof(*pins));

	if (!pins)
		return -ENOMEM;
	st->pins = pins;
	i = util_pid_lower_bound(st->pins, st->npins, sizeof(*st->pins),
				 offsetof(struct spread_pin, tid), p->tid);
	return sorted_insert(st->pins, &st->npins, st->pins_cap, sizeof(*st->pins), i, p) < 0
	       ? -ENOMEM : 0;
}

void spread_del_pin(struct spread_state *st, size_t i)
{
	sorted_remove(st->pins, &st->npins, sizeof(*st->pins), i);
}

bool spread_recently_moved(const struct spread_state *st, pid_t tid, uint64_t start)
{
	size_t i = util_pid_lower_bound(st->recent, st->nrecent, sizeof(*st->recent),
					offsetof(struct spread_recent, tid), tid);

	for (; i < st->nrecent && st->recent[i].tid == tid; i++)
		if (st->recent[i].start_time == start)
			return true;
	return false;
}

int spread_note_move(struct spread_state *st, pid_t tid, uint64_t start, uint64_t now_ns)
{
	size_t i = util_pid_lower_bound(st->recent, st->nrecent, sizeof(*st->recent),
					offsetof(struct spread_recent, tid), tid);

	for (size_t j = i; j < st->nrecent && st->recent[j].tid == tid; j++)
		if (st->recent[j].start_time == start) {
			st->recent[j].moved_ns = now_ns;
			return 0;
		}
	struct spread_recent *rec = util_grow(st->recent, &st->recent_cap, st->nrecent, sizeof(*rec));
	struct spread_recent r = { tid, start, now_ns };

	if (!rec)
		return -ENOMEM;
	st->recent = rec;
	if (sorted_insert(st->recent, &st->nrecent, st->recent_cap, sizeof(r), i, &r) < 0)
		return -ENOMEM;
	st->moves++;
	return 0;
}

/* ---- rule (e) ---- */

static bool cgroup_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);

	while (n > 1 && prefix[n - 1] == '/')
		n--;
	if (strncmp(path, prefix, n) != 0)
		return false;
	return path[n] == '\0' || path[n] == '/' || (n == 1 && prefix[0] == '/');
}

const char *spread_ineligible(const struct snapshot *s, const struct spread_conf *c,
			   const struct snap_task *t)
{
	if (t->flags & SNAP_TASK_KTHREAD)
		return "kernel thread";
	if (t->tgid == s->self_tgid)
		return "rqbalanced itself";
	if (!cpumask_subset(&s->topo->online, &t->allowed))
		return "affinity narrowed";
	for (unsigned i = 0; i < c->nexclude_comms; i++)
		if (fnmatch(c->exclude_comms[i], t->comm, 0) == 0)
			return "excluded comm";
	for (unsigned i = 0; t->cgroup && i < c->nexclude_cgroups; i++)
		if (cgroup_under(t->cgroup, c->exclude_cgroups[i]))
			return "excluded cgroup";
	return NULL;
}

/* ---- planning a pin and its release ---- */

int spread_plan_pin(struct spread_tick *tk, int slot, int dst, const cpu_set_t *mask,
		    enum spread_pin_kind kind, const char *why)
{
	const struct snapshot *s = tk->s;
	struct spread_state *st = tk->st;
	const struct snap_task *t = &s->tasks[st->bucket[slot]];
	int src = tk->tp->cpus[t->cpu].llc;
	struct spread_pin p = { .tid = t->tid, .tgid = t->tgid, .start_time = t->start_time,
			     .from_llc = src, .to_llc = dst, .orig = t->allowed,
			     .since_ns = s->now_ns, .from_cpu = t->cpu, .kind = kind };
	struct plan_action a = { .op = PLAN_PIN, .tid = t->tid, .tgid = t->tgid,
				 .start_time = t->start_time, .from_llc = src, .to_llc = dst,
				 .why = why };

	CPU_AND(&p.mask, mask, &t->allowed);
	a.mask = p.mask;
	memcpy(p.comm, t->comm, sizeof(p.comm));
	memcpy(a.comm, t->comm, sizeof(a.comm));
	if (plan_add(tk->plan, &a) < 0 || spread_add_pin(st, &p) < 0 ||
	    spread_note_move(st, t->tid, t->start_time, s->now_ns) < 0)
		return -ENOMEM;
	st->bucket[slot] = -1;
	if (CPU_ISSET(t->cpu, &p.mask))
		return 0; /* held where it runs: no count changes */
	st->cpu_nr[t->cpu]--;
	st->llc_nr[src]--;
	st->llc_nr[dst]++;
	st->llc_load[src]--;
	st->llc_load[dst]++;
	st->llc_idle[dst]--;
	st->raw_nr[src]--;
	st->raw_nr[dst]++;
	st->raw_idle[dst]--;
	return 0;
}

int spread_plan_unpin(struct spread_tick *tk, size_t i, const char *why)
{
	struct spread_state *st = tk->st;
	const struct spread_pin *p = &st->pins[i];
	struct plan_action a = { .op = PLAN_UNPIN, .tid = p->tid, .tgid = p->tgid,
				 .start_time = p->start_time, .from_llc = p->to_llc,
				 .to_llc = -1, .mask = p->orig, .why = why };

	memcpy(a.comm, p->comm, sizeof(a.comm));
	if (plan_add(tk->plan, &a) < 0 ||
	    spread_note_move(st, p->tid, p->start_time, tk->s->now_ns) < 0)
		return -ENOMEM;
	spread_del_pin(st, i);
	return 0;
}
