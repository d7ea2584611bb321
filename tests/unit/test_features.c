/* The feature probe against fake /proc and /sys trees, and its mounts parser. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <zlib.h>
#include <unistd.h>

#include "diag/features.h"
#include "sample/parse.h"
#include "kit.h"
#include "util/schedattr.h"

KIT_TEST(mounts_v1_and_v2)
{
	char v1[PATH_MAX], v2[PATH_MAX];

	parse_mounts("proc /proc proc rw 0 0\n"
		     "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n"
		     "cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,cpu,cpuacct 0 0\n"
		     "cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nsdelegate 0 0\n",
		     v1, v2, sizeof(v1));
	assert_string_equal(v1, "/sys/fs/cgroup/cpu,cpuacct");
	assert_string_equal(v2, "/sys/fs/cgroup/unified");
	parse_mounts("cgroup /x cgroup rw,cpuset 0 0\n", v1, v2, sizeof(v1));
	assert_string_equal(v1, "");
	assert_string_equal(v2, "");
}

/*
 * favordynmods on any cgroup mount, v1 or cgroup2 (the rwsem a move takes is one for
 * all), and only as a whole option of a cgroup mount.
 */
KIT_TEST(mounts_favordynmods)
{
	(void)state;
	assert_false(parse_mounts_favordynmods(
		"cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
		"cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nsdelegate 0 0\n"));
	assert_true(parse_mounts_favordynmods(
		"cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
		"cgroup2 /sys/fs/cgroup/unified cgroup2 rw,nsdelegate,favordynmods 0 0\n"));
	assert_true(parse_mounts_favordynmods(
		"cgroup /sys/fs/cgroup/cpu cgroup rw,favordynmods,cpu 0 0\n"));
	assert_true(parse_mounts_favordynmods(
		"cgroup2 /sys/fs/cgroup cgroup2 rw,favordynmods\n"
		"proc /proc proc rw 0 0"));
	/* Another file system's option, or a longer word, is not it. */
	assert_false(parse_mounts_favordynmods("tmpfs /tmp tmpfs rw,favordynmods 0 0\n"));
	assert_false(parse_mounts_favordynmods(
		"cgroup2 /sys/fs/cgroup cgroup2 rw,nofavordynmods,favordynmodsx 0 0\n"));
	assert_false(parse_mounts_favordynmods(""));
}

/* A 6.1-like tree: pure cgroup2 with cpu, schedstats, BTF, autogroup off. */
KIT_TEST(fake_tree)
{
	char root[] = "/tmp/rqb-feat.XXXXXX";
	struct topo *t = kit_topo("package:1 l3cache:2 core:1 pu:1");
	struct features f;

	kit_tmp(root, sizeof(root), "feat");
	kit_put(root, "/proc/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n");
	kit_put(root, "/sys/fs/cgroup/cgroup.controllers", "cpuset cpu io pids\n");
	kit_put(root, "/proc/schedstat", "version 15\n");
	kit_put(root, "/sys/kernel/btf/vmlinux", "");
	kit_put(root, "/proc/sys/kernel/sched_autogroup_enabled", "0\n");
	features_probe(root, t, 1, &f);
	assert_int_equal(f.f[FEAT_LLC_GROUPS].state, FEAT_USED);
	assert_int_equal(f.f[FEAT_CGROUP_V1_CPU].state, FEAT_MISSING);
	assert_int_equal(f.f[FEAT_CGROUP_V2_CPU].state, FEAT_FOUND);
	assert_string_equal(f.f[FEAT_CGROUP_V2_CPU].detail, "/sys/fs/cgroup (cpu.weight, cpu.idle)");
	assert_int_equal(f.f[FEAT_SCHEDSTATS].state, FEAT_FOUND);
	assert_int_equal(f.f[FEAT_BTF].state, FEAT_FOUND);
	assert_int_equal(f.f[FEAT_AUTOGROUP].state, FEAT_MISSING);

	/* The mount's favordynmods is part of what --features says. */
	kit_put(root, "/proc/mounts", "cgroup2 /sys/fs/cgroup cgroup2 rw,favordynmods 0 0\n");
	features_probe(root, t, 1, &f);
	assert_string_equal(f.f[FEAT_CGROUP_V2_CPU].detail,
			    "/sys/fs/cgroup (cpu.weight, cpu.idle, favordynmods)");

	/* "cpuset" alone is not the cpu controller. */
	kit_put(root, "/sys/fs/cgroup/cgroup.controllers", "cpuset io\n");
	features_probe(root, NULL, 2, &f);
	assert_int_equal(f.f[FEAT_CGROUP_V2_CPU].state, FEAT_MISSING);
	assert_int_equal(f.f[FEAT_LLC_GROUPS].state, FEAT_MISSING);
	topo_free(t);
	assert_int_equal(kit_rm(root), 0);
}

