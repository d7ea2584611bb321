/*
 * Actuate stage, latency: the class hierarchy (the rqbalance-latN cgroups, their weights
 * and real-time runtime) and whose a task's cgroup is. It never touches a cgroup it did
 * not make but to read it, or to move a task it manages.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuate/latact.h"
#include "actuate/latact_int.h"
#include "policy/latweigh.h"
#include "proc/parse.h"
#include "proc/procfs.h"
#include "util/log.h"
#include "util/util.h"

#define CLASS_PREFIX "rqbalance-lat"

/* The task's cgroup in the class hierarchy, from /proc/TGID/task/TID/cgroup. */
int latact_read_task_cgroup(const struct latact *la, pid_t tid, char *ret, size_t size)
{
	int r;

	ret[0] = '\0';
	if (!la->cls.on)
		return 0;
	/* Cut short, it would name another group: the task would be given back there. */
	r = procfs_cgroup(la->proc_root, 0, tid, ret, size);
	if (r < 0)
		ret[0] = '\0';
	return r;
}

bool latact_reads_cgroup(const struct latact *la)
{
	return la->cls.on;
}

int latact_cls_write(const struct latact *la, const char *cgroup, const struct act_task *t)
{
	char path[PATH_MAX];

	while (cgroup[0] == '/')
		cgroup++;
	snprintf(path, sizeof(path), "%s/%s%s%s", la->cls.mount, cgroup, cgroup[0] ? "/" : "",
		 la->cls.v2 ? "cgroup.procs" : "tasks");
	return la->ops->attach(path, t);
}

int latact_cls_attach(struct latact *la, const char *cgroup, const struct act_task *t)
{
	int r = latact_cls_write(la, cgroup, t);

	if (r == -ESTALE) {
		latact_cls_undo_move(la, t, cgroup);
		r = -ESRCH;
	}
	return r;
}

int latact_cls_attach_process(struct latact *la, const char *cgroup, const struct act_task *leader)
{
	const char *rel = cgroup;
	char path[PATH_MAX];
	int r;

	while (rel[0] == '/')
		rel++;
	snprintf(path, sizeof(path), "%s/%s%scgroup.procs", la->cls.mount, rel, rel[0] ? "/" : "");
	r = la->ops->attach(path, leader);
	if (r == -ESTALE) {
		latact_cls_undo_move(la, leader, cgroup);
		r = -ESRCH;
	}
	return r;
}

/* Makes cgroup rel (relative to the mount), and gives it key = value unless key is NULL. */
static int cg_create(const struct latact *la, const char *rel, const char *key, uint64_t value)
{
	char path[PATH_MAX], text[32];
	int r;

	snprintf(path, sizeof(path), "%s/%s", la->cls.mount, rel);
	r = la->ops->mkdir(path);
	if (r < 0 || !key)
		return r;
	snprintf(path, sizeof(path), "%s/%s/%s", la->cls.mount, rel, key);
	snprintf(text, sizeof(text), "%" PRIu64, value);
	return la->ops->write(path, text);
}

static void cg_delete(const struct latact *la, const char *rel)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", la->cls.mount, rel);
	la->ops->rmdir(path);
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
	return la->ops->write(path, la->cls.v2 ? "max" : "-1");
}

/*
 * RT group scheduling (v1 cpu.rt_runtime_us): a new group has no real-time runtime, so
 * a task moved into a class could no longer make a thread real-time (sched_setscheduler
 * EPERM), as audio servers and latency probes do. The kernel lets a group's children
 * share at most its own runtime: each class gets an equal part of what the groups beside
 * them leave free of their parent's (all of it, where they are alone), one part for each
 * value that can have a class, made or not. Split among the classes made so far, a user
 * who asked values for its own processes, making classes, would cut what another user's
 * real-time task in an older class may run with each one it made (measured: 237,500 us of
 * each second to 11,875 once a user made 19 classes).
 */
