/* Config: defaults from the key table, every value type, every error with its line, dump. */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdbool.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "rqbalance.h"
#include "kit.h"
#include "util/log.h"

#define SHIPPED_CONF "conf/rqbalance.conf"

/* Whatever conf_load must not touch when it fails. */
static void fill_sentinel(struct rqb_conf *c)
{
	memset(c, 0xa5, sizeof(*c));
}

static void assert_sentinel(const struct rqb_conf *c)
{
	struct rqb_conf s;

	fill_sentinel(&s);
	assert_memory_equal(c, &s, sizeof(s));
}

/*
 * A stream on buf. Fixed buffers rather than open_memstream: a failed assertion
 * jumps out of the test, and must not leave a leak for the sanitizer build to report.
 */
static FILE *open_buf(char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");

	assert_non_null(f);
	/* glibc ends the text only when something is written. */
	buf[0] = '\0';
	return f;
}

static void close_buf(FILE *f, const char *buf, size_t len)
{
	fclose(f);
	assert_true(strlen(buf) < len - 1);
}

/* Loads text as "t.conf"; what it writes to err lands in msg. */
static int load(const char *text, struct rqb_conf *c, char *msg, size_t len)
{
	FILE *err = open_buf(msg, len);
	int r = conf_load_string("t.conf", text, err, c);

	close_buf(err, msg, len);
	return r;
}

