/*
 * Actuate stage, latency: a write through a task's number that came back -ESTALE
 * (act.h). The task it was meant for was released before the write ended, so the
 * kernel may have written a task that took the number meanwhile (a fork-per-connection
 * server's new worker, say). That task gets back what it was made with, where it holds
 * exactly what was written and the task it was made from does not; nothing else is
 * touched.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "actuate/latact.h"
#include "actuate/latact_int.h"
#include "actuate/latknob.h"
#include "util/log.h"
#include "util/schedattr.h"

/*
 * What task c passes on to a task made from it: its own policy, nice, slice and clamps,
 * or, where it asked for SCHED_RESET_ON_FORK, what the kernel gives instead (a real-time
 * policy becomes SCHED_OTHER, a negative nice 0, the slice and clamps their defaults).
 */
static int made_with(struct latact *la, const struct act_task *c, struct lat_state *ret)
{
	struct rqb_sched_attr a;
	int r = latact_read(la, c->tid, ret);

	if (r == 0)
		r = la->ops->get_attr(c->tid, &a);
	if (r == 0)
		r = la->ops->alive(c);
	if (r < 0)
		return r;
	if (a.sched_flags & SCHED_FLAG_RESET_ON_FORK)
		latknob_fork_reset(ret);
	return 0;
}

static bool sched_same(const struct lat_state *a, const struct lat_state *b)
{
	return !latknob_differ(a, b);
}

void latact_undo_sched(struct latact *la, const struct act_task *t,
		       const struct lat_state *written)
{
	struct lat_state hs, cs;
	struct act_task h, c;
	char names[64];
	pid_t htgid;
	int r;

	if (act_reuse_find(la->ops, t, false, &h, &htgid, &c) < 0)
		return;
	if (latact_read(la, h.tid, &hs) == 0 && la->ops->alive(&h) == 0 &&
	    sched_same(&hs, written) && made_with(la, &c, &cs) == 0 && !sched_same(&cs, written)) {
		r = latact_write_sched(la, &h, &cs);
		/* The knobs one write carries: every row of the table. */
		latknob_names(latknob_all(), names, sizeof(names));
		if (r == 0)
			log_notice("latency: task %d exited while rqbalance wrote its %s, and task "
				   "%d took its number: given back what it was made with",
				   (int)t->tid, names, (int)h.tid);
		else
			log_warn("latency: task %d exited while rqbalance wrote its %s, and task "
				 "%d took its number: cannot give it back what it was made with: %s",
				 (int)t->tid, names, (int)h.tid, strerror(-r));
	}
	la->ops->close(&h);
	la->ops->close(&c);
}

