/* Topology: CPUs, cores, SMT siblings, LLC groups and NUMA nodes, from hwloc. */
#ifndef RQB_TOPO_H
#define RQB_TOPO_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

#include "model/model.h"

struct topo_opts {
	const char *xml;         /* hwloc XML file, or NULL */
	const char *synthetic;   /* hwloc synthetic description, or NULL */
	/*
	 * Keep only CPUs that are online on the machine that runs us, read from
	 * root/sys/devices/system/cpu/online. The daemon sets it; unit tests and
	 * the simulator, which describe machines that are not this one, do not, and
	 * their topology takes no X3D mode from this machine's sysfs (unless root is
	 * given and not "").
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
/*
 * Follows the X3D mode, from root/sys/bus/platform/drivers/amd_x3d_vcache: the user
 * may switch it at any time (x3dctl, a write to the file). Returns 1 if t->x3d_mode
 * changed, 0 if not; a driver that has gone counts as TOPO_X3D_NONE.
 */
int topo_follow_x3d(struct topo *t, const char *root);
/* The driver's word for a mode ("frequency", "cache"), or "none". */
const char *topo_x3d_name(enum topo_x3d mode);
/* One line: "2 CPUs, 2 cores, 2 LLCs, 1 NUMA node (source)". */
void topo_describe(const struct topo *t, char *buf, size_t len);
/*
 * Kind of core k of t (0 <= k < t->nkinds), in the words rqctl status, --show-topology
 * and the log all print it: "cpus 1 efficiency 0 type IntelAtom max_mhz 4300". The
 * type pair is left out where hwloc names none; a byte that would split hwloc's word
 * into two (or move a terminal) becomes '_'.
 */
void topo_kind_describe(const struct topo *t, int k, char *buf, size_t len);

#endif
