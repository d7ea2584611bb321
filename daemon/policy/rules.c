/*
 * Policy stage: the latency rules, what [rule NAME] sections say and which rule a
 * process matches. Pure: it never reads a process or a file (getpwnam for a uid
 * given by name aside), and it writes nothing but the errors to the stream it is given.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "latency.h"
#include "rqbalance.h"
#include "rules.h"

#define SECTION_PREFIX "rule"
#define STR_(x) #x
#define STR(x) STR_(x)

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
	if (r->has_uid && id->uid != r->uid)
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

bool rules_is_section(const char *section, const char **ret_name)
{
	size_t n = strlen(SECTION_PREFIX);

	/* "[rule]" alone is a rule section too, so that the missing name is what is reported. */
	if (strncmp(section, SECTION_PREFIX, n) != 0 || (section[n] != '\0' && section[n] != ' '))
		return false;
	*ret_name = section[n] ? section + n + 1 : section + n;
	return true;
}

static const char *check_name(const char *name)
{
	size_t n = strlen(name);

	if (n == 0)
		return "a rule needs a name: [rule NAME]";
	if (n >= RULE_NAME_MAX)
		return "rule name too long";
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("-_.@", name[i]))
			return "a rule name is letters, digits, '-', '_', '.' and '@'";
	return NULL;
}

static int parse_uid(const char *v, uid_t *ret, const char **reason)
{
	struct passwd *pw;

	if (v[0] && v[strspn(v, "0123456789")] == '\0') {
		unsigned long long n;
		char *end;

		errno = 0;
		n = strtoull(v, &end, 10);
		/* (uid_t)-1 is no one's: it means "unchanged" to setresuid(2). */
		if (*end != '\0' || errno || n >= (uid_t)-1) {
			*reason = "not a user id";
			return -EINVAL;
		}
		*ret = (uid_t)n;
		return 0;
	}
	pw = v[0] ? getpwnam(v) : NULL;
	if (!pw) {
		*reason = "no such user";
		return -EINVAL;
	}
	*ret = pw->pw_uid;
	return 0;
}

static int parse_bool(const char *v, bool *ret, const char **reason)
{
	if (!strcasecmp(v, "yes") || !strcasecmp(v, "true") || !strcasecmp(v, "on") ||
	    !strcmp(v, "1")) {
		*ret = true;
		return 0;
	}
	if (!strcasecmp(v, "no") || !strcasecmp(v, "false") || !strcasecmp(v, "off") ||
	    !strcmp(v, "0")) {
		*ret = false;
		return 0;
	}
	*reason = "not a boolean (yes or no)";
	return -EINVAL;
}

/* A string key's field in r, or NULL if key is not one. */
static char *str_field(struct rule *r, const char *key)
{
	if (strcmp(key, "comm") == 0)
		return r->comm;
	if (strcmp(key, "exe") == 0)
		return r->exe;
	if (strcmp(key, "cmdline") == 0)
		return r->cmdline;
	if (strcmp(key, "cgroup") == 0)
		return r->cgroup;
	return NULL;
}

static int parse_str(const char *key, const char *v, char *ret, const char **reason)
{
	size_t n = strlen(v);

	if (n == 0) {
		*reason = "empty (leave the key out to match any)";
		return -EINVAL;
	}
	if (n >= RULE_STR_MAX) {
		*reason = "too long";
		return -EINVAL;
	}
	if ((strcmp(key, "exe") == 0 || strcmp(key, "cgroup") == 0) && v[0] != '/') {
		*reason = "must be an absolute path";
		return -EINVAL;
	}
	memcpy(ret, v, n + 1);
	/* The cgroup prefix is kept without a trailing slash, so that matching stops at one. */
	if (strcmp(key, "cgroup") == 0)
		while (n > 1 && ret[n - 1] == '/')
			ret[--n] = '\0';
	return 0;
}

/*
 * Sets key in r, which holds the rule as the current file has it so far. The unset
 * state of every key but spoofable can be seen, so those are refused twice.
 */
