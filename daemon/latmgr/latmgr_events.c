/*
 * Latency management, fork, exec and exit as the event source reports them: a managed
 * process's new threads and children get its value, a rule acts at exec, an exit is
 * forgotten; and the barrier (mark, passed) that says every event before a moment was
 * handled. It never acts on a pid that names another task than the event's.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "latmgr/latmgr_int.h"
#include "proc/procfs.h"
#include "rqbalance.h"
#include "util/log.h"
#include "util/util.h"

/*
 * Whether the task that has the event's pid now is the one the event is about. An
 * event read late (a busy or descheduled daemon, a backlog after a fork storm) may
 * name a pid whose task has exited and whose pid went to another since. Where the
 * event carries the task's start time (BPF), it must be the same; otherwise (the
 * connector) a start time within a tick of the event's time says it is the same, and
 * two tasks that share a pid within one tick cannot be told apart.
 */
static bool event_is_about(const struct evsrc_event *ev, uint64_t start)
{
	uint64_t t;

	if (ev->start_ns)
		return latmgr_boot_ticks(ev->start_ns) == start;
	t = latmgr_mono_ticks(ev->ts_ns);
	return !t || (start + 1 >= t && start <= t + 1);
}

/*
 * Whether an exit event is about the entry of a task that started at start: not if
 * that task started after the event (a late exit is about the pid's last owner).
 */
static bool exit_is_about(const struct evsrc_event *ev, uint64_t start)
{
	uint64_t t;

	if (ev->start_ns)
		return latmgr_boot_ticks(ev->start_ns) == start;
	t = latmgr_mono_ticks(ev->ts_ns);
	return !t || start <= t + 1;
}

/*
 * The task a new one came from, as far as the event says: BPF names it; the connector
 * names a new thread's process and a new process's real parent.
 */
static pid_t creator_of(const struct evsrc_event *ev)
{
	if (ev->creator_tgid > 0)
		return ev->creator_tid;
	return ev->tid != ev->tgid ? ev->tgid : ev->parent_tid;
}

const struct lat_entry *latmgr_from_of(const struct latmgr *m, pid_t tid, pid_t tgid)
{
	const struct lat_entry *e = latact_find(m->la, tid);

	return e ? e : latact_find(m->la, tgid);
}

/*
 * Whether the kernel gave task tid what rqbalance set on from: the nice and policy it
 * inherits at fork from the task that created it, and the class cgroup where
 * rqbalance holds from's. Where the source does not name the creator (the connector,
 * a walk of /proc: the parent of record is not the creator after a clone with
 * CLONE_PARENT, nor after the creator exited), this says the creator held the value.
 * A creator that had the same nice, policy and class without rqbalance could do the
 * same itself: lowering nice needs the privilege a negative value would give.
 */
bool latmgr_kernel_inherited(const struct latmgr *m, pid_t tid, const struct lat_entry *from)
{
	struct lat_state cur;
	bool cg, same;

	if (!from) {
		log_debug("latency: process %d: its parent holds nothing of rqbalance's", (int)tid);
		return false;
	}
	/* Where from's class move is still queued, its end decides where from is. */
	if (latact_move_pending(m->la, from->task.tid))
		latact_moves_wait(m->la);
	if (latact_read(m->la, tid, &cur) < 0) {
		log_debug("latency: process %d: its nice, policy and cgroup cannot be read", (int)tid);
		return false;
	}
	cg = !from->set.cgroup[0] || strcmp(cur.cgroup, from->set.cgroup) == 0;
	same = cur.nice == from->set.nice && cur.policy == from->set.policy && cg;
	/* What differed, for the log: a child that did not inherit is rare, and a puzzle. */
	if (!same)
		log_debug("latency: process %d has nice %d, policy %d and %s class cgroup; "
			  "rqbalance set nice %d and policy %d on %d", (int)tid, cur.nice,
			  cur.policy, cg ? "its" : "another", from->set.nice, from->set.policy,
			  (int)from->task.tid);
	return same;
}

/*
 * A task whose creator is not managed, read after the creator was given back: the
 * kernel may have given it what rqbalance had set on the creator (it was made before
 * the give-back, or between the exec that ended a rule's hold and the give-back that
 * followed; its fork event is read later). That goes back too, and nothing rqbalance
 * set outlives its management (the second review: 12 of 20 grandchildren of a boosted
 * program kept its nice and class). Where the source names no creator (the
 * connector), the real parent stands for it; the give-back checks the task has what
 * rqbalance set in any case.
 */
