/*
 * Latency management, the rules and the tick: applies the rules at exec, at start and
 * at reload, walks /proc for what events did not say, and sweeps out what exited. It
 * never overrides a ctl request's value with a rule's.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "latmgr/latmgr_int.h"
#include "proc/procfs.h"
#include "util/log.h"
#include "util/util.h"

#define LATMGR_SWEEP_TICKS 50 /* with events, ticks in which a sweep's shares cover all */
#define LATMGR_SHARE_MAX 8    /* ... but at most this many processes and tasks a tick */
#define LATMGR_UNIT_SHARE_MAX 2 /* ... and units (each reads all its processes) */
#define LATMGR_RESYNC_TICKS 10 /* a resync waits this long for the source to empty */

/*
 * What the rules say of process pid, which has rec (latpol_rule): APPLY sets *ret_rule
 * and ret_source. ret_start: its start time before the read. kx, where known, is what
 * the kernel said the process runs: believed only if the pid still names the process
 * it was said of.
 */
static enum latpol_rule_verdict rule_for(const struct latmgr *m, pid_t pid,
					 const struct latmgr_exe *kx, const struct latpol_rec *rec,
					 uint64_t *ret_start, int *ret_rule, char *ret_source)
{
	bool kthread, known = false;
	struct ident_buf *buf = NULL;
	struct proc_ident id;
	enum latpol_rule_verdict v;

	if (m->conf->rules.n && latmgr_task_info(m, pid, ret_start, &kthread) == 0 && !kthread) {
		if (kx && latmgr_boot_ticks(kx->start_ns) != *ret_start)
			kx = NULL;
		buf = malloc(sizeof(*buf));
		/* Without memory to read it, the process is taken as it was. */
		if (!buf)
			return LATPOL_RULE_KEEP;
		known = ident_read_known(m->proc_root, pid, kx ? &kx->id : NULL, &m->conf->rules,
					 m->exetab, buf, &id) == 0;
	}
	v = latpol_rule(&m->conf->rules, known ? &id : NULL, rec, ret_rule, ret_source);
	free(buf);
	return v;
}

static void fail_note(struct latmgr *m, pid_t tgid, uint64_t start, int r, const char *source,
		      const char *why)
{
	struct latmgr_fail *f = &m->fails[m->nfails++ % LATMGR_FAILS];

	f->tgid = tgid;
	f->start_time = start;
	f->when = (int64_t)time(NULL);
	f->r = r;
	snprintf(f->source, sizeof(f->source), "%s", source);
	snprintf(f->why, sizeof(f->why), "%s", why ? why : strerror(-r));
}

const struct latmgr_fail *latmgr_failure_of(const struct latmgr *m, pid_t tgid,
					    uint64_t start_time)
{
	unsigned n = m->nfails < LATMGR_FAILS ? m->nfails : LATMGR_FAILS;

	/* The newest first. */
	for (unsigned k = 1; k <= n; k++) {
		const struct latmgr_fail *f = &m->fails[(m->nfails - k) % LATMGR_FAILS];

		if (f->tgid == tgid && f->start_time == start_time)
			return f;
	}
	return NULL;
}

/*
 * Process pid (started at start) gets rule's value, as source: true if it took (to
 * every thread the process has); a failure is kept for rqctl explain.
 */
static bool rule_give(struct latmgr *m, pid_t pid, uint64_t start, const struct rule *rule,
		      const char *source, bool at_exec)
{
	/* At an exec the class move may end later: the next exec's rule does not wait. */
	struct lat_req rq = { .tid = pid, .tgid = pid, .start_time = start,
			      .value = rule->latency_nice, .source = source, .trusted = true,
			      .async_move = at_exec, .at_exec = at_exec,
			      .no_inherit = !rule->inherit };
	const char *why;
	int r = latmgr_give_process(m, &rq, true, &why);

	if (r < 0) {
		log_info("latency: rule %s matches process %d, not applied: %s", rule->name,
			 (int)pid, why ? why : "failed");
		fail_note(m, pid, start, r, source, why);
		return false;
	}
	m->cnt.rule_matches++;
	log_debug("latency: rule %s gives process %d value %d", rule->name, (int)pid,
		  rule->latency_nice);
	return true;
}

