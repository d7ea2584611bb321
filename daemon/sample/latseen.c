/*
 * Sample stage: where the tasks with a negative latency-nice value last ran, for
 * latency_apart. A request thread or an audio callback runs in bursts of microseconds
 * now and then: a sample of the run queues seldom catches it runnable, and one that
 * does has seldom seen it use a clock tick of CPU. So each tick looks at up to
 * LATSEEN_LOOKS of them, in turn: its time on a CPU, in nanoseconds, from its
 * schedstat, and where that grew since its last look, the CPU it last ran on from its
 * stat (whose start time must still be the task's). A task is looked at every
 * ceil(n / LATSEEN_LOOKS) ticks, so the cost is bounded however many there are: 64
 * small reads a tick at most, and with up to 3,200 such tasks each is looked at
 * within latency_apart's 5 s at the default tick.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sample/latseen.h"
#include "proc/procfs.h"
#include "util/util.h"

void latseen_init(struct latseen *ls)
{
	memset(ls, 0, sizeof(*ls));
}

void latseen_fini(struct latseen *ls)
{
	free(ls->t);
	latseen_init(ls);
}

/* The new list, keeping what the last looks found of the tasks still in it. */
static int merge(struct latseen *ls, const struct latseen_task *in, size_t n)
{
	struct latseen_task *t = n ? calloc(n, sizeof(*t)) : NULL;
	size_t j = 0;

	if (n && !t)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		t[i] = in[i];
		t[i].looked = false;
		while (j < ls->n && ls->t[j].tid < in[i].tid)
			j++;
		for (size_t k = j; k < ls->n && ls->t[k].tid == in[i].tid; k++)
			if (ls->t[k].start_time == in[i].start_time && ls->t[k].looked) {
				t[i].run_ns = ls->t[k].run_ns;
				t[i].looked = true;
			}
	}
	free(ls->t);
	ls->t = t;
	ls->n = ls->cap = n;
	return 0;
}

/* Looks at task t: its CPU if it ran since the last look, else -1. */
static int look(const char *proc_root, struct latseen_task *t)
{
	struct parse_stat_line st;
	uint64_t ns;
	bool ran;

	if (procfs_run_ns(proc_root, t->tgid, t->tid, &ns) < 0)
		return -1;
	ran = t->looked && ns > t->run_ns;
	t->run_ns = ns;
	t->looked = true;
	if (!ran || procfs_stat(proc_root, t->tgid, t->tid, &st) < 0 ||
	    st.start_time != t->start_time)
		return -1;
	return st.cpu;
}

int latseen_fill(struct latseen *ls, const char *proc_root, const struct latseen_task *in,
		 size_t n, struct snapshot *s)
{
	size_t looks = n < LATSEEN_LOOKS ? n : LATSEEN_LOOKS;
	int r = merge(ls, in, n);

	for (size_t i = 0; i < n && r == 0; i++)
		if (snap_add_lat(s, in[i].tid, in[i].start_time, in[i].value) == -ENOMEM)
			r = -ENOMEM; /* -EINVAL: not a latency task's value, not listed */
	if (r < 0)
		return r;
	for (size_t k = 0; k < looks; k++) {
		struct latseen_task *t = &ls->t[(ls->next + k) % n];
		int cpu = look(proc_root, t);

		if (cpu >= 0)
			snap_lat_ran(s, t->tid, t->start_time, cpu);
	}
	ls->next = n ? (ls->next + looks) % n : 0;
	return 0;
}
