/* The proc connector on this kernel: a child's fork, thread, exec and exit; counters; overflow. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"
#include "log.h"
#include "procconn.h"
#include "rqbalance.h"

#define MAX_SEEN 64
#define PUMP_NS (2 * NSEC_PER_SEC)

/* What the callbacks saw: every event counted, those of the watched child kept. */
struct seen {
	pid_t parent;              /* this test process */
	pid_t child;               /* 0: keep nothing */
	size_t n;
	struct pc_event ev[MAX_SEEN];
	uint64_t lat_ns[MAX_SEEN]; /* receipt minus the kernel's timestamp */
	uint64_t events;           /* every event delivered */
	uint64_t overflows;
};

static bool is_childs(const struct seen *s, const struct pc_event *ev)
{
	return s->child > 0 && (ev->tgid == s->child || ev->tid == s->child);
}

static void on_event(void *ctx, const struct pc_event *ev)
{
	struct seen *s = ctx;

	s->events++;
	if (!is_childs(s, ev) || s->n == MAX_SEEN)
		return;
	s->lat_ns[s->n] = rqb_now_ns() - ev->ts_ns;
	s->ev[s->n++] = *ev;
}

static void on_overflow(void *ctx)
{
	struct seen *s = ctx;

	s->overflows++;
}

static const struct pc_callbacks callbacks = { .event = on_event, .overflow = on_overflow };

static struct procconn *open_or_skip(struct seen *s)
{
	struct procconn *pc = NULL;
	int r;

	memset(s, 0, sizeof(*s));
	s->parent = getpid();
	r = pc_open(&callbacks, s, &pc);
	if (r == -EPERM || r == -EPROTONOSUPPORT) {
		print_message("skip: no proc connector here (%s)\n", strerror(-r));
		skip();
	}
	assert_int_equal(r, 0);
	return pc;
}

static const struct pc_event *find(const struct seen *s, enum pc_event_kind kind, pid_t tid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ev[i].kind == kind && s->ev[i].tid == tid)
			return &s->ev[i];
	return NULL;
}

/* The FORK of a thread of the child: the one task of its process that is not the child. */
static const struct pc_event *find_thread(const struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ev[i].kind == PC_FORK && s->ev[i].tgid == s->child &&
		    s->ev[i].tid != s->child)
			return &s->ev[i];
	return NULL;
}

static bool have_all(const struct seen *s)
{
	const struct pc_event *t = find_thread(s);

	return find(s, PC_FORK, s->child) && t && find(s, PC_EXIT, t->tid) &&
	       find(s, PC_EXEC, s->child) && find(s, PC_EXIT, s->child);
}

static bool have_exit(const struct seen *s)
{
	return find(s, PC_EXIT, s->child) != NULL;
}

/* Dispatches until done() or PUMP_NS pass; returns what pc_dispatch delivered in all. */
static int pump(struct procconn *pc, struct seen *s, bool (*done)(const struct seen *))
{
	uint64_t deadline = rqb_now_ns() + PUMP_NS;
	struct pollfd pfd = { .fd = pc_fd(pc), .events = POLLIN };
	int total = 0, r;

	while (!done(s) && rqb_now_ns() < deadline) {
		assert_true(poll(&pfd, 1, 100) >= 0);
		r = pc_dispatch(pc);
		assert_true(r >= 0);
		total += r;
	}
	return total;
}

static void *thread_main(void *arg)
{
	return NULL;
}

/* In the child: a thread that ends, then exec /bin/true. */
static void child_main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
		_exit(126);
	execl("/bin/true", "true", (char *)NULL);
	_exit(127);
}

static void reap(pid_t pid)
{
	int st;

	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

static pid_t spawn_exiting(void)
{
	pid_t pid = vfork();

	if (pid == 0)
		_exit(0);
	return pid;
}

static void sort_u64(uint64_t *a, size_t n)
{
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && a[j - 1] > a[j]; j--) {
			uint64_t t = a[j];

			a[j] = a[j - 1];
			a[j - 1] = t;
		}
}

static void report_latency(struct seen *s)
{
	uint64_t lat[MAX_SEEN];

	memcpy(lat, s->lat_ns, s->n * sizeof(lat[0]));
	sort_u64(lat, s->n);
	print_message("event to receipt over %zu events: min %.1f us, p50 %.1f us, max %.1f us\n",
		      s->n, lat[0] / 1e3, lat[s->n / 2] / 1e3, lat[s->n - 1] / 1e3);
}

