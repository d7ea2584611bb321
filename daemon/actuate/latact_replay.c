/*
 * Actuate stage, latency: the journal replay, what a crashed run left. Its parser is
 * pure (the fuzzer's); it gives back only knobs that still hold what was journalled.
 */
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
#include "util/util.h"

/* A state: its positional knobs (latknob.h), then its escaped cgroup. */
static int parse_state(char **save, struct lat_state *s)
{
	char *cg;

	if (latknob_parse(save, s) < 0 || !(cg = strtok_r(NULL, " ", save)))
		return -EINVAL;
	if (latact_unescape_field(cg, s->cgroup, sizeof(s->cgroup)) < 0 ||
	    (s->cgroup[0] && s->cgroup[0] != '/'))
		return -EINVAL;
	return 0;
}

static int parse_task_line(char *line, struct lat_entry *e)
{
	char *save = NULL, *f[4], *tok;

	memset(e, 0, sizeof(*e));
	for (int i = 0; i < 4; i++)
		if (!(f[i] = strtok_r(i ? NULL : line, " ", &save)))
			return -EINVAL;
	e->task.tid = atoi(f[0]);
	e->tgid = atoi(f[1]);
	e->task.start_time = strtoull(f[2], NULL, 10);
	e->value = atoi(f[3]);
	e->task.pidfd = -1;
	if (e->task.tid <= 0 || parse_state(&save, &e->prev) < 0 ||
	    parse_state(&save, &e->set) < 0)
		return -EINVAL;
	/* The knobs a later format added, by key; none in an older record. */
	while ((tok = strtok_r(NULL, " ", &save)))
		if (latknob_parse_keyed(tok, &e->prev, &e->set) < 0)
			return -EINVAL;
	return 0;
}

static int parse_cg_line(char *line, struct lat_cg_entry *c)
{
	char path[LAT_ESC_MAX], unit[LAT_ESC_MAX];
	int n = 0;

	memset(c, 0, sizeof(*c));
	if (sscanf(line, "%d %1023s %1023s %" SCNu64 " %d %" SCNu64 " %d%n", &c->value, path, unit,
		   &c->prev_weight, &c->prev_idle, &c->set_weight, &c->set_idle, &n) != 7 ||
	    line[n] != '\0' || latact_unescape_field(path, c->path, sizeof(c->path)) < 0 ||
	    latact_unescape_field(unit, c->unit, sizeof(c->unit)) < 0 || c->path[0] != '/')
		return -EINVAL;
	return 0;
}

int latact_parse_line(char *line, struct lat_entry *ret_e, struct lat_cg_entry *ret_c)
{
	struct lat_entry e;
	struct lat_cg_entry c;
	int tid;
	uint64_t start;
	char esc[LAT_ESC_MAX], path[LAT_PATH_MAX];
	int n = 0;

	if (strncmp(line, "lat ", 4) == 0 && parse_task_line(line + 4, &e) == 0) {
		*ret_e = e;
		return LATACT_REC_TASK;
	}
	if (sscanf(line, "unlat %d %" SCNu64, &tid, &start) == 2) {
		ret_e->task.tid = tid;
		ret_e->task.start_time = start;
		return LATACT_REC_UNTASK;
	}
	if (strncmp(line, "cg ", 3) == 0 && parse_cg_line(line + 3, &c) == 0) {
		*ret_c = c;
		return LATACT_REC_CG;
	}
	if (strcmp(line, "root") == 0)
		return LATACT_REC_ROOT;
	if (sscanf(line, "uncg %1023s%n", esc, &n) == 1 && line[n] == '\0' &&
	    latact_unescape_field(esc, path, sizeof(path)) == 0 && path[0] == '/') {
		snprintf(ret_c->path, sizeof(ret_c->path), "%s", path);
		return LATACT_REC_UNCG;
	}
	return -EINVAL;
}

/*
 * A task the journal names: its entry as its records leave it (the first one's prev,
 * the last one's set), and was, what rqbalance had set before that last record (the
 * first record's prev where there is one record). A run killed between journalling a
 * change and writing it, or in the middle of the write, leaves knobs at was.
 */
struct replay_task {
	struct lat_entry e;
	struct lat_state was;
};

/* A cgroup the journal names, the same way: was holds the set before its last record. */
struct replay_cg {
	struct lat_cg_entry c;
	struct lat_cg_entry was;
};

struct replay {
	struct latact *la;
	struct replay_task *t;
	size_t nt, capt;
	struct replay_cg *c;
	size_t nc, capc;
	unsigned bad;
};

