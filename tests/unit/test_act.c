/*
 * Unit tests for the actuator on real tasks: children this test forks (affinity
 * 0-1 at start) and nothing else, with the journal in a fresh directory under /tmp.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kit.h"

#include "actuate/act.h"
#include "actuate/journal.h"
#include "rqbalance.h"
#include "util/log.h"

#define MAX_KIDS 8

struct fix {
	pid_t kids[MAX_KIDS];     /* children not yet reaped, 0 where free */
	char dir[64];             /* journal directory, "" once removed */
	struct act a, b;          /* b: the daemon started again */
	bool a_live, b_live;      /* act_init succeeded and act_fini is due */
	struct plan p;
	unsigned dropped;         /* calls of the dropped callback */
	pid_t dropped_tid;
	uint64_t dropped_start;
	int dropped_err;
	int report;               /* KID_SPAWN_ON_BYTE's report pipe, -1 when closed */
};

/* ---- children ---- */

static volatile unsigned long spin_sink;

static void *kid_thread(void *arg)
{
	int wfd = (int)(intptr_t)arg;
	pid_t tid = gettid();

	if (write(wfd, &tid, sizeof(tid)) != (ssize_t)sizeof(tid))
		_exit(4);
	for (;;)
		pause();
	return NULL;
}

/*
 * The child: takes CPUs 0-1, then reports its pid (or, with a thread, the thread's
 * tid) and spins or sleeps until killed; with exit_on_byte it instead exits once the
 * parent writes a byte.
 */
enum kid_kind { KID_SLEEP, KID_SPIN, KID_THREAD, KID_EXIT_ON_BYTE, KID_SPAWN_ON_BYTE };

/* Says its tid on the pipe it is given, then sleeps. */
static void *idle_thread(void *arg)
{
	int wfd = (int)(intptr_t)arg;
	pid_t tid = gettid();

	if (write(wfd, &tid, sizeof(tid)) != (ssize_t)sizeof(tid))
		_exit(4);
	for (;;)
		pause();
	return NULL;
}

static void read_id(int fd, pid_t *id)
{
	ssize_t n;

	do
		n = read(fd, id, sizeof(*id));
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof(*id))
		_exit(7);
}

/*
 * On a byte from the parent: a new thread and a new child process, whose tid and pid
 * it then reports on wfd, in that order.
 */
static void __attribute__((noreturn)) spawn_on_byte(pid_t self, int wfd, int rfd)
{
	pthread_t th;
	pid_t ids[2];
	int tp[2];
	char c;

	while (read(rfd, &c, 1) < 0 && errno == EINTR)
		;
	if (pipe2(tp, O_CLOEXEC) < 0 ||
	    pthread_create(&th, NULL, idle_thread, (void *)(intptr_t)tp[1]) != 0)
		_exit(5);
	read_id(tp[0], &ids[0]);
	ids[1] = fork();
	if (ids[1] < 0)
		_exit(6);
	if (ids[1] == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != self)
			_exit(6);
		for (;;)
			pause();
	}
	if (write(wfd, ids, sizeof(ids)) != (ssize_t)sizeof(ids))
		_exit(3);
	for (;;)
		pause();
}

static void __attribute__((noreturn)) kid_main(pid_t parent, int wfd, int rfd, enum kid_kind k)
{
	pid_t self = getpid();
	pthread_t th;
	cpu_set_t s;
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != parent)
		_exit(1);
	CPU_ZERO(&s);
	CPU_SET(0, &s);
	CPU_SET(1, &s);
	if (sched_setaffinity(0, sizeof(s), &s) < 0)
		_exit(2);
	if (k == KID_THREAD) {
		if (pthread_create(&th, NULL, kid_thread, (void *)(intptr_t)wfd) != 0)
			_exit(5);
		for (;;)
			pause();
	}
	if (write(wfd, &self, sizeof(self)) != (ssize_t)sizeof(self))
		_exit(3);
	if (k == KID_SPAWN_ON_BYTE)
		spawn_on_byte(self, wfd, rfd);
	if (k == KID_EXIT_ON_BYTE) {
		while (read(rfd, &c, 1) < 0 && errno == EINTR)
			;
		_exit(0);
	}
	if (k == KID_SPIN)
		for (;;)
			spin_sink++;
	for (;;)
		pause();
}

