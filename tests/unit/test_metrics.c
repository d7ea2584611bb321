/*
 * The metrics file: every counter of daemon_stats under its name, labels quoted as the
 * exposition format wants, and the file written whole, 0644, in a directory root alone
 * may write (a tree under a temporary directory), never half of it or a leftover.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/metrics.h"
#include "kit.h"

struct fix {
	char top[32];                /* /tmp/rqb-metrics.XXXXXX, root's, 0700 */
	char dir[64];                /* TOP/m, 0755: where the file goes */
	struct topo *topo;           /* two LLCs of two CPUs */
	struct snapshot *snap;
	struct daemon_stats st;
	struct metrics m;
};

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	kit_tmp(f->top, sizeof(f->top), "metrics");
	snprintf(f->dir, sizeof(f->dir), "%s/m", f->top);
	assert_int_equal(mkdir(f->dir, 0755), 0);
	assert_int_equal(chmod(f->dir, 0755), 0);
	f->topo = kit_topo("package:1 l3cache:2 core:2 pu:1");
	f->snap = snap_new(f->topo);
	assert_non_null(f->snap);
	for (int c = 0; c < 4; c++)
		f->snap->cpus[c].nr_running = (unsigned)c + 1; /* LLC 0: 1+2, LLC 1: 3+4 */
	f->st = (struct daemon_stats){
		.sampler = "procfs", .interval_ms = 1500, .tick_now_ms = 30000, .dry_run = true,
		.ticks = 7, .managed = 3, .moves = 11, .restores = 5, .gone = 2, .left_alone = 1,
		.transient = 13, .permanent = 17, .lat_tasks = 19, .lat_cgroups = 23,
		.lat_processes = 29, .lat_applied = 31, .lat_restored = 37, .lat_errors = 41,
		.lat_refused = 43, .events_up = true, .events_bpf = false, .events = 47,
		.overflows = 53, .rescans = 59, .rule_matches = 61, .sample_failures = 67,
		.topo = f->topo, .snap = f->snap,
	};
	metrics_init(&f->m);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	snap_free(f->snap);
	topo_free(f->topo);
	assert_int_equal(kit_rm(f->top), 0);
	free(f);
	return 0;
}

/* metrics_format's text, in a static buffer, with a newline before it for has(). */
static const char *format(const struct fix *f)
{
	static char buf[1 << 16];
	FILE *out;

	memset(buf, 0, sizeof(buf));
	buf[0] = '\n';
	out = fmemopen(buf + 1, sizeof(buf) - 2, "w");
	assert_non_null(out);
	assert_int_equal(metrics_format(&f->m, &f->st, out), 0);
	fclose(out);
	return buf;
}

/* Whether text (as format gives it) holds line, whole. */
static bool has(const char *text, const char *line)
{
	char want[512];

	snprintf(want, sizeof(want), "\n%s\n", line);
	return strstr(text, want) != NULL;
}

/* A file's whole text after a newline (for has()), in a static buffer. */
static const char *slurp(const char *path)
{
	static char buf[1 << 16];
	const char *text = kit_slurp(NULL, path);

	assert_non_null(text);
	snprintf(buf, sizeof(buf), "\n%s", text);
	return buf;
}

