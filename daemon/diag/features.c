/*
 * Diagnostics (diag/): the kernel's features, probed once at start for the feature
 * report and for the stages that adapt to them. Reads only, and its syscall probes
 * touch nothing but the daemon itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
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
#include "proc/parse.h"
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
	[FEAT_CGROUP_MODE] = "cgroup-mode",
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

uint64_t features_slice_formula(int ncpus)
{
	unsigned factor = 1;

	/* sched_init_granularity's log scaling: 1 + ilog2 of the CPUs, at most 8. */
	for (int n = ncpus < 8 ? ncpus : 8; n > 1; n >>= 1)
		factor++;
	return 700000ULL * factor;
}

/*
 * sched_getattr reports a fair task's slice, its own or the default (6.12+; 0 before).
 * The calling thread may have a slice of its own ([daemon] latency_nice): it asks for
 * the default (runtime 0), reads it, and sets its own back.
 */
static uint64_t slice_of_self(void)
{
	struct rqb_sched_attr a, was;
	uint64_t slice;

	if (rqb_sched_getattr(0, &was) < 0 || (was.sched_policy != SCHED_OTHER &&
					       was.sched_policy != SCHED_BATCH))
		return 0;
	a = was;
	a.sched_runtime = 0;
	a.sched_flags &= SCHED_FLAG_RESET_ON_FORK;
	was.sched_flags &= SCHED_FLAG_RESET_ON_FORK;
	if (rqb_sched_setattr(0, &a) < 0 || rqb_sched_getattr(0, &a) < 0)
		return 0;
	slice = a.sched_runtime;
	/* Equal: it had none of its own (or one the same), and writing it back would
	 * make the default a slice of its own that no longer follows the CPUs. */
	if (was.sched_runtime != slice)
		rqb_sched_setattr(0, &was);
	return slice;
}

uint64_t features_base_slice_debugfs(const char *root)
{
	char buf[32], *end;
	uint64_t ns;

	if (read_small(root ? root : "", "/sys/kernel/debug/sched/base_slice_ns", buf,
		       sizeof(buf)) < 0)
		return 0;
	errno = 0;
	ns = strtoull(buf, &end, 10);
	return errno || end == buf ? 0 : ns;
}

uint64_t features_default_slice(const char *root, int ncpus, char *src, size_t len)
{
	uint64_t ns = slice_of_self();

	if (ns) {
		snprintf(src, len, "sched_getattr of a task without a slice of its own");
		return ns;
	}
	ns = features_base_slice_debugfs(root);
	if (ns) {
		snprintf(src, len, "debugfs sched/base_slice_ns");
		return ns;
	}
	snprintf(src, len, "the kernel's formula for %d online CPU%s", ncpus, ncpus == 1 ? "" : "s");
	return features_slice_formula(ncpus);
}

int features_parse_cgroup_mode(const char *text, char *ret, size_t len)
{
	const char *open = strchr(text, '('), *close = open ? strchr(open, ')') : NULL;
	size_t n;

	if (!close || close == open + 1)
		return -EINVAL;
	n = (size_t)(close - open - 1);
	for (size_t i = 0; i < n; i++)
		if (!((open[1 + i] >= 'a' && open[1 + i] <= 'z') || open[1 + i] == '_'))
			return -EINVAL;
	if (n >= len)
		return -EINVAL;
	memcpy(ret, open + 1, n);
	ret[n] = '\0';
	return 0;
}

int features_cgroup_mode(const char *root, char *ret, size_t len)
{
	char buf[256];
	int r = read_small(root ? root : "", "/sys/kernel/debug/sched/cgroup_mode", buf,
			   sizeof(buf));

	if (r == 0)
		r = features_parse_cgroup_mode(buf, ret, len);
	if (r < 0)
		snprintf(ret, len, "unknown");
	return r;
}

static void probe_cgroup_mode(const char *root, struct features *f)
{
	int r = features_cgroup_mode(root, f->cgroup_mode, sizeof(f->cgroup_mode));

	if (r == 0)
		set(f, FEAT_CGROUP_MODE, FEAT_FOUND, "%s (debugfs sched/cgroup_mode, 7.3+)",
		    f->cgroup_mode);
	else if (r == -EINVAL)
		set(f, FEAT_CGROUP_MODE, FEAT_MISSING, "unknown: debugfs sched/cgroup_mode names no "
		    "mode in parentheses");
	else
		set(f, FEAT_CGROUP_MODE, FEAT_MISSING, "unknown: no debugfs sched/cgroup_mode to read "
		    "(%s: debugfs not mounted or not readable, or a kernel before 7.3)",
		    strerror(-r));
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
	probe_cgroup_mode(root, &f);
	/* The machine's CPUs, not a fake topology's: the formula is the running kernel's. */
	f.default_slice_ns = features_default_slice(root, (int)sysconf(_SC_NPROCESSORS_ONLN),
						     f.default_slice_src,
						     sizeof(f.default_slice_src));
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
	fprintf(out, "default slice: %.2f ms (%s)\n", (double)f->default_slice_ns / 1e6,
		f->default_slice_src);
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
	log_info("features: the kernel's default slice is %.2f ms (%s)",
		 (double)f->default_slice_ns / 1e6, f->default_slice_src);
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
