/*
 * The latency requests, judged for a caller and carried out, and what a caller is
 * shown of other users' processes, for the ctl socket and the D-Bus API alike (see
 * ctl_req.h; the limits are in ctl_req_lim.c). It reads /proc and the cpu hierarchy,
 * never waits on a caller, and writes only through the latency manager.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "core/daemon.h"
#include "ctl/ctl_peer.h"
#include "ctl/ctl_perm.h"
#include "ctl/ctl_req.h"
#include "util/schedattr.h"
#include "sample/peers.h"
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

int ctl_req_caller_view(struct daemon *d, struct ctl_caller *k, int pidfd, uint64_t start_time)
{
	const char *root = d->lm.proc_root;
	struct parse_procfs v;
	uint64_t again;
	int r;

	/* The daemon's own proc, or none to speak of (a test's tree): it hides nothing. */
	r = ctl_peer_view(root, 0, &v);
	k->view[0] = r == 0 ? view_of(&v) : r == -ENOENT ? (struct ctl_view){ 0 } : view_closed;
	r = k->pid > 0 ? ctl_peer_view(root, k->pid, &v) : -ESRCH;
	k->view[1] = r == 0 ? view_of(&v) : view_closed;
	if (k->pid <= 0)
		return 0;
	if (pidfd >= 0 ? util_pidfd_alive(pidfd) < 0
		       : start_time && (ctl_peer_start_time(root, k->pid, &again) < 0 ||
					again != start_time))
		return -ESRCH;
	return 0;
}

static bool sees_all(const struct daemon *d, const struct ctl_caller *k)
{
	return ctl_req_admin(k, &d->conf) ||
	       (k->view[0].hidepid == CTL_HIDEPID_OFF && k->view[1].hidepid == CTL_HIDEPID_OFF);
}

bool ctl_req_visible(struct daemon *d, const struct ctl_caller *k, pid_t tid, uint64_t start_time)
{
	struct ctl_perm_seer s = { .uid = k->uid, .gid = k->gid, .groups = k->groups,
				   .ngroups = k->ngroups, .cap_sys_ptrace = k->cap_sys_ptrace };
	struct ctl_peer t;

	if (sees_all(d, k))
		return true;
	if (tid <= 0 || ctl_peer_creds(d->lm.proc_root, tid, start_time, &t) < 0)
		return false;
	return ctl_perm_visible(&k->view[0], &s, &t) && ctl_perm_visible(&k->view[1], &s, &t);
}

bool ctl_req_finding(struct daemon *d, const struct ctl_caller *k, const struct peers_finding *f,
		     struct peers_finding *ret)
{
	pid_t shown[PEERS_PIDS];
	char pids[96];
	int n = 0, listed = f->npids < PEERS_PIDS ? f->npids : PEERS_PIDS;

	*ret = *f;
	if (!f->npids || sees_all(d, k))
		return true;
	for (int i = 0; i < listed; i++)
		if (ctl_req_visible(d, k, f->pid[i], 0))
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

int ctl_req_look(struct daemon *d, const struct ctl_caller *k, struct ctl_target *t,
		 const char **why)
{
	/* First, so that a hidden task's thread or process is not told apart either. */
	if (t->kind != TGT_CGROUP && t->pid > 0 && !ctl_req_visible(d, k, t->pid, 0)) {
		*why = t->kind == TGT_TID ? "no such thread" : "no such task";
		return -ESRCH;
	}
	return ctl_req_target(d, t, why);
}

int ctl_req_target(struct daemon *d, struct ctl_target *t, const char **why)
{
	if (t->kind == TGT_CGROUP) {
		if (!latact_cgroup_path_ok(t->path)) {
			*why = "not an absolute cgroup path without . or .. components or blanks";
			return -EINVAL;
		}
		return 0;
	}
	if (t->pid <= 0) {
		*why = "not a pid";
		return -EINVAL;
	}
	if (t->kind == TGT_TID && latmgr_tgid_of(&d->lm, t->pid, &t->tgid) < 0) {
		*why = "no such thread";
		return -ESRCH;
	}
	/* /proc/TID exists for any thread: taken for a process, it would stand for its group. */
	if (t->kind == TGT_PID && latmgr_tgid_of(&d->lm, t->pid, &t->tgid) == 0 &&
	    t->tgid != t->pid) {
		*why = "a thread, not a process: name it with tid";
		return -EINVAL;
	}
	if (t->kind == TGT_PID)
		t->tgid = t->pid;
	return 0;
}

/* The value of line key: in status file path, into ret. 0, -ESRCH or -ENOENT. */
static int status_file(const char *path, const char *key, char *ret, size_t size)
{
	char buf[4096], *p;
	size_t kl = strlen(key);

	if (util_read_file(path, buf, sizeof(buf)) < 0)
		return -ESRCH;
	for (p = buf; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, key, kl) == 0 && p[kl] == ':') {
			snprintf(ret, size, "%.*s", (int)strcspn(p + kl + 1, "\n"), p + kl + 1);
			return 0;
		}
	return -ENOENT;
}

