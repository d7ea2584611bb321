/*
 * Reading a process's identity: the parsers on fixed text, ident_read on a fake proc
 * tree written into a temporary directory, and once on the real /proc/self.
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit.h"

#include "rqbalance.h"
#include "policy/rules.h"
#include "taskev/ident.h"

#define STATUS_1000 "Name:\tfake\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t1234\n" \
		    "Pid:\t1234\nPPid:\t1\nUid:\t1000\t0\t0\t0\nGid:\t1000\t1000\t1000\t1000\n"

struct tree {
	char root[64];           /* the mkdtemp directory, and the proc root */
	char target[PATH_MAX];   /* a real file for exe links to lead to */
};

static void link_to(const struct tree *t, const char *name, const char *target)
{
	char p[PATH_MAX];

	snprintf(p, sizeof(p), "%s/%s", t->root, name);
	assert_int_equal(symlink(target, p), 0);
}

static int setup(void **state)
{
	struct tree *t = calloc(1, sizeof(*t));

	if (!t)
		return -1;
	kit_tmp(t->root, sizeof(t->root), "test-ident");
	snprintf(t->target, sizeof(t->target), "%s/mysqld", t->root);
	kit_putn(t->root, "mysqld", "#!/bin/false\n", 13);
	*state = t;
	return 0;
}

static int teardown(void **state)
{
	struct tree *t = *state;

	kit_rm(t->root);
	free(t);
	return 0;
}

KIT_TEST(parse_uid)
{
	uid_t uid = 77;

	assert_int_equal(ident_parse_uid(STATUS_1000, &uid), 0);
	assert_int_equal(uid, 1000);
	assert_int_equal(ident_parse_uid("Name:\tx\nGid:\t0\t0\t0\t0\n", &uid), -EINVAL);
	assert_int_equal(ident_parse_uid("Uid:\tx\n", &uid), -EINVAL);
	assert_int_equal(uid, 1000);
	/* The effective uid is the second field: a setuid program's. */
	assert_int_equal(ident_parse_euid("Uid:\t1000\t0\t0\t1000\n", &uid), 0);
	assert_int_equal(uid, 0);
	assert_int_equal(ident_parse_euid("Uid:\t1000\n", &uid), -EINVAL);
	assert_int_equal(uid, 0);
}

KIT_TEST(join_cmdline)
{
	char a[] = "python3\0-m\0http.server\0";
	char b[] = "\0";
	/* "é" is 0xc3 0xa9: a read that ends between them cut it. */
	char c[] = "ab\0\xc3\xa9\xc3";
	char d[] = "ab\0\xe2\x82\xac";

	ident_join_cmdline(a, sizeof(a) - 1, false);
	assert_string_equal(a, "python3 -m http.server");
	ident_join_cmdline(b, sizeof(b) - 1, false);
	assert_string_equal(b, "");
	ident_join_cmdline(c, sizeof(c) - 1, true);
	assert_string_equal(c, "ab \xc3\xa9");
	/* A whole sequence at the very end stays. */
	ident_join_cmdline(d, sizeof(d) - 1, true);
	assert_string_equal(d, "ab \xe2\x82\xac");
}

KIT_TEST_FX(fake_process, setup, teardown)
{
	static const char cmdline[] = "/usr/sbin/mysqld\0--user=mysql\0";
	struct tree *t = *state;
	struct proc_ident id, none;
	struct ident_buf *buf = calloc(1, sizeof(*buf));

	assert_non_null(buf);
	kit_mkdir(t->root, "1234");
	kit_putn(t->root, "1234/status", STATUS_1000, strlen(STATUS_1000));
	kit_putn(t->root, "1234/comm", "mysqld\n", 7);
	kit_putn(t->root, "1234/cmdline", cmdline, sizeof(cmdline) - 1);
	kit_putn(t->root, "1234/cgroup", "0::/system.slice/mysql.service\n", 31);
	link_to(t, "1234/exe", t->target);
	assert_int_equal(ident_read(t->root, 1234, buf, &id), 0);
	assert_int_equal(id.pid, 1234);
	assert_int_equal(id.uid, 1000);
	assert_string_equal(id.comm, "mysqld");
	assert_string_equal(id.exe, t->target);
	assert_string_equal(id.cmdline, "/usr/sbin/mysqld --user=mysql");
	assert_string_equal(id.cgroup, "/system.slice/mysql.service");
	/* A pid that is not there is gone, and ret stays as it was. */
	memset(&none, 0x5a, sizeof(none));
	id = none;
	assert_int_equal(ident_read(t->root, 999, buf, &id), -ESRCH);
	assert_memory_equal(&id, &none, sizeof(id));
	free(buf);
}

