/*
 * Actuate stage, latency: the only code that changes a task's policy, slice, uclamp
 * or class cgroup, or a cgroup's weight. It journals before it writes and restores a
 * knob only while it still holds what rqbalance wrote; it never acts on a task whose
 * identity (pid and start time) it has not checked.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libcgroup.h>
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuate/cgsd.h"
#include "actuate/journal.h"
#include "actuate/latact.h"
#include "rqbalance.h"
#include "sample/parse.h"
#include "util/log.h"
#include "util/schedattr.h"
#include "util/util.h"

#define CLASS_PREFIX "rqbalance-lat"
#define JOURNAL_HEAD "# rqbalance latency journal v1\n"
/* Compact the journal when it holds this many more lines than live entries (as act.c). */
#define JOURNAL_SLACK 1024

const char *latact_policy_name(int policy)
{
	switch (policy) {
	case SCHED_OTHER: return "other";
	case SCHED_FIFO: return "fifo";
	case SCHED_RR: return "rr";
	case SCHED_BATCH: return "batch";
	case SCHED_IDLE: return "idle";
	case 6: return "deadline";
	default: return "?";
	}
}

static bool policy_is_rt(int policy)
{
	return policy == SCHED_FIFO || policy == SCHED_RR || policy == 6;
}

/* ---- the journal's path fields ---- */

/*
 * A cgroup or unit path as one journal field: a name may hold any byte but '/' and
 * NUL, blanks and newlines included, so bytes up to space, DEL and '\\' are written as
 * \xHH (the replay format's escape); "" is "-". ret must hold LAT_ESC_MAX bytes.
 */
static void escape_field(const char *s, char *ret, size_t size)
{
	size_t n = 0;

	if (!s[0]) {
		snprintf(ret, size, "-");
		return;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p && n + 5 <= size; p++) {
		if (*p <= 0x20 || *p == 0x7f || *p == '\\')
			n += (size_t)snprintf(ret + n, size - n, "\\x%02x", *p);
		else
			ret[n++] = (char)*p;
	}
	ret[n] = '\0';
}

/* The reverse: -EINVAL for a bad escape or an escaped NUL, -ENAMETOOLONG. */
static int unescape_field(const char *in, char *ret, size_t size)
{
	size_t n = 0;

	if (strcmp(in, "-") == 0) {
		ret[0] = '\0';
		return 0;
	}
	for (const char *p = in; *p; p++) {
		char c = *p;

		if (c == '\\') {
			unsigned v;

			if (p[1] != 'x' || !isxdigit((unsigned char)p[2]) ||
			    !isxdigit((unsigned char)p[3]) || sscanf(p + 2, "%2x", &v) != 1 || !v)
				return -EINVAL;
			c = (char)v;
			p += 3;
		}
		if (n + 1 >= size)
			return -ENAMETOOLONG;
		ret[n++] = c;
	}
	ret[n] = '\0';
	return 0;
}

/* ---- small file helpers, rooted at paths the caller built ---- */

static int write_small(const char *path, const char *text)
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

static int read_u64(const char *path, uint64_t *ret)
{
	char buf[64], *end;
	ssize_t r = util_read_file(path, buf, sizeof(buf));

	if (r < 0)
		return (int)r;
	errno = 0;
	*ret = strtoull(buf, &end, 10);
	return errno || end == buf ? -EINVAL : 0;
}

/* ---- the class hierarchy ---- */

/* The task's cgroup in the class hierarchy, from /proc/TGID/task/TID/cgroup. */
static int read_task_cgroup(const struct latact *la, pid_t tid, char *ret, size_t size)
{
	char path[PATH_MAX], buf[4096];
	int r;

	ret[0] = '\0';
	if (!la->cls.on)
		return 0;
	snprintf(path, sizeof(path), "%s/%d/cgroup", la->proc_root, (int)tid);
	r = util_read_file(path, buf, sizeof(buf));
	if (r < 0)
		return r;
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		char *ctl = strchr(line, ':'), *p;

		if (!ctl || !(p = strchr(ctl + 1, ':')))
			continue;
		*p++ = '\0';
		ctl++;
		if (la->cls.v2 ? strcmp(ctl, "") == 0 : util_word_in(ctl, "cpu", ',')) {
			/* Cut short, it would name another group: the task would be given back there. */
			if (snprintf(ret, size, "%s", p) >= (int)size) {
				ret[0] = '\0';
				return -ENAMETOOLONG;
			}
			return 0;
		}
	}
	return -ENOENT;
}

static int cg_attach(const char *rel, pid_t tid)
{
	struct cgroup *cg = cgroup_new_cgroup(rel);
	int r;

	if (!cg)
		return -ENOMEM;
	if (!cgroup_add_controller(cg, "cpu")) {
		cgroup_free(&cg);
		return -ENOMEM;
	}
	r = cgroup_attach_task_pid(cg, tid);
	cgroup_free(&cg);
	if (r == 0)
		return 0;
	if (r == ECGOTHER && cgroup_get_last_errno() == ESRCH)
		return -ESRCH;
	return r == ECGROUPNOTEXIST ? -ENOENT : r == ECGROUPNOTOWNER ? -EPERM : -EIO;
}

static int cg_create(const char *rel, const char *key, uint64_t value)
{
	struct cgroup *cg = cgroup_new_cgroup(rel);
	struct cgroup_controller *c;
	int r;

	if (!cg)
		return -ENOMEM;
	c = cgroup_add_controller(cg, "cpu");
	if (!c || (key && cgroup_add_value_uint64(c, key, value) != 0)) {
		cgroup_free(&cg);
		return -ENOMEM;
	}
	r = cgroup_create_cgroup(cg, 0);
	cgroup_free(&cg);
	return r == 0 ? 0 : -EIO;
}

static void cg_delete(const char *rel)
{
	struct cgroup *cg = cgroup_new_cgroup(rel);

	if (!cg)
		return;
	if (cgroup_add_controller(cg, "cpu"))
		cgroup_delete_cgroup(cg, 0);
	cgroup_free(&cg);
}

/* A class's path relative to the mount: PARENT/rqbalance-latN, or rqbalance-latN at the top. */
static void class_rel(const struct latact *la, int v, char *ret, size_t size)
{
	snprintf(ret, size, "%s%s" CLASS_PREFIX "%d", la->cls.root, la->cls.root[0] ? "/" : "", v);
}

static void class_path(const struct latact *la, int v, char *ret, size_t size)
{
	char rel[LAT_PATH_MAX];

	class_rel(la, v, rel, sizeof(rel));
	snprintf(ret, size, "/%s", rel);
}

/*
 * No CFS quota on a class: one throttles a busy task for the rest of each period once
 * it is used up, tens of milliseconds of stall (a -20 task capped at half the machine
 * had a p99.9 of 49.6 ms against 9.5 ms with no daemon). A class left by an older
 * rqbalance with one is freed of it.
 */
static int class_unthrottle(const struct latact *la, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s/%s", la->cls.mount, rel,
		 la->cls.v2 ? "cpu.max" : "cpu.cfs_quota_us");
	return write_small(path, la->cls.v2 ? "max" : "-1");
}

