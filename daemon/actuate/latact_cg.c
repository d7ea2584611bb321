/*
 * Actuate stage, latency: cgroup targets and systemd units. It writes a cgroup's weight
 * and idle (or a unit's CPUWeight) only after journalling, and gives back only what
 * still holds the value rqbalance wrote.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>

#include "actuate/cgsd.h"
#include "actuate/latact.h"
#include "actuate/latact_int.h"
#include "util/log.h"
#include "util/sorted.h"
#include "util/util.h"

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
	r = util_read_u64(f, ret_w);
	if (r < 0)
		return r;
	cg_file(la, path, "cpu.idle", f, sizeof(f));
	*ret_idle = util_read_u64(f, &idle) == 0 ? (int)idle : -1;
	return 0;
}

static int cg_write(const struct latact *la, const char *path, uint64_t w, int idle)
{
	char f[PATH_MAX], text[32];
	int r;

	if (idle >= 0) {
		cg_file(la, path, "cpu.idle", f, sizeof(f));
		snprintf(text, sizeof(text), "%d", idle);
		r = la->ops->write(f, text);
		if (r < 0)
			return r;
	}
	if (idle == 1)
		return 0; /* an idle group's weight is not writable */
	cg_file(la, path, la->cls.v2 ? "cpu.weight" : "cpu.shares", f, sizeof(f));
	snprintf(text, sizeof(text), "%" PRIu64, w);
	return la->ops->write(f, text);
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
	int r = la->ops->unit_weight(la->bus, unit, w, idle == 1, err, sizeof(err));

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

/* The connection to systemd, opened the first time a unit needs it. 0 or -EHOSTUNREACH. */
static int bus_ready(struct latact *la)
{
	if (!la->bus && cgsd_open(la->o.bus_address && *la->o.bus_address ? la->o.bus_address :
				  NULL, (sd_bus **)&la->bus) < 0)
		return -EHOSTUNREACH;
	return 0;
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
	if (bus_ready(la) < 0) {
		*ret_why = "cannot reach systemd over D-Bus";
		return -EHOSTUNREACH;
	}
	return 0;
}

int latact_unit_before(struct latact *la, const char *path, const char *unit,
		       uint64_t *ret_w, bool *ret_idle)
{
	const struct lat_cg_entry *c = latact_find_cgroup(la, path);
	uint64_t w;
	int idle, r;

	if (c && c->unit[0]) {
		w = c->prev_weight;
		idle = c->prev_idle;
	} else {
		r = bus_ready(la);
		if (r == 0)
			r = unit_read(la, unit, &w, &idle);
		if (r < 0)
			return r;
	}
	*ret_idle = idle == 1;
	*ret_w = idle == 1 || w == CGSD_WEIGHT_UNSET ? 0 : w;
	return 0;
}

/* Whether a weight and idle read now differ from what rqbalance set on c. */
static bool cg_changed(const struct lat_cg_entry *c, uint64_t w, int idle)
{
	return idle != c->set_idle || (c->set_idle != 1 && w != c->set_weight);
}

/* Notes (once) that someone else changed c's weight since rqbalance set it. */
static void cg_leave(struct latact *la, struct lat_cg_entry *c)
{
	if (c->left)
		return;
	c->left = true;
	log_notice("latency: cgroup \"%s\": someone else changed its weight since rqbalance set "
		   "it: left as it is", c->path);
}

void latact_check_cg(struct latact *la, const char *path)
{
	size_t i = cg_index(la, path);
	uint64_t w;
	int idle;

	if (i == SIZE_MAX || la->cg[i].left || target_read(la, &la->cg[i], &w, &idle) < 0)
		return;
	if (cg_changed(&la->cg[i], w, idle))
		cg_leave(la, &la->cg[i]);
}

/*
 * Checks path as a target and finds what owns its weight (c->unit: a systemd unit, or
 * "" for the cpu hierarchy's file). 0, or -errno with *ret_why.
 */
static int cg_target(struct latact *la, const char *path, struct lat_cg_entry *c,
		     const char **ret_why)
{
	struct stat st;
	char dir[PATH_MAX];
	int r;

	if (!latact_cgroup_path_ok(path)) {
		*ret_why = "not an absolute cgroup path without . or .. components or spaces";
		return -EINVAL;
	}
	snprintf(c->path, sizeof(c->path), "%s", path);
	r = owner_of(la, c, ret_why);
	if (r < 0)
		return r;
	if (c->by_procs && !c->unit[0]) {
		*ret_why = "no systemd unit owns it";
		return -EINVAL;
	}
	if (c->unit[0])
		return 0;
	if (!la->cls.mount[0]) {
		*ret_why = "no cpu controller is mounted";
		return -EOPNOTSUPP;
	}
	cg_file(la, path, "", dir, sizeof(dir));
	if (stat(dir, &st) < 0 || !S_ISDIR(st.st_mode)) {
		*ret_why = "no such cgroup in the cpu hierarchy";
		return -ENOENT;
	}
	return 0;
}

