/*
 * Sample stage: the machine's shape from hwloc (or a fake XML/synthetic one that maps
 * onto real CPU numbers), and the X3D mode from sysfs. Reads only; offline CPUs are
 * left out, also those that go offline later.
 */
#include <dirent.h>
#include <errno.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rqbalance.h"
#include "sample/topo.h"
#include "util/cpumask.h"
#include "util/log.h"

static int read_online(const char *root, cpu_set_t *ret)
{
	char path[512], buf[CPUMASK_STRLEN];
	FILE *f;
	int r;

	snprintf(path, sizeof(path), "%s/sys/devices/system/cpu/online", root ? root : "");
	f = fopen(path, "re");
	if (!f)
		return -errno;
	if (!fgets(buf, sizeof(buf), f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	r = cpumask_parse(buf, ret);
	return r;
}

/* The first line of a small sysfs file, without its newline; 0 or -errno. */
static int read_word(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	if (!fgets(buf, (int)len, f)) {
		fclose(f);
		return -EIO;
	}
	fclose(f);
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

static enum topo_x3d x3d_from_word(const char *word)
{
	if (strcmp(word, "frequency") == 0)
		return TOPO_X3D_FREQUENCY;
	if (strcmp(word, "cache") == 0)
		return TOPO_X3D_CACHE;
	/* A newer kernel may add a mode: we rank no CCD rather than guess. */
	log_debug("topology: unknown amd_x3d_mode \"%s\": taken as none", word);
	return TOPO_X3D_NONE;
}

/*
 * The amd_x3d_vcache driver's mode. The device's name (AMDI0101:00 on the parts seen)
 * is the firmware's, so every entry of the driver's directory is tried; bind, unbind
 * and the rest are files, not devices, and fail to open as directories.
 */
static enum topo_x3d read_x3d(const char *root)
{
	char dir[512], path[1024], word[32] = "";
	struct dirent *e;
	int r = -ENOENT;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/sys/bus/platform/drivers/amd_x3d_vcache",
		 root ? root : "");
	d = opendir(dir);
	if (!d)
		return TOPO_X3D_NONE; /* not an X3D part, or a kernel before 6.13 */
	while (r < 0 && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s/amd_x3d_mode", dir, e->d_name);
		r = read_word(path, word, sizeof(word));
	}
	closedir(d);
	return r < 0 ? TOPO_X3D_NONE : x3d_from_word(word);
}

static int open_hwloc(const struct topo_opts *o, hwloc_topology_t *ret)
{
	hwloc_topology_t h;
	int r = 0;

	if (hwloc_topology_init(&h) < 0)
		return -errno ? -errno : -ENOMEM;
	if (o->xml && o->xml[0])
		r = hwloc_topology_set_xml(h, o->xml);
	else if (o->synthetic && o->synthetic[0])
		r = hwloc_topology_set_synthetic(h, o->synthetic);
	if (r < 0) {
		r = errno ? -errno : -EINVAL;
		hwloc_topology_destroy(h);
		return r;
	}
	/* A fake topology stands for this machine: its CPU numbers are the real ones. */
	if (o->filter_online)
		hwloc_topology_set_flags(h, HWLOC_TOPOLOGY_FLAG_IS_THISSYSTEM);
	if (hwloc_topology_load(h) < 0) {
		r = errno ? -errno : -EINVAL;
		hwloc_topology_destroy(h);
		return r;
	}
	*ret = h;
	return 0;
}

/* The LLC object above a PU: the deepest-level cache that is a data/unified cache. */
static hwloc_obj_t llc_of(hwloc_topology_t h, hwloc_obj_t pu)
{
	hwloc_obj_t best = NULL;

	for (hwloc_obj_t o = pu->parent; o; o = o->parent)
		if (hwloc_obj_type_is_dcache(o->type))
			best = o; /* keep climbing: the outermost cache wins */
	(void)h;
	return best;
}

/* Cores with at least one online CPU. */
static int count_cores(const struct topo *t, int hwloc_cores)
{
	unsigned char *seen;
	int n = 0;

	if (hwloc_cores <= 0)
		return t->ncpus; /* no cores described: each CPU stands alone */
	seen = calloc((size_t)hwloc_cores, 1);
	if (!seen)
		return hwloc_cores;
	for (int c = 0; c < t->nr_cpu_ids; c++) {
		int core = t->cpus[c].core;

		if (t->cpus[c].present && core >= 0 && core < hwloc_cores && !seen[core]) {
			seen[core] = 1;
			n++;
		}
	}
	free(seen);
	return n;
}

/* Each LLC's cores with an online CPU: a CPU counts unless an earlier one shares its core. */
static void count_llc_cores(struct topo *t)
{
	for (int l = 0; l < t->nllcs; l++) {
		const cpu_set_t *m = &t->llcs[l].cpus;

		t->llcs[l].ncores = 0;
		for (int c = 0; c < t->nr_cpu_ids; c++) {
			bool first = true;

			if (!CPU_ISSET(c, m))
				continue;
			for (int e = 0; e < c && first; e++)
				first = !CPU_ISSET(e, m) || t->cpus[e].core != t->cpus[c].core;
			t->llcs[l].ncores += first;
		}
	}
}

static int fill(hwloc_topology_t h, const cpu_set_t *online, struct topo *t)
{
	int npu = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_PU);
	int nllc_objs = 0;
	hwloc_obj_t *llc_objs;

	t->nr_cpu_ids = 0;
	for (int i = 0; i < npu; i++) {
		hwloc_obj_t pu = hwloc_get_obj_by_type(h, HWLOC_OBJ_PU, i);

		if ((int)pu->os_index >= RQB_MAX_CPUS)
			return -ERANGE;
		if ((int)pu->os_index + 1 > t->nr_cpu_ids)
			t->nr_cpu_ids = (int)pu->os_index + 1;
	}
	t->cpus = calloc((size_t)(t->nr_cpu_ids ? t->nr_cpu_ids : 1), sizeof(*t->cpus));
	llc_objs = calloc((size_t)(npu ? npu : 1), sizeof(*llc_objs));
	t->llcs = calloc((size_t)(npu ? npu : 1), sizeof(*t->llcs));
	if (!t->cpus || !llc_objs || !t->llcs) {
		free(llc_objs);
		return -ENOMEM;
	}
	for (int i = 0; i < npu; i++) {
		hwloc_obj_t pu = hwloc_get_obj_by_type(h, HWLOC_OBJ_PU, i);
		int cpu = (int)pu->os_index, l;
		hwloc_obj_t core = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_CORE, pu);
		hwloc_obj_t pkg = hwloc_get_ancestor_obj_by_type(h, HWLOC_OBJ_PACKAGE, pu);
		hwloc_obj_t llc = llc_of(h, pu);
		hwloc_obj_t numa = NULL;
		struct topo_cpu *c = &t->cpus[cpu];

		c->kind = -1;
		if (online && !CPU_ISSET(cpu, online)) {
			t->noffline++;
			continue;
		}
		/* No cache described: each package (or the machine) is one LLC. */
		if (!llc)
			llc = pkg ? pkg : hwloc_get_root_obj(h);
		for (l = 0; l < nllc_objs && llc_objs[l] != llc; l++)
			;
		if (l == nllc_objs) {
			llc_objs[nllc_objs++] = llc;
			CPU_ZERO(&t->llcs[l].cpus);
			if (hwloc_obj_type_is_dcache(llc->type) && llc->attr)
				t->llcs[l].size_kb = llc->attr->cache.size / 1024;
		}
		for (hwloc_obj_t o = pu; o && !numa; o = o->parent)
			if (o->memory_arity)
				numa = o->memory_first_child;
		c->present = true;
		c->placed = true;
		c->core = core ? (int)core->logical_index : cpu;
		c->package = pkg ? (int)pkg->logical_index : 0;
		c->numa = numa ? (int)numa->logical_index : 0;
		c->llc = l;
		CPU_SET(cpu, &t->llcs[l].cpus);
		CPU_SET(cpu, &t->online);
		t->llcs[l].ncpus++;
		t->ncpus++;
	}
	t->nllcs = nllc_objs;
	for (int l = 0; l < t->nllcs; l++) {
		int first = cpumask_first(&t->llcs[l].cpus);

		t->llcs[l].numa = t->cpus[first].numa;
		t->llcs[l].package = t->cpus[first].package;
	}
	t->ncores = count_cores(t, hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_CORE));
	count_llc_cores(t);
	t->nnuma = hwloc_get_nbobjs_by_type(h, HWLOC_OBJ_NUMANODE);
	free(llc_objs);
	return t->ncpus > 0 ? 0 : -ENODEV;
}

