/*
 * hackbench: a messaging workload for rqbalance's benches, after the kernel's
 * `perf bench sched messaging`. Groups of senders and receivers, connected by
 * socketpairs or pipes, pass small messages: every sender writes LOOPS messages to
 * every receiver of its group. Prints the wall time and the messages a second.
 * It only measures; it never changes a scheduling setting.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "args.h"

#define MAX_GROUPS 1000
#define MAX_FDS 1000
#define MAX_DATASIZE (1 << 20)
#define THREAD_STACK (256 * 1024) /* a worker needs little; thousands of them fit */

static struct {
	long groups, fds, loops, datasize;
	bool pipes, threads;
} opt = { .groups = 2, .fds = 8, .loops = 300, .datasize = 100 };

/* The start line: each worker writes a byte to ready_w, then waits for start_r. */
static int ready_r = -1, ready_w = -1, start_r = -1, start_w = -1;

/* One worker: a receiver reads from in_fd, a sender writes to every out_fds[]. */
struct worker {
	bool sender;
	int in_fd;          /* receiver: the read end of its channel */
	const int *out_fds; /* sender: the write ends of its group's channels, opt.fds */
	pthread_t th;
};

static pid_t parent_pid;
static pid_t *pids;             /* process mode: the workers forked so far, else 0 */
static volatile sig_atomic_t npids;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: hackbench [--groups G] [--fds F] [--loops L] [--datasize BYTES]\n"
		"                 [--pipe] [--threads]\n"
		"A messaging workload, as perf bench sched messaging: G groups of F senders\n"
		"and F receivers; every sender writes L messages of BYTES bytes to every\n"
		"receiver of its group.\n"
		"  -g, --groups G      groups (default 2, at most %d)\n"
		"  -f, --fds F         senders, and receivers, a group (default 8, at most %d)\n"
		"  -l, --loops L       messages from each sender to each receiver (default 300)\n"
		"  -s, --datasize N    bytes a message (default 100, at most %d)\n"
		"  -p, --pipe          pipes instead of socketpairs (AF_UNIX, SOCK_STREAM)\n"
		"  -t, --threads       threads of one process instead of processes (fork)\n"
		"  -h, --help          this help\n"
		"Waits until every worker is ready, starts them together, and prints one line:\n"
		"  SECONDS MESSAGES_PER_SECOND\n"
		"(wall time from the start until the last worker is done). Exit 0, 1 when a\n"
		"worker failed, 2 on bad arguments.\n",
		MAX_GROUPS, MAX_FDS, MAX_DATASIZE);
}