/*
 * RT group scheduling (v1 cpu.rt_runtime_us): a new group has no real-time runtime, so
 * a task moved into a class could no longer make a thread real-time (sched_setscheduler
 * EPERM), as audio servers and latency probes do. The kernel lets a group's children
 * share at most its own runtime: the classes share, in equal parts, what the groups
 * beside them leave free of their parent's (all of it, where they are alone).
 */
static uint64_t rt_of(const char *dir)
{
	char path[PATH_MAX];
	uint64_t v = 0;

	snprintf(path, sizeof(path), "%s/cpu.rt_runtime_us", dir);
	return read_u64(path, &v) == 0 ? v : 0;
}

static bool is_our_class(const struct latact *la, const char *name)
{
	char *end;
	long v;

	if (strncmp(name, CLASS_PREFIX, strlen(CLASS_PREFIX)) != 0)
		return false;
	v = strtol(name + strlen(CLASS_PREFIX), &end, 10);
	return !*end && v >= LAT_MIN && v <= LAT_MAX && la->cls.made[v - LAT_MIN];
}

/* The runtime in dir's own not given to its children, ours left out when skip_ours. */
static uint64_t rt_free(const struct latact *la, const char *dir, bool skip_ours)
{
	uint64_t total = rt_of(dir), used = 0;
	char sub[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    (skip_ours && is_our_class(la, de->d_name)))
			continue;
		snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name);
		used += rt_of(sub);
	}
	closedir(d);
	return used < total ? total - used : 0;
}

static void classes_share_rt(struct latact *la)
{
	char dir[PATH_MAX], rel[LAT_PATH_MAX], path[PATH_MAX], text[32];
	uint64_t share;
	unsigned n = 0;

	if (!la->cls.rt)
		return;
	snprintf(dir, sizeof(dir), "%s%s%s", la->cls.mount, la->cls.root[0] ? "/" : "", la->cls.root);
	for (int v = LAT_MIN; v <= LAT_MAX; v++)
		n += la->cls.made[v - LAT_MIN];
	if (!n)
		return;
	share = rt_free(la, dir, true) / n;
	snprintf(text, sizeof(text), "%" PRIu64, share);
	/* Those over the new share first: the kernel refuses children over their parent. */
	for (int pass = 0; pass < 2; pass++)
		for (int v = LAT_MIN; v <= LAT_MAX; v++) {
			if (!la->cls.made[v - LAT_MIN])
				continue;
			class_rel(la, v, rel, sizeof(rel));
			snprintf(path, sizeof(path), "%s/%s", la->cls.mount, rel);
			if ((pass == 0) != (rt_of(path) > share))
				continue;
			snprintf(path, sizeof(path), "%s/%s/cpu.rt_runtime_us", la->cls.mount, rel);
			if (write_small(path, text) < 0)
				log_warn("latency: class cgroup \"%s\": cannot set cpu.rt_runtime_us %s",
					 rel, text);
		}
	log_debug("latency: %u class cgroup%s share %" PRIu64 " us of real-time runtime each", n,
		  n == 1 ? "" : "s", share);
}

/* The weight of class v under the mapping in force, as the hierarchy spells it. */
static void class_weight(const struct latact *la, int v, const char **ret_key, uint64_t *ret_w)
{
	struct lat_knobs k;

	lat_map(&la->lc, v, &k);
	*ret_key = la->cls.v2 ? "cpu.weight" : "cpu.shares";
	*ret_w = la->cls.v2 ? lat_shares_to_weight(k.shares) : k.shares;
}

/*
 * The class group for v, made on first use with the kernel's weight for nice v. It
 * sits beside the groups it competes with: a weight only counts among siblings.
 */
static int class_ensure(struct latact *la, int v, char *ret, size_t size)
{
	char rel[LAT_PATH_MAX], path[PATH_MAX];
	const char *key;
	struct stat st;
	uint64_t w;
	int r;

	class_path(la, v, ret, size);
	class_rel(la, v, rel, sizeof(rel));
	if (la->cls.made[v - LAT_MIN]) {
		snprintf(path, sizeof(path), "%s/%s", la->cls.mount, rel);
		if (stat(path, &st) == 0)
			return 0;
		/* Emptied by its tasks' exits, then removed by someone else. */
		log_warn("latency: class cgroup \"%s\" was removed behind rqbalance: made anew", rel);
		la->cls.made[v - LAT_MIN] = false;
	}
	class_weight(la, v, &key, &w);
	r = cg_create(rel, key, w);
	if (r == 0)
		r = class_unthrottle(la, rel);
	if (r < 0) {
		log_warn("latency: cannot create class cgroup \"%s\": %s", rel, strerror(-r));
		return r;
	}
	la->cls.made[v - LAT_MIN] = true;
	classes_share_rt(la);
	return 0;
}

static void root_rt(struct latact *la, const char *path)
{
	char file[PATH_MAX], text[32];

	snprintf(text, sizeof(text), "%" PRIu64, rt_free(la, la->cls.mount, false) / 2);
	snprintf(file, sizeof(file), "%s/cpu.rt_runtime_us", path);
	if (write_small(file, text) < 0)
		log_warn("latency: %s: cannot set cpu.rt_runtime_us %s", path, text);
}

/* The classes' parent, when it is not the top; cgroup2 needs cpu enabled down to it. */
static int classes_root_setup(struct latact *la)
{
	char path[PATH_MAX];
	struct stat st;
	int r;

	snprintf(path, sizeof(path), "%s/cpu.rt_runtime_us", la->cls.mount);
	la->cls.rt = !la->cls.v2 && access(path, F_OK) == 0;
	if (la->cls.root[0]) {
		snprintf(path, sizeof(path), "%s/%s", la->cls.mount, la->cls.root);
		la->cls.made_root = stat(path, &st) < 0;
		r = cg_create(la->cls.root, NULL, 0);
		if (r < 0)
			return r;
		/* A parent of ours takes half of what the top has free, for its classes. */
		if (la->cls.rt && la->cls.made_root)
			root_rt(la, path);
	}
	if (!la->cls.v2)
		return 0;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", la->cls.mount);
	r = write_small(path, "+cpu");
	if (r == 0 && la->cls.root[0]) {
		snprintf(path, sizeof(path), "%s/%s/cgroup.subtree_control", la->cls.mount,
			 la->cls.root);
		r = write_small(path, "+cpu");
	}
	return r;
}