/* LLCs of fewer than min_llc_cores cores are nothing to spread across. */
KIT_TEST(single_core_llcs)
{
	struct topo *ones = kit_topo("package:1 l3cache:2 core:1 pu:2");
	struct features f;

	(void)state;
	features_probe("", ones, 2, &f);
	assert_int_equal(f.f[FEAT_LLC_GROUPS].state, FEAT_MISSING);
	assert_non_null(strstr(f.f[FEAT_LLC_GROUPS].detail, "nothing to spread across"));
	features_probe("", ones, 1, &f);
	assert_int_equal(f.f[FEAT_LLC_GROUPS].state, FEAT_USED);
	topo_free(ones);
}

KIT_TEST(print_names_every_feature)
{
	struct features f;
	char buf[8192];
	FILE *out;

	features_probe("", NULL, 2, &f);
	out = fmemopen(buf, sizeof(buf), "w");
	assert_non_null(out);
	features_print(&f, out);
	fclose(out);
	assert_true(strncmp(buf, "kernel: Linux ", 14) == 0);
	for (int i = 0; i < FEAT_COUNT; i++)
		assert_non_null(strstr(buf, features_name((enum feat_id)i)));
}

/* The kernel's default slice by online CPUs: 0.7 ms x (1 + log2(min(CPUs, 8))). */
KIT_TEST(slice_formula)
{
	static const struct { int cpus; uint64_t ns; } rows[] = {
		{ 1, 700000 }, { 2, 1400000 }, { 3, 1400000 }, { 4, 2100000 },
		{ 7, 2100000 }, { 8, 2800000 }, { 64, 2800000 }, { 0, 700000 },
	};

	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
		assert_int_equal(features_slice_formula(rows[i].cpus), rows[i].ns);
}

/* 6.12 on: the daemon's own thread shows the default, and keeps the slice it had. */
KIT_TEST(default_slice_of_self)
{
	struct rqb_sched_attr a;
	struct utsname u;
	unsigned major = 0, minor = 0;
	char src[96];
	uint64_t ns;

	(void)state;
	uname(&u);
	sscanf(u.release, "%u.%u", &major, &minor);
	assert_int_equal(rqb_sched_getattr(0, &a), 0);
	ns = features_default_slice("/nonexistent", 2, src, sizeof(src));
	assert_true(ns >= 100000 && ns <= 100000000);
	if (major < 6 || (major == 6 && minor < 12) || a.sched_policy != SCHED_OTHER) {
		skip();
		return;
	}
	assert_non_null(strstr(src, "sched_getattr"));
	/* A slice of its own, as [daemon] latency_nice gives: still the default read, and
	 * the thread's own slice stays. */
	a.sched_runtime = 300000;
	a.sched_flags = 0;
	assert_int_equal(rqb_sched_setattr(0, &a), 0);
	assert_int_equal(features_default_slice("/nonexistent", 2, src, sizeof(src)), ns);
	assert_true(ns != 300000);
	assert_int_equal(rqb_sched_getattr(0, &a), 0);
	assert_int_equal(a.sched_runtime, 300000);
	a.sched_runtime = 0;
	assert_int_equal(rqb_sched_setattr(0, &a), 0);
}

/* debugfs base_slice_ns through the root prefix; 0 where it cannot be read. */
KIT_TEST(base_slice_debugfs)
{
	char root[] = "/tmp/rqb-feat.XXXXXX";

	(void)state;
	kit_tmp(root, sizeof(root), "feat");
	assert_int_equal(features_base_slice_debugfs(root), 0);
	kit_put(root, "/sys/kernel/debug/sched/base_slice_ns", "2100000\n");
	assert_int_equal(features_base_slice_debugfs(root), 2100000);
	kit_put(root, "/sys/kernel/debug/sched/base_slice_ns", "x\n");
	assert_int_equal(features_base_slice_debugfs(root), 0);
	assert_int_equal(kit_rm(root), 0);
}

