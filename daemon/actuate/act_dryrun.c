/*
 * Actuate stage, the dry-run driver: it opens and reads tasks as the Linux driver
 * does, so a dry run logs only writes that would really happen, but every write
 * (affinity, sched_setattr, cgroup files and moves, systemd units) succeeds and does
 * nothing, and it opens no journal. It logs each plan action as one that would be
 * carried out ("dry-run: " and its plan line), and nothing else. It must never change
 * a task, a cgroup, a unit or a file.
 */
#include "actuate/act.h"
#include "util/cpumask.h"
#include "util/log.h"

/* No journal: no lock a real daemon beside the dry run would find taken, no file. */
static int dry_journal(const char *dir, const char *name, struct journal **ret)
{
	(void)dir;
	(void)name;
	*ret = NULL;
	return 0;
}

static int dry_open(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret)
{
	return act_linux_ops.open(tid, tgid, start_time, ret);
}

static int dry_adopt(int pidfd, pid_t tid, uint64_t start_time, struct act_task *ret)
{
	return act_linux_ops.adopt(pidfd, tid, start_time, ret);
}

static int dry_alive(const struct act_task *t)
{
	return act_linux_ops.alive(t);
}

static int dry_who(pid_t tid, struct act_who *ret)
{
	return act_linux_ops.who(tid, ret);
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

/* A run that wrote no mask passed none on: no task inherited one. */
static int dry_offspring(pid_t tgid, uint64_t since,
			 void (*fn)(void *ctx, pid_t tid, pid_t tgid, uint64_t start), void *ctx)
{
	(void)tgid;
	(void)since;
	(void)fn;
	(void)ctx;
	return 0;
}

static int dry_get_attr(pid_t tid, struct rqb_sched_attr *ret)
{
	return act_linux_ops.get_attr(tid, ret);
}

static int dry_set_attr(const struct act_task *t, const struct rqb_sched_attr *a)
{
	(void)t;
	(void)a;
	return 0;
}

static int dry_attach(const char *procs_file, const struct act_task *t)
{
	(void)procs_file;
	(void)t;
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

/* Each action as the plan says it, whatever came of it: what a real run would try. */
static void dry_log_action(const struct plan_action *pa, int r, const char *why)
{
	char line[CPUMASK_STRLEN + PLAN_LINE_MAX];

	(void)r;
	(void)why;
	plan_format(pa, line, sizeof(line));
	log_info("dry-run: %s", line);
}

const struct act_ops act_dryrun_ops = {
	.name = "dry run",
	.journal = dry_journal,
	.open = dry_open,
	.adopt = dry_adopt,
	.alive = dry_alive,
	.who = dry_who,
	.get_affinity = dry_get,
	.set_affinity = dry_set,
	.close = dry_close,
	.offspring = dry_offspring,
	.get_attr = dry_get_attr,
	.set_attr = dry_set_attr,
	.attach = dry_attach,
	.write = dry_write,
	.mkdir = dry_path,
	.rmdir = dry_path,
	.unit_weight = dry_unit_weight,
	.log_action = dry_log_action,
};
