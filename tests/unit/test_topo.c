/*
 * Topology from hwloc: synthetic machines, the shipped fake XML (the desktop parts with
 * kinds of core and two CCDs too), offline CPUs left out, CPUs that go offline and
 * come back after the load, and the X3D mode from a fake sysfs, at load and after.
 */
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit.h"

KIT_TEST(two_llcs_one_cpu_each)
{
	struct topo *t = kit_topo("package:1 l3cache:2 core:1 pu:1");

	assert_int_equal(t->ncpus, 2);
	assert_int_equal(t->nllcs, 2);
	assert_int_equal(topo_llc_of(t, 0), 0);
	assert_int_equal(topo_llc_of(t, 1), 1);
	assert_int_equal(topo_llc_of(t, 2), -1);
	assert_int_equal(t->llcs[1].ncpus, 1);
	topo_free(t);
}

KIT_TEST(smt_siblings_share_a_core)
{
	struct topo *t = kit_topo("package:2 l3cache:4 core:4 pu:2");
	char buf[256];

	assert_int_equal(t->ncpus, 64);
	assert_int_equal(t->ncores, 32);
	assert_int_equal(t->nllcs, 8);
	for (int l = 0; l < t->nllcs; l++)
		assert_int_equal(t->llcs[l].ncpus, 8);
	/* PUs 0 and 1 are the two threads of core 0; 2 is another core, same LLC. */
	assert_int_equal(t->cpus[0].core, t->cpus[1].core);
	assert_int_not_equal(t->cpus[0].core, t->cpus[2].core);
	assert_int_equal(t->cpus[0].llc, t->cpus[7].llc);
	assert_int_not_equal(t->cpus[7].llc, t->cpus[8].llc);
	assert_int_equal(t->cpus[0].package, 0);
	assert_int_equal(t->cpus[63].package, 1);
	topo_describe(t, buf, sizeof(buf));
	assert_string_equal(buf, "64 CPUs, 32 cores, 8 LLCs, 1 NUMA node "
				 "(package:2 l3cache:4 core:4 pu:2)");
	topo_free(t);
}

KIT_TEST(big_numa_machine)
{
	struct topo *t =
		kit_topo("package:2 [numa(memory=64GB)] l3cache:8(size=32MB) core:8 pu:2");

	assert_int_equal(t->ncpus, 256);
	assert_int_equal(t->nllcs, 16);
	assert_int_equal(t->nnuma, 2);
	assert_int_equal(t->llcs[0].numa, 0);
	assert_int_equal(t->llcs[15].numa, 1);
	assert_int_equal(t->cpus[255].numa, 1);
	topo_free(t);
}

KIT_TEST(no_cache_means_one_llc_per_package)
{
	struct topo *t = kit_topo("package:2 core:2 pu:1");

	assert_int_equal(t->nllcs, 2);
	assert_int_equal(t->cpus[0].llc, t->cpus[1].llc);
	assert_int_not_equal(t->cpus[1].llc, t->cpus[2].llc);
	topo_free(t);
}

KIT_TEST(fake_xml_maps_real_cpus)
{
	struct topo_opts o = { .xml = KIT_DATA("topo-2llc.xml") };
	struct topo *t = NULL;

	assert_int_equal(topo_load(&o, &t), 0);
	assert_int_equal(t->nllcs, 2);
	assert_int_equal(topo_llc_of(t, 0), 0);
	assert_int_equal(topo_llc_of(t, 1), 1);
	topo_free(t);
}

static struct topo *load_xml(const char *path)
{
	struct topo_opts o = { .xml = path };
	struct topo *t = NULL;

	assert_int_equal(topo_load(&o, &t), 0);
	return t;
}

static void kind_is(const struct topo *t, int k, const char *cpus, int eff, const char *type,
		    unsigned mhz)
{
	char buf[256];

	assert_true(k < t->nkinds);
	assert_string_equal(cpumask_format(&t->kinds[k].cpus, buf, sizeof(buf)), cpus);
	assert_int_equal(t->kinds[k].ncpus, CPU_COUNT(&t->kinds[k].cpus));
	assert_int_equal(t->kinds[k].efficiency, eff);
	assert_string_equal(t->kinds[k].type, type);
	assert_int_equal(t->kinds[k].max_mhz, mhz);
}

/*
 * The desktop parts of issue #44 (tests/data/gen_topo.py): kinds of core in hwloc's
 * order, most efficient first, each CPU knowing its own; each LLC with its size.
 */
