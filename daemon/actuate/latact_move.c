/*
 * The latency actuator's class moves, off the event loop. On cgroup v1, and on cgroup2
 * without favordynmods, a write to a cgroup's tasks or cgroup.procs file waits for an
 * RCU grace period before it moves anyone (cgroup_attach_lock → percpu_down_write on
 * cgroup_threadgroup_rwsem → rcu_sync_enter → synchronize_rcu; doc/latency.md, "Exec
 * to value"): some 20 ms in this VM, in which the loop read no event, so that the next
 * program's exec waited behind the last one's move. A move asked with
 * lat_req.async_move goes to one worker thread instead, in the order asked; the loop
 * learns of each end through an eventfd (latact_moves_done).
 *
 * The entry records the move as made, as every write is recorded before it is made
 * (the journal first): a move that fails is read back and recorded as the task is.
 * While a task's move is queued, nothing else reads or writes its cgroup: a check
 * skips it, and a new value, a give-back or a child's inheritance waits for the queue
 * (latact_moves_wait), which is what every one of them did before.
 *
 * The worker only writes the tid into the file, through the task opened by its pidfd
 * and start time, checked after the write as the loop's own writes are (act.h); it
 * logs nothing and touches no entry: a write that may have reached a task that took
 * the number (-ESTALE) is undone by the loop when it collects the end. It is started
 * after the daemon dropped its capabilities, whose set it inherits.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "actuate/latact_int.h"
#include "util/log.h"

#define MOVE_QUEUE 256 /* moves queued and ended but not yet collected; more go inline */

struct move_job {
	pid_t tid;
	pid_t tgid;
	uint64_t start_time;      /* /proc/TID/stat's, when the move was asked */
	char cgroup[LAT_PATH_MAX]; /* the class, as lat_state.cgroup names it */
	int r;                    /* 0, or -errno (-ESRCH: the task is gone or another;
				     -ESTALE: written, the task released by the end) */
};

struct latact_mover {
	const struct latact *la;   /* its ops, class mount and /proc: fixed while it runs */
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work;       /* a job was queued, or stop */
	pthread_cond_t idle;       /* the queue emptied */
	struct move_job q[MOVE_QUEUE]; /* a ring: q[head] is the one being made */
	size_t head, n;
	struct move_job done[MOVE_QUEUE]; /* ended, for the loop to collect */
	size_t ndone;
	bool stop;
	int efd;                   /* counts ends, for the loop's poll */
};

static int move_one(const struct latact *la, const struct move_job *j)
{
	struct act_task t;
	int r = la->ops->open(j->tid, j->tgid, j->start_time, &t);

	if (r < 0)
		return r;
	r = latact_cls_write(la, j->cgroup, &t);
	la->ops->close(&t);
	return r;
}

static void *worker(void *arg)
{
	struct latact_mover *mv = arg;

	pthread_mutex_lock(&mv->lock);
	for (;;) {
		struct move_job j;

		while (!mv->n && !mv->stop)
			pthread_cond_wait(&mv->work, &mv->lock);
		if (!mv->n)
			break; /* stopped, with nothing left to make */
		j = mv->q[mv->head];
		pthread_mutex_unlock(&mv->lock);
		j.r = move_one(mv->la, &j);
		pthread_mutex_lock(&mv->lock);
		mv->head = (mv->head + 1) % MOVE_QUEUE;
		mv->n--;
		mv->done[mv->ndone++] = j; /* room: latact_move_async counts it in */
		if (!mv->n)
			pthread_cond_broadcast(&mv->idle);
		/* Cannot fail at one a move (the counter would need 2^64 - 1 of them). */
		eventfd_write(mv->efd, 1);
	}
	pthread_mutex_unlock(&mv->lock);
	return NULL;
}

int latact_moves_start(struct latact *la)
{
	struct latact_mover *mv;
	sigset_t all, old;
	int r;

	if (la->mv)
		return la->mv->efd;
	mv = calloc(1, sizeof(*mv));
	if (!mv)
		return -ENOMEM;
	mv->la = la;
	mv->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (mv->efd < 0) {
		r = -errno;
		free(mv);
		return r;
	}
	pthread_mutex_init(&mv->lock, NULL);
	pthread_cond_init(&mv->work, NULL);
	pthread_cond_init(&mv->idle, NULL);
	/* Signals stay the loop's (it takes them through signalfd): the worker blocks all. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	r = -pthread_create(&mv->thread, NULL, worker, mv);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (r == 0)
		pthread_setname_np(mv->thread, "rqb-classmove"); /* for ps and top (15 characters at most) */
	if (r < 0) {
		close(mv->efd);
		pthread_cond_destroy(&mv->idle);
		pthread_cond_destroy(&mv->work);
		pthread_mutex_destroy(&mv->lock);
		free(mv);
		return r;
	}
	la->mv = mv;
	return mv->efd;
}

