/*
 * Diagnostics (diag/), run-queue wait histograms: loads rqlat.bpf.c's tracepoint
 * programs, keeps its tid → class and cgroup maps as the latency actuator changes, and
 * sums the per-CPU histograms when asked. It never changes a task.
 */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/types.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/caps.h"
#include "diag/bpf/rqlat.bpf.h"
#include "diag/rqlat.h"
#include "model/model.h"
#include "rqbalance.h"
#include "rqlat.skel.h"
#include "sample/bpfload.h"
#include "util/log.h"
#include "testonly.h"

_Static_assert(RQB_RQLAT_MAX_CG == RQL_MAX_CGROUPS, "daemon/diag/rqlat.h and bpf/rqlat.bpf.h disagree");

struct rql_cg {
	char path[PATH_MAX];         /* relative to the mount, as the actuator names it */
	uint64_t id;                 /* its directory's inode number; 0 if unknown */
};

struct rqlat_state {
	struct rqlat *skel;
	enum rqlat_from from;        /* the programs loaded */
	char queue_why[200];         /* why "queue" was asked for and did not load */
	int ncpus;                   /* possible CPUs: values of a per-CPU slot */
	size_t ncg;
	struct rql_cg cg[RQL_MAX_CGROUPS];
	uint64_t update_errors;
};

unsigned rqlat_bucket(uint64_t wait_ns)
{
	return rql_bucket(wait_ns);
}

void rqlat_bucket_range(unsigned b, uint64_t *ret_lo_us, uint64_t *ret_hi_us)
{
	*ret_lo_us = b == 0 ? 0 : 1ULL << b;
	*ret_hi_us = b + 1 >= RQL_BUCKETS ? 0 : 2ULL << b;
}

static int load(struct rqlat_state *rl, char *why, size_t why_len)
{
	bool queue = rl->from == RQLAT_FROM_QUEUE;
	int r;

	bpfload_begin("rqlat: ");
	rl->skel = rqlat__open();
	r = rl->skel ? 0 : -errno;
	if (r == 0) {
		bpf_program__set_autoload(rl->skel->progs.rql_queued, queue);
		bpf_program__set_autoload(rl->skel->progs.rql_wakeup, !queue);
		bpf_program__set_autoload(rl->skel->progs.rql_wakeup_new, !queue);
		bpf_program__set_autoload(rl->skel->progs.rql_switch, !queue);
		/* Task storage only for "wakeup": its map is left uncreated otherwise. */
		bpf_map__set_autocreate(rl->skel->maps.stamps, !queue);
		r = rqlat__load(rl->skel);
	}
	if (r == 0)
		r = rqlat__attach(rl->skel);
	if (r < 0)
		bpfload_why(r, why, why_len);
	return r;
}

int rqlat_new(struct rqlat_state **ret, enum rqlat_from from, char *why, size_t why_len)
{
	struct rqlat_state *rl = calloc(1, sizeof(*rl));
	int r;

	if (!rl) {
		snprintf(why, why_len, "%s", strerror(ENOMEM));
		return -ENOMEM;
	}
	rl->ncpus = libbpf_num_possible_cpus();
	if (rl->ncpus <= 0) {
		snprintf(why, why_len, "cannot count the possible CPUs");
		free(rl);
		return -EIO;
	}
	rl->from = from;
	r = load(rl, why, why_len);
	/*
	 * "queue" reads fields a kernel may lack (sched_info: CONFIG_SCHED_INFO; cfs_rq.rq:
	 * CONFIG_FAIR_GROUP_SCHED): libbpf then poisons the reads and the verifier refuses
	 * the program. The stamps need neither: loaded in its place, the reason kept.
	 */
	if (r < 0 && r != -EPERM && r != -EACCES && rl->from == RQLAT_FROM_QUEUE) {
		snprintf(rl->queue_why, sizeof(rl->queue_why), "%s", why);
		rqlat__destroy(rl->skel);
		rl->skel = NULL;
		rl->from = RQLAT_FROM_WAKEUP;
		r = load(rl, why, why_len);
	}
	if (r < 0) {
		rqlat_free(rl);
		return r;
	}
	*ret = rl;
	return 0;
}

enum rqlat_from rqlat_from(const struct rqlat_state *rl)
{
	return rl->from;
}

const char *rqlat_queue_refused(const struct rqlat_state *rl)
{
	return rl->queue_why;
}

void rqlat_free(struct rqlat_state *rl)
{
	if (!rl)
		return;
	rqlat__destroy(rl->skel);
	free(rl);
}

/* A map write; where this kernel checks CAP_BPF on every bpf() call, raised for it. */
static int map_op(struct rqlat_state *rl, int fd, const void *key, const void *value)
{
	int r = value ? bpf_map_update_elem(fd, key, value, BPF_ANY) : bpf_map_delete_elem(fd, key);

	if (r == -EPERM && caps_raise(CAP_BPF) == 0) {
		r = value ? bpf_map_update_elem(fd, key, value, BPF_ANY)
			  : bpf_map_delete_elem(fd, key);
		caps_lower(CAP_BPF);
	}
	if (r < 0 && r != -ENOENT && rl->update_errors++ == 0)
		log_notice("rqlat: cannot update a map: %s; some waits count as \"none\"",
			   strerror(-r));
	return r;
}

void rqlat_task(struct rqlat_state *rl, pid_t tid, int value, bool managed)
{
	__u32 key = (__u32)tid, slot = (__u32)(value - RQL_VALUE_MIN);

	if (!rl || tid <= 0)
		return;
	if (managed && value >= LAT_MIN && value <= LAT_MAX)
		map_op(rl, bpf_map__fd(rl->skel->maps.classes), &key, &slot);
	else
		map_op(rl, bpf_map__fd(rl->skel->maps.classes), &key, NULL);
}

