/*
 * latmgr: the views of who has what, for rqctl get, list and explain and the D-Bus API,
 * read from the manager's process table and the actuator's task and cgroup entries.
 * The doors (ctl/) see latency-nice only through these and the calls in latmgr.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "actuate/latknob.h"
#include "diag/peers.h"
#include "latmgr/latmgr.h"
#include "model/stats.h"
#include "policy/rules.h"
#include "proc/procfs.h"
#include "taskev/ident.h"
#include "util/schedattr.h"
#include "util/util.h"

const char *latmgr_proc_root(const struct latmgr *m)
{
	return m->proc_root;
}

bool latmgr_reads_cgroup(const struct latmgr *m)
{
	return m->la && latact_reads_cgroup(m->la);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The exec-to-value times kept (latmgr.exec_us): how many, p50, p99 and the longest. */
static void exec_times(const struct latmgr *m, struct daemon_stats *ret)
{
	uint32_t v[LATMGR_EXEC_TIMES];
	size_t n = m->nexec_us < LATMGR_EXEC_TIMES ? (size_t)m->nexec_us : LATMGR_EXEC_TIMES;

	ret->exec_timed = (uint32_t)n;
	if (!n)
		return;
	memcpy(v, m->exec_us, n * sizeof(*v));
	qsort(v, n, sizeof(*v), cmp_u32);
	ret->exec_us_p50 = v[n / 2];
	ret->exec_us_p99 = v[n * 99 / 100];
	ret->exec_us_max = v[n - 1];
}

void latmgr_stats(const struct latmgr *m, struct daemon_stats *ret)
{
	const struct latact *la = m->la;

	ret->lat_tasks = la->n;
	ret->lat_cgroups = la->ncg;
	ret->lat_processes = m->np;
	ret->lat_applied = la->cnt.applied;
	ret->lat_restored = la->cnt.restored;
	ret->lat_errors = la->cnt.errors;
	ret->lat_refused = la->cnt.refused;
	ret->lat_inherited_back = m->cnt.inherited_back;
	ret->events_state = m->pc_state;
	ret->events_up = latmgr_has_events(m);
	ret->exec_lazy = m->exec_lazy;
	ret->events_bpf = strcmp(latmgr_source_name(m), "bpf") == 0;
	ret->events = m->cnt.events;
	ret->overflows = m->cnt.overflows;
	ret->rescans = m->cnt.rescans;
	ret->rule_matches = m->cnt.rule_matches;
	exec_times(m, ret);
	ret->class_mount = la->cls.on ? la->cls.mount : NULL;
	ret->class_root = la->cls.root;
}

/* ---- get ---- */

static const struct latmgr_proc *proc_of(const struct latmgr *m, const struct lat_target *t)
{
	return t->kind == LAT_T_PROCESS ? latmgr_find_process(m, t->pid, t->start_time) : NULL;
}

static const struct lat_entry *entry_of_target(const struct latmgr *m, const struct lat_target *t)
{
	return t->kind == LAT_T_CGROUP ? NULL : latact_find(m->la, t->pid);
}

int latmgr_value(const struct latmgr *m, const struct lat_target *t, int *ret_value,
		 const char **ret_source)
{
	const struct latmgr_proc *p = proc_of(m, t);
	const struct lat_entry *e = entry_of_target(m, t);
	const struct lat_cg_entry *g =
		t->kind == LAT_T_CGROUP ? latact_find_cgroup(m->la, t->path) : NULL;

	if (g) {
		*ret_value = g->value;
		*ret_source = g->source;
	} else if (p || e) {
		*ret_value = p ? p->value : e->value;
		*ret_source = p ? p->source : e->source;
	} else {
		return -ENOENT;
	}
	return 0;
}

size_t latmgr_tasks_of(const struct latmgr *m, const struct lat_target *t)
{
	const struct latact *la = m->la;
	size_t n = 0;

	for (size_t i = 0; i < la->n && t->kind != LAT_T_CGROUP; i++)
		n += t->kind == LAT_T_PROCESS ? la->e[i]->tgid == t->pid : la->e[i]->task.tid == t->pid;
	return n;
}