/* What hwloc says of a kind: its CoreType, else LinuxCPUType; its highest frequency. */
static void kind_infos(struct topo_kind *k, const struct hwloc_info_s *infos, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (strcmp(infos[i].name, "CoreType") == 0 ||
		    (strcmp(infos[i].name, "LinuxCPUType") == 0 && !k->type[0]))
			snprintf(k->type, sizeof(k->type), "%s", infos[i].value);
		else if (strcmp(infos[i].name, "FrequencyMaxMHz") == 0)
			k->max_mhz = (unsigned)strtoul(infos[i].value, NULL, 10);
	}
}

/*
 * The kinds of core, in hwloc's order (most efficient first), each with the placed
 * CPUs of it; a kind with none of them is left out. At most TOPO_KINDS_MAX.
 */
static int fill_kinds(hwloc_topology_t h, struct topo *t)
{
	hwloc_bitmap_t set = hwloc_bitmap_alloc();
	int n = hwloc_cpukinds_get_nr(h, 0);

	if (!set)
		return -ENOMEM;
	for (int i = 0; i < n && t->nkinds < TOPO_KINDS_MAX; i++) {
		struct topo_kind *k = &t->kinds[t->nkinds];
		struct hwloc_info_s *infos = NULL;
		unsigned ninfos = 0;
		int eff = -1, cpu;

		if (hwloc_cpukinds_get_info(h, (unsigned)i, set, &eff, &ninfos, &infos, 0) < 0)
			continue;
		*k = (struct topo_kind){ .efficiency = eff };
		CPU_ZERO(&k->cpus);
		hwloc_bitmap_foreach_begin(cpu, set) {
			/* Placed: online at load, so present now. */
			if (cpu < t->nr_cpu_ids && t->cpus[cpu].placed) {
				t->cpus[cpu].kind = t->nkinds;
				CPU_SET(cpu, &k->cpus);
				k->ncpus++;
			}
		}
		hwloc_bitmap_foreach_end();
		kind_infos(k, infos, ninfos);
		if (k->ncpus)
			t->nkinds++;
	}
	hwloc_bitmap_free(set);
	return 0;
}

