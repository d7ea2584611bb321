/*
 * Actuate stage, latency: init and fini, and what ties the parts (latact_int.h). It
 * changes nothing itself but through them; the parts are the only code that changes a
 * task's latency knobs or a cgroup's weight.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "actuate/cgsd.h"
#include "actuate/journal.h"
#include "actuate/latact.h"
#include "actuate/latact_int.h"
#include "util/schedattr.h"
#include "util/util.h"

int latact_init(struct latact *la, const struct act_ops *ops, const struct latact_opts *o,
		const struct lat_conf *lc)
{
	int r;

	memset(la, 0, sizeof(*la));
	la->ops = ops;
	la->o = *o;
	la->lc = *lc;
	snprintf(la->proc_root, sizeof(la->proc_root), "%s", util_proc_root(o->proc_root));
	snprintf(la->cls.root, sizeof(la->cls.root), "%s",
		 o->cgroup_root ? o->cgroup_root : "");
	while (la->cls.root[0] == '/')
		memmove(la->cls.root, la->cls.root + 1, strlen(la->cls.root));
	r = ops->journal(o->journal_dir, LAT_JOURNAL_NAME, &la->journal);
	if (r < 0)
		return r;
	if (o->slices)
		la->default_slice_ns = lc->default_slice_ns;
	latact_classes_find(la);
	if (la->cls.on)
		latact_classes_stale(la);
	if (la->journal)
		latact_recover(la);
	return 0;
}

void latact_set_conf(struct latact *la, const struct lat_conf *lc)
{
	/* A task without a slice of its own shows the old default until it next runs. */
	if (la->o.slices && lc->default_slice_ns != la->default_slice_ns) {
		la->was_default_slice_ns = la->default_slice_ns;
		la->default_slice_ns = lc->default_slice_ns;
	}
	la->lc = *lc;
	/* The weights follow the mapping: a reload may have changed its bound. */
	latact_classes_reweigh(la);
}

int latact_restore_all(struct latact *la)
{
	uint64_t before = la->cnt.restored;

	latact_moves_wait(la);
	/* Every one of them kept: a fork each made before its give-back is read after. */
	la->given_all = true;
	latact_given_reserve(la, la->ngiven + la->n + LATACT_GIVEN_MAX);
	for (size_t i = 0; i < la->n; i++) {
		latact_restore_entry(la, la->e[i]);
		latact_given_note(la, la->e[i]);
		latact_journal_untask(la, la->e[i]->task.tid, la->e[i]->task.start_time);
		la->ops->close(&la->e[i]->task);
		free(la->e[i]);
	}
	la->n = 0;
	while (la->ncg)
		latact_cgroup_reset(la, la->cg[la->ncg - 1].path);
	return (int)(la->cnt.restored - before);
}

/*
 * What the tasks given back passed on whose fork no event told of in time (one read
 * after the stop, or lost to an overflow): found by state, as after a crash.
 */
static void stop_offspring(struct latact *la)
{
	size_t n = latact_given_count(la);
	const struct lat_entry **recs = calloc(n ? n : 1, sizeof(*recs));

	if (!recs)
		return;
	for (size_t k = 0; k < n; k++)
		recs[k] = latact_given_nth(la, k);
	latact_give_back_offspring(la, recs, n, "stop");
	free(recs);
}

void latact_fini(struct latact *la)
{
	latact_moves_stop(la);
	latact_restore_all(la);
	stop_offspring(la);
	latact_classes_remove(la);
	if (la->journal) {
		journal_rewrite_text(la->journal, LATACT_JOURNAL_HEAD);
		journal_close(la->journal);
	}
	free(la->e);
	free(la->given);
	free(la->cg);
	cgsd_close(la->bus);
	memset(la, 0, sizeof(*la));
}