/* Keeps c as entry i (SIZE_MAX: a new one). 0 or -ENOMEM. */
static int cg_keep(struct latact *la, size_t i, const struct lat_cg_entry *c)
{
	if (i == SIZE_MAX) {
		struct lat_cg_entry *arr = util_grow(la->cg, &la->capcg, la->ncg, sizeof(*arr));

		if (!arr)
			return -ENOMEM;
		la->cg = arr;
		i = la->ncg++;
	}
	la->cg[i] = *c;
	la->cnt.applied++;
	latact_compact(la);
	return 0;
}

static int cg_apply(struct latact *la, const char *path, int v, const char *source,
		    bool by_procs, const char **ret_why)
{
	size_t i = cg_index(la, path);
	struct lat_cg_entry c = { .value = v, .by_procs = by_procs };
	struct lat_knobs k;
	uint64_t w;
	int idle, r;

	*ret_why = NULL;
	snprintf(c.source, sizeof(c.source), "%s", source ? source : "");
	r = cg_target(la, path, &c, ret_why);
	if (r < 0)
		return r;
	r = target_read(la, &c, &w, &idle);
	if (r < 0) {
		*ret_why = c.unit[0] ? "cannot read the unit's CPUWeight" : "cannot read its weight";
		return r;
	}
	if (i != SIZE_MAX && (la->cg[i].left || cg_changed(&la->cg[i], w, idle))) {
		/* Someone else's weight now: the new value is noted, not written. */
		cg_leave(la, &la->cg[i]);
		la->cg[i].value = v;
		snprintf(la->cg[i].source, sizeof(la->cg[i].source), "%s", c.source);
		return 0;
	}
	c.prev_weight = i == SIZE_MAX ? w : la->cg[i].prev_weight;
	c.prev_idle = i == SIZE_MAX ? idle : la->cg[i].prev_idle;
	c.since = i != SIZE_MAX && la->cg[i].value == v ? la->cg[i].since : (int64_t)time(NULL);
	latency_map(&la->lc, v, &k);
	c.set_weight = la->cls.v2 || c.unit[0] ? latency_shares_to_weight(k.shares) : k.shares;
	c.set_idle = idle < 0 ? -1 : k.cg_idle ? 1 : 0;
	if (c.set_idle == 1 && c.unit[0])
		c.set_weight = CGSD_WEIGHT_IDLE;
	r = latact_journal_cg(la, &c);
	if (r == 0)
		r = target_write(la, &c, c.set_weight, c.set_idle);
	if (r == 0)
		r = target_read(la, &c, &c.set_weight, &c.set_idle);
	if (r < 0) {
		*ret_why = "cannot write its weight";
		la->cnt.errors++;
		return r;
	}
	/* As latact_task: kept only where the journal holds it. */
	return la->journal ? cg_keep(la, i, &c) : 0;
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

void latact_restore_cg(struct latact *la, const struct lat_cg_entry *c)
{
	latact_restore_cg_crashed(la, c, NULL);
}

void latact_restore_cg_crashed(struct latact *la, const struct lat_cg_entry *c,
			       const struct lat_cg_entry *was)
{
	uint64_t w;
	int idle;

	if (c->unit[0] && bus_ready(la) < 0) {
		log_warn("latency: unit %s: cannot reach systemd to give its weight back", c->unit);
		la->cnt.errors++;
		return;
	}
	if (target_read(la, c, &w, &idle) < 0) {
		log_info("latency: cgroup \"%s\" is gone: nothing to give back", c->path);
		la->cnt.gone++;
		return;
	}
	if (c->left || (cg_changed(c, w, idle) && (!was || cg_changed(was, w, idle)))) {
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

	if (i == SIZE_MAX)
		return -ENOENT;
	latact_restore_cg(la, &la->cg[i]);
	latact_journal_uncg(la, path);
	sorted_remove(la->cg, &la->ncg, sizeof(*la->cg), i);
	latact_compact(la);
	return 0;
}

int latact_unit_release(struct latact *la, const char *path)
{
	const struct lat_cg_entry *c = latact_find_cgroup(la, path);

	if (!c || !c->by_procs)
		return -ENOENT;
	return latact_cgroup_reset(la, path);
}
