/*
 * Actuate stage, latency: the dry-run driver of struct latact_ops. Every write
 * succeeds and does nothing; it logs nothing either (latact_apply_plan logs the plan's
 * latency actions). It must never change a task, a cgroup or a unit.
 */
#include "actuate/latact.h"

static int dry_set_attr(pid_t tid, const struct rqb_sched_attr *a)
{
	(void)tid;
	(void)a;
	return 0;
}

static int dry_attach(const char *procs_file, pid_t tid)
{
	(void)procs_file;
	(void)tid;
	return 0;
}

static int dry_path(const char *path)
{
	(void)path;
	return 0;
}

static int dry_write(const char *path, const char *text)
{
	(void)path;
	(void)text;
	return 0;
}

static int dry_unit_weight(void *bus, const char *unit, uint64_t w, bool idle, char *err,
			   size_t errlen)
{
	(void)bus;
	(void)unit;
	(void)w;
	(void)idle;
	(void)err;
	(void)errlen;
	return 0;
}

const struct latact_ops latact_dryrun_ops = {
	.name = "dry-run",
	.set_attr = dry_set_attr,
	.attach = dry_attach,
	.write = dry_write,
	.mkdir = dry_path,
	.rmdir = dry_path,
	.unit_weight = dry_unit_weight,
};
