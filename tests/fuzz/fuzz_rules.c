/*
 * Fuzz target: the rule matcher. The input is text: rule lines "NAME KEY VALUE" fed
 * to conf_rule_set (as the config parser would), then a line "%%", then the process:
 * uid, comm, exe, cmdline and cgroup, one a line, each cut to what ident_read gives.
 */
#include <limits.h>

#include "conf/conf.h"
#include "fuzz.h"
#include "policy/rules.h"
#include "taskev/ident.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fuzz_quiet();
	return 0;
}

/* Cuts line at its first blank: returns the rest, or "" if none. */
static char *cut_word(char *line)
{
	char *sp = strchr(line, ' ');

	if (!sp)
		return line + strlen(line);
	*sp = '\0';
	return sp + 1;
}

/* The next line of *p (newline cut), or NULL at the end. */
static char *next_line(char **p)
{
	char *line = *p, *nl;

	if (!line)
		return NULL;
	nl = strchr(line, '\n');
	if (nl) {
		*nl = '\0';
		*p = nl + 1;
	} else {
		*p = NULL;
	}
	return line;
}

/* A field of the process, no longer than its buffer in struct ident_buf. */
static const char *field(char **p, size_t max)
{
	char *line = next_line(p);

	if (!line)
		return "";
	if (strlen(line) >= max)
		line[max - 1] = '\0';
	return line;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct rule_set rs;
	char *text = fuzz_strdup(data, size), *p = text, *line;
	struct proc_ident id = { .pid = 1 };
	unsigned lineno = 0;
	int m;

	conf_rules_free(&rs);
	while ((line = next_line(&p)) && strcmp(line, "%%") != 0) {
		char *key = cut_word(line), *value = cut_word(key);
		const char *reason = NULL;

		if (conf_rule_set(&rs, line, key, value, "fuzz.conf", ++lineno, &reason) < 0)
			FUZZ_CHECK(reason != NULL);
		FUZZ_CHECK(rs.n <= RULES_MAX);
	}
	conf_rules_check(&rs, fuzz_devnull());
	conf_dump_rules(&rs, fuzz_devnull());
	id.uid = (uid_t)strtoul(field(&p, 32), NULL, 10);
	id.comm = field(&p, IDENT_COMM_MAX);
	id.exe = field(&p, PATH_MAX);
	id.cmdline = field(&p, IDENT_CMDLINE_MAX);
	id.cgroup = field(&p, PATH_MAX);
	m = rules_match(&rs, &id);
	FUZZ_CHECK(m >= -1 && m < (int)rs.n);
	/* Pure: the same answer twice; and through the index as by scanning. */
	FUZZ_CHECK(rules_match(&rs, &id) == m);
	if (conf_rules_indexed(&rs) == 0)
		FUZZ_CHECK((rs.ix || !rs.n) && rules_match(&rs, &id) == m);
	conf_rules_free(&rs);
	free(text);
	return 0;
}