static uint64_t rt_of(const char *dir)
{
	char path[PATH_MAX];
	uint64_t v = 0;

	snprintf(path, sizeof(path), "%s/cpu.rt_runtime_us", dir);
	return util_read_u64(path, &v) == 0 ? v : 0;
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
	struct lat_knobs k;
	uint64_t share;
	unsigned n = 0;

	if (!la->cls.rt)
		return;
	snprintf(dir, sizeof(dir), "%s%s%s", la->cls.mount, la->cls.root[0] ? "/" : "", la->cls.root);
	for (int v = LAT_MIN; v <= LAT_MAX; v++) {
		latency_map(&la->lc, v, &k);
		n += k.use_class;
	}
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
			if (la->ops->write(path, text) < 0)
				log_warn("latency: class cgroup \"%s\": cannot set cpu.rt_runtime_us %s",
					 rel, text);
		}
	log_debug("latency: class cgroups get %" PRIu64 " us of real-time runtime each, a "
		  "%uth of what their parent has free", share, n);
}

/*
 * The weight of class v under the mapping in force and its multiplier (the busy tasks
 * it is weighed for), as the hierarchy spells it.
 */
static void class_weight(const struct latact *la, int v, const char **ret_key, uint64_t *ret_w)
{
	*ret_key = la->cls.v2 ? "cpu.weight" : "cpu.shares";
	*ret_w = latweigh_class_weight(&la->lc, v, la->cls.k[v - LAT_MIN],
				       la->cls.div[v - LAT_MIN], la->cls.v2);
}

unsigned latact_class_k(const struct latact *la, int v, unsigned *ret_div,
			uint64_t *ret_weight)
{
	const char *key;

	class_weight(la, v, &key, ret_weight);
	if (ret_div)
		*ret_div = la->cls.div[v - LAT_MIN] ? la->cls.div[v - LAT_MIN] : 1;
	return la->cls.k[v - LAT_MIN] ? la->cls.k[v - LAT_MIN] : 1;
}

int latact_class_scale(struct latact *la, int v, unsigned k, unsigned div)
{
	char rel[LAT_PATH_MAX], path[PATH_MAX], text[32];
	const char *key;
	uint64_t w, cur;
	int r;

	if (v < LAT_MIN || v > LAT_MAX)
		return -EINVAL;
	la->cls.k[v - LAT_MIN] = k;
	la->cls.div[v - LAT_MIN] = div;
	if (!la->cls.on || !la->cls.made[v - LAT_MIN])
		return 0;
	class_rel(la, v, rel, sizeof(rel));
	class_weight(la, v, &key, &w);
	snprintf(path, sizeof(path), "%s/%s/%s", la->cls.mount, rel, key);
	/* Written only where it differs: a class made since already has this weight. */
	if (util_read_u64(path, &cur) == 0 && cur == w)
		return 0;
	snprintf(text, sizeof(text), "%" PRIu64, w);
	r = la->ops->write(path, text);
	if (r < 0)
		log_warn("latency: class cgroup \"%s\": cannot set %s %s", rel, key, text);
	else
		log_debug("latency: class cgroup \"%s\": %s %s, for %u busy task%s over the "
			  "kernel's x%u", rel, key, text, k, k == 1 ? "" : "s", div ? div : 1);
	return r;
}

/*
 * A class's util clamps, where the kernel has them for groups (CONFIG_UCLAMP_TASK_GROUP:
 * cpu.uclamp.min and .max, in v1 and v2): the task mapping's uclamp_min for a negative
 * class, its uclamp_max for a positive one, as the percent with two decimals the files
 * take. The kernel restricts each task's own request to its group's pair, so the class
 * boosts or caps every task in it, including one whose own clamps rqbalance may not set.
 * Nothing to give back: rqbalance made the group and removes it.
 */