static int set_field(struct rule *r, const char *key, const char *v, const char **reason)
{
	char *s = str_field(r, key);

	if (s) {
		if (s[0]) {
			*reason = "set twice in this rule";
			return -EINVAL;
		}
		return parse_str(key, v, s, reason);
	}
	if (strcmp(key, "latency_nice") == 0) {
		if (r->latency_nice != LAT_NONE) {
			*reason = "set twice in this rule";
			return -EINVAL;
		}
		return lat_parse(v, &r->latency_nice, reason);
	}
	if (strcmp(key, "uid") == 0) {
		if (r->has_uid) {
			*reason = "set twice in this rule";
			return -EINVAL;
		}
		r->has_uid = parse_uid(v, &r->uid, reason) == 0;
		return r->has_uid ? 0 : -EINVAL;
	}
	if (strcmp(key, "spoofable") == 0)
		return parse_bool(v, &r->spoofable, reason);
	*reason = "unknown key";
	return -EINVAL;
}

/* Whether r was started by file: the stored name is cut to fit, so compare it cut. */
static bool same_file(const struct rule *r, const char *file)
{
	char cut[sizeof(r->file)];

	snprintf(cut, sizeof(cut), "%s", file);
	return strcmp(r->file, cut) == 0;
}

static void rule_start(struct rule *r, const char *name, const char *file, unsigned line)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", name);
	snprintf(r->file, sizeof(r->file), "%s", file);
	r->line = line;
	r->latency_nice = LAT_NONE;
}

int rules_set_key(struct rule_set *rs, const char *name, const char *key, const char *value,
		  const char *file, unsigned line, const char **ret_reason)
{
	const char *reason = check_name(name);
	struct rule r;
	unsigned i;
	int ret;

	if (reason) {
		*ret_reason = reason;
		return -EINVAL;
	}
	for (i = 0; i < rs->n; i++)
		if (strcmp(rs->r[i].name, name) == 0)
			break;
	if (i == RULES_MAX) {
		*ret_reason = "too many rules (at most " STR(RULES_MAX) ")";
		return -EINVAL;
	}
	/* Work on a copy: a bad value leaves the set as it was. */
	if (i < rs->n && same_file(&rs->r[i], file))
		r = rs->r[i];
	else
		rule_start(&r, name, file, line);
	ret = set_field(&r, key, value, ret_reason);
	if (ret < 0)
		return ret;
	rs->r[i] = r;
	if (i == rs->n)
		rs->n++;
	return 0;
}

static void check_error(FILE *err, const struct rule *r, const char *key, const char *reason)
{
	if (err)
		fprintf(err, "%s:%u: [rule %s]%s%s: %s\n", r->file, r->line, r->name,
			key[0] ? " " : "", key, reason);
}

int rules_check(const struct rule_set *rs, FILE *err)
{
	int ret = 0;

	for (unsigned i = 0; i < rs->n; i++) {
		const struct rule *r = &rs->r[i];

		if (r->latency_nice == LAT_NONE) {
			check_error(err, r, "latency_nice", "missing: every rule needs a value");
			ret = -EINVAL;
		}
		if (!r->comm[0] && !r->exe[0] && !r->cmdline[0] && !r->cgroup[0] && !r->has_uid) {
			check_error(err, r, "",
				    "no match key (comm, exe, cmdline, cgroup or uid): "
				    "it would match every process");
			ret = -EINVAL;
		} else if (r->latency_nice < 0 && !r->exe[0] && !r->has_uid && !r->spoofable) {
			check_error(err, r, "latency_nice",
				    "a negative value needs exe or uid, since any process can "
				    "set its own comm and cmdline (or say spoofable = yes)");
			ret = -EINVAL;
		}
	}
	return ret;
}

void rules_dump(const struct rule_set *rs, FILE *out)
{
	for (unsigned i = 0; i < rs->n; i++) {
		const struct rule *r = &rs->r[i];

		fprintf(out, "%s[rule %s]\n", i ? "\n" : "", r->name);
		if (r->latency_nice != LAT_NONE)
			fprintf(out, "latency_nice = %d\n", r->latency_nice);
		if (r->comm[0])
			conf_dump_line(out, "comm", r->comm);
		if (r->exe[0])
			conf_dump_line(out, "exe", r->exe);
		if (r->cmdline[0])
			conf_dump_line(out, "cmdline", r->cmdline);
		if (r->cgroup[0])
			conf_dump_line(out, "cgroup", r->cgroup);
		if (r->has_uid)
			fprintf(out, "uid = %u\n", (unsigned)r->uid);
		fprintf(out, "spoofable = %s\n", r->spoofable ? "yes" : "no");
	}
}
