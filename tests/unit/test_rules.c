/*
 * The latency rules: which rule a process matches (order, first match, replacement,
 * every match key, spoofing; policy/rules.c) and what the config's rule parser and
 * check refuse, word for word (conf.c, through its rule key table).
 */
#include <errno.h>
#include <pwd.h>

#include "kit.h"

#include "conf/conf.h"
#include "policy/latency.h"
#include "policy/rules.h"
#include "rqbalance.h"

#define MAIN "main.conf"

static struct rule_set *new_set(void)
{
	struct rule_set *rs = calloc(1, sizeof(*rs));

	assert_non_null(rs);
	return rs;
}

static void free_set(struct rule_set *rs)
{
	conf_rules_free(rs);
	free(rs);
}

/* rs as --dump-config writes it, and its count: what a refused key must leave alone. */
static char *dump_set(const struct rule_set *rs)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	fprintf(f, "%u rules\n", rs->n);
	conf_dump_rules(rs, f);
	fclose(f);
	return buf;
}

static void set(struct rule_set *rs, const char *file, const char *name, const char *key,
		const char *value)
{
	const char *reason = NULL;

	if (conf_rule_set(rs, name, key, value, file, 1, &reason) < 0)
		fail_msg("[rule %s] %s = %s: %s", name, key, value, reason);
}

/* conf_rule_set must refuse key = value with exactly reason, and leave rs as it was. */
static void refuse(struct rule_set *rs, const char *name, const char *key, const char *value,
		   const char *reason)
{
	char *before = dump_set(rs), *after;
	const char *got = NULL;

	assert_int_equal(conf_rule_set(rs, name, key, value, MAIN, 9, &got), -EINVAL);
	assert_non_null(got);
	assert_string_equal(got, reason);
	after = dump_set(rs);
	assert_string_equal(before, after);
	free(before);
	free(after);
}

/* What conf_rules_check says about rs, in a static buffer. */
static const char *check(const struct rule_set *rs, int expect)
{
	static char buf[4096];
	FILE *f;

	buf[0] = '\0';
	f = fmemopen(buf, sizeof(buf), "w");
	assert_non_null(f);
	assert_int_equal(conf_rules_check(rs, f), expect);
	fclose(f);
	return buf;
}

static struct proc_ident ident(const char *comm, const char *exe, const char *cmdline,
			       const char *cgroup, uid_t uid)
{
	return (struct proc_ident){ .pid = 4242, .uid = uid, .comm = comm, .exe = exe,
				    .cmdline = cmdline, .cgroup = cgroup };
}

KIT_TEST(order_and_first_match)
{
	struct rule_set *rs = new_set();
	struct proc_ident fb = ident("foobar", "/usr/bin/foobar", "foobar -x", "/", 1000);
	struct proc_ident foo = ident("foo", "/usr/bin/foo", "foo", "/", 1000);
	struct proc_ident bar = ident("bar", "/usr/bin/bar", "bar", "/", 1000);

	set(rs, MAIN, "wide", "latency_nice", "5");
	set(rs, MAIN, "wide", "comm", "foo*");
	set(rs, MAIN, "narrow", "latency_nice", "-5");
	set(rs, MAIN, "narrow", "comm", "foobar");
	set(rs, MAIN, "narrow", "uid", "1000");
	assert_string_equal(check(rs, 0), "");
	/* Both match foobar: the one read first wins, however narrow the other. */
	assert_int_equal(rules_match(rs, &fb), 0);
	assert_int_equal(rules_match(rs, &foo), 0);
	assert_int_equal(rules_match(rs, &bar), -1);
	free_set(rs);
}

