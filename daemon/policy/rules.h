/*
 * Latency rules: INI sections [rule NAME] in the config file and in drop-ins under
 * rules_dir. Each rule names a latency-nice value and what a process must match.
 * Matching is pure (policy layer); reading a process's identity is in taskev/ident.c.
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

#include "model/model.h"

/*
 * The index of the first rule that matches, or -1. The rules come from the config
 * (conf.c parses and checks them); this side only matches, through rs->ix where the
 * config built one, which gives the same answer as rules_match_linear.
 */
int rules_match(const struct rule_set *rs, const struct proc_ident *id);
/* The same, trying every rule in order: the reference the index is tested against. */
int rules_match_linear(const struct rule_set *rs, const struct proc_ident *id);
/* True if rule r matches id: every key it names does. */
bool rules_match_one(const struct rule *r, const struct proc_ident *id);
/*
 * For rqctl explain: true if rule r matches id; else false, with the first of its
 * conditions that id fails, in words, in ret ("its uid is 1000, the rule's 27").
 */
bool rules_why_not(const struct rule *r, const struct proc_ident *id, char *ret, size_t size);
/* The conditions rule r names, in words ("exe \"/usr/sbin/mysqld\", uid 27"). */
void rules_conditions(const struct rule *r, char *ret, size_t size);

#endif
