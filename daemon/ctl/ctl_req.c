/*
 * The latency requests, judged for a caller and carried out, and what a caller is
 * shown of other users' processes, for the ctl socket and the D-Bus API alike (see
 * ctl_req.h; the limits are in ctl_req_lim.c). It reads /proc and the cpu hierarchy,
 * never waits on a caller, and writes only through the latency manager.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "conf/conf.h"
#include "ctl/ctl_peer.h"
#include "ctl/ctl_perm.h"
#include "ctl/ctl_req.h"
#include "diag/peers.h"
#include "latmgr/latmgr_door.h"
#include "proc/procfs.h"
#include "util/log.h"
#include "util/schedattr.h"
#include "util/util.h"

bool ctl_req_in_group(const struct ctl_caller *k, gid_t gid)
{
	if (k->gid == gid)
		return true;
	for (int i = 0; i < k->ngroups; i++)
		if (k->groups[i] == gid)
			return true;
	return false;
}

/*
 * Judged on the gids the caller had when it connected, against the gid the config
 * resolved.
 */
bool ctl_req_admin(const struct ctl_caller *k, const struct rqb_conf *conf)
{
	return k->uid == 0 || (conf->ctl_gid_set && ctl_req_in_group(k, conf->ctl_gid));
}

/* ---- what a caller is shown ---- */

/* Where the caller's own /proc is not known: nothing of another user's is shown. */
static const struct ctl_view view_closed = { .hidepid = CTL_HIDEPID_INVISIBLE };

static struct ctl_view view_of(const struct parse_procfs *v)
{
	/* The kernel's pid_gid is root's group where the mount names none. */
	return (struct ctl_view){ .hidepid = v->hidepid, .by_group = true,
				  .gid = v->gid_set ? (gid_t)v->gid : 0 };
}

void ctl_req_share(struct ctl_env *x, struct ctl_caller *k, const struct ctl_idmap *map)
{
	struct ctl_req_lim *l = x->req;
	const char *path = l->subuid_path ? l->subuid_path : CTL_SUBUID_FILE;
	int r = ctl_peer_subids(path, &l->subids);

	if (r < 0)
		log_warn("ctl: %s: %s: the table read before stands", path, strerror(-r));
	k->share = ctl_req_lim_share_of(&l->subids, k->uid, map);
}

int ctl_req_caller_view(struct ctl_env *x, struct ctl_caller *k, int pidfd, uint64_t start_time)
{
	const char *root = latmgr_proc_root(x->lm);
	struct parse_procfs v;
	struct ctl_idmap map;
	uint64_t again;
	int r;

	ctl_req_share(x, k, k->pid > 0 && ctl_peer_idmap(root, k->pid, &map) == 0 ? &map : NULL);
	/* The daemon's own proc, or none to speak of (a test's tree): it hides nothing. */
	r = ctl_peer_view(root, 0, &v);
	k->view[0] = r == 0 ? view_of(&v) : r == -ENOENT ? (struct ctl_view){ 0 } : view_closed;
	r = k->pid > 0 ? ctl_peer_view(root, k->pid, &v) : -ESRCH;
	k->view[1] = r == 0 ? view_of(&v) : view_closed;
	if (k->pid <= 0)
		return 0;
	if (pidfd >= 0 ? util_pidfd_alive(pidfd) < 0
		       : start_time && (procfs_start_time(root, k->pid, &again) < 0 ||
					again != start_time))
		return -ESRCH;
	return 0;
}

static bool sees_all(const struct ctl_env *x, const struct ctl_caller *k)
{
	return ctl_req_admin(k, x->conf) ||
	       (k->view[0].hidepid == CTL_HIDEPID_OFF && k->view[1].hidepid == CTL_HIDEPID_OFF);
}