static void class_uclamp(struct latact *la, int v, const char *rel)
{
	char path[PATH_MAX], text[16];
	struct lat_knobs k;
	int util, h;
	const char *key;

	if (!la->o.uclamp)
		return;
	latency_map(&la->lc, v, &k);
	key = k.uclamp_min >= 0 ? "cpu.uclamp.min" : "cpu.uclamp.max";
	util = k.uclamp_min >= 0 ? k.uclamp_min : k.uclamp_max >= 0 ? k.uclamp_max : 1024;
	snprintf(path, sizeof(path), "%s/%s/%s", la->cls.mount, rel, key);
	if (access(path, F_OK) < 0) {
		if (!la->cls.no_group_uclamp)
			log_info("latency: class cgroups have no %s (CONFIG_UCLAMP_TASK_GROUP off): "
				 "only their tasks' own clamps are set", key);
		la->cls.no_group_uclamp = true;
		return;
	}
	/* Hundredths of a percent, rounded: 512 is "50.00", 755 is "73.73". */
	h = (util * 10000 + 512) / 1024;
	if (h >= 10000)
		snprintf(text, sizeof(text), "max");
	else
		snprintf(text, sizeof(text), "%d.%02d", h / 100, h % 100);
	if (la->ops->write(path, text) < 0)
		log_warn("latency: class cgroup \"%s\": cannot set %s %s", rel, key, text);
}

/*
 * The class group for v, made on first use with the kernel's weight for nice v. It
 * sits beside the groups it competes with: a weight only counts among siblings.
 */
int latact_class_ensure(struct latact *la, int v, char *ret, size_t size)
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
	r = cg_create(la, rel, key, w);
	if (r == 0)
		r = class_unthrottle(la, rel);
	if (r < 0) {
		log_warn("latency: cannot create class cgroup \"%s\": %s", rel, strerror(-r));
		return r;
	}
	la->cls.made[v - LAT_MIN] = true;
	class_uclamp(la, v, rel);
	classes_share_rt(la);
	return 0;
}

static void root_rt(struct latact *la, const char *path)
{
	char file[PATH_MAX], text[32];

	snprintf(text, sizeof(text), "%" PRIu64, rt_free(la, la->cls.mount, false) / 2);
	snprintf(file, sizeof(file), "%s/cpu.rt_runtime_us", path);
	if (la->ops->write(file, text) < 0)
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
		r = cg_create(la, la->cls.root, NULL, 0);
		if (r < 0)
			return r;
		/* A parent of ours takes half of what the top has free, for its classes. */
		if (la->cls.rt && la->cls.made_root)
			root_rt(la, path);
	}
	if (!la->cls.v2)
		return 0;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", la->cls.mount);
	r = la->ops->write(path, "+cpu");
	if (r == 0 && la->cls.root[0]) {
		snprintf(path, sizeof(path), "%s/%s/cgroup.subtree_control", la->cls.mount,
			 la->cls.root);
		r = la->ops->write(path, "+cpu");
	}
	return r;
}

/*
 * The weight of the classes' parent, which bounds what any class gives a task, in v1
 * cpu.shares (latency_class_gains); 0 at the top. Unreadable, it counts as the default.
 */
static void root_weigh(struct latact *la)
{
	char path[PATH_MAX];
	uint64_t w;

	la->cls.root_shares = 0;
	if (!la->cls.on || !la->cls.root[0])
		return;
	snprintf(path, sizeof(path), "%s/%s/%s", la->cls.mount, la->cls.root,
		 la->cls.v2 ? "cpu.weight" : "cpu.shares");
	if (util_read_u64(path, &w) < 0)
		w = la->cls.v2 ? 100 : 1024;
	la->cls.root_shares = la->cls.v2 ? w * 1024 / 100 : w;
}

