/*
 * Actuate stage, systemd units: changes a unit's CPUWeight by asking systemd over D-Bus,
 * for the runtime only. It must never touch a unit's cgroup files, nor anything in a
 * unit's delegated subtree, and never write a unit's configuration under /etc.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actuate/cgsd.h"
#include "rqbalance.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define SD_MANAGER SD_DEST ".Manager"

/* The unit types with a cgroup, and the interface that carries their cgroup settings. */
static const struct {
	const char *suffix;
	const char *interface;
} unit_types[] = {
	{ ".service", SD_DEST ".Service" }, { ".scope", SD_DEST ".Scope" },
	{ ".slice", SD_DEST ".Slice" },     { ".socket", SD_DEST ".Socket" },
	{ ".mount", SD_DEST ".Mount" },     { ".swap", SD_DEST ".Swap" },
};

static bool ends_with(const char *s, size_t len, const char *suffix)
{
	size_t n = strlen(suffix);

	return len > n && memcmp(s + len - n, suffix, n) == 0;
}

static const char *interface_of(const char *name, size_t len)
{
	for (size_t i = 0; i < ARRAY_SIZE(unit_types); i++)
		if (ends_with(name, len, unit_types[i].suffix))
			return unit_types[i].interface;
	return NULL;
}

/* systemd's unit name alphabet; '\' appears in names that systemd escaped. */
static bool valid_name(const char *name, size_t len)
{
	if (len == 0 || len >= CGSD_UNIT_MAX || name[0] == '.')
		return false;
	for (size_t i = 0; i < len; i++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789:-_.\\@",
			    name[i]))
			return false;
	return true;
}

const char *cgsd_unit_interface(const char *unit)
{
	size_t len = strlen(unit);

	return valid_name(unit, len) ? interface_of(unit, len) : NULL;
}

/*
 * A slice is nested by its name: "a-b.slice" lives in "a.slice", a top-level slice has
 * no '-'. A directory whose name breaks that was not made by systemd.
 */
static bool slice_fits(const char *name, size_t len, const char *parent, size_t plen)
{
	size_t stem = len - strlen(".slice");

	if (plen == 0)
		return memchr(name, '-', stem) == NULL;
	plen -= strlen(".slice");
	return stem > plen + 1 && memcmp(name, parent, plen) == 0 && name[plen] == '-';
}

int cgsd_unit_for_cgroup(const char *cgroup_path, char *ret_unit, size_t size)
{
	const char *p = cgroup_path, *unit = NULL, *slice = "";
	size_t ulen = 0, slen = 0;
	bool leaf = false;

	if (!p || p[0] != '/')
		return -EINVAL;
	while (*p) {
		const char *c;
		size_t len;

		p += strspn(p, "/");
		len = strcspn(p, "/");
		if (len == 0)
			break;
		c = p;
		p += len;
		if (leaf)
			return -EPERM;
		/* cgroupfs names that clash with kernel files carry systemd's '_' escape. */
		if (c[0] == '_') {
			c++;
			len--;
		}
		if (!valid_name(c, len) || !interface_of(c, len))
			return -EINVAL;
		if (ends_with(c, len, ".slice")) {
			if (!slice_fits(c, len, slice, slen))
				return -EINVAL;
			slice = c;
			slen = len;
		} else {
			leaf = true;
		}
		unit = c;
		ulen = len;
	}
	if (!unit)
		return -EINVAL;
	if (ulen >= size)
		return -ENAMETOOLONG;
	memcpy(ret_unit, unit, ulen);
	ret_unit[ulen] = '\0';
	return 0;
}

int cgsd_open(const char *address, sd_bus **ret)
{
	sd_bus *bus = NULL;
	int r;

	if (!address) {
		r = sd_bus_open_system(&bus);
	} else {
		r = sd_bus_new(&bus);
		if (r >= 0)
			r = sd_bus_set_address(bus, address);
		if (r >= 0)
			r = sd_bus_set_bus_client(bus, 1);
		if (r >= 0)
			r = sd_bus_start(bus);
	}
	if (r >= 0)
		r = sd_bus_set_method_call_timeout(bus, CGSD_TIMEOUT_USEC);
	if (r < 0) {
		sd_bus_unref(bus);
		return r;
	}
	*ret = bus;
	return 0;
}

