/*
 * Actuate stage, latency: the journal's records (escaped path fields, task and cgroup
 * lines) and its compaction. It writes only the journal, never a knob.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "actuate/journal.h"
#include "actuate/latact.h"
#include "actuate/latact_int.h"
#include "actuate/latknob.h"
#include "util/log.h"

/*
 * A cgroup or unit path as one journal field: a name may hold any byte but '/' and
 * NUL, blanks and newlines included, so bytes up to space, DEL and '\\' are written as
 * \xHH (the replay format's escape); "" is "-". ret must hold LAT_ESC_MAX bytes.
 */
void latact_escape_field(const char *s, char *ret, size_t size)
{
	size_t n = 0;

	if (!s[0]) {
		snprintf(ret, size, "-");
		return;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p && n + 5 <= size; p++) {
		if (*p <= 0x20 || *p == 0x7f || *p == '\\')
			n += (size_t)snprintf(ret + n, size - n, "\\x%02x", *p);
		else
			ret[n++] = (char)*p;
	}
	ret[n] = '\0';
}

/* The reverse: -EINVAL for a bad escape or an escaped NUL, -ENAMETOOLONG. */
int latact_unescape_field(const char *in, char *ret, size_t size)
{
	size_t n = 0;

	if (strcmp(in, "-") == 0) {
		ret[0] = '\0';
		return 0;
	}
	for (const char *p = in; *p; p++) {
		char c = *p;

		if (c == '\\') {
			unsigned v;

			if (p[1] != 'x' || !isxdigit((unsigned char)p[2]) ||
			    !isxdigit((unsigned char)p[3]) || sscanf(p + 2, "%2x", &v) != 1 || !v)
				return -EINVAL;
			c = (char)v;
			p += 3;
		}
		if (n + 1 >= size)
			return -ENAMETOOLONG;
		ret[n++] = c;
	}
	ret[n] = '\0';
	return 0;
}

/* A state: its positional knobs (latknob.h), then its escaped cgroup. */
static void format_state(const struct lat_state *s, char *buf, size_t size)
{
	char cg[LAT_ESC_MAX], knobs[96];

	latact_escape_field(s->cgroup, cg, sizeof(cg));
	latknob_format(s, knobs, sizeof(knobs));
	snprintf(buf, size, "%s %s", knobs, cg);
}

/* A task's record: "lat TID TGID START VALUE PREV SET[ KEY=P/S…]", with its newline. */
static void task_line(const struct lat_entry *e, char *line, size_t size)
{
	char p[LAT_ESC_MAX + 96], s[LAT_ESC_MAX + 96], keyed[96];

	format_state(&e->prev, p, sizeof(p));
	format_state(&e->set, s, sizeof(s));
	latknob_format_keyed(&e->prev, &e->set, keyed, sizeof(keyed));
	snprintf(line, size, "lat %d %d %" PRIu64 " %d %s %s%s\n", (int)e->task.tid, (int)e->tgid,
		 e->task.start_time, e->value, p, s, keyed);
}

/* A cgroup's record: "cg VALUE PATH UNIT PREV_W PREV_IDLE SET_W SET_IDLE", with its newline. */
static void cg_line(const struct lat_cg_entry *c, char *line, size_t size)
{
	char path[LAT_ESC_MAX], unit[LAT_ESC_MAX];

	latact_escape_field(c->path, path, sizeof(path));
	latact_escape_field(c->unit, unit, sizeof(unit));
	snprintf(line, size, "cg %d %s %s %" PRIu64 " %d %" PRIu64 " %d\n", c->value, path, unit,
		 c->prev_weight, c->prev_idle, c->set_weight, c->set_idle);
}

int latact_journal_task(struct latact *la, const struct lat_entry *e)
{
	char line[LAT_LINE_MAX];

	if (!la->journal)
		return 0;
	task_line(e, line, sizeof(line));
	return journal_append(la->journal, line);
}

void latact_journal_untask(struct latact *la, pid_t tid, uint64_t start)
{
	char line[64];

	if (!la->journal)
		return;
	snprintf(line, sizeof(line), "unlat %d %" PRIu64 "\n", (int)tid, start);
	journal_append(la->journal, line);
}

int latact_journal_cg(struct latact *la, const struct lat_cg_entry *c)
{
	char line[LAT_LINE_MAX];

	if (!la->journal)
		return 0;
	cg_line(c, line, sizeof(line));
	return journal_append(la->journal, line);
}

void latact_journal_uncg(struct latact *la, const char *path)
{
	char line[LAT_ESC_MAX + 16], esc[LAT_ESC_MAX];

	if (!la->journal)
		return;
	latact_escape_field(path, esc, sizeof(esc));
	snprintf(line, sizeof(line), "uncg %s\n", esc);
	journal_append(la->journal, line);
}

/*
 * Short-lived children of a process with a value each leave a record and its end:
 * once the lines outnumber the live entries by LATACT_JOURNAL_SLACK, the file is replaced
 * by the live entries alone, so that its size follows what is managed now. Called
 * only where the entries and the journal agree (no write under way).
 */
void latact_compact(struct latact *la)
{
	char line[LAT_LINE_MAX], *text = NULL;
	size_t len = 0;
	FILE *f;
	int r;

	if (!la->journal || journal_lines(la->journal) < la->n + la->ncg + LATACT_JOURNAL_SLACK)
		return;
	f = open_memstream(&text, &len);
	if (!f)
		return;
	fputs(la->cls.made_root ? LATACT_JOURNAL_HEAD "root\n" : LATACT_JOURNAL_HEAD, f);
	for (size_t i = 0; i < la->n; i++) {
		task_line(la->e[i], line, sizeof(line));
		fputs(line, f);
	}
	for (size_t i = 0; i < la->ncg; i++) {
		cg_line(&la->cg[i], line, sizeof(line));
		fputs(line, f);
	}
	r = fclose(f) == 0 && text ? journal_rewrite_text(la->journal, text) : -ENOMEM;
	if (r < 0)
		log_warn("latency: journal %s: cannot compact: %s", journal_path(la->journal),
			 strerror(-r));
	free(text);
}