/* A whole number in [min, max], else -1 (after a message). */
static long parse_num(const char *name, const char *s, long min, long max)
{
	return bench_parse_num("hackbench", name, s, min, max);
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "groups", required_argument, NULL, 'g' },
		{ "fds", required_argument, NULL, 'f' },
		{ "loops", required_argument, NULL, 'l' },
		{ "datasize", required_argument, NULL, 's' },
		{ "pipe", no_argument, NULL, 'p' },
		{ "threads", no_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, "g:f:l:s:pth", lo, NULL)) != -1) {
		switch (ch) {
		case 'g':
			opt.groups = parse_num("groups", optarg, 1, MAX_GROUPS);
			break;
		case 'f':
			opt.fds = parse_num("fds", optarg, 1, MAX_FDS);
			break;
		case 'l':
			opt.loops = parse_num("loops", optarg, 1, INT_MAX);
			break;
		case 's':
			opt.datasize = parse_num("datasize", optarg, 1, MAX_DATASIZE);
			break;
		case 'p':
			opt.pipes = true;
			break;
		case 't':
			opt.threads = true;
			break;
		case 'h':
			usage(stdout);
			exit(0);
		default:
			return -1;
		}
		if (opt.groups < 0 || opt.fds < 0 || opt.loops < 0 || opt.datasize < 0)
			return -1;
	}
	if (optind < argc) {
		fprintf(stderr, "hackbench: unexpected argument '%s'\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* ---- a worker ---- */

/* Tells the parent it is ready and waits for the start; 0 or a negative errno. */
static int line_up(void)
{
	struct pollfd p = { .fd = start_r, .events = POLLIN };
	char c = 'R';

	if (write(ready_w, &c, 1) != 1)
		return -errno;
	if (!opt.threads)
		close(ready_w); /* the parent sees EOF if a worker dies before it is ready */
	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

static int write_all(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_all(const struct worker *w, char *buf)
{
	for (long i = 0; i < opt.loops; i++)
		for (long j = 0; j < opt.fds; j++) {
			int r = write_all(w->out_fds[j], buf, (size_t)opt.datasize);

			if (r < 0)
				return r;
		}
	return 0;
}

/* Reads what every sender of the group sends it, a message's size at a time. */
static int receive_all(const struct worker *w, char *buf)
{
	uint64_t left = (uint64_t)opt.fds * (uint64_t)opt.loops * (uint64_t)opt.datasize;

	while (left > 0) {
		ssize_t n = read(w->in_fd, buf, (size_t)opt.datasize);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA; /* every sender is gone before it sent everything */
		left -= (uint64_t)n;
	}
	return 0;
}

static int work(const struct worker *w)
{
	char *buf = malloc((size_t)opt.datasize);
	int r;

	if (!buf)
		return -ENOMEM;
	memset(buf, 'm', (size_t)opt.datasize);
	r = line_up();
	if (r == 0)
		r = w->sender ? send_all(w, buf) : receive_all(w, buf);
	free(buf);
	return r;
}

static void fail(const struct worker *w, int r)
{
	fprintf(stderr, "hackbench: %s: %s\n", w->sender ? "sender" : "receiver",
		r == -ENODATA ? "its senders closed before they sent everything" : strerror(-r));
	_exit(1);
}

/* Threads share the channels, so no one would see EOF: a failure ends the process. */
static void *thread_main(void *arg)
{
	struct worker *w = arg;
	int r = work(w);

	if (r < 0)
		fail(w, r);
	return NULL;
}

/* ---- the parent ---- */

/*
 * SIGTERM, SIGINT or SIGHUP in process mode: the workers are killed and reaped before
 * the parent goes, so that none is left for init to reap. Async-signal-safe calls only.
 */
static void on_stop(int sig)
{
	for (sig_atomic_t i = 0; i < npids; i++)
		if (pids[i] > 0)
			kill(pids[i], SIGKILL);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_stop(void (*fn)(int))
{
	struct sigaction sa = { .sa_handler = fn };

	sigfillset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static int channel(int ret_fds[2])
{
	int r = opt.pipes ? pipe(ret_fds) : socketpair(AF_UNIX, SOCK_STREAM, 0, ret_fds);

	return r < 0 ? -errno : 0;
}

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			fds[i] = -1;
		}
}

/*
 * A forked worker keeps only its own ends of the group's channels (rx[] holds the
 * read ends, tx[] the write ends), so that a receiver sees EOF when its senders die.
 */
static void child_main(struct worker *w, int *rx, int *tx)
{
	int r;

	catch_stop(SIG_DFL);
	prctl(PR_SET_PDEATHSIG, SIGKILL); /* no orphan blocks forever on a channel */
	if (getppid() != parent_pid)
		_exit(1); /* the parent died before the line above */
	close(ready_r);
	close(start_w);
	for (long i = 0; i < opt.fds; i++) {
		if (w->sender || rx[i] != w->in_fd)
			close(rx[i]);
		if (!w->sender)
			close(tx[i]);
	}
	r = work(w);
	if (r < 0)
		fail(w, r);
	_exit(0);
}

static int start_worker(struct worker *w, int *rx, int *tx)
{
	pthread_attr_t attr;
	pid_t pid;
	int r;

	if (opt.threads) {
		pthread_attr_init(&attr);
		pthread_attr_setstacksize(&attr, THREAD_STACK);
		r = pthread_create(&w->th, &attr, thread_main, w);
		pthread_attr_destroy(&attr);
		return -r;
	}
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0)
		child_main(w, rx, tx);
	pids[npids++] = pid;
	return 0;
}

/*
 * Sets up one group and starts its workers. Processes leave the parent's copies of the
 * channels closed; threads share them, and rx/tx stay open for the run.
 */
static int start_group(struct worker *ws, int *rx, int *tx)
{
	int r;

	for (long i = 0; i < opt.fds; i++) {
		int fds[2];

		if ((r = channel(fds)) < 0)
			return r;
		rx[i] = fds[0];
		tx[i] = fds[1];
	}
	for (long i = 0; i < 2 * opt.fds; i++) {
		ws[i] = (struct worker){ .sender = i >= opt.fds, .in_fd = rx[i % opt.fds],
					 .out_fds = tx };
		if ((r = start_worker(&ws[i], rx, tx)) < 0)
			return r;
	}
	if (!opt.threads) {
		close_all(rx, (size_t)opt.fds);
		close_all(tx, (size_t)opt.fds);
	}
	return 0;
}

/* Reads one byte from each of n workers; a negative errno if one died first. */
static int wait_ready(long n)
{
	char buf[512];

	while (n > 0) {
		ssize_t got = read(ready_r, buf, n < (long)sizeof(buf) ? (size_t)n : sizeof(buf));

		if (got < 0 && errno == EINTR)
			continue;
		if (got <= 0)
			return got < 0 ? -errno : -EPIPE;
		n -= got;
	}
	return 0;
}

/* Waits for every worker; 0 if all did their part. */
static int wait_done(struct worker *ws, long n)
{
	int bad = 0, status;

	if (opt.threads) {
		for (long i = 0; i < n; i++)
			pthread_join(ws[i].th, NULL); /* a failed thread ended the process */
		return 0;
	}
	for (long i = 0; i < n; i++) {
		if (waitpid(-1, &status, 0) < 0) {
			if (errno == EINTR) {
				i--;
				continue;
			}
			return -errno;
		}
		bad |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
	}
	return bad ? -EIO : 0;
}

static int pipes_of_start(void)
{
	int r[2], s[2];

	if (pipe(r) < 0)
		return -errno;
	if (pipe(s) < 0) {
		close(r[0]);
		close(r[1]);
		return -errno;
	}
	ready_r = r[0];
	ready_w = r[1];
	start_r = s[0];
	start_w = s[1];
	return 0;
}

int main(int argc, char **argv)
{
	long nworkers, started = 0;
	struct worker *ws;
	int *rx, *tx, r;
	uint64_t t0, t1;
	double secs, msgs;
	char go = 'G';

	if (parse_args(argc, argv) < 0) {
		fprintf(stderr, "Try 'hackbench --help'.\n");
		return 2;
	}
	signal(SIGPIPE, SIG_IGN); /* a write to a dead receiver fails with EPIPE instead */
	parent_pid = getpid();
	if (!opt.threads)
		catch_stop(on_stop);
	nworkers = opt.groups * 2 * opt.fds;
	ws = calloc((size_t)nworkers, sizeof(*ws));
	rx = calloc((size_t)(opt.groups * opt.fds), sizeof(*rx));
	tx = calloc((size_t)(opt.groups * opt.fds), sizeof(*tx));
	pids = calloc((size_t)nworkers, sizeof(*pids));
	if (!ws || !rx || !tx || !pids) {
		fprintf(stderr, "hackbench: cannot set up: %s\n", strerror(ENOMEM));
		return 1;
	}
	if ((r = pipes_of_start()) < 0) {
		fprintf(stderr, "hackbench: cannot set up: %s\n", strerror(-r));
		return 1;
	}
	for (long g = 0; g < opt.groups; g++) {
		r = start_group(&ws[g * 2 * opt.fds], &rx[g * opt.fds], &tx[g * opt.fds]);
		if (r < 0) {
			/* Processes die with us (PDEATHSIG); threads with the process. */
			fprintf(stderr, "hackbench: cannot start group %ld: %s\n", g, strerror(-r));
			return 1;
		}
		started += 2 * opt.fds;
	}
	if (!opt.threads)
		close(ready_w); /* from now on only a dead worker's missing byte ends the wait */
	if ((r = wait_ready(started)) < 0) {
		fprintf(stderr, "hackbench: a worker died before it was ready\n");
		return 1;
	}
	t0 = now_ns();
	if (write(start_w, &go, 1) != 1) {
		fprintf(stderr, "hackbench: cannot start the workers: %s\n", strerror(errno));
		return 1;
	}
	r = wait_done(ws, nworkers);
	t1 = now_ns();
	if (r < 0) {
		fprintf(stderr, "hackbench: a worker failed\n");
		return 1;
	}
	secs = (double)(t1 - t0) / 1e9;
	msgs = (double)opt.groups * (double)opt.fds * (double)opt.fds * (double)opt.loops;
	printf("%.3f %.0f\n", secs, secs > 0 ? msgs / secs : 0.0);
	free(ws);
	free(rx);
	free(tx);
	free(pids);
	return 0;
}