static void inherited_given_back(struct latmgr *m, const struct evsrc_event *ev, pid_t ctid)
{
	const struct lat_entry *from = latact_given_find(m->la, ctid);
	struct latpol_task child;
	int r;

	if (!from)
		return;
	latmgr_read_task(m, ev->tid, ev->tgid, &child);
	if (child.gone || !event_is_about(ev, child.start_time)) {
		log_debug("latency: task %d, made by task %d given back: %s", (int)ev->tid,
			  (int)ctid, child.gone ? "gone" : "its pid was reused");
		return;
	}
	r = latact_give_back_inherited(m->la, ev->tid, ev->tgid, child.start_time, from);
	if (r > 0)
		m->cnt.inherited_back++;
	else
		log_debug("latency: task %d, made by task %d given back: %s", (int)ev->tid,
			  (int)ctid, r == 0 ? "inherited nothing of rqbalance's" : strerror(-r));
}

/*
 * A task whose creator is managed again after a give-back: what it copied of the value
 * given back goes back first, where it does not hold what the creator holds now (a
 * launcher's child, given back at its fork and given its own rule's value at its exec,
 * may fork before either was read). A creator given the same value again makes copies
 * of that: those are left to take it.
 */
static void stale_given_back(struct latmgr *m, const struct evsrc_event *ev,
			     const struct latmgr_proc *p)
{
	pid_t ctid = creator_of(ev);

	if (!latact_given_find(m->la, ctid) ||
	    latmgr_kernel_inherited(m, ev->tid, latmgr_from_of(m, ctid, p->tgid)))
		return;
	inherited_given_back(m, ev, ctid);
}

/* The process of the task a new one came from (creator_of): its own for a thread. */
static pid_t creator_process(const struct evsrc_event *ev)
{
	if (ev->tid != ev->tgid)
		return ev->tgid;
	return ev->creator_tgid > 0 ? ev->creator_tgid : ev->parent_tgid;
}

/*
 * The fork the event reports, as latpol_fork reads it: the creating process's record
 * p, the new task as it is now, and whether it inherited what rqbalance set. The
 * creator's cgroup is checked first: one someone else moved is theirs, and so is the
 * child's. False when the task is not the one the event is about any more.
 */
static bool fork_read(struct latmgr *m, const struct evsrc_event *ev,
		      const struct latmgr_proc *p, struct latpol_fork *ret)
{
	bool thread = ev->tid != ev->tgid, known = ev->creator_tgid > 0;
	pid_t ctid = creator_of(ev);
	const struct lat_entry *from;

	*ret = (struct latpol_fork){ .creator = latmgr_rec_of(p), .thread = thread,
				     .creator_known = known, .inherited = true };
	latmgr_read_task(m, ev->tid, ev->tgid, &ret->child);
	if (ret->child.gone || !event_is_about(ev, ret->child.start_time))
		return false;
	latact_check(m->la, ctid);
	from = latmgr_from_of(m, ctid, p->tgid);
	ret->from_tid = from ? from->task.tid : 0;
	if (!thread && !known)
		ret->inherited = latmgr_kernel_inherited(m, ev->tid, from);
	return true;
}

/*
 * A new process of a launcher, whose value is not handed down (inherit = no): it is
 * given back what the kernel copied of the creator's (a positive nice, SCHED_BATCH or
 * SCHED_IDLE and the class cgroup, which SCHED_RESET_ON_FORK leaves), knob by knob
 * where it still holds what rqbalance set. It is remembered as given back, for what it
 * makes before this is read. The rules see it at its exec, as every process: a fork is
 * not the matched program, whatever it still shares with it (its comm, its exe).
 */
static void not_handed_down(struct latmgr *m, const struct evsrc_event *ev,
			    const struct latpol_fork *f)
{
	const struct lat_entry *from = latact_find(m->la, f->from_tid);
	int r = from ? latact_give_back_inherited(m->la, ev->tid, ev->tgid,
						  f->child.start_time, from) : 0;

	if (r < 0)
		log_debug("latency: process %d, started by launcher %d: %s", (int)ev->tid,
			  (int)f->from_tid, strerror(-r));
}

/*
 * A new thread (tid != tgid) of a managed process gets the process's value; a new
 * process gets the value of the process that created it, as the kernel gives it the
 * creator's nice, policy and cgroup. BPF names the creator (the tracepoint's current
 * task); the connector names only the real parent, which after clone(CLONE_PARENT)
 * is the creator's parent: there the child is managed only if the kernel gave it what
 * rqbalance set on that parent (latmgr_kernel_inherited). The task is acted on only if
 * it is still the one the event is about.
 */