/* Finds the cpu hierarchy: v1 cpu controller first, else cgroup2 with cpu available. */
static void classes_find(struct latact *la)
{
	char buf[65536], v1[PATH_MAX] = "", v2[PATH_MAX] = "", path[PATH_MAX];
	const char *mounts = la->o.mounts_file && *la->o.mounts_file ? la->o.mounts_file :
										 "/proc/self/mounts";
	int r;

	la->cls.on = false;
	if (util_read_file(mounts, buf, sizeof(buf)) < 0)
		return;
	parse_mounts(buf, v1, v2, sizeof(v1));
	if (v1[0]) {
		snprintf(la->cls.mount, sizeof(la->cls.mount), "%s", v1);
	} else if (v2[0]) {
		snprintf(path, sizeof(path), "%s/cgroup.controllers", v2);
		if (util_read_file(path, buf, sizeof(buf)) < 0 || !util_word_in(buf, "cpu", ' '))
			goto none;
		snprintf(la->cls.mount, sizeof(la->cls.mount), "%s", v2);
		la->cls.v2 = true;
	} else {
		goto none;
	}
	/* The mount serves cgroup targets too; the classes only where asked for. */
	if (!la->o.class_cgroups)
		return;
	if (cgroup_init() != 0) {
		log_warn("latency: libcgroup cannot read the mounts: class cgroups off");
		return;
	}
	if (la->o.dry_run) {
		log_info("latency: dry run: no class cgroups are made");
		return;
	}
	r = classes_root_setup(la);
	if (r < 0) {
		log_warn("latency: cannot set up class cgroups in %s/%s: %s; negative values "
			 "only shorten the slice", la->cls.mount, la->cls.root, strerror(-r));
		return;
	}
	la->cls.on = true;
	log_info("latency: class cgroups in %s%s%s (%s)", la->cls.mount,
		 la->cls.root[0] ? "/" : "", la->cls.root, la->cls.v2 ? "cgroup2" : "v1 cpu");
	return;
none:
	log_warn("latency: no cpu controller mounted: negative values only shorten the slice");
}

/* Moves every task left in a class group to the hierarchy's root, then removes it. */
static void classes_remove(struct latact *la)
{
	char path[PATH_MAX], rel[LAT_PATH_MAX], buf[65536];

	if (!la->cls.on)
		return;
	for (int v = LAT_MIN; v <= LAT_MAX; v++) {
		if (!la->cls.made[v - LAT_MIN])
			continue;
		class_rel(la, v, rel, sizeof(rel));
		snprintf(path, sizeof(path), "%s/%s/%s", la->cls.mount, rel,
			 la->cls.v2 ? "cgroup.procs" : "tasks");
		if (util_read_file(path, buf, sizeof(buf)) > 0)
			for (char *t = strtok(buf, "\n"); t; t = strtok(NULL, "\n"))
				if (cg_attach("/", (pid_t)atoi(t)) == 0)
					log_info("latency: task %s left in %s moved to /", t, rel);
		cg_delete(rel);
		la->cls.made[v - LAT_MIN] = false;
	}
	if (la->cls.made_root)
		cg_delete(la->cls.root);
}

/* ---- whose a task's cgroup is ---- */

/* A cgroup file's first line, blanks cut; "" where there is none. */
static void read_line(const char *dir, const char *name, char *ret, size_t size)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (util_read_file(path, ret, size) < 0)
		ret[0] = '\0';
	ret[strcspn(ret, "\n")] = '\0';
}

/* Whether dir caps its tasks' CPU: a CFS quota, or a cpuset other than the top's. */
static bool dir_limits(const struct latact *la, const char *dir, const char *top_cpus)
{
	char buf[256];

	read_line(dir, la->cls.v2 ? "cpu.max" : "cpu.cfs_quota_us", buf, sizeof(buf));
	if (buf[0] && (la->cls.v2 ? strncmp(buf, "max", 3) != 0 : strcmp(buf, "-1") != 0))
		return true;
	read_line(dir, "cpuset.cpus", buf, sizeof(buf));
	return buf[0] && top_cpus[0] && strcmp(buf, top_cpus) != 0;
}

/*
 * Whether cgroup cg (as /proc/PID/cgroup names it), or a parent below the top, caps
 * its tasks' CPU; rqbalance's own classes set no cap. A cpuset counts only where it
 * shares the hierarchy rqbalance moves tasks in (cgroup2, or v1 mounted with cpu).
 */
static bool cg_limits_cpu(const struct latact *la, const char *cg)
{
	char top_cpus[256], rel[LAT_PATH_MAX], dir[PATH_MAX], *slash;

	read_line(la->cls.mount, "cpuset.cpus.effective", top_cpus, sizeof(top_cpus));
	if (!top_cpus[0])
		read_line(la->cls.mount, "cpuset.cpus", top_cpus, sizeof(top_cpus));
	snprintf(rel, sizeof(rel), "%s", cg);
	while (rel[0] == '/' && rel[1]) {
		slash = strrchr(rel, '/');
		snprintf(dir, sizeof(dir), "%s%s", la->cls.mount, rel);
		if (!is_our_class(la, slash + 1) && dir_limits(la, dir, top_cpus))
			return true;
		*slash = '\0';
		if (slash == rel)
			break;
	}
	return false;
}

/* ---- tasks ---- */

int latact_read(const struct latact *la, pid_t tid, struct lat_state *ret)
{
	struct rqb_sched_attr a;
	struct lat_state s = { .umin = -1, .umax = -1 };
	int r = rqb_sched_getattr(tid, &a);

	if (r < 0)
		return r;
	s.policy = (int)a.sched_policy;
	s.nice = a.sched_nice;
	/* The kernel reports its default as a number: 0 says "the default" and follows it. */
	s.slice_ns = la->o.slices && a.sched_runtime != la->default_slice_ns ? a.sched_runtime : 0;
	if (la->o.uclamp) {
		s.umin = (int)a.sched_util_min;
		s.umax = (int)a.sched_util_max;
	}
	r = read_task_cgroup(la, tid, s.cgroup, sizeof(s.cgroup));
	if (r < 0)
		return r == -ENOENT ? -ESRCH : r;
	*ret = s;
	return 0;
}

static bool sched_differs(const struct lat_state *a, const struct lat_state *b)
{
	return a->policy != b->policy || a->nice != b->nice || a->slice_ns != b->slice_ns ||
	       a->umin != b->umin || a->umax != b->umax;
}

/* Writes policy, nice, slice and uclamp of want in one call. */
static int write_sched(const struct latact *la, pid_t tid, const struct lat_state *want)
{
	struct rqb_sched_attr a = { .size = sizeof(a) };

	a.sched_policy = (uint32_t)want->policy;
	a.sched_nice = want->nice;
	a.sched_runtime = la->o.slices ? want->slice_ns : 0;
	if (la->o.uclamp && want->umin >= 0 && want->umax >= 0) {
		a.sched_flags |= SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX;
		a.sched_util_min = (uint32_t)want->umin;
		a.sched_util_max = (uint32_t)want->umax;
	}
	return rqb_sched_setattr(tid, &a);
}

/* What value v asks of a task that had prev. */
static void want_for(struct latact *la, int v, pid_t tid, pid_t tgid,
		     const struct lat_state *prev, struct lat_state *ret)
{
	struct lat_knobs k;

	lat_map(&la->lc, v, &k);
	*ret = *prev;
	ret->nice = k.nice;
	if (v < 0)
		ret->policy = SCHED_OTHER;
	else if (v > 0 && k.policy != SCHED_OTHER)
		ret->policy = k.policy;
	if (k.slice_ns && la->o.slices)
		ret->slice_ns = k.slice_ns;
	if (la->o.uclamp) {
		if (k.uclamp_min >= 0)
			ret->umin = k.uclamp_min;
		if (k.uclamp_max >= 0)
			ret->umax = k.uclamp_max;
	}
	/* cgroup2 moves whole processes: a lone thread keeps its process's group. */
	if (k.use_class && la->cls.on && (!la->cls.v2 || tid == tgid) && !la->o.dry_run &&
	    class_ensure(la, v, ret->cgroup, sizeof(ret->cgroup)) < 0)
		snprintf(ret->cgroup, sizeof(ret->cgroup), "%s", prev->cgroup);
}