void latmgr_unit_text(const struct latmgr *m, pid_t tgid, char *out, size_t size)
{
	const struct latmgr_unit *u = latmgr_unit_of(m, tgid);
	const struct lat_cg_entry *g = u ? latact_find_cgroup(m->la, u->cgroup) : NULL;
	char w[32] = "-";

	if (!u) {
		out[0] = '\0';
		return;
	}
	if (g && g->set_idle != 1 && g->set_weight != 0)
		snprintf(w, sizeof(w), "%" PRIu64, g->set_weight);
	else if (g)
		snprintf(w, sizeof(w), "idle");
	snprintf(out, size, "unit %s\nunit_weight %s\n%s%s%s", u->unit[0] ? u->unit : "-", w,
		 u->d.why[0] || u->act_why[0] ? "unit_why " : "",
		 u->d.why[0] ? u->d.why : u->act_why, u->d.why[0] || u->act_why[0] ? "\n" : "");
	if (g && !g->by_procs)
		snprintf(out + strlen(out), size - strlen(out),
			 "unit_why the cgroup has a value of its own (rqctl set -g)\n");
}

static void knobs_text(const struct lat_state *s, char *out, size_t size)
{
	snprintf(out, size, "policy %s\nslice_ns %" PRIu64 "\nuclamp %d %d\ncgroup %s\n",
		 latknob_policy_name(s->policy), s->slice_ns, s->umin, s->umax,
		 s->cgroup[0] ? s->cgroup : "-");
}

int latmgr_get_text(const struct latmgr *m, const struct lat_target *t, char *out, size_t size)
{
	const struct latmgr_proc *p = proc_of(m, t);
	const struct lat_entry *e = entry_of_target(m, t);
	const struct lat_cg_entry *g;
	char knobs[LAT_PATH_MAX + 128] = "";

	if (t->kind == LAT_T_CGROUP) {
		g = latact_find_cgroup(m->la, t->path);
		if (!g)
			return -ENOENT;
		snprintf(out, size, "value %d\nsource %s\nweight %" PRIu64 "\nidle %d\n", g->value,
			 g->source, g->set_weight, g->set_idle);
		return 0;
	}
	if (!p && !e)
		return -ENOENT;
	if (e)
		knobs_text(&e->set, knobs, sizeof(knobs));
	snprintf(out, size, "value %d\nsource %s\nscope %s\ntasks %zu\n%s", p ? p->value : e->value,
		 p ? p->source : e->source, p ? "process" : "thread", latmgr_tasks_of(m, t), knobs);
	if (e && e->cg != LAT_CG_OURS)
		snprintf(out + strlen(out), size - strlen(out), "cgroup_left %s: %s\n", e->cg_left,
			 latency_cg_why(e->cg));
	if (p)
		latmgr_unit_text(m, t->pid, out + strlen(out), size - strlen(out));
	return 0;
}

/* ---- what a request would leave, for the permission rule ---- */

void latmgr_would_leave(const struct latmgr *m, pid_t tid, uint64_t start_time, int want,
			const struct rqb_sched_attr *now, struct lat_perm_thread *ret)
{
	const struct lat_entry *old = latact_find(m->la, tid);
	struct lat_state cur, after;

	/* An entry of a task that had the number before is dropped by the write too. */
	if (old && old->task.start_time != start_time)
		old = NULL;
	latknob_init(&cur);
	latknob_from_attr(m->la, now, &cur);
	latact_decide_knobs(m->la, want, old, &cur, &after);
	latknob_perm(&cur, &after, ret);
}

void latmgr_ungranted(const struct latmgr *m, pid_t tid, uint64_t start_time,
		      struct lat_perm_thread *t)
{
	const struct lat_entry *e = latmgr_entry(m, tid);
	const struct latmgr_proc *p = e ? latmgr_find_process(m, e->tgid, LATMGR_START_NOW) : NULL;

	/* The entry of the thread judged, not of one that had its number before. */
	if (!p || !p->grant || start_time != e->task.start_time)
		return;
	for (unsigned i = 0; i < t->n; i++) {
		struct lat_perm_knob *k = &t->k[i];

		if (!(e->left & latknob_table[k->row].bit) &&
		    k->now == latknob_perm_measure(k->row, &e->set))
			k->now = latknob_perm_measure(k->row, &e->prev);
	}
}