static void on_fork(struct latmgr *m, const struct evsrc_event *ev)
{
	const struct latmgr_proc *p = latmgr_event_process(m, creator_process(ev));
	struct latmgr_proc child;
	struct latpol_fork f;
	struct plan pl;
	const char *why;
	int r;

	if (!p) {
		inherited_given_back(m, ev, creator_of(ev));
		return;
	}
	stale_given_back(m, ev, p);
	/* A record of a process that started after the child is not its creator's. */
	if (!fork_read(m, ev, p, &f) || p->start_time > f.child.start_time)
		return;
	if (!latpol_hands_down(&f.creator, f.thread)) {
		not_handed_down(m, ev, &f);
		return;
	}
	child = *p;
	child.tgid = ev->tgid;
	child.start_time = f.child.start_time;
	plan_init(&pl);
	r = latpol_fork(&f, m->self, &pl, &why);
	if (r == 0 && why)
		log_debug("latency: process %d, forked under %d, %s: not managed", (int)ev->tid,
			  (int)ev->parent_tgid, why);
	if (latmgr_apply_one(m, &pl, r, &why) != 0 || r <= 0)
		return;
	if (!f.thread)
		latmgr_proc_put(m, &child);
	m->cnt.threads++;
}

static void on_exit_event(struct latmgr *m, const struct evsrc_event *ev)
{
	const struct lat_entry *e = latact_find(m->la, ev->tid);
	const struct latmgr_proc *p = latmgr_event_process(m, ev->tgid);

	if (e && exit_is_about(ev, e->task.start_time))
		latact_task_gone(m->la, ev->tid);
	else if (!e)
		latact_given_forget(m->la, ev->tid);
	if (ev->tid == ev->tgid && p && exit_is_about(ev, p->start_time))
		latmgr_proc_del(m, ev->tgid);
	/* A front's or a game's exit ends its grant: the favour does not outlive it. */
	for (size_t i = 0; ev->tid == ev->tgid && !m->stopping && i < m->nfg; i++)
		if (m->fg[i].tgid == ev->tgid && exit_is_about(ev, m->fg[i].start_time))
			latmgr_fg_exited(m, &m->fg[i]);
	for (size_t i = 0; ev->tid == ev->tgid && !m->stopping && i < m->ngames; i++)
		if (m->games[i].tgid == ev->tgid && exit_is_about(ev, m->games[i].start_time))
			latmgr_game_exited(m, &m->games[i]);
	/* One that kept a unit from its processes' value may have left it to them. */
	if (ev->tid == ev->tgid)
		latmgr_units_exit(m, ev->tgid);
}