static int status_field(const char *proc_root, pid_t pid, const char *key, char *ret,
			size_t size)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%d/status", proc_root, (int)pid);
	return status_file(path, key, ret, size);
}

/* A task target's threads, with their facts, for the permission rule. */
struct perm_threads {
	struct ctl_perm_thread *th;
	size_t n, cap;
};

/*
 * What thread tid has now and what the request would leave it: want is the value of a
 * set, or LAT_NONE for a reset, which gives back what it had before rqbalance. A knob
 * someone else changed since rqbalance set it is theirs and stays as it is.
 */
static int thread_fact(struct daemon *d, pid_t tid, int want, struct ctl_perm_thread *ret)
{
	const struct lat_entry *e = latact_find(&d->lat, tid);
	struct rqb_sched_attr a;
	struct lat_knobs k;
	int r = rqb_sched_getattr(tid, &a);

	if (r < 0)
		return r;
	ret->nice = a.sched_nice;
	ret->idle = a.sched_policy == SCHED_IDLE;
	ret->want_nice = ret->nice;
	ret->want_idle = ret->idle;
	if (want != LAT_NONE) {
		lat_map(&d->lat.lc, want, &k);
		ret->want_nice = k.nice;
		ret->want_idle = k.policy == SCHED_IDLE;
	} else if (e) {
		ret->want_nice = e->prev.nice;
		ret->want_idle = e->prev.policy == SCHED_IDLE;
	}
	if (e && (e->left & LAT_K_NICE))
		ret->want_nice = ret->nice;
	if (e && (e->left & LAT_K_POLICY))
		ret->want_idle = ret->idle;
	return 0;
}

/*
 * The facts of one thread of the target: its uids (a thread that is neither the
 * caller's by real nor by effective uid makes the target not the caller's, as
 * setpriority(2) on that thread would be refused), its nice and policy now and after.
 * 0, -ESRCH when it is gone, or -ENOMEM.
 */
static int add_thread(struct daemon *d, const struct ctl_caller *k, pid_t tgid, pid_t tid,
		      int want, struct perm_threads *pt, struct ctl_perm_facts *f)
{
	char path[PATH_MAX], uids[128];
	struct ctl_perm_thread *a;
	unsigned ruid, euid;
	char key[32];

	snprintf(key, sizeof(key), "%d/task/%d", (int)tgid, (int)tid);
	snprintf(path, sizeof(path), "%s/%s/status", d->lm.proc_root, key);
	if (status_file(path, "Uid", uids, sizeof(uids)) < 0 ||
	    sscanf(uids, "%u %u", &ruid, &euid) != 2)
		return -ESRCH;
	if (ruid != k->uid && euid != k->uid) {
		f->target_ruid = ruid;
		f->target_euid = euid;
	}
	if (f->owner_only)
		return 0; /* no value: nothing to judge but the owner */
	a = util_grow(pt->th, &pt->cap, pt->n, sizeof(*a));
	if (!a)
		return -ENOMEM;
	pt->th = a;
	if (thread_fact(d, tid, want, &pt->th[pt->n]) < 0)
		return -ESRCH;
	pt->n++;
	return 0;
}

