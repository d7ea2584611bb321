/*
 * Snapshot: the tick's immutable record of what the sampler saw, and its text form
 * (replay, record, simulator). Pure data handling: it never reads the live system.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rqbalance.h"
#include "snapshot/snap.h"
#include "util/cpumask.h"
#include "util/sorted.h"
#include "util/util.h"

struct snapshot *snap_new(const struct topo *t)
{
	struct snapshot *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->topo = t;
	s->nr_cpu_ids = t ? t->nr_cpu_ids : RQB_MAX_CPUS;
	s->cpus = calloc((size_t)s->nr_cpu_ids, sizeof(*s->cpus));
	if (!s->cpus) {
		free(s);
		return NULL;
	}
	return s;
}

void snap_reset(struct snapshot *s)
{
	for (size_t i = 0; i < s->ntasks; i++)
		free(s->tasks[i].cgroup);
	s->ntasks = 0;
	s->nlat = 0;
	s->uptime_ticks = 0;
	s->tick_hz = 0;
	memset(s->cpus, 0, (size_t)s->nr_cpu_ids * sizeof(*s->cpus));
}

uint64_t snap_cpu_sampled(const struct snapshot *s, int cpu)
{
	return s->cpus[cpu].sample_ns ? s->cpus[cpu].sample_ns : s->now_ns;
}

void snap_free(struct snapshot *s)
{
	if (!s)
		return;
	snap_reset(s);
	free(s->tasks);
	free(s->lat);
	free(s->cpus);
	free(s);
}

struct snap_task *snap_add_task(struct snapshot *s, const struct snap_task *t, const char *cgroup)
{
	struct snap_task *n;

	struct snap_task *tasks = util_grow(s->tasks, &s->cap, s->ntasks, sizeof(*tasks));

	if (!tasks)
		return NULL;
	s->tasks = tasks;
	n = &s->tasks[s->ntasks];
	*n = *t;
	n->cgroup = NULL;
	if (cgroup && cgroup[0]) {
		n->cgroup = strdup(cgroup);
		if (!n->cgroup)
			return NULL;
	}
	s->ntasks++;
	return n;
}

static size_t lat_lower_bound(const struct snapshot *s, pid_t tid)
{
	return util_pid_lower_bound(s->lat, s->nlat, sizeof(*s->lat), offsetof(struct snap_lat, tid),
				    tid);
}

int snap_add_lat(struct snapshot *s, pid_t tid, uint64_t start_time, int value)
{
	struct snap_lat add = { .tid = tid, .start_time = start_time, .value = value,
				.ran_cpu = -1 };
	struct snap_lat *lat;

	if (value >= 0 || value < LAT_MIN || tid <= 0)
		return -EINVAL;
	lat = util_grow(s->lat, &s->lat_cap, s->nlat, sizeof(*lat));
	if (!lat)
		return -ENOMEM;
	s->lat = lat;
	/* Before the entries of the same tid: snap_find_lat meets the newest first. */
	return sorted_insert(s->lat, &s->nlat, s->lat_cap, sizeof(*s->lat), lat_lower_bound(s, tid),
			     &add);
}

const struct snap_lat *snap_find_lat(const struct snapshot *s, pid_t tid, uint64_t start_time)
{
	for (size_t i = lat_lower_bound(s, tid); i < s->nlat && s->lat[i].tid == tid; i++)
		if (s->lat[i].start_time == start_time)
			return &s->lat[i];
	return NULL;
}

int snap_lat_ran(struct snapshot *s, pid_t tid, uint64_t start_time, int cpu)
{
	struct snap_lat *l = (struct snap_lat *)snap_find_lat(s, tid, start_time);

	if (!l)
		return -ENOENT;
	if (cpu < 0 || cpu >= s->nr_cpu_ids)
		return -EINVAL;
	l->ran_cpu = cpu;
	return 0;
}

static void put_escaped(FILE *out, const char *s)
{
	if (!s || !*s) {
		fputc('-', out);
		return;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p <= 0x20 || *p == 0x7f || *p == '\\' || (p == (const unsigned char *)s && *p == '-'))
			fprintf(out, "\\x%02x", *p);
		else
			fputc(*p, out);
	}
}

