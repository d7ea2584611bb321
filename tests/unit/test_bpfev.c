/*
 * The BPF event source: its decoders on fixed records, and on this kernel a child's
 * fork, thread, exec and exit with their start times and the exec'd file's identity,
 * a task walk's exe identities, the bounded dispatch and the drop count of a full ring.
 *
 * No test waits for a time. sched_process_exit fires in do_exit() before
 * exit_notify(), and a ring buffer record is committed when it is submitted: once
 * waitpid() has returned, every event of the child is in the ring, so reading the
 * ring empty then finds them all. The ring is machine-wide like the connector: a fork
 * storm elsewhere may fill it; a scenario during which events were dropped is redone.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/types.h>

#include "rqbalance.h"
#include "taskev/bpf/rqevents.bpf.h"
#include "taskev/bpfev.h"
#include "kit.h"
#include "util/util.h"

#define MAX_SEEN 64
#define MAX_ATTEMPTS 10

/* ---- decoders ---- */

KIT_TEST(test_dev)
{
	(void)state;
	assert_true(bpfev_dev((8u << 20) | 1) == makedev(8, 1));
	assert_true(bpfev_dev((259u << 20) | 3) == makedev(259, 3));
	/* An anonymous device (tmpfs, overlayfs): major 0, a minor past 255. */
	assert_true(bpfev_dev(0x1a5) == makedev(0, 0x1a5));
	assert_true(bpfev_dev((1u << 20) | 0xfffff) == makedev(1, 0xfffff));
}

static struct rqe_event record(__u32 kind)
{
	return (struct rqe_event){ .kind = kind, .tid = 101, .tgid = 100, .parent_tid = 7,
				   .parent_tgid = 6, .creator_tid = 9, .creator_tgid = 8,
				   .ts_ns = 5000, .start_ns = 4000,
				   .exe_dev = (8u << 20) | 2, .exe_ino = 1234,
				   .flags = RQE_F_EXE };
}

KIT_TEST(test_decode)
{
	struct rqe_event r = record(RQE_FORK);
	struct evsrc_event e;

	(void)state;
	assert_int_equal(bpfev_decode(&r, sizeof(r), &e), 0);
	assert_int_equal(e.kind, EVSRC_FORK);
	assert_int_equal(e.tid, 101);
	assert_int_equal(e.tgid, 100);
	assert_int_equal(e.parent_tid, 7);
	assert_int_equal(e.parent_tgid, 6);
	assert_int_equal(e.creator_tid, 9);
	assert_int_equal(e.creator_tgid, 8);
	assert_int_equal(e.ts_ns, 5000);
	assert_int_equal(e.start_ns, 4000);
	/* Only an exec names a file, whatever the flags say. */
	assert_false(e.has_exe);

	r = record(RQE_EXEC);
	assert_int_equal(bpfev_decode(&r, sizeof(r), &e), 0);
	assert_int_equal(e.kind, EVSRC_EXEC);
	assert_true(e.has_exe);
	assert_true(e.exe_dev == makedev(8, 2));
	assert_int_equal(e.exe_ino, 1234);
	/* The parent and the creator are a fork's only. */
	assert_int_equal(e.parent_tid, 0);
	assert_int_equal(e.creator_tgid, 0);
	r.flags = 0;
	assert_int_equal(bpfev_decode(&r, sizeof(r), &e), 0);
	assert_false(e.has_exe);

	r = record(RQE_EXIT);
	assert_int_equal(bpfev_decode(&r, sizeof(r), &e), 0);
	assert_int_equal(e.kind, EVSRC_EXIT);
	assert_false(e.has_exe);

	/* Not an event: a short record, an unknown kind, a pid that no task has. */
	r = record(RQE_EXEC);
	assert_int_equal(bpfev_decode(&r, sizeof(r) - 1, &e), -EINVAL);
	r.kind = 0;
	assert_int_equal(bpfev_decode(&r, sizeof(r), &e), -EINVAL);
	r.kind = 4;
	assert_int_equal(bpfev_decode(&r, sizeof(r), &e), -EINVAL);
	r = record(RQE_EXIT);
	r.tid = 0;
	assert_int_equal(bpfev_decode(&r, sizeof(r), &e), -EINVAL);
	r = record(RQE_FORK);
	r.tgid = -1;
	assert_int_equal(bpfev_decode(&r, sizeof(r), &e), -EINVAL);
	r = record(RQE_FORK);
	r.parent_tgid = -1;
	assert_int_equal(bpfev_decode(&r, sizeof(r), &e), -EINVAL);
}