/* Every thread of the target (only the one a TGT_TID names). */
static int threads_facts(struct daemon *d, const struct ctl_caller *k, const struct ctl_target *t,
			 int want, struct perm_threads *pt, struct ctl_perm_facts *f)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *dir;
	int r = 0;

	if (t->kind == TGT_TID)
		return add_thread(d, k, t->tgid, t->pid, want, pt, f);
	snprintf(path, sizeof(path), "%s/%d/task", d->lm.proc_root, (int)t->pid);
	dir = opendir(path);
	if (!dir)
		return -ESRCH;
	while (r >= 0 && (de = readdir(dir))) {
		if (de->d_name[0] == '.')
			continue;
		r = add_thread(d, k, t->pid, (pid_t)atoi(de->d_name), want, pt, f);
		if (r == -ESRCH)
			r = 0; /* it exited meanwhile */
	}
	closedir(dir);
	return r < 0 ? r : pt->n || f->owner_only ? 0 : -ESRCH;
}

/*
 * A task's owner, RLIMIT_NICE and threads, read by pid between two reads of its start
 * time: the facts are about the task whose start time t carries to the write (or, with
 * none yet, the one it then gets), never about one that reused its pid meanwhile.
 */
static int task_facts(struct daemon *d, const struct ctl_caller *k, struct ctl_target *t,
		      int want, struct perm_threads *pt, struct ctl_perm_facts *f)
{
	const char *root = d->lm.proc_root;
	char uids[128];
	unsigned ruid, euid;
	uint64_t before = 0, after = 0;
	struct rlimit rl;
	int r;

	if (ctl_peer_start_time(root, t->pid, &before) < 0 ||
	    (t->start_time && before != t->start_time))
		return -ESRCH;
	if (status_field(root, t->pid, "Uid", uids, sizeof(uids)) < 0 ||
	    sscanf(uids, "%u %u", &ruid, &euid) != 2)
		return -ESRCH;
	f->target_ruid = ruid;
	f->target_euid = euid;
	if (prlimit(t->pid, RLIMIT_NICE, NULL, &rl) == 0)
		f->rlim_nice = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 40 ? 40 :
										  (long)rl.rlim_cur;
	r = threads_facts(d, k, t, want, pt, f);
	if (r < 0)
		return r;
	f->th = pt->th;
	f->nth = pt->n;
	if (ctl_peer_start_time(root, t->pid, &after) < 0 || after != before)
		return -ESRCH;
	t->start_time = before;
	return 0;
}

static int target_facts(struct daemon *d, const struct ctl_caller *k, struct ctl_target *t,
			int want, struct perm_threads *pt, struct ctl_perm_facts *f)
{
	char file[PATH_MAX];
	struct stat st;

	if (t->kind == TGT_CGROUP) {
		const struct lat_cg_entry *e = latact_find_cgroup(&d->lat, t->path);

		/*
		 * Whoever may write its weight file may set its value. A cgroup with no
		 * cpu controller enabled (a systemd unit that asked for none) has no such
		 * file: only systemd can give it one, so only root's rule applies.
		 */
		snprintf(file, sizeof(file), "%s%s/%s", d->lat.cls.mount, t->path,
			 d->lat.cls.v2 ? "cpu.weight" : "cpu.shares");
		if (stat(file, &st) == 0) {
			f->target_ruid = f->target_euid = st.st_uid;
		} else {
			if (errno != ENOENT || !d->lat.cls.v2)
				return -ENOENT;
			snprintf(file, sizeof(file), "%s%s/cgroup.procs", d->lat.cls.mount,
				 t->path);
			if (stat(file, &st) < 0)
				return -ENOENT;
			f->target_ruid = f->target_euid = 0;
		}
		f->cur = e ? e->value : 0;
		f->want = want == LAT_NONE ? 0 : want;
		return 0;
	}
	return task_facts(d, k, t, want, pt, f);
}

int ctl_req_permitted(struct daemon *d, const struct ctl_caller *k, struct ctl_target *t,
		      enum ctl_req_act act, int want, bool *ret_trusted, const char **why)
{
	struct ctl_perm_facts f = { .peer_euid = k->uid, .owner_only = act == CTL_REQ_OWNER };
	struct perm_threads pt = { 0 };
	int r;