int snap_write(const struct snapshot *s, FILE *out)
{
	char mask[CPUMASK_STRLEN];

	fprintf(out, "snapshot %" PRIu64 " %" PRIu64 " %d", s->seq, s->now_ns, (int)s->self_tgid);
	if (s->tick_hz)
		fprintf(out, " uptime=%" PRIu64 " hz=%" PRIu32, s->uptime_ticks, s->tick_hz);
	fputc('\n', out);
	for (int c = 0; c < s->nr_cpu_ids; c++) {
		if (s->topo && !CPU_ISSET(c, &s->topo->online))
			continue;
		fprintf(out, "cpu %d %u %u", c, s->cpus[c].nr_running, s->cpus[c].busy_pct);
		if (s->cpus[c].sample_ns && s->cpus[c].sample_ns != s->now_ns)
			fprintf(out, " sampled=%" PRIu64, s->cpus[c].sample_ns);
		fputc('\n', out);
	}
	for (size_t i = 0; i < s->ntasks; i++) {
		const struct snap_task *t = &s->tasks[i];

		fprintf(out, "task %d %d %d %" PRIu64 " %u %s ", (int)t->tid, (int)t->tgid, t->cpu,
			t->start_time, t->flags, cpumask_format(&t->allowed, mask, sizeof(mask)));
		put_escaped(out, t->comm);
		fputc(' ', out);
		put_escaped(out, t->cgroup);
		if (t->partner)
			fprintf(out, " partner=%d", (int)t->partner);
		if (t->partner && t->partner_placed)
			fprintf(out, "@%d", t->partner_cpu);
		if (t->lat_nice)
			fprintf(out, " lat=%d", t->lat_nice);
		if (t->rss_kb)
			fprintf(out, " rss=%" PRIu64, t->rss_kb);
		fputc('\n', out);
	}
	for (size_t i = 0; i < s->nlat; i++) {
		fprintf(out, "latency %d %" PRIu64 " %d", (int)s->lat[i].tid, s->lat[i].start_time,
			s->lat[i].value);
		if (s->lat[i].ran_cpu >= 0)
			fprintf(out, " ran=%d", s->lat[i].ran_cpu);
		fputc('\n', out);
	}
	fputs("end\n", out);
	fflush(out);
	return ferror(out) ? -EIO : 0;
}

/*
 * A cgroup path as the samplers read it, NUL included, and as put_escaped writes it:
 * four bytes a byte at worst. The reader must take every line the writer makes.
 */
#define CG_MAX 4096
#define CG_ESC_MAX 16380
#define STR_(x) #x
#define STR(x) STR_(x)
_Static_assert(CG_ESC_MAX == 4 * (CG_MAX - 1), "an escaped cgroup is 4 bytes a byte");
/* The longest line snap_write writes: a task line with every field at its widest. */
#define LINE_MAX_LEN (128 + CPUMASK_STRLEN + 4 * SNAP_COMM_LEN + CG_ESC_MAX)

static int unescape(const char *in, char *out, size_t len)
{
	size_t n = 0;

	if (strcmp(in, "-") == 0) {
		out[0] = '\0';
		return 0;
	}
	for (const char *p = in; *p; p++) {
		unsigned v;
		char c = *p;

		if (c == '\\') {
			if (p[1] != 'x' || !isxdigit((unsigned char)p[2]) ||
			    !isxdigit((unsigned char)p[3]) || sscanf(p + 2, "%2x", &v) != 1 || v == 0)
				return -EINVAL;
			c = (char)v;
			p += 3;
		}
		if (n + 1 >= len)
			return -ENAMETOOLONG;
		out[n++] = c;
	}
	out[n] = '\0';
	return 0;
}

#define FAIL(...)                                          \
	do {                                               \
		snprintf(err, errlen, __VA_ARGS__);        \
		return -EINVAL;                            \
	} while (0)