static void format_state(const struct lat_state *s, char *buf, size_t size)
{
	char cg[LAT_ESC_MAX];

	escape_field(s->cgroup, cg, sizeof(cg));
	snprintf(buf, size, "%d %d %" PRIu64 " %d %d %s", s->policy, s->nice, s->slice_ns, s->umin,
		 s->umax, cg);
}

/* A task's record: "lat TID TGID START VALUE PREV SET", with its newline. */
static void task_line(const struct lat_entry *e, char *line, size_t size)
{
	char p[LAT_ESC_MAX + 96], s[LAT_ESC_MAX + 96];

	format_state(&e->prev, p, sizeof(p));
	format_state(&e->set, s, sizeof(s));
	snprintf(line, size, "lat %d %d %" PRIu64 " %d %s %s\n", (int)e->task.tid, (int)e->tgid,
		 e->task.start_time, e->value, p, s);
}

/* A cgroup's record: "cg VALUE PATH UNIT PREV_W PREV_IDLE SET_W SET_IDLE", with its newline. */
static void cg_line(const struct lat_cg_entry *c, char *line, size_t size)
{
	char path[LAT_ESC_MAX], unit[LAT_ESC_MAX];

	escape_field(c->path, path, sizeof(path));
	escape_field(c->unit, unit, sizeof(unit));
	snprintf(line, size, "cg %d %s %s %" PRIu64 " %d %" PRIu64 " %d\n", c->value, path, unit,
		 c->prev_weight, c->prev_idle, c->set_weight, c->set_idle);
}

static int journal_task(struct latact *la, const struct lat_entry *e)
{
	char line[LAT_LINE_MAX];

	if (!la->journal)
		return 0;
	task_line(e, line, sizeof(line));
	return journal_append(la->journal, line);
}

static void journal_untask(struct latact *la, pid_t tid, uint64_t start)
{
	char line[64];

	if (!la->journal)
		return;
	snprintf(line, sizeof(line), "unlat %d %" PRIu64 "\n", (int)tid, start);
	journal_append(la->journal, line);
}

static size_t find_index(const struct latact *la, pid_t tid, bool *found)
{
	size_t lo = util_pid_lower_bound(la->e, la->n, sizeof(*la->e),
					offsetof(struct lat_entry, task.tid), tid);

	*found = lo < la->n && la->e[lo].task.tid == tid;
	return lo;
}

const struct lat_entry *latact_find(const struct latact *la, pid_t tid)
{
	bool found;
	size_t i = find_index(la, tid, &found);

	return found ? &la->e[i] : NULL;
}

static struct lat_entry *entry_add(struct latact *la, const struct lat_entry *e)
{
	bool found;
	size_t i = find_index(la, e->task.tid, &found);
	struct lat_entry *arr;

	if (found) {
		la->e[i] = *e;
		goto told;
	}
	arr = util_grow(la->e, &la->cap, la->n, sizeof(*arr));
	if (!arr)
		return NULL;
	la->e = arr;
	memmove(&la->e[i + 1], &la->e[i], (la->n - i) * sizeof(*la->e));
	la->e[i] = *e;
	la->n++;
told:
	if (la->on_task)
		la->on_task(la->on_task_ctx, e->task.tid, e->value, true);
	return &la->e[i];
}

static void entry_del(struct latact *la, pid_t tid)
{
	bool found;
	size_t i = find_index(la, tid, &found);

	if (!found)
		return;
	la->ops->close(&la->e[i].task);
	if (la->on_task)
		la->on_task(la->on_task_ctx, tid, 0, false);
	memmove(&la->e[i], &la->e[i + 1], (la->n - i - 1) * sizeof(*la->e));
	la->n--;
	la->e = util_shrink(la->e, &la->cap, la->n, sizeof(*la->e));
}

/*
 * Short-lived children of a process with a value each leave a record and its end:
 * once the lines outnumber the live entries by JOURNAL_SLACK, the file is replaced
 * by the live entries alone, so that its size follows what is managed now. Called
 * only where the entries and the journal agree (no write under way).
 */
static void compact(struct latact *la)
{
	char line[LAT_LINE_MAX], *text = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (!la->journal || journal_lines(la->journal) < la->n + la->ncg + JOURNAL_SLACK)
		return;
	f = open_memstream(&text, &len);
	if (!f)
		return;
	fputs(la->cls.made_root ? JOURNAL_HEAD "root\n" : JOURNAL_HEAD, f);
	for (size_t i = 0; i < la->n; i++) {
		task_line(&la->e[i], line, sizeof(line));
		fputs(line, f);
	}
	for (size_t i = 0; i < la->ncg; i++) {
		cg_line(&la->cg[i], line, sizeof(line));
		fputs(line, f);
	}
	r = fclose(f) == 0 && text ? journal_rewrite_text(la->journal, text) : -ENOMEM;
	if (r < 0)
		log_warn("latency: journal %s: cannot compact: %s", journal_path(la->journal),
			 strerror(-r));
	free(text);
}

/*
 * Writes want over cur: the sched knobs in one call, then the cgroup. On cgroup2 a
 * move takes the whole process: only its first thread (tid == tgid) moves it.
 */
static int write_state(struct latact *la, pid_t tid, pid_t tgid, const struct lat_state *cur,
		       const struct lat_state *want)
{
	int r = 0;

	/* A task that made itself real-time since: its policy and parameters are its own. */
	if (sched_differs(cur, want) && !policy_is_rt(cur->policy))
		r = write_sched(la, tid, want);
	if (r == 0 && la->cls.on && want->cgroup[0] && strcmp(cur->cgroup, want->cgroup) != 0 &&
	    (!la->cls.v2 || tid == tgid))
		r = cg_attach(want->cgroup, tid);
	return r;
}

/* Whether a task left to others is said in the log: a process once, not each thread. */
static bool cg_says(const struct latact *la, const struct lat_entry *e)
{
	const struct lat_entry *lead = latact_find(la, e->tgid);

	return e->task.tid == e->tgid || !lead || lead->task.tid == e->task.tid;
}

/*
 * Whether the task's cgroup is rqbalance's to move (into e->cg and e->cg_left): where
 * rqbalance put it (old), where the kernel put it after its creator (from), or, for a
 * first value, anywhere that does not cap its CPU. Said once, when it stops being so.
 */
