/*
 * Config stage: the memory of a rule set (model.h): rules in a growing array, their
 * strings in blocks that never move, a hash of names. It never parses or checks a rule.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "conf/conf.h"
#include "policy/rules_index.h"

#define STRBLOCK_MIN 65536   /* bytes of a string block, unless one string needs more */

static uint64_t name_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

void conf_rules_free(struct rule_set *rs)
{
	while (rs->strs) {
		struct rule_strblock *b = rs->strs;

		rs->strs = b->next;
		free(b);
	}
	free(rs->r);
	free(rs->by_name);
	rules_index_free(rs->ix);
	memset(rs, 0, sizeof(*rs));
}

const char *conf_rules_strdup(struct rule_set *rs, const char *s)
{
	size_t n = strlen(s) + 1;
	struct rule_strblock *b = rs->strs;
	char *p;

	if (n == 1)
		return "";
	if (!b || b->size - b->used < n) {
		size_t size = n > STRBLOCK_MIN ? n : STRBLOCK_MIN;

		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->size = size;
		b->used = 0;
		b->next = rs->strs;
		rs->strs = b;
	}
	p = b->data + b->used;
	memcpy(p, s, n);
	b->used += n;
	return p;
}

/* The slot of name in the hash: where it is, or the free one where it would go. */
static unsigned name_slot(const struct rule_set *rs, const char *name)
{
	unsigned mask = rs->nby_name - 1, s = (unsigned)name_hash(name) & mask;

	while (rs->by_name[s] && strcmp(rs->r[rs->by_name[s] - 1].name, name) != 0)
		s = (s + 1) & mask;
	return s;
}

int conf_rules_find(const struct rule_set *rs, const char *name)
{
	unsigned s;

	if (!rs->nby_name)
		return -1;
	s = name_slot(rs, name);
	return rs->by_name[s] ? (int)rs->by_name[s] - 1 : -1;
}

/* Room for one more rule, and a hash at most half full with it. */
static int grow(struct rule_set *rs)
{
	if (rs->n == rs->cap) {
		unsigned cap = rs->cap ? rs->cap * 2 : 16;
		struct rule *r = realloc(rs->r, cap * sizeof(*r));

		if (!r)
			return -ENOMEM;
		rs->r = r;
		rs->cap = cap;
	}
	if (2 * (rs->n + 1) > rs->nby_name) {
		unsigned nb = rs->nby_name ? rs->nby_name * 2 : 32;
		unsigned *old = rs->by_name, nold = rs->nby_name;

		rs->by_name = calloc(nb, sizeof(*rs->by_name));
		if (!rs->by_name) {
			rs->by_name = old;
			return -ENOMEM;
		}
		rs->nby_name = nb;
		for (unsigned s = 0; s < nold; s++)
			if (old[s])
				rs->by_name[name_slot(rs, rs->r[old[s] - 1].name)] = old[s];
		free(old);
	}
	return 0;
}

void conf_rules_changed(struct rule_set *rs)
{
	rules_index_free(rs->ix);
	rs->ix = NULL;
}

int conf_rules_indexed(struct rule_set *rs)
{
	conf_rules_changed(rs);
	/* No rules, no memory: a config without rules owns nothing to free. */
	if (!rs->n)
		return 0;
	return rules_index_build(rs, &rs->ix);
}

int conf_rules_append(struct rule_set *rs, const struct rule *r)
{
	int ret = grow(rs);

	if (ret < 0)
		return ret;
	conf_rules_changed(rs);
	rs->r[rs->n] = *r;
	rs->n++;
	rs->by_name[name_slot(rs, r->name)] = rs->n;
	return 0;
}
