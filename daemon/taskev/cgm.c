/*
 * Task events (taskev/, for the latency manager): who is in a cgroup, and a process's
 * cgroup. It reads cgroupfs and /proc under roots the caller gives, and never writes
 * either.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rqbalance.h"
#include "proc/procfs.h"
#include "taskev/cgm.h"
#include "util/util.h"

/* Parent, real and effective uid from PROC_ROOT/PID/status; -ESRCH when it is gone. */
static int status_of(const char *proc_root, pid_t pid, struct cgm_proc *m)
{
	const unsigned need = PARSE_STATUS_PPID | PARSE_STATUS_RUID | PARSE_STATUS_EUID;
	struct parse_status s;
	int r = procfs_status(proc_root, 0, pid, &s);

	if (r < 0 || ((unsigned)r & need) != need)
		return -ESRCH;
	m->ppid = s.ppid;
	m->ruid = s.ruid;
	m->euid = s.euid;
	return 0;
}

struct members {
	const char *proc_root;
	size_t max, n, cap;
	struct cgm_proc *m;
	bool truncated;
};

static int add_procs(struct members *s, const char *dir)
{
	char path[PATH_MAX], *buf;
	ssize_t r;
	int err = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	buf = malloc(65536);
	if (!buf)
		return -ENOMEM;
	r = util_read_file(path, buf, 65536);
	if (r < 0) {
		free(buf);
		return (int)r;
	}
	for (char *save = NULL, *t = strtok_r(buf, "\n", &save); t && !err;
	     t = strtok_r(NULL, "\n", &save)) {
		struct cgm_proc m = { .pid = (pid_t)atoi(t) };
		struct cgm_proc *arr;

		if (m.pid <= 0 || status_of(s->proc_root, m.pid, &m) < 0)
			continue;
		if (s->n >= s->max) {
			s->truncated = true;
			break;
		}
		arr = util_grow(s->m, &s->cap, s->n, sizeof(*arr));
		if (!arr) {
			err = -ENOMEM;
			break;
		}
		s->m = arr;
		s->m[s->n++] = m;
	}
	free(buf);
	return err;
}

static int walk_members(struct members *s, const char *dir, unsigned depth)
{
	char sub[PATH_MAX];
	struct dirent *de;
	DIR *d;
	int r;

	if (depth > CGM_MAX_DEPTH) {
		s->truncated = true;
		return 0;
	}
	r = add_procs(s, dir);
	if (r < 0 || s->truncated)
		return r;
	d = opendir(dir);
	if (!d)
		return -errno;
	while (r == 0 && !s->truncated && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		r = walk_members(s, sub, depth + 1);
		/* A child cgroup removed meanwhile held nobody. */
		if (r == -ENOENT)
			r = 0;
	}
	closedir(d);
	return r;
}

int cgm_read(const char *mount, const char *path, const char *proc_root, size_t max,
	     struct cgm_proc **ret, size_t *ret_n, bool *ret_truncated)
{
	struct members s = { .proc_root = proc_root, .max = max };
	char dir[PATH_MAX];
	int r;

	snprintf(dir, sizeof(dir), "%s%s", mount, strcmp(path, "/") ? path : "");
	r = walk_members(&s, dir, 0);
	if (r < 0) {
		free(s.m);
		return r;
	}
	*ret = s.m;
	*ret_n = s.n;
	*ret_truncated = s.truncated;
	return 0;
}