int latmgr_cgroup_owner(const struct latmgr *m, const char *path, uid_t *ret)
{
	const struct lat_classes *cls = &m->la->cls;
	char file[PATH_MAX];
	struct stat st;

	snprintf(file, sizeof(file), "%s%s/%s", cls->mount, path, cls->v2 ? "cpu.weight" : "cpu.shares");
	if (stat(file, &st) == 0) {
		*ret = st.st_uid;
		return 0;
	}
	if (errno != ENOENT || !cls->v2)
		return -ENOENT;
	snprintf(file, sizeof(file), "%s%s/cgroup.procs", cls->mount, path);
	if (stat(file, &st) < 0)
		return -ENOENT;
	*ret = 0;
	return 0;
}

/* ---- list ---- */
static void list_task(FILE *f, const struct latmgr *m, const struct lat_entry *e)
{
	const struct latmgr_proc *p = latmgr_find_process(m, e->tgid, LATMGR_START_NOW);
	char comm[32];

	procfs_comm(m->proc_root, e->task.tid, comm, sizeof(comm));
	fprintf(f, "task\t%d\t%d\t%d\t", (int)e->task.tid, (int)e->tgid, e->value);
	util_put_field(f, e->source);
	fprintf(f, "\t%s\t%s\t%" PRIu64 "\t", p ? "process" : "thread",
		latknob_policy_name(e->set.policy), e->set.slice_ns);
	util_put_field(f, e->set.cgroup[0] ? e->set.cgroup : "-");
	fputc('\t', f);
	util_put_field(f, comm);
	fputc('\n', f);
}

static void list_unit(FILE *f, const struct latmgr *m, const struct latmgr_unit *u)
{
	const struct lat_cg_entry *g = latact_find_cgroup(m->la, u->cgroup);

	fputs("unit\t", f);
	util_put_field(f, u->cgroup);
	fputc('\t', f);
	util_put_field(f, u->unit[0] ? u->unit : "-");
	fprintf(f, "\t%d\t%" PRIu64 "\t%d\t", g ? g->value : u->d.value,
		g ? g->set_weight : 0, g ? g->set_idle : -1);
	util_put_field(f, u->d.why[0] ? u->d.why : u->act_why[0] ? u->act_why : "-");
	fputc('\n', f);
}

static void list_cgroup(FILE *f, const struct lat_cg_entry *g)
{
	fputs("cgroup\t", f);
	util_put_field(f, g->path);
	fprintf(f, "\t%d\t", g->value);
	util_put_field(f, g->source);
	fprintf(f, "\t%" PRIu64 "\t%d\n", g->set_weight, g->set_idle);
}

/*
 * Writes line k of the list to f (with f NULL, only says whether there is one): the
 * tasks, then the units, then the cgroups. A task hidden from the asker
 * (visible) has none: false. Units and cgroups are shown to all, as systemd
 * and cgroupfs show them whatever hidepid says.
 */
/* The last process judged for the asker: its threads, mostly side by side, share it. */
struct list_seen {
	pid_t tgid;
	bool visible;
};

static bool list_line(const struct latmgr *m, latmgr_visible_fn visible, void *ctx, size_t k,
		      struct list_seen *seen, FILE *f)
{
	if (k < m->la->n) {
		const struct lat_entry *e = m->la->e[k];

		if (e->tgid != seen->tgid || !seen->tgid) {
			seen->tgid = e->tgid;
			seen->visible = visible(ctx, e->task.tid, e->task.start_time);
		}
		if (!seen->visible)
			return false;
		if (f)
			list_task(f, m, e);
		return true;
	}
	k -= m->la->n;
	if (k < m->nu) {
		if (!m->u[k].used)
			return false; /* a free slot */
		if (f)
			list_unit(f, m, &m->u[k]);
		return true;
	}
	k -= m->nu;
	if (m->la->cg[k].by_procs)
		return false;
	if (f)
		list_cgroup(f, &m->la->cg[k]);
	return true;
}

/*
 * One line a managed task, unit and cgroup the asker may see, as many as fit in one
 * reply: a line is written apart and kept only if the whole still fits, since an
 * escaped path makes one line up to a few KiB. A cut list says how many lines the
 * whole would have had, counting only what the asker may see.
 */
