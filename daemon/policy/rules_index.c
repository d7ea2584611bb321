/*
 * Policy stage: the rule index (rules_index.h). Pure, like rules.c: it allocates and
 * hashes, it never reads a process or a file. It must never change which rule wins.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/rules.h"
#include "policy/rules_index.h"

/* A list of rule indices, ascending because rules are added in their order. */
struct ix_list {
	unsigned *v;     /* rule indices into the set */
	unsigned n;      /* entries used */
	unsigned cap;    /* entries allocated */
};

/* One key of a hash: the rules whose comm (or exe, or comm's literal start) is key. */
struct ix_entry {
	const char *key;         /* points into the rule set, or is owned */
	char *owned;             /* the key, where the index made it (a literal start) */
	struct ix_list rules;    /* rules with this key, ascending */
	struct ix_entry *next;   /* the next entry of this bucket */
};

struct ix_hash {
	struct ix_entry **b;     /* buckets, nb of them */
	size_t nb;               /* a power of two */
};

struct rules_index {
	struct ix_hash comm;     /* rules whose comm is plain and whose exe is not */
	struct ix_hash exe;      /* rules whose exe is a plain path */
	/*
	 * Rules with no exe whose comm is a pattern that starts with literal characters
	 * (steam*, kworker/ and a star), by that start: a comm can match only if it begins so.
	 */
	struct ix_hash prefix;
	struct ix_list always;   /* every other rule: tried for every process */
};

/* A literal start at most this long is indexed; a longer one goes to always. */
#define IX_PREFIX_MAX 31

/* How many characters a pattern starts with that fnmatch(3) takes literally. */
static size_t literal_len(const char *p)
{
	return strcspn(p, "*?[\\");
}

/* Plain: fnmatch(3) matches it against exactly the string itself (no * ? [ or \). */
static bool is_plain(const char *p)
{
	return p[0] && !p[literal_len(p)];
}

static uint64_t ix_hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int ix_list_add(struct ix_list *l, unsigned i)
{
	if (l->n == l->cap) {
		unsigned cap = l->cap ? l->cap * 2 : 2;
		unsigned *v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = i;
	return 0;
}

static struct ix_entry *ix_find(const struct ix_hash *h, const char *key)
{
	struct ix_entry *e;

	if (!h->nb)
		return NULL;
	for (e = h->b[ix_hash_str(key) & (h->nb - 1)]; e; e = e->next)
		if (strcmp(e->key, key) == 0)
			return e;
	return NULL;
}

/* Adds rule i under key; owned, if not NULL, is key's own copy, taken or freed. */
static int ix_hash_add(struct ix_hash *h, const char *key, char *owned, unsigned i)
{
	struct ix_entry *e = ix_find(h, key);
	size_t b;

	if (!e) {
		e = calloc(1, sizeof(*e));
		if (!e) {
			free(owned);
			return -ENOMEM;
		}
		b = ix_hash_str(key) & (h->nb - 1);
		e->key = key;
		e->owned = owned;
		e->next = h->b[b];
		h->b[b] = e;
	} else {
		free(owned);
	}
	return ix_list_add(&e->rules, i);
}

static void ix_hash_free(struct ix_hash *h)
{
	for (size_t b = 0; b < h->nb; b++)
		while (h->b[b]) {
			struct ix_entry *e = h->b[b];

			h->b[b] = e->next;
			free(e->rules.v);
			free(e->owned);
			free(e);
		}
	free(h->b);
}

/* Buckets for n keys at most, a power of two, at least n. */
static int ix_hash_init(struct ix_hash *h, unsigned n)
{
	h->nb = 16;
	while (h->nb < n)
		h->nb *= 2;
	h->b = calloc(h->nb, sizeof(*h->b));
	return h->b ? 0 : -ENOMEM;
}

/* An exact exe is the narrower key; a rule goes into one place only. */
static int ix_add_rule(struct rules_index *ix, const struct rule *r, unsigned i)
{
	size_t n;
	char *start;

	if (is_plain(r->exe))
		return ix_hash_add(&ix->exe, r->exe, NULL, i);
	if (!r->exe[0] && is_plain(r->comm))
		return ix_hash_add(&ix->comm, r->comm, NULL, i);
	n = literal_len(r->comm);
	if (!r->exe[0] && n > 0 && n <= IX_PREFIX_MAX) {
		start = strndup(r->comm, n);
		return start ? ix_hash_add(&ix->prefix, start, start, i) : -ENOMEM;
	}
	return ix_list_add(&ix->always, i);
}

void rules_index_free(struct rules_index *ix)
{
	if (!ix)
		return;
	ix_hash_free(&ix->comm);
	ix_hash_free(&ix->exe);
	ix_hash_free(&ix->prefix);
	free(ix->always.v);
	free(ix);
}

int rules_index_build(const struct rule_set *rs, struct rules_index **ret)
{
	struct rules_index *ix = calloc(1, sizeof(*ix));
	int r = ix ? 0 : -ENOMEM;

	if (!r)
		r = ix_hash_init(&ix->comm, rs->n);
	if (!r)
		r = ix_hash_init(&ix->exe, rs->n);
	if (!r)
		r = ix_hash_init(&ix->prefix, rs->n);
	for (unsigned i = 0; !r && i < rs->n; i++)
		r = ix_add_rule(ix, &rs->r[i], i);
	if (r < 0) {
		rules_index_free(ix);
		return r;
	}
	*ret = ix;
	return 0;
}

/* The first rule of l below best that matches id; best if none. */
static int ix_first(const struct ix_list *l, const struct rule_set *rs,
		    const struct proc_ident *id, int best)
{
	for (unsigned k = 0; k < l->n; k++) {
		if (best >= 0 && l->v[k] >= (unsigned)best)
			break;
		if (rules_match_one(&rs->r[l->v[k]], id))
			return (int)l->v[k];
	}
	return best;
}

int rules_index_match(const struct rules_index *ix, const struct rule_set *rs,
		      const struct proc_ident *id)
{
	const struct ix_entry *e;
	int best = -1;

	e = ix_find(&ix->exe, id->exe);
	if (e)
		best = ix_first(&e->rules, rs, id, best);
	e = ix_find(&ix->comm, id->comm);
	if (e)
		best = ix_first(&e->rules, rs, id, best);
	/* Each start of the comm that a pattern may begin with literally. */
	if (ix->prefix.nb) {
		char start[IX_PREFIX_MAX + 1];
		size_t len = strlen(id->comm);

		for (size_t k = 1; k <= len && k <= IX_PREFIX_MAX; k++) {
			memcpy(start, id->comm, k);
			start[k] = '\0';
			e = ix_find(&ix->prefix, start);
			if (e)
				best = ix_first(&e->rules, rs, id, best);
		}
	}
	return ix_first(&ix->always, rs, id, best);
}
