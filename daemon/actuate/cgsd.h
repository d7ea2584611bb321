/*
 * CPU weight of systemd units, set through systemd over D-Bus (sd-bus): on a systemd
 * host the cgroups systemd made are systemd's, so rqbalance asks the manager with
 * SetUnitProperties(unit, runtime=true, CPUWeight=…) and never writes their files.
 * Values are systemd's CPUWeight= (D-Bus type t): 1…10000, CGSD_WEIGHT_UNSET for
 * "[not set]" (what a unit has until someone sets it) and CGSD_WEIGHT_IDLE for "idle"
 * (systemd 252 and later: cpu.idle = 1 on cgroup2).
 */
#ifndef RQB_CGSD_H
#define RQB_CGSD_H

#include <stddef.h>
#include <stdint.h>

#include <systemd/sd-bus.h>

#define CGSD_WEIGHT_UNSET UINT64_MAX /* systemd's CGROUP_WEIGHT_INVALID */
#define CGSD_WEIGHT_IDLE 0ULL        /* systemd's CGROUP_WEIGHT_IDLE (252+) */
#define CGSD_WEIGHT_MIN 1ULL
#define CGSD_WEIGHT_MAX 10000ULL
#define CGSD_UNIT_MAX 256            /* systemd's UNIT_NAME_MAX, with the NUL */
#define CGSD_TIMEOUT_USEC 2000000ULL /* a method call waits at most this long */

/*
 * The unit of the system manager that owns cgroup_path (relative to the cgroup root,
 * as in /proc/PID/cgroup): "/system.slice/foo.service" → "foo.service",
 * "/user.slice/user-1000.slice" → "user-1000.slice". Pure: no I/O.
 * 0; -EINVAL when no unit owns it (the root, a cgroup someone made by hand, a name
 * that is not a unit with a cgroup); -EPERM when it lies below a service, scope,
 * socket, mount or swap unit: that is the unit's delegated subtree (or its user
 * manager's units), which belongs to the unit's payload, not to systemd and not to
 * us, so neither SetUnitProperties nor a write may touch it; -ENAMETOOLONG if the
 * name does not fit size.
 */
int cgsd_unit_for_cgroup(const char *cgroup_path, char *ret_unit, size_t size);

/*
 * The D-Bus interface that carries CPUWeight for unit's type
 * ("org.freedesktop.systemd1.Service", …), or NULL for a unit type without a cgroup.
 */
const char *cgsd_unit_interface(const char *unit);

/*
 * Connects to systemd's bus: address NULL is the system bus (which honours
 * $DBUS_SYSTEM_BUS_ADDRESS), otherwise a D-Bus address such as a test's private bus.
 * Method calls time out after CGSD_TIMEOUT_USEC. 0 or -errno.
 */
int cgsd_open(const char *address, sd_bus **ret);
void cgsd_close(sd_bus *bus);

/*
 * The calls below return 0 or -errno: sd-bus's mapping of the D-Bus error (NoSuchUnit
 * → -ENOENT, AccessDenied → -EACCES, InvalidArgs → -EINVAL, no systemd on the bus →
 * -EHOSTUNREACH, a timeout → -ETIMEDOUT, an unmapped name → -EIO), -EINVAL for a unit
 * name that cannot have a cgroup, -ERANGE for a weight systemd would refuse.
 * err (may be NULL) gets "D-Bus error name: message", or the errno text, on failure
 * only: the caller logs it, once, quoting the unit.
 */

/* The unit's CPUWeight, CGSD_WEIGHT_UNSET and CGSD_WEIGHT_IDLE passed through. */
int cgsd_get_weight(sd_bus *bus, const char *unit, uint64_t *ret, char *err, size_t errlen);
/*
 * Sets CPUWeight for the runtime only (nothing under /etc): 1…10000, or
 * CGSD_WEIGHT_UNSET to give the unit back to its configuration.
 */
int cgsd_set_weight(sd_bus *bus, const char *unit, uint64_t weight, char *err, size_t errlen);
/*
 * CPUWeight=idle, which systemd 252 sends over D-Bus as the weight 0. A systemd
 * before 252 refuses it with InvalidArgs (-EINVAL).
 */
int cgsd_set_idle(sd_bus *bus, const char *unit, char *err, size_t errlen);

#endif