/* explain's words: the first condition that fails, and the conditions a rule names. */
KIT_TEST(why_not_and_conditions)
{
	struct rule_set *rs = new_set();
	struct proc_ident db = ident("mysqld", "/usr/sbin/mysqld", "mysqld", "/", 27);
	struct proc_ident other = ident("mysqld", "/usr/sbin/mysqld", "mysqld", "/", 1000);
	struct proc_ident noexe = ident("mysqld", "", "mysqld", "/", 27);
	char why[256];

	set(rs, MAIN, "db", "latency_nice", "-10");
	set(rs, MAIN, "db", "exe", "/usr/sbin/mysqld");
	set(rs, MAIN, "db", "uid", "27");
	assert_string_equal(check(rs, 0), "");
	assert_true(rules_why_not(&rs->r[0], &db, why, sizeof(why)));
	assert_string_equal(why, "");
	assert_false(rules_why_not(&rs->r[0], &other, why, sizeof(why)));
	assert_string_equal(why, "its uid is 1000, the rule's 27");
	assert_false(rules_why_not(&rs->r[0], &noexe, why, sizeof(why)));
	assert_string_equal(why, "its exe cannot be read here, the rule's is \"/usr/sbin/mysqld\"");
	rules_conditions(&rs->r[0], why, sizeof(why));
	assert_string_equal(why, "exe \"/usr/sbin/mysqld\", uid 27");
	free_set(rs);
}

KIT_TEST(later_file_replaces_in_place)
{
	struct rule_set *rs = new_set();
	struct proc_ident db = ident("mysqld", "/usr/sbin/mysqld", "mysqld", "/", 27);

	set(rs, MAIN, "a", "latency_nice", "1");
	set(rs, MAIN, "a", "comm", "mysqld");
	set(rs, MAIN, "b", "latency_nice", "2");
	set(rs, MAIN, "b", "comm", "x");
	/* The drop-in's rule a starts afresh: it does not inherit comm = mysqld. */
	set(rs, "rules.d/50-a.conf", "a", "latency_nice", "-3");
	set(rs, "rules.d/50-a.conf", "a", "exe", "/usr/sbin/postgres");
	assert_string_equal(check(rs, 0), "");
	assert_int_equal(rs->n, 2);
	assert_string_equal(rs->r[0].name, "a");
	assert_string_equal(rs->r[0].file, "rules.d/50-a.conf");
	assert_int_equal(rs->r[0].latency_nice, -3);
	assert_string_equal(rs->r[0].comm, "");
	assert_string_equal(rs->r[1].name, "b");
	assert_int_equal(rules_match(rs, &db), -1);
	/* Within one file, a second [rule a] section goes on with the same rule. */
	set(rs, "rules.d/50-a.conf", "a", "uid", "27");
	assert_int_equal(rs->n, 2);
	assert_int_not_equal(rs->r[0].uid, RULE_UID_ANY);
	assert_string_equal(rs->r[0].exe, "/usr/sbin/postgres");
	free_set(rs);
}

/* One rule on key = value, with a harmless value so that the check passes. */
static struct rule_set *one_rule(const char *key, const char *value)
{
	struct rule_set *rs = new_set();

	set(rs, MAIN, "r", "latency_nice", "3");
	set(rs, MAIN, "r", key, value);
	assert_string_equal(check(rs, 0), "");
	return rs;
}

KIT_TEST(match_comm)
{
	struct rule_set *rs = one_rule("comm", "kworker/*");
	struct proc_ident a = ident("kworker/0:1", "", "", "/", 0);
	struct proc_ident b = ident("kthreadd", "", "", "/", 0);

	assert_int_equal(rules_match(rs, &a), 0);
	assert_int_equal(rules_match(rs, &b), -1);
	free_set(rs);
}

KIT_TEST(match_exe)
{
	struct rule_set *rs = one_rule("exe", "/usr/bin/*");
	struct proc_ident a = ident("x", "/usr/bin/python3", "", "/", 0);
	struct proc_ident b = ident("x", "/usr/bin/sub/python3", "", "/", 0);
	struct proc_ident gone = ident("x", "", "", "/", 0);

	assert_int_equal(rules_match(rs, &a), 0);
	/* FNM_PATHNAME: a star does not cross a slash. */
	assert_int_equal(rules_match(rs, &b), -1);
	assert_int_equal(rules_match(rs, &gone), -1);
	free_set(rs);
}