bool ctl_req_visible(struct ctl_env *x, const struct ctl_caller *k, pid_t tid, uint64_t start_time)
{
	struct ctl_perm_seer s = { .uid = k->uid, .gid = k->gid, .groups = k->groups,
				   .ngroups = k->ngroups, .cap_sys_ptrace = k->cap_sys_ptrace };
	struct ctl_peer t;

	if (sees_all(x, k))
		return true;
	if (tid <= 0 || ctl_peer_creds(latmgr_proc_root(x->lm), tid, start_time, &t) < 0)
		return false;
	return ctl_perm_visible(&k->view[0], &s, &t) && ctl_perm_visible(&k->view[1], &s, &t);
}

bool ctl_req_sees(void *eyes, pid_t tid, uint64_t start_time)
{
	struct ctl_req_eyes *e = eyes;

	if (sees_all(e->x, e->k))
		return true;
	if (e->judged >= CTL_REQ_JUDGED) {
		e->cut = true;
		return false;
	}
	e->judged++;
	return ctl_req_visible(e->x, e->k, tid, start_time);
}

bool ctl_req_finding(struct ctl_env *x, const struct ctl_caller *k, const struct peers_finding *f,
		     struct peers_finding *ret)
{
	pid_t shown[PEERS_PIDS];
	char pids[96];
	int n = 0, listed = f->npids < PEERS_PIDS ? f->npids : PEERS_PIDS;

	*ret = *f;
	if (!f->npids || sees_all(x, k))
		return true;
	for (int i = 0; i < listed; i++)
		if (ctl_req_visible(x, k, f->pid[i], 0))
			shown[n++] = f->pid[i];
	if (!n)
		return false;
	if (n == f->npids)
		return true;
	/* Only those it may see, and not how many it may not. */
	peers_pids_text(shown, n, n, pids, sizeof(pids));
	snprintf(ret->text, sizeof(ret->text), "%.*s%s%s", (int)f->pids_at, f->text, pids,
		 f->text + f->pids_at + f->pids_len);
	return true;
}

/* ---- targets ---- */

/* What a request would do to its target, for permitted(). */
enum ctl_req_act {
	CTL_REQ_SET,    /* give it a value */
	CTL_REQ_RESET,  /* give back what it had before rqbalance */
	CTL_REQ_OWNER,  /* nothing yet: whether the caller may act on it at all */
};

/*
 * Checks a target named by kind and pid or path, and finds a thread's process: 0, or
 * -EINVAL (a thread named as a process, a bad path) or -ESRCH with *why. judged: a
 * process is judged next (permitted), whose one read of it says whether it is a
 * thread (task_facts), so that its status is not read twice.
 */
static int check_target(struct ctl_env *x, struct lat_target *t, bool judged, const char **why)
{
	if (t->kind == LAT_T_CGROUP) {
		if (!latmgr_cgroup_path_ok(t->path)) {
			*why = "not an absolute cgroup path without . or .. components or blanks";
			return -EINVAL;
		}
		return 0;
	}
	if (t->pid <= 0) {
		*why = "not a pid";
		return -EINVAL;
	}
	if (t->kind == LAT_T_THREAD && latmgr_tgid_of(x->lm, t->pid, &t->tgid) < 0) {
		*why = "no such thread";
		return -ESRCH;
	}
	/* /proc/TID exists for any thread: taken for a process, it would stand for its group. */
	if (t->kind == LAT_T_PROCESS && !judged && latmgr_tgid_of(x->lm, t->pid, &t->tgid) == 0 &&
	    t->tgid != t->pid) {
		*why = "a thread, not a process: name it with tid";
		return -EINVAL;
	}
	if (t->kind == LAT_T_PROCESS)
		t->tgid = t->pid;
	return 0;
}

/*
 * check_target for a request that reads (get, explain): a task hidden from k is
 * answered as one that does not exist, -ESRCH.
 */
static int look_target(struct ctl_env *x, const struct ctl_caller *k, struct lat_target *t,
		       const char **why)
{
	/* First, so that a hidden task's thread or process is not told apart either. */
	if (t->kind != LAT_T_CGROUP && t->pid > 0 && !ctl_req_visible(x, k, t->pid, 0)) {
		*why = t->kind == LAT_T_THREAD ? "no such thread" : "no such task";
		return -ESRCH;
	}
	return check_target(x, t, false, why);
}