bool latmgr_apply_rules(struct latmgr *m, pid_t pid, const struct latmgr_exe *kx, bool at_exec)
{
	const struct latmgr_proc *p = latmgr_find_process(m, pid, LATMGR_START_NOW);
	struct latpol_rec rec = latmgr_rec_of(p);
	char source[PLAN_SOURCE_MAX];
	uint64_t start = 0;
	int i = -1;

	if (!latpol_rules_may_change(&rec, pid == m->self))
		return false;
	switch (rule_for(m, pid, kx, &rec, &start, &i, source)) {
	case LATPOL_RULE_KEEP:
		return false;
	case LATPOL_RULE_GIVE_BACK:
		log_info("latency: process %d no longer matches rule %s: given back", (int)pid,
			 p->source + 5);
		latmgr_take_back(m, pid, 0);
		return false;
	case LATPOL_RULE_APPLY:
		break;
	}
	return rule_give(m, pid, start, &m->conf->rules.r[i], source, at_exec);
}

/*
 * Process pid, a child missed while events were lost, of managed process parent (a
 * ctl value's). Its parent of record may not be the task that created it
 * (clone(CLONE_PARENT), an orphan adopted by a subreaper): it gets the parent's value
 * only if the kernel gave it what rqbalance set there, and a rule's value only by
 * matching the rule itself (rescan_rules).
 */
static void rescan_child(struct latmgr *m, pid_t pid, const struct latmgr_proc *parent)
{
	const struct lat_entry *from = latmgr_from_of(m, parent->tgid, parent->tgid);
	struct latpol_rec rec = latmgr_rec_of(parent);
	struct latmgr_proc child = *parent;
	struct latpol_task t;

	latmgr_read_task(m, pid, pid, &t);
	if (t.gone || !latpol_adopt(&rec, t.start_time,
				    t.start_time >= rec.start_time &&
				    latmgr_kernel_inherited(m, pid, from)))
		return;
	child.tgid = pid;
	child.start_time = t.start_time;
	if (latmgr_proc_put(m, &child) < 0)
		return;
	if (latmgr_refill_threads(m, latmgr_find_process(m, pid, child.start_time), from) > 0)
		m->cnt.threads++;
}

/*
 * The rules on process pid, with what a task walk said it runs: true if a rule gave
 * it its value just now.
 */
static bool rescan_rules(struct latmgr *m, pid_t pid)
{
	const struct evsrc_exe *x = evsrc_exe_find(m->exes, m->nexes, pid);
	struct latmgr_exe kx = { .start_ns = x ? x->start_ns : 0,
				 .id = { .dev = x ? x->dev : 0, .ino = x ? x->ino : 0 } };

	return latmgr_apply_rules(m, pid, x && x->has_exe ? &kx : NULL, false);
}

/*
 * Process pid, a child missed while events were lost, of a launcher (parent, whose
 * value is not handed down) and matched by no rule: what it copied of the parent's
 * value goes back, as at its fork event.
 */
static void rescan_launched(struct latmgr *m, pid_t pid, const struct latmgr_proc *parent)
{
	const struct lat_entry *from = latmgr_from_of(m, parent->tgid, parent->tgid);
	struct latpol_task t;

	latmgr_read_task(m, pid, pid, &t);
	if (!from || t.gone || t.start_time < parent->start_time)
		return;
	latact_give_back_inherited(m->la, pid, pid, t.start_time, from);
}

/* New threads and children of managed processes, missed while events were lost. */
static void rescan_process(struct latmgr *m, pid_t pid, pid_t ppid)
{
	const struct latmgr_proc *p = latmgr_find_process(m, pid, LATMGR_START_NOW), *parent;
	const struct lat_entry *from;
	bool given = false;

	parent = p ? NULL : latmgr_find_process(m, ppid, LATMGR_START_NOW);
	if (parent && !parent->from_rule) {
		rescan_child(m, pid, parent);
		return;
	}
	/* A rule's value is checked again: the rules, or the process, may have changed. */
	if (!p || p->from_rule)
		given = rescan_rules(m, pid);
	if (!p && parent && parent->no_inherit && !given &&
	    !latmgr_find_process(m, pid, LATMGR_START_NOW))
		rescan_launched(m, pid, parent);
	/* Threads missed meanwhile; not those a rule gave its value to just now. */
	p = given ? NULL : latmgr_find_process(m, pid, LATMGR_START_NOW);
	from = p ? latmgr_from_of(m, pid, pid) : NULL;
	if (p && latmgr_refill_threads(m, p, from) > 0)
		m->cnt.threads++;
}

/* What every process runs, from the kernel: exe rules need no /proc/PID/exe then. */
static void rescan_exes(struct latmgr *m)
{
	int r;

	if (!m->ev || !m->conf->rules.n)
		return;
	r = evsrc_exes(m->ev, &m->exes, &m->nexes);
	/* A source that cannot say (the connector) leaves exe rules to /proc/PID/exe. */
	if (r < 0 && r != -EOPNOTSUPP)
		log_debug("latency: task walk for exe identities failed: %s", strerror(-r));
}

