/*
 * Shared by the fuzz targets. Each tests/fuzz/fuzz_NAME.c defines
 * LLVMFuzzerTestOneInput and builds twice: with libFuzzer (make fuzz) and, linked
 * with replay_main.c, as a plain program that replays tests/fuzz/corpus/NAME.
 */
#ifndef RQB_FUZZ_H
#define RQB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/log.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/*
 * A property of the code under test: a failure aborts, so that libFuzzer keeps the
 * input as a crash and the replayer fails.
 */
#define FUZZ_CHECK(cond)                                                                  \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__,  \
				#cond);                                                   \
			abort();                                                          \
		}                                                                         \
	} while (0)

/* The input as a C string, cut at its first NUL as a text file's reader would see it. */
static inline char *fuzz_strdup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/*
 * Silences the daemon's log, which would otherwise print a line for most inputs;
 * RQB_FUZZ_LOG=1 keeps it, to see why a crasher was refused.
 */
static inline void fuzz_quiet(void)
{
	const char *v = getenv("RQB_FUZZ_LOG");

	if (!v || strcmp(v, "1") != 0)
		log_set_level(-1);
}

/* A stream that takes the parsers' error messages (formatted, then dropped). */
static inline FILE *fuzz_devnull(void)
{
	static FILE *f;

	if (!f && !(f = fopen("/dev/null", "we")))
		abort();
	return f;
}

#endif
