/*
 * Client side: a strict reader of one-line flat JSON objects (ananicy rule files).
 * It only parses text handed to it: it never opens a file and never prints a message.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"

struct cursor {
	const char *p;
	const char *reason; /* set by the first failure */
};

static int fail(struct cursor *c, const char *reason)
{
	if (!c->reason)
		c->reason = reason;
	return -EINVAL;
}

static void skip_blanks(struct cursor *c)
{
	c->p += strspn(c->p, " \t\r");
}

static int hex4(const char *s, unsigned *ret)
{
	unsigned v = 0;

	for (int i = 0; i < 4; i++) {
		char ch = s[i];
		int d = ch >= '0' && ch <= '9'   ? ch - '0'
			: ch >= 'a' && ch <= 'f' ? ch - 'a' + 10
			: ch >= 'A' && ch <= 'F' ? ch - 'A' + 10
						 : -1;

		if (d < 0)
			return -EINVAL;
		v = v << 4 | (unsigned)d;
	}
	*ret = v;
	return 0;
}

/* Appends code point cp as UTF-8 to buf (of JSONL_MAX_STR) at *n. */
static int put_utf8(struct cursor *c, char *buf, size_t *n, unsigned cp)
{
	unsigned char b[4];
	size_t k;

	if (cp < 0x80) {
		b[0] = (unsigned char)cp;
		k = 1;
	} else if (cp < 0x800) {
		b[0] = (unsigned char)(0xc0 | cp >> 6);
		b[1] = (unsigned char)(0x80 | (cp & 0x3f));
		k = 2;
	} else if (cp < 0x10000) {
		b[0] = (unsigned char)(0xe0 | cp >> 12);
		b[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp & 0x3f));
		k = 3;
	} else {
		b[0] = (unsigned char)(0xf0 | cp >> 18);
		b[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3f));
		b[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3f));
		b[3] = (unsigned char)(0x80 | (cp & 0x3f));
		k = 4;
	}
	if (*n + k >= JSONL_MAX_STR)
		return fail(c, "string too long");
	memcpy(buf + *n, b, k);
	*n += k;
	return 0;
}

/* A \uXXXX escape at c->p (after the backslash and 'u'), a surrogate pair joined. */
static int parse_u_escape(struct cursor *c, unsigned *ret)
{
	unsigned hi, lo;

	if (hex4(c->p, &hi) < 0)
		return fail(c, "bad \\u escape");
	c->p += 4;
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return fail(c, "lone low surrogate in a \\u escape");
	if (hi < 0xd800 || hi > 0xdbff) {
		*ret = hi;
		return hi ? 0 : fail(c, "\\u0000 in a string");
	}
	if (c->p[0] != '\\' || c->p[1] != 'u' || hex4(c->p + 2, &lo) < 0 || lo < 0xdc00 ||
	    lo > 0xdfff)
		return fail(c, "high surrogate without its low half");
	c->p += 6;
	*ret = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
	return 0;
}

static int parse_escape(struct cursor *c, char *buf, size_t *n)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *k = *c->p ? strchr(from, *c->p) : NULL;
	unsigned cp;

	if (k) {
		c->p++;
		return put_utf8(c, buf, n, (unsigned char)to[k - from]);
	}
	if (*c->p != 'u')
		return fail(c, "bad escape in a string");
	c->p++;
	if (parse_u_escape(c, &cp) < 0)
		return -EINVAL;
	return put_utf8(c, buf, n, cp);
}

/* A string at c->p (its opening quote) into buf, decoded. */
static int parse_string(struct cursor *c, char *buf)
{
	size_t n = 0;

	if (*c->p != '"')
		return fail(c, "expected a string");
	c->p++;
	while (*c->p != '"') {
		unsigned char ch = (unsigned char)*c->p;

		if (ch == '\0')
			return fail(c, "unterminated string");
		if (ch < 0x20)
			return fail(c, "control character in a string");
		if (ch == '\\') {
			c->p++;
			if (parse_escape(c, buf, &n) < 0)
				return -EINVAL;
			continue;
		}
		if (n + 1 >= JSONL_MAX_STR)
			return fail(c, "string too long");
		buf[n++] = (char)ch;
		c->p++;
	}
	c->p++;
	buf[n] = '\0';
	return 0;
}

static size_t span_digits(const char *s)
{
	return strspn(s, "0123456789");
}

