/* Topology: CPUs, cores, SMT siblings, LLC groups and NUMA nodes, from hwloc. */
#ifndef RQB_TOPO_H
#define RQB_TOPO_H

#include <sched.h>
#include <stdbool.h>

struct topo_cpu {
	bool present;   /* in the topology and online */
	bool placed;    /* online when the topology was loaded: core, llc and the rest hold */
	int core;       /* index into the core numbering, SMT siblings share it */
	int llc;        /* index into topo.llcs */
	int numa;       /* NUMA node logical index, 0 where none */
	int package;    /* package logical index */
};

struct topo_llc {
	cpu_set_t cpus; /* online CPUs sharing this last-level cache */
	int ncpus;
	int ncores;     /* cores with an online CPU in it (SMT siblings count once) */
	int numa;       /* NUMA node of its first CPU */
	int package;
};

struct topo {
	int nr_cpu_ids;          /* highest OS CPU number + 1 */
	int ncpus;               /* online CPUs in the topology */
	int ncores;
	int nnuma;
	int nllcs;
	int noffline;            /* CPUs the topology names that are not online now */
	cpu_set_t online;        /* the CPUs rqbalance may place work on */
	struct topo_cpu *cpus;   /* indexed by OS CPU number, nr_cpu_ids entries */
	struct topo_llc *llcs;   /* nllcs entries */
	char source[256];        /* "this system", the XML file, or the synthetic string */
};

struct topo_opts {
	const char *xml;         /* hwloc XML file, or NULL */
	const char *synthetic;   /* hwloc synthetic description, or NULL */
	/*
	 * Keep only CPUs that are online on the machine that runs us, read from
	 * root/sys/devices/system/cpu/online. The daemon sets it; unit tests and
	 * the simulator, which describe machines that are not this one, do not.
	 */
	bool filter_online;
	const char *root;        /* path prefix for /sys, "" or NULL for / */
};

/* Loads a topology; 0 or -errno, and on failure *ret is untouched. */
int topo_load(const struct topo_opts *o, struct topo **ret);
void topo_free(struct topo *t);
/*
 * Follows CPU hotplug, from root/sys/devices/system/cpu/online: a placed CPU that has
 * gone offline leaves its LLC, t->online and the counts until it is back; one that was
 * offline when the topology was loaded was never placed and stays out. LLC numbers do
 * not change (an LLC may be left with no CPU). ret_went and ret_came (NULL: not
 * wanted) get the CPUs that went and came back. Returns how many changed, or -errno
 * with t untouched.
 */
int topo_follow_online(struct topo *t, const char *root, cpu_set_t *ret_went,
		       cpu_set_t *ret_came);
/* One line: "2 CPUs, 2 cores, 2 LLCs, 1 NUMA node (source)". */
void topo_describe(const struct topo *t, char *buf, size_t len);
static inline int topo_llc_of(const struct topo *t, int cpu)
{
	return (cpu >= 0 && cpu < t->nr_cpu_ids && t->cpus[cpu].present) ? t->cpus[cpu].llc : -1;
}

#endif
