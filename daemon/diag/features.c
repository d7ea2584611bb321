/*
 * Diagnostics (diag/): the kernel's features, probed once at start for the feature
 * report and for the stages that adapt to them. Reads only, and its syscall probes
 * touch nothing but the daemon itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <zlib.h>

#include "diag/features.h"
#include "rqbalance.h"
#include "sample/parse.h"
#include "util/log.h"
#include "util/schedattr.h"

#ifndef PIDFD_THREAD
#define PIDFD_THREAD O_EXCL
#endif

static const char *const names[FEAT_COUNT] = {
	[FEAT_LLC_GROUPS] = "llc-groups",     [FEAT_PIDFD_THREAD] = "pidfd-thread",
	[FEAT_EEVDF_SLICE] = "eevdf-slice",   [FEAT_UCLAMP] = "uclamp",
	[FEAT_CGROUP_V1_CPU] = "cgroup-v1-cpu", [FEAT_CGROUP_V2_CPU] = "cgroup-v2-cpu",
	[FEAT_BTF] = "btf",                   [FEAT_SCHEDSTATS] = "schedstats",
	[FEAT_AUTOGROUP] = "autogroup",     [FEAT_TASK_EVENTS] = "task-events",
	[FEAT_WAKE_PAIRS] = "wake-pairs",   [FEAT_PLACEMENT] = "placement",
};

void features_set_pairs(struct features *f, bool keep_pairs, const char *seen_by,
			const char *why_not)
{
	if (!keep_pairs)
		features_set(f, FEAT_WAKE_PAIRS, FEAT_MISSING, "keep_pairs = no");
	else if (seen_by)
		features_set(f, FEAT_WAKE_PAIRS, FEAT_USED, "%s", seen_by);
	else
		features_set(f, FEAT_WAKE_PAIRS, FEAT_MISSING, "%s: keep_pairs acts on no pair",
			     why_not);
}

bool features_set_placement(struct features *f, const char *on, const char *kernel_why)
{
	struct feature was = f->f[FEAT_PLACEMENT];

	if (!on[0])
		features_set(f, FEAT_PLACEMENT, FEAT_MISSING,
			     "keep_together = no, latency_apart = no, fast_cores = no");
	else if (kernel_why)
		features_set(f, FEAT_PLACEMENT, FEAT_MISSING, "%s standing down: %s", on, kernel_why);
	else
		features_set(f, FEAT_PLACEMENT, FEAT_USED, "%s on: no cache-aware scheduler in the "
			     "kernel, no sched_ext scheduler loaded", on);
	return was.state != f->f[FEAT_PLACEMENT].state ||
	       strcmp(was.detail, f->f[FEAT_PLACEMENT].detail) != 0;
}

/* Known once the sampler starts; the daemon logs them then, on their own. */
static bool late(int i)
{
	return i == FEAT_TASK_EVENTS || i == FEAT_WAKE_PAIRS || i == FEAT_PLACEMENT;
}

const char *features_name(enum feat_id id)
{
	return (unsigned)id < FEAT_COUNT ? names[id] : "?";
}

void features_set(struct features *f, enum feat_id id, enum feat_state st, const char *fmt, ...)
{
	va_list ap;

	if ((unsigned)id >= FEAT_COUNT)
		return;
	f->f[id].state = st;
	va_start(ap, fmt);
	vsnprintf(f->f[id].detail, sizeof(f->f[id].detail), fmt, ap);
	va_end(ap);
}

#define set features_set

static bool exists(const char *root, const char *path)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s%s", root, path);
	return access(p, F_OK) == 0;
}

static int read_small(const char *root, const char *path, char *buf, size_t len)
{
	char p[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(p, sizeof(p), "%s%s", root, path);
	fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return 0;
}

/* Is word one of the blank-separated words of list? */
static bool has_word(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; (p = strstr(p, word)); p += n)
		if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
			return true;
	return false;
}

