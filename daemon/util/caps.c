/*
 * Capabilities: lowers the daemon's privileges once the stages that needed them
 * (loading BPF, opening perf events) are set up. It never raises a capability that
 * is not already permitted.
 */
#include <errno.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "util/caps.h"
#include "rqbalance.h"

struct capsets {
	struct __user_cap_header_struct h;
	struct __user_cap_data_struct d[2]; /* 64 bits as two 32-bit words */
};

static int get_sets(struct capsets *c)
{
	memset(c, 0, sizeof(*c));
	c->h.version = _LINUX_CAPABILITY_VERSION_3;
	return syscall(SYS_capget, &c->h, c->d) < 0 ? -errno : 0;
}

static int set_sets(struct capsets *c)
{
	c->h.version = _LINUX_CAPABILITY_VERSION_3;
	c->h.pid = 0;
	return syscall(SYS_capset, &c->h, c->d) < 0 ? -errno : 0;
}

static uint64_t join(uint32_t lo, uint32_t hi)
{
	return (uint64_t)hi << 32 | lo;
}

static void clear(uint32_t *lo, uint32_t *hi, uint64_t mask)
{
	*lo &= ~(uint32_t)mask;
	*hi &= ~(uint32_t)(mask >> 32);
}

int caps_get(uint64_t *ret_effective, uint64_t *ret_permitted)
{
	struct capsets c;
	int r = get_sets(&c);

	if (r < 0)
		return r;
	*ret_effective = join(c.d[0].effective, c.d[1].effective);
	*ret_permitted = join(c.d[0].permitted, c.d[1].permitted);
	return 0;
}

int caps_drop(uint64_t mask, uint64_t permitted_mask)
{
	struct capsets c;
	int r = get_sets(&c);

	if (r < 0)
		return r;
	permitted_mask &= mask;
	/* The bounding set first: dropping it needs CAP_SETPCAP, still effective here. */
	for (int cap = 0; cap < 64; cap++)
		if (permitted_mask & CAPS_BIT(cap))
			prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
	clear(&c.d[0].effective, &c.d[1].effective, mask);
	clear(&c.d[0].permitted, &c.d[1].permitted, permitted_mask);
	clear(&c.d[0].inheritable, &c.d[1].inheritable, permitted_mask);
	return set_sets(&c);
}

static int set_effective(int cap, bool on)
{
	struct capsets c;
	int r = get_sets(&c);
	uint32_t bit = 1u << (cap % 32);

	if (r < 0)
		return r;
	if (cap < 0 || cap >= 64)
		return -EINVAL;
	if (on && !(c.d[cap / 32].permitted & bit))
		return -EPERM;
	if (on)
		c.d[cap / 32].effective |= bit;
	else
		c.d[cap / 32].effective &= ~bit;
	return set_sets(&c);
}

int caps_raise(int cap)
{
	return set_effective(cap, true);
}

int caps_lower(int cap)
{
	return set_effective(cap, false);
}

static const char *cap_name(int cap)
{
	switch (cap) {
	case CAP_SYS_ADMIN: return "cap_sys_admin";
	case CAP_SYS_NICE: return "cap_sys_nice";
	case CAP_SYS_PTRACE: return "cap_sys_ptrace";
	case CAP_SYS_RESOURCE: return "cap_sys_resource";
	case CAP_PERFMON: return "cap_perfmon";
	case CAP_BPF: return "cap_bpf";
	default: return NULL;
	}
}

void caps_format(uint64_t mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int cap = 0; cap < 64 && n < len; cap++) {
		const char *name = cap_name(cap);
		int w;

		if (!(mask & CAPS_BIT(cap)))
			continue;
		w = name ? snprintf(buf + n, len - n, "%s%s", n ? ", " : "", name)
			 : snprintf(buf + n, len - n, "%scap %d", n ? ", " : "", cap);
		if (w < 0)
			return;
		n += (size_t)w;
	}
}
