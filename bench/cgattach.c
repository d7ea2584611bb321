/*
 * cgattach: what one move of another process into a cgroup costs the mover, as the
 * daemon moves a task into its class: a write of the pid to cgroup.procs (cgroup2) or
 * tasks (v1), timed alone. For bench/cgmove. It forks a child that only sleeps and
 * moves it between two groups, one write every --gap-ms, so that each write finds the
 * kernel as an isolated move would (a write soon after another can reuse the grace
 * period the other waited for); it prints p50 p99 max moves in microseconds.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest rank, as execlat's. */
static double rank_us(const uint64_t *v, size_t n, double p)
{
	size_t i = (size_t)(p * (double)n + 0.999999);

	if (i < 1)
		i = 1;
	return (double)v[(i > n ? n : i) - 1] / 1000.0;
}

int main(int argc, char **argv)
{
	int moves, gap_ms, fd[2];
	char pid[32];
	uint64_t *t;
	pid_t child;

	if (argc != 5 || (moves = atoi(argv[1])) < 1 || (gap_ms = atoi(argv[2])) < 0) {
		fprintf(stderr, "Usage: cgattach MOVES GAP_MS GROUP_FILE_A GROUP_FILE_B\n"
				"  (GROUP_FILE: a group's cgroup.procs or tasks)\n"
				"Prints: p50_us p99_us max_us moves\n");
		return 2;
	}
	for (int i = 0; i < 2; i++) {
		fd[i] = open(argv[3 + i], O_WRONLY | O_CLOEXEC);
		if (fd[i] < 0) {
			fprintf(stderr, "cgattach: %s: %s\n", argv[3 + i], strerror(errno));
			return 1;
		}
	}
	t = calloc((size_t)moves, sizeof(*t));
	if (!t)
		return 1;
	child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	snprintf(pid, sizeof(pid), "%d", (int)child);
	for (int i = 0; i < moves; i++) {
		struct timespec gap = { .tv_sec = gap_ms / 1000, .tv_nsec = (gap_ms % 1000) * 1000000L };
		uint64_t t0;

		while (nanosleep(&gap, &gap) < 0 && errno == EINTR)
			;
		t0 = now_ns();
		if (write(fd[i % 2], pid, strlen(pid)) < 0) {
			fprintf(stderr, "cgattach: move %d: %s\n", i, strerror(errno));
			kill(child, SIGKILL);
			return 1;
		}
		t[i] = now_ns() - t0;
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	qsort(t, (size_t)moves, sizeof(*t), cmp_u64);
	printf("%.1f %.1f %.1f %d\n", rank_us(t, (size_t)moves, 0.50), rank_us(t, (size_t)moves, 0.99),
	       (double)t[moves - 1] / 1000.0, moves);
	free(t);
	return 0;
}
