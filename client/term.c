/*
 * Client side: names for a human's terminal, escaped where a terminal would act on
 * them. It only formats what it is given; it never decides what is shown.
 */
#include <langinfo.h>
#include <string.h>

#include "term.h"

/* The terminal takes UTF-8: set from the locale at start. */
static bool utf8_terminal;

void term_init(void)
{
	utf8_terminal = strcmp(nl_langinfo(CODESET), "UTF-8") == 0;
}

size_t term_utf8_len(const unsigned char *s, size_t n)
{
	size_t len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : 2;
	unsigned char lo = 0x80, hi = 0xbf;

	if (s[0] < 0xc2 || s[0] > 0xf4 || len > n)
		return 0;
	/* Neither overlong forms, nor surrogates, nor past U+10FFFF. */
	if (s[0] == 0xe0)
		lo = 0xa0;
	else if (s[0] == 0xed)
		hi = 0x9f;
	else if (s[0] == 0xf0)
		lo = 0x90;
	else if (s[0] == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return len;
}

bool term_is_c1(const unsigned char *s, size_t len)
{
	return len == 2 && s[0] == 0xc2 && s[1] < 0xa0;
}

static void put(FILE *out, const char *s, size_t n, bool utf8)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < n;) {
		size_t len = p[i] >= 0x80 && utf8 ? term_utf8_len(p + i, n - i) : 0;

		if (len && !term_is_c1(p + i, len)) {
			fwrite(p + i, 1, len, out);
			i += len;
		} else if (p[i] < 0x20 || p[i] >= 0x7f) {
			for (size_t k = 0; k < (len ? len : 1); k++)
				fprintf(out, "\\x%02x", p[i + k]);
			i += len ? len : 1;
		} else {
			fputc(p[i++], out);
		}
	}
}

void term_put(FILE *out, const char *s, size_t n)
{
	put(out, s, n, utf8_terminal);
}

void term_put_utf8(FILE *out, const char *s, size_t n)
{
	put(out, s, n, true);
}

const char *term_safe(const char *s, char *buf, size_t size)
{
	FILE *f = fmemopen(buf, size, "w");

	if (!f)
		return "?";
	term_put(f, s, strlen(s));
	fclose(f);
	buf[size - 1] = '\0';
	return buf;
}