static void expect_ok(const char *text, struct rqb_conf *c)
{
	char msg[1024];

	assert_int_equal(load(text, c, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
}

/* text must be refused with exactly msg, and the output left alone. */
static void expect_error(const char *text, const char *msg)
{
	struct rqb_conf c;
	char got[1024];

	fill_sentinel(&c);
	assert_int_equal(load(text, &c, got, sizeof(got)), -EINVAL);
	assert_string_equal(got, msg);
	assert_sentinel(&c);
}

static void dump(const struct rqb_conf *c, char *buf, size_t len)
{
	FILE *f = open_buf(buf, len);

	conf_dump(c, f);
	close_buf(f, buf, len);
}

static const void *field(const struct rqb_conf *c, const struct conf_key *k)
{
	return (const char *)c + k->offset;
}

static void list_join(const struct conf_list *l, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned i = 0; i < l->n && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? " " : "", l->v[i]);
}

static bool bool_word(const char *s)
{
	return strcasecmp(s, "yes") == 0 || strcasecmp(s, "true") == 0 ||
	       strcasecmp(s, "on") == 0 || strcmp(s, "1") == 0;
}

/* Whether field k of c holds what the table's default text says. */
static bool holds_default(const struct rqb_conf *c, const struct conf_key *k)
{
	const void *f = field(c, k);
	char buf[CONF_MAX_LIST * CONF_MAX_STR];

	switch (k->type) {
	case CONF_INT:
		return *(const uint32_t *)f == strtoull(k->def, NULL, 10) &&
		       k->min <= atoll(k->def) && atoll(k->def) <= k->max;
	case CONF_BOOL:
		return *(const bool *)f == bool_word(k->def);
	case CONF_ENUM:
		return strcmp(k->names[*(const int *)f], k->def) == 0;
	case CONF_STR:
		return strcmp(f, k->def) == 0;
	case CONF_LOGLEVEL:
		return strcmp(log_level_name(*(const int *)f), k->def) == 0;
	case CONF_LIST:
		list_join(f, buf, sizeof(buf));
		return strcmp(buf, k->def) == 0;
	case CONF_NICE:
		return k->def && *(const int *)f == atoi(k->def); /* rules' have no default */
	case CONF_UID:
		break; /* a rule key: a rule has no defaults */
	}
	return false;
}

static bool list_equal(const struct conf_list *a, const struct conf_list *b)
{
	if (a->n != b->n)
		return false;
	for (unsigned i = 0; i < a->n; i++)
		if (strcmp(a->v[i], b->v[i]) != 0)
			return false;
	return true;
}

static bool field_equal(const struct rqb_conf *a, const struct rqb_conf *b,
			const struct conf_key *k)
{
	const void *fa = field(a, k), *fb = field(b, k);

	switch (k->type) {
	case CONF_INT:
		return *(const uint32_t *)fa == *(const uint32_t *)fb;
	case CONF_BOOL:
		return *(const bool *)fa == *(const bool *)fb;
	case CONF_ENUM:
	case CONF_LOGLEVEL:
	case CONF_NICE:
		return *(const int *)fa == *(const int *)fb;
	case CONF_UID:
		return *(const uid_t *)fa == *(const uid_t *)fb;
	case CONF_STR:
		return strcmp(fa, fb) == 0;
	case CONF_LIST:
		return list_equal(fa, fb);
	}
	return false;
}

/* Field by field through the table: padding and bytes past a string do not count. */
static void assert_conf_equal(const struct rqb_conf *a, const struct rqb_conf *b)
{
	for (size_t i = 0; i < conf_nkeys; i++)
		if (!field_equal(a, b, &conf_keys[i]))
			fail_msg("[%s] %s differs", conf_keys[i].section, conf_keys[i].key);
}

KIT_TEST(defaults_match_table)
{
	struct rqb_conf c;

	fill_sentinel(&c);
	conf_defaults(&c);
	for (size_t i = 0; i < conf_nkeys; i++)
		if (!holds_default(&c, &conf_keys[i]))
			fail_msg("[%s] %s is not its default \"%s\"", conf_keys[i].section,
				 conf_keys[i].key, conf_keys[i].def);
	/* A few by name, so that a table and a struct that drift together still show. */
	assert_int_equal(c.interval_ms, 100);
	assert_int_equal(c.sampler, CONF_SAMPLER_AUTO);
	assert_int_equal(c.latency_nice, -10);
	assert_int_equal(c.min_llc_cores, 2);
	assert_string_equal(c.journal_dir, RQB_RUNDIR);
	assert_false(c.dry_run);
	assert_int_equal(c.log_level, LOG_INFO);
	assert_int_equal(c.imbalance_pct, 117);
	assert_int_equal(c.exclude_comms.n, 0);
}

KIT_TEST(empty_file_gives_defaults)
{
	struct rqb_conf c, d;

	conf_defaults(&d);
	fill_sentinel(&c);
	expect_ok("", &c);
	assert_conf_equal(&c, &d);
	expect_ok("# only a comment\n\n; and another\n[daemon]\n", &c);
	assert_conf_equal(&c, &d);
}

KIT_TEST(valid_file_sets_every_type)
{
	static const char text[] = "# a comment\n"
				   "[daemon]\n"
				   "interval_ms = 250\n"
				   "sampler = replay\n"
				   "replay_file = /var/lib/rqb/run 1.snap\n"
				   "dry_run = yes\n"
				   "log_level = debug\n"
				   "\n"
				   "[exclude]\n"
				   "comms = ssh* kworker/*\n"
				   "\tsystemd*\n"
				   "comms = rcu_*\n"
				   "cgroups = /system.slice\n"
				   "[balance]\n"
				   "max_pin_ms = 86400000\n";
	struct rqb_conf c, d;

	conf_defaults(&d);
	expect_ok(text, &c);
	assert_int_equal(c.interval_ms, 250);
	assert_int_equal(c.sampler, CONF_SAMPLER_REPLAY);
	assert_string_equal(c.replay_file, "/var/lib/rqb/run 1.snap");
	assert_true(c.dry_run);
	assert_int_equal(c.log_level, LOG_DEBUG);
	assert_int_equal(c.max_pin_ms, 86400000);
	/* The continuation line and the second comms line both append. */
	assert_int_equal(c.exclude_comms.n, 4);
	assert_string_equal(c.exclude_comms.v[0], "ssh*");
	assert_string_equal(c.exclude_comms.v[1], "kworker/*");
	assert_string_equal(c.exclude_comms.v[2], "systemd*");
	assert_string_equal(c.exclude_comms.v[3], "rcu_*");
	assert_int_equal(c.exclude_cgroups.n, 1);
	assert_string_equal(c.exclude_cgroups.v[0], "/system.slice");
	/* Keys the file does not name keep their defaults. */
	assert_int_equal(c.imbalance_pct, d.imbalance_pct);
	assert_string_equal(c.journal_dir, d.journal_dir);
	assert_int_equal(c.proc_max_tracked, d.proc_max_tracked);
}

KIT_TEST(bool_spellings)
{
	static const char *const yes[] = { "yes", "true", "on", "1", "YES", "True" };
	static const char *const no[] = { "no", "false", "off", "0", "NO", "Off" };
	char text[64];
	struct rqb_conf c;

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		snprintf(text, sizeof(text), "[daemon]\ndry_run = %s\n", yes[i]);
		expect_ok(text, &c);
		assert_true(c.dry_run);
		snprintf(text, sizeof(text), "[daemon]\ndry_run = %s\n", no[i]);
		expect_ok(text, &c);
		assert_false(c.dry_run);
	}
}

KIT_TEST(int_range_ends_accepted)
{
	struct rqb_conf c;

	expect_ok("[daemon]\ninterval_ms = 10\n[balance]\nimbalance_pct = 1000\n", &c);
	assert_int_equal(c.interval_ms, 10);
	assert_int_equal(c.imbalance_pct, 1000);
}

