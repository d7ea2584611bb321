/*
 * The bounded read, on pipes whose writer the test holds: a read that does not come
 * within its bound returns, its worker left reading until the test lets it end; past
 * TIMEDREAD_STUCK_MAX such workers nothing is tried; once they end, reads work again.
 * timedread_proc takes only procfs through a worker.
 */
#include <errno.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include "rqbalance.h"
#include "util/timedread.h"
#include "kit.h"

/* The bound of the reads that are held; one that answers gets a minute, so that a
 * loaded machine, slow to run the worker, does not turn its result into a timeout. */
#define BOUND_NS (20 * 1000 * 1000ull)
#define ANSWER_NS (60 * NSEC_PER_SEC)

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* timedread of the file at path, opened as the daemon's readers open theirs. */
static ssize_t timedread_file(const char *path, char *buf, size_t len, uint64_t bound_ns)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = timedread(fd, buf, len, bound_ns);
	close(fd);
	return n;
}

static void reads_a_file(void)
{
	char path[] = "/tmp/rqb-timedread.XXXXXX", buf[16];
	int fd = mkstemp(path);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, "a\0b c\n", 6), 6);
	close(fd);
	assert_int_equal(timedread_file(path, buf, sizeof(buf), ANSWER_NS), 6);
	assert_memory_equal(buf, "a\0b c\n", 7);
	/* Cut at len - 1, NUL-ended. */
	assert_int_equal(timedread_file(path, buf, 4, ANSWER_NS), 3);
	assert_memory_equal(buf, "a\0b", 4);
	unlink(path);
	assert_int_equal(timedread_file(path, buf, sizeof(buf), ANSWER_NS), -ENOENT);
}

KIT_TEST(normal_read)
{
	reads_a_file();
	assert_int_equal(timedread_stuck(), 0);
}

/* A read of a pipe no one writes: -ETIMEDOUT within about its bound, buf untouched. */
static void held_read(int rfd)
{
	char buf[8] = "same";
	uint64_t t0 = now_ns();

	assert_int_equal(timedread(rfd, buf, sizeof(buf), BOUND_NS), -ETIMEDOUT);
	assert_true(now_ns() - t0 < ANSWER_NS);
	assert_string_equal(buf, "same");
}

KIT_TEST(bounded_and_left)
{
	int p[TIMEDREAD_STUCK_MAX][2], fd;
	char buf[8], path[] = "/tmp/rqb-timedread.XXXXXX";
	uint64_t t0;

	for (int i = 0; i < TIMEDREAD_STUCK_MAX; i++) {
		assert_int_equal(pipe(p[i]), 0);
		held_read(p[i][0]);
		/* The caller's descriptor is its own to close: the worker reads a dup. */
		close(p[i][0]);
		assert_int_equal(timedread_stuck(), (unsigned)i + 1);
		if (i == 0)
			reads_a_file(); /* a new worker, while the first is left */
	}
	/* Past the most left, nothing is tried, not even a file that would answer. */
	assert_int_equal(timedread_file("/proc/self/comm", buf, sizeof(buf), ANSWER_NS), -EBUSY);
	/*
	 * timedread_proc: a file of /proc is read through a worker, so not now; a plain
	 * file (a test tree's) is read at once, workers or none.
	 */
	fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	assert_true(fd >= 0);
	assert_int_equal(timedread_proc(fd, buf, sizeof(buf)), -EBUSY);
	close(fd);
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, "x\0y", 3), 3);
	assert_int_equal(lseek(fd, 0, SEEK_SET), 0);
	assert_int_equal(timedread_proc(fd, buf, sizeof(buf)), 3);
	assert_memory_equal(buf, "x\0y", 4);
	close(fd);
	unlink(path);
	/* Their reads end (EOF): the workers end and free themselves. */
	for (int i = 0; i < TIMEDREAD_STUCK_MAX; i++)
		close(p[i][1]);
	t0 = now_ns();
	while (timedread_stuck() && now_ns() - t0 < ANSWER_NS)
		usleep(1000);
	assert_int_equal(timedread_stuck(), 0);
	reads_a_file();
}

KIT_TEST(after_fini)
{
	reads_a_file();
	timedread_fini();
	reads_a_file();
	timedread_fini();
}

void kit_before(void)
{
	alarm(60); /* a read that is not bounded fails the program, it does not hang it */
}