char *latmgr_list(const struct latmgr *m, latmgr_visible_fn visible, void *ctx, size_t max)
{
	char *buf = NULL;
	size_t len = 0, k, total = m->la->n + m->nu + m->la->ncg, shown = 0;
	bool full = false;
	struct list_seen seen = { 0 };
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	for (k = 0; k < total; k++) {
		char *ln = NULL;
		size_t ll = 0;
		FILE *lf = full ? NULL : open_memstream(&ln, &ll);
		bool line;

		if (!full && !lf)
			break;
		line = list_line(m, visible, ctx, k, &seen, lf);
		if (lf)
			fclose(lf);
		shown += line;
		if (line && !full && len + ll <= max) {
			fwrite(ln, 1, ll, f);
			fflush(f);
		} else if (line) {
			full = true; /* the rest is only counted */
		}
		free(ln);
	}
	if (full)
		fprintf(f, "truncated\t%zu\n", shown);
	fclose(f);
	return buf;
}

/* ---- explain ---- */

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

static void put_maps_to(FILE *f, const struct latact *la, int v)
{
	struct lat_knobs k;
	char slice[112], cls[64] = "none";
	double def_ms = (double)(la->lc.default_slice_ns ? la->lc.default_slice_ns
							 : LAT_SLICE_DEFAULT_NS) / 1e6;

	latency_map(&la->lc, v, &k);
	/* A ratio of the kernel's default, which follows the CPUs: both are shown. */
	if (k.slice_ns)
		snprintf(slice, sizeof(slice), "%.2f ms (the kernel's default %.2f ms x 2^(%d/5)%s)",
			 (double)k.slice_ns / 1e6, def_ms, v,
			 k.slice_ns == LAT_SLICE_MIN_NS   ? ", held at its 0.1 ms bound"
			 : k.slice_ns == LAT_SLICE_MAX_NS ? ", held at its 100 ms bound"
							  : "");
	else
		snprintf(slice, sizeof(slice), "the kernel's default (%.2f ms)", def_ms);
	if (k.use_class) {
		uint64_t w;

		latact_class_k(la, v, NULL, &w);
		snprintf(cls, sizeof(cls), "rqbalance-lat%d (%s %" PRIu64 ")", v,
			 la->cls.v2 ? "cpu.weight" : "cpu.shares", w);
	}
	put(f, "maps_to", "nice %d, policy %s, slice %s%s, class cgroup %s", k.nice,
	    v < 0 ? "other" : latknob_policy_name(k.policy), slice,
	    la->o.uclamp && k.uclamp_min >= 0 ? ", uclamp" : "", cls);
}

/*
 * What a class's weight stands for on this kernel: the value's weight times the busy
 * tasks it runs over the kernel's own multiplier for them (latweigh.h), the value's
 * weight alone where the kernel gives a group its whole weight on each CPU.
 */
static void put_class_weight(FILE *f, const struct latmgr *m, int v)
{
	struct lat_knobs k;
	uint64_t w, base = latweigh_class_weight(&m->la->lc, v, 1, 1, m->la->cls.v2);
	char mode[64], over[64] = "";
	unsigned n, div;

	latency_map(&m->la->lc, v, &k);
	if (!k.use_class || !m->la->cls.on)
		return;
	n = latact_class_k(m->la, v, &div, &w);
	/* "unknown": before 7.3 where it splits, else 7.3's default (latweigh_kernel_of). */
	if (strcmp(m->weigh_mode, "unknown") == 0)
		snprintf(mode, sizeof(mode), "%s", m->weigh_kind == LATWEIGH_SPLIT
				 ? "a kernel before 7.3"
				 : "cgroup_mode unreadable, 7.3's default concur taken");
	else
		snprintf(mode, sizeof(mode), "cgroup_mode %s", m->weigh_mode);
	if (div > 1)
		snprintf(over, sizeof(over), " over the kernel's own x%u", div);
	if (!m->weigh_mode[0])
		put(f, "class_weight", "%" PRIu64 ": the value's weight, until the first tick "
		    "weighs the class for what it runs", w);
	else if (!latweigh_scales(m->weigh_kind))
		put(f, "class_weight", "%" PRIu64 ": the value's weight, not scaled (%s: the "
		    "kernel gives a group its whole weight on each CPU it runs on)", w, mode);
	else
		put(f, "class_weight", "%" PRIu64 ": the value's %" PRIu64 " scaled by %u busy "
		    "CPU%s%s (the kernel splits a group's weight among the CPUs it runs on; "
		    "%s)%s", w, base, n, n == 1 ? "" : "s", over, mode,
		    n > 1 && w == (m->la->cls.v2 ? LATWEIGH_V2_MAX : LATWEIGH_V1_MAX)
			    ? ", held at the interface's bound" : "");
}