/* A number as JSON writes one: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int parse_number(struct cursor *c, struct jsonl_value *v)
{
	const char *s = c->p, *q = s + (*s == '-');
	size_t d = span_digits(q);
	bool integer = true;

	if (d == 0 || (q[0] == '0' && d > 1))
		return fail(c, "bad number");
	q += d;
	if (*q == '.') {
		integer = false;
		if (!(d = span_digits(++q)))
			return fail(c, "bad number");
		q += d;
	}
	if (*q == 'e' || *q == 'E') {
		integer = false;
		q += 1 + (q[1] == '+' || q[1] == '-');
		if (!(d = span_digits(q)))
			return fail(c, "bad number");
		q += d;
	}
	if ((size_t)(q - s) >= sizeof(v->text))
		return fail(c, "number too long");
	memcpy(v->text, s, (size_t)(q - s));
	v->text[q - s] = '\0';
	errno = 0;
	v->num = integer ? strtoll(v->text, NULL, 10) : 0;
	v->is_int = integer && !errno;
	v->kind = JSONL_NUM;
	c->p = q;
	return 0;
}

static int parse_word(struct cursor *c, struct jsonl_value *v)
{
	static const struct {
		const char *word;
		enum jsonl_kind kind;
	} words[] = { { "true", JSONL_BOOL }, { "false", JSONL_BOOL }, { "null", JSONL_NULL } };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t n = strlen(words[i].word);

		if (strncmp(c->p, words[i].word, n) == 0) {
			strcpy(v->text, words[i].word);
			v->kind = words[i].kind;
			c->p += n;
			return 0;
		}
	}
	return fail(c, "expected a value");
}

static int parse_scalar(struct cursor *c, struct jsonl_value *v)
{
	v->is_int = false;
	v->num = 0;
	if (*c->p == '"') {
		v->kind = JSONL_STR;
		return parse_string(c, v->text);
	}
	if (*c->p == '-' || (*c->p >= '0' && *c->p <= '9'))
		return parse_number(c, v);
	if (*c->p == '{' || *c->p == '[')
		return fail(c, "nested objects and arrays are not supported");
	return parse_word(c, v);
}

/* Appends item's JSON form to an array's text; 0 or -EINVAL when it does not fit. */
static int append_item(struct cursor *c, struct jsonl_value *arr, const struct jsonl_value *item)
{
	size_t n = strlen(arr->text);
	FILE *f = fmemopen(arr->text + n, sizeof(arr->text) - n, "w");
	long end;

	if (!f)
		return fail(c, "out of memory");
	fputs(n > 1 ? ", " : "", f);
	jsonl_put_value(f, item);
	end = ftell(f);
	fclose(f);
	if (end < 0 || n + (size_t)end + 2 >= sizeof(arr->text))
		return fail(c, "array too long");
	return 0;
}

static int parse_array(struct cursor *c, struct jsonl_value *v)
{
	struct jsonl_value item;

	c->p++;
	strcpy(v->text, "[");
	v->kind = JSONL_ARRAY;
	v->is_int = false;
	v->num = 0;
	skip_blanks(c);
	while (*c->p != ']') {
		if (strlen(v->text) > 1) {
			if (*c->p != ',')
				return fail(c, "expected ',' or ']' in an array");
			c->p++;
			skip_blanks(c);
		}
		if (parse_scalar(c, &item) < 0 || append_item(c, v, &item) < 0)
			return -EINVAL;
		skip_blanks(c);
	}
	c->p++;
	strcat(v->text, "]");
	return 0;
}

static int parse_member(struct cursor *c, struct jsonl_obj *o)
{
	struct jsonl_value *v;

	if (o->n == JSONL_MAX_KEYS)
		return fail(c, "too many keys");
	v = &o->v[o->n];
	if (parse_string(c, v->key) < 0)
		return -EINVAL;
	if (jsonl_get(o, v->key))
		return fail(c, "a key given twice");
	skip_blanks(c);
	if (*c->p != ':')
		return fail(c, "expected ':' after a key");
	c->p++;
	skip_blanks(c);
	if (*c->p == '[' ? parse_array(c, v) < 0 : parse_scalar(c, v) < 0)
		return -EINVAL;
	o->n++;
	return 0;
}

static int parse_object(struct cursor *c, struct jsonl_obj *o)
{
	o->n = 0;
	if (*c->p != '{')
		return fail(c, "expected '{'");
	c->p++;
	skip_blanks(c);
	while (*c->p != '}') {
		if (*c->p == '\0')
			return fail(c, "unterminated object");
		if (o->n) {
			if (*c->p != ',')
				return fail(c, "expected ',' or '}'");
			c->p++;
			skip_blanks(c);
		}
		if (parse_member(c, o) < 0)
			return -EINVAL;
		skip_blanks(c);
	}
	c->p++;
	return 0;
}

int jsonl_parse(const char *line, struct jsonl_obj *ret, const char **ret_reason)
{
	struct cursor c = { .p = line };

	skip_blanks(&c);
	if (*c.p == '\0' || *c.p == '#')
		return 1;
	if (parse_object(&c, ret) < 0) {
		*ret_reason = c.reason;
		return -EINVAL;
	}
	skip_blanks(&c);
	if (*c.p != '\0' && *c.p != '#') {
		*ret_reason = "text after the object";
		return -EINVAL;
	}
	return 0;
}

const struct jsonl_value *jsonl_get(const struct jsonl_obj *o, const char *key)
{
	for (unsigned i = 0; i < o->n; i++)
		if (strcmp(o->v[i].key, key) == 0)
			return &o->v[i];
	return NULL;
}

void jsonl_put_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == 0x7f)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
}

void jsonl_put_value(FILE *out, const struct jsonl_value *v)
{
	if (v->kind == JSONL_STR)
		jsonl_put_string(out, v->text);
	else
		fputs(v->text, out);
}