int topo_load(const struct topo_opts *o, struct topo **ret)
{
	hwloc_topology_t h = NULL;
	cpu_set_t online;
	struct topo *t;
	int r;

	if (o->filter_online) {
		r = read_online(o->root, &online);
		if (r < 0)
			return r;
	}
	r = open_hwloc(o, &h);
	if (r < 0)
		return r;
	t = calloc(1, sizeof(*t));
	if (!t) {
		hwloc_topology_destroy(h);
		return -ENOMEM;
	}
	CPU_ZERO(&t->online);
	r = fill(h, o->filter_online ? &online : NULL, t);
	if (r == 0)
		r = fill_kinds(h, t);
	hwloc_topology_destroy(h);
	if (r < 0) {
		topo_free(t);
		return r;
	}
	/*
	 * A fake topology the daemon runs on still runs on this machine, whose firmware
	 * ranks the CCDs; a machine that is not this one (the simulator's, a unit test's)
	 * takes no mode from it, unless a test gives a root of its own.
	 */
	if (o->filter_online || (o->root && o->root[0]))
		t->x3d_mode = read_x3d(o->root);
	snprintf(t->source, sizeof(t->source), "%s",
		 o->xml && o->xml[0] ? o->xml : o->synthetic && o->synthetic[0] ? o->synthetic
										   : "this system");
	*ret = t;
	return 0;
}