/* Entries of dir other than . and .. */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	assert_non_null(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

KIT_TEST_FX(format_names_every_counter, setup, teardown)
{
	struct fix *f = *state;
	const char *t;

	f->m.failures = 71;
	t = format(f);
	assert_true(has(t, "rqbalance_build_info{version=\"" RQB_VERSION "\"} 1"));
	assert_true(has(t, "rqbalance_sampler{name=\"procfs\"} 1"));
	assert_true(has(t, "rqbalance_tick_interval_seconds 1.500"));
	assert_true(has(t, "rqbalance_tick_now_seconds 30.000"));
	assert_true(has(t, "rqbalance_dry_run 1"));
	assert_true(has(t, "rqbalance_ticks_total 7"));
	assert_true(has(t, "rqbalance_managed_tasks 3"));
	assert_true(has(t, "rqbalance_moves_total 11"));
	assert_true(has(t, "rqbalance_restores_total 5"));
	assert_true(has(t, "rqbalance_latency_tasks 19"));
	assert_true(has(t, "rqbalance_latency_cgroups 23"));
	assert_true(has(t, "rqbalance_latency_processes 29"));
	assert_true(has(t, "rqbalance_latency_applied_total 31"));
	assert_true(has(t, "rqbalance_latency_restored_total 37"));
	assert_true(has(t, "rqbalance_connector_up 1"));
	assert_true(has(t, "rqbalance_events_bpf 0"));
	assert_true(has(t, "rqbalance_connector_events_total 47"));
	assert_true(has(t, "rqbalance_connector_overflows_total 53"));
	assert_true(has(t, "rqbalance_latency_rescans_total 59"));
	assert_true(has(t, "rqbalance_rule_matches_total 61"));
	assert_true(has(t, "rqbalance_metrics_write_failures_total 71"));
	assert_true(has(t, "rqbalance_dropped_total{reason=\"gone\"} 2"));
	assert_true(has(t, "rqbalance_dropped_total{reason=\"left_alone\"} 1"));
	assert_true(has(t, "rqbalance_errors_total{kind=\"affinity_transient\"} 13"));
	assert_true(has(t, "rqbalance_errors_total{kind=\"affinity_permanent\"} 17"));
	assert_true(has(t, "rqbalance_errors_total{kind=\"latency\"} 41"));
	assert_true(has(t, "rqbalance_errors_total{kind=\"sample\"} 67"));
	assert_true(has(t, "rqbalance_refusals_total{kind=\"latency\"} 43"));
	assert_true(has(t, "# TYPE rqbalance_ticks_total counter"));
	assert_true(has(t, "# TYPE rqbalance_managed_tasks gauge"));
}

/* Each sample follows its family's HELP and TYPE, which come once each. */
KIT_TEST_FX(every_sample_has_its_header, setup, teardown)
{
	struct fix *f = *state;
	char *text = strdup(format(f) + 1), *save = NULL, *line;
	char family[128] = "", seen[64][128];
	int nseen = 0, samples = 0;

	assert_non_null(text);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128];

		if (sscanf(line, "# HELP %127s ", name) == 1) {
			for (int i = 0; i < nseen; i++)
				assert_string_not_equal(seen[i], name);
			assert_true(nseen < 64);
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", name);
			snprintf(family, sizeof(family), "%s", name);
			continue;
		}
		if (sscanf(line, "# TYPE %127s ", name) == 1) {
			assert_string_equal(name, family);
			assert_true(strstr(line, " counter") || strstr(line, " gauge"));
			continue;
		}
		assert_true(line[0] != '#');
		assert_int_equal(strncmp(line, family, strlen(family)), 0);
		assert_true(strchr("{ ", line[strlen(family)]) != NULL);
		samples++;
	}
	assert_true(samples >= 30);
	free(text);
}

/* Backslash, double quote and newline in a label value are escaped. */
KIT_TEST_FX(label_escaped, setup, teardown)
{
	struct fix *f = *state;

	f->st.sampler = "a\"b\\c\nd";
	assert_true(has(format(f), "rqbalance_sampler{name=\"a\\\"b\\\\c\\nd\"} 1"));
}

KIT_TEST_FX(per_llc_counts, setup, teardown)
{
	struct fix *f = *state;
	const char *t = format(f);

	assert_true(has(t, "rqbalance_llc_cpus{llc=\"0\",cpus=\"0-1\"} 2"));
	assert_true(has(t, "rqbalance_llc_cpus{llc=\"1\",cpus=\"2-3\"} 2"));
	assert_true(has(t, "rqbalance_llc_runnable{llc=\"0\",cpus=\"0-1\"} 3"));
	assert_true(has(t, "rqbalance_llc_runnable{llc=\"1\",cpus=\"2-3\"} 7"));
}

KIT_TEST_FX(format_reports_a_failed_stream, setup, teardown)
{
	struct fix *f = *state;
	FILE *full = fopen("/dev/full", "w");

	if (!full)
		skip();
	assert_int_equal(metrics_format(&f->m, &f->st, full), -EIO);
	fclose(full);
}

KIT_TEST_FX(writes_whole_file, setup, teardown)
{
	struct fix *f = *state;
	char path[PATH_MAX], want[1 << 16];
	mode_t old = umask(077); /* node_exporter must read it all the same */
	struct stat st;

	snprintf(path, sizeof(path), "%s/rqbalance.prom", f->dir);
	assert_int_equal(metrics_write(&f->m, &f->st, path), 0);
	umask(old);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(st.st_mode & 07777, 0644);
	snprintf(want, sizeof(want), "%s", format(f));
	assert_string_equal(slurp(path), want);
	assert_int_equal(entries(f->dir), 1); /* no temporary file left */
	assert_int_equal(f->m.writes, 1);
	assert_int_equal(f->m.failures, 0);
	assert_string_equal(f->m.path, path);
	/* The next write replaces it. */
	f->st.ticks = 8;
	assert_int_equal(metrics_write(&f->m, &f->st, path), 0);
	assert_true(has(slurp(path), "rqbalance_ticks_total 8"));
	assert_int_equal(entries(f->dir), 1);
	assert_int_equal(f->m.writes, 2);
	/* fini removes it: a stopped daemon reports nothing. */
	metrics_fini(&f->m);
	assert_int_equal(access(path, F_OK), -1);
	assert_string_equal(f->m.path, "");
	metrics_fini(&f->m);
}