KIT_TEST(match_cmdline)
{
	struct rule_set *rs = one_rule("cmdline", "python3 -m http.server*");
	struct proc_ident a = ident("python3", "", "python3 -m http.server 8000", "/", 0);
	struct proc_ident b = ident("python3", "", "python3 -m pip install", "/", 0);

	assert_int_equal(rules_match(rs, &a), 0);
	assert_int_equal(rules_match(rs, &b), -1);
	free_set(rs);
}

KIT_TEST(match_uid)
{
	struct rule_set *rs = one_rule("uid", "1000");
	struct proc_ident a = ident("x", "", "", "/", 1000);
	struct proc_ident b = ident("x", "", "", "/", 1001);

	assert_int_equal(rules_match(rs, &a), 0);
	assert_int_equal(rules_match(rs, &b), -1);
	free_set(rs);
}

KIT_TEST(match_cgroup_at_slash)
{
	static const char *const yes[] = { "/a/b", "/a/b/c", "/a/b/c/d.scope" };
	static const char *const no[] = { "/a/bc", "/a", "/", "", "/x/a/b" };
	struct rule_set *rs = one_rule("cgroup", "/a/b");
	struct rule_set *slash = one_rule("cgroup", "/a/b//");
	struct rule_set *root = one_rule("cgroup", "/");

	/* A trailing slash is dropped, so that it means the same. */
	assert_string_equal(slash->r[0].cgroup, "/a/b");
	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		struct proc_ident id = ident("x", "", "", yes[i], 0);

		if (rules_match(rs, &id) != 0 || rules_match(slash, &id) != 0)
			fail_msg("/a/b should match \"%s\"", yes[i]);
		assert_int_equal(rules_match(root, &id), 0);
	}
	for (size_t i = 0; i < ARRAY_SIZE(no); i++) {
		struct proc_ident id = ident("x", "", "", no[i], 0);

		if (rules_match(rs, &id) != -1 || rules_match(slash, &id) != -1)
			fail_msg("/a/b should not match \"%s\"", no[i]);
	}
	free_set(rs);
	free_set(slash);
	free_set(root);
}

/* Every key a rule names must match, not just one of them. */
KIT_TEST(all_keys_must_match)
{
	struct rule_set *rs = new_set();
	struct proc_ident ok = ident("web", "/srv/web", "web --serve", "/system.slice/web", 33);
	struct proc_ident other_uid = ok, other_cg = ok;

	set(rs, MAIN, "r", "latency_nice", "-4");
	set(rs, MAIN, "r", "comm", "web");
	set(rs, MAIN, "r", "exe", "/srv/web");
	set(rs, MAIN, "r", "cmdline", "*--serve*");
	set(rs, MAIN, "r", "cgroup", "/system.slice");
	set(rs, MAIN, "r", "uid", "33");
	assert_int_equal(rules_match(rs, &ok), 0);
	other_uid.uid = 34;
	assert_int_equal(rules_match(rs, &other_uid), -1);
	other_cg.cgroup = "/user.slice";
	assert_int_equal(rules_match(rs, &other_cg), -1);
	free_set(rs);
}

KIT_TEST(uid_by_name_and_number)
{
	struct rule_set *rs = new_set();
	struct passwd *pw = getpwnam("root");

	assert_non_null(pw);
	set(rs, MAIN, "by_name", "uid", "root");
	set(rs, MAIN, "by_number", "uid", "4000000000");
	assert_int_not_equal(rs->r[0].uid, RULE_UID_ANY);
	assert_int_equal(rs->r[0].uid, pw->pw_uid);
	assert_int_not_equal(rs->r[1].uid, RULE_UID_ANY);
	assert_int_equal(rs->r[1].uid, 4000000000u);
	refuse(rs, "x", "uid", "no-such-user-rqb", "no such user");
	refuse(rs, "x", "uid", "4294967295", "not a user id");
	refuse(rs, "x", "uid", "99999999999999999999", "not a user id");
	refuse(rs, "x", "uid", "-1", "no such user");
	refuse(rs, "x", "uid", "", "no such user");
	free_set(rs);
}

