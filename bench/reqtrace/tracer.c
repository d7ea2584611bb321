/*
 * A function tracer for one request, linked into an rqbalanced built with
 * -finstrument-functions (bench/reqtrace/run): from the entry of ctl_req_run to its
 * return, each function entered and its depth, written to $RQB_REQTRACE, with the wall
 * clock at both ends so that an strace of the same daemon can be cut to the request.
 * Not part of the daemon: a measuring instrument only.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOTRACE __attribute__((no_instrument_function))

/* Weak: rqctl, linked with the same flags, has no ctl_req_run. */
extern void ctl_req_run(void) __attribute__((weak));

void __cyg_profile_func_enter(void *fn, void *site) NOTRACE;
void __cyg_profile_func_exit(void *fn, void *site) NOTRACE;

static __thread int depth = -1;
static FILE *out;

static NOTRACE void stamp(const char *what)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(out, "%s %lld.%06ld\n", what, (long long)ts.tv_sec, ts.tv_nsec / 1000);
}

void __cyg_profile_func_enter(void *fn, void *site)
{
	Dl_info di;

	if (depth < 0) {
		if (!ctl_req_run || fn != (void *)ctl_req_run)
			return;
		if (!out) {
			const char *p = getenv("RQB_REQTRACE");

			out = fopen(p ? p : "/tmp/rqb-reqtrace.txt", "a");
			if (!out)
				return;
		}
		stamp("BEGIN");
		depth = 0;
	}
	if (dladdr(fn, &di) && di.dli_fbase)
		fprintf(out, "E %d %#lx\n", depth, (unsigned long)((char *)fn - (char *)di.dli_fbase));
	depth++;
}

void __cyg_profile_func_exit(void *fn, void *site)
{
	if (depth < 0)
		return;
	depth--;
	if (depth == 0 && fn == (void *)ctl_req_run) {
		stamp("END");
		fflush(out);
		depth = -1;
	}
}
