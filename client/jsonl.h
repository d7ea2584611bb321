/*
 * One line of JSON holding one flat object, as ananicy(-cpp) rule files have them:
 * string, number, true/false/null values, and arrays of those. Nested objects and
 * arrays of arrays are refused; so are keys given twice.
 */
#ifndef RQB_JSONL_H
#define RQB_JSONL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define JSONL_MAX_KEYS 32
#define JSONL_MAX_STR 256 /* bytes of a key, a decoded string or an array's text, NUL in */

enum jsonl_kind { JSONL_STR, JSONL_NUM, JSONL_BOOL, JSONL_NULL, JSONL_ARRAY };

struct jsonl_value {
	char key[JSONL_MAX_STR];
	enum jsonl_kind kind;
	char text[JSONL_MAX_STR]; /* STR: the decoded bytes; NUM as written; BOOL "true" or
				   * "false"; NULL "null"; ARRAY its items in JSON, compact */
	bool is_int;              /* NUM: an integer that fits num */
	long long num;            /* NUM with is_int */
};

struct jsonl_obj {
	unsigned n;
	struct jsonl_value v[JSONL_MAX_KEYS];
};

/*
 * Parses line (without its newline) into *ret: 0 for an object, 1 for a blank line or
 * a comment ('#' first after blanks), -EINVAL with *ret_reason for anything else.
 * After the object only blanks may follow, or a '#' comment. *ret is clobbered.
 */
int jsonl_parse(const char *line, struct jsonl_obj *ret, const char **ret_reason);

/* The value of key, or NULL. */
const struct jsonl_value *jsonl_get(const struct jsonl_obj *o, const char *key);

/* v's value in JSON, on one line: strings quoted, controls and '"' '\\' escaped. */
void jsonl_put_value(FILE *out, const struct jsonl_value *v);
void jsonl_put_string(FILE *out, const char *s);

#endif