static void cg_decide(struct latact *la, const struct lat_entry *old,
		      const struct lat_entry *from, const struct lat_state *cur, struct lat_entry *e)
{
	const struct lat_entry *held = old ? old : from;
	struct lat_cg_view v = { .cur = cur->cgroup };

	e->cg = LAT_CG_OURS;
	e->cg_left[0] = '\0';
	if (!la->cls.on)
		return;
	if (held && held->cg != LAT_CG_OURS) {
		/* Still left, or a new task of a creator whose cgroup was left: no new word. */
		e->cg = held->cg;
	} else {
		v.held = held ? held->set.cgroup : NULL;
		v.limits = !held && cg_limits_cpu(la, cur->cgroup);
		e->cg = lat_cg_decide(&v);
		if (e->cg != LAT_CG_OURS && cg_says(la, e))
			log_notice("latency: task %d is in cgroup \"%s\": %s", (int)e->task.tid,
				   cur->cgroup, lat_cg_why(e->cg));
	}
	if (e->cg != LAT_CG_OURS)
		snprintf(e->cg_left, sizeof(e->cg_left), "%s", cur->cgroup);
}

int latact_task(struct latact *la, pid_t tid, pid_t tgid, uint64_t start_time, int v,
		const char *source, const struct lat_entry *from, const char **ret_why)
{
	const struct lat_entry *old = latact_find(la, tid);
	struct lat_entry e = { .tgid = tgid, .value = v }, fr;

	snprintf(e.source, sizeof(e.source), "%s", source ? source : "");
	struct lat_state cur, want;
	int r;

	*ret_why = NULL;
	/* from may point into la->e, which dropping an entry below moves. */
	if (from) {
		fr = *from;
		from = &fr;
	}
	if (old && old->task.start_time != start_time) {
		latact_task_gone(la, tid);
		old = NULL;
	}
	r = old ? 0 : la->ops->open(tid, tgid, start_time, &e.task);
	if (r < 0) {
		*ret_why = r == -ESRCH ? "no such task (or its pid was reused)" : strerror(-r);
		return r;
	}
	if (old)
		e.task = old->task;
	r = latact_read(la, tid, &cur);
	if (r == 0 && policy_is_rt(cur.policy) && !old) {
		*ret_why = "the task has a real-time policy";
		r = -EPERM;
	}
	if (r < 0)
		goto fail;
	e.prev = old ? old->prev : from ? from->prev : cur;
	cg_decide(la, old, from, &cur, &e);
	want_for(la, v, tid, tgid, &e.prev, &want);
	/* A cgroup left to others stays as it is, and is not rqbalance's to give back. */
	if (e.cg != LAT_CG_OURS)
		snprintf(want.cgroup, sizeof(want.cgroup), "%s", cur.cgroup);
	e.set = want;
	if (e.cg != LAT_CG_OURS)
		e.set.cgroup[0] = '\0';
	/* A dry run stops here: latact_apply_plan logs what the plan would do. */
	if (la->o.dry_run)
		goto fail;
	r = journal_task(la, &e);
	if (r < 0) {
		*ret_why = strerror(-r);
		la->cnt.errors++;
		goto fail;
	}
	r = write_state(la, tid, tgid, &cur, &want);
	if (r == 0)
		r = latact_read(la, tid, &e.set);
	if (r == 0 && e.cg != LAT_CG_OURS)
		e.set.cgroup[0] = '\0';
	if (r == 0)
		r = la->ops->alive(&e.task);
	if (r == -ESRCH) {
		/* It exited meanwhile, as short tasks do: no error, and its record is closed. */
		*ret_why = "the task exited";
		la->cnt.gone++;
		if (!old) {
			journal_untask(la, tid, start_time);
			compact(la);
		}
		goto fail;
	}
	if (r < 0) {
		*ret_why = strerror(-r);
		la->cnt.errors++;
		goto fail;
	}
	if (!entry_add(la, &e)) {
		r = -ENOMEM;
		goto fail;
	}
	la->cnt.applied++;
	compact(la);
	return 0;
fail:
	if (!old)
		la->ops->close(&e.task);
	return la->o.dry_run ? 0 : r;
}

/* Gives back each knob that is still what rqbalance set. */
static void restore_entry(struct latact *la, const struct lat_entry *e)
{
	struct lat_state cur, want;
	pid_t tid = e->task.tid;

	if (la->ops->alive(&e->task) < 0 || latact_read(la, tid, &cur) < 0) {
		la->cnt.gone++;
		return;
	}
	want = cur;
	if (cur.policy == e->set.policy)
		want.policy = e->prev.policy;
	if (cur.nice == e->set.nice)
		want.nice = e->prev.nice;
	if (cur.slice_ns == e->set.slice_ns)
		want.slice_ns = e->prev.slice_ns;
	if (cur.umin == e->set.umin && cur.umax == e->set.umax) {
		want.umin = e->prev.umin;
		want.umax = e->prev.umax;
	}
	/* A cgroup left to others (set.cgroup "") is theirs: it stays where it is. */
	if (strcmp(cur.cgroup, e->set.cgroup) == 0)
		snprintf(want.cgroup, sizeof(want.cgroup), "%s", e->prev.cgroup);
	if (sched_differs(&cur, &e->set) ||
	    (e->set.cgroup[0] && strcmp(cur.cgroup, e->set.cgroup) != 0))
		la->cnt.left_alone++;
	if (write_state(la, tid, e->tgid, &cur, &want) == 0) {
		if (sched_differs(&cur, &want) || strcmp(cur.cgroup, want.cgroup) != 0)
			la->cnt.restored++;
	} else if (want.cgroup[0] && strcmp(cur.cgroup, want.cgroup) != 0 &&
		   cg_attach("/", tid) == 0) {
		log_warn("latency: task %d: cgroup \"%s\" is gone; moved to /", (int)tid,
			 want.cgroup);
	} else {
		la->cnt.errors++;
	}
	if (la->ops->alive(&e->task) < 0)
		log_debug("latency: task %d exited while being restored", (int)tid);
}

int latact_task_reset(struct latact *la, pid_t tid, uint64_t start_time)
{
	const struct lat_entry *e = latact_find(la, tid);

	if (!e || (start_time && e->task.start_time != start_time))
		return -ENOENT;
	restore_entry(la, e);
	journal_untask(la, tid, e->task.start_time);
	entry_del(la, tid);
	compact(la);
	return 0;
}

void latact_task_gone(struct latact *la, pid_t tid)
{
	const struct lat_entry *e = latact_find(la, tid);

	if (!e)
		return;
	journal_untask(la, tid, e->task.start_time);
	entry_del(la, tid);
	la->cnt.gone++;
	compact(la);
}

void latact_check_cgroup(struct latact *la, pid_t tid)
{
	bool found;
	size_t i = find_index(la, tid, &found);
	struct lat_entry *e;
	struct lat_state cur;

	if (!found || !la->cls.on)
		return;
	e = &la->e[i];
	if (e->cg != LAT_CG_OURS || latact_read(la, tid, &cur) < 0 ||
	    la->ops->alive(&e->task) < 0 || strcmp(cur.cgroup, e->set.cgroup) == 0)
		return;
	cg_decide(la, e, NULL, &cur, e);
	/* Nothing to give back there: the record says so too, should rqbalance crash. */
	e->set.cgroup[0] = '\0';
	if (journal_task(la, e) < 0)
		la->cnt.errors++;
}

void latact_verify(struct latact *la)
{
	for (size_t i = la->n; i-- > 0;) {
		if (la->ops->alive(&la->e[i].task) < 0)
			latact_task_gone(la, la->e[i].task.tid);
		else
			latact_check_cgroup(la, la->e[i].task.tid);
	}
}

