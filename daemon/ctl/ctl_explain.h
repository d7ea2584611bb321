/*
 * rqctl explain: for a process, a thread or a cgroup, the value it has from rqbalance
 * and where it came from (or why it has none), what the value maps to on this kernel,
 * and each knob's state: applied, left to someone who changed it since, or without
 * effect and why. One "key text" line each, keys unique (rqctl --json makes them an
 * object).
 */
#ifndef RQB_CTL_EXPLAIN_H
#define RQB_CTL_EXPLAIN_H

#include <stdbool.h>
#include <sys/types.h>

struct daemon;
struct ctl_caller;

struct explain_target {
	bool thread;          /* a thread (tid), not a whole process */
	pid_t tid;            /* the process (its first thread) or the thread */
	pid_t tgid;
	const char *cgroup;   /* a cgroup target, or NULL */
};

/*
 * The explanation of t for caller k (who may see t: ctl_req_look), malloc'd into
 * *ret. detail: the caller may act on t (its owner, or privileged): only then are
 * values read from the process itself (its exe, command line, uid, cgroup) shown, to
 * say why a rule does not match. Another task it names (the one it inherited its value
 * from) is named only where k may see that one too. 0 or -errno.
 */
int ctl_explain(struct daemon *d, const struct ctl_caller *k, const struct explain_target *t,
		bool detail, char **ret);

#endif
