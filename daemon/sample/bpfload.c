/*
 * sample/: libbpf's print hook, one for every BPF object the daemon loads. It only
 * logs and remembers; it never decides whether a load counts as failed.
 */
#include <bpf/libbpf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sample/bpfload.h"
#include "util/log.h"

static const char *prefix = "";
static char first_warn[256];

static int on_libbpf(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	/* The verifier's log comes through here: a program's can run to many kB. */
	static char text[1 << 17];
	char *save = NULL;

	if (level == LIBBPF_DEBUG)
		return 0;
	vsnprintf(text, sizeof(text), fmt, ap);
	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		/* The first warning says what failed; the later ones, what gave up. */
		if (level == LIBBPF_WARN && !first_warn[0])
			snprintf(first_warn, sizeof(first_warn), "%s", line);
		log_debug("%s%s", prefix, line);
	}
	return 0;
}

void bpfload_begin(const char *p)
{
	prefix = p;
	first_warn[0] = '\0';
	libbpf_set_print(on_libbpf);
}

void bpfload_why(int err, char *why, size_t why_len)
{
	/* Refused, the hint says enough; otherwise libbpf's first warning says what broke. */
	if (err == -EPERM || err == -EACCES)
		snprintf(why, why_len, "%s (needs CAP_BPF and CAP_PERFMON)", strerror(-err));
	else
		snprintf(why, why_len, "%s%s%s", strerror(-err), first_warn[0] ? "; " : "",
			 first_warn);
}
