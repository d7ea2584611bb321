/*
 * Text for a human's terminal (term.c): names that come from processes, cgroups and
 * files other users write may hold any byte, and a terminal acts on some of them
 * (ESC [2J clears it, OSC sets its title, a C1 CSI acts as ESC [). Every such name
 * rqctl prints goes through here.
 */
#ifndef RQB_TERM_H
#define RQB_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Reads whether the terminal takes UTF-8 from the locale (after setlocale). */
void term_init(void);

/* The length of the well-formed UTF-8 character at s (at most n bytes), or 0. */
size_t term_utf8_len(const unsigned char *s, size_t n);
/* Whether the UTF-8 character at s (len bytes) is a C1 control (U+0080..U+009F). */
bool term_is_c1(const unsigned char *s, size_t len);

/*
 * Writes the n bytes of s, as ps shows a name: what a terminal would act on (C0 and
 * C1 controls, DEL, bytes that are not UTF-8 or, in another locale than UTF-8, not
 * ASCII) as \xHH, so that no name clears, moves or recolours it.
 */
void term_put(FILE *out, const char *s, size_t n);
/* term_put into buf, for a table's column: buf. */
const char *term_safe(const char *s, char *buf, size_t size);
/*
 * The same for text that is a UTF-8 file's before it is the terminal's (a config that
 * rqctl import-ananicy writes): well-formed UTF-8 but C1 passes, whatever the locale.
 */
void term_put_utf8(FILE *out, const char *s, size_t n);

#endif