/*
 * A task line's optional fields, each once and in this order: partner=TID[@CPU],
 * lat=V (-20…19, not 0), rss=KIB (above 0). Returns 0 or -EINVAL.
 */
static int parse_task_tail(const char *p, struct snap_task *t)
{
	int v, m = 0, k = 0;
	uint64_t kb;

	if (strncmp(p, " partner=", 9) == 0) {
		if (sscanf(p, " partner=%d%n", &v, &m) != 1 || v <= 0)
			return -EINVAL;
		t->partner = v;
		p += m;
		if (*p == '@') {
			if (sscanf(p, "@%d%n", &t->partner_cpu, &k) != 1 || t->partner_cpu < 0)
				return -EINVAL;
			t->partner_placed = true;
			p += k;
		}
	}
	if (strncmp(p, " lat=", 5) == 0) {
		if ((p[5] != '-' && (p[5] < '1' || p[5] > '9')) ||
		    sscanf(p, " lat=%d%n", &v, &m) != 1 || v < LAT_MIN || v > LAT_MAX || v == 0)
			return -EINVAL;
		t->lat_nice = v;
		p += m;
	}
	if (strncmp(p, " rss=", 5) == 0) {
		if (p[5] < '1' || p[5] > '9' || sscanf(p, " rss=%" SCNu64 "%n", &kb, &m) != 1)
			return -EINVAL;
		t->rss_kb = kb;
		p += m;
	}
	return *p == '\0' ? 0 : -EINVAL;
}

static int parse_task(struct snapshot *s, char *line, char *err, size_t errlen)
{
	struct snap_task t = { .partner_cpu = -1 };
	char mask[CPUMASK_STRLEN], comm[64], cg[CG_ESC_MAX + 1], ecomm[256];
	int tid, tgid, cpu, n = 0;
	unsigned flags;
	uint64_t start;

	if (sscanf(line, "task %d %d %d %" SCNu64 " %u %4095s %255s %" STR(CG_ESC_MAX) "s%n", &tid,
		   &tgid, &cpu, &start, &flags, mask, ecomm, cg, &n) != 8 ||
	    parse_task_tail(line + n, &t) < 0)
		FAIL("task: expected TID TGID CPU START_TIME FLAGS ALLOWED COMM CGROUP "
		     "[partner=TID[@CPU]] [lat=V] [rss=KIB]");
	if (t.partner_placed && t.partner_cpu >= s->nr_cpu_ids)
		FAIL("task %d: partner's cpu %d is not in this topology", tid, t.partner_cpu);
	if (tid <= 0 || tgid <= 0)
		FAIL("task: tid and tgid must be positive");
	if (cpu < 0 || cpu >= s->nr_cpu_ids)
		FAIL("task %d: cpu %d is not in this topology", tid, cpu);
	if (cpumask_parse(mask, &t.allowed) < 0)
		FAIL("task %d: bad cpu list '%s'", tid, mask);
	if (unescape(ecomm, comm, sizeof(comm)) < 0 || strlen(comm) >= SNAP_COMM_LEN)
		FAIL("task %d: bad comm", tid);
	if (unescape(cg, cg, CG_MAX) < 0)
		FAIL("task %d: bad cgroup", tid);
	t.tid = tid;
	t.tgid = tgid;
	t.cpu = cpu;
	t.start_time = start;
	t.flags = flags;
	strcpy(t.comm, comm);
	if (!snap_add_task(s, &t, cg))
		return -ENOMEM;
	return 0;
}

static int parse_lat(struct snapshot *s, const char *line, char *err, size_t errlen)
{
	int tid, value, cpu = -1, n = 0, m = 0, r;
	uint64_t start;

	if (sscanf(line, "latency %d %" SCNu64 " %d%n", &tid, &start, &value, &n) != 3 ||
	    strchr(line, '+') ||
	    (line[n] != '\0' &&
	     (strncmp(line + n, " ran=", 5) != 0 || line[n + 5] < '0' || line[n + 5] > '9' ||
	      sscanf(line + n, " ran=%d%n", &cpu, &m) != 1 || line[n + m] != '\0')))
		FAIL("latency: expected TID START_TIME VALUE [ran=CPU]");
	if (snap_find_lat(s, tid, start))
		FAIL("latency %d: listed twice", tid);
	r = snap_add_lat(s, tid, start, value);
	if (r == -EINVAL)
		FAIL("latency %d: tid must be positive, value from %d to -1", tid, LAT_MIN);
	if (r == 0 && cpu >= 0 && snap_lat_ran(s, tid, start, cpu) < 0)
		FAIL("latency %d: cpu %d is not in this topology", tid, cpu);
	return r;
}

