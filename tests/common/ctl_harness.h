/*
 * What the ctl server sees of a daemon, in memory, shared by the ctl fuzz target, the
 * ctl server's unit test and the latency manager's: a config, a latency manager over a
 * dry-run latency actuator whose task operations refuse every
 * task, and targets resolved under a fake /proc and a fake cgroup hierarchy in a
 * temporary directory, with a config file there. Connections are served through
 * ctl_serve_fd() on a socketpair. Nothing outside the temporary directory is written;
 * the fake tasks' pids are above the kernel's PID_MAX_LIMIT, so no real task is ever
 * named by them. A failure to build any of it aborts: there is nothing to test then.
 */
#ifndef RQB_CTL_HARNESS_H
#define RQB_CTL_HARNESS_H

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuate/latact.h"
#include "conf/conf.h"
#include "core/status.h"
#include "ctl/ctl_bus.h"
#include "ctl/ctl.h"
#include "ctl/ctl_req.h"
#include "diag/peers.h"
#include "latmgr/latmgr.h"
#include "model/stats.h"
#include "sample/topo.h"
#include "snapshot/snap.h"
#include "taskev/ident.h"
#include "util/schedattr.h"

#define CTLH_CHECK(cond)                                                                  \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "%s:%d: harness: %s\n", __FILE__, __LINE__, #cond);  \
			abort();                                                          \
		}                                                                         \
	} while (0)

/*
 * Above PID_MAX_LIMIT (4194304): no real task has these ids, so what reads the real
 * /proc by pid (the affinity actuator, prlimit) finds nothing, whatever the machine.
 */
#define CTLH_BASE 4194400
#define CTLH_PEER (CTLH_BASE + 0)   /* the caller's process: "self" */
#define CTLH_PROC_A (CTLH_BASE + 1) /* uid 1000's, threads A and A + 1 */
#define CTLH_PROC_C (CTLH_BASE + 3) /* uid 1000's leader, thread C + 1 is root's */
#define CTLH_PROC_B (CTLH_BASE + 5) /* root's */
#define CTLH_PROC_D (CTLH_BASE + 7) /* uid 1001's */
#define CTLH_GHOST (CTLH_BASE + 9)  /* managed, but not in the fake /proc */
#define CTLH_START_TIME 4242
#define CTLH_NICE_CAP (1ULL << 23)  /* CAP_SYS_NICE in CapEff */

/* The daemon's setting, as a test or a fuzz input's scenario bytes pick it. */
struct ctlh_scenario {
	bool ctl_group;         /* ctl_group = root */
	uint8_t managed;        /* 1: task entries, 2: process records, 4: cgroup entries */
	bool classes;           /* class cgroups on */
	uint64_t ticks;
	uint8_t runnable;       /* two bits a CPU: its nr_running */
};

/* The daemon, as far as the doors see it (struct ctl_env): no struct daemon. */
struct ctlh {
	struct rqb_conf conf;
	struct latact lat;
	struct latmgr lm;
	struct ctl_req_lim req;
	struct ctl_env env;
	struct ctl_server ctl;
	struct ctl_bus bus;         /* the D-Bus API, where a test attaches one */
	uint64_t ticks;
};

extern char ctlh_tmp[PATH_MAX], ctlh_proc_root[PATH_MAX], ctlh_cg_mount[PATH_MAX];
extern struct topo *ctlh_topo;
extern sd_event *ctlh_loop;
/* The harness's driver: the dry-run driver on the fake tasks (ctl_harness.c says which). */
extern struct act_ops ctlh_ops;

/* ---- the fake system, under ctlh_tmp ---- */

/* The fake system, a two-LLC synthetic topology, its snapshot and an event loop. */
void ctlh_init(const char *name);
/* Writes text to rel, under the fake system's directory. */
void ctlh_put(const char *rel, const char *text);
void ctlh_dir(const char *rel);
/* Task tid's stat (parent ppid), status and id maps in directory at/TID. */
void ctlh_task_files(const char *at, pid_t tid, pid_t tgid, pid_t ppid, unsigned uid,
		     unsigned gid, uint64_t cap_eff);
/* A process with its threads (uids[i] the i-th's), in proc/PID and proc/PID/task/TID. */
void ctlh_process(pid_t tgid, const unsigned *uids, int nthreads, uint64_t cap_eff);
/* Whose every thread is uid's, as the fake system has them (the caller's is its own). */
bool ctlh_task_is(pid_t tid, bool process, uid_t uid);
/* The caller's process: its credentials, and CAP_SYS_NICE or not. */
void ctlh_peer_files(uid_t uid, gid_t gid, bool cap_sys_nice);
/*
 * The caller's /proc: mounted with these super options ("rw,hidepid=invisible"), or,
 * with NULL, not at all; the mounts before it are another proc elsewhere and a tmpfs.
 */
void ctlh_peer_proc(const char *opts);
/* The peer executes a set-user-ID program: its saved uid changes. */
void ctlh_peer_setuid(void);

/* ---- the daemon, in memory ---- */

/* For ctlh_ops_all_open: every fake task opens and is there (the kernel knows none). */
int ctlh_open_any(pid_t tid, pid_t tgid, uint64_t start_time, struct act_task *ret);
/* ... and has what a plain task has: SCHED_OTHER, nice 0, no slice or clamp of its own. */
int ctlh_plain_attr(pid_t tid, struct rqb_sched_attr *ret);
/* The harness's driver, but every task opens and reads: the latency manager's tests. */
void ctlh_ops_all_open(struct act_ops *ret);
/* A task entry of la's: tid of tgid at v, moved to cgroup cg ("": none). */
void ctlh_task_entry(struct latact *la, pid_t tid, pid_t tgid, int v, const char *cg);
/* What is already managed (struct ctlh_scenario's managed): sorted by tid and tgid. */
void ctlh_managed(struct ctlh *d, uint8_t what);
struct ctlh *ctlh_daemon_new(const struct ctlh_scenario *sc);
/* Frees d and puts back the cgroup files a reset may have written. */
void ctlh_daemon_free(struct ctlh *d);

/*
 * The latency manager's tests' daemon: ctlh_daemon_new's with what managed says, over
 * ctlh_lat_ops (the harness's driver with every task opening, set afresh here, which a
 * test may change after), every plan handed to the actuator dumped and appended to
 * ctlh_plans (emptied here).
 */
extern struct act_ops ctlh_lat_ops;
extern char ctlh_plans[1 << 14];
struct ctlh *ctlh_lat_daemon(uint8_t managed);
/* What a program resets in each new one (its driver's fakes, its counters); NULL: none. */
extern void (*ctlh_lat_fresh)(struct ctlh *d);

/* cmocka fixtures: ctlh_lat_daemon's with nothing managed, in *state ... */
int ctlh_lat_setup(void **state);
/* ... with A's threads at 5 (entries), and A, B and D managed processes (records) ... */
int ctlh_lat_setup_managed(void **state);
/* ... with A, B and D managed processes, and no task's entry; and the one teardown. */
int ctlh_lat_setup_records(void **state);
int ctlh_teardown(void **state);

/* ---- a connection ---- */

/* Runs the loop until it is idle, reading what the server writes; then a few ticks. */
void ctlh_settle(struct ctlh *d, int fd, uint8_t **buf, size_t *len, size_t *cap);
/* Sends size bytes as the client, serving them as they go, until sent or closed. */
void ctlh_send_all(struct ctlh *d, int fd, const uint8_t *data, size_t size, uint8_t **buf,
		   size_t *len, size_t *cap);

#endif