/* A new path removes the old file; an empty one writes nothing and removes it too. */
KIT_TEST_FX(path_change_removes_old, setup, teardown)
{
	struct fix *f = *state;
	char a[PATH_MAX], b[PATH_MAX];

	snprintf(a, sizeof(a), "%s/a.prom", f->dir);
	snprintf(b, sizeof(b), "%s/b.prom", f->dir);
	assert_int_equal(metrics_write(&f->m, &f->st, a), 0);
	assert_int_equal(metrics_write(&f->m, &f->st, b), 0);
	assert_int_equal(access(a, F_OK), -1);
	assert_int_equal(access(b, F_OK), 0);
	assert_int_equal(metrics_write(&f->m, &f->st, ""), 0);
	assert_int_equal(access(b, F_OK), -1);
	assert_int_equal(entries(f->dir), 0);
	assert_int_equal(f->m.writes, 2);
}

/* Failures are counted (and shown in the file) until a write works again. */
KIT_TEST_FX(failures_counted, setup, teardown)
{
	struct fix *f = *state;
	char path[PATH_MAX], open_dir[PATH_MAX], name[NAME_MAX + 8];

	snprintf(path, sizeof(path), "%s/missing/x.prom", f->dir);
	assert_int_equal(metrics_write(&f->m, &f->st, path), -ENOENT);
	assert_true(f->m.failing);
	assert_int_equal(f->m.failures, 1);
	assert_string_equal(f->m.path, "");
	/* A directory others may write. */
	snprintf(open_dir, sizeof(open_dir), "%s/open", f->top);
	assert_int_equal(mkdir(open_dir, 0755), 0);
	assert_int_equal(chmod(open_dir, 0777), 0);
	snprintf(path, sizeof(path), "%s/x.prom", open_dir);
	assert_int_equal(metrics_write(&f->m, &f->st, path), -EPERM);
	assert_int_equal(access(path, F_OK), -1);
	assert_int_equal(entries(open_dir), 0);
	assert_int_equal(f->m.failures, 2);
	/* A name too long for the temporary file beside it. */
	memset(name, 'n', NAME_MAX - 5);
	name[NAME_MAX - 5] = '\0';
	snprintf(path, sizeof(path), "%s/%s", f->dir, name);
	assert_int_equal(metrics_write(&f->m, &f->st, path), -ENAMETOOLONG);
	assert_int_equal(f->m.failures, 3);
	assert_int_equal(entries(f->dir), 0);
	/* A relative path. */
	assert_int_equal(metrics_write(&f->m, &f->st, "x.prom"), -EINVAL);
	assert_int_equal(f->m.failures, 4);
	/* Then one works: failing clears, the count stays and is reported. */
	snprintf(path, sizeof(path), "%s/x.prom", f->dir);
	assert_int_equal(metrics_write(&f->m, &f->st, path), 0);
	assert_false(f->m.failing);
	assert_int_equal(f->m.writes, 1);
	assert_true(has(slurp(path), "rqbalance_metrics_write_failures_total 4"));
}

/* What stands at the path is replaced, never followed: a link, or kept: a directory. */
KIT_TEST_FX(planted_names, setup, teardown)
{
	struct fix *f = *state;
	char path[PATH_MAX], target[PATH_MAX];
	struct stat st;

	snprintf(target, sizeof(target), "%s/target", f->top);
	fclose(fopen(target, "w"));
	snprintf(path, sizeof(path), "%s/x.prom", f->dir);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(metrics_write(&f->m, &f->st, path), 0);
	assert_int_equal(lstat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	assert_int_equal(stat(target, &st), 0);
	assert_int_equal(st.st_size, 0);
	assert_int_equal(unlink(path), 0);
	/* A directory there: the write fails and leaves nothing of its own. */
	assert_int_equal(mkdir(path, 0755), 0);
	assert_true(metrics_write(&f->m, &f->st, path) < 0);
	assert_true(f->m.failing);
	assert_int_equal(entries(f->dir), 1);
	/* The directory of the file behind a link: refused. */
	snprintf(target, sizeof(target), "%s/link", f->top);
	assert_int_equal(symlink(f->dir, target), 0);
	snprintf(path, sizeof(path), "%s/link/y.prom", f->top);
	assert_int_equal(metrics_write(&f->m, &f->st, path), -ENOTDIR);
	assert_int_equal(entries(f->dir), 1);
}