/*
 * With rules, only what a rule matches on is read: a rule on comm alone reads comm,
 * and leaves uid, exe, cmdline and cgroup unread (a status that would not parse
 * refuses nothing); a rule on uid reads status too. A pid not there is still gone.
 */
KIT_TEST_FX(reads_only_what_rules_name, setup, teardown)
{
	struct tree *t = *state;
	struct proc_ident id;
	struct ident_buf *buf = calloc(1, sizeof(*buf));
	struct rule_set *rs = calloc(1, sizeof(*rs));

	assert_non_null(buf);
	assert_non_null(rs);
	kit_mkdir(t->root, "8");
	kit_putn(t->root, "8/status", "Name:\tx\n", 8);
	kit_putn(t->root, "8/comm", "worker\n", 7);
	kit_putn(t->root, "8/cmdline", "worker\0", 7);
	kit_putn(t->root, "8/cgroup", "0::/a\n", 6);
	link_to(t, "8/exe", t->target);
	kit_rules(rs, 1);
	rs->r[0].uid = RULE_UID_ANY;
	rs->r[0].comm = "work*";
	assert_int_equal(ident_read_known(t->root, 8, NULL, rs, NULL, buf, &id), 0);
	assert_string_equal(id.comm, "worker");
	assert_string_equal(id.exe, "");
	assert_string_equal(id.cmdline, "");
	assert_string_equal(id.cgroup, "");
	assert_int_equal(id.uid, RULE_UID_ANY);
	assert_int_equal(rules_match(rs, &id), 0);
	assert_int_equal(ident_read_known(t->root, 999, NULL, rs, NULL, buf, &id), -ESRCH);
	/* A rule on uid: status is read, and one without a Uid line is refused. */
	rs->r[0].uid = 1000;
	assert_int_equal(ident_read_known(t->root, 8, NULL, rs, NULL, buf, &id), -EINVAL);
	conf_rules_free(rs);
	free(rs);
	free(buf);
}

/* A kernel thread: no exe, no cmdline; and a process whose exe path leads nowhere here. */
KIT_TEST_FX(missing_and_unverified, setup, teardown)
{
	struct tree *t = *state;
	struct proc_ident id;
	struct ident_buf *buf = calloc(1, sizeof(*buf));

	assert_non_null(buf);
	kit_mkdir(t->root, "2");
	kit_putn(t->root, "2/status", STATUS_1000, strlen(STATUS_1000));
	kit_putn(t->root, "2/comm", "kthreadd\n", 9);
	kit_putn(t->root, "2/cmdline", "", 0);
	assert_int_equal(ident_read(t->root, 2, buf, &id), 0);
	assert_string_equal(id.comm, "kthreadd");
	assert_string_equal(id.exe, "");
	assert_string_equal(id.cmdline, "");
	assert_string_equal(id.cgroup, "");
	/* As another mount namespace, or a deleted binary, would show it. */
	kit_mkdir(t->root, "3");
	kit_putn(t->root, "3/status", STATUS_1000, strlen(STATUS_1000));
	link_to(t, "3/exe", "/nonexistent/rqb-test/usr/sbin/mysqld");
	assert_int_equal(ident_read(t->root, 3, buf, &id), 0);
	assert_string_equal(id.exe, "");
	/* status is the one file that must be readable and make sense. */
	kit_mkdir(t->root, "4");
	kit_putn(t->root, "4/status", "Name:\tx\n", 8);
	assert_int_equal(ident_read(t->root, 4, buf, &id), -EINVAL);
	free(buf);
}

KIT_TEST_FX(long_cmdline_is_cut, setup, teardown)
{
	struct tree *t = *state;
	struct proc_ident id;
	struct ident_buf *buf = calloc(1, sizeof(*buf));
	char *text = malloc(IDENT_CMDLINE_MAX * 2);

	assert_non_null(buf);
	assert_non_null(text);
	/* "jav" then arguments "x" until well past the buffer, whose last byte is an x. */
	memcpy(text, "jav", 3);
	for (size_t i = 3; i < IDENT_CMDLINE_MAX * 2; i++)
		text[i] = i % 2 ? '\0' : 'x';
	kit_mkdir(t->root, "5");
	kit_putn(t->root, "5/status", STATUS_1000, strlen(STATUS_1000));
	kit_putn(t->root, "5/cmdline", text, IDENT_CMDLINE_MAX * 2);
	assert_int_equal(ident_read(t->root, 5, buf, &id), 0);
	assert_int_equal(strlen(id.cmdline), IDENT_CMDLINE_MAX - 1);
	assert_memory_equal(id.cmdline, "jav x x x", 9);
	assert_int_equal(id.cmdline[IDENT_CMDLINE_MAX - 2], 'x');
	free(text);
	free(buf);
}