KIT_TEST(hybrid_kinds)
{
	struct topo *t = load_xml(KIT_DATA("topo-hybrid-8p16e.xml"));

	assert_int_equal(t->ncpus, 32);
	assert_int_equal(t->ncores, 24);
	assert_int_equal(t->nllcs, 1);
	assert_int_equal(t->llcs[0].size_kb, 36 * 1024);
	assert_int_equal(t->nkinds, 2);
	kind_is(t, 0, "16-31", 0, "IntelAtom", 4300);
	kind_is(t, 1, "0-15", 1, "IntelCore", 5800);
	assert_int_equal(t->cpus[0].kind, 1);
	assert_int_equal(t->cpus[15].kind, 1);
	assert_int_equal(t->cpus[16].kind, 0);
	topo_free(t);

	/* The low-power E-cores have an LLC of their own: their L2. */
	t = load_xml(KIT_DATA("topo-hybrid-lp.xml"));
	assert_int_equal(t->ncpus, 22);
	assert_int_equal(t->nllcs, 2);
	assert_int_equal(t->cpus[0].llc, t->cpus[19].llc);
	assert_int_not_equal(t->cpus[19].llc, t->cpus[20].llc);
	assert_int_equal(t->llcs[t->cpus[0].llc].size_kb, 24 * 1024);
	assert_int_equal(t->llcs[t->cpus[20].llc].size_kb, 2 * 1024);
	assert_int_equal(t->nkinds, 3);
	kind_is(t, 0, "20-21", 0, "IntelAtom", 2500);
	kind_is(t, 1, "12-19", 1, "IntelAtom", 3800);
	kind_is(t, 2, "0-11", 2, "IntelCore", 4800);
	topo_free(t);
}

/* Two CCDs: the V-cache one is the larger LLC and the slower kind. */
KIT_TEST(x3d_ccds)
{
	static const char *const parts[] = { KIT_DATA("topo-7950x3d.xml"),
					     KIT_DATA("topo-9950x3d.xml") };
	static const unsigned mhz0[] = { 5250, 5450 };

	for (int i = 0; i < 2; i++) {
		struct topo *t = load_xml(parts[i]);

		assert_int_equal(t->ncpus, 32);
		assert_int_equal(t->ncores, 16);
		assert_int_equal(t->nllcs, 2);
		assert_int_equal(t->cpus[0].llc, t->cpus[16].llc);
		assert_int_not_equal(t->cpus[7].llc, t->cpus[8].llc);
		assert_int_equal(t->llcs[t->cpus[0].llc].size_kb, 96 * 1024);
		assert_int_equal(t->llcs[t->cpus[8].llc].size_kb, 32 * 1024);
		assert_int_equal(t->nkinds, 2);
		kind_is(t, 0, "0-7,16-23", 0, "", mhz0[i]);
		kind_is(t, 1, "8-15,24-31", 1, "", 5700);
		topo_free(t);
	}
}

/* A machine with one kind: none listed, every CPU of kind -1. */
KIT_TEST(one_kind)
{
	struct topo *t = load_xml(KIT_DATA("topo-2llc.xml"));

	assert_int_equal(t->nkinds, 0);
	assert_int_equal(t->cpus[0].kind, -1);
	topo_free(t);
}

KIT_TEST(missing_xml_is_an_error)
{
	struct topo_opts o = { .xml = "/nonexistent/topo.xml" };
	struct topo *t = (struct topo *)0x1;

	assert_true(topo_load(&o, &t) < 0);
	assert_ptr_equal(t, (struct topo *)0x1);
}

KIT_TEST(offline_cpus_left_out)
{
	char root[] = "/tmp/rqb-topo.XXXXXX";
	struct topo_opts o = { .synthetic = "package:1 l3cache:2 core:4 pu:1",
			       .filter_online = true, .root = root };
	struct topo *t = NULL;

	kit_tmp(root, sizeof(root), "topo");
	kit_put(root, "sys/devices/system/cpu/online", "0-2,5\n");
	assert_int_equal(topo_load(&o, &t), 0);
	assert_int_equal(t->ncpus, 4);
	assert_int_equal(t->noffline, 4);
	assert_false(t->cpus[3].present);
	assert_false(t->cpus[4].present);
	assert_true(t->cpus[5].present);
	assert_int_equal(t->llcs[0].ncpus, 3);
	assert_int_equal(t->llcs[1].ncpus, 1);
	assert_int_equal(topo_llc_of(t, 4), -1);
	topo_free(t);
	assert_int_equal(kit_rm(root), 0);
}

