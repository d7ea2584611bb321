/* Config: defaults from the key table, every value type, every error with its line, dump. */
#include <errno.h>
#include <stdbool.h>
#include <strings.h>
#include <unistd.h>

#include "unit.h"
#include "log.h"
#include "rqbalance.h"

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
		return *(const int *)fa == *(const int *)fb;
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

static void defaults_match_table(void **state)
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
	assert_int_equal(c.sampler, CONF_SAMPLER_PROC);
	assert_string_equal(c.journal_dir, RQB_RUNDIR);
	assert_false(c.dry_run);
	assert_int_equal(c.log_level, LOG_INFO);
	assert_int_equal(c.imbalance_pct, 117);
	assert_int_equal(c.exclude_comms.n, 0);
}

static void empty_file_gives_defaults(void **state)
{
	struct rqb_conf c, d;

	conf_defaults(&d);
	fill_sentinel(&c);
	expect_ok("", &c);
	assert_conf_equal(&c, &d);
	expect_ok("# only a comment\n\n; and another\n[daemon]\n", &c);
	assert_conf_equal(&c, &d);
}

static void valid_file_sets_every_type(void **state)
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

static void bool_spellings(void **state)
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

static void int_range_ends_accepted(void **state)
{
	struct rqb_conf c;

	expect_ok("[daemon]\ninterval_ms = 10\n[balance]\nimbalance_pct = 1000\n", &c);
	assert_int_equal(c.interval_ms, 10);
	assert_int_equal(c.imbalance_pct, 1000);
}

static void unknown_key(void **state)
{
	expect_error("[daemon]\ninterval = 100\n", "t.conf:2: [daemon] interval: unknown key\n");
}

static void unknown_section(void **state)
{
	expect_error("[daemon]\n\n[deamon]\ninterval_ms = 100\n",
		     "t.conf:4: [deamon] interval_ms: unknown section\n");
}

static void int_out_of_range(void **state)
{
	expect_error("[daemon]\ninterval_ms = 9\n",
		     "t.conf:2: [daemon] interval_ms: 9 is out of range 10..60000\n");
	expect_error("[daemon]\n# x\ninterval_ms = 60001\n",
		     "t.conf:3: [daemon] interval_ms: 60001 is out of range 10..60000\n");
	expect_error("[proc]\nmax_tracked = -1\n",
		     "t.conf:2: [proc] max_tracked: -1 is out of range 16..65536\n");
}

static void int_not_a_number(void **state)
{
	static const char *const bad[] = { "abc", "10ms", "1.5", "0x10", "99999999999999999999",
					   "" };
	char text[64];

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		snprintf(text, sizeof(text), "[balance]\nmax_moves_per_tick = %s\n", bad[i]);
		expect_error(text, "t.conf:2: [balance] max_moves_per_tick: not a whole number\n");
	}
}

static void bad_bool(void **state)
{
	expect_error("[daemon]\ndry_run = maybe\n",
		     "t.conf:2: [daemon] dry_run: not a boolean (yes or no)\n");
	expect_error("[daemon]\ndry_run =\n",
		     "t.conf:2: [daemon] dry_run: not a boolean (yes or no)\n");
}

static void bad_enum(void **state)
{
	expect_error("[daemon]\nsampler = bpf\n",
		     "t.conf:2: [daemon] sampler: must be one of: proc replay\n");
	/* Enum names are exact, unlike booleans. */
	expect_error("[daemon]\nsampler = Proc\n",
		     "t.conf:2: [daemon] sampler: must be one of: proc replay\n");
}

static void bad_log_level(void **state)
{
	static const char msg[] =
		"t.conf:2: [daemon] log_level: must be one of: err warning notice info debug\n";

	expect_error("[daemon]\nlog_level = verbose\n", msg);
	/* syslog's numbers are not names. */
	expect_error("[daemon]\nlog_level = 7\n", msg);
	expect_error("[daemon]\nlog_level = emerg\n", msg);
}

