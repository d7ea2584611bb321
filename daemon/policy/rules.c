/*
 * Policy stage: which latency rule a process matches. Pure: its only library calls
 * are fnmatch and string functions; it never reads a process or a file, and never
 * prints. What [rule NAME] sections say is the config's to parse and check (conf.c).
 */
#include <fnmatch.h>
#include <string.h>

#include "policy/rules.h"

static bool match_cgroup(const char *prefix, const char *path)
{
	size_t n = strlen(prefix);

	/* "/" is stored as is; every other prefix without its trailing slash. */
	if (strcmp(prefix, "/") == 0)
		return path[0] == '/';
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Every key the rule names must match; a key it leaves out matches anything. */
static bool rule_matches(const struct rule *r, const struct proc_ident *id)
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

int rules_match(const struct rule_set *rs, const struct proc_ident *id)
{
	for (unsigned i = 0; i < rs->n; i++)
		if (rule_matches(&rs->r[i], id))
			return (int)i;
	return -1;
}