static void write_online(const char *root, const char *list)
{
	kit_put(root, "sys/devices/system/cpu/online", list);
}

/* CPUs going offline and back after the load: out of their LLC, then in again. */
KIT_TEST(hotplug_followed)
{
	char root[] = "/tmp/rqb-topo.XXXXXX";
	struct topo_opts o = { .synthetic = "package:1 l3cache:2 core:2 pu:1",
			       .filter_online = true, .root = root };
	struct topo *t = NULL;
	cpu_set_t went, came;

	kit_tmp(root, sizeof(root), "topo");
	write_online(root, "0-2\n");
	assert_int_equal(topo_load(&o, &t), 0);
	assert_int_equal(t->ncpus, 3);
	assert_int_equal(topo_follow_online(t, root, &went, &came), 0);

	write_online(root, "0,2-3\n");
	assert_int_equal(topo_follow_online(t, root, &went, &came), 1);
	assert_true(CPU_ISSET(1, &went) && CPU_COUNT(&went) == 1 && CPU_COUNT(&came) == 0);
	assert_false(t->cpus[1].present);
	assert_int_equal(topo_llc_of(t, 1), -1);
	assert_false(CPU_ISSET(1, &t->online));
	assert_false(CPU_ISSET(1, &t->llcs[0].cpus));
	assert_int_equal(t->llcs[0].ncpus, 1);
	assert_int_equal(t->ncpus, 2);
	/* CPU 3 was offline at the load: never placed, it stays out. */
	assert_false(t->cpus[3].present);
	assert_int_equal(t->noffline, 2);

	write_online(root, "0-3\n");
	assert_int_equal(topo_follow_online(t, root, NULL, &came), 1);
	assert_true(CPU_ISSET(1, &came) && CPU_COUNT(&came) == 1);
	assert_int_equal(topo_llc_of(t, 1), 0);
	assert_int_equal(t->llcs[0].ncpus, 2);
	assert_int_equal(t->ncpus, 3);
	assert_int_equal(t->noffline, 1);

	assert_int_equal(kit_rm(root), 0);
	assert_true(topo_follow_online(t, root, &went, &came) < 0);
	assert_int_equal(t->ncpus, 3);
	topo_free(t);
}

/* A CPU of a kind going offline and back: out of its kind's CPUs, then in again. */
KIT_TEST(kinds_follow_hotplug)
{
	char root[] = "/tmp/rqb-topo.XXXXXX";
	struct topo_opts o = { .xml = KIT_DATA("topo-hybrid-8p16e.xml"),
			       .filter_online = true, .root = root };
	struct topo *t = NULL;

	kit_tmp(root, sizeof(root), "topo");
	/* CPU 31 offline at the load: in no kind, and never placed. */
	write_online(root, "0-30\n");
	assert_int_equal(topo_load(&o, &t), 0);
	kind_is(t, 0, "16-30", 0, "IntelAtom", 4300);
	assert_int_equal(t->cpus[31].kind, -1);
	write_online(root, "0-15,17-31\n");
	assert_int_equal(topo_follow_online(t, root, NULL, NULL), 1);
	kind_is(t, 0, "17-30", 0, "IntelAtom", 4300);
	kind_is(t, 1, "0-15", 1, "IntelCore", 5800);
	write_online(root, "0-31\n");
	assert_int_equal(topo_follow_online(t, root, NULL, NULL), 1);
	kind_is(t, 0, "16-30", 0, "IntelAtom", 4300);
	topo_free(t);
	assert_int_equal(kit_rm(root), 0);
}

/*
 * A fake root with the amd_x3d_vcache driver's directory as the kernel lays it out:
 * files of the driver's own beside the device, whose mode file holds word (NULL: the
 * driver is there, its device is not).
 */
static void x3d_fake(const char *root, const char *word)
{
	char dir[PATH_MAX];

	snprintf(dir, sizeof(dir), "%s/sys/bus/platform/drivers/amd_x3d_vcache", root);
	kit_rm(dir);
	kit_put(dir, "bind", "");
	kit_put(dir, "uevent", "");
	if (word)
		kit_put(dir, "AMDI0101:00/amd_x3d_mode", word);
}

static enum topo_x3d x3d_loaded(const char *root)
{
	struct topo_opts o = { .xml = KIT_DATA("topo-7950x3d.xml"), .root = root };
	struct topo *t = NULL;
	enum topo_x3d m;

	assert_int_equal(topo_load(&o, &t), 0);
	m = t->x3d_mode;
	topo_free(t);
	return m;
}

