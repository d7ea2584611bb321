/*
 * Fuzz target: the /proc parsers. The first byte picks one (its value mod 6; the
 * digits '0'…'5' pick them in this order) and a variant (its value / 6: the buffer
 * size handed to the parser); the rest is the file's text:
 *   0 parse_stat           /proc/TID/stat
 *   1 parse_cpustat        /proc/stat
 *   2 parse_cgroup         /proc/PID/cgroup, for the sampler
 *   3 parse_status         /proc/PID/status (and ident_parse_uid on it)
 *   4 parse_cgroup         the same (once the rules' own parser; its corpus stays),
 *     parse_mountinfo      and each line as /proc/PID/mountinfo
 *   5 ident_join_cmdline   /proc/PID/cmdline (bytes, NULs and all)
 * There is no schedstat parser: the daemon only checks that /proc/schedstat exists.
 */
#include <errno.h>
#include <limits.h>

#include "fuzz.h"
#include "rqbalance.h"
#include "proc/parse.h"
#include "sample/sampler.h"
#include "taskev/ident.h"

/* Printable first bytes get the daemon's own sizes; bytes from 192 up small ones. */
static size_t variant_size(unsigned variant, size_t full)
{
	return variant < 32 ? full : variant - 31;
}

static void stat_line(const char *text)
{
	struct parse_stat_line l;

	if (parse_stat(text, &l) == 0) {
		FUZZ_CHECK(l.cpu >= 0 && l.cpu < RQB_MAX_CPUS);
		FUZZ_CHECK(strnlen(l.comm, sizeof(l.comm)) < sizeof(l.comm));
	}
}

static void cpustat(const char *text, unsigned variant)
{
	int n = (int)variant_size(variant, RQB_MAX_CPUS);
	uint64_t *busy = malloc((size_t)n * sizeof(*busy));
	uint64_t *total = malloc((size_t)n * sizeof(*total));
	unsigned running;

	if (!busy || !total)
		abort();
	parse_cpustat(text, n, busy, total, &running);
	free(busy);
	free(total);
}

static void cgroup(const char *text, unsigned variant)
{
	size_t len = variant_size(variant, PATH_MAX);
	char *path = malloc(len);
	int r;

	if (!path)
		abort();
	r = parse_cgroup(text, path, len);
	if (r == 0)
		FUZZ_CHECK(strlen(path) < len);
	else
		FUZZ_CHECK(r == -ENOENT || r == -ENAMETOOLONG);
	free(path);
}

static void status(const char *text)
{
	struct parse_status s = { 0 };
	unsigned got = parse_status(text, &s);
	uid_t uid;

	FUZZ_CHECK(!(got & PARSE_STATUS_TGID) || s.tgid > 0);
	FUZZ_CHECK(!(got & PARSE_STATUS_PPID) || s.ppid >= 0);
	FUZZ_CHECK(!(got & PARSE_STATUS_EUID) || (got & PARSE_STATUS_RUID));
	FUZZ_CHECK(!(got & PARSE_STATUS_RUID) || s.ruid != (uid_t)-1);
	FUZZ_CHECK(!(got & PARSE_STATUS_EUID) || s.euid != (uid_t)-1);
	/* The rules' reader is the same parser. */
	FUZZ_CHECK((ident_parse_uid(text, &uid) == 0) == ((got & PARSE_STATUS_RUID) != 0));
}

/* Each line as a mountinfo line: a mount found by ID, its device and root, in bounds. */
static void mountinfo(char *text)
{
	struct parse_mount m;

	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l;
	     l = strtok_r(NULL, "\n", &save))
		if (parse_mountinfo(l, "/proc", &m) == 0)
			FUZZ_CHECK(m.procfs.hidepid <= 4 && (m.proc || m.procfs.hidepid == 0));
}

/* cmdline is bytes: NULs are its separators, so the text is not cut at them. */
static void cmdline(const uint8_t *data, size_t n, unsigned variant)
{
	char *buf = malloc(n + 1);

	if (!buf)
		abort();
	memcpy(buf, data, n);
	buf[n] = '\0';
	ident_join_cmdline(buf, n, variant & 1);
	FUZZ_CHECK(strlen(buf) <= n);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned which, variant;
	char *text;

	if (size < 1)
		return 0;
	which = data[0] % 6;
	variant = data[0] / 6;
	if (which == 5) {
		cmdline(data + 1, size - 1, variant);
		return 0;
	}
	text = fuzz_strdup(data + 1, size - 1);
	switch (which) {
	case 0:
		stat_line(text);
		break;
	case 1:
		cpustat(text, variant);
		break;
	case 2:
		cgroup(text, variant);
		break;
	case 4:
		cgroup(text, variant);
		mountinfo(text);
		break;
	case 3:
		status(text);
		break;
	}
	free(text);
	return 0;
}
