/*
 * Task events (taskev/, for the latency manager): what every event source shares
 * (evsrc.h). It only reads; the drivers are bpfev.c and procconn.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "taskev/evsrc.h"

int evsrc_open(const struct evsrc_ops *ops, const struct evsrc_callbacks *cb, void *ctx,
	       struct evsrc **ret, char *why, size_t why_len)
{
	struct evsrc *es = calloc(1, sizeof(*es));
	int r = -ENOMEM;

	if (why_len)
		why[0] = '\0';
	if (es) {
		*es = (struct evsrc){ .ops = ops, .cb = *cb, .ctx = ctx };
		r = ops->open(es, why, why_len);
	}
	if (r == 0) {
		*ret = es;
		return 0;
	}
	/* The connector says only an errno: that is its reason. */
	if (why_len && !why[0])
		snprintf(why, why_len, "%s", strerror(-r));
	free(es);
	return r;
}

void evsrc_close(struct evsrc *es)
{
	if (!es)
		return;
	es->ops->close(es);
	free(es);
}

int evsrc_exes(struct evsrc *es, struct evsrc_exe **ret, size_t *ret_n)
{
	return es->ops->exes ? es->ops->exes(es, ret, ret_n) : -EOPNOTSUPP;
}

bool evsrc_walks_unprivileged(struct evsrc *es)
{
	return !es->ops->walks_unprivileged || es->ops->walks_unprivileged(es);
}

static int cmp_exe(const void *a, const void *b)
{
	const struct evsrc_exe *x = a, *y = b;

	return (x->tgid > y->tgid) - (x->tgid < y->tgid);
}

void evsrc_exe_sort(struct evsrc_exe *exes, size_t n)
{
	qsort(exes, n, sizeof(*exes), cmp_exe);
}

const struct evsrc_exe *evsrc_exe_find(const struct evsrc_exe *exes, size_t n, pid_t tgid)
{
	struct evsrc_exe key = { .tgid = tgid };

	return n ? bsearch(&key, exes, n, sizeof(*exes), cmp_exe) : NULL;
}