/* 7.3's cgroup_mode: the word in parentheses; "unknown" where there is none. */
KIT_TEST(cgroup_mode)
{
	char root[] = "/tmp/rqb-feat.XXXXXX", mode[16];
	struct features f;

	(void)state;
	assert_int_equal(features_parse_cgroup_mode("up smp (concur) max tasks\n", mode,
						    sizeof(mode)), 0);
	assert_string_equal(mode, "concur");
	assert_int_equal(features_parse_cgroup_mode("(up) smp concur max tasks", mode,
						    sizeof(mode)), 0);
	assert_string_equal(mode, "up");
	assert_int_equal(features_parse_cgroup_mode("up smp concur max tasks", mode, sizeof(mode)),
			 -EINVAL);
	assert_int_equal(features_parse_cgroup_mode("up () smp", mode, sizeof(mode)), -EINVAL);
	assert_int_equal(features_parse_cgroup_mode("(a b) smp", mode, sizeof(mode)), -EINVAL);
	assert_int_equal(features_parse_cgroup_mode("(averyveryverylongmode)", mode, sizeof(mode)),
			 -EINVAL);

	kit_tmp(root, sizeof(root), "feat");
	assert_int_equal(features_cgroup_mode(root, mode, sizeof(mode)), -ENOENT);
	assert_string_equal(mode, "unknown");
	features_probe(root, NULL, 2, &f);
	assert_int_equal(f.f[FEAT_CGROUP_MODE].state, FEAT_MISSING);
	assert_string_equal(f.cgroup_mode, "unknown");
	kit_put(root, "/sys/kernel/debug/sched/cgroup_mode", "up (smp) concur max tasks\n");
	assert_int_equal(features_cgroup_mode(root, mode, sizeof(mode)), 0);
	assert_string_equal(mode, "smp");
	features_probe(root, NULL, 2, &f);
	assert_int_equal(f.f[FEAT_CGROUP_MODE].state, FEAT_FOUND);
	assert_string_equal(f.cgroup_mode, "smp");
	kit_put(root, "/sys/kernel/debug/sched/cgroup_mode", "garbage\n");
	assert_int_equal(features_cgroup_mode(root, mode, sizeof(mode)), -EINVAL);
	assert_string_equal(mode, "unknown");
	assert_int_equal(kit_rm(root), 0);
}

