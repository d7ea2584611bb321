/*
 * An index over a rule set, built once at load, so that matching a process tries only
 * the rules it could match: those whose comm or exe names it exactly (hash buckets),
 * those whose comm pattern starts with literal characters the comm starts with, plus
 * every other rule (other patterns, rules with neither key). The winner is exactly
 * rules_match's: the lowest index among the candidates that match.
 */
#ifndef RQB_RULES_INDEX_H
#define RQB_RULES_INDEX_H

#include "model/model.h"

struct rules_index;

/*
 * Builds the index of rs. The index points into rs's strings: it is valid while rs is
 * neither changed nor freed. 0, or -ENOMEM (ret untouched).
 */
int rules_index_build(const struct rule_set *rs, struct rules_index **ret);
void rules_index_free(struct rules_index *ix);
/* The index of the first rule of rs (the one ix was built from) that matches id, or -1. */
int rules_index_match(const struct rules_index *ix, const struct rule_set *rs,
		      const struct proc_ident *id);

#endif
