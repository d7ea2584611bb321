/*
 * The daemon's own nice and slice, from the latency-nice mapping (selfsched.h).
 */
#include <dirent.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/selfsched.h"
#include "util/schedattr.h"

int selfsched_apply(const struct lat_conf *lc, int v, bool slices, char *desc, size_t len)
{
	struct rqb_sched_attr a = { .size = sizeof(a), .sched_policy = SCHED_OTHER,
				    .sched_flags = SCHED_FLAG_RESET_ON_FORK };
	struct lat_knobs k;
	struct dirent *de;
	DIR *d;
	int r = 0;

	latency_map(lc, v, &k);
	a.sched_nice = k.nice;
	a.sched_runtime = slices ? k.slice_ns : 0;
	if (slices && k.slice_ns)
		snprintf(desc, len, "nice %d, slice %.2f ms", k.nice, (double)k.slice_ns / 1e6);
	else if (slices)
		snprintf(desc, len, "nice %d, the kernel's default slice", k.nice);
	else
		snprintf(desc, len, "nice %d", k.nice);
	/* Every thread: a thread's scheduling is its own, and threads may exist already. */
	d = opendir("/proc/self/task");
	if (!d)
		return rqb_sched_setattr(0, &a);
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);
		int e;

		if (tid <= 0)
			continue;
		e = rqb_sched_setattr(tid, &a);
		if (e < 0 && e != -ESRCH && r == 0)
			r = e;
	}
	closedir(d);
	return r;
}
