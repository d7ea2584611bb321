/*
 * Actuate stage, latency: the one way a plan's latency actions reach the system. Each
 * action goes to the latency actuator's task, cgroup or unit operation, in the plan's
 * order; it decides nothing of its own but that a process refused at its first
 * thread is refused whole.
 */
#include <errno.h>
#include <stdlib.h>

#include "actuate/latact.h"

_Static_assert(PLAN_PATH_MAX == LAT_PATH_MAX, "a plan's cgroup path is a latency path");

/*
 * The entries the SETs inherit from, copied before any action: an action may move the
 * actuator's entries, and one task's new value must not change what another inherits.
 */
static struct lat_entry *froms_of(const struct latact *la, const struct plan *p,
				  bool **ret_found)
{
	struct lat_entry *fr = calloc(p->n ? p->n : 1, sizeof(*fr));
	bool *found = calloc(p->n ? p->n : 1, sizeof(*found));

	if (!fr || !found) {
		free(fr);
		free(found);
		return NULL;
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct lat_entry *e;

		if (p->a[i].op != PLAN_LAT_SET || p->a[i].from_tid <= 0)
			continue;
		e = latact_find(la, p->a[i].from_tid);
		if (e) {
			fr[i] = *e;
			found[i] = true;
		}
	}
	*ret_found = found;
	return fr;
}

/* A process given a value whole whose first thread is gone or refused is left whole. */
static bool refuses_process(const struct plan_action *pa, int r)
{
	return pa->op == PLAN_LAT_SET && pa->whole && pa->tid == pa->tgid &&
	       (r == -ESRCH || r == -EPERM);
}

int latact_apply_plan(struct latact *la, const struct plan *p, struct latact_result *ret)
{
	bool *found = NULL;
	struct lat_entry *fr = froms_of(la, p, &found);
	pid_t refused = 0;
	int done = 0;

	if (!fr)
		return -ENOMEM;
	if (la->on_plan)
		la->on_plan(la->on_plan_ctx, p);
	for (size_t i = 0; i < p->n; i++) {
		const struct plan_action *pa = &p->a[i];
		struct latact_result res = { .r = -ECANCELED };

		if (pa->op == PLAN_LAT_SET && pa->whole && refused && pa->tgid == refused) {
			if (ret)
				ret[i] = res;
			continue;
		}
		switch (pa->op) {
		case PLAN_LAT_SET:
			res.r = latact_task(la, &(struct lat_req){ .tid = pa->tid, .tgid = pa->tgid,
								   .start_time = pa->start_time,
								   .value = pa->value,
								   .source = pa->source,
								   .from_tid = pa->from_tid,
								   .async_move = pa->async_move,
								   .no_inherit = pa->no_inherit },
					    found[i] ? &fr[i] : NULL, &res.why);
			break;
		case PLAN_LAT_RESET:
			res.r = latact_task_reset(la, pa->tid, pa->start_time);
			break;
		case PLAN_LAT_CG_SET:
			res.r = latact_cgroup(la, pa->path, pa->value, pa->source, &res.why);
			break;
		case PLAN_LAT_CG_RESET:
			res.r = latact_cgroup_reset(la, pa->path);
			break;
		case PLAN_LAT_UNIT_SET:
			res.r = latact_unit(la, pa->path, pa->value, pa->source, &res.why);
			break;
		case PLAN_LAT_UNIT_RESET:
			res.r = latact_unit_release(la, pa->path);
			break;
		case PLAN_LAT_CLASS:
			res.r = latact_class_scale(la, pa->value, pa->class_k, pa->class_div);
			break;
		default:
			res.r = -EINVAL; /* a pin: the affinity actuator's (act_apply) */
		}
		la->ops->log_action(pa, res.r, res.why);
		if (refuses_process(pa, res.r))
			refused = pa->tgid;
		done += res.r == 0;
		if (ret)
			ret[i] = res;
	}
	free(fr);
	free(found);
	return done;
}