/* A process's exec: the rules, with what the kernel said it runs where it said. */
static void on_exec(struct latmgr *m, const struct evsrc_event *ev)
{
	struct latmgr_exe kx = { .start_ns = ev->start_ns,
				 .id = { .dev = ev->exe_dev, .ino = ev->exe_ino } };

	uint64_t now, us;

	if (!latmgr_apply_rules(m, ev->tgid, ev->has_exe && ev->start_ns ? &kx : NULL, true))
		return;
	/* The event's time is the kernel's CLOCK_MONOTONIC, from BPF and the connector alike. */
	now = util_now_ns();
	if (!ev->ts_ns || ev->ts_ns > now)
		return;
	us = (now - ev->ts_ns) / 1000;
	m->exec_us[m->nexec_us++ % LATMGR_EXEC_TIMES] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static void on_event(void *ctx, const struct evsrc_event *ev)
{
	struct latmgr *m = ctx;

	m->cnt.events++;
	if (ev->ts_ns > m->last_event_ns)
		m->last_event_ns = ev->ts_ns;
	switch (ev->kind) {
	case EVSRC_FORK:
		if (m->stopping)
			inherited_given_back(m, ev, creator_of(ev));
		else
			on_fork(m, ev);
		break;
	case EVSRC_EXEC:
		if (ev->tid == ev->tgid && !m->stopping)
			on_exec(m, ev);
		break;
	case EVSRC_EXIT:
		on_exit_event(m, ev);
		break;
	}
}

static void on_overflow(void *ctx)
{
	struct latmgr *m = ctx;

	if (m->cnt.overflows++ == 0)
		log_warn("latency: %s: events lost, rescanning /proc (counted in rqctl status)",
			 m->ev->ops->lost);
	m->resync = true;
	m->drained = false;
}

const struct evsrc_callbacks latmgr_event_callbacks = { .event = on_event,
							.overflow = on_overflow };

void latmgr_dispatch(struct latmgr *m)
{
	int r = evsrc_dispatch(m->ev);

	if (r < 0 && r != -EAGAIN)
		log_debug("latency: %s: %s", m->pc_state, strerror(-r));
	if (!evsrc_empty(m->ev))
		return;
	m->empty_reads++;
	if (m->resync)
		m->drained = true;
}

int latmgr_events_ready(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	(void)s;
	(void)fd;
	(void)revents;
	latmgr_dispatch(userdata);
	return 0;
}

void latmgr_mark(struct latmgr *m, uint64_t now_ns, uint64_t margin_ns, struct latmgr_mark *ret)
{
	*ret = (struct latmgr_mark){ .ns = now_ns, .margin_ns = margin_ns,
				 .empty_reads = m->empty_reads, .overflows = m->cnt.overflows,
				 .lost = m->resync };
	if (latmgr_has_events(m))
		latmgr_dispatch(m);
}

bool latmgr_passed(const struct latmgr *m, const struct latmgr_mark *mk)
{
	bool lost = mk->lost || m->cnt.overflows != mk->overflows;

	/*
	 * A class move an event asked for is made by the mover, later: until it has ended
	 * and been collected, what the events asked is not done (a sync would answer
	 * before a rule's class is there).
	 */
	if (m->la && !latact_moves_idle(m->la))
		return false;
	/* Without events nothing is queued: each tick walks /proc instead. */
	if (!latmgr_has_events(m))
		return true;
	if (m->empty_reads == mk->empty_reads && m->last_event_ns < mk->ns + mk->margin_ns)
		return false;
	return !lost || m->rescan_ns >= mk->ns;
}

/* Reads the events queued so far (a bounded number of reads). */
static void drain(struct latmgr *m)
{
	for (int i = 0; m->ev && i < 64; i++) {
		latmgr_dispatch(m);
		if (evsrc_empty(m->ev))
			break;
	}
}

void latmgr_stop(struct latmgr *m)
{
	/* Forks not read yet are children to give back what they inherited. */
	drain(m);
}

/*
 * Whether task tid may be inside a fork now: running or runnable (R), or waiting
 * uninterruptibly (D), as a fork does for memory or a lock. A task seen asleep (S), stopped
 * or gone is not: it finished any fork it had begun.
 */
static bool may_fork(const struct latmgr *m, pid_t tid)
{
	struct parse_stat_line l;

	if (procfs_stat(m->proc_root, 0, tid, &l) < 0)
		return false;
	return l.state == 'R' || l.state == 'D' || l.state == 'W';
}

/*
 * The kernel copies the nice into a child at the start of a fork and reports the fork
 * at its end, with no event between: a task given back while inside a fork makes a
 * child with rqbalance's value whose event comes later, and after the daemon exits no
 * one would give that back. So the stop waits, task by task, until each task given
 * back has been seen out of any fork (asleep, stopped or gone), then reads the events
 * once more; the children given back there are watched the same way. A task that keeps
 * running (a busy loop) is waited for at most STOP_SETTLE_NS, then said in the log.
 */
#define STOP_SETTLE_NS (250 * NSEC_PER_MSEC)

static void settle(struct latmgr *m)
{
	uint64_t deadline = util_now_ns() + STOP_SETTLE_NS;
	size_t busy = 0;
	bool *done = NULL;
	size_t cap = 0;

	for (;;) {
		size_t n = latact_given_count(m->la);

		if (n > cap) {
			bool *d = realloc(done, n * sizeof(*d));

			if (!d)
				break;
			memset(d + cap, 0, (n - cap) * sizeof(*d));
			done = d;
			cap = n;
		}
		busy = 0;
		for (size_t k = 0; k < n; k++) {
			pid_t tid = latact_given_nth(m->la, k)->task.tid;

			if (!done[k] && (tid <= 0 || !may_fork(m, tid)))
				done[k] = true;
			busy += !done[k];
		}
		/* Every fork each task was in has been reported by now: read them. */
		drain(m);
		if (!busy && latact_given_count(m->la) == n)
			break;
		if (busy && util_now_ns() >= deadline)
			break;
		if (busy)
			nanosleep(&(struct timespec){ .tv_nsec = NSEC_PER_MSEC }, NULL);
	}
	free(done);
	if (busy)
		log_warn("latency: stop: %zu task%s given back kept running for %llu ms: a child "
			 "one makes now may keep what rqbalance set on it", busy,
			 busy == 1 ? "" : "s", (unsigned long long)(STOP_SETTLE_NS / NSEC_PER_MSEC));
}

void latmgr_stopped(struct latmgr *m)
{
	while (m->np)
		latmgr_proc_del(m, m->p[m->np - 1]->tgid);
	m->stopping = true;
	drain(m);
	if (m->ev)
		settle(m);
}