/* Finds the cpu hierarchy: v1 cpu controller first, else cgroup2 with cpu available. */
void latact_classes_find(struct latact *la)
{
	char buf[65536], v1[PATH_MAX] = "", v2[PATH_MAX] = "", path[PATH_MAX];
	bool fdm;
	const char *mounts = la->o.mounts_file && *la->o.mounts_file ? la->o.mounts_file :
										 "/proc/self/mounts";
	int r;

	la->cls.on = false;
	if (util_read_file(mounts, buf, sizeof(buf)) < 0)
		return;
	parse_mounts(buf, v1, v2, sizeof(v1));
	fdm = parse_mounts_favordynmods(buf);
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
	/*
	 * What rqbalance makes in the hierarchy, a start after a crash must remove: the
	 * journal records the classes' parent. Without a journal none are made (those of a
	 * driver that writes nothing would be missing at each use); the line names the
	 * driver that opened none, "dry run".
	 */
	if (!la->journal) {
		log_info("latency: %s: no class cgroups are made", la->ops->name);
		return;
	}
	r = classes_root_setup(la);
	if (r < 0) {
		log_warn("latency: cannot set up class cgroups in %s/%s: %s; negative values "
			 "only shorten the slice", la->cls.mount, la->cls.root, strerror(-r));
		return;
	}
	la->cls.on = true;
	root_weigh(la);
	/*
	 * Each move of a task into a class write-locks cgroup_threadgroup_rwsem, one for
	 * every hierarchy, which waits for an RCU grace period unless some hierarchy has
	 * favordynmods (bench/cgmove). Mount options are the admin's: said, never changed.
	 */
	log_info("latency: class cgroups in %s%s%s (%s); %s", la->cls.mount,
		 la->cls.root[0] ? "/" : "", la->cls.root, la->cls.v2 ? "cgroup2" : "v1 cpu",
		 fdm ? "favordynmods: a move waits for no RCU grace period" :
			 "no cgroup mount has favordynmods: a move into a class can wait for an "
			 "RCU grace period (an admin's mount -o remount,favordynmods of a cgroup2 "
			 "mount spares it, at some cost to fork and exit)");
	return;
none:
	log_warn("latency: no cpu controller mounted: negative values only shorten the slice");
}

/* Gives each class the weight of the mapping in force. */
void latact_classes_reweigh(struct latact *la)
{
	char rel[LAT_PATH_MAX], path[PATH_MAX], text[32];
	const char *key;
	uint64_t w;

	root_weigh(la);
	for (int v = LAT_MIN; v <= LAT_MAX; v++) {
		if (!la->cls.on || !la->cls.made[v - LAT_MIN])
			continue;
		class_rel(la, v, rel, sizeof(rel));
		class_weight(la, v, &key, &w);
		snprintf(path, sizeof(path), "%s/%s/%s", la->cls.mount, rel, key);
		snprintf(text, sizeof(text), "%" PRIu64, w);
		if (la->ops->write(path, text) < 0)
			log_warn("latency: class cgroup \"%s\": cannot set %s %s", rel, key, text);
		class_uclamp(la, v, rel);
	}
}

/*
 * Moves task tid, listed in class rel, to the top: only the task that holds the number
 * once it is opened, and only while that task is still in the class.
 */
static void class_evict(struct latact *la, const char *rel, pid_t tid)
{
	char cur[LAT_PATH_MAX], want[LAT_PATH_MAX];
	struct act_who w;
	struct act_task t;

	if (tid <= 0 || la->ops->who(tid, &w) < 0 ||
	    la->ops->open(tid, w.tgid, w.start_time, &t) < 0)
		return;
	snprintf(want, sizeof(want), "/%s", rel);
	if (latact_read_task_cgroup(la, tid, cur, sizeof(cur)) == 0 && strcmp(cur, want) == 0 &&
	    la->ops->alive(&t) == 0 && latact_cls_attach(la, "/", &t) == 0)
		log_info("latency: task %d left in %s moved to /", (int)tid, rel);
	la->ops->close(&t);
}

