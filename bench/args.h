/*
 * Option parsing the bench programs share (hackbench, shareload): each is built from
 * its own .c file alone, so this is a header of static functions.
 */
#ifndef RQB_BENCH_ARGS_H
#define RQB_BENCH_ARGS_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

/* --name's value s as a whole number in [min, max], else -1 (after prog's message). */
static inline long bench_parse_num(const char *prog, const char *name, const char *s, long min,
				   long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max) {
		fprintf(stderr, "%s: --%s: '%s' is not a whole number from %ld to %ld\n", prog,
			name, s, min, max);
		return -1;
	}
	return v;
}

#endif