void latmgr_rescan(struct latmgr *m)
{
	struct dirent *de;
	DIR *d = opendir(m->proc_root);

	if (!d)
		return;
	m->cnt.rescans++;
	m->rescan_ns = util_now_ns();
	rescan_exes(m);
	while ((de = readdir(d))) {
		pid_t pid = (pid_t)atoi(de->d_name);
		struct parse_stat_line l;

		if (pid <= 0 || pid == m->self || procfs_stat(m->proc_root, 0, pid, &l) < 0 ||
		    (l.flags & PARSE_PF_KTHREAD))
			continue;
		rescan_process(m, pid, l.ppid);
	}
	closedir(d);
	free(m->exes);
	m->exes = NULL;
	m->nexes = 0;
	m->resync = false;
}

/*
 * The rules' exe files by (device, inode), found again: at start, at a reload, when a
 * file in one of their folders changes (a package's upgrade replaces a program with a
 * new inode) and, where a folder cannot be watched, at each sweep (a rule's file
 * replaced meanwhile is matched by its path until then). Without memory, the last
 * table is dropped and ident tries every rule, as it did.
 */
void latmgr_exetab_build(struct latmgr *m)
{
	struct ident_exetab *t = NULL;

	if (ident_exetab_build(&m->conf->rules, &t) < 0)
		t = NULL;
	ident_exetab_free(m->exetab);
	m->exetab = t;
}

/*
 * Something changed in a watched folder: the table is built again, once for what came.
 * A folder removed or moved away is watched no more (IN_IGNORED): until a reload
 * watches again, the table is built at each sweep, as for a folder never watched.
 */
static int on_exe_change(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct latmgr *m = userdata;
	char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
	bool overflow = false, unwatched = false;
	ssize_t n;

	(void)s;
	(void)revents;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;

			overflow |= (ev->mask & IN_Q_OVERFLOW) != 0;
			unwatched |= (ev->mask & IN_IGNORED) != 0;
			p += sizeof(*ev) + ev->len;
		}
	if (overflow)
		log_debug("latency: the exe rules' folders: events lost; the table is built anew");
	if (unwatched && m->exe_watched) {
		log_info("latency: a folder of the exe rules is gone: their files are looked up "
			 "again every %d ticks until a reload", LATMGR_SWEEP_TICKS);
		m->exe_watched = false;
	}
	latmgr_exetab_build(m);
	return 0;
}

void latmgr_exe_unwatch(struct latmgr *m)
{
	if (m->exe_src) {
		int fd = sd_event_source_get_io_fd(m->exe_src);

		m->exe_src = sd_event_source_disable_unref(m->exe_src);
		if (fd >= 0)
			close(fd);
	}
	m->exe_watched = false;
}

void latmgr_exe_watch(struct latmgr *m)
{
	const uint32_t mask = IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_ATTRIB |
			      IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;
	unsigned paths = 0, failed = 0;
	char dir[PATH_MAX];
	int fd;

	latmgr_exe_unwatch(m);
	for (unsigned i = 0; i < m->conf->rules.n; i++)
		paths += ident_exe_is_path(m->conf->rules.r[i].exe);
	if (!paths || !m->event)
		return;
	fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (fd < 0 || sd_event_add_io(m->event, &m->exe_src, fd, EPOLLIN, on_exe_change, m) < 0) {
		log_info("latency: the exe rules' folders cannot be watched (%s): their files are "
			 "looked up again every %d ticks", fd < 0 ? strerror(errno) : "no event source",
			 LATMGR_SWEEP_TICKS);
		if (fd >= 0)
			close(fd);
		m->exe_src = NULL;
		return;
	}
	/* The same folder twice is one watch: the kernel keys them by inode. */
	for (unsigned i = 0; i < m->conf->rules.n; i++) {
		const char *exe = m->conf->rules.r[i].exe, *slash;

		if (!ident_exe_is_path(exe) || !(slash = strrchr(exe, '/')))
			continue;
		snprintf(dir, sizeof(dir), "%.*s", slash == exe ? 1 : (int)(slash - exe), exe);
		if (inotify_add_watch(fd, dir, mask) < 0)
			failed++;
	}
	m->exe_watched = failed == 0;
	if (failed)
		log_info("latency: %u of the exe rules' folders cannot be watched (missing, or a "
			 "watch limit): their files are looked up again every %d ticks", failed,
			 LATMGR_SWEEP_TICKS);
}