/* The ids class v's file name lists (tasks, cgroup.procs): *ret to free. */
static int class_ids(const struct latact *la, int v, const char *name, pid_t **ret,
		     size_t *ret_n)
{
	char rel[LAT_PATH_MAX], path[PATH_MAX];
	size_t n = 0, cap = 0;
	pid_t *tids = NULL;
	long tid;
	FILE *f;

	class_rel(la, v, rel, sizeof(rel));
	snprintf(path, sizeof(path), "%s/%s/%s", la->cls.mount, rel, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fscanf(f, "%ld", &tid) == 1) {
		pid_t *arr = util_grow(tids, &cap, n, sizeof(*arr));

		if (!arr)
			break;
		tids = arr;
		tids[n++] = (pid_t)tid;
	}
	fclose(f);
	*ret = tids;
	*ret_n = n;
	return 0;
}

int latact_class_members(const struct latact *la, int v, pid_t **ret, size_t *ret_n)
{
	/* A cgroup2 class is a domain: a process's threads are all where it is. */
	return class_ids(la, v, la->cls.v2 ? "cgroup.procs" : "tasks", ret, ret_n);
}

int latact_class_procs(const struct latact *la, int v, pid_t **ret, size_t *ret_n)
{
	return class_ids(la, v, "cgroup.procs", ret, ret_n);
}

/* Moves every task left in the class groups to the hierarchy's root, then removes them. */
void latact_classes_clear(struct latact *la)
{
	char rel[LAT_PATH_MAX];

	if (!la->cls.on)
		return;
	for (int v = LAT_MIN; v <= LAT_MAX; v++) {
		pid_t *tids = NULL;
		size_t n = 0;

		if (!la->cls.made[v - LAT_MIN])
			continue;
		class_rel(la, v, rel, sizeof(rel));
		if (latact_class_members(la, v, &tids, &n) == 0)
			for (size_t k = 0; k < n; k++)
				class_evict(la, rel, tids[k]);
		free(tids);
		cg_delete(la, rel);
		la->cls.made[v - LAT_MIN] = false;
	}
}

/* The class groups emptied and removed, then their parent where rqbalance made it. */
void latact_classes_remove(struct latact *la)
{
	if (!la->cls.on)
		return;
	latact_classes_clear(la);
	if (la->cls.made_root)
		cg_delete(la, la->cls.root);
}

/* Groups a previous run made and did not remove: empty them and take them away. */
void latact_classes_stale(struct latact *la)
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
 * Whether cgroup cg (as /proc/PID/cgroup names it) is rqbalance's to move a task out
 * of (latency_cg_movable): the top, its classes, or one [latency] move_from names.
 */
bool latact_cls_movable(const struct latact *la, const char *cg)
{
	char parent[LAT_PATH_MAX];

	snprintf(parent, sizeof(parent), "/%s", la->cls.root);
	return latency_cg_movable(&la->lc, parent, cg);
}

void latact_cls_undo_move(struct latact *la, const struct act_task *t, const char *cgroup)
{
	char hcg[LAT_PATH_MAX], ccg[LAT_PATH_MAX];
	struct act_task h, c;
	pid_t htgid;
	int r;

	/* On cgroup2 the write moved the holder's whole process: its parent made it. */
	if (act_reuse_find(la->ops, t, la->cls.v2, &h, &htgid, &c) < 0)
		return;
	if (latact_read_task_cgroup(la, h.tid, hcg, sizeof(hcg)) == 0 && la->ops->alive(&h) == 0 &&
	    strcmp(hcg, cgroup) == 0 && latact_read_task_cgroup(la, c.tid, ccg, sizeof(ccg)) == 0 &&
	    la->ops->alive(&c) == 0 && strcmp(ccg, cgroup) != 0) {
		r = latact_cls_write(la, ccg, &h);
		if (r == 0)
			log_notice("latency: task %d exited while rqbalance moved it into \"%s\", "
				   "and task %d took its number: moved back to \"%s\", where it was "
				   "made", (int)t->tid, cgroup, (int)h.tid, ccg);
		else
			log_warn("latency: task %d exited while rqbalance moved it into \"%s\", and "
				 "task %d took its number: cannot move it back to \"%s\": %s",
				 (int)t->tid, cgroup, (int)h.tid, ccg, strerror(-r));
	}
	la->ops->close(&h);
	la->ops->close(&c);
}