KIT_TEST(unknown_key)
{
	expect_error("[daemon]\ninterval = 100\n", "t.conf:2: [daemon] interval: unknown key\n");
}

KIT_TEST(unknown_section)
{
	expect_error("[daemon]\n\n[deamon]\ninterval_ms = 100\n",
		     "t.conf:4: [deamon] interval_ms: unknown section\n");
}

KIT_TEST(int_out_of_range)
{
	expect_error("[daemon]\ninterval_ms = 9\n",
		     "t.conf:2: [daemon] interval_ms: 9 is out of range 10..60000\n");
	expect_error("[daemon]\n# x\ninterval_ms = 60001\n",
		     "t.conf:3: [daemon] interval_ms: 60001 is out of range 10..60000\n");
	expect_error("[proc]\nmax_tracked = -1\n",
		     "t.conf:2: [proc] max_tracked: -1 is out of range 16..65536\n");
}

KIT_TEST(int_not_a_number)
{
	static const char *const bad[] = { "abc", "10ms", "1.5", "0x10", "99999999999999999999",
					   "" };
	char text[64];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		snprintf(text, sizeof(text), "[balance]\nmax_moves_per_tick = %s\n", bad[i]);
		expect_error(text, "t.conf:2: [balance] max_moves_per_tick: not a whole number\n");
	}
}

KIT_TEST(bad_bool)
{
	expect_error("[daemon]\ndry_run = maybe\n",
		     "t.conf:2: [daemon] dry_run: not a boolean (yes or no)\n");
	expect_error("[daemon]\ndry_run =\n",
		     "t.conf:2: [daemon] dry_run: not a boolean (yes or no)\n");
}

KIT_TEST(bad_enum)
{
	expect_error("[daemon]\nsampler = ebpf\n",
		     "t.conf:2: [daemon] sampler: must be one of: auto bpf proc replay\n");
	/* Enum names are exact, unlike booleans. */
	expect_error("[daemon]\nsampler = Proc\n",
		     "t.conf:2: [daemon] sampler: must be one of: auto bpf proc replay\n");
}

KIT_TEST(bad_log_level)
{
	static const char msg[] =
		"t.conf:2: [daemon] log_level: must be one of: err warning notice info debug\n";

	expect_error("[daemon]\nlog_level = verbose\n", msg);
	/* syslog's numbers are not names. */
	expect_error("[daemon]\nlog_level = 7\n", msg);
	expect_error("[daemon]\nlog_level = emerg\n", msg);
}

KIT_TEST(key_set_twice)
{
	expect_error("[daemon]\n\ndry_run = yes\n# again\ndry_run = no\n",
		     "t.conf:5: [daemon] dry_run: set twice (first on line 3)\n");
	/* Also across two headers of one section. */
	expect_error("[proc]\nrescan_ms = 200\n[daemon]\n[proc]\nrescan_ms = 300\n",
		     "t.conf:5: [proc] rescan_ms: set twice (first on line 2)\n");
}

KIT_TEST(relative_journal_dir)
{
	expect_error("[daemon]\njournal_dir = run/rqbalance\n",
		     "t.conf:2: [daemon] journal_dir: must be an absolute path\n");
	expect_error("[daemon]\njournal_dir =\n",
		     "t.conf:2: [daemon] journal_dir: must be an absolute path\n");
}

/* The metrics file is off when empty; a relative path would follow the working directory. */
KIT_TEST(metrics_path)
{
	struct rqb_conf c;

	expect_error("[metrics]\npath = rqbalance.prom\n",
		     "t.conf:2: [metrics] path: must be an absolute path, or empty\n");
	expect_error("[metrics]\ninterval_ms = 999\n",
		     "t.conf:2: [metrics] interval_ms: 999 is out of range 1000..3600000\n");
	assert_int_equal(conf_load_string("t.conf", "[metrics]\npath =\n", NULL, &c), 0);
	assert_string_equal(c.metrics_path, "");
	assert_int_equal(conf_load_string("t.conf", "[metrics]\npath = /run/m.prom\n", NULL, &c), 0);
	assert_string_equal(c.metrics_path, "/run/m.prom");
	assert_int_equal(c.metrics_interval_ms, 10000);
}

