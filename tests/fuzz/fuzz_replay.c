/*
 * Fuzz target: the replay snapshot reader. The input is a replay file (the --record
 * format). It is read twice: by the replay sampler itself, from a memfd, as
 * --replay reads a file, which then hands out a few ticks; and snapshot by snapshot
 * with snap_read, where each snapshot read must survive a round trip through
 * snap_write and snap_read unchanged. The topology is synthetic: 2 LLCs, 8 CPUs.
 */
#include <limits.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz.h"
#include "sample/sampler.h"
#include "sample/topo.h"
#include "snapshot/snap.h"

#define SELF 4242

static struct topo *topo;
static int memfd = -1;
static char memfd_path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct topo_opts o = { .synthetic = "package:1 l3cache:2 core:2 pu:2" };

	fuzz_quiet();
	memfd = memfd_create("fuzz-replay", MFD_CLOEXEC);
	if (memfd < 0 || topo_load(&o, &topo) < 0) {
		perror("fuzz_replay: set-up");
		abort();
	}
	snprintf(memfd_path, sizeof(memfd_path), "/proc/self/fd/%d", memfd);
	return 0;
}

static void sampler_ticks(const uint8_t *data, size_t size)
{
	struct sampler *sm;
	struct snapshot *s;

	if (ftruncate(memfd, 0) < 0 || pwrite(memfd, data, size, 0) != (ssize_t)size)
		abort();
	if (replay_sampler_new(memfd_path, topo, SELF, &sm) < 0)
		return;
	s = snap_new(topo);
	if (!s)
		abort();
	for (int tick = 0; tick < 4; tick++) {
		snap_reset(s);
		FUZZ_CHECK(sampler_sample(sm, (uint64_t)tick, s) == 0);
		FUZZ_CHECK(s->self_tgid == SELF && s->now_ns == (uint64_t)tick);
		for (size_t i = 0; i < s->ntasks; i++)
			FUZZ_CHECK(s->tasks[i].cpu >= 0 && s->tasks[i].cpu < topo->nr_cpu_ids);
	}
	snap_free(s);
	sampler_free(sm);
}

static bool same_task(const struct snap_task *a, const struct snap_task *b)
{
	const char *ca = a->cgroup ? a->cgroup : "", *cb = b->cgroup ? b->cgroup : "";

	return a->tid == b->tid && a->tgid == b->tgid && a->cpu == b->cpu &&
	       a->start_time == b->start_time && a->flags == b->flags &&
	       a->partner == b->partner && CPU_EQUAL(&a->allowed, &b->allowed) &&
	       strcmp(a->comm, b->comm) == 0 && strcmp(ca, cb) == 0;
}

/* What snap_write makes of s, snap_read reads back as s. */
static void round_trip(const struct snapshot *s)
{
	struct snapshot *back = snap_new(topo);
	char *text = NULL, err[256] = "";
	size_t len = 0;
	unsigned lineno = 0;
	FILE *f = open_memstream(&text, &len);
	int r;

	if (!back || !f)
		abort();
	FUZZ_CHECK(snap_write(s, f) == 0);
	if (fclose(f) != 0 || !(f = fmemopen(text, len, "r")))
		abort();
	r = snap_read(f, back, &lineno, err, sizeof(err));
	if (r != 1)
		fprintf(stderr, "line %u: %s; the text written:\n%s", lineno, err, text);
	FUZZ_CHECK(r == 1);
	FUZZ_CHECK(back->seq == s->seq && back->now_ns == s->now_ns &&
		   back->self_tgid == s->self_tgid && back->ntasks == s->ntasks);
	FUZZ_CHECK(memcmp(back->cpus, s->cpus, (size_t)s->nr_cpu_ids * sizeof(*s->cpus)) == 0);
	for (size_t i = 0; i < s->ntasks; i++)
		FUZZ_CHECK(same_task(&back->tasks[i], &s->tasks[i]));
	fclose(f);
	free(text);
	snap_free(back);
}

static void each_snapshot(const uint8_t *data, size_t size)
{
	struct snapshot *s = snap_new(topo);
	FILE *f = fmemopen((void *)data, size, "r");
	unsigned lineno = 0;
	char err[256];

	if (!s || !f)
		abort();
	while (snap_read(f, s, &lineno, err, sizeof(err)) == 1)
		round_trip(s);
	fclose(f);
	snap_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	sampler_ticks(data, size);
	if (size > 0)
		each_snapshot(data, size);
	return 0;
}
