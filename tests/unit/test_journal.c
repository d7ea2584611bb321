/* The restore journal, in a scratch directory: lock, append, replay, bad lines, rewrite. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "actuate/journal.h"
#include "actuate/latact.h"
#include "rqbalance.h"
#include "kit.h"
#include "util/log.h"

struct fixture {
	char root[64];          /* the mkdtemp directory */
	char dir[PATH_MAX];     /* the journal directory, nested below root */
	struct journal *j[2];   /* open journals: teardown closes them when a test fails */
};

/* What journal_replay handed out, in order. */
struct seen {
	size_t n;
	struct journal_rec r[16];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	kit_tmp(f->root, sizeof(f->root), "test-journal");
	snprintf(f->dir, sizeof(f->dir), "%s/run/rqbalance", f->root);
	/* Replay warns about each bad line; the tests count them instead. */
	log_set_level(LOG_ERR);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(f->j); i++)
		journal_close(f->j[i]);
	r = kit_rm(f->root);
	free(f);
	return r;
}

static struct journal_rec rec(pid_t tid, uint64_t start, const char *prev, const char *set)
{
	struct journal_rec r = {
		.tid = tid,
		.tgid = tid + 1000,
		.start_time = start,
		.prev = kit_mask(prev),
		.set = kit_mask(set),
	};

	return r;
}

static void assert_rec_equal(const struct journal_rec *a, const struct journal_rec *b)
{
	assert_int_equal(a->tid, b->tid);
	assert_int_equal(a->tgid, b->tgid);
	assert_int_equal(a->start_time, b->start_time);
	assert_true(CPU_EQUAL(&a->prev, &b->prev));
	assert_true(CPU_EQUAL(&a->set, &b->set));
	assert_int_equal(a->since, b->since);
}

static void collect(void *ctx, const struct journal_rec *r)
{
	struct seen *s = ctx;

	assert_true(s->n < ARRAY_SIZE(s->r));
	s->r[s->n++] = *r;
}

static void set(struct journal *j, struct journal_rec r)
{
	assert_int_equal(journal_set(j, &r), 0);
}

/* Replays j; returns the count of bad lines. */
static unsigned replay(struct journal *j, struct seen *s)
{
	unsigned bad = 12345;

	memset(s, 0, sizeof(*s));
	assert_int_equal(journal_replay(j, collect, s, &bad), 0);
	return bad;
}

/* Appends raw text to the journal file, as a crash or another writer might leave it. */
static void append_raw(struct journal *j, const char *text)
{
	int fd = open(journal_path(j), O_WRONLY | O_APPEND | O_CLOEXEC);

	assert_true(fd >= 0);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
}

static struct journal *open_journal(struct fixture *f)
{
	struct journal *j = NULL;
	size_t i = 0;

	while (i < ARRAY_SIZE(f->j) && f->j[i])
		i++;
	assert_true(i < ARRAY_SIZE(f->j));
	assert_int_equal(journal_open(f->dir, &j), 0);
	assert_non_null(j);
	f->j[i] = j;
	return j;
}

static void close_journal(struct fixture *f, struct journal *j)
{
	for (size_t i = 0; i < ARRAY_SIZE(f->j); i++)
		if (f->j[i] == j)
			f->j[i] = NULL;
	journal_close(j);
}

KIT_TEST_FX(open_creates_nested_dir_and_file, setup, teardown)
{
	struct fixture *f = *state;
	char path[PATH_MAX + 32];
	struct journal *j;
	struct stat st;

	assert_int_equal(stat(f->dir, &st), -1);
	j = open_journal(f);
	assert_int_equal(stat(f->dir, &st), 0);
	assert_true(S_ISDIR(st.st_mode));
	snprintf(path, sizeof(path), "%s/" JOURNAL_NAME, f->dir);
	assert_string_equal(journal_path(j), path);
	assert_int_equal(stat(path, &st), 0);
	assert_true(S_ISREG(st.st_mode));
	/* It holds what tasks had: nobody else reads it. */
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(journal_lines(j), 0);
	close_journal(f, j);
	/* An existing directory and file are fine. */
	j = open_journal(f);
	close_journal(f, j);
}