static void replay_task(struct replay *rp, const struct lat_entry *e)
{
	for (size_t i = 0; i < rp->nt; i++) {
		struct lat_entry *t = &rp->t[i].e;

		if (t->task.tid == e->task.tid && t->task.start_time == e->task.start_time) {
			rp->t[i].was = t->set;
			t->set = e->set;
			return;
		}
	}
	struct replay_task *arr = util_grow(rp->t, &rp->capt, rp->nt, sizeof(*arr));

	if (arr) {
		rp->t = arr;
		rp->t[rp->nt++] = (struct replay_task){ .e = *e, .was = e->prev };
	}
}

static void replay_untask(struct replay *rp, pid_t tid, uint64_t start)
{
	for (size_t i = 0; i < rp->nt; i++)
		if (rp->t[i].e.task.tid == tid && rp->t[i].e.task.start_time == start) {
			rp->t[i] = rp->t[--rp->nt];
			return;
		}
}

static void replay_cg(struct replay *rp, const struct lat_cg_entry *c, bool set)
{
	for (size_t i = 0; i < rp->nc; i++)
		if (strcmp(rp->c[i].c.path, c->path) == 0) {
			if (set) {
				rp->c[i].was = rp->c[i].c;
				rp->c[i].c.set_weight = c->set_weight;
				rp->c[i].c.set_idle = c->set_idle;
			} else {
				rp->c[i] = rp->c[--rp->nc];
			}
			return;
		}
	if (!set)
		return;
	struct replay_cg *arr = util_grow(rp->c, &rp->capc, rp->nc, sizeof(*arr));

	if (arr) {
		rp->c = arr;
		rp->c[rp->nc] = (struct replay_cg){ .c = *c, .was = *c };
		/* Before its first record it had what it had before rqbalance. */
		rp->c[rp->nc].was.set_weight = c->prev_weight;
		rp->c[rp->nc].was.set_idle = c->prev_idle;
		rp->nc++;
	}
}

static void replay_line(void *ctx, unsigned lineno, char *line)
{
	struct replay *rp = ctx;
	struct lat_entry e;
	struct lat_cg_entry c;

	switch (latact_parse_line(line, &e, &c)) {
	case LATACT_REC_TASK:
		replay_task(rp, &e);
		break;
	case LATACT_REC_UNTASK:
		replay_untask(rp, e.task.tid, e.task.start_time);
		break;
	case LATACT_REC_CG:
		replay_cg(rp, &c, true);
		break;
	case LATACT_REC_UNCG:
		replay_cg(rp, &c, false);
		break;
	case LATACT_REC_ROOT:
		rp->la->cls.made_root = true;
		break;
	default:
		log_warn("%s:%u: malformed latency journal record skipped",
			 journal_path(rp->la->journal), lineno);
		rp->bad++;
	}
}

/* A fresh journal; it keeps saying that the classes' parent is rqbalance's to remove. */
static void rewrite_empty(struct latact *la)
{
	journal_rewrite_text(la->journal, la->cls.made_root ? LATACT_JOURNAL_HEAD "root\n" : LATACT_JOURNAL_HEAD);
}

/*
 * While no daemon ran, the recorded tasks made threads and children, which the kernel
 * gave what rqbalance had set: those go back too, and the classes the previous run
 * left are emptied and removed (made anew on first use).
 */
static void recover_offspring(struct latact *la, const struct replay *rp)
{
	const struct lat_entry **recs = calloc(rp->nt ? rp->nt : 1, sizeof(*recs));

	if (!recs) {
		log_warn("latency: no memory to look for what a previous run's tasks passed on");
		return;
	}
	for (size_t i = 0; i < rp->nt; i++)
		recs[i] = &rp->t[i].e;
	latact_give_back_offspring(la, recs, rp->nt, "after a previous run");
	free(recs);
	latact_classes_clear(la);
}

/* Restores what the journal says a previous run left, then starts it afresh. */
void latact_recover(struct latact *la)
{
	struct replay rp = { .la = la };
	unsigned restored = 0;

	journal_each_line(la->journal, replay_line, &rp);
	for (size_t i = 0; i < rp.nt; i++) {
		struct lat_entry *e = &rp.t[i].e;

		if (la->ops->open(e->task.tid, e->tgid, e->task.start_time, &e->task) < 0)
			continue;
		latact_restore_crashed(la, e, &rp.t[i].was);
		la->ops->close(&e->task);
		restored++;
	}
	for (size_t i = 0; i < rp.nc; i++) {
		latact_restore_cg_crashed(la, &rp.c[i].c, &rp.c[i].was);
		restored++;
	}
	if (rp.nt || rp.nc)
		log_notice("latency: a previous run left %zu tasks and %zu cgroups; %u still "
			   "there were given back where unchanged", rp.nt, rp.nc, restored);
	recover_offspring(la, &rp);
	free(rp.t);
	free(rp.c);
	rewrite_empty(la);
}