/* ---- cgroup targets ---- */

bool latact_cgroup_path_ok(const char *path)
{
	return path[0] == '/' && !strstr(path, "/../") && !strstr(path, "/./") &&
	       strcspn(path, " \t\n") == strlen(path) && strlen(path) < LAT_PATH_MAX &&
	       !(strlen(path) >= 3 && strcmp(path + strlen(path) - 3, "/..") == 0);
}

static void cg_file(const struct latact *la, const char *path, const char *name, char *ret,
		    size_t size)
{
	snprintf(ret, size, "%s%s/%s", la->cls.mount, strcmp(path, "/") ? path : "", name);
}

static int cg_read(const struct latact *la, const char *path, uint64_t *ret_w, int *ret_idle)
{
	char f[PATH_MAX];
	uint64_t idle;
	int r;

	cg_file(la, path, la->cls.v2 ? "cpu.weight" : "cpu.shares", f, sizeof(f));
	r = read_u64(f, ret_w);
	if (r < 0)
		return r;
	cg_file(la, path, "cpu.idle", f, sizeof(f));
	*ret_idle = read_u64(f, &idle) == 0 ? (int)idle : -1;
	return 0;
}

static int cg_write(const struct latact *la, const char *path, uint64_t w, int idle)
{
	char f[PATH_MAX], text[32];
	int r;

	if (idle >= 0) {
		cg_file(la, path, "cpu.idle", f, sizeof(f));
		snprintf(text, sizeof(text), "%d", idle);
		r = write_small(f, text);
		if (r < 0)
			return r;
	}
	if (idle == 1)
		return 0; /* an idle group's weight is not writable */
	cg_file(la, path, la->cls.v2 ? "cpu.weight" : "cpu.shares", f, sizeof(f));
	snprintf(text, sizeof(text), "%" PRIu64, w);
	return write_small(f, text);
}

static size_t cg_index(const struct latact *la, const char *path)
{
	for (size_t i = 0; i < la->ncg; i++)
		if (strcmp(la->cg[i].path, path) == 0)
			return i;
	return SIZE_MAX;
}

const struct lat_cg_entry *latact_find_cgroup(const struct latact *la, const char *path)
{
	size_t i = cg_index(la, path);

	return i == SIZE_MAX ? NULL : &la->cg[i];
}

static int journal_cg(struct latact *la, const struct lat_cg_entry *c)
{
	char line[LAT_LINE_MAX];

	if (!la->journal)
		return 0;
	cg_line(c, line, sizeof(line));
	return journal_append(la->journal, line);
}

/* A systemd unit's weight, over D-Bus: its cgroup files are systemd's, not ours. */
static int unit_read(struct latact *la, const char *unit, uint64_t *ret_w, int *ret_idle)
{
	char err[256];
	uint64_t w;
	int r = cgsd_get_weight(la->bus, unit, &w, err, sizeof(err));

	if (r < 0) {
		log_info("latency: unit %s: CPUWeight: %s", unit, err);
		return r;
	}
	*ret_idle = w == CGSD_WEIGHT_IDLE;
	*ret_w = w;
	return 0;
}

static int unit_write(struct latact *la, const char *unit, uint64_t w, int idle)
{
	char err[256];
	int r = idle == 1 ? cgsd_set_idle(la->bus, unit, err, sizeof(err))
			  : cgsd_set_weight(la->bus, unit, w, err, sizeof(err));

	if (r < 0)
		log_warn("latency: unit %s: setting CPUWeight: %s", unit, err);
	return r;
}

static int target_read(struct latact *la, const struct lat_cg_entry *c, uint64_t *w, int *idle)
{
	return c->unit[0] ? unit_read(la, c->unit, w, idle) : cg_read(la, c->path, w, idle);
}

static int target_write(struct latact *la, const struct lat_cg_entry *c, uint64_t w, int idle)
{
	return c->unit[0] ? unit_write(la, c->unit, w, idle) : cg_write(la, c->path, w, idle);
}

/*
 * On a systemd host a cgroup that a unit owns is set through the unit; one inside a
 * unit's delegated subtree belongs to that unit's payload and is refused.
 */
static int owner_of(struct latact *la, struct lat_cg_entry *c, const char **ret_why)
{
	int r;

	if (!la->o.systemd)
		return 0;
	r = cgsd_unit_for_cgroup(c->path, c->unit, sizeof(c->unit));
	if (r == -EPERM) {
		*ret_why = "inside a unit's delegated subtree: that is the unit's own to set";
		return r;
	}
	if (r < 0) {
		c->unit[0] = '\0';
		return 0;
	}
	if (!la->bus && cgsd_open(la->o.bus_address && *la->o.bus_address ? la->o.bus_address :
				  NULL, (sd_bus **)&la->bus) < 0) {
		*ret_why = "cannot reach systemd over D-Bus";
		return -EHOSTUNREACH;
	}
	return 0;
}

static int cg_apply(struct latact *la, const char *path, int v, const char *source,
		    bool by_procs, const char **ret_why)
{
	size_t i = cg_index(la, path);
	struct lat_cg_entry c = { .value = v, .by_procs = by_procs };
	struct lat_knobs k;
	struct stat st;
	char dir[PATH_MAX];
	uint64_t w;
	int idle, r;

	*ret_why = NULL;
	snprintf(c.source, sizeof(c.source), "%s", source ? source : "");
	if (!latact_cgroup_path_ok(path)) {
		*ret_why = "not an absolute cgroup path without . or .. components or spaces";
		return -EINVAL;
	}
	snprintf(c.path, sizeof(c.path), "%s", path);
	r = owner_of(la, &c, ret_why);
	if (r < 0)
		return r;
	if (by_procs && !c.unit[0]) {
		*ret_why = "no systemd unit owns it";
		return -EINVAL;
	}
	if (!c.unit[0]) {
		if (!la->cls.mount[0]) {
			*ret_why = "no cpu controller is mounted";
			return -EOPNOTSUPP;
		}
		cg_file(la, path, "", dir, sizeof(dir));
		if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
			*ret_why = "no such cgroup in the cpu hierarchy";
			return -ENOENT;
		}
	}
	r = target_read(la, &c, &w, &idle);
	if (r < 0) {
		*ret_why = c.unit[0] ? "cannot read the unit's CPUWeight" : "cannot read its weight";
		return r;
	}
	c.prev_weight = i == SIZE_MAX ? w : la->cg[i].prev_weight;
	c.prev_idle = i == SIZE_MAX ? idle : la->cg[i].prev_idle;
	lat_map(&la->lc, v, &k);
	c.set_weight = la->cls.v2 || c.unit[0] ? lat_shares_to_weight(k.shares) : k.shares;
	c.set_idle = idle < 0 ? -1 : k.cg_idle ? 1 : 0;
	if (c.set_idle == 1 && c.unit[0])
		c.set_weight = CGSD_WEIGHT_IDLE;
	if (la->o.dry_run)
		return 0;
	r = journal_cg(la, &c);
	if (r == 0)
		r = target_write(la, &c, c.set_weight, c.set_idle);
	if (r == 0)
		r = target_read(la, &c, &c.set_weight, &c.set_idle);
	if (r < 0) {
		*ret_why = "cannot write its weight";
		la->cnt.errors++;
		return r;
	}
	if (i == SIZE_MAX) {
		struct lat_cg_entry *arr = util_grow(la->cg, &la->capcg, la->ncg, sizeof(*arr));

		if (!arr)
			return -ENOMEM;
		la->cg = arr;
		i = la->ncg++;
	}
	la->cg[i] = c;
	la->cnt.applied++;
	compact(la);
	return 0;
}