/* keep_together and latency_apart stand down where the kernel places by cache. */
KIT_TEST(kernel_places)
{
	char root[] = "/tmp/rqb-feat-XXXXXX", why[320] = "", src[160], path[PATH_MAX];
	struct features f = { 0 };
	const char *built = "CONFIG_SCHED_CACHE=y in /boot/config-7.3.4";
	gzFile gz;

	kit_tmp(root, sizeof(root), "feat");
	assert_int_equal(features_kernel_places(root, "", 2, why, sizeof(why)), KERNEL_PLACES_NOT);
	/* No config and no BTF: not built, and said so. */
	assert_false(features_sched_cache_built(root, "6.20.0-1", src, sizeof(src)));
	assert_string_equal(src, "no kernel config and no BTF to read");
	/* Each place a distribution puts the config, for its own release only. */
	kit_put(root, "/boot/config-6.20.0-1", "CONFIG_SCHED_DEBUG=y\nCONFIG_SCHED_CACHE=y\n");
	kit_put(root, "/boot/config-6.20.0-2", "# CONFIG_SCHED_CACHE is not set\n");
	kit_put(root, "/usr/lib/modules/7.3.4+deb13-amd64/config", "CONFIG_SCHED_CACHE=y\n");
	kit_put(root, "/lib/modules/7.2.13/config", "CONFIG_SCHED_CACHE=yy\nCONFIG_SCHED_CACHE=y\n");
	assert_true(features_sched_cache_built(root, "6.20.0-1", src, sizeof(src)));
	assert_string_equal(src, "CONFIG_SCHED_CACHE=y in /boot/config-6.20.0-1");
	assert_false(features_sched_cache_built(root, "6.20.0-2", src, sizeof(src)));
	assert_string_equal(src, "no CONFIG_SCHED_CACHE in /boot/config-6.20.0-2");
	assert_true(features_sched_cache_built(root, "7.3.4+deb13-amd64", src, sizeof(src)));
	assert_string_equal(src, "CONFIG_SCHED_CACHE=y in /usr/lib/modules/7.3.4+deb13-amd64/config");
	assert_true(features_sched_cache_built(root, "7.2.13", src, sizeof(src)));
	assert_string_equal(src, "CONFIG_SCHED_CACHE=y in /lib/modules/7.2.13/config");
	/* /proc/config.gz, compressed, when no file names the release. */
	snprintf(path, sizeof(path), "%s/proc/config.gz", root);
	kit_put(root, "/proc/config.gz", "");
	gz = gzopen(path, "wb");
	assert_non_null(gz);
	gzputs(gz, "CONFIG_SMP=y\nCONFIG_SCHED_CACHE=y\n");
	gzclose(gz);
	assert_true(features_sched_cache_built(root, "7.4.0", src, sizeof(src)));
	assert_string_equal(src, "CONFIG_SCHED_CACHE=y in /proc/config.gz");
	/* Built in, and debugfs does not say (not mounted, or hidden by a sandbox): on. */
	assert_int_equal(features_kernel_places(root, built, 2, why, sizeof(why)),
			 KERNEL_PLACES_CACHE);
	assert_non_null(strstr(why, built));
	/* One LLC: nothing for it to choose between, whatever says it is on. */
	assert_int_equal(features_kernel_places(root, built, 1, why, sizeof(why)),
			 KERNEL_PLACES_NOT);
	/* debugfs says: it decides. */
	kit_put(root, "/sys/kernel/debug/sched/llc_balancing/enabled", "0\n");
	assert_int_equal(features_kernel_places(root, built, 2, why, sizeof(why)), KERNEL_PLACES_NOT);
	kit_put(root, "/sys/kernel/debug/sched/llc_balancing/enabled", "1\n");
	assert_int_equal(features_kernel_places(root, "", 2, why, sizeof(why)), KERNEL_PLACES_CACHE);
	assert_non_null(strstr(why, "llc_balancing/enabled"));
	assert_int_equal(features_kernel_places(root, "", 1, why, sizeof(why)), KERNEL_PLACES_NOT);
	assert_int_equal(kit_rm(root), 0);
	kit_tmp(root, sizeof(root), "feat");
	kit_put(root, "/sys/kernel/debug/sched/features", "GENTLE_FAIR_SLEEPERS NO_SCHED_CACHE\n");
	assert_int_equal(features_kernel_places(root, "", 2, why, sizeof(why)), KERNEL_PLACES_NOT);
	kit_put(root, "/sys/kernel/debug/sched/features", "GENTLE_FAIR_SLEEPERS SCHED_CACHE\n");
	assert_int_equal(features_kernel_places(root, "", 2, why, sizeof(why)), KERNEL_PLACES_CACHE);
	assert_non_null(strstr(why, "SCHED_CACHE"));
	assert_int_equal(kit_rm(root), 0);
	/* A sched_ext scheduler, loaded or not; loaded, it places on one LLC too. */
	kit_tmp(root, sizeof(root), "feat");
	kit_put(root, "/sys/kernel/sched_ext/state", "disabled\n");
	assert_int_equal(features_kernel_places(root, "", 2, why, sizeof(why)), KERNEL_PLACES_NOT);
	kit_put(root, "/sys/kernel/sched_ext/state", "enabled\n");
	kit_put(root, "/sys/kernel/sched_ext/root/ops", "lavd_1.0\n");
	assert_int_equal(features_kernel_places(root, built, 1, why, sizeof(why)),
			 KERNEL_PLACES_SCHED_EXT);
	assert_string_equal(why, "sched_ext scheduler lavd_1.0 is enabled: it places the tasks "
				 "it takes");
	assert_int_equal(kit_rm(root), 0);
	/* This host: its config or its BTF answers, and says which. */
	{
		struct utsname u;

		assert_int_equal(uname(&u), 0);
		features_sched_cache_built("", u.release, src, sizeof(src));
		assert_true(strstr(src, " in ") != NULL || strstr(src, "no kernel config") != NULL);
	}
	/* The feature line, and whether it changed. */
	assert_true(features_set_placement(&f, "", NULL));
	assert_int_equal(f.f[FEAT_PLACEMENT].state, FEAT_MISSING);
	assert_false(features_set_placement(&f, "", NULL));
	assert_true(features_set_placement(&f, "keep_together", NULL));
	assert_int_equal(f.f[FEAT_PLACEMENT].state, FEAT_USED);
	assert_true(features_set_placement(&f, "keep_together, latency_apart",
					   "sched_ext scheduler x is enabled"));
	assert_int_equal(f.f[FEAT_PLACEMENT].state, FEAT_MISSING);
	assert_string_equal(f.f[FEAT_PLACEMENT].detail, "keep_together, latency_apart standing "
							"down: sched_ext scheduler x is enabled");
}
