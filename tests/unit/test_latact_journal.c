/*
 * The latency journal's records, in a journal under a temporary directory: any path the
 * kernel allows round-trips through its escaped field, every record reads back as the
 * entry it was written from (latact_parse_line, the replay's parser), garbage around
 * them stays garbage, and compaction leaves the live entries alone.
 */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuate/journal.h"
#include "actuate/latact.h"
#include "actuate/latact_int.h"
#include "kit.h"

struct fix {
	char dir[32];               /* /tmp/rqb-latjournal.XXXXXX */
	char path[64];              /* DIR/latency.journal */
	struct latact la;           /* only its journal, entries and classes' parent */
	struct lat_entry ent[2];
	struct lat_entry *ptrs[2];
	struct lat_cg_entry cg[1];
};

/* The lines journal_each_line gives (comments and blank lines skipped), each parsed. */
struct parsed {
	unsigned n, bad;
	int rec[64];
	struct lat_entry e[64];
	struct lat_cg_entry c[64];
	unsigned lineno[64];
};

static void open_journal(struct fix *f)
{
	assert_int_equal(journal_open_named(f->dir, LAT_JOURNAL_NAME, &f->la.journal), 0);
}

static int setup(void **state)
{
	struct fix *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	kit_tmp(f->dir, sizeof(f->dir), "latjournal");
	assert_int_equal(chmod(f->dir, 0755), 0);
	snprintf(f->path, sizeof(f->path), "%s/%s", f->dir, LAT_JOURNAL_NAME);
	f->ent[0] = (struct lat_entry){
		.task = { .tid = 4242, .start_time = 987654321, .pidfd = -1 }, .tgid = 4240,
		.value = -7,
		.prev = { .policy = SCHED_OTHER, .nice = 0, .slice_ns = 0, .umin = -1, .umax = -1,
			  .cgroup = "/user.slice/a b\\c" },
		.set = { .policy = SCHED_OTHER, .nice = -7, .slice_ns = 1500000, .umin = 128,
			 .umax = 1024, .cgroup = "/rqbalance-lat-7" },
	};
	f->ent[1] = (struct lat_entry){
		.task = { .tid = 17, .start_time = 5, .pidfd = -1 }, .tgid = 17, .value = 19,
		.prev = { .policy = SCHED_BATCH, .nice = 3, .umin = 0, .umax = 1024 },
		.set = { .policy = SCHED_IDLE, .nice = 19, .slice_ns = 3000000, .umin = 0,
			 .umax = 512 },
	};
	f->ptrs[0] = &f->ent[1]; /* sorted by tid, as latact keeps them */
	f->ptrs[1] = &f->ent[0];
	f->cg[0] = (struct lat_cg_entry){ .path = "/system.slice/x\ty.service", .unit =
					  "x\ty.service", .value = 5, .prev_weight = 100,
					  .prev_idle = -1, .set_weight = 36, .set_idle = 0 };
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fix *f = *state;

	if (f->la.journal)
		journal_close(f->la.journal);
	assert_int_equal(kit_rm(f->dir), 0);
	free(f);
	return 0;
}

static void parse_one(void *ctx, unsigned lineno, char *line)
{
	struct parsed *p = ctx;
	unsigned i = p->n++;

	assert_true(i < 64);
	p->lineno[i] = lineno;
	p->rec[i] = latact_parse_line(line, &p->e[i], &p->c[i]);
	p->bad += p->rec[i] < 0;
}

static struct parsed *parse(struct fix *f)
{
	static struct parsed p;

	memset(&p, 0, sizeof(p));
	assert_int_equal(journal_each_line(f->la.journal, parse_one, &p), 0);
	return &p;
}

static void assert_state_equal(const struct lat_state *a, const struct lat_state *b)
{
	assert_int_equal(a->policy, b->policy);
	assert_int_equal(a->nice, b->nice);
	assert_int_equal(a->slice_ns, b->slice_ns);
	assert_int_equal(a->umin, b->umin);
	assert_int_equal(a->umax, b->umax);
	assert_string_equal(a->cgroup, b->cgroup);
}

static void assert_task_equal(const struct lat_entry *a, const struct lat_entry *b)
{
	assert_int_equal(a->task.tid, b->task.tid);
	assert_int_equal(a->tgid, b->tgid);
	assert_int_equal(a->task.start_time, b->task.start_time);
	assert_int_equal(a->value, b->value);
	assert_state_equal(&a->prev, &b->prev);
	assert_state_equal(&a->set, &b->set);
}

static void assert_cg_equal(const struct lat_cg_entry *a, const struct lat_cg_entry *b)
{
	assert_string_equal(a->path, b->path);
	assert_string_equal(a->unit, b->unit);
	assert_int_equal(a->value, b->value);
	assert_int_equal(a->prev_weight, b->prev_weight);
	assert_int_equal(a->prev_idle, b->prev_idle);
	assert_int_equal(a->set_weight, b->set_weight);
	assert_int_equal(a->set_idle, b->set_idle);
}

/* ---- the escaped field ---- */