static void probe_cgroups(const char *root, struct features *f)
{
	char mounts[16384], v1[PATH_MAX], v2[PATH_MAX], ctl[512], path[PATH_MAX + 32];
	const char *fdm;

	if (read_small(root, "/proc/mounts", mounts, sizeof(mounts)) < 0) {
		set(f, FEAT_CGROUP_V1_CPU, FEAT_MISSING, "cannot read /proc/mounts");
		set(f, FEAT_CGROUP_V2_CPU, FEAT_MISSING, "cannot read /proc/mounts");
		return;
	}
	parse_mounts(mounts, v1, v2, sizeof(v1));
	/* One lock for every hierarchy: favordynmods on any of them makes a move cheap. */
	fdm = parse_mounts_favordynmods(mounts) ? ", favordynmods" : "";
	if (v1[0])
		set(f, FEAT_CGROUP_V1_CPU, FEAT_FOUND, "%s (cpu.shares, cpu.idle%s)", v1, fdm);
	else
		set(f, FEAT_CGROUP_V1_CPU, FEAT_MISSING, "no cgroup v1 hierarchy with cpu");
	snprintf(path, sizeof(path), "%s/cgroup.controllers", v2);
	if (!v2[0])
		set(f, FEAT_CGROUP_V2_CPU, FEAT_MISSING, "no cgroup2 mount");
	else if (read_small(root, path, ctl, sizeof(ctl)) == 0 && has_word(ctl, "cpu"))
		set(f, FEAT_CGROUP_V2_CPU, FEAT_FOUND, "%s (cpu.weight, cpu.idle%s)", v2, fdm);
	else
		set(f, FEAT_CGROUP_V2_CPU, FEAT_MISSING, "cgroup2 at %s without the cpu controller",
		    v2);
}

static void probe_sched(struct features *f, const struct utsname *u)
{
	struct rqb_sched_attr a = { .size = sizeof(a) };
	unsigned major = 0, minor = 0;
	int fd;

	fd = (int)syscall(SYS_pidfd_open, getpid(), PIDFD_THREAD);
	if (fd >= 0) {
		close(fd);
		set(f, FEAT_PIDFD_THREAD, FEAT_USED, "threads are opened by pidfd before any change");
	} else {
		set(f, FEAT_PIDFD_THREAD, FEAT_MISSING,
		    "%s: threads other than a process's first are checked by start time only",
		    errno == EINVAL ? "before 6.9" : strerror(errno));
	}
	/* CFS ignores sched_runtime for fair tasks; EEVDF takes it as the slice from 6.12. */
	sscanf(u->release, "%u.%u", &major, &minor);
	if (major > 6 || (major == 6 && minor >= 12))
		set(f, FEAT_EEVDF_SLICE, FEAT_FOUND, "sched_attr.sched_runtime sets the slice");
	else
		set(f, FEAT_EEVDF_SLICE, FEAT_MISSING, "kernel %u.%u: no custom EEVDF slice (6.12+)",
		    major, minor);
	/* Re-setting the daemon's own clamps to what they are shows whether uclamp is built. */
	if (syscall(SYS_sched_getattr, 0, &a, sizeof(a), 0) < 0) {
		set(f, FEAT_UCLAMP, FEAT_MISSING, "sched_getattr: %s", strerror(errno));
		return;
	}
	a.sched_flags = SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS |
			SCHED_FLAG_UTIL_CLAMP_MIN | SCHED_FLAG_UTIL_CLAMP_MAX;
	if (syscall(SYS_sched_setattr, 0, &a, 0) == 0)
		set(f, FEAT_UCLAMP, FEAT_FOUND, "util clamps settable per task");
	else
		set(f, FEAT_UCLAMP, FEAT_MISSING, "sched_setattr util clamp: %s%s", strerror(errno),
		    errno == EOPNOTSUPP ? " (CONFIG_UCLAMP_TASK off)" : "");
}

bool features_llcs(struct features *f, const struct topo *t, unsigned min_cores)
{
	struct feature was = f->f[FEAT_LLC_GROUPS];
	int big = 0;

	for (int l = 0; t && l < t->nllcs; l++)
		big += t->llcs[l].ncores >= (int)min_cores;
	if (big >= 2 && big == t->nllcs)
		set(f, FEAT_LLC_GROUPS, FEAT_USED, "%d LLCs to spread across", big);
	else if (big >= 2)
		set(f, FEAT_LLC_GROUPS, FEAT_USED,
		    "%d LLCs to spread across; %d of fewer than %u cores left out (min_llc_cores)",
		    big, t->nllcs - big, min_cores);
	else if (t && t->nllcs >= 2)
		set(f, FEAT_LLC_GROUPS, FEAT_MISSING,
		    "%d LLCs, %d of them of %u cores or more (min_llc_cores): nothing to spread "
		    "across, no task is pinned",
		    t->nllcs, big, min_cores);
	else
		set(f, FEAT_LLC_GROUPS, FEAT_MISSING, "one LLC: nothing to spread across");
	return was.state != f->f[FEAT_LLC_GROUPS].state ||
	       strcmp(was.detail, f->f[FEAT_LLC_GROUPS].detail) != 0;
}

