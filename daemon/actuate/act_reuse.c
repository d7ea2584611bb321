/*
 * Actuate stage: after a write that named a task by number came back -ESTALE (act.h),
 * the task that took the number and the one it was made from. It writes nothing: the
 * actuator that wrote decides what to give back, through the driver.
 */
#include <errno.h>
#include <stdbool.h>

#include "actuate/act.h"

int act_reuse_find(const struct act_ops *ops, const struct act_task *gone, bool process,
		   struct act_task *ret_holder, pid_t *ret_holder_tgid, struct act_task *ret_creator)
{
	struct act_task h, c;
	struct act_who w, cw;
	pid_t creator;
	int r;

	r = ops->who(gone->tid, &w);
	if (r < 0)
		return r;
	/* Still the task written: nothing else can have been. */
	if (w.start_time == gone->start_time)
		return -ESRCH;
	/*
	 * The kernel copies a thread's scheduling state and cgroup from the thread that
	 * makes it, a process's from its parent's: a thread's maker is not recorded, so
	 * its process's leader stands for it. A write that acts on the whole process asks
	 * for the process's maker.
	 */
	creator = w.tgid != gone->tid && !process ? w.tgid : w.ppid;
	if (creator <= 0 || ops->who(creator, &cw) < 0)
		return -ESRCH;
	r = ops->open(gone->tid, w.tgid, w.start_time, &h);
	if (r < 0)
		return r;
	r = ops->open(creator, cw.tgid, cw.start_time, &c);
	if (r < 0) {
		ops->close(&h);
		return r;
	}
	*ret_holder = h;
	*ret_holder_tgid = w.tgid;
	*ret_creator = c;
	return 0;
}