void latmgr_rules_changed(struct latmgr *m)
{
	struct latact_result *res = NULL;
	size_t n;
	/* The mapping's settings may have changed too: every task gets its value anew. */
	struct latpol_task *e = latmgr_entries_of(m, 0, &n);
	struct plan pl;

	latmgr_exetab_build(m);
	latmgr_exe_watch(m);
	plan_init(&pl);
	if (e && latpol_reapply(e, n, &pl) > 0)
		res = latmgr_apply(m, &pl);
	free(e);
	for (size_t i = 0; res && i < pl.n; i++)
		if (res[i].r < 0)
			log_debug("latency: task %d kept its settings at reload: %s",
				  (int)pl.a[i].tid, res[i].why ? res[i].why : "failed");
	free(res);
	plan_fini(&pl);
	latmgr_rescan(m);
	latmgr_source_pace(m);
}

/*
 * Whether to rescan for lost events now. Until the source has been read empty after
 * the loss the kernel may drop more without a word (the connector's does): the rescan
 * waits for that point, so that it covers them too. A source that never empties still
 * gets one every LATMGR_RESYNC_TICKS ticks, and the resync stays due.
 */
static bool resync_now(struct latmgr *m, bool *ret_again)
{
	*ret_again = false;
	if (!m->resync)
		return false;
	if (m->drained || !latmgr_has_events(m)) {
		m->resync_wait = 0;
		return true;
	}
	*ret_again = true;
	return ++m->resync_wait % LATMGR_RESYNC_TICKS == 0;
}

/* Whether the process of record p exited (its pid gone, or another's now). */
static bool proc_gone(const struct latmgr *m, const struct latmgr_proc *p)
{
	uint64_t start;
	bool kthread;

	return latmgr_task_info(m, p->tgid, &start, &kthread) < 0 || start != p->start_time;
}

static void sweep(struct latmgr *m, bool resync)
{
	latact_verify(m->la);
	if (!m->exe_watched)
		latmgr_exetab_build(m);
	for (size_t i = m->np; i-- > 0;)
		if (proc_gone(m, m->p[i]))
			latmgr_proc_del(m, m->p[i]->tgid);
	/* Without events, new threads are found by walking; with them, after losses. */
	if (resync || (!latmgr_has_events(m) && m->np))
		latmgr_rescan(m);
	/* It also finds processes moved into or out of a unit: no event tells. */
	latmgr_units_check_all(m);
}

/*
 * Of n, the share a tick checks: all every LATMGR_SWEEP_TICKS ticks, but never more
 * than max a tick, so that a tick costs the same with thousands managed (each is
 * checked every n / max ticks then).
 */
static size_t tick_share(size_t n, size_t max)
{
	size_t k = (n + LATMGR_SWEEP_TICKS - 1) / LATMGR_SWEEP_TICKS;

	return k < max ? k : max;
}

/*
 * With events, what a sweep does in shares, one a tick, so that no tick's cost grows
 * with what is managed: the tasks' knobs, the processes still there and their
 * cgroups, and the units decided again (processes that joined one).
 */
static void sweep_some(struct latmgr *m)
{
	size_t k = tick_share(m->np, LATMGR_SHARE_MAX);

	m->verify_at = latact_verify_some(m->la, m->verify_at,
					  tick_share(m->la->n, LATMGR_SHARE_MAX));
	while (k-- > 0 && m->np) {
		size_t i = m->sweep_at % m->np;

		if (proc_gone(m, m->p[i])) {
			latmgr_proc_del(m, m->p[i]->tgid);
			m->sweep_at = i; /* the next one is in its place now */
			continue;
		}
		latmgr_unit_place(m, m->p[i]);
		m->sweep_at = i + 1;
	}
	latmgr_units_check_some(m, tick_share(m->nu, LATMGR_UNIT_SHARE_MAX));
	if (!m->exe_watched && m->ticks % LATMGR_SWEEP_TICKS == 0)
		latmgr_exetab_build(m);
}

void latmgr_tick(struct latmgr *m)
{
	bool again, resync, swept;

	/* Events that wake nobody (BPF's forks and exits) are read here at the latest. */
	if (m->ev && m->ev->ops->tick_read)
		latmgr_dispatch(m);
	resync = resync_now(m, &again);
	m->ticks++;
	swept = !latmgr_has_events(m) || resync;
	if (swept)
		sweep(m, resync);
	else
		sweep_some(m);
	if (again)
		m->resync = true;
	latmgr_units_refresh(m);
	latmgr_source_pace(m);
}