/*
 * The kernel said which file the process runs (BPF): exe is the first plain-path rule
 * exe that is that file here, with no /proc/PID/exe read at all (here a link to
 * nowhere, as another user's is to a daemon without CAP_SYS_PTRACE).
 */
KIT_TEST_FX(known_exe, setup, teardown)
{
	struct tree *t = *state;
	struct proc_ident id;
	struct ident_buf *buf = calloc(1, sizeof(*buf));
	struct rule_set *rs = calloc(1, sizeof(*rs));
	char other[PATH_MAX], alias[PATH_MAX];
	struct ident_exe k;
	struct stat st;

	assert_non_null(buf);
	assert_non_null(rs);
	assert_int_equal(stat(t->target, &st), 0);
	k = (struct ident_exe){ .dev = st.st_dev, .ino = st.st_ino };
	snprintf(other, sizeof(other), "%s/other", t->root);
	kit_putn(t->root, "other", "x", 1);
	snprintf(alias, sizeof(alias), "%s/alias", t->root);
	assert_int_equal(symlink(t->target, alias), 0);
	kit_mkdir(t->root, "6");
	kit_putn(t->root, "6/status", STATUS_1000, strlen(STATUS_1000));
	link_to(t, "6/exe", "/nonexistent/rqb-test/unreadable");
	/* A pattern, another file, a link to the file: none is it; then the file itself. */
	kit_rules(rs, 4);
	rs->r[0].exe = kit_str(rs, "%s/*", t->root);
	rs->r[1].exe = kit_str(rs, "%s", other);
	rs->r[2].exe = kit_str(rs, "%s", alias);
	rs->r[3].exe = kit_str(rs, "%s", t->target);
	assert_int_equal(ident_read_known(t->root, 6, &k, rs, NULL, buf, &id), 0);
	assert_string_equal(id.exe, t->target);
	assert_int_equal(id.uid, 1000);
	/* Not said, or said of another file: /proc/PID/exe, which leads nowhere here. */
	assert_int_equal(ident_read_known(t->root, 6, NULL, rs, NULL, buf, &id), 0);
	assert_string_equal(id.exe, "");
	k.ino = (ino_t)-2;
	assert_int_equal(ident_read_known(t->root, 6, &k, rs, NULL, buf, &id), 0);
	assert_string_equal(id.exe, "");
	/* No plain-path rule is the file: /proc/PID/exe as before, for the patterns. */
	k.ino = st.st_ino;
	kit_mkdir(t->root, "7");
	kit_putn(t->root, "7/status", STATUS_1000, strlen(STATUS_1000));
	link_to(t, "7/exe", t->target);
	rs->n = 1;
	assert_int_equal(ident_read_known(t->root, 7, &k, rs, NULL, buf, &id), 0);
	assert_string_equal(id.exe, t->target);
	assert_true(ident_exe_is_path("/usr/sbin/mysqld"));
	assert_false(ident_exe_is_path("/usr/lib/jvm/*/bin/java"));
	assert_false(ident_exe_is_path("/usr/bin/python3.[0-9]"));
	assert_false(ident_exe_is_path("/usr/bin/a?"));
	assert_false(ident_exe_is_path("/usr/bin/a\\b"));
	assert_false(ident_exe_is_path("mysqld"));
	assert_false(ident_exe_is_path(""));
	conf_rules_free(rs);
	free(rs);
	free(buf);
}