static bool same_cgroups(const struct rqlat_state *rl, const char *const *paths, size_t n)
{
	if (n > RQL_MAX_CGROUPS)
		n = RQL_MAX_CGROUPS;
	if (n != rl->ncg)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp(rl->cg[i].path, paths[i]) != 0)
			return false;
	return true;
}

void rqlat_cgroups(struct rqlat_state *rl, const char *mount, const char *const *paths, size_t n)
{
	int fd;

	if (!rl || same_cgroups(rl, paths, n))
		return;
	fd = bpf_map__fd(rl->skel->maps.cgroups);
	for (size_t i = 0; i < rl->ncg; i++)
		if (rl->cg[i].id)
			map_op(rl, fd, &rl->cg[i].id, NULL);
	rl->ncg = n > RQL_MAX_CGROUPS ? RQL_MAX_CGROUPS : n;
	for (size_t i = 0; i < rl->ncg; i++) {
		char dir[PATH_MAX * 2];
		__u32 slot = (__u32)(RQL_NCLASSES + i);
		struct stat st;

		snprintf(rl->cg[i].path, sizeof(rl->cg[i].path), "%s", paths[i]);
		snprintf(dir, sizeof(dir), "%s%s", mount, strcmp(paths[i], "/") ? paths[i] : "");
		rl->cg[i].id = stat(dir, &st) == 0 ? (uint64_t)st.st_ino : 0;
		if (rl->cg[i].id && map_op(rl, fd, &rl->cg[i].id, &slot) < 0)
			rl->cg[i].id = 0;
	}
	rl->skel->bss->ncgroups = (__u32)rl->ncg;
}

/* Slot's histogram summed over the CPUs into ret. */
static int sum_slot(struct rqlat_state *rl, __u32 slot, struct rql_hist *per_cpu,
		    struct rql_hist *ret)
{
	int r = bpf_map_lookup_elem(bpf_map__fd(rl->skel->maps.hists), &slot, per_cpu);

	if (r == -EPERM && caps_raise(CAP_BPF) == 0) {
		r = bpf_map_lookup_elem(bpf_map__fd(rl->skel->maps.hists), &slot, per_cpu);
		caps_lower(CAP_BPF);
	}
	if (r < 0)
		return r;
	memset(ret, 0, sizeof(*ret));
	/*
	 * The total is the buckets' sum, not the programs' own count: a CPU's copy can be
	 * taken between its bucket's increment and its total's.
	 */
	for (int c = 0; c < rl->ncpus; c++) {
		const struct rql_hist *h = &per_cpu[c];

		for (int b = 0; b < RQL_BUCKETS; b++) {
			ret->count[b] += h->count[b];
			ret->total += h->count[b];
		}
		ret->sum_ns += h->sum_ns;
		if (h->max_ns > ret->max_ns)
			ret->max_ns = h->max_ns;
	}
	return 0;
}

static void slot_name(const struct rqlat_state *rl, __u32 slot, char *ret, size_t size)
{
	if (slot < RQL_NVALUES)
		snprintf(ret, size, "%d", (int)slot + RQL_VALUE_MIN);
	else if (slot == RQL_NONE)
		snprintf(ret, size, "none");
	else
		snprintf(ret, size, "cg:%s", rl->cg[slot - RQL_NCLASSES].path);
}

/* Appends one class: its totals, then its buckets up to the last that counted. */
static void put_class(FILE *f, const char *name, const struct rql_hist *h)
{
	int last = RQL_BUCKETS - 1;

	while (last > 0 && !h->count[last])
		last--;
	fprintf(f, "class %s total %" PRIu64 " sum_us %" PRIu64 " max_us %" PRIu64 "\n", name,
		(uint64_t)h->total, (uint64_t)h->sum_ns / 1000, (uint64_t)h->max_ns / 1000);
	for (int b = 0; b <= last; b++) {
		uint64_t lo, hi;

		rqlat_bucket_range((unsigned)b, &lo, &hi);
		if (hi)
			fprintf(f, "hist %s %" PRIu64 " %" PRIu64 " %" PRIu64 "\n", name, lo, hi,
				(uint64_t)h->count[b]);
		else
			fprintf(f, "hist %s %" PRIu64 " inf %" PRIu64 "\n", name, lo,
				(uint64_t)h->count[b]);
	}
}

char *rqlat_text(struct rqlat_state *rl)
{
	struct rql_hist *per_cpu = calloc((size_t)rl->ncpus, sizeof(*per_cpu)), sum;
	char *text = NULL;
	size_t len = 0;
	FILE *f = per_cpu ? open_memstream(&text, &len) : NULL;
	int r = f ? 0 : -ENOMEM;

	for (__u32 slot = 0; r == 0 && slot < RQL_NCLASSES + rl->ncg; slot++) {
		char name[PATH_MAX + 8];

		r = sum_slot(rl, slot, per_cpu, &sum);
		/* "none" always, to say the programs run; a class only once it has waits. */
		if (r < 0 || (!sum.total && slot != RQL_NONE))
			continue;
		slot_name(rl, slot, name, sizeof(name));
		put_class(f, name, &sum);
	}
	if (f && fclose(f) != 0 && r == 0)
		r = -ENOMEM;
	free(per_cpu);
	if (r < 0) {
		free(text);
		errno = -r;
		return NULL;
	}
	return text;
}