void cgsd_close(sd_bus *bus)
{
	sd_bus_flush_close_unref(bus);
}

/* Fills err with the D-Bus error (e may be NULL), or the errno text; passes r through. */
static int fail(int r, const sd_bus_error *e, char *err, size_t errlen)
{
	if (!err || errlen == 0)
		return r;
	if (e && sd_bus_error_is_set(e))
		snprintf(err, errlen, "%s: %s", e->name, e->message ? e->message : "(no message)");
	else
		snprintf(err, errlen, "%s", strerror(-r));
	return r;
}

static int not_a_unit(const char *unit, char *err, size_t errlen)
{
	if (err && errlen > 0)
		snprintf(err, errlen, "not the name of a unit with a cgroup");
	return -EINVAL;
}

static int unit_path(sd_bus *bus, const char *unit, char **ret, sd_bus_error *e)
{
	sd_bus_message *reply = NULL;
	const char *path;
	int r;

	r = sd_bus_call_method(bus, SD_DEST, SD_PATH, SD_MANAGER, "GetUnit", e, &reply, "s", unit);
	if (r >= 0)
		r = sd_bus_message_read(reply, "o", &path);
	if (r >= 0) {
		*ret = strdup(path);
		r = *ret ? 0 : -ENOMEM;
	}
	sd_bus_message_unref(reply);
	return r;
}

int cgsd_get_weight(sd_bus *bus, const char *unit, uint64_t *ret, char *err, size_t errlen)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	const char *iface = cgsd_unit_interface(unit);
	char *path = NULL;
	uint64_t w;
	int r;

	if (!iface)
		return not_a_unit(unit, err, errlen);
	r = unit_path(bus, unit, &path, &e);
	if (r >= 0)
		r = sd_bus_get_property_trivial(bus, SD_DEST, path, iface, "CPUWeight", &e, 't',
						&w);
	if (r >= 0)
		*ret = w;
	else
		fail(r, &e, err, errlen);
	free(path);
	sd_bus_error_free(&e);
	return r < 0 ? r : 0;
}

/* SetUnitProperties(unit, runtime=true, [("CPUWeight", <t weight>)]). */
static int set_cpu_weight(sd_bus *bus, const char *unit, uint64_t weight, char *err, size_t errlen)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	sd_bus_message *m = NULL;
	int r;

	if (!cgsd_unit_interface(unit))
		return not_a_unit(unit, err, errlen);
	r = sd_bus_message_new_method_call(bus, &m, SD_DEST, SD_PATH, SD_MANAGER,
					   "SetUnitProperties");
	if (r >= 0)
		r = sd_bus_message_append(m, "sb", unit, 1);
	if (r >= 0)
		r = sd_bus_message_append(m, "a(sv)", 1, "CPUWeight", "t", weight);
	if (r >= 0)
		r = sd_bus_call(bus, m, 0, &e, NULL);
	if (r < 0)
		fail(r, &e, err, errlen);
	sd_bus_message_unref(m);
	sd_bus_error_free(&e);
	return r < 0 ? r : 0;
}

int cgsd_set_weight(sd_bus *bus, const char *unit, uint64_t weight, char *err, size_t errlen)
{
	if (weight != CGSD_WEIGHT_UNSET && (weight < CGSD_WEIGHT_MIN || weight > CGSD_WEIGHT_MAX))
		return fail(-ERANGE, NULL, err, errlen);
	return set_cpu_weight(bus, unit, weight, err, errlen);
}

int cgsd_set_idle(sd_bus *bus, const char *unit, char *err, size_t errlen)
{
	return set_cpu_weight(bus, unit, CGSD_WEIGHT_IDLE, err, errlen);
}