	f.admin = ctl_req_admin(k, &d->conf);
	f.cap_sys_nice = !f.admin && k->cap_sys_nice;
	*ret_trusted = f.admin || f.cap_sys_nice;
	r = target_facts(d, k, t, act == CTL_REQ_SET ? want : LAT_NONE, &pt, &f);
	if (r == -ENOMEM) {
		*why = "out of memory";
	} else if (r < 0) {
		*why = t->kind == TGT_CGROUP ? "no such cgroup in the cpu hierarchy" : "no such task";
		r = t->kind == TGT_CGROUP ? -ENOENT : -ESRCH;
	} else {
		r = ctl_perm_check(&f, why);
	}
	free(pt.th);
	return r;
}

/*
 * Where systemd owns the cgroups: the unit of process tgid, and what it got for the
 * process's value, or why it got nothing (then only the task's nice applies).
 */
static void unit_text(const struct daemon *d, pid_t tgid, char *out, size_t size)
{
	const struct latmgr_unit *u = latmgr_unit_of(&d->lm, tgid);
	const struct lat_cg_entry *g = u ? latact_find_cgroup(&d->lat, u->cgroup) : NULL;
	char w[32] = "-";

	if (!u) {
		out[0] = '\0';
		return;
	}
	if (g && g->set_idle != 1 && g->set_weight != 0)
		snprintf(w, sizeof(w), "%" PRIu64, g->set_weight);
	else if (g)
		snprintf(w, sizeof(w), "idle");
	snprintf(out, size, "unit %s\nunit_weight %s\n%s%s%s", u->unit[0] ? u->unit : "-", w,
		 u->d.why[0] || u->act_why[0] ? "unit_why " : "",
		 u->d.why[0] ? u->d.why : u->act_why, u->d.why[0] || u->act_why[0] ? "\n" : "");
	if (g && !g->by_procs)
		snprintf(out + strlen(out), size - strlen(out),
			 "unit_why the cgroup has a value of its own (rqctl set -g)\n");
}

/*
 * Whether an untrusted caller's request for the value t already has from another
 * source leaves that source: re-asserting a value it did not give never makes it the
 * caller's (root's foreground value or a rule's would then no longer be given back,
 * and would follow exec and children as the caller's own).
 */
static bool keeps_its_source(struct daemon *d, const struct ctl_target *t, int v,
			     const char *source)
{
	const char *cur_source;
	int cur;

	return ctl_req_value(d, t, &cur, &cur_source) == 0 && cur == v &&
	       strcmp(cur_source, source) != 0;
}

/* What rqctl shows k after a set of t that gave r tasks the value. */
static int set_reply(struct daemon *d, const struct ctl_caller *k, const struct ctl_target *t,
		     int r, char *out, size_t size)
{
	if (t->kind == TGT_CGROUP) {
		snprintf(out, size, "cgroup %s\n", t->path);
		return 0;
	}
	if (t->kind == TGT_PID) {
		/* How many have the value now, not how many changed: a repeat says the same. */
		r = 0;
		for (size_t i = 0; i < d->lat.n; i++)
			r += d->lat.e[i].tgid == t->pid;
	}
	snprintf(out, size, "tasks %d\n", r);
	/* Whose unit it is, only to whom may see it (CAP_SYS_NICE may act unseen). */
	if (t->kind == TGT_PID && ctl_req_visible(d, k, t->pid, 0))
		unit_text(d, t->pid, out + strlen(out), size - strlen(out));
	return r;
}

