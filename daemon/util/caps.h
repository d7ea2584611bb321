/* Capabilities: the daemon's own, lowered once what needed them is set up. */
#ifndef RQB_CAPS_H
#define RQB_CAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CAPS_BIT(cap) (1ULL << (cap))

/* Effective and permitted sets of the calling thread's process. 0 or -errno. */
int caps_get(uint64_t *ret_effective, uint64_t *ret_permitted);
/*
 * Clears mask from the effective set, and permitted_mask (a subset of what is
 * cleared) from the permitted and inheritable sets too, and from the bounding set
 * where CAP_SETPCAP allows. 0 or -errno.
 */
int caps_drop(uint64_t mask, uint64_t permitted_mask);
/* Puts cap, still permitted, in the effective set, or takes it out. 0 or -errno. */
int caps_raise(int cap);
int caps_lower(int cap);
/* "cap_bpf, cap_perfmon", at most len bytes. */
void caps_format(uint64_t mask, char *buf, size_t len);

#endif