/* Whether the config file at root/path (plain or gzip, as /proc/config.gz) has opt. */
static int config_has(const char *root, const char *path, const char *opt)
{
	char p[PATH_MAX], line[256];
	size_t n = strlen(opt);
	int found = 0;
	gzFile f;

	if (snprintf(p, sizeof(p), "%s%s", root, path) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	f = gzopen(p, "rbe"); /* e: O_CLOEXEC */
	if (!f)
		return -ENOENT;
	while (!found && gzgets(f, line, sizeof(line)))
		found = strncmp(line, opt, n) == 0 && (line[n] == '\n' || line[n] == '\0');
	gzclose(f);
	return found;
}

bool features_sched_cache_built(const char *root, const char *release, char *src, size_t len)
{
	/* Where distributions put the running kernel's config: Debian 13 and later ship
	 * it in /usr/lib/modules (and the shipped unit's ProtectKernelModules= hides it). */
	static const struct { const char *before, *after; } places[] = {
		{ "/boot/config-", "" }, { "/usr/lib/modules/", "/config" },
		{ "/lib/modules/", "/config" }, { "/proc/config.gz", NULL },
	};
	char path[PATH_MAX], btfp[PATH_MAX];
	struct btf *btf;
	bool built;

	root = root ? root : "";
	for (size_t i = 0; i < sizeof(places) / sizeof(places[0]); i++) {
		int r;

		if (snprintf(path, sizeof(path), "%s%s%s", places[i].before,
			     places[i].after ? release : "",
			     places[i].after ? places[i].after : "") >= (int)sizeof(path))
			continue;
		r = config_has(root, path, "CONFIG_SCHED_CACHE=y");
		if (r < 0)
			continue;
		snprintf(src, len, "%s in %s", r ? "CONFIG_SCHED_CACHE=y" : "no CONFIG_SCHED_CACHE",
			 path);
		return r;
	}
	/* No config readable: the kernel's own type information, which the BPF sampler
	 * reads anyway, has the cache-aware scheduler's types where it is built. */
	snprintf(btfp, sizeof(btfp), "%s/sys/kernel/btf/vmlinux", root);
	btf = btf__parse(btfp, NULL);
	if (!btf) {
		snprintf(src, len, "no kernel config and no BTF to read");
		return false;
	}
	built = btf__find_by_name_kind(btf, "sched_cache_group", BTF_KIND_STRUCT) > 0;
	btf__free(btf);
	snprintf(src, len, "%s in the kernel's BTF (/sys/kernel/btf/vmlinux)",
		 built ? "struct sched_cache_group" : "no struct sched_cache_group");
	return built;
}

enum kernel_places features_kernel_places(const char *root, const char *built, int nllcs,
					  char *why, size_t len)
{
	char state[32], ops[128], on[16], feats[4096];
	bool cache = false;

	root = root ? root : "";
	if (read_small(root, "/sys/kernel/sched_ext/state", state, sizeof(state)) == 0 &&
	    strncmp(state, "disabled", 8) != 0) {
		if (read_small(root, "/sys/kernel/sched_ext/root/ops", ops, sizeof(ops)) < 0)
			snprintf(ops, sizeof(ops), "?");
		ops[strcspn(ops, "\n")] = '\0';
		state[strcspn(state, "\n")] = '\0';
		snprintf(why, len, "sched_ext scheduler %s is %s: it places the tasks it takes", ops,
			 state);
		return KERNEL_PLACES_SCHED_EXT;
	}
	if (read_small(root, "/sys/kernel/debug/sched/llc_balancing/enabled", on, sizeof(on)) == 0) {
		if (on[0] != '1' && on[0] != 'Y')
			return KERNEL_PLACES_NOT; /* built, and switched off */
		snprintf(why, len, "the kernel's cache-aware scheduling is on "
				   "(/sys/kernel/debug/sched/llc_balancing/enabled)");
		cache = true;
	} else if (read_small(root, "/sys/kernel/debug/sched/features", feats, sizeof(feats)) == 0 &&
		   has_word(feats, "SCHED_CACHE")) {
		snprintf(why, len, "the kernel's cache-aware scheduling is on (sched feature "
				   "SCHED_CACHE)");
		cache = true;
	} else if (built && built[0]) {
		snprintf(why, len, "the kernel is built with cache-aware scheduling (%s), on by "
				   "default, and debugfs does not say it is off", built);
		cache = true;
	}
	/* With one LLC it has nothing to choose between (its switch reads 1 all the same). */
	return cache && nllcs >= 2 ? KERNEL_PLACES_CACHE : KERNEL_PLACES_NOT;
}

bool features_autogroup_on(const char *root)
{
	char buf[16];

	return read_small(root ? root : "", "/proc/sys/kernel/sched_autogroup_enabled", buf,
			  sizeof(buf)) == 0 && buf[0] == '1';
}

void features_probe(const char *root, const struct topo *t, unsigned min_llc_cores,
		    struct features *ret)
{
	struct features f;
	struct utsname u;

	memset(&f, 0, sizeof(f));
	root = root ? root : "";
	uname(&u);
	snprintf(f.kernel, sizeof(f.kernel), "Linux %s %s", u.release, u.machine);
	features_llcs(&f, t, min_llc_cores);
	probe_sched(&f, &u);
	probe_cgroups(root, &f);
	if (exists(root, "/sys/kernel/btf/vmlinux"))
		set(&f, FEAT_BTF, FEAT_FOUND, "/sys/kernel/btf/vmlinux");
	else
		set(&f, FEAT_BTF, FEAT_MISSING, "no /sys/kernel/btf/vmlinux");
	if (exists(root, "/proc/schedstat"))
		set(&f, FEAT_SCHEDSTATS, FEAT_FOUND, "/proc/schedstat");
	else
		set(&f, FEAT_SCHEDSTATS, FEAT_MISSING, "no /proc/schedstat (CONFIG_SCHEDSTATS off)");
	if (features_autogroup_on(root))
		set(&f, FEAT_AUTOGROUP, FEAT_FOUND, "nice values compete only within a session");
	else
		set(&f, FEAT_AUTOGROUP, FEAT_MISSING, "off or not built");
	/* Known once the latency manager opens it (latmgr_probe_events for the report). */
	set(&f, FEAT_TASK_EVENTS, FEAT_MISSING, "not probed");
	set(&f, FEAT_WAKE_PAIRS, FEAT_MISSING, "not probed");
	set(&f, FEAT_PLACEMENT, FEAT_MISSING, "not probed");
	*ret = f;
}

static const char *state_name(enum feat_state s)
{
	return s == FEAT_USED ? "used" : s == FEAT_FOUND ? "found" : "missing";
}

void features_print(const struct features *f, FILE *out)
{
	fprintf(out, "kernel: %s\n", f->kernel);
	for (int i = 0; i < FEAT_COUNT; i++)
		fprintf(out, "%-14s %-8s %s\n", names[i], state_name(f->f[i].state),
			f->f[i].detail);
}

void features_log(const struct features *f)
{
	char found[512] = "";
	size_t off = 0;

	for (int i = 0; i < FEAT_COUNT; i++)
		if (!late(i) && f->f[i].state != FEAT_MISSING && off < sizeof(found))
			off += (size_t)snprintf(found + off, sizeof(found) - off, "%s%s", off ? " " : "",
						names[i]);
	log_info("features: %s: found %s", f->kernel, found);
	for (int i = 0; i < FEAT_COUNT; i++)
		if (!late(i) && f->f[i].state == FEAT_MISSING)
			log_info("features: cannot use %s: %s", names[i], f->f[i].detail);
}

void features_log_one(const struct features *f, enum feat_id id)
{
	if ((unsigned)id >= FEAT_COUNT)
		return;
	if (f->f[id].state == FEAT_MISSING)
		log_info("features: cannot use %s: %s", names[id], f->f[id].detail);
	else
		log_info("features: %s: %s", names[id], f->f[id].detail);
}