/* Task tid's real and effective uids, from its status. 0 or -ESRCH. */
static int task_uids(const char *proc_root, pid_t tid, unsigned *ruid, unsigned *euid)
{
	const unsigned both = PARSE_STATUS_RUID | PARSE_STATUS_EUID;
	struct parse_status s;
	int r = procfs_status(proc_root, 0, tid, &s);

	if (r < 0 || ((unsigned)r & both) != both)
		return -ESRCH;
	*ruid = s.ruid;
	*euid = s.euid;
	return 0;
}

/*
 * A task target's threads, with their facts, for the permission rule, and what was
 * read of them, which travels with the request to the latency manager and the
 * actuator (lat_target.threads): the threads judged are the threads set, each is
 * read once, /proc/PID/task is walked once, and the task the write pins (its pidfd,
 * or its start time) is the one whose uids were judged.
 */
struct perm_threads {
	struct lat_perm_thread *th;
	size_t n, cap;
	struct lat_thread *tid;
	size_t ntid, tcap;
	unsigned bound;       /* the threads a caller who is not an admin may name; 0: any */
	struct procfs_thread target; /* the target itself (t->pid), read by task_facts */
	struct lat_thread lead;      /* and what travels of it: its pidfd until add_thread
					hands it to tid (then -1), closed by permitted */
	int pin;                     /* the target's pidfd, wherever it is held; -1: none */
	bool hand;                   /* a set: what the write needs is read and pinned too */
};

/* Closes the pidfds of n threads th, and frees th. */
static void threads_free(struct lat_thread *th, size_t n)
{
	for (size_t i = 0; th && i < n; i++)
		if (th[i].pidfd >= 0)
			close(th[i].pidfd);
	free(th);
}

/*
 * Thread tid of process tgid, pinned, then read once: for a set (hand), its pidfd
 * first, then its stat, status and (where the actuator moves tasks between cgroups)
 * cgroup through one directory (procfs_thread), so that the start time read is the
 * pidfd's task's wherever it is the one the request expects. A reset writes through
 * what the actuator holds already: its stat and status only. 0, -ESRCH (gone), or
 * -errno.
 */
static int pin_thread(struct ctl_env *x, pid_t tgid, pid_t tid, bool hand,
		      struct procfs_thread *ret_read, struct lat_thread *ret)
{
	const char *root = latmgr_proc_root(x->lm);
	struct lat_thread th = { .tid = tid,
				 .pidfd = hand ? procfs_pidfd_open(root, tgid, tid) : -1 };
	struct procfs_thread read;
	int r;

	if (th.pidfd == -ESRCH)
		return -ESRCH;
	if (th.pidfd < 0)
		th.pidfd = -1; /* none here: the actuator opens the task, as without a judge */
	r = procfs_thread(root, tgid, tid, hand && latmgr_reads_cgroup(x->lm) ? th.cgroup : NULL,
			  sizeof(th.cgroup), &read);
	if (r < 0) {
		if (th.pidfd >= 0)
			close(th.pidfd);
		return r;
	}
	th.start_time = read.start_time;
	th.kthread = read.kthread;
	th.has_cgroup = read.has_cgroup;
	*ret_read = read;
	*ret = th;
	return 0;
}

/*
 * What thread tid has now and what the request would leave it: want is the value of a
 * set, or LAT_NONE for a reset, which gives back what it had before rqbalance. A knob
 * someone else changed since rqbalance set it is theirs and stays as it is.
 */
static int thread_fact(struct ctl_env *x, const struct lat_thread *th, int want,
		       struct lat_perm_thread *ret)
{
	struct rqb_sched_attr a;
	int r = rqb_sched_getattr(th->tid, &a);

	if (r < 0)
		return r;
	latmgr_would_leave(x->lm, th->tid, th->start_time, want, &a, ret);
	/* A favour the caller was granted is not its own to build on. */
	latmgr_ungranted(x->lm, th->tid, th->start_time, ret);
	return 0;
}