static void key_set_twice(void **state)
{
	expect_error("[daemon]\n\ndry_run = yes\n# again\ndry_run = no\n",
		     "t.conf:5: [daemon] dry_run: set twice (first on line 3)\n");
	/* Also across two headers of one section. */
	expect_error("[proc]\nrescan_ms = 200\n[daemon]\n[proc]\nrescan_ms = 300\n",
		     "t.conf:5: [proc] rescan_ms: set twice (first on line 2)\n");
}

static void relative_journal_dir(void **state)
{
	expect_error("[daemon]\njournal_dir = run/rqbalance\n",
		     "t.conf:2: [daemon] journal_dir: must be an absolute path\n");
	expect_error("[daemon]\njournal_dir =\n",
		     "t.conf:2: [daemon] journal_dir: must be an absolute path\n");
}

static void too_many_list_entries(void **state)
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

static void line_too_long(void **state)
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

static void syntax_error(void **state)
{
	expect_error("[daemon]\ninterval_ms = 100\ndry_run\n",
		     "t.conf:3: line: syntax error (expected [section] or key = value)\n");
	expect_error("[daemon]\ninterval_ms = 100\n[balance\n",
		     "t.conf:3: line: syntax error (expected [section] or key = value)\n");
}

static void several_errors_all_reported(void **state)
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
static void several_syntax_errors_all_reported(void **state)
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

static void file_errors_name_the_file(void **state)
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

static void file_loads(void **state)
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

static void missing_file(void **state)
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
}

static void dump_of_defaults_parses_back(void **state)
{
	struct rqb_conf c;

	conf_defaults(&c);
	dump_round_trip(&c);
}

static void dump_of_changed_values_parses_back(void **state)
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

static void dump_lists_every_key_in_its_section(void **state)
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

static void set_one_key(void **state)
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
static void set_refuses_long_values(void **state)
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

static void sampler_names(void **state)
{
	assert_string_equal(conf_sampler_name(CONF_SAMPLER_PROC), "proc");
	assert_string_equal(conf_sampler_name(CONF_SAMPLER_REPLAY), "replay");
	assert_string_equal(conf_sampler_name(2), "?");
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

static void shipped_conf_lists_every_key(void **state)
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
static void man_page_documents_every_key(void **state)
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_match_table),
		cmocka_unit_test(empty_file_gives_defaults),
		cmocka_unit_test(valid_file_sets_every_type),
		cmocka_unit_test(bool_spellings),
		cmocka_unit_test(int_range_ends_accepted),
		cmocka_unit_test(unknown_key),
		cmocka_unit_test(unknown_section),
		cmocka_unit_test(int_out_of_range),
		cmocka_unit_test(int_not_a_number),
		cmocka_unit_test(bad_bool),
		cmocka_unit_test(bad_enum),
		cmocka_unit_test(bad_log_level),
		cmocka_unit_test(key_set_twice),
		cmocka_unit_test(relative_journal_dir),
		cmocka_unit_test(too_many_list_entries),
		cmocka_unit_test(line_too_long),
		cmocka_unit_test(syntax_error),
		cmocka_unit_test(several_errors_all_reported),
		cmocka_unit_test(several_syntax_errors_all_reported),
		cmocka_unit_test(file_errors_name_the_file),
		cmocka_unit_test(file_loads),
		cmocka_unit_test(missing_file),
		cmocka_unit_test(dump_of_defaults_parses_back),
		cmocka_unit_test(dump_of_changed_values_parses_back),
		cmocka_unit_test(dump_lists_every_key_in_its_section),
		cmocka_unit_test(set_one_key),
		cmocka_unit_test(set_refuses_long_values),
		cmocka_unit_test(sampler_names),
		cmocka_unit_test(shipped_conf_lists_every_key),
		cmocka_unit_test(man_page_documents_every_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