/* The children start on CPUs 0-1 and are moved between them. */
static bool two_cpus(void)
{
	cpu_set_t s;

	return sched_getaffinity(0, sizeof(s), &s) == 0 && CPU_ISSET(0, &s) && CPU_ISSET(1, &s);
}

/* Forks a child; returns the tid it reports. *ret_go, if given, makes it exit. */
static pid_t spawn_kind(struct fix *f, enum kid_kind k, pid_t *ret_pid, int *ret_go)
{
	pid_t parent = getpid(), pid, tid = 0;
	int up[2], down[2] = { -1, -1 }, slot = -1;
	ssize_t n;

	if (!two_cpus())
		skip();
	for (int i = 0; i < MAX_KIDS && slot < 0; i++)
		if (f->kids[i] == 0)
			slot = i;
	assert_true(slot >= 0);
	assert_int_equal(pipe2(up, O_CLOEXEC), 0);
	if (ret_go)
		assert_int_equal(pipe2(down, O_CLOEXEC), 0);
	pid = fork();
	if (pid == 0)
		kid_main(parent, up[1], down[0], k);
	close(up[1]);
	if (down[0] >= 0)
		close(down[0]);
	if (pid < 0) {
		close(up[0]);
		if (down[1] >= 0)
			close(down[1]);
	}
	assert_true(pid > 0);
	f->kids[slot] = pid; /* from here on the teardown reaps it */
	do
		n = read(up[0], &tid, sizeof(tid));
	while (n < 0 && errno == EINTR);
	if (k == KID_SPAWN_ON_BYTE)
		f->report = up[0]; /* it reports again; the teardown closes it */
	else
		close(up[0]);
	if (ret_go)
		*ret_go = down[1];
	assert_int_equal(n, sizeof(tid));
	if (ret_pid)
		*ret_pid = pid;
	return tid;
}

static pid_t spawn(struct fix *f, bool spin)
{
	return spawn_kind(f, spin ? KID_SPIN : KID_SLEEP, NULL, NULL);
}

static void reap(struct fix *f, pid_t pid)
{
	for (int i = 0; i < MAX_KIDS; i++) {
		if (pid <= 0 || f->kids[i] != pid)
			continue;
		kill(pid, SIGKILL);
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		f->kids[i] = 0;
	}
}

/* Field 22 of the task's stat, found independently of the daemon's parser. */
static uint64_t start_time_of(pid_t tgid, pid_t tid)
{
	char path[96], buf[2048], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)tgid, (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	assert_true(n > 0);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	assert_non_null(p);
	p += 2;
	for (int i = 3; i < 22; i++) {
		p = strchr(p, ' ');
		assert_non_null(p);
		p++;
	}
	return strtoull(p, NULL, 10);
}

static cpu_set_t mask_of(pid_t tid)
{
	cpu_set_t s;

	assert_int_equal(sched_getaffinity(tid, sizeof(s), &s), 0);
	return s;
}

static void set_mask(pid_t tid, const char *list)
{
	cpu_set_t s = kit_mask(list);

	assert_int_equal(sched_setaffinity(tid, sizeof(s), &s), 0);
}

#define assert_mask(tid, list)                                                           \
	do {                                                                             \
		cpu_set_t want_ = kit_mask(list), got_ = mask_of(tid);                  \
		char buf_[CPUMASK_STRLEN];                                               \
		if (!CPU_EQUAL(&want_, &got_))                                           \
			fail_msg("tid %d has cpus %s, want %s", (int)(tid),               \
				 cpumask_format(&got_, buf_, sizeof(buf_)), list);        \
	} while (0)

