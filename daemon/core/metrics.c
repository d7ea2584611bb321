/*
 * Metrics: reads the counters the stages keep and writes them out as a Prometheus
 * text file. It only reports: it never changes a counter or anything it reads.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/metrics.h"
#include "rqbalance.h"
#include "sample/sampler.h"
#include "sample/topo.h"
#include "snapshot/snap.h"
#include "util/cpumask.h"
#include "util/log.h"
#include "util/safedir.h"

/* One metric without labels. */
struct scalar {
	const char *name;
	const char *type;   /* "counter" or "gauge" */
	const char *help;
	uint64_t value;
};

void metrics_init(struct metrics *m)
{
	memset(m, 0, sizeof(*m));
}

void metrics_fini(struct metrics *m)
{
	if (m->path[0] && unlink(m->path) < 0 && errno != ENOENT)
		log_warn("metrics: cannot remove %s: %s", m->path, strerror(errno));
	m->path[0] = '\0';
}

static void header(FILE *out, const char *name, const char *type, const char *help)
{
	fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value as the format quotes it: backslash, double quote and newline escaped. */
static void label_value(FILE *out, const char *v)
{
	fputc('"', out);
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(out, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", out);
		else
			fputc(*v, out);
	}
	fputc('"', out);
}

static void labelled(FILE *out, const char *name, const char *label, const char *v,
		     uint64_t value)
{
	fprintf(out, "%s{%s=", name, label);
	label_value(out, v);
	fprintf(out, "} %" PRIu64 "\n", value);
}

static void scalars(const struct metrics *m, const struct daemon_stats *f, FILE *out)
{
	const struct scalar s[] = {
		{ "rqbalance_dry_run", "gauge", "1 if the daemon plans and logs but changes nothing.",
		  f->dry_run },
		{ "rqbalance_ticks_total", "counter", "Ticks: passes of sample, decide and act.",
		  f->ticks },
		{ "rqbalance_managed_tasks", "gauge", "Tasks whose affinity rqbalance set now.",
		  f->managed },
		{ "rqbalance_moves_total", "counter", "Affinity changes that took.",
		  f->moves },
		{ "rqbalance_restores_total", "counter", "Affinities given back.",
		  f->restores },
		{ "rqbalance_latency_tasks", "gauge", "Tasks that have a latency value from rqbalance.",
		  f->lat_tasks },
		{ "rqbalance_latency_cgroups", "gauge",
		  "Cgroups and units that have a latency value from rqbalance.", f->lat_cgroups },
		{ "rqbalance_latency_processes", "gauge",
		  "Processes whose threads and children follow a latency value.", f->lat_processes },
		{ "rqbalance_latency_applied_total", "counter",
		  "Tasks and cgroups given a latency value.", f->lat_applied },
		{ "rqbalance_latency_restored_total", "counter",
		  "Scheduling settings given back after a latency value.", f->lat_restored },
		{ "rqbalance_connector_up", "gauge",
		  "1 if fork and exec events arrive (from BPF or the proc connector); 0: rescans "
		  "instead.", f->events_up },
		{ "rqbalance_events_bpf", "gauge",
		  "1 if fork and exec events come from BPF tracepoints, 0 otherwise.",
		  f->events_bpf },
		{ "rqbalance_connector_events_total", "counter",
		  "Fork, exec and exit events handled (from BPF or the proc connector).",
		  f->events },
		{ "rqbalance_connector_overflows_total", "counter",
		  "Times events were lost (a full BPF ring buffer, an overflowing connector "
		  "socket); each is followed by a rescan.", f->overflows },
		{ "rqbalance_latency_rescans_total", "counter",
		  "Walks of /proc for the threads of managed processes and rule matches.",
		  f->rescans },
		{ "rqbalance_rule_matches_total", "counter", "Processes a rule gave a latency value.",
		  f->rule_matches },
		{ "rqbalance_metrics_write_failures_total", "counter",
		  "Writes of this file that failed.", m->failures },
	};

	for (size_t i = 0; i < ARRAY_SIZE(s); i++) {
		header(out, s[i].name, s[i].type, s[i].help);
		fprintf(out, "%s %" PRIu64 "\n", s[i].name, s[i].value);
	}
}

/* Counters of one kind of event, split by a label. */
static void by_kind(const struct daemon_stats *f, FILE *out)
{
	header(out, "rqbalance_dropped_total", "counter",
	       "Affinities rqbalance stopped managing without giving them back, by reason.");
	labelled(out, "rqbalance_dropped_total", "reason", "gone", f->gone);
	labelled(out, "rqbalance_dropped_total", "reason", "left_alone", f->left_alone);
	header(out, "rqbalance_errors_total", "counter", "Errors, by kind.");
	labelled(out, "rqbalance_errors_total", "kind", "affinity_transient", f->transient);
	labelled(out, "rqbalance_errors_total", "kind", "affinity_permanent", f->permanent);
	labelled(out, "rqbalance_errors_total", "kind", "latency", f->lat_errors);
	labelled(out, "rqbalance_errors_total", "kind", "sample", f->sample_failures);
	header(out, "rqbalance_refusals_total", "counter",
	       "Requests refused by rule, such as a latency value for a real-time task.");
	labelled(out, "rqbalance_refusals_total", "kind", "latency", f->lat_refused);
}

static void per_llc(const struct daemon_stats *f, FILE *out, const char *name, bool runnable)
{
	const struct topo *t = f->topo;

	for (int l = 0; l < t->nllcs; l++) {
		char cpus[CPUMASK_STRLEN];
		uint64_t v = (uint64_t)t->llcs[l].ncpus;

		if (runnable) {
			v = 0;
			for (int c = 0; c < t->nr_cpu_ids && c < f->snap->nr_cpu_ids; c++)
				if (t->cpus[c].present && t->cpus[c].llc == l)
					v += f->snap->cpus[c].nr_running;
		}
		fprintf(out, "%s{llc=\"%d\",cpus=", name, l);
		label_value(out, cpumask_format(&t->llcs[l].cpus, cpus, sizeof(cpus)));
		fprintf(out, "} %" PRIu64 "\n", v);
	}
}

int metrics_format(const struct metrics *m, const struct daemon_stats *f, FILE *out)
{
	header(out, "rqbalance_build_info", "gauge", "The version of rqbalanced, as a label.");
	labelled(out, "rqbalance_build_info", "version", RQB_VERSION, 1);
	header(out, "rqbalance_sampler", "gauge", "The sampler in use, as a label.");
	labelled(out, "rqbalance_sampler", "name", f->sampler, 1);
	header(out, "rqbalance_tick_interval_seconds", "gauge", "The configured tick.");
	fprintf(out, "rqbalance_tick_interval_seconds %u.%03u\n", f->interval_ms / 1000,
		f->interval_ms % 1000);
	header(out, "rqbalance_tick_now_seconds", "gauge",
	       "The tick now: the configured one, or an idle heartbeat (idle_backoff_ms).");
	fprintf(out, "rqbalance_tick_now_seconds %u.%03u\n", f->tick_now_ms / 1000,
		f->tick_now_ms % 1000);
	scalars(m, f, out);
	by_kind(f, out);
	header(out, "rqbalance_llc_cpus", "gauge", "Online CPUs of each last-level cache.");
	per_llc(f, out, "rqbalance_llc_cpus", false);
	header(out, "rqbalance_llc_runnable", "gauge",
	       "Runnable tasks on the CPUs of each last-level cache at the last tick.");
	per_llc(f, out, "rqbalance_llc_runnable", true);
	fflush(out);
	return ferror(out) ? -EIO : 0;
}

/*
 * Writes the file whole under a name of its own in dirfd that nobody can have planted
 * (O_EXCL: no FIFO to block on, no link to follow), and returns that name in tmp; the
 * reader's user (node_exporter) needs it readable.
 */
static int write_tmp(const struct metrics *m, const struct daemon_stats *fig, int dirfd,
		     const char *base, char *tmp, size_t size, bool *ret_made)
{
	struct stat st;
	FILE *out;
	int fd = -1, r;

	for (int i = 0; i < 16 && fd < 0; i++) {
		snprintf(tmp, size, ".%s.%08lx", base, random() & 0xffffffffUL);
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
		if (fd < 0 && errno != EEXIST)
			return -errno;
	}
	if (fd < 0)
		return -EEXIST;
	*ret_made = true;
	errno = EPERM;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    fchmod(fd, 0644) < 0 || !(out = fdopen(fd, "w"))) {
		r = -errno;
		close(fd);
		return r;
	}
	r = metrics_format(m, fig, out);
	if (fclose(out) != 0 && r == 0)
		r = -errno;
	return r;
}