/* exe and the fields read, through the table and by trying every rule: the same. */
static void same_both_ways(const struct tree *t, pid_t pid, const struct ident_exe *k,
			   const struct rule_set *rs, const char *want_exe)
{
	struct ident_buf *b1 = calloc(1, sizeof(*b1)), *b2 = calloc(1, sizeof(*b2));
	struct ident_exetab *tab = NULL;
	struct proc_ident a, b;

	assert_non_null(b1);
	assert_non_null(b2);
	assert_int_equal(ident_exetab_build(rs, &tab), 0);
	assert_int_equal(ident_read_known(t->root, pid, k, rs, tab, b1, &a), 0);
	assert_int_equal(ident_read_known(t->root, pid, k, rs, NULL, b2, &b), 0);
	assert_string_equal(a.exe, b.exe);
	assert_string_equal(a.exe, want_exe);
	assert_string_equal(a.comm, b.comm);
	assert_string_equal(a.cmdline, b.cmdline);
	assert_int_equal(a.uid, b.uid);
	ident_exetab_free(tab);
	free(b1);
	free(b2);
}

/*
 * The (device, inode) table gives what trying every plain-path rule gives: the first
 * rule, in order, whose file is the one the kernel named; not a symbolic link to it;
 * a hard link to it, which is that file; and nothing once the file was replaced.
 */
KIT_TEST_FX(exe_table, setup, teardown)
{
	struct tree *t = *state;
	struct rule_set *rs = calloc(1, sizeof(*rs));
	char hard[PATH_MAX], alias[PATH_MAX];
	struct ident_exe k;
	struct stat st;

	assert_non_null(rs);
	assert_int_equal(stat(t->target, &st), 0);
	k = (struct ident_exe){ .dev = st.st_dev, .ino = st.st_ino };
	snprintf(hard, sizeof(hard), "%s/hard", t->root);
	assert_int_equal(link(t->target, hard), 0);
	snprintf(alias, sizeof(alias), "%s/alias", t->root);
	assert_int_equal(symlink(t->target, alias), 0);
	kit_mkdir(t->root, "6");
	kit_putn(t->root, "6/status", STATUS_1000, strlen(STATUS_1000));
	kit_putn(t->root, "6/comm", "mysqld\n", 7);
	link_to(t, "6/exe", "/nonexistent/rqb-test/unreadable");
	kit_rules(rs, 4);
	rs->r[0].exe = kit_str(rs, "%s/*", t->root);
	rs->r[1].exe = kit_str(rs, "%s", alias);
	rs->r[2].exe = kit_str(rs, "%s", t->target);
	rs->r[3].exe = kit_str(rs, "%s", hard);
	rs->r[3].comm = kit_str(rs, "mysqld");
	same_both_ways(t, 6, &k, rs, t->target);
	/* The hard link first: it is the same file, so it is the one named. */
	rs->r[2].exe = kit_str(rs, "%s", hard);
	rs->r[3].exe = kit_str(rs, "%s", t->target);
	same_both_ways(t, 6, &k, rs, hard);
	/*
	 * Another file under either name since (made while the old one lives, so that
	 * its inode number is another): neither is what the kernel named.
	 */
	kit_putn(t->root, "new", "#!/bin/true\n", 12);
	kit_putn(t->root, "new2", "#!/bin/true\n", 12);
	snprintf(alias, sizeof(alias), "%s/new", t->root);
	assert_int_equal(rename(alias, t->target), 0);
	snprintf(alias, sizeof(alias), "%s/new2", t->root);
	assert_int_equal(rename(alias, hard), 0);
	same_both_ways(t, 6, &k, rs, "");
	conf_rules_free(rs);
	free(rs);
}

KIT_TEST(real_self)
{
	char comm[IDENT_COMM_MAX] = "", exe[PATH_MAX];
	struct ident_buf *buf = calloc(1, sizeof(*buf));
	struct proc_ident id;
	ssize_t n;

	assert_non_null(buf);
	assert_int_equal(prctl(PR_GET_NAME, comm), 0);
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	assert_true(n > 0);
	exe[n] = '\0';
	/*
	 * A read of /proc/PID/cmdline waits TIMEDREAD_PROC_NS at most, and a loaded
	 * machine may not run its worker that soon: the field then reads empty, as the
	 * daemon means it to. This process's cmdline is never empty, so read until it came.
	 */
	for (int i = 0; i < 1000; i++) {
		assert_int_equal(ident_read("/proc", getpid(), buf, &id), 0);
		if (id.cmdline[0])
			break;
	}
	assert_int_equal(id.uid, getuid());
	assert_string_equal(id.comm, comm);
	assert_string_equal(id.exe, exe);
	/* This program runs under its own name. */
	assert_non_null(strstr(id.cmdline, "test_ident"));
	assert_true(id.cgroup[0] == '/');
	free(buf);
}
