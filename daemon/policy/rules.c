/*
 * Policy stage: which latency rule a process matches. Pure: its only library calls
 * are fnmatch and string functions; it never reads a process or a file, and never
 * prints. What [rule NAME] sections say is the config's to parse and check (conf.c).
 */
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>

#include "policy/rules.h"
#include "policy/rules_index.h"

static bool match_cgroup(const char *prefix, const char *path)
{
	size_t n = strlen(prefix);

	/* "/" is stored as is; every other prefix without its trailing slash. */
	if (strcmp(prefix, "/") == 0)
		return path[0] == '/';
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Every key the rule names must match; a key it leaves out matches anything. */
bool rules_match_one(const struct rule *r, const struct proc_ident *id)
{
	if (r->uid != RULE_UID_ANY && id->uid != r->uid)
		return false;
	if (r->exe[0] && fnmatch(r->exe, id->exe, FNM_PATHNAME) != 0)
		return false;
	if (r->comm[0] && fnmatch(r->comm, id->comm, 0) != 0)
		return false;
	if (r->cmdline[0] && fnmatch(r->cmdline, id->cmdline, 0) != 0)
		return false;
	if (r->cgroup[0] && !match_cgroup(r->cgroup, id->cgroup))
		return false;
	return true;
}

bool rules_why_not(const struct rule *r, const struct proc_ident *id, char *ret, size_t size)
{
	ret[0] = '\0';
	if (r->uid != RULE_UID_ANY && id->uid != r->uid)
		snprintf(ret, size, "its uid is %u, the rule's %u", (unsigned)id->uid,
			 (unsigned)r->uid);
	else if (r->exe[0] && fnmatch(r->exe, id->exe, FNM_PATHNAME) != 0)
		snprintf(ret, size, id->exe[0] ? "its exe is \"%s\", the rule's \"%s\"" :
				      "its exe cannot be read here, the rule's is \"%s\"%s",
			 id->exe[0] ? id->exe : r->exe, id->exe[0] ? r->exe : "");
	else if (r->comm[0] && fnmatch(r->comm, id->comm, 0) != 0)
		snprintf(ret, size, "its comm is \"%s\", the rule's \"%s\"", id->comm, r->comm);
	else if (r->cmdline[0] && fnmatch(r->cmdline, id->cmdline, 0) != 0)
		snprintf(ret, size, "its command line does not match \"%s\"", r->cmdline);
	else if (r->cgroup[0] && !match_cgroup(r->cgroup, id->cgroup))
		snprintf(ret, size, "its cgroup is \"%s\", the rule's \"%s\"", id->cgroup,
			 r->cgroup);
	return !ret[0];
}

void rules_conditions(const struct rule *r, char *ret, size_t size)
{
	size_t n = 0;

	ret[0] = '\0';
#define COND(...) (n += n < size ? (size_t)snprintf(ret + n, size - n, __VA_ARGS__) : 0)
	if (r->exe[0])
		COND("%sexe \"%s\"", n ? ", " : "", r->exe);
	if (r->uid != RULE_UID_ANY)
		COND("%suid %u", n ? ", " : "", (unsigned)r->uid);
	if (r->comm[0])
		COND("%scomm \"%s\"", n ? ", " : "", r->comm);
	if (r->cmdline[0])
		COND("%scmdline \"%s\"", n ? ", " : "", r->cmdline);
	if (r->cgroup[0])
		COND("%scgroup \"%s\"", n ? ", " : "", r->cgroup);
#undef COND
	if (!n)
		snprintf(ret, size, "no conditions: every process");
}

int rules_match(const struct rule_set *rs, const struct proc_ident *id)
{
	if (rs->ix)
		return rules_index_match(rs->ix, rs, id);
	return rules_match_linear(rs, id);
}

int rules_match_linear(const struct rule_set *rs, const struct proc_ident *id)
{
	for (unsigned i = 0; i < rs->n; i++)
		if (rules_match_one(&rs->r[i], id))
			return (int)i;
	return -1;
}
