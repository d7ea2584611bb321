/*
 * Plan: the policy's intended actions, sorted and deduplicated, with a text dump that
 * tests compare. Data only: nothing here reads or changes the system.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpumask.h"
#include "plan.h"
#include "rqbalance.h"

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
	struct plan_action *arr = rqb_grow(p->a, &p->cap, p->n, sizeof(*arr));

	if (!arr)
		return -ENOMEM;
	p->a = arr;
	p->a[p->n] = *a;
	p->a[p->n].order = (unsigned)p->n;
	p->n++;
	return 0;
}

/* Sort key: task identity, then the order added. */
static int cmp_action(const void *x, const void *y)
{
	const struct plan_action *a = x, *b = y;

	if (a->tid != b->tid)
		return a->tid < b->tid ? -1 : 1;
	if (a->start_time != b->start_time)
		return a->start_time < b->start_time ? -1 : 1;
	return (a->order > b->order) - (a->order < b->order);
}

void plan_finish(struct plan *p)
{
	size_t out = 0;

	if (p->n > 1)
		qsort(p->a, p->n, sizeof(*p->a), cmp_action);
	for (size_t i = 0; i < p->n; i++) {
		if (out && p->a[out - 1].tid == p->a[i].tid &&
		    p->a[out - 1].start_time == p->a[i].start_time)
			continue;
		p->a[out++] = p->a[i];
	}
	p->n = out;
}

const char *plan_op_name(enum plan_op op)
{
	return op == PLAN_PIN ? "pin" : "unpin";
}

void plan_format(const struct plan_action *a, char *buf, size_t len)
{
	char mask[CPUMASK_STRLEN], to[16];

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
	char line[CPUMASK_STRLEN + 256];

	for (size_t i = 0; i < p->n; i++) {
		plan_format(&p->a[i], line, sizeof(line));
		fprintf(out, "%s\n", line);
	}
}