/* One knob's line (latknob.h's row k): knob_NAME. */
static void put_knob(FILE *f, const struct latact *la, const struct lat_entry *e,
		     const struct lat_state *cur, const struct latknob *k)
{
	char now[32], set[32], prev[32], key[32];
	const char *missing = latknob_on(la, k) ? NULL : k->missing;

	k->text(cur, now, sizeof(now));
	k->text(&e->set, set, sizeof(set));
	k->text(&e->prev, prev, sizeof(prev));
	snprintf(key, sizeof(key), "knob_%s", k->name);
	if (e->left & k->bit)
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
		put(f, "knob_cgroup", "left where it is, \"%s\": %s", e->cg_left,
		    latency_cg_why(e->cg));
	else if ((!e->set.cgroup[0] || strcmp(e->set.cgroup, e->prev.cgroup) == 0) &&
		 latency_class_gains(e->value, e->left & LAT_K_NICE ? cur->nice : e->prev.nice,
				 la->cls.root_shares))
		put(f, "knob_cgroup", "unchanged: \"%s\" (the class's parent weighs %" PRIu64
		    " shares, more than its nice did: the class would raise it)", cur->cgroup,
		    la->cls.root_shares);
	else if (!e->set.cgroup[0] || strcmp(e->set.cgroup, e->prev.cgroup) == 0)
		put(f, "knob_cgroup", "unchanged: \"%s\"%s", cur->cgroup,
		    la->cls.v2 && e->task.tid != e->tgid ?
			    " (cgroup2 moves whole processes: a thread stays in its process's)" :
			    "");
	else
		put(f, "knob_cgroup", "applied: \"%s\" (was \"%s\")", cur->cgroup, e->prev.cgroup);
}