KIT_TEST(value_errors)
{
	struct rule_set *rs = new_set();
	char name[RULE_NAME_MAX + 1], value[RULE_STR_MAX + 1];

	refuse(rs, "r", "latency_nice", "20", "out of range -20…19");
	refuse(rs, "r", "latency_nice", "-21", "out of range -20…19");
	refuse(rs, "r", "latency_nice", "", "not a number");
	refuse(rs, "r", "latency_nice", "5x", "not a number");
	refuse(rs, "r", "nice", "5", "unknown key");
	refuse(rs, "r", "comm", "", "empty (leave the key out to match any)");
	refuse(rs, "r", "exe", "mysqld", "must be an absolute path");
	refuse(rs, "r", "cgroup", "system.slice", "must be an absolute path");
	refuse(rs, "r", "spoofable", "perhaps", "not a boolean (yes or no)");
	refuse(rs, "", "comm", "x", "a rule needs a name: [rule NAME]");
	refuse(rs, "a b", "comm", "x", "a rule name is letters, digits, '-', '_', '.' and '@'");
	memset(name, 'n', RULE_NAME_MAX);
	name[RULE_NAME_MAX] = '\0';
	refuse(rs, name, "comm", "x", "rule name too long");
	memset(value, 'v', RULE_STR_MAX);
	value[RULE_STR_MAX] = '\0';
	refuse(rs, "r", "cmdline", value, "too long");
	assert_int_equal(rs->n, 0);
	/* Both ends of the range are values. */
	set(rs, MAIN, "lo", "latency_nice", "-20");
	set(rs, MAIN, "hi", "latency_nice", "19");
	assert_int_equal(rs->r[0].latency_nice, -20);
	assert_int_equal(rs->r[1].latency_nice, 19);
	free_set(rs);
}

KIT_TEST(set_twice_in_one_file)
{
	struct rule_set *rs = new_set();

	set(rs, MAIN, "r", "latency_nice", "1");
	set(rs, MAIN, "r", "comm", "a");
	set(rs, MAIN, "r", "uid", "0");
	refuse(rs, "r", "latency_nice", "2", "set twice in this rule");
	refuse(rs, "r", "comm", "b", "set twice in this rule");
	refuse(rs, "r", "uid", "1", "set twice in this rule");
	free_set(rs);
}

KIT_TEST(too_many_rules)
{
	struct rule_set *rs = new_set();
	char name[16];

	for (int i = 0; i < RULES_MAX; i++) {
		snprintf(name, sizeof(name), "r%d", i);
		set(rs, MAIN, name, "comm", "x");
	}
	refuse(rs, "one-more", "comm", "x", "too many rules (at most 100000)");
	/* A name already read is still a rule to set. */
	set(rs, MAIN, "r0", "latency_nice", "1");
	free_set(rs);
}

