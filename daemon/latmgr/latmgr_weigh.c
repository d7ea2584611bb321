/*
 * Latency management: reads, from the tick's snapshot, the busy tasks each class cgroup
 * runs and where they may run, for the policy that weighs the classes (latweigh.c),
 * and hands its plan to the actuator. It decides nothing itself.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latmgr/latmgr_int.h"
#include "snapshot/snap.h"
#include "util/log.h"

/*
 * The class a runnable task of the snapshot is in by rqbalance's move, as its entry
 * says; -1: none. One that got no CPU since the last tick counts too: waiting, it
 * still weighs in its group's load, and a class of low weight whose tasks wait most
 * of the time (a positive value's) would otherwise be weighed for fewer tasks than it
 * runs, and so wait longer still.
 */
static int class_of(const struct latmgr *m, const struct snap_task *t)
{
	const struct lat_entry *e;

	if (t->flags & SNAP_TASK_KTHREAD)
		return -1;
	e = latact_find(m->la, t->tid);
	if (!e || e->task.start_time != t->start_time || e->cg != LAT_CG_OURS ||
	    !e->set.cgroup[0] || e->value == 0 || e->value < LAT_MIN || e->value > LAT_MAX)
		return -1;
	return e->value - LAT_MIN;
}

static void count(const struct latmgr *m, const struct snapshot *s, struct latweigh_in *in)
{
	cpu_set_t may[LATWEIGH_NVALUES];

	for (int i = 0; i < LATWEIGH_NVALUES; i++)
		CPU_ZERO(&may[i]);
	for (size_t j = 0; j < s->ntasks; j++) {
		int i = class_of(m, &s->tasks[j]);

		if (i < 0)
			continue;
		in->busy[i]++;
		CPU_OR(&may[i], &may[i], &s->tasks[j].allowed);
	}
	in->online = s->topo ? (unsigned)CPU_COUNT(&s->topo->online) : 1;
	for (int i = 0; i < LATWEIGH_NVALUES; i++) {
		if (!in->busy[i])
			continue;
		if (s->topo)
			CPU_AND(&may[i], &may[i], &s->topo->online);
		in->cpus[i] = (unsigned)CPU_COUNT(&may[i]);
	}
}

void latmgr_weigh(struct latmgr *m, const struct snapshot *s, enum latweigh_kernel kind,
		  const char *mode)
{
	struct latweigh_in in = { .now_ns = s->now_ns, .kind = kind };
	bool scales = latweigh_scales(kind);
	struct plan pl;

	if (!latmgr_class_cgroups_on(m))
		return;
	if (kind != m->weigh_kind || strcmp(mode, m->weigh_mode) != 0)
		log_info("latency: %s (cgroup_mode %s)",
			 scales ? "the kernel splits a class's weight among the CPUs it runs on: "
				  "each class weighs its value's weight times its busy tasks, "
				  "at most one a CPU, over the kernel's own multiplier"
				: "the kernel gives a class its whole weight on each CPU it runs "
				  "on: classes keep their value's weight",
			 mode);
	m->weigh_kind = kind;
	snprintf(m->weigh_mode, sizeof(m->weigh_mode), "%s", mode);
	if (scales)
		count(m, s, &in);
	plan_init(&pl);
	if (latweigh_decide(&in, &m->weigh, &pl) > 0)
		free(latmgr_apply(m, &pl));
	plan_fini(&pl);
}
