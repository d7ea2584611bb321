/*
 * Shared by the sample stage's readers of another process's memory (ident, peers):
 * bounds the event loop's wait for one read. Its worker threads only read into buffers
 * of their own, never the daemon's state; what the text means is the caller's.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "rqbalance.h"
#include "util/schedattr.h"
#include "util/timedread.h"

/* A worker only calls read(2). */
#define WORKER_STACK (64 * 1024)

enum job_state { JOB_NONE, JOB_ASKED, JOB_DONE };

struct worker {
	pthread_mutex_t lock;
	pthread_cond_t cv;    /* state or left changed */
	enum job_state state;
	bool left;            /* no one waits for it any more: it frees itself */
	int fd;               /* the job's, a descriptor of the worker's own */
	char *buf;            /* the worker's, cap bytes */
	size_t cap, len;      /* len: the job's buffer size, at most cap */
	ssize_t n;            /* the job's result: bytes, or -errno */
	struct rqb_sched_attr sched; /* its creator's scheduling, which it takes first */
	bool have_sched;
};

static struct worker *idle; /* where the next read goes, or NULL: a new worker */
static atomic_uint stuck;   /* workers left reading */

static ssize_t read_all(int fd, char *buf, size_t len)
{
	size_t n = 0;

	while (n < len - 1) {
		ssize_t r = read(fd, buf + n, len - 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	return (ssize_t)n;
}

static void worker_free(struct worker *w)
{
	if (w->fd >= 0)
		close(w->fd);
	pthread_cond_destroy(&w->cv);
	pthread_mutex_destroy(&w->lock);
	free(w->buf);
	free(w);
}

/* Reads each job asked of it, until it is left: then it frees itself. */
static void *work(void *arg)
{
	struct worker *w = arg;
	bool was_stuck = false;
	ssize_t n;

	/*
	 * The daemon's threads run at its own latency-nice with SCHED_RESET_ON_FORK, which
	 * gives a new thread nice 0 and the default slice: it takes its creator's back.
	 */
	if (w->have_sched)
		rqb_sched_setattr(0, &w->sched);
	pthread_mutex_lock(&w->lock);
	for (;;) {
		while (w->state != JOB_ASKED && !w->left)
			pthread_cond_wait(&w->cv, &w->lock);
		if (w->state != JOB_ASKED)
			break;
		pthread_mutex_unlock(&w->lock);
		n = read_all(w->fd, w->buf, w->len);
		pthread_mutex_lock(&w->lock);
		w->n = n;
		w->state = JOB_DONE;
		pthread_cond_broadcast(&w->cv);
		if (w->left) {
			was_stuck = true;
			break;
		}
	}
	pthread_mutex_unlock(&w->lock);
	if (was_stuck)
		atomic_fetch_sub(&stuck, 1);
	worker_free(w);
	return NULL;
}

/* A thread with every signal blocked (the loop takes them through signalfd), detached. */
static int start(struct worker *w)
{
	sigset_t all, old;
	pthread_attr_t a;
	pthread_t t;
	int r;

	w->have_sched = rqb_sched_getattr(0, &w->sched) == 0;
	sigfillset(&all);
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, WORKER_STACK);
	pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	r = pthread_create(&t, &a, work, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&a);
	return -r;
}

static struct worker *worker_new(void)
{
	struct worker *w = calloc(1, sizeof(*w));
	pthread_condattr_t ca;
	int r;

	if (!w)
		return NULL;
	w->fd = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cv, &ca);
	pthread_condattr_destroy(&ca);
	r = start(w);
	if (r < 0) {
		worker_free(w);
		errno = -r;
		return NULL;
	}
	return w;
}

static struct timespec deadline(uint64_t bound_ns)
{
	struct timespec ts;
	uint64_t ns;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ns = (uint64_t)ts.tv_nsec + bound_ns % NSEC_PER_SEC;
	ts.tv_sec += (time_t)(bound_ns / NSEC_PER_SEC + ns / NSEC_PER_SEC);
	ts.tv_nsec = (long)(ns % NSEC_PER_SEC);
	return ts;
}

/* Hands the job to w and waits; w's lock is held. -ETIMEDOUT leaves w reading. */
static ssize_t ask(struct worker *w, int fd, size_t len, uint64_t bound_ns)
{
	struct timespec until = deadline(bound_ns);
	int r = 0;

	w->fd = fd;
	w->len = len;
	w->state = JOB_ASKED;
	pthread_cond_broadcast(&w->cv);
	while (w->state != JOB_DONE && r != ETIMEDOUT)
		r = pthread_cond_timedwait(&w->cv, &w->lock, &until);
	if (w->state != JOB_DONE) {
		w->left = true;
		atomic_fetch_add(&stuck, 1);
		return -ETIMEDOUT;
	}
	close(w->fd);
	w->fd = -1;
	w->state = JOB_NONE;
	return w->n;
}

/* Room for len bytes in w's buffer; w's lock is held and w idle. 0 or -ENOMEM. */
static int fit(struct worker *w, size_t len)
{
	char *b;

	if (len <= w->cap)
		return 0;
	b = realloc(w->buf, len);
	if (!b)
		return -ENOMEM;
	w->buf = b;
	w->cap = len;
	return 0;
}

ssize_t timedread(int fd, char *buf, size_t len, uint64_t bound_ns)
{
	struct worker *w;
	ssize_t n;
	int own;

	if (len == 0)
		return -EINVAL;
	if (atomic_load(&stuck) >= TIMEDREAD_STUCK_MAX)
		return -EBUSY;
	if (!idle && !(idle = worker_new()))
		return -errno;
	w = idle;
	own = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	if (own < 0)
		return -errno;
	pthread_mutex_lock(&w->lock);
	if (fit(w, len) < 0) {
		pthread_mutex_unlock(&w->lock);
		close(own);
		return -ENOMEM;
	}
	n = ask(w, own, len, bound_ns);
	if (n >= 0) {
		memcpy(buf, w->buf, (size_t)n);
		buf[n] = '\0';
	}
	pthread_mutex_unlock(&w->lock);
	if (n == -ETIMEDOUT)
		idle = NULL; /* w is the read's now */
	return n;
}

ssize_t timedread_proc(int fd, char *buf, size_t len)
{
	struct statfs fs;
	ssize_t n;

	if (len == 0)
		return -EINVAL;
	if (fstatfs(fd, &fs) == 0 && fs.f_type == PROC_SUPER_MAGIC)
		return timedread(fd, buf, len, TIMEDREAD_PROC_NS);
	n = read_all(fd, buf, len);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

unsigned timedread_stuck(void)
{
	return atomic_load(&stuck);
}

void timedread_fini(void)
{
	if (!idle)
		return;
	pthread_mutex_lock(&idle->lock);
	idle->left = true;
	pthread_cond_broadcast(&idle->cv);
	pthread_mutex_unlock(&idle->lock);
	idle = NULL;
}