KIT_TEST(too_many_list_entries)
{
	char text[2048], msg[128];
	size_t off = (size_t)snprintf(text, sizeof(text), "[exclude]\ncomms =");

	/* Five entries a line from line 2 on: the one past the limit is on the last line. */
	for (int i = 0; i < CONF_MAX_LIST + 1; i++) {
		if (i && i % 5 == 0)
			off += (size_t)snprintf(text + off, sizeof(text) - off, "\n ");
		off += (size_t)snprintf(text + off, sizeof(text) - off, " c%d", i);
	}
	snprintf(text + off, sizeof(text) - off, "\n");
	snprintf(msg, sizeof(msg), "t.conf:%d: [exclude] comms: too many list entries\n",
		 2 + CONF_MAX_LIST / 5);
	expect_error(text, msg);
}

KIT_TEST(line_too_long)
{
	char text[1200];
	int n = snprintf(text, sizeof(text), "[daemon]\ntopology = /");

	/* Longer than inih's line buffer (200 unless built otherwise). */
	memset(text + n, 'x', 1000);
	/* The line after it is still read, and counted. */
	snprintf(text + n + 1000, sizeof(text) - (size_t)n - 1000, "\ninterval_ms = 1\n");
	expect_error(text, "t.conf:2: line: too long\n"
			   "t.conf:3: [daemon] interval_ms: 1 is out of range 10..60000\n");
}

KIT_TEST(syntax_error)
{
	expect_error("[daemon]\ninterval_ms = 100\ndry_run\n",
		     "t.conf:3: line: syntax error (expected [section] or key = value)\n");
	expect_error("[daemon]\ninterval_ms = 100\n[balance\n",
		     "t.conf:3: line: syntax error (expected [section] or key = value)\n");
}

KIT_TEST(several_errors_all_reported)
{
	expect_error("[daemon]\n"
		     "interval = 100\n"
		     "dry_run = perhaps\n"
		     "# fine\n"
		     "log_level = info\n"
		     "journal_dir = tmp\n"
		     "[balance]\n"
		     "imbalance_pct = 100\n"
		     "no equals sign here\n",
		     "t.conf:2: [daemon] interval: unknown key\n"
		     "t.conf:3: [daemon] dry_run: not a boolean (yes or no)\n"
		     "t.conf:6: [daemon] journal_dir: must be an absolute path\n"
		     "t.conf:8: [balance] imbalance_pct: 100 is out of range 101..1000\n"
		     "t.conf:9: line: syntax error (expected [section] or key = value)\n");
}

/* A second bad line must not hide behind the first: the user fixes all in one go. */
KIT_TEST(several_syntax_errors_all_reported)
{
	expect_error("[daemon]\n"
		     "dry_run\n"
		     "interval_ms = 100\n"
		     "[balance\n",
		     "t.conf:2: line: syntax error (expected [section] or key = value)\n"
		     "t.conf:4: line: syntax error (expected [section] or key = value)\n");
}

