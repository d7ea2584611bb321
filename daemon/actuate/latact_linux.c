/*
 * Actuate stage, latency: the Linux driver of struct latact_ops, the only code that
 * makes the latency actuator's writes (sched_setattr, cgroupfs files, systemd units).
 * It decides nothing: latact's parts say what to write and where. Groups in the cpu
 * hierarchy libcgroup knows are made, joined and removed through libcgroup; a tree it
 * does not know (a test's) through the files themselves.
 */
#include <errno.h>
#include <fcntl.h>
#include <libcgroup.h>
#include <limits.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuate/cgsd.h"
#include "actuate/latact.h"
#include "util/schedattr.h"

static int linux_set_attr(pid_t tid, const struct rqb_sched_attr *a)
{
	return rqb_sched_setattr(tid, a);
}

static int linux_write(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n, len = (ssize_t)strlen(text);

	if (fd < 0)
		return -errno;
	n = write(fd, text, (size_t)len);
	close(fd);
	if (n < 0)
		return -errno;
	return n == len ? 0 : -EIO;
}

/*
 * dir relative to the cpu hierarchy's mount as libcgroup reads it ("" for its top), or
 * NULL where libcgroup knows no such mount or dir is not below it.
 */
static const char *lcg_rel(const char *dir)
{
	static char mnt[PATH_MAX];
	static int found; /* 0: not asked yet, 1: mnt holds it, -1: none */
	size_t n;

	if (!found) {
		char *m = NULL;

		found = -1;
		if (cgroup_init() == 0 && cgroup_get_subsys_mount_point("cpu", &m) == 0 && m &&
		    snprintf(mnt, sizeof(mnt), "%s", m) < (int)sizeof(mnt))
			found = 1;
		free(m);
	}
	if (found < 0)
		return NULL;
	n = strlen(mnt);
	if (strncmp(dir, mnt, n) != 0 || (dir[n] != '/' && dir[n] != '\0'))
		return NULL;
	while (dir[n] == '/')
		n++;
	return dir + n;
}

/* A libcgroup handle on rel with the cpu controller; NULL without memory. */
static struct cgroup *lcg_new(const char *rel)
{
	struct cgroup *cg = cgroup_new_cgroup(rel);

	if (cg && !cgroup_add_controller(cg, "cpu"))
		cgroup_free(&cg);
	return cg;
}

static int linux_attach(const char *procs_file, pid_t tid)
{
	char dir[PATH_MAX], text[16], *slash;
	const char *rel;
	struct cgroup *cg;
	int r;

	snprintf(dir, sizeof(dir), "%s", procs_file);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	rel = slash ? lcg_rel(dir) : NULL;
	if (!rel) {
		snprintf(text, sizeof(text), "%d", (int)tid);
		return linux_write(procs_file, text);
	}
	if (!(cg = lcg_new(rel)))
		return -ENOMEM;
	r = cgroup_attach_task_pid(cg, tid);
	cgroup_free(&cg);
	if (r == 0)
		return 0;
	if (r == ECGOTHER && cgroup_get_last_errno() == ESRCH)
		return -ESRCH;
	return r == ECGROUPNOTEXIST ? -ENOENT : r == ECGROUPNOTOWNER ? -EPERM : -EIO;
}

static int linux_mkdir(const char *dir)
{
	const char *rel = lcg_rel(dir);
	struct cgroup *cg;
	int r;

	if (!rel)
		return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -errno;
	if (!(cg = lcg_new(rel)))
		return -ENOMEM;
	r = cgroup_create_cgroup(cg, 0);
	cgroup_free(&cg);
	return r == 0 ? 0 : -EIO;
}

static int linux_rmdir(const char *dir)
{
	const char *rel = lcg_rel(dir);
	struct cgroup *cg;
	int r;

	if (!rel)
		return rmdir(dir) == 0 ? 0 : -errno;
	if (!(cg = lcg_new(rel)))
		return -ENOMEM;
	r = cgroup_delete_cgroup(cg, 0);
	cgroup_free(&cg);
	return r == 0 ? 0 : -EIO;
}

static int linux_unit_weight(void *bus, const char *unit, uint64_t w, bool idle, char *err,
			     size_t errlen)
{
	return idle ? cgsd_set_idle(bus, unit, err, errlen)
		    : cgsd_set_weight(bus, unit, w, err, errlen);
}

const struct latact_ops latact_linux_ops = {
	.name = "linux",
	.set_attr = linux_set_attr,
	.attach = linux_attach,
	.write = linux_write,
	.mkdir = linux_mkdir,
	.rmdir = linux_rmdir,
	.unit_weight = linux_unit_weight,
};
