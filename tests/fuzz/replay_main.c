/*
 * The plain build of a fuzz target: runs LLVMFuzzerTestOneInput once over every file
 * in the directories (or files) given, in name order, each from an exact-size heap
 * copy as libFuzzer would pass it. make check runs it over tests/fuzz/corpus/NAME.
 * Ends with one line: "NAME: N inputs ok", or "NAME: FAIL on FILE" when one crashes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

/* Weak: defined by the targets that need it, and by ASan/UBSan when they are linked in. */
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));
void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

static const char *prog = "fuzz";
static const char *current; /* the input being run */

static void say_fail(void)
{
	char line[PATH_MAX + 64];
	int n = snprintf(line, sizeof(line), "%s: FAIL on %s\n", prog, current ? current : "?");

	if (n > 0 && write(STDOUT_FILENO, line, (size_t)n) < 0)
		return;
}

/* A crash without a sanitizer (or an abort, which ASan leaves alone): name the input. */
static void on_signal(int sig)
{
	say_fail();
	signal(sig, SIG_DFL);
	raise(sig);
}

static void catch_crashes(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL };

	signal(SIGABRT, on_signal);
	if (__sanitizer_set_death_callback) {
		/* The sanitizer reports the crash and calls us before it exits. */
		__sanitizer_set_death_callback(say_fail);
		return;
	}
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_signal);
}

static int run_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	ssize_t n = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0 || fstat(fd, &st) < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	/* An exact-size copy: a read past the end is the sanitizer's to see. */
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf)
		abort();
	while (n < st.st_size) {
		ssize_t r = read(fd, buf + n, (size_t)(st.st_size - n));

		if (r <= 0) {
			fprintf(stderr, "%s: %s: short read\n", prog, path);
			close(fd);
			free(buf);
			return -1;
		}
		n += r;
	}
	close(fd);
	current = path;
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	current = NULL;
	free(buf);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int not_hidden(const struct dirent *de)
{
	return de->d_name[0] != '.';
}

/* Every regular file in dir; returns how many ran, or -1. */
static int run_dir(const char *dir)
{
	struct dirent **names;
	int n = scandir(dir, &names, not_hidden, by_name), ran = 0, bad = 0;

	if (n < 0) {
		fprintf(stderr, "%s: %s: %s\n", prog, dir, strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++) {
		char path[PATH_MAX];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
			if (run_file(path) < 0)
				bad = 1;
			else
				ran++;
		}
		free(names[i]);
	}
	free(names);
	return bad ? -1 : ran;
}

int main(int argc, char **argv)
{
	int total = 0, bad = 0;
	const char *slash = strrchr(argv[0], '/');

	prog = slash ? slash + 1 : argv[0];
	if (argc < 2) {
		fprintf(stderr, "usage: %s DIR|FILE...\n", prog);
		return 2;
	}
	catch_crashes();
	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;
		int n;

		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
			n = run_dir(argv[i]);
		else
			n = run_file(argv[i]) < 0 ? -1 : 1;
		if (n < 0)
			bad = 1;
		else
			total += n;
	}
	/* An empty corpus would pass while testing nothing. */
	if (bad || total == 0) {
		printf("%s: FAIL: %s\n", prog, bad ? "an input could not be read" : "no input");
		return 1;
	}
	printf("%s: %d inputs ok\n", prog, total);
	return 0;
}