static void note_failure(struct metrics *m, const char *path, int r, const char *why)
{
	m->failures++;
	if (!m->failing)
		log_warn("metrics: cannot write %s: %s; trying again each interval", path,
			 why ? why : strerror(-r));
	m->failing = true;
}

int metrics_write(struct metrics *m, const struct daemon_stats *f, const char *path)
{
	char tmp[NAME_MAX + 1], why[PATH_MAX + 128];
	const char *base = strrchr(path, '/');
	bool made = false;
	int dirfd, r;

	if (strcmp(m->path, path) != 0)
		metrics_fini(m);
	if (!path[0])
		return 0;
	/* The config was checked; a directory can still be handed to a user since. */
	r = safedir_open_parent(path, &dirfd, why, sizeof(why));
	if (r < 0 || !base || strlen(base + 1) > NAME_MAX - 10) {
		if (dirfd >= 0)
			close(dirfd);
		note_failure(m, path, r < 0 ? r : -ENAMETOOLONG, r < 0 && r != -ENOENT ? why : NULL);
		return r < 0 ? r : -ENAMETOOLONG;
	}
	base++;
	r = write_tmp(m, f, dirfd, base, tmp, sizeof(tmp), &made);
	if (r == 0 && renameat(dirfd, tmp, dirfd, base) < 0)
		r = -errno;
	if (r < 0 && made)
		unlinkat(dirfd, tmp, 0);
	close(dirfd);
	if (r < 0) {
		note_failure(m, path, r, NULL);
		return r;
	}
	if (m->failing)
		log_notice("metrics: %s written again", path);
	m->failing = false;
	m->writes++;
	snprintf(m->path, sizeof(m->path), "%s", path);
	return 0;
}