int latact_cgroup(struct latact *la, const char *path, int v, const char *source,
		  const char **ret_why)
{
	return cg_apply(la, path, v, source, false, ret_why);
}

int latact_unit(struct latact *la, const char *path, int v, const char *source,
		const char **ret_why)
{
	const struct lat_cg_entry *c = latact_find_cgroup(la, path);

	*ret_why = NULL;
	if (c && !c->by_procs) {
		*ret_why = "the cgroup has a value of its own (rqctl set -g)";
		return -EEXIST;
	}
	if (c && c->value == v)
		return 0;
	return cg_apply(la, path, v, source, true, ret_why);
}

static void restore_cg(struct latact *la, const struct lat_cg_entry *c)
{
	uint64_t w;
	int idle;

	if (c->unit[0] && !la->bus &&
	    cgsd_open(la->o.bus_address && *la->o.bus_address ? la->o.bus_address : NULL,
		      (sd_bus **)&la->bus) < 0) {
		log_warn("latency: unit %s: cannot reach systemd to give its weight back", c->unit);
		la->cnt.errors++;
		return;
	}
	if (target_read(la, c, &w, &idle) < 0) {
		log_info("latency: cgroup \"%s\" is gone: nothing to give back", c->path);
		la->cnt.gone++;
		return;
	}
	if (idle != c->set_idle || (c->set_idle != 1 && w != c->set_weight)) {
		log_info("latency: cgroup \"%s\" was changed since: left as it is", c->path);
		la->cnt.left_alone++;
		return;
	}
	if (target_write(la, c, c->prev_weight, c->prev_idle) == 0)
		la->cnt.restored++;
	else
		la->cnt.errors++;
}

int latact_cgroup_reset(struct latact *la, const char *path)
{
	size_t i = cg_index(la, path);
	char line[LAT_ESC_MAX + 16], esc[LAT_ESC_MAX];

	if (i == SIZE_MAX)
		return -ENOENT;
	restore_cg(la, &la->cg[i]);
	if (la->journal) {
		escape_field(path, esc, sizeof(esc));
		snprintf(line, sizeof(line), "uncg %s\n", esc);
		journal_append(la->journal, line);
	}
	memmove(&la->cg[i], &la->cg[i + 1], (la->ncg - i - 1) * sizeof(*la->cg));
	la->ncg--;
	compact(la);
	return 0;
}

int latact_unit_release(struct latact *la, const char *path)
{
	const struct lat_cg_entry *c = latact_find_cgroup(la, path);

	if (!c || !c->by_procs)
		return -ENOENT;
	return latact_cgroup_reset(la, path);
}

/* ---- journal replay: what a crashed run left ---- */

static int parse_state(char **save, struct lat_state *s)
{
	char *f[6];

	for (int i = 0; i < 6; i++)
		if (!(f[i] = strtok_r(NULL, " ", save)))
			return -EINVAL;
	s->policy = atoi(f[0]);
	s->nice = atoi(f[1]);
	s->slice_ns = strtoull(f[2], NULL, 10);
	s->umin = atoi(f[3]);
	s->umax = atoi(f[4]);
	if (unescape_field(f[5], s->cgroup, sizeof(s->cgroup)) < 0 ||
	    (s->cgroup[0] && s->cgroup[0] != '/'))
		return -EINVAL;
	return 0;
}

static int parse_task_line(char *line, struct lat_entry *e)
{
	char *save = NULL, *f[4];

	memset(e, 0, sizeof(*e));
	for (int i = 0; i < 4; i++)
		if (!(f[i] = strtok_r(i ? NULL : line, " ", &save)))
			return -EINVAL;
	e->task.tid = atoi(f[0]);
	e->tgid = atoi(f[1]);
	e->task.start_time = strtoull(f[2], NULL, 10);
	e->value = atoi(f[3]);
	e->task.pidfd = -1;
	if (e->task.tid <= 0 || parse_state(&save, &e->prev) < 0 ||
	    parse_state(&save, &e->set) < 0 || strtok_r(NULL, " ", &save))
		return -EINVAL;
	return 0;
}

static int parse_cg_line(char *line, struct lat_cg_entry *c)
{
	char path[LAT_ESC_MAX], unit[LAT_ESC_MAX];
	int n = 0;

	memset(c, 0, sizeof(*c));
	if (sscanf(line, "%d %1023s %1023s %" SCNu64 " %d %" SCNu64 " %d%n", &c->value, path, unit,
		   &c->prev_weight, &c->prev_idle, &c->set_weight, &c->set_idle, &n) != 7 ||
	    line[n] != '\0' || unescape_field(path, c->path, sizeof(c->path)) < 0 ||
	    unescape_field(unit, c->unit, sizeof(c->unit)) < 0 || c->path[0] != '/')
		return -EINVAL;
	return 0;
}

int latact_parse_line(char *line, struct lat_entry *ret_e, struct lat_cg_entry *ret_c)
{
	struct lat_entry e;
	struct lat_cg_entry c;
	int tid;
	uint64_t start;
	char esc[LAT_ESC_MAX], path[LAT_PATH_MAX];
	int n = 0;

	if (strncmp(line, "lat ", 4) == 0 && parse_task_line(line + 4, &e) == 0) {
		*ret_e = e;
		return LATACT_REC_TASK;
	}
	if (sscanf(line, "unlat %d %" SCNu64, &tid, &start) == 2) {
		ret_e->task.tid = tid;
		ret_e->task.start_time = start;
		return LATACT_REC_UNTASK;
	}
	if (strncmp(line, "cg ", 3) == 0 && parse_cg_line(line + 3, &c) == 0) {
		*ret_c = c;
		return LATACT_REC_CG;
	}
	if (strcmp(line, "root") == 0)
		return LATACT_REC_ROOT;
	if (sscanf(line, "uncg %1023s%n", esc, &n) == 1 && line[n] == '\0' &&
	    unescape_field(esc, path, sizeof(path)) == 0 && path[0] == '/') {
		snprintf(ret_c->path, sizeof(ret_c->path), "%s", path);
		return LATACT_REC_UNCG;
	}
	return -EINVAL;
}

struct replay {
	struct latact *la;
	struct lat_entry *t;
	size_t nt, capt;
	struct lat_cg_entry *c;
	size_t nc, capc;
	unsigned bad;
};

static void replay_task(struct replay *rp, const struct lat_entry *e)
{
	for (size_t i = 0; i < rp->nt; i++)
		if (rp->t[i].task.tid == e->task.tid && rp->t[i].task.start_time == e->task.start_time) {
			rp->t[i].set = e->set;
			return;
		}
	struct lat_entry *arr = util_grow(rp->t, &rp->capt, rp->nt, sizeof(*arr));

	if (arr) {
		rp->t = arr;
		rp->t[rp->nt++] = *e;
	}
}