KIT_TEST_FX(second_open_is_busy, setup, teardown)
{
	struct fixture *f = *state;
	/* Any non-NULL pointer will do to see that a failed open leaves *ret alone. */
	struct journal *j = open_journal(f), *other = (struct journal *)f;

	assert_int_equal(journal_open(f->dir, &other), -EBUSY);
	assert_ptr_equal(other, (struct journal *)f);
	close_journal(f, j);
	other = open_journal(f);
	close_journal(f, other);
}

KIT_TEST_FX(fresh_journal_replays_nothing, setup, teardown)
{
	struct fixture *f = *state;
	struct journal *j = open_journal(f);
	struct seen s;

	assert_int_equal(replay(j, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(journal_replay(j, collect, &s, NULL), 0);
	close_journal(f, j);
}

KIT_TEST_FX(replay_yields_set_and_not_cleared, setup, teardown)
{
	struct fixture *f = *state;
	struct journal *j = open_journal(f);
	struct journal_rec a = rec(10, 100, "0-7", "0-3"), b = rec(11, 100, "0-7", "4-7"),
			   c = rec(12, 100, "0-3", "2"), d = rec(13, 200, "0-7", "5");
	struct seen s;

	set(j, a);
	set(j, b);
	set(j, c);
	assert_int_equal(journal_clear(j, 11, 100), 0);
	/* A second pin of a: what it had before the first one is what it gets back. */
	set(j, rec(10, 100, "0-3", "4-7"));
	set(j, d);
	/* A clear of another task that reused tid 13 leaves d alone. */
	assert_int_equal(journal_clear(j, 13, 199), 0);
	assert_int_equal(journal_lines(j), 7);
	assert_int_equal(replay(j, &s), 0);
	assert_int_equal(s.n, 3);
	a.set = kit_mask("4-7");
	assert_rec_equal(&s.r[0], &a);
	assert_rec_equal(&s.r[1], &c);
	assert_rec_equal(&s.r[2], &d);
	close_journal(f, j);
}

KIT_TEST_FX(set_after_clear_starts_afresh, setup, teardown)
{
	struct fixture *f = *state;
	struct journal *j = open_journal(f);
	struct journal_rec a = rec(10, 100, "0-7", "0-3"), b = rec(11, 100, "0-7", "4-7");
	struct seen s;

	set(j, a);
	set(j, b);
	assert_int_equal(journal_clear(j, 10, 100), 0);
	a.prev = kit_mask("1-2");
	set(j, a);
	assert_int_equal(replay(j, &s), 0);
	assert_int_equal(s.n, 2);
	assert_rec_equal(&s.r[0], &b);
	assert_rec_equal(&s.r[1], &a);
	close_journal(f, j);
}

KIT_TEST_FX(replay_survives_reopen, setup, teardown)
{
	struct fixture *f = *state;
	struct journal *j = open_journal(f);
	struct journal_rec a = rec(10, 100, "0-7", "0-3"), b = rec(11, 5, "1,3", "3");
	struct seen s;

	set(j, a);
	close_journal(f, j);
	j = open_journal(f);
	assert_int_equal(journal_lines(j), 0);
	set(j, b);
	assert_int_equal(replay(j, &s), 0);
	assert_int_equal(s.n, 2);
	assert_rec_equal(&s.r[0], &a);
	assert_rec_equal(&s.r[1], &b);
	close_journal(f, j);
}

KIT_TEST_FX(malformed_lines_counted_and_skipped, setup, teardown)
{
	struct fixture *f = *state;
	struct journal *j = open_journal(f);
	struct journal_rec a = rec(10, 100, "0-7", "0-3"), b = rec(11, 100, "0-7", "4-7");
	struct seen s;

	set(j, a);
	append_raw(j, "garbage\n"
		      "# a comment is not a bad line\n"
		      "\n"
		      "set 0 5 100 0-3 1\n"
		      "set 6 6 100  1\n"
		      "set 7 7 100 0-3 1-\n"
		      "set 8 8 10\n"
		      "clear 10\n");
	set(j, b);
	assert_int_equal(replay(j, &s), 6);
	assert_int_equal(s.n, 2);
	assert_rec_equal(&s.r[0], &a);
	assert_rec_equal(&s.r[1], &b);
	close_journal(f, j);
}

/* A crash can cut the last record short; the next run's records must not be lost to it. */
KIT_TEST_FX(truncated_last_line_does_not_swallow_the_next, setup, teardown)
{
	struct fixture *f = *state;
	struct journal *j = open_journal(f);
	struct journal_rec a = rec(10, 100, "0-7", "0-3"), b = rec(11, 100, "0-7", "4-7");
	struct seen s;

	set(j, a);
	append_raw(j, "set 12 1012 100 0-");
	close_journal(f, j);
	j = open_journal(f);
	set(j, b);
	assert_int_equal(replay(j, &s), 1);
	assert_int_equal(s.n, 2);
	assert_rec_equal(&s.r[0], &a);
	assert_rec_equal(&s.r[1], &b);
	close_journal(f, j);
}

/* Lines of the journal file that start with "set ". */
static unsigned set_lines(const struct journal *j)
{
	char line[256];
	unsigned n = 0;
	FILE *in = fopen(journal_path(j), "re");

	assert_non_null(in);
	while (fgets(line, sizeof(line), in))
		n += strncmp(line, "set ", 4) == 0;
	fclose(in);
	return n;
}

KIT_TEST_FX(rewrite_keeps_only_given_records, setup, teardown)
{
	struct fixture *f = *state;
	struct journal_rec keep[2] = { rec(11, 100, "0-7", "4-7"), rec(14, 3, "0-1", "1") };
	struct journal_rec e = rec(15, 9, "0-7", "6");
	struct journal *j = open_journal(f), *other = NULL;
	char tmp[PATH_MAX + 16];
	struct seen s;

	set(j, rec(10, 100, "0-7", "0-3"));
	set(j, keep[0]);
	set(j, rec(12, 100, "0-3", "2"));
	assert_int_equal(journal_clear(j, 12, 100), 0);
	assert_int_equal(journal_rewrite(j, keep, ARRAY_SIZE(keep)), 0);
	assert_int_equal(journal_lines(j), 0);
	assert_int_equal(set_lines(j), 2);
	snprintf(tmp, sizeof(tmp), "%s.new", journal_path(j));
	assert_int_equal(access(tmp, F_OK), -1);
	assert_int_equal(replay(j, &s), 0);
	assert_int_equal(s.n, 2);
	assert_rec_equal(&s.r[0], &keep[0]);
	assert_rec_equal(&s.r[1], &keep[1]);
	/* The new file is locked as the old one was. */
	assert_int_equal(journal_open(f->dir, &other), -EBUSY);
	assert_null(other);
	/* And appends land in it, after what the rewrite wrote. */
	set(j, e);
	assert_int_equal(journal_clear(j, 11, 100), 0);
	assert_int_equal(journal_lines(j), 2);
	assert_int_equal(set_lines(j), 3);
	assert_int_equal(replay(j, &s), 0);
	assert_int_equal(s.n, 2);
	assert_rec_equal(&s.r[0], &keep[1]);
	assert_rec_equal(&s.r[1], &e);
	close_journal(f, j);
	/* Closing gives the lock up. */
	other = open_journal(f);
	assert_int_equal(replay(other, &s), 0);
	assert_int_equal(s.n, 2);
	close_journal(f, other);
}

KIT_TEST_FX(rewrite_to_nothing, setup, teardown)
{
	struct fixture *f = *state;
	struct journal *j = open_journal(f);
	struct seen s;

	set(j, rec(10, 100, "0-7", "0-3"));
	assert_int_equal(journal_rewrite(j, NULL, 0), 0);
	assert_int_equal(replay(j, &s), 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(set_lines(j), 0);
	close_journal(f, j);
}

KIT_TEST(parse_set_and_clear)
{
	struct journal_rec r, want = rec(42, 123456789012ULL, "0-3,8", "8");
	char op = '?';

	want.tgid = 40;
	assert_int_equal(journal_parse_line("set 42 40 123456789012 0-3,8 8\n", &op, &r), 0);
	assert_int_equal(op, 's');
	assert_rec_equal(&r, &want);
	op = '?';
	assert_int_equal(journal_parse_line("set 42 40 123456789012 0-3,8 8", &op, &r), 0);
	assert_int_equal(op, 's');
	assert_int_equal(r.since, 0); /* written before SINCE existed: unknown */
	assert_int_equal(journal_parse_line("set 42 40 123456789012 0-3,8 8 5555\n", &op, &r), 0);
	assert_int_equal(r.since, 5555);
	assert_int_equal(journal_parse_line("clear 42 123456789012\n", &op, &r), 0);
	assert_int_equal(op, 'c');
	assert_int_equal(r.tid, 42);
	assert_int_equal(r.start_time, 123456789012ULL);
	assert_int_equal(journal_parse_line("clear 7 0", &op, &r), 0);
	assert_int_equal(op, 'c');
	assert_int_equal(r.tid, 7);
}

KIT_TEST(parse_rejects)
{
	static const char *const bad[] = {
		"",
		"\n",
		"garbage\n",
		"set 0 40 1 0-3 8\n",
		"set 42 0 1 0-3 8\n",
		"set -1 40 1 0-3 8\n",
		"set 42 40 1  8\n",
		"set 42 40 1 0-3\n",
		"set 42 40 1 0-3 8 9 10\n",
		"set 42 40 1 0-3 8 x\n",
		"set 42 40 1 x 8\n",
		"set 42 40 1 0-3 1024\n",
		"set 42 40 1 0-3 8junk\n",
		"set 42 40\n",
		"clear 0 5\n",
		"clear 5\n",
		"clear 5 6 7\n",
		"clear 5 6x\n",
		"pin 42 40 1 0-3 8\n",
	};
	struct journal_rec r, sentinel;
	char op;

	memset(&sentinel, 0x5a, sizeof(sentinel));
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		r = sentinel;
		op = '?';
		if (journal_parse_line(bad[i], &op, &r) != -EINVAL)
			fail_msg("accepted bad line %zu", i);
		assert_int_equal(op, '?');
		assert_memory_equal(&r, &sentinel, sizeof(r));
	}
}

/*
 * The latency journal's paths: a cgroup name may hold any byte but '/' and NUL, so the
 * records escape them (\xHH) and the parser gives the real bytes back; an unescaped
 * blank (an older record) or an escaped NUL is a malformed record, not a shifted one.
 */
KIT_TEST(latency_paths_round_trip)
{
	char line[LAT_LINE_MAX];
	struct lat_entry e;
	struct lat_cg_entry c;

	(void)state;
	snprintf(line, sizeof(line), "lat 10 10 55 -10 0 0 0 -1 -1 /a\\x20b\\x09c\\x0ad\\x5cx20"
		 " 0 -10 100000 -1 -1 /rqbalance-lat-10");
	assert_int_equal(latact_parse_line(line, &e, &c), LATACT_REC_TASK);
	assert_string_equal(e.prev.cgroup, "/a b\tc\nd\\x20");
	assert_string_equal(e.set.cgroup, "/rqbalance-lat-10");
	snprintf(line, sizeof(line), "cg 5 /x\\x20y\\xff - 1024 -1 512 -1");
	assert_int_equal(latact_parse_line(line, &e, &c), LATACT_REC_CG);
	assert_string_equal(c.path, "/x y\xff");
	assert_string_equal(c.unit, "");
	snprintf(line, sizeof(line), "uncg /x\\x20y\\xff");
	assert_int_equal(latact_parse_line(line, &e, &c), LATACT_REC_UNCG);
	assert_string_equal(c.path, "/x y\xff");
	snprintf(line, sizeof(line), "lat 10 10 55 -10 0 0 0 -1 -1 /a b 0 -10 0 -1 -1 /c");
	assert_int_equal(latact_parse_line(line, &e, &c), -EINVAL);
	snprintf(line, sizeof(line), "cg 5 /x\\x00 - 1024 -1 512 -1");
	assert_int_equal(latact_parse_line(line, &e, &c), -EINVAL);
	snprintf(line, sizeof(line), "uncg /x y");
	assert_int_equal(latact_parse_line(line, &e, &c), -EINVAL);
}