int topo_follow_online(struct topo *t, const char *root, cpu_set_t *ret_went,
		       cpu_set_t *ret_came)
{
	cpu_set_t online, went, came;
	int r = read_online(root, &online), n = 0;

	if (r < 0)
		return r;
	CPU_ZERO(&went);
	CPU_ZERO(&came);
	for (int cpu = 0; cpu < t->nr_cpu_ids; cpu++) {
		struct topo_cpu *c = &t->cpus[cpu];
		bool on = CPU_ISSET(cpu, &online);
		int d = on ? 1 : -1;

		if (!c->placed || c->present == on)
			continue;
		c->present = on;
		if (on) {
			CPU_SET(cpu, &t->llcs[c->llc].cpus);
			CPU_SET(cpu, &t->online);
			CPU_SET(cpu, &came);
		} else {
			CPU_CLR(cpu, &t->llcs[c->llc].cpus);
			CPU_CLR(cpu, &t->online);
			CPU_SET(cpu, &went);
		}
		if (c->kind >= 0 && on)
			CPU_SET(cpu, &t->kinds[c->kind].cpus);
		else if (c->kind >= 0)
			CPU_CLR(cpu, &t->kinds[c->kind].cpus);
		if (c->kind >= 0)
			t->kinds[c->kind].ncpus += d;
		t->llcs[c->llc].ncpus += d;
		t->ncpus += d;
		t->noffline -= d;
		n++;
	}
	if (n)
		count_llc_cores(t);
	if (ret_went)
		*ret_went = went;
	if (ret_came)
		*ret_came = came;
	return n;
}

int topo_follow_x3d(struct topo *t, const char *root)
{
	enum topo_x3d now = read_x3d(root);

	if (now == t->x3d_mode)
		return 0;
	t->x3d_mode = now;
	return 1;
}

const char *topo_x3d_name(enum topo_x3d mode)
{
	return mode == TOPO_X3D_FREQUENCY ? "frequency" : mode == TOPO_X3D_CACHE ? "cache" : "none";
}

void topo_free(struct topo *t)
{
	if (!t)
		return;
	free(t->cpus);
	free(t->llcs);
	free(t);
}

void topo_describe(const struct topo *t, char *buf, size_t len)
{
	snprintf(buf, len, "%d CPU%s, %d core%s, %d LLC%s, %d NUMA node%s (%s)", t->ncpus,
		 t->ncpus == 1 ? "" : "s", t->ncores, t->ncores == 1 ? "" : "s", t->nllcs,
		 t->nllcs == 1 ? "" : "s", t->nnuma, t->nnuma == 1 ? "" : "s", t->source);
}

void topo_kind_describe(const struct topo *t, int k, char *buf, size_t len)
{
	const struct topo_kind *kd = &t->kinds[k];
	char cpus[CPUMASK_STRLEN], type[sizeof(kd->type)];

	snprintf(type, sizeof(type), "%s", kd->type);
	for (char *c = type; *c; c++)
		if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f)
			*c = '_';
	snprintf(buf, len, "cpus %s efficiency %d%s%s max_mhz %u",
		 cpumask_format(&kd->cpus, cpus, sizeof(cpus)), kd->efficiency,
		 type[0] ? " type " : "", type, kd->max_mhz);
}