static void replay_untask(struct replay *rp, pid_t tid, uint64_t start)
{
	for (size_t i = 0; i < rp->nt; i++)
		if (rp->t[i].task.tid == tid && rp->t[i].task.start_time == start) {
			rp->t[i] = rp->t[--rp->nt];
			return;
		}
}

static void replay_cg(struct replay *rp, const struct lat_cg_entry *c, bool set)
{
	for (size_t i = 0; i < rp->nc; i++)
		if (strcmp(rp->c[i].path, c->path) == 0) {
			if (set) {
				rp->c[i].set_weight = c->set_weight;
				rp->c[i].set_idle = c->set_idle;
			} else {
				rp->c[i] = rp->c[--rp->nc];
			}
			return;
		}
	if (!set)
		return;
	struct lat_cg_entry *arr = util_grow(rp->c, &rp->capc, rp->nc, sizeof(*arr));

	if (arr) {
		rp->c = arr;
		rp->c[rp->nc++] = *c;
	}
}

static void replay_line(void *ctx, unsigned lineno, char *line)
{
	struct replay *rp = ctx;
	struct lat_entry e;
	struct lat_cg_entry c;

	switch (latact_parse_line(line, &e, &c)) {
	case LATACT_REC_TASK:
		replay_task(rp, &e);
		break;
	case LATACT_REC_UNTASK:
		replay_untask(rp, e.task.tid, e.task.start_time);
		break;
	case LATACT_REC_CG:
		replay_cg(rp, &c, true);
		break;
	case LATACT_REC_UNCG:
		replay_cg(rp, &c, false);
		break;
	case LATACT_REC_ROOT:
		rp->la->cls.made_root = true;
		break;
	default:
		log_warn("%s:%u: malformed latency journal record skipped",
			 journal_path(rp->la->journal), lineno);
		rp->bad++;
	}
}

/* A fresh journal; it keeps saying that the classes' parent is rqbalance's to remove. */
static void rewrite_empty(struct latact *la)
{
	journal_rewrite_text(la->journal, la->cls.made_root ? JOURNAL_HEAD "root\n" : JOURNAL_HEAD);
}

/* Restores what the journal says a previous run left, then starts it afresh. */
static void recover(struct latact *la)
{
	struct replay rp = { .la = la };
	unsigned restored = 0;

	journal_each_line(la->journal, replay_line, &rp);
	for (size_t i = 0; i < rp.nt; i++) {
		struct lat_entry *e = &rp.t[i];

		if (la->ops->open(e->task.tid, e->tgid, e->task.start_time, &e->task) < 0)
			continue;
		restore_entry(la, e);
		la->ops->close(&e->task);
		restored++;
	}
	for (size_t i = 0; i < rp.nc; i++) {
		restore_cg(la, &rp.c[i]);
		restored++;
	}
	if (rp.nt || rp.nc)
		log_notice("latency: a previous run left %zu tasks and %zu cgroups; %u still "
			   "there were given back where unchanged", rp.nt, rp.nc, restored);
	free(rp.t);
	free(rp.c);
	rewrite_empty(la);
}

/* Groups a previous run made and did not remove: empty them and take them away. */
static void remove_stale_classes(struct latact *la)
{
	char path[PATH_MAX];
	struct stat st;

	for (int v = LAT_MIN; v <= LAT_MAX; v++) {
		char rel[LAT_PATH_MAX];

		class_rel(la, v, rel, sizeof(rel));
		snprintf(path, sizeof(path), "%s/%s", la->cls.mount, rel);
		if (stat(path, &st) == 0)
			la->cls.made[v - LAT_MIN] = true;
	}
}

/*
 * The kernel's default slice, as sched_getattr reports it for a task without its own:
 * the daemon asks for the default on itself (runtime 0) and reads what that is.
 */
static uint64_t default_slice(void)
{
	struct rqb_sched_attr a;

	if (rqb_sched_getattr(0, &a) < 0 || (a.sched_policy != SCHED_OTHER &&
					     a.sched_policy != SCHED_BATCH))
		return 0;
	a.sched_runtime = 0;
	a.sched_flags = 0;
	if (rqb_sched_setattr(0, &a) < 0 || rqb_sched_getattr(0, &a) < 0)
		return 0;
	return a.sched_runtime;
}

int latact_init(struct latact *la, const struct act_ops *ops, const struct latact_opts *o,
		const struct lat_conf *lc)
{
	int r;

	memset(la, 0, sizeof(*la));
	la->ops = ops;
	la->o = *o;
	la->lc = *lc;
	snprintf(la->proc_root, sizeof(la->proc_root), "%s",
		 o->proc_root && *o->proc_root ? o->proc_root : "/proc");
	snprintf(la->cls.root, sizeof(la->cls.root), "%s",
		 o->cgroup_root ? o->cgroup_root : "");
	while (la->cls.root[0] == '/')
		memmove(la->cls.root, la->cls.root + 1, strlen(la->cls.root));
	if (!o->dry_run) {
		r = journal_open_named(o->journal_dir, LAT_JOURNAL_NAME, &la->journal);
		if (r < 0)
			return r;
	}
	if (o->slices)
		la->default_slice_ns = default_slice();
	classes_find(la);
	if (la->cls.on)
		remove_stale_classes(la);
	if (la->journal)
		recover(la);
	return 0;
}

void latact_set_conf(struct latact *la, const struct lat_conf *lc)
{
	char rel[LAT_PATH_MAX], path[PATH_MAX], text[32];
	const char *key;
	uint64_t w;

	la->lc = *lc;
	/* The weights follow the mapping: a reload may have changed its bound. */
	for (int v = LAT_MIN; v <= LAT_MAX; v++) {
		if (!la->cls.on || !la->cls.made[v - LAT_MIN])
			continue;
		class_rel(la, v, rel, sizeof(rel));
		class_weight(la, v, &key, &w);
		snprintf(path, sizeof(path), "%s/%s/%s", la->cls.mount, rel, key);
		snprintf(text, sizeof(text), "%" PRIu64, w);
		if (write_small(path, text) < 0)
			log_warn("latency: class cgroup \"%s\": cannot set %s %s", rel, key, text);
	}
}

int latact_restore_all(struct latact *la)
{
	uint64_t before = la->cnt.restored;

	for (size_t i = 0; i < la->n; i++) {
		restore_entry(la, &la->e[i]);
		journal_untask(la, la->e[i].task.tid, la->e[i].task.start_time);
		la->ops->close(&la->e[i].task);
	}
	la->n = 0;
	while (la->ncg)
		latact_cgroup_reset(la, la->cg[la->ncg - 1].path);
	return (int)(la->cnt.restored - before);
}

void latact_fini(struct latact *la)
{
	latact_restore_all(la);
	if (!la->o.dry_run)
		classes_remove(la);
	if (la->journal) {
		journal_rewrite_text(la->journal, JOURNAL_HEAD);
		journal_close(la->journal);
	}
	free(la->e);
	free(la->cg);
	cgsd_close(la->bus);
	memset(la, 0, sizeof(*la));
}