KIT_TEST(test_decode_exes)
{
	struct rqe_exe in[3] = {
		{ .tgid = 1, .flags = RQE_F_EXE, .start_ns = 10, .exe_dev = (8u << 20) | 1,
		  .exe_ino = 2 },
		{ .tgid = 0 },                               /* not a process: left out */
		{ .tgid = 300, .flags = 0, .start_ns = 30 }, /* no mm: no file */
	};
	char buf[sizeof(in) + sizeof(in[0]) / 2];
	struct evsrc_exe out[4];

	(void)state;
	memcpy(buf, in, sizeof(in));
	memset(buf + sizeof(in), 0x7f, sizeof(buf) - sizeof(in)); /* a part record */
	assert_int_equal(bpfev_decode_exes(buf, sizeof(buf), out, 4), 2);
	assert_int_equal(out[0].tgid, 1);
	assert_true(out[0].has_exe);
	assert_true(out[0].dev == makedev(8, 1));
	assert_int_equal(out[0].ino, 2);
	assert_int_equal(out[0].start_ns, 10);
	assert_int_equal(out[1].tgid, 300);
	assert_false(out[1].has_exe);
	/* At most max. */
	assert_int_equal(bpfev_decode_exes(buf, sizeof(buf), out, 1), 1);
	assert_int_equal(bpfev_decode_exes(buf, 0, out, 4), 0);
	assert_non_null(evsrc_exe_find(out, 2, 300));
	assert_null(evsrc_exe_find(out, 2, 2));
	assert_null(evsrc_exe_find(NULL, 0, 1));
}

/* ---- on this kernel ---- */

struct seen {
	pid_t parent;
	pid_t child;
	size_t n;
	struct evsrc_event ev[MAX_SEEN];
	uint64_t events;
	uint64_t overflows;
};

static void on_event(void *ctx, const struct evsrc_event *ev)
{
	struct seen *s = ctx;

	s->events++;
	if (s->child <= 0 || (ev->tgid != s->child && ev->tid != s->child) || s->n == MAX_SEEN)
		return;
	s->ev[s->n++] = *ev;
}

static void on_overflow(void *ctx)
{
	((struct seen *)ctx)->overflows++;
}

static const struct evsrc_callbacks callbacks = { .event = on_event, .overflow = on_overflow };

static struct bpfev *open_or_skip(struct seen *s)
{
	struct bpfev *ev = NULL;
	char why[256];
	int r;

	memset(s, 0, sizeof(*s));
	s->parent = getpid();
	r = bpfev_open(&callbacks, s, &ev, why, sizeof(why));
	if (r == -EPERM || r == -EACCES || r == -EOPNOTSUPP) {
		print_message("skip: the BPF events do not load here: %s\n", why);
		skip();
	}
	if (r < 0)
		fail_msg("bpfev_open: %s", why);
	return ev;
}

static void drain(struct bpfev *ev)
{
	do
		assert_true(bpfev_dispatch(ev) >= 0);
	while (!bpfev_empty(ev));
}

static const struct evsrc_event *find(const struct seen *s, enum evsrc_kind kind, pid_t tid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->ev[i].kind == kind && s->ev[i].tid == tid)
			return &s->ev[i];
	return NULL;
}

/* /proc/PID/stat's start time (field 22), in clock ticks. */
static uint64_t start_ticks(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long long v = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	assert_true(util_read_file(path, buf, sizeof(buf)) > 0);
	p = strrchr(buf, ')');
	assert_non_null(p);
	/* After ')': state is field 3; start time field 22. */
	for (int f = 3; f <= 22; f++) {
		p = strchr(p + 1, ' ');
		assert_non_null(p);
	}
	assert_int_equal(sscanf(p + 1, "%llu", &v), 1);
	return v;
}

