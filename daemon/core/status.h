/* rqctl status's text, built by the daemon for the doors to send as it is. */
#ifndef RQB_STATUS_H
#define RQB_STATUS_H

#include <stddef.h>

struct ctl_caller;
struct ctl_env;
struct daemon_stats;
struct peers;

/*
 * The status text for caller k, NUL-terminated in out (len > 0): st's counts, the
 * LLCs and kinds of core of st's topology, then what else shapes scheduling, p's
 * findings as k's /proc would show them (ctl_req_finding, through x).
 */
void status_text(const struct daemon_stats *st, const struct peers *p, struct ctl_env *x,
		 const struct ctl_caller *k, char *out, size_t len);

#endif