/* The driver's two words, at load, for a fake XML topology too; anything else is none. */
KIT_TEST(x3d_mode_at_load)
{
	char root[] = "/tmp/rqb-topo.XXXXXX";

	kit_tmp(root, sizeof(root), "topo");
	assert_int_equal(x3d_loaded(root), TOPO_X3D_NONE); /* no driver */
	x3d_fake(root, NULL);
	assert_int_equal(x3d_loaded(root), TOPO_X3D_NONE); /* a driver, no device */
	x3d_fake(root, "cache\n");
	assert_int_equal(x3d_loaded(root), TOPO_X3D_CACHE);
	x3d_fake(root, "frequency\n");
	assert_int_equal(x3d_loaded(root), TOPO_X3D_FREQUENCY);
	x3d_fake(root, "cache"); /* no newline */
	assert_int_equal(x3d_loaded(root), TOPO_X3D_CACHE);
	x3d_fake(root, "turbo\n");
	assert_int_equal(x3d_loaded(root), TOPO_X3D_NONE);
	x3d_fake(root, "cachefrequency\n");
	assert_int_equal(x3d_loaded(root), TOPO_X3D_NONE);
	x3d_fake(root, "");
	assert_int_equal(x3d_loaded(root), TOPO_X3D_NONE);
	assert_int_equal(kit_rm(root), 0);
}

/* A switch at run time (x3dctl) is seen once; the driver going away is a change too. */
KIT_TEST(x3d_mode_followed)
{
	char root[] = "/tmp/rqb-topo.XXXXXX";
	struct topo_opts o = { .xml = KIT_DATA("topo-9950x3d.xml"), .root = root };
	struct topo *t = NULL;

	kit_tmp(root, sizeof(root), "topo");
	x3d_fake(root, "frequency\n");
	assert_int_equal(topo_load(&o, &t), 0);
	assert_int_equal(t->x3d_mode, TOPO_X3D_FREQUENCY);
	assert_int_equal(topo_follow_x3d(t, root), 0);
	assert_int_equal(t->x3d_mode, TOPO_X3D_FREQUENCY);

	x3d_fake(root, "cache\n");
	assert_int_equal(topo_follow_x3d(t, root), 1);
	assert_int_equal(t->x3d_mode, TOPO_X3D_CACHE);
	assert_int_equal(topo_follow_x3d(t, root), 0);
	assert_int_equal(t->x3d_mode, TOPO_X3D_CACHE);

	x3d_fake(root, "frequency\n");
	assert_int_equal(topo_follow_x3d(t, root), 1);
	assert_int_equal(t->x3d_mode, TOPO_X3D_FREQUENCY);

	assert_int_equal(kit_rm(root), 0);
	assert_int_equal(topo_follow_x3d(t, root), 1);
	assert_int_equal(t->x3d_mode, TOPO_X3D_NONE);
	assert_int_equal(topo_follow_x3d(t, root), 0);
	topo_free(t);
}

/* The words rqctl status and --show-topology print: the driver's own. */
KIT_TEST(x3d_names)
{
	assert_string_equal(topo_x3d_name(TOPO_X3D_NONE), "none");
	assert_string_equal(topo_x3d_name(TOPO_X3D_FREQUENCY), "frequency");
	assert_string_equal(topo_x3d_name(TOPO_X3D_CACHE), "cache");
}

/*
 * A kind in the words status, --show-topology and the log print: the type pair left
 * out where hwloc names none, and a byte that would split or colour it made '_'.
 */
KIT_TEST(kind_words)
{
	struct topo t = { .nkinds = 2 };
	char buf[256];

	CPU_SET(1, &t.kinds[0].cpus);
	CPU_SET(0, &t.kinds[1].cpus);
	CPU_SET(2, &t.kinds[1].cpus);
	t.kinds[0] = (struct topo_kind){ .cpus = t.kinds[0].cpus, .efficiency = 0,
					 .type = "Intel Atom\x1b", .max_mhz = 4300 };
	t.kinds[1] = (struct topo_kind){ .cpus = t.kinds[1].cpus, .efficiency = -1 };
	topo_kind_describe(&t, 0, buf, sizeof(buf));
	assert_string_equal(buf, "cpus 1 efficiency 0 type Intel_Atom_ max_mhz 4300");
	topo_kind_describe(&t, 1, buf, sizeof(buf));
	assert_string_equal(buf, "cpus 0,2 efficiency -1 max_mhz 0");
}