static void put_unit(FILE *f, const struct latmgr *m, pid_t tgid)
{
	const struct latmgr_unit *u = latmgr_unit_of(m, tgid);
	const struct lat_cg_entry *g = u ? latact_find_cgroup(m->la, u->cgroup) : NULL;

	if (!m->units_on || !u)
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

static void put_notes(FILE *f, const struct latmgr *m, const struct lat_state *cur, bool rt)
{
	if (rt)
		put(f, "note_realtime", "it runs %s: real-time tasks run before all others, so "
		    "nice, slice and weight do not count while it does",
		    latknob_policy_name(cur->policy));
	if (m->la->o.autogroup && strcmp(cur->cgroup, "/") == 0)
		put(f, "note_autogroup", "autogroup is on and it is in the root cpu cgroup: its nice "
		    "counts only among the tasks of its session");
	put_sched_ext(f);
}

/* ---- a task with no value ---- */

static bool rules_say(FILE *f, const struct latmgr *m, pid_t tgid)
{
	struct ident_buf *buf = malloc(sizeof(*buf));
	const struct rule_set *rs = &m->conf->rules;
	struct proc_ident id;
	char why[512], key[RULE_NAME_MAX + 8];

	if (!buf || ident_read(m->proc_root, tgid, buf, &id) < 0) {
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

static void explain_none(FILE *f, const struct latmgr *m, const struct lat_target *t,
			 bool detail)
{
	const struct latmgr_fail *fail;
	uint64_t start = 0;

	put(f, "value", "none");
	if (t->tgid == m->self) {
		put(f, "why", "rqbalanced itself: its own value is [daemon] latency_nice");
		return;
	}
	procfs_start_time(m->proc_root, t->tgid, &start);
	fail = start ? latmgr_failure_of(m, t->tgid, start) : NULL;
	if (fail)
		put(f, "why", "failed: %s matched it but could not give it its value: %s",
		    fail->source, fail->why);
	else if (!m->conf->rules.n)
		put(f, "why", "no one asked (rqctl set), and there are no rules");
	else
		put(f, "why", "no one asked (rqctl set), and no rule gave it one");
	if (m->conf->rules.n && !detail)
		put(f, "rules", "which conditions of the rules it fails is shown to its owner "
		    "and to root");
	else if (m->conf->rules.n && !rules_say(f, m, t->tgid))
		put(f, "rules", "its identity could not be read: it may have exited");
}

/* ---- entry points ---- */

static const struct lat_entry *entry_of(const struct latact *la, const struct lat_target *t)
{
	const struct lat_entry *e = latact_find(la, t->pid);

	for (size_t i = 0; !e && t->kind != LAT_T_THREAD && i < la->n; i++)
		if (la->e[i]->tgid == t->tgid)
			e = la->e[i];
	return e;
}

static void put_source(FILE *f, const struct latmgr *m, const char *source)
{
	const struct rule_set *rs = &m->conf->rules;
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

static void explain_task(FILE *f, struct latmgr *m, const struct lat_target *t, bool detail,
			 latmgr_visible_fn visible, void *ctx)
{
	const struct latmgr_proc *p =
		t->kind == LAT_T_THREAD ? NULL : latmgr_find_process(m, t->tgid, t->start_time);
	const struct lat_entry *e = entry_of(m->la, t);
	struct lat_state cur;
	char comm[64], names[80];
	bool have;

	latknob_init(&cur);
	procfs_comm(m->proc_root, t->pid, comm, sizeof(comm));
	if (t->kind == LAT_T_THREAD)
		put(f, "target", "thread %d of process %d (%s)", (int)t->pid, (int)t->tgid, comm);
	else
		put(f, "target", "process %d (%s)", (int)t->pid, comm);
	if (e)
		latact_check(m->la, e->task.tid);
	have = latact_read(m->la, e ? e->task.tid : t->pid, &cur) == 0;
	if (!p && !e) {
		explain_none(f, m, t, detail);
		if (have)
			put_notes(f, m, &cur, cur.policy == SCHED_FIFO || cur.policy == SCHED_RR);
		return;
	}
	put(f, "value", "%d", p ? p->value : e->value);
	put_source(f, m, p ? p->source : e->source);
	if ((p && p->no_inherit) || (e && e->no_inherit))
		put(f, "handed_down", "no: the processes it starts get back what they copy of it "
		    "(inherit = no)");
	if (e && e->from_tid && visible(ctx, e->from_tid, 0))
		put(f, "inherited_from", "task %d, which had it when it created this one",
		    (int)e->from_tid);
	else if (e && e->from_tid)
		put(f, "inherited_from", "a task that is gone or that your /proc would not "
		    "show you, which had it when it created this one");
	if (e)
		put_since(f, e->since);
	put_maps_to(f, m->la, p ? p->value : e->value);
	put_class_weight(f, m, p ? p->value : e->value);
	if (!e || !have) {
		put(f, "knobs", "no thread of it holds the value now (it may have exited)");
		return;
	}
	for (size_t i = 0; i < latknob_n; i++)
		put_knob(f, m->la, e, &cur, &latknob_table[i]);
	put_cgroup(f, m->la, e, &cur);
	put_unit(f, m, e->tgid);
	latknob_names(e->left, names, sizeof(names));
	put(f, "changed_since", "%s", names[0] ? names : "nothing: every knob is as rqbalance set it");
	put_notes(f, m, &cur, cur.policy == SCHED_FIFO || cur.policy == SCHED_RR);
}

static int explain_cgroup(FILE *f, struct latmgr *m, const char *path)
{
	const struct lat_cg_entry *g;

	latact_check_cg(m->la, path);
	g = latact_find_cgroup(m->la, path);
	put(f, "target", "cgroup %s", path);
	if (!g) {
		put(f, "value", "none");
		put(f, "why", "no one gave it a value (rqctl set -g)%s",
		    m->units_on ? ", and no unit is weighed for its processes' value" : "");
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

int latmgr_explain(struct latmgr *m, const struct lat_target *t, bool detail,
		   latmgr_visible_fn visible, void *ctx, char **ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
	if (t->kind == LAT_T_CGROUP)
		explain_cgroup(f, m, t->path);
	else
		explain_task(f, m, t, detail, visible, ctx);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret = buf;
	return 0;
}