int ctl_req_set(struct daemon *d, const struct ctl_caller *k, const struct ctl_target *t, int v,
		bool trusted, char *out, size_t size, const char **why)
{
	char source[48];
	int r;

	snprintf(source, sizeof(source), "%s uid %u", k->via, k->uid);
	if (!trusted && keeps_its_source(d, t, v, source))
		return set_reply(d, k, t, t->kind == TGT_TID, out, size);
	switch (t->kind) {
	case TGT_PID:
		r = latmgr_set_process(&d->lm, &(struct lat_req){ .tid = t->pid, .tgid = t->pid,
								  .start_time = t->start_time,
								  .value = v, .source = source,
								  .trusted = trusted },
				       why);
		break;
	case TGT_TID:
		r = latmgr_set_thread(&d->lm, &(struct lat_req){ .tid = t->pid,
								 .start_time = t->start_time,
								 .value = v, .source = source },
				      why);
		r = r == 0 ? 1 : r;
		break;
	default:
		r = latmgr_set_cgroup(&d->lm, t->path, v, source, why);
		break;
	}
	return r < 0 ? r : set_reply(d, k, t, r, out, size);
}

static void knobs_text(const struct lat_state *s, char *out, size_t size)
{
	snprintf(out, size, "policy %s\nslice_ns %" PRIu64 "\nuclamp %d %d\ncgroup %s\n",
		 latact_policy_name(s->policy), s->slice_ns, s->umin, s->umax,
		 s->cgroup[0] ? s->cgroup : "-");
}

int ctl_req_get(struct daemon *d, const struct ctl_target *t, char *out, size_t size)
{
	const struct latmgr_proc *p = t->kind == TGT_PID ? latmgr_find_process(&d->lm, t->pid) : NULL;
	const struct lat_entry *e = t->kind == TGT_CGROUP ? NULL : latact_find(&d->lat, t->pid);
	const struct lat_cg_entry *g;
	char knobs[LAT_PATH_MAX + 128] = "";
	size_t ntasks = 0;

	if (t->kind == TGT_CGROUP) {
		g = latact_find_cgroup(&d->lat, t->path);
		if (!g)
			return -ENOENT;
		snprintf(out, size, "value %d\nsource %s\nweight %" PRIu64 "\nidle %d\n", g->value,
			 g->source, g->set_weight, g->set_idle);
		return 0;
	}
	if (!p && !e)
		return -ENOENT;
	for (size_t i = 0; i < d->lat.n; i++)
		ntasks += t->kind == TGT_PID ? d->lat.e[i].tgid == t->pid : d->lat.e[i].task.tid == t->pid;
	if (e)
		knobs_text(&e->set, knobs, sizeof(knobs));
	snprintf(out, size, "value %d\nsource %s\nscope %s\ntasks %zu\n%s", p ? p->value : e->value,
		 p ? p->source : e->source, p ? "process" : "thread", ntasks, knobs);
	if (e && e->cg != LAT_CG_OURS)
		snprintf(out + strlen(out), size - strlen(out), "cgroup_left %s: %s\n", e->cg_left,
			 lat_cg_why(e->cg));
	if (p)
		unit_text(d, t->pid, out + strlen(out), size - strlen(out));
	return 0;
}

int ctl_req_value(struct daemon *d, const struct ctl_target *t, int *ret_value,
		  const char **ret_source)
{
	const struct latmgr_proc *p = t->kind == TGT_PID ? latmgr_find_process(&d->lm, t->pid) : NULL;
	const struct lat_entry *e = t->kind == TGT_CGROUP ? NULL : latact_find(&d->lat, t->pid);
	const struct lat_cg_entry *g =
		t->kind == TGT_CGROUP ? latact_find_cgroup(&d->lat, t->path) : NULL;

	if (g) {
		*ret_value = g->value;
		*ret_source = g->source;
	} else if (p || e) {
		*ret_value = p ? p->value : e->value;
		*ret_source = p ? p->source : e->source;
	} else {
		return -ENOENT;
	}
	return 0;
}

int ctl_req_reset(struct daemon *d, const struct ctl_target *t)
{
	int r;

	switch (t->kind) {
	case TGT_PID:
		r = latmgr_reset_process(&d->lm, t->pid, t->start_time);
		break;
	case TGT_TID:
		r = latmgr_reset_thread(&d->lm, t->pid, t->start_time);
		r = r == 0 ? 1 : r;
		break;
	default:
		r = latmgr_reset_cgroup(&d->lm, t->path);
		r = r == 0 ? 1 : r;
		break;
	}
	return r;
}