KIT_TEST(escape_round_trips_every_byte)
{
	char in[LAT_PATH_MAX], esc[LAT_ESC_MAX], out[LAT_PATH_MAX];

	(void)state;
	/* Every byte but NUL, the longest path, each as much as 4 bytes escaped. */
	for (int i = 0; i < LAT_PATH_MAX - 1; i++)
		in[i] = (char)(i + 1);
	in[LAT_PATH_MAX - 1] = '\0';
	latact_escape_field(in, esc, sizeof(esc));
	for (const unsigned char *p = (const unsigned char *)esc; *p; p++)
		assert_true(*p > 0x20 && *p != 0x7f);
	assert_int_equal(latact_unescape_field(esc, out, sizeof(out)), 0);
	assert_memory_equal(in, out, sizeof(in));
	/* Blanks, controls and the backslash only; the rest is as it was. */
	latact_escape_field("/a b\\c\nd\x7f" "e/é", esc, sizeof(esc));
	assert_string_equal(esc, "/a\\x20b\\x5cc\\x0ad\\x7fe/é");
	/* Only controls, the longest path: 4 bytes each fit LAT_ESC_MAX. */
	memset(in, '\t', LAT_PATH_MAX - 1);
	latact_escape_field(in, esc, sizeof(esc));
	assert_int_equal(strlen(esc), 4 * (LAT_PATH_MAX - 1));
	assert_int_equal(latact_unescape_field(esc, out, sizeof(out)), 0);
	assert_string_equal(out, in);
}

KIT_TEST(escape_empty_and_short)
{
	char esc[16], out[16];

	(void)state;
	latact_escape_field("", esc, sizeof(esc));
	assert_string_equal(esc, "-");
	assert_int_equal(latact_unescape_field("-", out, sizeof(out)), 0);
	assert_string_equal(out, "");
	/* A buffer too short ends before an escape, never inside one. */
	latact_escape_field("\x01\x02\x03", esc, 8);
	assert_string_equal(esc, "\\x01");
	latact_escape_field("abcdefghijkl", esc, 8);
	assert_string_equal(esc, "abcd");
}

KIT_TEST(unescape_refuses_garbage)
{
	static const char *const bad[] = {
		"\\x00", "\\x0", "\\x", "\\", "a\\", "\\y41", "\\xg1", "\\x1g", "\\X41", "/a\\x00b",
	};
	char out[16];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(latact_unescape_field(bad[i], out, sizeof(out)), -EINVAL);
	assert_int_equal(latact_unescape_field("\\x4A\\x4b", out, sizeof(out)), 0);
	assert_string_equal(out, "JK");
	/* One byte too many for ret and its NUL. */
	assert_int_equal(latact_unescape_field("0123456789abcdef", out, sizeof(out)),
			 -ENAMETOOLONG);
	assert_int_equal(latact_unescape_field("0123456789abcde", out, sizeof(out)), 0);
	assert_int_equal(latact_unescape_field("0123456789abcd\\x41", out, sizeof(out)), 0);
	assert_string_equal(out, "0123456789abcdA");
}

/* ---- the records ---- */

KIT_TEST_FX(records_read_back, setup, teardown)
{
	struct fix *f = *state;
	struct parsed *p;

	open_journal(f);
	assert_int_equal(latact_journal_task(&f->la, &f->ent[0]), 0);
	assert_int_equal(latact_journal_task(&f->la, &f->ent[1]), 0);
	assert_int_equal(latact_journal_cg(&f->la, &f->cg[0]), 0);
	latact_journal_untask(&f->la, f->ent[0].task.tid, f->ent[0].task.start_time);
	latact_journal_uncg(&f->la, f->cg[0].path);
	assert_int_equal(journal_lines(f->la.journal), 5);
	/* One line each: the paths' blanks and newlines are escaped. */
	p = parse(f);
	assert_int_equal(p->n, 5);
	assert_int_equal(p->bad, 0);
	assert_int_equal(p->rec[0], LATACT_REC_TASK);
	assert_task_equal(&p->e[0], &f->ent[0]);
	assert_int_equal(p->rec[1], LATACT_REC_TASK);
	assert_task_equal(&p->e[1], &f->ent[1]);
	assert_int_equal(p->rec[2], LATACT_REC_CG);
	assert_cg_equal(&p->c[2], &f->cg[0]);
	assert_int_equal(p->rec[3], LATACT_REC_UNTASK);
	assert_int_equal(p->e[3].task.tid, 4242);
	assert_int_equal(p->e[3].task.start_time, 987654321);
	assert_int_equal(p->rec[4], LATACT_REC_UNCG);
	assert_string_equal(p->c[4].path, f->cg[0].path);
}

/* Without a journal (the dry-run driver's), nothing is written and nothing fails. */
KIT_TEST_FX(no_journal_no_record, setup, teardown)
{
	struct fix *f = *state;

	assert_int_equal(latact_journal_task(&f->la, &f->ent[0]), 0);
	assert_int_equal(latact_journal_cg(&f->la, &f->cg[0]), 0);
	latact_journal_untask(&f->la, 1, 1);
	latact_journal_uncg(&f->la, "/x");
	latact_compact(&f->la);
	assert_int_equal(access(f->path, F_OK), -1);
}