int latact_move_async(struct latact *la, const char *cgroup, pid_t tid, pid_t tgid,
		      uint64_t start_time)
{
	struct latact_mover *mv = la->mv;
	struct move_job *j;

	if (!mv || !start_time)
		return -EAGAIN;
	pthread_mutex_lock(&mv->lock);
	if (mv->n + mv->ndone >= MOVE_QUEUE) {
		pthread_mutex_unlock(&mv->lock);
		return -EAGAIN;
	}
	j = &mv->q[(mv->head + mv->n) % MOVE_QUEUE];
	*j = (struct move_job){ .tid = tid, .tgid = tgid, .start_time = start_time };
	snprintf(j->cgroup, sizeof(j->cgroup), "%s", cgroup);
	mv->n++;
	pthread_cond_signal(&mv->work);
	pthread_mutex_unlock(&mv->lock);
	return 0;
}

bool latact_move_pending(const struct latact *la, pid_t tid)
{
	struct latact_mover *mv = la->mv;
	bool found = false;

	if (!mv)
		return false;
	pthread_mutex_lock(&mv->lock);
	for (size_t i = 0; i < mv->n && !found; i++)
		found = mv->q[(mv->head + i) % MOVE_QUEUE].tid == tid;
	pthread_mutex_unlock(&mv->lock);
	return found;
}

bool latact_moves_idle(const struct latact *la)
{
	struct latact_mover *mv = la->mv;
	bool idle;

	if (!mv)
		return true;
	pthread_mutex_lock(&mv->lock);
	idle = !mv->n && !mv->ndone;
	pthread_mutex_unlock(&mv->lock);
	return idle;
}

/*
 * A move that did not happen: the entry, if it still records it, records where the
 * task is instead (nothing to give back there), and the log says why once.
 */
static void move_failed(struct latact *la, const struct move_job *j)
{
	struct lat_entry *e = latact_entry_of(la, j->tid);
	char cur[LAT_PATH_MAX];

	if (!e || e->task.start_time != j->start_time || strcmp(e->set.cgroup, j->cgroup) != 0)
		return;
	if (latact_read_task_cgroup(la, j->tid, cur, sizeof(cur)) < 0)
		return; /* gone meanwhile: its exit takes the entry */
	log_warn("latency: task %d: not moved into class cgroup \"%s\": %s", (int)j->tid,
		 j->cgroup, strerror(-j->r));
	la->cnt.errors++;
	snprintf(e->set.cgroup, sizeof(e->set.cgroup), "%s", cur);
	if (latact_journal_task(la, e) < 0)
		la->cnt.errors++;
}

void latact_moves_done(struct latact *la)
{
	struct latact_mover *mv = la->mv;
	struct move_job done[MOVE_QUEUE];
	eventfd_t count;
	size_t n;

	if (!mv)
		return;
	/* EAGAIN: nothing counted since the last read, and what ended was collected then. */
	eventfd_read(mv->efd, &count);
	pthread_mutex_lock(&mv->lock);
	n = mv->ndone;
	memcpy(done, mv->done, n * sizeof(*done));
	mv->ndone = 0;
	pthread_mutex_unlock(&mv->lock);
	for (size_t i = 0; i < n; i++) {
		if (done[i].r == -ESTALE) {
			struct act_task t = { .tid = done[i].tid, .start_time = done[i].start_time,
					      .pidfd = -1 };

			latact_cls_undo_move(la, &t, done[i].cgroup);
		} else if (done[i].r < 0 && done[i].r != -ESRCH) {
			move_failed(la, &done[i]);
		}
	}
}

void latact_moves_wait(struct latact *la)
{
	struct latact_mover *mv = la->mv;

	if (!mv)
		return;
	pthread_mutex_lock(&mv->lock);
	while (mv->n)
		pthread_cond_wait(&mv->idle, &mv->lock);
	pthread_mutex_unlock(&mv->lock);
	latact_moves_done(la);
}

void latact_moves_stop(struct latact *la)
{
	struct latact_mover *mv = la->mv;

	if (!mv)
		return;
	latact_moves_wait(la);
	pthread_mutex_lock(&mv->lock);
	mv->stop = true;
	pthread_cond_signal(&mv->work);
	pthread_mutex_unlock(&mv->lock);
	pthread_join(mv->thread, NULL);
	latact_moves_done(la);
	close(mv->efd);
	pthread_cond_destroy(&mv->idle);
	pthread_cond_destroy(&mv->work);
	pthread_mutex_destroy(&mv->lock);
	free(mv);
	la->mv = NULL;
}