/* Writes text to a fresh file under /tmp; its path goes into path. */
static void write_temp(char *path, size_t len, const char *text)
{
	int fd;

	snprintf(path, len, "/tmp/rqb-test-conf.XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

KIT_TEST(file_errors_name_the_file)
{
	struct rqb_conf c;
	char path[64], expect[256], msg[256];
	FILE *err;
	int r;

	write_temp(path, sizeof(path), "[balance]\n\nmax_moves_per_tick = 0\n");
	fill_sentinel(&c);
	err = open_buf(msg, sizeof(msg));
	r = conf_load(path, err, &c);
	close_buf(err, msg, sizeof(msg));
	unlink(path);
	assert_int_equal(r, -EINVAL);
	snprintf(expect, sizeof(expect),
		 "%s:3: [balance] max_moves_per_tick: 0 is out of range 1..1024\n", path);
	assert_string_equal(msg, expect);
	assert_sentinel(&c);
}

KIT_TEST(file_loads)
{
	struct rqb_conf c;
	char path[64];
	int r;

	write_temp(path, sizeof(path), "[proc]\nmax_tracked = 16\n");
	r = conf_load(path, NULL, &c);
	unlink(path);
	assert_int_equal(r, 0);
	assert_int_equal(c.proc_max_tracked, 16);
}

KIT_TEST(missing_file)
{
	static const char path[] = "/nonexistent/rqbalance-test/rqbalance.conf";
	struct rqb_conf c;
	char msg[256];
	FILE *err = open_buf(msg, sizeof(msg));

	fill_sentinel(&c);
	assert_int_equal(conf_load(path, err, &c), -ENOENT);
	close_buf(err, msg, sizeof(msg));
	assert_string_equal(msg, "/nonexistent/rqbalance-test/rqbalance.conf: cannot open: "
				 "No such file or directory\n");
	assert_sentinel(&c);
	/* err may be NULL. */
	assert_int_equal(conf_load(path, NULL, &c), -ENOENT);
	assert_sentinel(&c);
}

/* Dumps c, loads the dump, and checks the result is c again, dump for dump. */
static void dump_round_trip(const struct rqb_conf *c)
{
	static char text[1 << 16], again[1 << 16];
	struct rqb_conf back;

	dump(c, text, sizeof(text));
	expect_ok(text, &back);
	assert_conf_equal(&back, c);
	dump(&back, again, sizeof(again));
	assert_string_equal(again, text);
	conf_free(&back);
}

KIT_TEST(dump_of_defaults_parses_back)
{
	struct rqb_conf c;

	conf_defaults(&c);
	dump_round_trip(&c);
}

KIT_TEST(dump_of_changed_values_parses_back)
{
	struct rqb_conf c;

	expect_ok("[daemon]\n"
		  "interval_ms = 60000\n"
		  "sampler = replay\n"
		  "replay_file = /srv/a b/c.snap\n"
		  "journal_dir = /var/lib/rqbalance\n"
		  "topology = /etc/rqbalance/topo.xml\n"
		  "dry_run = on\n"
		  "log_level = err\n"
		  "[balance]\n"
		  "imbalance_pct = 101\n"
		  "max_moves_per_tick = 1024\n"
		  "min_residency_ms = 0\n"
		  "max_pin_ms = 100\n"
		  "[exclude]\n"
		  "comms = a* b?c [xy]z\n"
		  "cgroups = /user.slice /system.slice/x.service\n"
		  "[proc]\n"
		  "rescan_ms = 600000\n"
		  "max_tracked = 65536\n",
		  &c);
	dump_round_trip(&c);
}

KIT_TEST(dump_lists_every_key_in_its_section)
{
	static char text[1 << 16];
	struct rqb_conf c;
	char line[512];

	conf_defaults(&c);
	dump(&c, text, sizeof(text));
	for (size_t i = 0; i < conf_nkeys; i++) {
		const struct conf_key *k = &conf_keys[i];
		char header[64];
		const char *h, *l;

		snprintf(header, sizeof(header), "[%s]\n", k->section);
		snprintf(line, sizeof(line), "\n%s = %s\n", k->key, k->def);
		h = strstr(text, header);
		l = strstr(text, line);
		if (!h || !l || l < h)
			fail_msg("dump lacks \"%s = %s\" under [%s]", k->key, k->def, k->section);
	}
}

KIT_TEST(set_one_key)
{
	struct rqb_conf c;
	const char *reason = NULL;

	conf_defaults(&c);
	assert_int_equal(conf_set(&c, "balance", "imbalance_pct", "150", &reason), 0);
	assert_int_equal(c.imbalance_pct, 150);
	assert_int_equal(conf_set(&c, "balance", "nope", "1", &reason), -EINVAL);
	assert_string_equal(reason, "unknown key");
	assert_int_equal(conf_set(&c, "nope", "imbalance_pct", "1", &reason), -EINVAL);
	assert_string_equal(reason, "unknown section");
	assert_int_equal(conf_set(&c, "daemon", "dry_run", "sure", &reason), -EINVAL);
	assert_string_equal(reason, "not a boolean (yes or no)");
	assert_int_equal(c.imbalance_pct, 150);
}

/* Longer than a file line can be, so only conf_set reaches these checks. */
KIT_TEST(set_refuses_long_values)
{
	char value[CONF_MAX_STR + 2];
	const char *reason = NULL;
	struct rqb_conf c, d;

	conf_defaults(&c);
	conf_defaults(&d);
	value[0] = '/';
	memset(value + 1, 'x', CONF_MAX_STR);
	value[CONF_MAX_STR + 1] = '\0';
	assert_int_equal(conf_set(&c, "daemon", "topology", value, &reason), -EINVAL);
	assert_string_equal(reason, "too long");
	assert_int_equal(conf_set(&c, "exclude", "cgroups", value, &reason), -EINVAL);
	assert_string_equal(reason, "list entry too long");
	assert_conf_equal(&c, &d);
	/* One byte less fits. */
	value[CONF_MAX_STR - 1] = '\0';
	assert_int_equal(conf_set(&c, "daemon", "topology", value, &reason), 0);
	assert_string_equal(c.topology, value);
}

/* ---- [rule NAME] sections and rules_dir ---- */

KIT_TEST(rule_sections)
{
	struct rqb_conf c;

	expect_ok("[daemon]\n"
		  "rules_dir =\n"
		  "[rule db]\n"
		  "latency_nice = -10\n"
		  "exe = /usr/sbin/mysqld\n"
		  "uid = 0\n"
		  "[balance]\n"
		  "imbalance_pct = 150\n"
		  "[rule batch]\n"
		  "latency_nice = 15\n"
		  "cgroup = /batch.slice\n",
		  &c);
	assert_int_equal(c.rules.n, 2);
	assert_string_equal(c.rules.r[0].name, "db");
	assert_int_equal(c.rules.r[0].latency_nice, -10);
	assert_string_equal(c.rules.r[0].file, "t.conf");
	assert_int_equal(c.rules.r[0].line, 4);
	assert_string_equal(c.rules.r[1].name, "batch");
	assert_string_equal(c.rules.r[1].cgroup, "/batch.slice");
	assert_int_equal(c.imbalance_pct, 150);
	/* A config that loads matches through its index. */
	assert_non_null(c.rules.ix);
	dump_round_trip(&c);
	conf_free(&c);
}

KIT_TEST(rule_errors)
{
	expect_error("[rule db]\nlatency_nice = 30\nexe = /usr/sbin/mysqld\n",
		     "t.conf:2: [rule db] latency_nice: out of range -20…19\n");
	expect_error("[rule db]\nnice = 3\n", "t.conf:2: [rule db] nice: unknown key\n");
	expect_error("[rule]\ncomm = x\n",
		     "t.conf:2: [rule] comm: a rule needs a name: [rule NAME]\n");
	expect_error("[rule db]\nlatency_nice = 1\ncomm = a\ncomm = b\n",
		     "t.conf:4: [rule db] comm: set twice in this rule\n");
	/* The checks of a whole rule come only when every line was fine. */
	expect_error("[rule db]\n\nlatency_nice = -5\ncomm = mysqld\n",
		     "t.conf:3: [rule db] latency_nice: a negative value needs exe or uid, since "
		     "any process can set its own comm and cmdline (or say spoofable = yes)\n");
	expect_error("[rule all]\nlatency_nice = 5\n",
		     "t.conf:2: [rule all]: no match key (comm, exe, cmdline, cgroup or uid): it "
		     "would match every process\n");
	expect_error("[rule half]\ncomm = x\n",
		     "t.conf:2: [rule half] latency_nice: missing: every rule needs a value\n");
}

/* A rule section with nothing in it would be dropped without a word: it is an error. */
KIT_TEST(empty_rule_section)
{
	static const char msg[] = ": no keys: a rule needs latency_nice and a match key\n";
	char want[256];

	snprintf(want, sizeof(want), "t.conf:1: [rule db]%s", msg);
	expect_error("[rule db]\n# latency_nice = 5\n[daemon]\ndry_run = no\n", want);
	snprintf(want, sizeof(want), "t.conf:3: [rule last]%s", msg);
	expect_error("[daemon]\ndry_run = no\n[rule last]\n", want);
}

/* inih cuts a section name at 49 bytes, which would merge two long rule names. */
KIT_TEST(long_section_name)
{
	struct rqb_conf c;
	char text[256];

	snprintf(text, sizeof(text), "[rule %045d]\n", 7);
	expect_error(text, "t.conf:1: line: section name too long (at most 49 bytes)\n");
	snprintf(text, sizeof(text), "[rule %044d]\nlatency_nice = 1\ncomm = x\n", 7);
	expect_ok(text, &c);
	assert_int_equal(strlen(c.rules.r[0].name), 44);
	conf_free(&c);
}

KIT_TEST(rules_dir_must_be_absolute)
{
	struct rqb_conf c;

	expect_error("[daemon]\nrules_dir = rules.d\n",
		     "t.conf:2: [daemon] rules_dir: must be an absolute path, or empty\n");
	expect_ok("[daemon]\nrules_dir =\n", &c);
	assert_string_equal(c.rules_dir, "");
}

/* A temporary rules_dir, and the main file that names it. */
struct dropins {
	char dir[64];
	char main[PATH_MAX];
};

static int dropins_setup(void **state)
{
	struct dropins *d = calloc(1, sizeof(*d));

	if (!d)
		return -1;
	kit_tmp(d->dir, sizeof(d->dir), "test-rules");
	/* The main file lives elsewhere: the directory holds only what it reads. */
	snprintf(d->main, sizeof(d->main), "%s.conf", d->dir);
	*state = d;
	return 0;
}

static int dropins_teardown(void **state)
{
	struct dropins *d = *state;

	kit_rm(d->dir);
	unlink(d->main);
	free(d);
	return 0;
}

/* Writes the main file: rules_dir = the directory, then body. */
static void put_main(const struct dropins *d, const char *body)
{
	FILE *f = fopen(d->main, "w");

	assert_non_null(f);
	fprintf(f, "[daemon]\nrules_dir = %s\n%s", d->dir, body);
	fclose(f);
}

static int load_file(const char *path, struct rqb_conf *c, char *msg, size_t len)
{
	FILE *err = open_buf(msg, len);
	int r = conf_load(path, err, c);

	close_buf(err, msg, len);
	return r;
}

KIT_TEST_FX(rules_dir_two_dropins, dropins_setup, dropins_teardown)
{
	struct dropins *d = *state;
	char msg[1024], file[PATH_MAX];
	struct rqb_conf c;

	put_main(d, "[rule first]\nlatency_nice = 1\ncomm = a\n"
		    "[rule second]\nlatency_nice = 2\ncomm = b\n");
	/* Written out of order: they are read in byte order of name. */
	kit_put(d->dir, "20-b.conf", "[rule third]\nlatency_nice = 4\ncomm = c2\n"
				      "\n[rule fourth]\nlatency_nice = 5\nuid = 0\n");
	kit_put(d->dir, "10-a.conf",
		 "# replaces second, and adds third\n"
		 "[rule second]\nlatency_nice = -3\nexe = /usr/bin/b\nuid = 0\n"
		 "[rule third]\nlatency_nice = 3\ncomm = c\n");
	/* Not rule files: no .conf ending, hidden, an editor's backup. */
	kit_put(d->dir, "README", "not an INI file\n");
	kit_put(d->dir, ".10-a.conf.swp.conf", "junk\n");
	kit_put(d->dir, "10-a.conf~", "junk\n");
	assert_int_equal(load_file(d->main, &c, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	assert_int_equal(c.rules.n, 4);
	assert_string_equal(c.rules.r[0].name, "first");
	assert_string_equal(c.rules.r[0].file, d->main);
	assert_string_equal(c.rules.r[1].name, "second");
	assert_int_equal(c.rules.r[1].latency_nice, -3);
	assert_string_equal(c.rules.r[1].comm, "");
	snprintf(file, sizeof(file), "%s/10-a.conf", d->dir);
	assert_string_equal(c.rules.r[1].file, file);
	assert_int_equal(c.rules.r[1].line, 3);
	assert_string_equal(c.rules.r[2].name, "third");
	assert_string_equal(c.rules.r[2].comm, "c2");
	assert_string_equal(c.rules.r[3].name, "fourth");
	snprintf(file, sizeof(file), "%s/20-b.conf", d->dir);
	assert_string_equal(c.rules.r[3].file, file);
	assert_int_equal(c.rules.r[3].line, 6);
	dump_round_trip(&c);
	conf_free(&c);
}

KIT_TEST_FX(rules_dir_errors, dropins_setup, dropins_teardown)
{
	struct dropins *d = *state;
	char msg[2048], want[2048], path[PATH_MAX];
	struct rqb_conf c;

	put_main(d, "");
	kit_put(d->dir, "30-c.conf", "[rule ok]\nlatency_nice = 1\ncomm = x\n"
				      "[daemon]\ninterval_ms = 100\n[balance]\n");
	kit_put(d->dir, "31-nosection.conf", "latency_nice = 1\n");
	kit_put(d->dir, "35-syntax.conf", "[rule s]\nlatency_nice = 1\ncomm x\n");
	snprintf(path, sizeof(path), "%s/40-d.conf", d->dir);
	assert_int_equal(mkdir(path, 0755), 0);
	/* A FIFO with no writer: refused at once, never waited on. */
	snprintf(path, sizeof(path), "%s/45-fifo.conf", d->dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	snprintf(path, sizeof(path), "%s/50-e.conf", d->dir);
	assert_int_equal(symlink("/nonexistent/rqb-test.conf", path), 0);
	fill_sentinel(&c);
	assert_int_equal(load_file(d->main, &c, msg, sizeof(msg)), -EINVAL);
	snprintf(want, sizeof(want),
		 "%1$s/30-c.conf:4: [daemon]: a rules_dir file holds only [rule NAME] sections\n"
		 "%1$s/30-c.conf:6: [balance]: a rules_dir file holds only [rule NAME] sections\n"
		 "%1$s/31-nosection.conf:1: [] latency_nice: a rules_dir file holds only "
		 "[rule NAME] sections\n"
		 "%1$s/35-syntax.conf:3: line: syntax error (expected [section] or key = value)\n"
		 "%1$s/40-d.conf: cannot read: not a regular file\n"
		 "%1$s/45-fifo.conf: cannot read: not a regular file\n"
		 "%1$s/50-e.conf: cannot open: No such file or directory\n",
		 d->dir);
	assert_string_equal(msg, want);
	assert_sentinel(&c);
}

KIT_TEST_FX(rules_dir_missing, dropins_setup, dropins_teardown)
{
	struct dropins *d = *state;
	char msg[256];
	struct rqb_conf c;

	put_main(d, "[rule only]\nlatency_nice = 2\ncomm = x\n");
	assert_int_equal(rmdir(d->dir), 0);
	assert_int_equal(load_file(d->main, &c, msg, sizeof(msg)), 0);
	assert_string_equal(msg, "");
	assert_int_equal(c.rules.n, 1);
	assert_int_equal(mkdir(d->dir, 0700), 0);
	conf_free(&c);
}

KIT_TEST(sampler_names)
{
	assert_string_equal(conf_sampler_name(CONF_SAMPLER_AUTO), "auto");
	assert_string_equal(conf_sampler_name(CONF_SAMPLER_BPF), "bpf");
	assert_string_equal(conf_sampler_name(CONF_SAMPLER_PROC), "proc");
	assert_string_equal(conf_sampler_name(CONF_SAMPLER_REPLAY), "replay");
	assert_string_equal(conf_sampler_name(4), "?");
	assert_string_equal(conf_sampler_name(-1), "?");
}

/* "[section]" or "# [section]" on a line of its own: the section name, else NULL. */
static const char *section_header(const char *line, char *buf, size_t len)
{
	size_t n;

	if (strncmp(line, "# ", 2) == 0)
		line += 2;
	n = strlen(line);
	if (line[0] != '[' || n < 3 || line[n - 1] != ']' || n - 2 >= len)
		return NULL;
	memcpy(buf, line + 1, n - 2);
	buf[n - 2] = '\0';
	return buf;
}

/* Whether line is key k commented out at its default. */
static bool commented_default(const char *line, const struct conf_key *k)
{
	char want[512];

	snprintf(want, sizeof(want), "# %s = %s", k->key, k->def);
	if (strcmp(line, want) == 0)
		return true;
	if (k->def[0])
		return false;
	snprintf(want, sizeof(want), "# %s =", k->key);
	return strcmp(line, want) == 0;
}

KIT_TEST(shipped_conf_lists_every_key)
{
	bool found[64] = { false };
	char line[1024], section[64] = "";
	struct rqb_conf c;
	FILE *f;

	assert_int_equal(conf_load(SHIPPED_CONF, stderr, &c), 0);
	assert_true(conf_nkeys <= ARRAY_SIZE(found));
	f = fopen(SHIPPED_CONF, "re");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (section_header(line, section, sizeof(section)))
			continue;
		for (size_t i = 0; i < conf_nkeys; i++)
			if (strcmp(conf_keys[i].section, section) == 0 &&
			    commented_default(line, &conf_keys[i]))
				found[i] = true;
	}
	fclose(f);
	for (size_t i = 0; i < conf_nkeys; i++)
		if (!found[i])
			fail_msg(SHIPPED_CONF " lacks \"# %s = %s\" under [%s]", conf_keys[i].key,
				 conf_keys[i].def, conf_keys[i].section);
}

/* rqbalance.conf(5) has an entry ".It Cm KEY ..." for every key of the table. */
KIT_TEST(man_page_documents_every_key)
{
	char line[1024];
	bool found[64] = { false }, restart[64] = { false };
	int cur = -1; /* the key whose entry the lines belong to */
	FILE *f = fopen("man/rqbalance.conf.5", "re");

	assert_non_null(f);
	assert_true(conf_nkeys <= ARRAY_SIZE(found));
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (strncmp(line, ".It ", 4) == 0 || strncmp(line, ".Ss ", 4) == 0)
			cur = -1;
		for (size_t i = 0; i < conf_nkeys; i++)
			if (strncmp(line, ".It Cm ", 7) == 0 &&
			    strncmp(line + 7, conf_keys[i].key, strlen(conf_keys[i].key)) == 0 &&
			    strchr(" ", line[7 + strlen(conf_keys[i].key)])) {
				found[i] = true;
				cur = (int)i;
			}
		if (cur >= 0 && strstr(line, "Takes a restart"))
			restart[cur] = true;
	}
	fclose(f);
	for (size_t i = 0; i < conf_nkeys; i++) {
		if (!found[i])
			fail_msg("man/rqbalance.conf.5 lacks \".It Cm %s ...\"", conf_keys[i].key);
		/* The page says "Takes a restart" for exactly the keys a reload keeps. */
		if (restart[i] != conf_keys[i].restart)
			fail_msg("man/rqbalance.conf.5: %s %s say it takes a restart", conf_keys[i].key,
				 conf_keys[i].restart ? "does not" : "should not");
	}
}
