/*
 * Latency rules: INI sections [rule NAME] in the config file and in drop-ins under
 * rules_dir. Each rule names a latency-nice value and what a process must match.
 * Matching is pure (policy layer); reading a process's identity is in sample/ident.c.
 *
 * Order: rules are tried in the order they were read (the main file top to bottom,
 * then the *.conf files of rules_dir in byte order of name); the first rule that matches
 * wins. A rule whose NAME was already read replaces the earlier one in its place.
 *
 * comm and argv[0] are the process's own to set: a rule whose value is negative (a
 * favour) must require exe or uid, unless it says spoofable = yes.
 */
#ifndef RQB_RULES_H
#define RQB_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define RULES_MAX 128
#define RULE_NAME_MAX 64
#define RULE_STR_MAX 256
/* No one's uid ((uid_t)-1 means "unchanged" to setresuid(2)): a rule without uid. */
#define RULE_UID_ANY ((uid_t)-1)

struct rule {
	char name[RULE_NAME_MAX];
	int latency_nice;              /* -20…19; LAT_NONE (latency.h) until set */
	char comm[RULE_STR_MAX];       /* fnmatch(3) pattern on comm; "" = any */
	char exe[RULE_STR_MAX];        /* fnmatch(3) pattern (FNM_PATHNAME) on the exe path */
	char cmdline[RULE_STR_MAX];    /* fnmatch(3) pattern on argv joined by spaces */
	char cgroup[RULE_STR_MAX];     /* cgroup path prefix, at a '/' boundary */
	uid_t uid;                     /* real uid; RULE_UID_ANY if the rule names none */
	bool spoofable;                /* a negative value without exe or uid is allowed */
	char file[RULE_STR_MAX];       /* where it was defined, for messages */
	unsigned line;
};

struct rule_set {
	unsigned n;
	struct rule r[RULES_MAX];
};

/* What a rule can match a process on; strings may be "" where unreadable, never NULL. */
struct proc_ident {
	pid_t pid;
	uid_t uid;            /* real uid */
	const char *comm;
	const char *exe;      /* readlink /proc/PID/exe; "" for kernel threads, when gone, or
			       * when the path does not lead here to the file it runs */
	const char *cmdline;  /* argv joined by single spaces */
	const char *cgroup;   /* the cgroup path: v2 "0::" line, else the v1 cpu controller's */
};

/*
 * The index of the first rule that matches, or -1. The rules come from the config
 * (conf.c parses and checks them); this side only matches.
 */
int rules_match(const struct rule_set *rs, const struct proc_ident *id);
/*
 * For rqctl explain: true if rule r matches id; else false, with the first of its
 * conditions that id fails, in words, in ret ("its uid is 1000, the rule's 27").
 */
bool rules_why_not(const struct rule *r, const struct proc_ident *id, char *ret, size_t size);
/* The conditions rule r names, in words ("exe \"/usr/sbin/mysqld\", uid 27"). */
void rules_conditions(const struct rule *r, char *ret, size_t size);

#endif
