/*
 * Fuzz target: the journal readers. The input is a journal file's bytes. It is
 * written to a journal of our own in a temporary directory and read back as the
 * daemon reads its journals at start: journal_replay (the affinity journal's
 * records, through journal_parse_line) and journal_each_line handing each line to
 * latact_parse_line (the latency journal's records).
 */
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#include "actuate/journal.h"
#include "actuate/latact.h"
#include "fuzz.h"

#define NAME "fuzz.journal"

static char dir[PATH_MAX], path[PATH_MAX];
static struct journal *j;

static void cleanup(void)
{
	journal_close(j);
	unlink(path);
	rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *tmp = getenv("TMPDIR");

	fuzz_quiet();
	snprintf(dir, sizeof(dir), "%s/rqb-fuzz-journal.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir) || journal_open_named(dir, NAME, &j) < 0) {
		perror("fuzz_journal: temporary journal");
		abort();
	}
	snprintf(path, sizeof(path), "%s/%s", dir, NAME);
	atexit(cleanup);
	return 0;
}

static void on_record(void *ctx, const struct journal_rec *r)
{
	unsigned *n = ctx;

	FUZZ_CHECK(r->tid > 0 && r->tgid > 0);
	FUZZ_CHECK(CPU_COUNT(&r->prev) > 0 && CPU_COUNT(&r->set) > 0);
	(*n)++;
}

static void on_lat_line(void *ctx, unsigned lineno, char *line)
{
	struct lat_entry e;
	struct lat_cg_entry c;
	unsigned *n = ctx;

	switch (latact_parse_line(line, &e, &c)) {
	case LATACT_REC_TASK:
		FUZZ_CHECK(e.task.tid > 0 && e.task.pidfd == -1);
		FUZZ_CHECK(strnlen(e.prev.cgroup, sizeof(e.prev.cgroup)) < sizeof(e.prev.cgroup));
		FUZZ_CHECK(strnlen(e.set.cgroup, sizeof(e.set.cgroup)) < sizeof(e.set.cgroup));
		break;
	case LATACT_REC_CG:
		FUZZ_CHECK(strnlen(c.unit, sizeof(c.unit)) < sizeof(c.unit));
		/* fall through */
	case LATACT_REC_UNCG:
		FUZZ_CHECK(c.path[0] == '/' && strnlen(c.path, sizeof(c.path)) < sizeof(c.path));
		break;
	case LATACT_REC_UNTASK:
	case LATACT_REC_ROOT:
		break;
	default:
		return;
	}
	(*n)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned bad = 0, recs = 0, lat = 0;
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);

	if (fd < 0 || write(fd, data, size) != (ssize_t)size || close(fd) < 0)
		abort();
	FUZZ_CHECK(journal_replay(j, on_record, &recs, &bad) == 0);
	FUZZ_CHECK(journal_each_line(j, on_lat_line, &lat) == 0);
	return 0;
}