KIT_TEST(check_errors)
{
	struct rule_set *rs = new_set();
	const char *reason;

	assert_int_equal(conf_rule_set(rs, "novalue", "comm", "x", "a.conf", 3, &reason), 0);
	assert_int_equal(conf_rule_set(rs, "nokey", "latency_nice", "4", "a.conf", 7, &reason), 0);
	assert_int_equal(conf_rule_set(rs, "favour", "latency_nice", "-2", "b.conf", 2, &reason),
			 0);
	assert_int_equal(conf_rule_set(rs, "favour", "comm", "game", "b.conf", 3, &reason), 0);
	assert_int_equal(conf_rule_set(rs, "favour", "cmdline", "game *", "b.conf", 4, &reason), 0);
	assert_string_equal(check(rs, -EINVAL),
			    "a.conf:3: [rule novalue] latency_nice: missing: every rule needs a "
			    "value\n"
			    "a.conf:7: [rule nokey]: no match key (comm, exe, cmdline, cgroup or "
			    "uid): it would match every process\n"
			    "b.conf:2: [rule favour] latency_nice: a negative value needs exe or "
			    "uid, since any process can set its own comm and cmdline (or say "
			    "spoofable = yes)\n");
	/* A favour on comm alone is allowed when the rule says it knows. */
	assert_int_equal(conf_rule_set(rs, "favour", "spoofable", "yes", "b.conf", 5, &reason), 0);
	assert_int_equal(conf_rule_set(rs, "novalue", "latency_nice", "0", "a.conf", 4, &reason),
			 0);
	assert_int_equal(conf_rule_set(rs, "nokey", "cgroup", "/x", "a.conf", 8, &reason), 0);
	assert_string_equal(check(rs, 0), "");
	/* err may be NULL. */
	assert_int_equal(conf_rule_set(rs, "bare", "latency_nice", "1", "c.conf", 1, &reason), 0);
	assert_int_equal(conf_rules_check(rs, NULL), -EINVAL);
	free_set(rs);
}

/* A favour for the real mysqld must not go to a program that only calls itself mysqld. */
KIT_TEST(comm_alone_cannot_claim_a_favour)
{
	struct rule_set *rs = new_set();
	struct proc_ident evil = ident("mysqld", "/tmp/evil", "mysqld --datadir=/var/lib/mysql",
				       "/user.slice", 1000);
	struct proc_ident real = ident("mysqld", "/usr/sbin/mysqld", "/usr/sbin/mysqld", "/", 27);

	set(rs, MAIN, "db", "latency_nice", "-10");
	set(rs, MAIN, "db", "comm", "mysqld");
	set(rs, MAIN, "db", "exe", "/usr/sbin/mysqld");
	assert_string_equal(check(rs, 0), "");
	assert_int_equal(rules_match(rs, &evil), -1);
	assert_int_equal(rules_match(rs, &real), 0);
	free_set(rs);
}

KIT_TEST(section_names)
{
	const char *name = NULL;

	assert_true(conf_rule_section("rule db", &name));
	assert_string_equal(name, "db");
	assert_true(conf_rule_section("rule", &name));
	assert_string_equal(name, "");
	assert_false(conf_rule_section("rules db", &name));
	assert_false(conf_rule_section("daemon", &name));
	assert_false(conf_rule_section("ruledb", &name));
}

KIT_TEST(dump_lists_set_keys)
{
	static char buf[4096];
	struct rule_set *rs = new_set();
	FILE *f;

	set(rs, MAIN, "db", "latency_nice", "-10");
	set(rs, MAIN, "db", "exe", "/usr/sbin/mysqld");
	set(rs, MAIN, "db", "uid", "27");
	set(rs, MAIN, "batch", "latency_nice", "15");
	set(rs, MAIN, "batch", "cgroup", "/batch.slice/");
	set(rs, MAIN, "batch", "cmdline", "make -j*");
	set(rs, MAIN, "batch", "comm", "cc1*");
	buf[0] = '\0';
	f = fmemopen(buf, sizeof(buf), "w");
	assert_non_null(f);
	conf_dump_rules(rs, f);
	fclose(f);
	assert_string_equal(buf, "[rule db]\n"
				 "latency_nice = -10\n"
				 "exe = /usr/sbin/mysqld\n"
				 "uid = 27\n"
				 "spoofable = no\n"
				 "\n"
				 "[rule batch]\n"
				 "latency_nice = 15\n"
				 "comm = cc1*\n"
				 "cmdline = make -j*\n"
				 "cgroup = /batch.slice\n"
				 "spoofable = no\n");
	free_set(rs);
}
