/*
 * The rule index (policy/rules_index.c) against the linear matcher (rules_match): on
 * seeded random rule sets and processes, with exact and patterned comm and exe, uid,
 * cgroup, cmdline and overlaps, the two must name the same rule, every time.
 * RQB_SEED=N replays one seed.
 */
#include "kit.h"

#include "policy/rules.h"
#include "policy/rules_index.h"

#define CASES 4000      /* rule sets */
#define PROCS 64        /* processes tried against each set */

static const char *const comms[] = { "bash", "sshd", "game", "gam", "kworker/0", "x" };
static const char *const comm_pats[] = { "ga*", "*sh*", "kworker/*", "?ame", "[bs]*", "\\x",
					 "gam?", "g*", "bas[gh]", "kworker/0*", "x*", "sshd\\*" };
static const char *const exes[] = { "/usr/bin/bash", "/usr/sbin/sshd", "/opt/game/bin/game",
				    "/usr/bin/x", "" };
static const char *const exe_pats[] = { "/usr/bin/*", "/opt/*/bin/game", "/usr/*/sshd",
					"*", "/usr/bin/[bx]*" };
static const char *const cmdlines[] = { "bash -l", "game --fast", "sshd: root", "x", "" };
static const char *const cmd_pats[] = { "game *", "*-l", "sshd*" };
static const char *const cgroups[] = { "/", "/user.slice", "/user.slice/user-1000.slice",
				       "/system.slice/sshd.service", "" };
static const uid_t uids[] = { 0, 27, 1000 };

#define PICK(a) ((a)[rand() % (int)ARRAY_SIZE(a)])

#ifndef ARRAY_SIZE
#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))
#endif

/* "" (no key) a half of the time, else a plain string or a pattern. */
static const char *pick_str(const char *const *plain, size_t np, const char *const *pats,
			    size_t npat)
{
	int k = rand() % 4;

	if (k == 1)
		return plain[rand() % (int)np];
	if (k == 2)
		return pats[rand() % (int)npat];
	return "";
}

static void random_rule(struct rule *r, unsigned i)
{
	*r = (struct rule){ .name = "r", .file = "unit", .line = i };
	r->latency_nice = rand() % 40 - 20;
	r->comm = pick_str(comms, ARRAY_SIZE(comms), comm_pats, ARRAY_SIZE(comm_pats));
	/* Exact keys often, so that buckets hold several rules. */
	if (rand() % 2)
		r->comm = PICK(comms);
	r->exe = pick_str(exes, ARRAY_SIZE(exes) - 1, exe_pats, ARRAY_SIZE(exe_pats));
	r->cmdline = pick_str(cmdlines, ARRAY_SIZE(cmdlines) - 1, cmd_pats, ARRAY_SIZE(cmd_pats));
	r->cgroup = rand() % 4 == 0 ? PICK(cgroups) : "";
	r->uid = rand() % 3 == 0 ? PICK(uids) : RULE_UID_ANY;
}

static void random_proc(struct proc_ident *id)
{
	memset(id, 0, sizeof(*id));
	id->pid = 1 + rand() % 1000;
	id->uid = PICK(uids);
	id->comm = PICK(comms);
	id->exe = PICK(exes);
	id->cmdline = PICK(cmdlines);
	id->cgroup = PICK(cgroups);
}

/* Up to this many rules a set: enough for buckets of several and a long always list. */
#define SET_MAX 200

static void one_seed(unsigned seed, struct rule_set *rs)
{
	struct rules_index *ix = NULL;
	struct proc_ident id;

	srand(seed);
	kit_rules(rs, 1 + (unsigned)rand() % SET_MAX);
	for (unsigned i = 0; i < rs->n; i++)
		random_rule(&rs->r[i], i);
	assert_int_equal(rules_index_build(rs, &ix), 0);
	for (int p = 0; p < PROCS; p++) {
		random_proc(&id);
		if (rules_index_match(ix, rs, &id) != rules_match_linear(rs, &id))
			fail_msg("seed %u: comm \"%s\" exe \"%s\": index %d, linear %d", seed,
				 id.comm, id.exe, rules_index_match(ix, rs, &id),
				 rules_match_linear(rs, &id));
	}
	rules_index_free(ix);
}

KIT_TEST(index_winner_is_linear_winner)
{
	struct rule_set *rs = calloc(1, sizeof(*rs));
	const char *env = getenv("RQB_SEED");

	assert_non_null(rs);
	if (env)
		one_seed((unsigned)strtoul(env, NULL, 10), rs);
	else
		for (unsigned seed = 1; seed <= CASES; seed++)
			one_seed(seed, rs);
	conf_rules_free(rs);
	free(rs);
}

/* The empty set matches nothing; a lone exact rule is found through its bucket. */
KIT_TEST(empty_and_exact)
{
	struct rule_set *rs = calloc(1, sizeof(*rs));
	struct proc_ident id = { .uid = 0, .comm = "bash", .exe = "/usr/bin/bash",
				 .cmdline = "bash", .cgroup = "/" };
	struct rules_index *ix = NULL;

	assert_non_null(rs);
	assert_int_equal(rules_index_build(rs, &ix), 0);
	assert_int_equal(rules_index_match(ix, rs, &id), -1);
	rules_index_free(ix);
	kit_rules(rs, 2);
	random_rule(&rs->r[0], 0);
	rs->r[0].comm = "sshd";
	rs->r[1].comm = "bash";
	rs->r[1].uid = RULE_UID_ANY;
	assert_int_equal(rules_index_build(rs, &ix), 0);
	assert_int_equal(rules_index_match(ix, rs, &id), 1);
	rules_index_free(ix);
	conf_rules_free(rs);
	free(rs);
}
