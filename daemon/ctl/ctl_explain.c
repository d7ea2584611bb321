/*
 * ctl: rqctl explain. Reads what the latency manager and actuator hold of a target,
 * and the task as it is now, and says it in words: one "key text" line each.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/daemon.h"
#include "ctl/ctl_explain.h"
#include "ctl/ctl_peer.h"
#include "ctl/ctl_req.h"
#include "policy/rules.h"
#include "sample/ident.h"
#include "sample/peers.h"
#include "util/schedattr.h"
#include "util/util.h"

/* At most this many rules are said not to match, one line each. */
#define EXPLAIN_RULES 16

/* One line: key, a blank, the text with its controls as \xHH (names may hold any byte). */
static void put(FILE *f, const char *key, const char *fmt, ...)
{
	char text[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	fprintf(f, "%s ", key);
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			fprintf(f, "\\x%02x", *p);
		else
			fputc(*p, f);
	fputc('\n', f);
}

static void put_since(FILE *f, int64_t since)
{
	time_t t = (time_t)since;
	struct tm tm;
	char when[32];

	if (!since || !gmtime_r(&t, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return;
	put(f, "since", "%s (%" PRId64 " s ago)", when, (int64_t)time(NULL) - since);
}

/* ---- what a value maps to, and each knob's state ---- */

static void knob_text(unsigned k, const struct lat_state *s, char *ret, size_t size)
{
	switch (k) {
	case LAT_K_POLICY:
		snprintf(ret, size, "%s", latact_policy_name(s->policy));
		break;
	case LAT_K_NICE:
		snprintf(ret, size, "%d", s->nice);
		break;
	case LAT_K_SLICE:
		if (s->slice_ns)
			snprintf(ret, size, "%.2f ms", (double)s->slice_ns / 1e6);
		else
			snprintf(ret, size, "the kernel's default");
		break;
	default:
		snprintf(ret, size, "%d-%d", s->umin, s->umax);
		break;
	}
}

static void put_maps_to(FILE *f, const struct latact *la, int v)
{
	struct lat_knobs k;
	char slice[32] = "the kernel's default", cls[64] = "none";

	lat_map(&la->lc, v, &k);
	if (k.slice_ns)
		snprintf(slice, sizeof(slice), "%.2f ms", (double)k.slice_ns / 1e6);
	if (k.use_class && la->cls.v2)
		snprintf(cls, sizeof(cls), "rqbalance-lat%d (cpu.weight %" PRIu32 ")", v,
			 lat_shares_to_weight(k.shares));
	else if (k.use_class)
		snprintf(cls, sizeof(cls), "rqbalance-lat%d (cpu.shares %" PRIu32 ")", v, k.shares);
	put(f, "maps_to", "nice %d, policy %s, slice %s%s, class cgroup %s", k.nice,
	    v < 0 ? "other" : latact_policy_name(k.policy), slice,
	    la->o.uclamp && k.uclamp_min >= 0 ? ", uclamp" : "", cls);
}

/* Why a knob the mapping has does nothing on this kernel, or NULL. */
static const char *knob_missing(const struct latact *la, unsigned k)
{
	if (k == LAT_K_SLICE && !la->o.slices)
		return "this kernel takes no slice from sched_setattr (EEVDF slices: 6.12)";
	if (k == LAT_K_UCLAMP && !la->o.uclamp)
		return "this kernel has no uclamp (CONFIG_UCLAMP_TASK)";
	return NULL;
}

static void put_knob(FILE *f, const struct latact *la, const struct lat_entry *e,
		     const struct lat_state *cur, unsigned k, const char *name)
{
	char now[32], set[32], prev[32], key[32];
	const char *missing = knob_missing(la, k);

	knob_text(k, cur, now, sizeof(now));
	knob_text(k, &e->set, set, sizeof(set));
	knob_text(k, &e->prev, prev, sizeof(prev));
	snprintf(key, sizeof(key), "knob_%s", name);
	if (e->left & k)
		put(f, key, "changed by someone else since rqbalance set %s: now %s; left as it is "
		    "(rqctl reset, then set, to take it again)", set, now);
	else if (missing)
		put(f, key, "without effect: %s", missing);
	else if (strcmp(set, prev) == 0)
		put(f, key, "unchanged: %s is what the value maps to and what it had", set);
	else
		put(f, key, "applied: %s (was %s)", now, prev);
}

static const char *classes_off_why(const struct latact *la)
{
	if (!la->cls.mount[0])
		return "no cpu controller is mounted (v1 cpu, or cpu in cgroup2's controllers)";
	if (!la->o.class_cgroups)
		return "[latency] class_cgroups is off (the default where systemd owns the cgroups)";
	return "they could not be set up (the log at start says why)";
}

static void put_cgroup(FILE *f, const struct latact *la, const struct lat_entry *e,
		       const struct lat_state *cur)
{
	if (!la->cls.on)
		put(f, "knob_cgroup", "without effect: no class cgroups: %s", classes_off_why(la));
	else if (e->cg != LAT_CG_OURS)
		put(f, "knob_cgroup", "left where it is, \"%s\": %s", e->cg_left, lat_cg_why(e->cg));
	else if (!e->set.cgroup[0] || strcmp(e->set.cgroup, e->prev.cgroup) == 0)
		put(f, "knob_cgroup", "unchanged: \"%s\"%s", cur->cgroup,
		    la->cls.v2 && e->task.tid != e->tgid ?
			    " (cgroup2 moves whole processes: a thread stays in its process's)" :
			    "");
	else
		put(f, "knob_cgroup", "applied: \"%s\" (was \"%s\")", cur->cgroup, e->prev.cgroup);
}

static void put_unit(FILE *f, const struct daemon *d, pid_t tgid)
{
	const struct latmgr_unit *u = latmgr_unit_of(&d->lm, tgid);
	const struct lat_cg_entry *g = u ? latact_find_cgroup(&d->lat, u->cgroup) : NULL;

	if (!d->lm.units_on || !u)
		return;
	if (g && g->left)
		put(f, "knob_unit", "%s: someone else changed its CPUWeight since rqbalance set "
		    "it: left as it is", u->unit[0] ? u->unit : u->cgroup);
	else if (g && g->by_procs)
		put(f, "knob_unit", "applied: %s has CPUWeight %s", u->unit,
		    g->set_idle == 1 ? "idle" : "of the value");
	else if (g)
		put(f, "knob_unit", "%s: the cgroup has a value of its own (rqctl set -g)", u->unit);
	else
		put(f, "knob_unit", "without effect: %s: %s", u->unit[0] ? u->unit : u->cgroup,
		    u->d.why[0] ? u->d.why : u->act_why[0] ? u->act_why : "not weighed");
}

/* ---- what else decides whether the knobs count ---- */

static void put_sched_ext(FILE *f)
{
	struct peers_finding p;

	if (peers_sched_ext("", &p))
		put(f, "note_sched_ext", "%s", p.text);
}

static void put_notes(FILE *f, const struct daemon *d, const struct lat_state *cur, bool rt)
{
	if (rt)
		put(f, "note_realtime", "it runs %s: real-time tasks run before all others, so "
		    "nice, slice and weight do not count while it does", latact_policy_name(cur->policy));
	if (d->features.f[FEAT_AUTOGROUP].state != FEAT_MISSING && strcmp(cur->cgroup, "/") == 0)
		put(f, "note_autogroup", "autogroup is on and it is in the root cpu cgroup: its nice "
		    "counts only among the tasks of its session");
	put_sched_ext(f);
}

/* ---- a task with no value ---- */

static bool rules_say(FILE *f, const struct daemon *d, pid_t tgid)
{
	struct ident_buf *buf = malloc(sizeof(*buf));
	const struct rule_set *rs = &d->conf.rules;
	struct proc_ident id;
	char why[512], key[RULE_NAME_MAX + 8];

	if (!buf || ident_read(d->lm.proc_root, tgid, buf, &id) < 0) {
		free(buf);
		return false;
	}
	for (unsigned i = 0; i < rs->n && i < EXPLAIN_RULES; i++) {
		snprintf(key, sizeof(key), "rule_%s", rs->r[i].name);
		if (rules_why_not(&rs->r[i], &id, why, sizeof(why))) {
			put(f, key, "matches it now: rules apply at exec, at start and at reload, "
			    "so it takes the value at the next of these");
		} else {
			put(f, key, "does not match: %s", why);
		}
	}
	if (rs->n > EXPLAIN_RULES)
		put(f, "rule_more", "%u more rules not shown", rs->n - EXPLAIN_RULES);
	free(buf);
	return true;
}

static void explain_none(FILE *f, const struct daemon *d, const struct explain_target *t,
			 bool detail)
{
	const struct latmgr_fail *fail;
	uint64_t start = 0;

	put(f, "value", "none");
	if (t->tgid == d->lm.self) {
		put(f, "why", "rqbalanced itself: its own value is [daemon] latency_nice");
		return;
	}
	ctl_peer_start_time(d->lm.proc_root, t->tgid, &start);
	fail = start ? latmgr_failure_of(&d->lm, t->tgid, start) : NULL;
	if (fail)
		put(f, "why", "failed: %s matched it but could not give it its value: %s",
		    fail->source, fail->why);
	else if (!d->conf.rules.n)
		put(f, "why", "no one asked (rqctl set), and there are no rules");
	else
		put(f, "why", "no one asked (rqctl set), and no rule gave it one");
	if (d->conf.rules.n && !detail)
		put(f, "rules", "which conditions of the rules it fails is shown to its owner "
		    "and to root");
	else if (d->conf.rules.n && !rules_say(f, d, t->tgid))
		put(f, "rules", "its identity could not be read: it may have exited");
}

/* ---- entry points ---- */

static const struct lat_entry *entry_of(const struct latact *la, const struct explain_target *t)
{
	const struct lat_entry *e = latact_find(la, t->tid);

	for (size_t i = 0; !e && !t->thread && i < la->n; i++)
		if (la->e[i].tgid == t->tgid)
			e = &la->e[i];
	return e;
}

static void put_source(FILE *f, const struct daemon *d, const char *source)
{
	const struct rule_set *rs = &d->conf.rules;
	char cond[512];

	put(f, "source", "%s", source);
	if (strncmp(source, "rule ", 5) != 0)
		return;
	for (unsigned i = 0; i < rs->n; i++)
		if (strcmp(rs->r[i].name, source + 5) == 0) {
			rules_conditions(&rs->r[i], cond, sizeof(cond));
			put(f, "rule", "%s (%s:%u): %s; all held when it was given", rs->r[i].name,
			    rs->r[i].file, rs->r[i].line, cond);
			return;
		}
	put(f, "rule", "%s is no longer in the config; a reload gives its processes back",
	    source + 5);
}

static void explain_task(FILE *f, struct daemon *d, const struct ctl_caller *k,
			 const struct explain_target *t, bool detail)
{
	const struct latmgr_proc *p = t->thread ? NULL : latmgr_find_process(&d->lm, t->tgid);
	const struct lat_entry *e = entry_of(&d->lat, t);
	struct lat_state cur = { .umin = -1, .umax = -1 };
	char comm[64], names[64];
	bool have;

	ctl_peer_comm(d->lm.proc_root, t->tid, comm, sizeof(comm));
	if (t->thread)
		put(f, "target", "thread %d of process %d (%s)", (int)t->tid, (int)t->tgid, comm);
	else
		put(f, "target", "process %d (%s)", (int)t->tid, comm);
	if (e)
		latact_check(&d->lat, e->task.tid);
	have = latact_read(&d->lat, e ? e->task.tid : t->tid, &cur) == 0;
	if (!p && !e) {
		explain_none(f, d, t, detail);
		if (have)
			put_notes(f, d, &cur, cur.policy == SCHED_FIFO || cur.policy == SCHED_RR);
		return;
	}
	put(f, "value", "%d", p ? p->value : e->value);
	put_source(f, d, p ? p->source : e->source);
	if (e && e->from_tid && ctl_req_visible(d, k, e->from_tid, 0))
		put(f, "inherited_from", "task %d, which had it when it created this one",
		    (int)e->from_tid);
	else if (e && e->from_tid)
		put(f, "inherited_from", "a task that is gone or that your /proc would not "
		    "show you, which had it when it created this one");
	if (e)
		put_since(f, e->since);
	put_maps_to(f, &d->lat, p ? p->value : e->value);
	if (!e || !have) {
		put(f, "knobs", "no thread of it holds the value now (it may have exited)");
		return;
	}
	put_knob(f, &d->lat, e, &cur, LAT_K_NICE, "nice");
	put_knob(f, &d->lat, e, &cur, LAT_K_POLICY, "policy");
	put_knob(f, &d->lat, e, &cur, LAT_K_SLICE, "slice");
	put_knob(f, &d->lat, e, &cur, LAT_K_UCLAMP, "uclamp");
	put_cgroup(f, &d->lat, e, &cur);
	put_unit(f, d, e->tgid);
	latact_knob_names(e->left, names, sizeof(names));
	put(f, "changed_since", "%s", names[0] ? names : "nothing: every knob is as rqbalance set it");
	put_notes(f, d, &cur, cur.policy == SCHED_FIFO || cur.policy == SCHED_RR);
}

static int explain_cgroup(FILE *f, struct daemon *d, const char *path)
{
	const struct lat_cg_entry *g;

	latact_check_cg(&d->lat, path);
	g = latact_find_cgroup(&d->lat, path);
	put(f, "target", "cgroup %s", path);
	if (!g) {
		put(f, "value", "none");
		put(f, "why", "no one gave it a value (rqctl set -g)%s",
		    d->lm.units_on ? ", and no unit is weighed for its processes' value" : "");
		put_sched_ext(f);
		return 0;
	}
	put(f, "value", "%d", g->value);
	put(f, "source", "%s%s", g->source, g->by_procs ? " (every process in the unit has it)" : "");
	put_since(f, g->since);
	if (g->unit[0])
		put(f, "unit", "%s (its CPUWeight, over D-Bus)", g->unit);
	if (g->left)
		put(f, "knob_weight", "changed by someone else since rqbalance set %" PRIu64
		    ": left as it is", g->set_weight);
	else
		put(f, "knob_weight", "applied: %s%" PRIu64 " (was %" PRIu64 ")",
		    g->set_idle == 1 ? "idle, " : "", g->set_weight, g->prev_weight);
	put(f, "changed_since", "%s", g->left ? "weight" : "nothing: the weight is as rqbalance set it");
	put_sched_ext(f);
	return 0;
}

int ctl_explain(struct daemon *d, const struct ctl_caller *k, const struct explain_target *t,
		bool detail, char **ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	if (t->cgroup)
		explain_cgroup(f, d, t->cgroup);
	else
		explain_task(f, d, k, t, detail);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	return 0;
}