/* ---- the journal directory ---- */

static void rm_dir(char *dir)
{
	struct dirent *de;
	DIR *d;

	if (!dir[0])
		return;
	d = opendir(dir);
	if (d) {
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	rmdir(dir);
	dir[0] = '\0';
}

static char *journal_text(const struct fix *f, char *buf, size_t len)
{
	char path[128];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/" JOURNAL_NAME, f->dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	n = read(fd, buf, len - 1);
	close(fd);
	assert_true(n >= 0);
	buf[n] = '\0';
	return buf;
}

/* How many lines of the journal start with prefix. */
static unsigned journal_count(const struct fix *f, const char *prefix)
{
	static char buf[1 << 16];
	unsigned n = 0;

	journal_text(f, buf, sizeof(buf));
	for (const char *p = buf; *p;) {
		const char *eol = strchrnul(p, '\n');

		if (strncmp(p, prefix, strlen(prefix)) == 0)
			n++;
		p = *eol ? eol + 1 : eol;
	}
	return n;
}

static void journal_write(const struct fix *f, const char *text)
{
	char path[128];
	int fd;

	snprintf(path, sizeof(path), "%s/" JOURNAL_NAME, f->dir);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

/* ---- fixture ---- */

static int fix_setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	if (!f)
		return -1;
	*state = f;
	f->report = -1;
	plan_init(&f->p);
	snprintf(f->dir, sizeof(f->dir), "/tmp/rqb-test-act.XXXXXX");
	if (!mkdtemp(f->dir)) {
		f->dir[0] = '\0';
		return -1;
	}
	return 0;
}

static int fix_teardown(void **state)
{
	struct fix *f = *state;

	if (!f)
		return 0;
	if (f->a_live)
		act_fini(&f->a);
	if (f->b_live)
		act_fini(&f->b);
	for (int i = 0; i < MAX_KIDS; i++)
		reap(f, f->kids[i]);
	if (f->report >= 0)
		close(f->report);
	rm_dir(f->dir);
	plan_fini(&f->p);
	free(f);
	return 0;
}

static void on_dropped(void *ctx, pid_t tid, uint64_t start_time, int err)
{
	struct fix *f = ctx;

	f->dropped++;
	f->dropped_err = err;
	f->dropped_tid = tid;
	f->dropped_start = start_time;
}

static void init_a(struct fix *f)
{
	assert_int_equal(act_init(&f->a, &act_linux_ops, f->dir), 0);
	f->a_live = true;
}

/* Applies a one-action plan; returns how many actions took. */
static int apply(struct fix *f, struct act *a, enum plan_op op, pid_t tid, pid_t tgid,
		 uint64_t start_time, const char *list)
{
	struct plan_action pa = { .op = op, .tid = tid, .tgid = tgid, .start_time = start_time,
				  .from_llc = -1, .to_llc = -1, .comm = "kid", .why = "test" };

	if (list)
		pa.mask = kit_mask(list);
	plan_clear(&f->p);
	assert_int_equal(plan_add(&f->p, &pa), 0);
	plan_finish(&f->p);
	return act_apply(a, &f->p, on_dropped, f);
}

static int pin(struct fix *f, struct act *a, pid_t tid, pid_t tgid, const char *list)
{
	return apply(f, a, PLAN_PIN, tid, tgid, start_time_of(tgid, tid), list);
}

/* What a crash leaves: no restore, no rewrite; the process's fds just close. */
static void crash(struct fix *f)
{
	for (size_t i = 0; i < f->a.n; i++)
		f->a.ops->close(&f->a.e[i].task);
	journal_close(f->a.journal);
	free(f->a.e);
	f->a_live = false;
}

/* ---- tests ---- */

KIT_TEST_FX(test_pin, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid = spawn(f, true);
	uint64_t st = start_time_of(kid, kid);
	static char buf[1 << 16];
	char line[128];

	init_a(f);
	assert_mask(kid, "0-1");
	assert_int_equal(apply(f, &f->a, PLAN_PIN, kid, kid, st, "1"), 1);
	assert_mask(kid, "1");
	assert_int_equal(act_managed(&f->a), 1);
	assert_int_equal(f->a.cnt.moves, 1);
	assert_int_equal(f->dropped, 0);
	snprintf(line, sizeof(line), "set %d %d %" PRIu64 " 0-1 1 ", (int)kid, (int)kid, st);
	assert_non_null(strstr(journal_text(f, buf, sizeof(buf)), line));
	assert_int_equal(journal_count(f, "set "), 1);
	/* The test process itself is untouched. */
	assert_mask(getpid(), "0-1");
}

KIT_TEST_FX(test_pin_again_is_noop, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid = spawn(f, false);

	init_a(f);
	assert_int_equal(pin(f, &f->a, kid, kid, "1"), 1);
	assert_int_equal(f->a.cnt.moves, 1);
	assert_int_equal(journal_count(f, "set "), 1);
	/* Same mask again: it counts as done, but nothing is written or journaled. */
	assert_int_equal(pin(f, &f->a, kid, kid, "1"), 1);
	assert_int_equal(f->a.cnt.moves, 1);
	assert_int_equal(journal_count(f, "set "), 1);
	assert_int_equal(act_managed(&f->a), 1);
	assert_mask(kid, "1");
	/* A different mask moves it again but keeps the first prev. */
	assert_int_equal(pin(f, &f->a, kid, kid, "0"), 1);
	assert_int_equal(f->a.cnt.moves, 2);
	assert_mask(kid, "0");
	assert_int_equal(act_managed(&f->a), 1);
	act_fini(&f->a);
	f->a_live = false;
	assert_mask(kid, "0-1");
}

KIT_TEST_FX(test_unpin, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid = spawn(f, true);
	uint64_t st = start_time_of(kid, kid);
	char line[64];

	init_a(f);
	assert_int_equal(apply(f, &f->a, PLAN_PIN, kid, kid, st, "1"), 1);
	assert_mask(kid, "1");
	assert_int_equal(apply(f, &f->a, PLAN_UNPIN, kid, kid, st, NULL), 1);
	assert_mask(kid, "0-1");
	assert_int_equal(act_managed(&f->a), 0);
	assert_int_equal(f->a.cnt.restores, 1);
	snprintf(line, sizeof(line), "clear %d %" PRIu64, (int)kid, st);
	assert_int_equal(journal_count(f, line), 1);
	/* Unpinning what is not managed does nothing. */
	assert_int_equal(apply(f, &f->a, PLAN_UNPIN, kid, kid, st, NULL), 1);
	assert_mask(kid, "0-1");
	assert_int_equal(f->a.cnt.restores, 1);
}

KIT_TEST_FX(test_verify_task_changed_itself, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t moved = spawn(f, true), kept = spawn(f, false);
	uint64_t st = start_time_of(moved, moved);

	init_a(f);
	assert_int_equal(pin(f, &f->a, moved, moved, "1"), 1);
	assert_int_equal(pin(f, &f->a, kept, kept, "1"), 1);
	assert_int_equal(act_managed(&f->a), 2);
	/* The test stands in for the task choosing its own affinity. */
	set_mask(moved, "0");
	act_verify(&f->a, on_dropped, f);
	assert_int_equal(act_managed(&f->a), 1);
	assert_int_equal(f->a.e[0].task.tid, kept);
	assert_int_equal(f->dropped, 1);
	assert_int_equal(f->dropped_tid, moved);
	assert_int_equal(f->dropped_start, st);
	assert_int_equal(f->dropped_err, 0); /* changed by someone: not gone */
	assert_int_equal(f->a.cnt.left_alone, 1);
	assert_mask(moved, "0");
	assert_mask(kept, "1");
	act_fini(&f->a);
	f->a_live = false;
	assert_mask(moved, "0");
	assert_mask(kept, "0-1");
	assert_int_equal(f->a.cnt.restores, 1);
}

KIT_TEST_FX(test_verify_task_gone, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid = spawn(f, false);

	init_a(f);
	assert_int_equal(pin(f, &f->a, kid, kid, "1"), 1);
	reap(f, kid);
	act_verify(&f->a, on_dropped, f);
	assert_int_equal(act_managed(&f->a), 0);
	assert_int_equal(f->dropped, 1);
	assert_int_equal(f->dropped_tid, kid);
	assert_true(f->dropped_err == -ESRCH || f->dropped_err == -ENOENT);
	assert_int_equal(f->a.cnt.gone, 1);
	assert_int_equal(f->a.cnt.left_alone, 0);
}

KIT_TEST_FX(test_fini_restores_all, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t k1 = spawn(f, true), k2 = spawn(f, false), k3 = spawn(f, true);

	init_a(f);
	assert_int_equal(pin(f, &f->a, k1, k1, "1"), 1);
	assert_int_equal(pin(f, &f->a, k2, k2, "0"), 1);
	assert_int_equal(pin(f, &f->a, k3, k3, "1"), 1);
	assert_int_equal(act_managed(&f->a), 3);
	set_mask(k3, "0"); /* k3 changes its mind; act_verify has not run */
	act_fini(&f->a);
	f->a_live = false;
	assert_mask(k1, "0-1");
	assert_mask(k2, "0-1");
	assert_mask(k3, "0");
	assert_int_equal(f->a.cnt.restores, 2);
	assert_int_equal(f->a.cnt.left_alone, 1);
	assert_int_equal(journal_count(f, "set "), 0);
	assert_int_equal(journal_count(f, "clear "), 0);
}

KIT_TEST_FX(test_pin_wrong_start_time, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid = spawn(f, true);
	uint64_t st = start_time_of(kid, kid);

	init_a(f);
	assert_int_equal(apply(f, &f->a, PLAN_PIN, kid, kid, st + 1, "1"), 0);
	assert_mask(kid, "0-1");
	assert_int_equal(f->dropped, 1);
	assert_int_equal(f->dropped_tid, kid);
	assert_int_equal(f->dropped_start, st + 1);
	assert_int_equal(act_managed(&f->a), 0);
	assert_int_equal(f->a.cnt.moves, 0);
	assert_int_equal(journal_count(f, "set "), 0);
}

KIT_TEST_FX(test_pin_exited, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t pid;
	uint64_t st;
	int go;
	char c = 1;

	spawn_kind(f, KID_EXIT_ON_BYTE, &pid, &go);
	st = start_time_of(pid, pid);
	assert_int_equal(write(go, &c, 1), 1);
	close(go);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	for (int i = 0; i < MAX_KIDS; i++)
		if (f->kids[i] == pid)
			f->kids[i] = 0;
	init_a(f);
	/* Its old pid, its real start time: whatever has the pid now (if any) is not it. */
	assert_int_equal(apply(f, &f->a, PLAN_PIN, pid, pid, st, "1"), 0);
	assert_int_equal(f->dropped, 1);
	assert_int_equal(act_managed(&f->a), 0);
	assert_int_equal(f->a.cnt.moves, 0);
	assert_int_equal(f->a.cnt.permanent, 0);
	assert_int_equal(journal_count(f, "set "), 0);
	assert_int_equal(apply(f, &f->a, PLAN_UNPIN, pid, pid, st, NULL), 1);
}

KIT_TEST_FX(test_pin_thread, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t tgid, tid = spawn_kind(f, KID_THREAD, &tgid, NULL);

	assert_int_not_equal(tid, tgid);
	init_a(f);
	assert_int_equal(pin(f, &f->a, tid, tgid, "1"), 1);
	assert_mask(tid, "1");
	assert_mask(tgid, "0-1");
	act_fini(&f->a);
	f->a_live = false;
	assert_mask(tid, "0-1");
}

/*
 * A pinned task that starts a thread and a child process after the pin passes the pin
 * on; at the stop both get back what the task had, except one that chose otherwise.
 */
KIT_TEST_FX(test_offspring_restored, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid, ids[2], thread, child;
	ssize_t n;
	int go;

	for (int chose = 0; chose < 2; chose++) {
		kid = spawn_kind(f, KID_SPAWN_ON_BYTE, NULL, &go);
		init_a(f);
		assert_int_equal(pin(f, &f->a, kid, kid, "1"), 1);
		assert_int_equal(write(go, "x", 1), 1);
		close(go);
		/* The kid says when both exist: its new thread's tid, then its child's pid. */
		do
			n = read(f->report, ids, sizeof(ids));
		while (n < 0 && errno == EINTR);
		assert_int_equal(n, sizeof(ids));
		close(f->report);
		f->report = -1;
		thread = ids[0];
		child = ids[1];
		assert_true(thread > 0 && thread != kid && child > 0);
		assert_mask(thread, "1");
		assert_mask(child, "1");
		if (chose)
			set_mask(child, "0");
		act_fini(&f->a);
		f->a_live = false;
		assert_mask(kid, "0-1");
		assert_mask(thread, "0-1");
		assert_mask(child, chose ? "0" : "0-1");
		assert_int_equal(f->a.cnt.inherited, chose ? 1 : 2);
		reap(f, kid);
	}
}

KIT_TEST_FX(test_crash_recovery, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t k1 = spawn(f, true), k2 = spawn(f, false);

	init_a(f);
	assert_int_equal(pin(f, &f->a, k1, k1, "1"), 1);
	assert_int_equal(pin(f, &f->a, k2, k2, "1"), 1);
	crash(f);
	assert_mask(k1, "1");
	assert_int_equal(journal_count(f, "set "), 2);
	/* Meanwhile k2 chose its own affinity: that choice stands. */
	set_mask(k2, "0");
	assert_int_equal(act_init(&f->b, &act_linux_ops, f->dir), 0);
	f->b_live = true;
	assert_mask(k1, "0-1");
	assert_mask(k2, "0");
	assert_int_equal(f->b.cnt.restores, 1);
	assert_int_equal(f->b.cnt.left_alone, 1);
	assert_int_equal(act_managed(&f->b), 0);
	assert_int_equal(journal_count(f, "set "), 0);
	act_fini(&f->b);
	f->b_live = false;
	assert_mask(k1, "0-1");
	assert_mask(k2, "0");
}

/*
 * Killed between journalling a task's next mask and writing it: the task still has
 * the mask rqbalance set before, which the journal's last record does not name. It is
 * rqbalance's too, and given back at the next start.
 */
KIT_TEST_FX(test_crash_between_journal_and_write, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid = spawn(f, true);
	struct journal_rec next;

	init_a(f);
	assert_int_equal(pin(f, &f->a, kid, kid, "1"), 1);
	next = (struct journal_rec){ .tid = kid, .tgid = kid, .start_time = start_time_of(kid, kid),
				     .prev = kit_mask("0-1"), .set = kit_mask("0") };
	assert_int_equal(journal_set(f->a.journal, &next), 0);
	crash(f);
	assert_mask(kid, "1");
	assert_int_equal(act_init(&f->b, &act_linux_ops, f->dir), 0);
	f->b_live = true;
	assert_mask(kid, "0-1");
	assert_int_equal(f->b.cnt.restores, 1);
	assert_int_equal(f->b.cnt.left_alone, 0);
}

KIT_TEST_FX(test_journal_locked, fix_setup, fix_teardown)
{
	struct fix *f = *state;

	init_a(f);
	assert_int_equal(act_init(&f->b, &act_linux_ops, f->dir), -EBUSY);
}

KIT_TEST_FX(test_failed_repin_keeps_journal_true, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid = spawn(f, false);
	int r;

	init_a(f);
	assert_int_equal(pin(f, &f->a, kid, kid, "1"), 1);
	/* A mask the kernel refuses (no such CPU here): the task keeps {1}. */
	r = pin(f, &f->a, kid, kid, "1000");
	assert_int_equal(r, 0);
	assert_mask(kid, "1");
	assert_int_equal(f->a.cnt.permanent, 1);
	assert_int_equal(act_managed(&f->a), 1);
	/* A crash now must still give it back what it had. */
	crash(f);
	assert_int_equal(act_init(&f->b, &act_linux_ops, f->dir), 0);
	f->b_live = true;
	assert_mask(kid, "0-1");
	assert_int_equal(f->b.cnt.restores, 1);
}

KIT_TEST_FX(test_malformed_journal, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid = spawn(f, true);
	uint64_t st = start_time_of(kid, kid);
	char text[1024];

	/* A previous run pinned kid to {1} and then died, leaving a damaged journal. */
	set_mask(kid, "1");
	snprintf(text, sizeof(text),
		 "# rqbalance affinity journal v1\n"
		 "garbage\n"
		 "set 1 2\n"
		 "set -3 4 5 0-1 1\n"
		 "set %d %d %" PRIu64 " 0-1 zz\n"
		 "set %d %d %" PRIu64 " 0-1\n"
		 "clear\n"
		 "\x01\x02\xff binary \x7f\n"
		 "set %d %d %" PRIu64 " 0-1 1\n"
		 "clear x 7\n",
		 (int)kid, (int)kid, st, (int)kid, (int)kid, st, (int)kid, (int)kid, st);
	journal_write(f, text);
	init_a(f);
	assert_mask(kid, "0-1");
	assert_int_equal(f->a.cnt.restores, 1);
	assert_int_equal(journal_count(f, "set "), 0);
	assert_int_equal(journal_count(f, "garbage"), 0);
}

KIT_TEST_FX(test_dry_run, fix_setup, fix_teardown)
{
	struct fix *f = *state;
	pid_t kid = spawn(f, true);
	char path[128];
	struct stat sb;

	assert_int_equal(act_init(&f->a, &act_dryrun_ops, f->dir), 0);
	f->a_live = true;
	assert_null(f->a.journal);
	assert_int_equal(pin(f, &f->a, kid, kid, "1"), 1);
	assert_mask(kid, "0-1");
	assert_int_equal(f->a.cnt.moves, 1);
	assert_int_equal(act_managed(&f->a), 0);
	assert_int_equal(f->dropped, 0);
	act_verify(&f->a, on_dropped, f);
	act_fini(&f->a);
	f->a_live = false;
	assert_mask(kid, "0-1");
	snprintf(path, sizeof(path), "%s/" JOURNAL_NAME, f->dir);
	assert_int_equal(stat(path, &sb), -1);
	assert_int_equal(errno, ENOENT);
}

KIT_TEST(test_error_classes)
{
	(void)state;
	assert_true(act_error_is_transient(-EAGAIN));
	assert_true(act_error_is_transient(-EINTR));
	assert_true(act_error_is_transient(-EBUSY));
	assert_true(act_error_is_transient(-ENOMEM));
	assert_false(act_error_is_transient(-ESRCH));
	assert_false(act_error_is_transient(-EPERM));
	assert_false(act_error_is_transient(-EINVAL));
	assert_false(act_error_is_transient(-ENOENT));
	assert_false(act_error_is_transient(-EOPNOTSUPP));
	assert_false(act_error_is_transient(0));
	/* Errors are negative: a positive errno is not one. */
	assert_false(act_error_is_transient(EAGAIN));
}


void kit_before(void)
{
	log_set_level(LOG_ERR);
}

KIT_GROUP("act", NULL, NULL);
