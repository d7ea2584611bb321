/*
 * Plan: the policy's intended actions, sorted and deduplicated, with a text dump that
 * tests compare. Data only: nothing here reads or changes the system.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"
#include "rqbalance.h"
#include "util/cpumask.h"
#include "util/util.h"
#include "testonly.h"

void plan_init(struct plan *p)
{
	memset(p, 0, sizeof(*p));
}

void plan_fini(struct plan *p)
{
	free(p->a);
	plan_init(p);
}

void plan_clear(struct plan *p)
{
	p->n = 0;
}

int plan_add(struct plan *p, const struct plan_action *a)
{
	struct plan_action *arr = util_grow(p->a, &p->cap, p->n, sizeof(*arr));

	if (!arr)
		return -ENOMEM;
	p->a = arr;
	p->a[p->n] = *a;
	p->a[p->n].order = (unsigned)p->n;
	p->n++;
	return 0;
}

/* Affinity actions, latency actions on tasks, latency actions on cgroups. */
static int family(enum plan_op op)
{
	switch (op) {
	case PLAN_PIN:
	case PLAN_UNPIN:
		return 0;
	case PLAN_LAT_SET:
	case PLAN_LAT_RESET:
		return 1;
	case PLAN_LAT_CLASS:
		return 3;
	default:
		return 2;
	}
}

static int cmp_long(long a, long b)
{
	return (a > b) - (a < b);
}

/* Sort key within a family, without the order added: equal means "the same target". */
static int cmp_target(const struct plan_action *a, const struct plan_action *b)
{
	int f = family(a->op), r = cmp_long(f, family(b->op));

	if (r)
		return r;
	if (f == 2)
		return strcmp(a->path, b->path);
	if (f == 3)
		return cmp_long(a->value, b->value);
	if (f == 1) {
		r = cmp_long(a->tgid, b->tgid);
		if (r)
			return r;
		r = cmp_long(a->tid != a->tgid, b->tid != b->tgid);
		if (r)
			return r;
	}
	r = cmp_long(a->tid, b->tid);
	if (r)
		return r;
	return (a->start_time > b->start_time) - (a->start_time < b->start_time);
}

/* Sort key: the target, then the order added. */
static int cmp_action(const void *x, const void *y)
{
	const struct plan_action *a = x, *b = y;
	int r = cmp_target(a, b);

	return r ? r : (a->order > b->order) - (a->order < b->order);
}

void plan_finish(struct plan *p)
{
	size_t out = 0;

	if (p->n > 1)
		qsort(p->a, p->n, sizeof(*p->a), cmp_action);
	for (size_t i = 0; i < p->n; i++) {
		if (out && cmp_target(&p->a[out - 1], &p->a[i]) == 0)
			continue;
		p->a[out++] = p->a[i];
	}
	p->n = out;
}

const char *plan_op_name(enum plan_op op)
{
	static const char *const names[] = {
		[PLAN_PIN] = "pin", [PLAN_UNPIN] = "unpin", [PLAN_LAT_SET] = "lat",
		[PLAN_LAT_RESET] = "unlat", [PLAN_LAT_CG_SET] = "latcg",
		[PLAN_LAT_CG_RESET] = "unlatcg", [PLAN_LAT_UNIT_SET] = "latunit",
		[PLAN_LAT_UNIT_RESET] = "unlatunit", [PLAN_LAT_CLASS] = "latclass",
	};

	return (size_t)op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

bool plan_op_is_latency(enum plan_op op)
{
	return family(op) != 0;
}

/*
 * s with controls, DEL, '"' and '\\' as \xHH, and blanks too unless quoted: one line,
 * and one token.
 */
static void escape(const char *s, bool quoted, char *ret, size_t size)
{
	size_t o = 0;

	for (; *s && o + 5 < size; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < ' ' || (c == ' ' && !quoted) || c == 0x7f || c == '"' || c == '\\')
			o += (size_t)snprintf(ret + o, size - o, "\\x%02x", c);
		else
			ret[o++] = (char)c;
	}
	ret[o] = '\0';
}

static void format_latency(const struct plan_action *a, char *buf, size_t len)
{
	char esc[4 * PLAN_PATH_MAX], src[4 * PLAN_SOURCE_MAX];
	const char *name = plan_op_name(a->op);

	escape(a->source, true, src, sizeof(src));
	switch (a->op) {
	case PLAN_LAT_SET:
		snprintf(buf, len, "%s tid=%d tgid=%d start=%" PRIu64 " value=%d source=\"%s\"",
			 name, (int)a->tid, (int)a->tgid, a->start_time, a->value, src);
		if (a->from_tid > 0)
			snprintf(buf + strlen(buf), len - strlen(buf), " from=%d", (int)a->from_tid);
		if (a->whole)
			snprintf(buf + strlen(buf), len - strlen(buf), " whole");
		if (a->no_inherit)
			snprintf(buf + strlen(buf), len - strlen(buf), " noinherit");
		break;
	case PLAN_LAT_RESET:
		snprintf(buf, len, "%s tid=%d tgid=%d start=%" PRIu64, name, (int)a->tid,
			 (int)a->tgid, a->start_time);
		break;
	case PLAN_LAT_CLASS:
		if (a->class_div > 1)
			snprintf(buf, len, "%s value=%d k=%u/%u", name, a->value, a->class_k,
				 a->class_div);
		else
			snprintf(buf, len, "%s value=%d k=%u", name, a->value, a->class_k);
		break;
	case PLAN_LAT_CG_SET:
	case PLAN_LAT_UNIT_SET:
		escape(a->path, false, esc, sizeof(esc));
		snprintf(buf, len, "%s path=%s value=%d source=\"%s\"", name, esc, a->value, src);
		break;
	default:
		escape(a->path, false, esc, sizeof(esc));
		snprintf(buf, len, "%s path=%s", name, esc);
		break;
	}
}

void plan_format(const struct plan_action *a, char *buf, size_t len)
{
	char mask[CPUMASK_STRLEN], to[16];

	if (plan_op_is_latency(a->op)) {
		format_latency(a, buf, len);
		return;
	}
	if (a->to_llc >= 0)
		snprintf(to, sizeof(to), "%d", a->to_llc);
	else
		snprintf(to, sizeof(to), "any");
	snprintf(buf, len, "%s tid=%d tgid=%d comm=\"%s\" llc=%d->%s cpus=%s why=%s",
		 plan_op_name(a->op), (int)a->tid, (int)a->tgid, a->comm, a->from_llc, to,
		 cpumask_format(&a->mask, mask, sizeof(mask)), a->why);
}

void plan_dump(const struct plan *p, FILE *out)
{
	char line[PLAN_LINE_MAX];

	for (size_t i = 0; i < p->n; i++) {
		plan_format(&p->a[i], line, sizeof(line));
		fprintf(out, "%s\n", line);
	}
}