static void test_child_lifecycle(void **state)
{
	struct seen s;
	struct procconn *pc = open_or_skip(&s);
	const struct pc_event *fork_ev, *thr, *exec_ev, *exit_ev;
	uint64_t t0 = rqb_now_ns();

	s.child = fork();
	assert_true(s.child >= 0);
	if (s.child == 0)
		child_main();
	pump(pc, &s, have_all);
	reap(s.child);

	fork_ev = find(&s, PC_FORK, s.child);
	assert_non_null(fork_ev);
	assert_int_equal(fork_ev->tgid, s.child);
	assert_int_equal(fork_ev->parent_tgid, s.parent);
	assert_int_equal(fork_ev->parent_tid, s.parent);
	thr = find_thread(&s);
	assert_non_null(thr);
	/* The kernel names the thread's real_parent: its process's parent, not the cloner. */
	assert_int_equal(thr->parent_tgid, s.parent);
	assert_non_null(find(&s, PC_EXIT, thr->tid));
	assert_int_equal(find(&s, PC_EXIT, thr->tid)->tgid, s.child);
	exec_ev = find(&s, PC_EXEC, s.child);
	assert_non_null(exec_ev);
	assert_int_equal(exec_ev->tgid, s.child);
	exit_ev = find(&s, PC_EXIT, s.child);
	assert_non_null(exit_ev);
	assert_int_equal(exit_ev->tgid, s.child);
	/* In order, on CLOCK_MONOTONIC: after t0, no later than receipt. */
	assert_true(t0 <= fork_ev->ts_ns && fork_ev->ts_ns <= thr->ts_ns);
	assert_true(thr->ts_ns <= exec_ev->ts_ns && exec_ev->ts_ns <= exit_ev->ts_ns);
	for (size_t i = 0; i < s.n; i++)
		assert_true(s.lat_ns[i] < PUMP_NS);
	report_latency(&s);
	pc_close(pc);
}

static void test_counters(void **state)
{
	struct seen s;
	struct procconn *pc = open_or_skip(&s);
	struct pc_counters c;
	int delivered;

	pc_counters(pc, &c);
	assert_int_equal(c.events, 0);
	s.child = spawn_exiting();
	assert_true(s.child > 0);
	delivered = pump(pc, &s, have_exit);
	reap(s.child);
	assert_non_null(find(&s, PC_FORK, s.child));
	assert_non_null(find(&s, PC_EXIT, s.child));
	pc_counters(pc, &c);
	assert_true(c.events >= 2);
	assert_int_equal(c.events, s.events);
	assert_int_equal((uint64_t)delivered, s.events);
	assert_int_equal(c.overflows, 0);
	pc_close(pc);
}

/*
 * Forks without reading until the socket overflows: 20,000 children make 40,000
 * events, and the 4 MiB buffer (8 MiB as the kernel counts it) holds about 10,000.
 * The first read reports it; the backlog is read in bounded shares; the next child
 * after the overflow is still seen.
 */
static void test_overflow(void **state)
{
	struct seen s;
	struct procconn *pc = open_or_skip(&s);
	struct pc_counters c;
	int r;

	for (int i = 0; i < 20000; i++)
		reap(spawn_exiting());
	/* The overflow is reported by the first read; one call reads a bounded share. */
	assert_true(pc_dispatch(pc) >= 0);
	assert_true(s.overflows >= 1);
	assert_true(s.events <= 256);
	assert_false(pc_empty(pc));
	while ((r = pc_dispatch(pc)) > 0)
		;
	assert_true(r >= 0);
	assert_true(pc_empty(pc));
	pc_counters(pc, &c);
	assert_int_equal(c.overflows, s.overflows);
	assert_int_equal(c.events, s.events);
	assert_true(c.events < 40000);

	s.child = spawn_exiting();
	assert_true(s.child > 0);
	pump(pc, &s, have_exit);
	reap(s.child);
	assert_non_null(find(&s, PC_FORK, s.child));
	assert_non_null(find(&s, PC_EXIT, s.child));
	pc_close(pc);
}

static void test_close_null(void **state)
{
	pc_close(NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_close_null),
		cmocka_unit_test(test_child_lifecycle),
		cmocka_unit_test(test_counters),
		cmocka_unit_test(test_overflow),
	};

	log_set_level(LOG_WARNING);
	return cmocka_run_group_tests_name("procconn", tests, NULL, NULL);
}
