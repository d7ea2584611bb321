/*
 * Actuate stage, the dry-run driver: it opens and reads tasks as the Linux driver
 * does, so a dry run logs only writes that would really happen, but its write does
 * nothing. It must never change a task.
 */
#include "actuate/act.h"

static int dry_open(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret)
{
	return act_linux_ops.open(tid, tgid, start_time, ret);
}

static int dry_alive(const struct act_task *t)
{
	return act_linux_ops.alive(t);
}

static int dry_get(const struct act_task *t, cpu_set_t *ret)
{
	return act_linux_ops.get_affinity(t, ret);
}

static int dry_set(const struct act_task *t, const cpu_set_t *mask)
{
	(void)t;
	(void)mask;
	return 0;
}

static void dry_close(struct act_task *t)
{
	act_linux_ops.close(t);
}

static int dry_offspring(pid_t tgid, uint64_t since,
			 void (*fn)(void *ctx, pid_t tid, pid_t tgid, uint64_t start), void *ctx)
{
	return act_linux_ops.offspring(tgid, since, fn, ctx);
}

const struct act_ops act_dryrun_ops = {
	.name = "dry-run",
	.open = dry_open,
	.alive = dry_alive,
	.get_affinity = dry_get,
	.set_affinity = dry_set,
	.close = dry_close,
	.offspring = dry_offspring,
};