static uint64_t ns_ticks(uint64_t ns)
{
	return ns / (NSEC_PER_SEC / (uint64_t)sysconf(_SC_CLK_TCK));
}

static void *idle_thread(void *arg)
{
	(void)arg;
	return NULL;
}

/*
 * The child: starts a thread and joins it, tells the parent it may read its start
 * time, waits for the go, then execs prog.
 */
static pid_t spawn(const char *prog, int *ret_go)
{
	int ready[2], go[2];
	pid_t pid;
	char c;

	assert_int_equal(pipe(ready), 0);
	assert_int_equal(pipe(go), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		pthread_t t;

		close(ready[0]);
		close(go[1]);
		if (pthread_create(&t, NULL, idle_thread, NULL) != 0 || pthread_join(t, NULL) != 0)
			_exit(2);
		if (write(ready[1], "r", 1) != 1 || read(go[0], &c, 1) != 1)
			_exit(3);
		execl(prog, prog, (char *)NULL);
		_exit(4);
	}
	close(ready[1]);
	close(go[0]);
	assert_int_equal(read(ready[0], &c, 1), 1);
	close(ready[0]);
	*ret_go = go[1];
	return pid;
}

KIT_TEST(test_child_events)
{
	const char *prog = "/bin/true";
	struct seen *s = calloc(1, sizeof(*s));
	struct bpfev *ev = open_or_skip(s);
	struct stat st;
	int attempt, go;

	(void)state;
	assert_int_equal(stat(prog, &st), 0);
	for (attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
		struct evsrc_counters before, after;
		const struct evsrc_event *fork_ev, *exec_ev, *exit_ev, *thr = NULL;
		uint64_t start;
		pid_t pid;
		int wst;

		drain(ev);
		s->n = 0;
		bpfev_counters(ev, &before, NULL);
		pid = spawn(prog, &go);
		s->child = pid;
		start = start_ticks(pid);
		assert_int_equal(write(go, "g", 1), 1);
		close(go);
		assert_int_equal(waitpid(pid, &wst, 0), pid);
		assert_true(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
		drain(ev);
		bpfev_counters(ev, &after, NULL);
		if (after.overflows != before.overflows) {
			print_message("events were dropped by a fork storm elsewhere: again\n");
			continue;
		}
		fork_ev = find(s, EVSRC_FORK, pid);
		exec_ev = find(s, EVSRC_EXEC, pid);
		exit_ev = find(s, EVSRC_EXIT, pid);
		for (size_t i = 0; i < s->n; i++)
			if (s->ev[i].kind == EVSRC_FORK && s->ev[i].tgid == pid && s->ev[i].tid != pid)
				thr = &s->ev[i];
		assert_non_null(fork_ev);
		assert_non_null(exec_ev);
		assert_non_null(exit_ev);
		assert_non_null(thr);
		/* A new process: its parent is the forking task, as the connector says. */
		assert_int_equal(fork_ev->tgid, pid);
		assert_int_equal(fork_ev->parent_tgid, getpid());
		/* A new thread: the process's parent (real_parent), as the connector says. */
		assert_int_equal(thr->parent_tgid, getpid());
		/* Both were created by a task of the child's: the one inheritance follows. */
		assert_int_equal(fork_ev->creator_tgid, getpid());
		assert_int_equal(thr->creator_tgid, pid);
		/* Each carries the start /proc gives, exactly. */
		assert_int_equal(ns_ticks(fork_ev->start_ns), start);
		assert_int_equal(ns_ticks(exec_ev->start_ns), start);
		assert_int_equal(ns_ticks(exit_ev->start_ns), start);
		assert_true(thr->start_ns >= fork_ev->start_ns);
		/* The exec names the very file. */
		assert_true(exec_ev->has_exe);
		assert_true(exec_ev->exe_dev == st.st_dev);
		assert_true(exec_ev->exe_ino == st.st_ino);
		assert_false(fork_ev->has_exe);
		/* In the order they happened, on one clock. */
		assert_true(fork_ev < exec_ev && exec_ev < exit_ev);
		assert_true(fork_ev->ts_ns <= exec_ev->ts_ns && exec_ev->ts_ns <= exit_ev->ts_ns);
		assert_true(exit_ev->ts_ns <= util_now_ns());
		/* And the thread's exit, before the exec. */
		assert_non_null(find(s, EVSRC_EXIT, thr->tid));
		break;
	}
	if (attempt > MAX_ATTEMPTS) {
		print_message("skip: events were dropped in every attempt\n");
		bpfev_close(ev);
		free(s);
		skip();
	}
	bpfev_close(ev);
	free(s);
}

KIT_TEST(test_exes)
{
	struct seen s;
	struct bpfev *ev = open_or_skip(&s);
	struct evsrc_exe *exes = NULL;
	const struct evsrc_exe *me;
	struct stat st;
	size_t n = 0;

	(void)state;
	assert_int_equal(bpfev_exes(ev, &exes, &n), 0);
	assert_true(n > 1);
	for (size_t i = 1; i < n; i++)
		assert_true(exes[i - 1].tgid < exes[i].tgid);
	me = evsrc_exe_find(exes, n, getpid());
	assert_non_null(me);
	assert_int_equal(stat("/proc/self/exe", &st), 0);
	assert_true(me->has_exe);
	assert_true(me->dev == st.st_dev);
	assert_true(me->ino == st.st_ino);
	assert_int_equal(ns_ticks(me->start_ns), start_ticks(getpid()));
	/* kthreadd (2) is a kernel thread, no process a rule can name. */
	assert_null(evsrc_exe_find(exes, n, 2));
	free(exes);
	bpfev_close(ev);
}

/* The same source through the event source interface, as the latency manager holds it. */
KIT_TEST(test_through_evsrc)
{
	struct seen s = { .parent = getpid() };
	struct evsrc *es = NULL;
	struct evsrc_exe *exes = NULL;
	char why[256];
	size_t n = 0;
	int r = evsrc_open(&bpfev_ops, &callbacks, &s, &es, why, sizeof(why));

	(void)state;
	if (r == -EPERM || r == -EACCES || r == -EOPNOTSUPP) {
		print_message("skip: the BPF events do not load here: %s\n", why);
		skip();
	}
	assert_int_equal(r, 0);
	assert_string_equal(es->ops->name, "bpf");
	/* Its forks and exits may wake no poller: the owner reads it each tick. */
	assert_true(es->ops->tick_read);
	assert_true(evsrc_fd(es) >= 0);
	do
		assert_true(evsrc_dispatch(es) >= 0);
	while (!evsrc_empty(es));
	assert_int_equal(evsrc_exes(es, &exes, &n), 0);
	assert_non_null(evsrc_exe_find(exes, n, getpid()));
	free(exes);
	evsrc_close(es);
}

/*
 * A fork storm the test does not read: the ring fills, the programs count the drops,
 * and the next dispatch reports them once; a dispatch delivers at most its bound.
 */
KIT_TEST(test_overflow)
{
	struct seen s;
	struct bpfev *ev = open_or_skip(&s);
	struct evsrc_counters c;
	uint64_t dropped = 0;
	int r, forks = 0;

	(void)state;
	drain(ev);
	/*
	 * Two records a fork (fork, exit) and the ring holds RQE_RING_BYTES / 64: a
	 * thousand forks more than fill it, whatever else the machine does meanwhile.
	 */
	while (forks < RQE_RING_BYTES / 128 + 1024) {
		pid_t pid = fork();

		assert_true(pid >= 0);
		if (pid == 0)
			_exit(0);
		assert_int_equal(waitpid(pid, NULL, 0), pid);
		forks++;
	}
	r = bpfev_dispatch(ev);
	assert_int_equal(r, 256);
	assert_false(bpfev_empty(ev));
	assert_int_equal(s.overflows, 1);
	bpfev_counters(ev, &c, &dropped);
	assert_int_equal(c.overflows, 1);
	assert_true(dropped > 0);
	drain(ev);
	assert_int_equal(s.overflows, 1);
	print_message("%d forks: %llu events dropped, %llu delivered\n", forks,
		      (unsigned long long)dropped, (unsigned long long)s.events);
	bpfev_close(ev);
}