static int parse_cpu_line(struct snapshot *s, const char *line, char *err, size_t errlen)
{
	int cpu, n = 0, m = 0;
	unsigned nr, busy;
	uint64_t sampled = 0;

	if (sscanf(line, "cpu %d %u %u%n", &cpu, &nr, &busy, &n) != 3 ||
	    (line[n] != '\0' && (line[n] != ' ' ||
				  sscanf(line + n, " sampled=%" SCNu64 "%n", &sampled, &m) != 1 ||
				  line[n + m] != '\0' || strchr(line + n, '-') || sampled == 0)))
		FAIL("cpu: expected CPU NR_RUNNING BUSY_PCT [sampled=NS]");
	if (cpu < 0 || cpu >= s->nr_cpu_ids)
		FAIL("cpu %d is not in this topology", cpu);
	if (busy > 100)
		FAIL("cpu %d: busy_pct %u above 100", cpu, busy);
	if (sampled > s->now_ns)
		FAIL("cpu %d: sampled=%" PRIu64 " is after the snapshot's time", cpu, sampled);
	s->cpus[cpu].nr_running = nr;
	s->cpus[cpu].busy_pct = busy;
	s->cpus[cpu].sample_ns = sampled == s->now_ns ? 0 : sampled;
	return 0;
}

/* The header's optional end: nothing, or both uptime and a tick rate above 0. */
static int parse_uptime(struct snapshot *s, const char *rest)
{
	uint64_t up;
	uint32_t hz;
	int n = 0;

	if (*rest == '\0')
		return 0;
	if (sscanf(rest, " uptime=%" SCNu64 " hz=%" SCNu32 "%n", &up, &hz, &n) != 2 ||
	    rest[n] != '\0' || hz == 0 || strchr(rest, '-'))
		return -EINVAL;
	s->uptime_ticks = up;
	s->tick_hz = hz;
	return 0;
}

int snap_read(FILE *in, struct snapshot *s, unsigned *lineno, char *err, size_t errlen)
{
	char line[LINE_MAX_LEN + 2]; /* and its newline and NUL */
	bool open = false;

	snap_reset(s);
	while (fgets(line, sizeof(line), in)) {
		size_t len = strlen(line);
		int r = 0, self, n = 0;

		(*lineno)++;
		if (len && line[len - 1] == '\n')
			line[--len] = '\0';
		else if (!feof(in))
			FAIL("line too long");
		if (len == 0 || line[0] == '#')
			continue;
		if (!open) {
			if (sscanf(line, "snapshot %" SCNu64 " %" SCNu64 " %d%n", &s->seq, &s->now_ns,
				   &self, &n) != 3 || parse_uptime(s, line + n) < 0)
				FAIL("expected 'snapshot SEQ NOW_NS SELF_TGID [uptime=TICKS hz=HZ]'");
			s->self_tgid = self;
			open = true;
		} else if (strcmp(line, "end") == 0) {
			return 1;
		} else if (strncmp(line, "cpu ", 4) == 0) {
			r = parse_cpu_line(s, line, err, errlen);
		} else if (strncmp(line, "task ", 5) == 0) {
			r = parse_task(s, line, err, errlen);
		} else if (strncmp(line, "latency ", 8) == 0) {
			r = parse_lat(s, line, err, errlen);
		} else {
			FAIL("unknown record");
		}
		if (r < 0)
			return r;
	}
	if (ferror(in))
		return -EIO;
	if (open)
		FAIL("snapshot not closed by 'end'");
	return 0;
}