/*
 * A journal a crash or someone else left garbage in: the records appended after it
 * still read back whole, and the garbage is refused line by line, never taken for one.
 */
KIT_TEST_FX(garbage_around_records, setup, teardown)
{
	static const char garbage[] =
		LATACT_JOURNAL_HEAD
		"lat 1 2 3\n"                                   /* cut short */
		"lat 0 1 1 0 0 0 0 -1 -1 - 0 0 0 -1 -1 -\n"     /* no task 0 */
		"lat 5 5 5 0 0 0 0 -1 -1 rel 0 0 0 -1 -1 -\n"   /* a relative cgroup */
		"lat 5 5 5 0 0 0 0 -1 -1 - 0 0 0 -1 -1 - x\n"   /* a field too many */
		"lat 5 5 5 0 0 0 0 -1 -1 /a\\x00 0 0 0 -1 -1 -\n" /* an escaped NUL */
		"cg 1 relative - 100 0 50 0\n"
		"cg 1 /a - 100 0 50\n"
		"cg 1 /a - 100 0 50 0 extra\n"
		"uncg\n"
		"uncg a b\n"
		"unlat x\n"
		"rootx\n"
		"\x01\x02\xff\xfe binary\n"
		"lat 9 9 9 0 0 0 0 -1 -1 - 0 0 0 -1 -1"; /* the crash cut its last line */
	struct fix *f = *state;
	struct parsed *p;

	kit_putn(NULL, f->path, garbage, sizeof(garbage) - 1);
	open_journal(f);
	assert_int_equal(latact_journal_task(&f->la, &f->ent[0]), 0);
	assert_int_equal(latact_journal_cg(&f->la, &f->cg[0]), 0);
	p = parse(f);
	assert_int_equal(p->n, 16);
	assert_int_equal(p->bad, 14);
	assert_int_equal(p->rec[14], LATACT_REC_TASK);
	assert_task_equal(&p->e[14], &f->ent[0]);
	assert_int_equal(p->lineno[14], 16);
	assert_int_equal(p->rec[15], LATACT_REC_CG);
	assert_cg_equal(&p->c[15], &f->cg[0]);
}

/* ---- compaction ---- */

KIT_TEST_FX(compacts_to_live_entries, setup, teardown)
{
	struct fix *f = *state;
	char want[4 * LAT_LINE_MAX];
	struct parsed *p;
	size_t len;

	kit_putn(NULL, f->path, "garbage\n", 8);
	open_journal(f);
	f->la.e = f->ptrs;
	f->la.n = 2;
	f->la.cg = f->cg;
	f->la.ncg = 1;
	/* Short of the slack: left as it is. */
	for (unsigned i = 0; i < LATACT_JOURNAL_SLACK + 2; i++)
		latact_journal_untask(&f->la, 100 + (pid_t)i, 1);
	len = strlen(kit_slurp(NULL, f->path));
	latact_compact(&f->la);
	assert_int_equal(strlen(kit_slurp(NULL, f->path)), len);
	assert_int_equal(journal_lines(f->la.journal), LATACT_JOURNAL_SLACK + 2);
	/* One line more: the live entries alone, the garbage gone with the rest. */
	latact_journal_untask(&f->la, 99, 1);
	latact_compact(&f->la);
	assert_int_equal(journal_lines(f->la.journal), 0);
	snprintf(want, sizeof(want), "%s", kit_slurp(NULL, f->path));
	assert_int_equal(strncmp(want, LATACT_JOURNAL_HEAD, strlen(LATACT_JOURNAL_HEAD)), 0);
	p = parse(f);
	assert_int_equal(p->n, 3);
	assert_int_equal(p->bad, 0);
	assert_int_equal(p->rec[0], LATACT_REC_TASK);
	assert_task_equal(&p->e[0], &f->ent[1]);
	assert_int_equal(p->rec[1], LATACT_REC_TASK);
	assert_task_equal(&p->e[1], &f->ent[0]);
	assert_int_equal(p->rec[2], LATACT_REC_CG);
	assert_cg_equal(&p->c[2], &f->cg[0]);
	/* The journal stays the one appended to. */
	latact_journal_uncg(&f->la, "/x");
	assert_int_equal(journal_lines(f->la.journal), 1);
	assert_non_null(strstr(kit_slurp(NULL, f->path), "\nuncg /x\n"));
}

/* A classes' parent rqbalance made stays recorded through compaction. */
KIT_TEST_FX(compaction_keeps_root, setup, teardown)
{
	struct fix *f = *state;
	struct parsed *p;

	open_journal(f);
	f->la.cls.made_root = true;
	for (unsigned i = 0; i < LATACT_JOURNAL_SLACK; i++)
		latact_journal_untask(&f->la, 100 + (pid_t)i, 1);
	latact_compact(&f->la);
	assert_string_equal(kit_slurp(NULL, f->path), LATACT_JOURNAL_HEAD "root\n");
	p = parse(f);
	assert_int_equal(p->n, 1);
	assert_int_equal(p->rec[0], LATACT_REC_ROOT);
}