/*
 * The facts of one thread of the target: its uids (a thread that is neither the
 * caller's by real nor by effective uid makes the target not the caller's, as
 * setpriority(2) on that thread would be refused), its nice and policy now and after.
 * 0, -ESRCH when it is gone, or -ENOMEM.
 */
static int add_thread(struct ctl_env *x, const struct ctl_caller *k, const struct lat_target *t,
		      pid_t tid, int want, struct perm_threads *pt, struct ctl_perm_facts *f)
{
	struct procfs_thread read;
	struct lat_thread th;
	struct lat_perm_thread *a;
	struct lat_thread *at;

	/* The target itself was read between its two start times (task_facts). */
	if (tid == t->pid) {
		read = pt->target;
		th = pt->lead;
	} else if (pin_thread(x, t->tgid, tid, pt->hand, &read, &th) < 0) {
		return -ESRCH;
	}
	at = util_grow(pt->tid, &pt->tcap, pt->ntid, sizeof(*at));
	if (!at) {
		if (tid != t->pid && th.pidfd >= 0)
			close(th.pidfd);
		return -ENOMEM;
	}
	pt->tid = at;
	pt->tid[pt->ntid++] = th;
	if (tid == t->pid)
		pt->lead.pidfd = -1; /* pt->tid holds it now */
	if (read.ruid != k->uid && read.euid != k->uid) {
		f->target_ruid = read.ruid;
		f->target_euid = read.euid;
	}
	if (f->owner_only)
		return 0; /* no value: nothing to judge but the owner */
	a = util_grow(pt->th, &pt->cap, pt->n, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pt->th = a;
	if (thread_fact(x, &pt->tid[pt->ntid - 1], want, &pt->th[pt->n]) < 0)
		return -ESRCH;
	pt->n++;
	return 0;
}

/*
 * Every thread of the target (only the one a LAT_T_THREAD names), in one walk of its
 * task directory that stops past pt->bound threads: -E2BIG, as the request would hold
 * the loop for as long as the caller's process is large.
 */
static int threads_facts(struct ctl_env *x, const struct ctl_caller *k, const struct lat_target *t,
			 int want, struct perm_threads *pt, struct ctl_perm_facts *f)
{
	struct procfs_threads it;
	unsigned seen = 0;
	pid_t tid;
	int r = 0;

	if (t->kind == LAT_T_THREAD)
		return add_thread(x, k, t, t->pid, want, pt, f);
	if (procfs_threads_open(latmgr_proc_root(x->lm), t->pid, &it) < 0)
		return -ESRCH;
	while (r >= 0 && (tid = procfs_threads_next(&it)) > 0) {
		if (pt->bound && ++seen > pt->bound) {
			r = -E2BIG;
			break;
		}
		r = add_thread(x, k, t, tid, want, pt, f);
		if (r == -ESRCH)
			r = 0; /* it exited meanwhile */
	}
	procfs_threads_close(&it);
	return r < 0 ? r : pt->n || f->owner_only ? 0 : -ESRCH;
}

/*
 * Whether the target's number was the task read by task_facts throughout: its pidfd
 * says so while that task runs; one that has exited since (or none opened) is asked
 * of its number's start time now.
 */
static bool still_target(struct ctl_env *x, const struct lat_target *t,
			 const struct perm_threads *pt)
{
	uint64_t after = 0;

	if (pt->pin >= 0 && util_pidfd_alive(pt->pin) == 0)
		return true;
	return procfs_start_time(latmgr_proc_root(x->lm), t->pid, &after) == 0 &&
	       after == pt->target.start_time;
}

/*
 * A task's owner, RLIMIT_NICE and threads, read by pid after its pidfd was opened
 * and while its number is still its own after (still_target): the facts are about the
 * task whose start time t carries to the write (or, with none yet, the one it then
 * gets), never about one that reused its pid meanwhile.
 */
static int task_facts(struct ctl_env *x, const struct ctl_caller *k, struct lat_target *t,
		      int want, struct perm_threads *pt, struct ctl_perm_facts *f)
{
	struct rlimit rl;
	int r;

	/* Under its own task directory: PID/stat sums every thread's CPU times. */
	if (pin_thread(x, t->tgid, t->pid, pt->hand, &pt->target, &pt->lead) < 0)
		return -ESRCH;
	pt->pin = pt->lead.pidfd;
	/* /proc/TID exists for any thread: taken for a process, it would stand for its group. */
	if (t->kind == LAT_T_PROCESS && pt->target.tgid != t->pid)
		return -EINVAL;
	if (t->start_time && pt->target.start_time != t->start_time)
		return -ESRCH;
	/* Refused before a thread is read; the walk stops at the bound all the same. */
	if (t->kind == LAT_T_PROCESS && pt->bound && pt->target.threads > pt->bound)
		return -E2BIG;
	f->target_ruid = pt->target.ruid;
	f->target_euid = pt->target.euid;
	if (prlimit(t->pid, RLIMIT_NICE, NULL, &rl) == 0)
		f->rlim_nice = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 40 ? 40 :
										  (long)rl.rlim_cur;
	r = threads_facts(x, k, t, want, pt, f);
	if (r < 0)
		return r;
	f->th = pt->th;
	f->nth = pt->n;
	if (!still_target(x, t, pt))
		return -ESRCH;
	t->start_time = pt->target.start_time;
	return 0;
}

static int target_facts(struct ctl_env *x, const struct ctl_caller *k, struct lat_target *t,
			int want, struct perm_threads *pt, struct ctl_perm_facts *f)
{
	if (t->kind == LAT_T_CGROUP) {
		const char *source;
		uid_t owner;
		int cur;

		/*
		 * Whoever may write its weight file may set its value. A cgroup with no
		 * cpu controller enabled (a systemd unit that asked for none) has no such
		 * file: only systemd can give it one, so only root's rule applies.
		 */
		if (latmgr_cgroup_owner(x->lm, t->path, &owner) < 0)
			return -ENOENT;
		f->target_ruid = f->target_euid = owner;
		f->cur = latmgr_value(x->lm, t, &cur, &source) == 0 ? cur : 0;
		f->want = want == LAT_NONE ? 0 : want;
		return 0;
	}
	return task_facts(x, k, t, want, pt, f);
}

/*
 * 0 if the caller may do act to t (for a set, give it the value want), else -EPERM,
 * or -ESRCH / -ENOENT when the target is gone, with *why: judged as the kernel would
 * judge the caller's own setpriority(2) and sched_setattr(2) on each of its threads
 * now (ctl_perm.h). *ret_trusted: it may give any task any value (root, ctl_group,
 * CAP_SYS_NICE). Sets t's start time, which the write must find again.
 */
static int permitted(struct ctl_env *x, const struct ctl_caller *k, struct lat_target *t,
		     enum ctl_req_act act, int want, bool *ret_trusted, const char **why)
{
	struct ctl_perm_facts f = { .peer_euid = k->uid, .owner_only = act == CTL_REQ_OWNER };
	struct perm_threads pt = { .lead.pidfd = -1, .pin = -1, .hand = act != CTL_REQ_RESET };
	int r;

	f.admin = ctl_req_admin(k, x->conf);
	f.cap_sys_nice = !f.admin && k->cap_sys_nice;
	*ret_trusted = f.admin || f.cap_sys_nice;
	pt.bound = f.admin ? 0 : x->conf->ctl_max_threads;
	r = target_facts(x, k, t, act == CTL_REQ_SET ? want : LAT_NONE, &pt, &f);
	if (r == -ENOMEM) {
		*why = "out of memory";
	} else if (r == -E2BIG) {
		*why = "the process has more threads than ctl_max_threads lets anyone but root "
		       "and ctl_group name";
	} else if (r == -EINVAL) {
		*why = "a thread, not a process: name it with tid";
	} else if (r < 0) {
		*why = t->kind == LAT_T_CGROUP ? "no such cgroup in the cpu hierarchy" : "no such task";
		r = t->kind == LAT_T_CGROUP ? -ENOENT : -ESRCH;
	} else {
		r = ctl_perm_check(&f, why);
	}
	free(pt.th);
	if (pt.lead.pidfd >= 0)
		close(pt.lead.pidfd);
	if (r == 0 && t->kind == LAT_T_PROCESS && !t->threads) {
		t->threads = pt.tid;
		t->nthreads = pt.ntid;
	} else {
		threads_free(pt.tid, pt.ntid);
	}
	return r;
}

/* What rqctl shows k after a set of t that gave r tasks the value. */
static int set_reply(struct ctl_env *x, const struct ctl_caller *k, const struct lat_target *t,
		     int r, char *out, size_t size)
{
	if (t->kind == LAT_T_CGROUP) {
		snprintf(out, size, "cgroup %s\n", t->path);
		return 0;
	}
	if (t->kind == LAT_T_PROCESS) {
		/* How many have the value now, not how many changed: a repeat says the same. */
		r = (int)latmgr_tasks_of(x->lm, t);
	}
	snprintf(out, size, "tasks %d\n", r);
	/* Whose unit it is, only to whom may see it (CAP_SYS_NICE may act unseen). */
	if (t->kind == LAT_T_PROCESS && ctl_req_visible(x, k, t->pid, 0))
		latmgr_unit_text(x->lm, t->pid, out + strlen(out), size - strlen(out));
	return r;
}

/*
 * The foreground call: the caller's own process (or, for root and ctl_group, any)
 * gets [latency] foreground. Below what the kernel would let the caller do only for
 * root, ctl_group and foreground_group, which the administrator named for it.
 */
static int fg_permitted(struct ctl_env *x, const struct ctl_caller *k, struct lat_target *t,
			bool *ret_trusted, const char **why)
{
	int v = x->conf->lat_foreground, r;

	if (!t->pid) {
		*ret_trusted = ctl_req_admin(k, x->conf);
		return 0;
	}
	r = check_target(x, t, true, why);
	if (r < 0)
		return r;
	r = permitted(x, k, t, CTL_REQ_SET, v, ret_trusted, why);
	if (r == -EPERM && x->conf->lat_fg_gid_set && ctl_req_in_group(k, x->conf->lat_fg_gid))
		/* Its own process, at any value: the owner check alone. */
		r = permitted(x, k, t, CTL_REQ_OWNER, v, ret_trusted, why);
	return r;
}

/*
 * The game call: as the foreground's (fg_permitted), at [latency] game, below what the
 * kernel would let the caller do only for root, ctl_group and game_group. The process
 * was pinned by the door (the pidfd's process, its start time in t), and every fact is
 * read of that process. [latency] game = 0 turns games off.
 */
static int game_permitted(struct ctl_env *x, const struct ctl_caller *k, struct lat_target *t,
			  bool *ret_trusted, const char **why)
{
	int v = x->conf->lat_game, r;

	if (v == 0) {
		*why = "permission denied: games are off here ([latency] game = 0)";
		return -EPERM;
	}
	r = check_target(x, t, true, why);
	if (r < 0)
		return r;
	r = permitted(x, k, t, CTL_REQ_SET, v, ret_trusted, why);
	if (r == -EPERM && x->conf->lat_game_gid_set && ctl_req_in_group(k, x->conf->lat_game_gid))
		r = permitted(x, k, t, CTL_REQ_OWNER, v, ret_trusted, why);
	return r;
}

static int do_game(struct ctl_env *x, const struct ctl_caller *k, const struct ctl_request *q,
		   bool trusted, struct ctl_answer *a)
{
	char source[48];
	int r;

	snprintf(source, sizeof(source), "game uid %u pid %d %s", k->uid, (int)q->t.pid, q->conn);
	r = latmgr_game(x->lm, k->share, q->conn,
			&(struct lat_req){ .tid = q->t.pid, .tgid = q->t.pid,
					   .start_time = q->t.start_time, .value = x->conf->lat_game,
					   .source = source, .trusted = trusted,
					   .threads = q->t.threads, .nthreads = q->t.nthreads },
			&a->value, &a->why);
	if (r == 0 && a->value == LAT_NONE)
		a->value = 0;
	return r;
}

static int do_ungame(struct ctl_env *x, const struct ctl_request *q, struct ctl_answer *a)
{
	int r = latmgr_game_end(x->lm, q->conn, q->t.pid, q->t.start_time);

	if (r < 0)
		a->why = "this connection has no such game registered";
	return r;
}

/*
 * The end of a connection's games reads /proc once a game (the copies no event told
 * of): it is charged to the share that registered them, as its own calls are, so
 * that registering and leaving in a loop takes no more of the loop than calls do.
 */
void ctl_req_conn_gone(struct ctl_env *x, const char *conn)
{
	uint64_t t0 = util_now_ns();
	uid_t owner;

	if (latmgr_on(x->lm) && latmgr_games_gone(x->lm, conn, &owner) > 0 && conn)
		ctl_req_lim_charge(x->req, owner, util_now_ns() - t0, util_now_ns());
}

static int do_foreground(struct ctl_env *x, const struct ctl_caller *k, const struct ctl_request *q,
			 bool trusted, struct ctl_answer *a)
{
	char source[48];
	int r;

	snprintf(source, sizeof(source), "foreground uid %u", k->uid);
	r = latmgr_foreground(x->lm, k->share,
			      &(struct lat_req){ .tid = q->t.pid, .tgid = q->t.pid,
						 .start_time = q->t.start_time,
						 .value = x->conf->lat_foreground, .source = source,
						 .trusted = trusted, .threads = q->t.threads,
						 .nthreads = q->t.nthreads },
			      &a->value, &a->why);
	if (r == 0 && !q->t.pid)
		a->value = 0; /* nothing in front */
	return r;
}

/*
 * Whether k owns the task it named (its real or effective uid is the task's), or may
 * act on any task: judged on that one task, as get is, never on each of a process's
 * threads, whose number the target's owner chooses.
 */
static bool owns(struct ctl_env *x, const struct ctl_caller *k, const struct lat_target *t)
{
	unsigned ruid, euid;

	if (ctl_req_admin(k, x->conf) || k->cap_sys_nice)
		return true;
	if (t->kind == LAT_T_CGROUP) {
		uid_t owner;

		return latmgr_cgroup_owner(x->lm, t->path, &owner) == 0 && owner == k->uid;
	}
	return task_uids(latmgr_proc_root(x->lm), t->pid, &ruid, &euid) == 0 &&
	       (ruid == k->uid || euid == k->uid);
}

/* Anyone may ask; what the process itself shows only to its owner (owns). */
static int do_explain(struct ctl_env *x, const struct ctl_caller *k, struct ctl_request *q,
		      struct ctl_answer *a)
{
	struct ctl_req_eyes eyes = { .x = x, .k = k };

	return latmgr_explain(x->lm, &q->t, owns(x, k, &q->t), ctl_req_sees, &eyes, &a->explain);
}

/* The target, as the caller may see it, and whether it may do q to it. */
static int judge_request(struct ctl_env *x, const struct ctl_caller *k, struct ctl_request *q,
			 bool *ret_trusted, const char **why)
{
	int r;

	switch (q->op) {
	case CTL_REQ_OP_GET:
	case CTL_REQ_OP_EXPLAIN:
		/* A task the caller's /proc would not show it is one that does not exist. */
		return look_target(x, k, &q->t, why);
	case CTL_REQ_OP_FOREGROUND:
		return fg_permitted(x, k, &q->t, ret_trusted, why);
	case CTL_REQ_OP_GAME:
		return game_permitted(x, k, &q->t, ret_trusted, why);
	case CTL_REQ_OP_UNGAME:
		/* The connection's own record: nothing else to judge. */
		return check_target(x, &q->t, false, why);
	default:
		r = check_target(x, &q->t, true, why);
		if (r < 0)
			return r;
		return permitted(x, k, &q->t,
					 q->op == CTL_REQ_OP_SET ? CTL_REQ_SET : CTL_REQ_RESET,
					 q->value, ret_trusted, why);
	}
}

static void target_text(const struct lat_target *t, char *out, size_t size)
{
	if (t->kind == LAT_T_CGROUP)
		snprintf(out, size, "cgroup %s", t->path);
	else
		snprintf(out, size, "%s %d", t->kind == LAT_T_PROCESS ? "process" : "thread", (int)t->pid);
}

/* Says what was done, or that the caller was refused. */
static void log_outcome(struct ctl_env *x, const struct ctl_caller *k,
			const struct ctl_request *q, const struct ctl_answer *a, int r)
{
	char what[LAT_PATH_MAX + 32], pid[32] = "";

	target_text(&q->t, what, sizeof(what));
	if (k->pid > 0)
		snprintf(pid, sizeof(pid), " (pid %d)", (int)k->pid);
	if (r == -EPERM)
		ctl_req_lim_log_refusal(x->req, "%s: %s on %s refused to uid %u%s: %s", k->via,
					q->name, what, k->uid, pid,
					a->why ? a->why : "permission denied");
	else if (r == 0 && q->op == CTL_REQ_OP_SET)
		log_info("%s: uid %u gave %s value %d", k->via, k->uid, what, q->value);
	else if (r == 0 && q->op == CTL_REQ_OP_FOREGROUND && q->t.pid)
		log_info("%s: uid %u put process %d in front: value %d", k->via, k->uid,
			 (int)q->t.pid, a->value);
	else if (r == 0 && q->op == CTL_REQ_OP_GAME)
		log_info("%s: uid %u registered game %d (connection %s): value %d", k->via,
			 k->uid, (int)q->t.pid, q->conn, a->value);
	else if (r == 0 && q->op == CTL_REQ_OP_UNGAME)
		log_info("%s: uid %u unregistered game %d (connection %s)", k->via, k->uid,
			 (int)q->t.pid, q->conn);
}

/*
 * The one request procedure of both doors: the target as the caller may see it,
 * whether it may do q to it (judge_request), the action itself, then the log line.
 */
int ctl_req_run(struct ctl_env *x, const struct ctl_caller *k, struct ctl_request *q,
		struct ctl_answer *ret)
{
	bool trusted = false;
	char source[48];
	int r;

	*ret = (struct ctl_answer){ 0 };
	r = judge_request(x, k, q, &trusted, &ret->why);
	if (r != 0)
		goto out;
	switch (q->op) {
	case CTL_REQ_OP_GET:
		r = latmgr_value(x->lm, &q->t, &ret->value, &ret->source);
		if (r >= 0)
			r = latmgr_get_text(x->lm, &q->t, ret->text, sizeof(ret->text));
		break;
	case CTL_REQ_OP_EXPLAIN:
		r = do_explain(x, k, q, ret);
		break;
	case CTL_REQ_OP_FOREGROUND:
		r = do_foreground(x, k, q, trusted, ret);
		break;
	case CTL_REQ_OP_GAME:
		r = do_game(x, k, q, trusted, ret);
		break;
	case CTL_REQ_OP_UNGAME:
		r = do_ungame(x, q, ret);
		break;
	case CTL_REQ_OP_SET:
		snprintf(source, sizeof(source), "%s uid %u", k->via, k->uid);
		r = latmgr_set(x->lm, &q->t, q->value, source, trusted, &ret->why);
		if (r >= 0)
			ret->n = set_reply(x, k, &q->t, r, ret->text, sizeof(ret->text));
		r = r < 0 ? r : 0;
		break;
	default:
		r = latmgr_reset(x->lm, &q->t);
		ret->n = r;
		r = r < 0 ? r : 0;
	}
out:
	log_outcome(x, k, q, ret, r);
	threads_free(q->t.threads, q->t.nthreads);
	q->t.threads = NULL;
	q->t.nthreads = 0;
	return r;
}
