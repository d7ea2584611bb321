/*
 * Actuate stage, latency: the Linux driver of struct latact_ops, the only code that
 * makes the latency actuator's writes (sched_setattr, cgroupfs files, systemd units).
 * It decides nothing: latact's parts say what to write and where.
 */
#include <errno.h>
#include <fcntl.h>
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

static int linux_attach(const char *procs_file, pid_t tid)
{
	char text[16];

	snprintf(text, sizeof(text), "%d", (int)tid);
	return linux_write(procs_file, text);
}

static int linux_mkdir(const char *dir)
{
	return mkdir(dir, 0755) == 0 || errno == EEXIST ? 0 : -errno;
}

static int linux_rmdir(const char *dir)
{
	return rmdir(dir) == 0 ? 0 : -errno;
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
