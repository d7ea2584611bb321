/*
 * Latency management, the foreground: the process each caller put in front (a
 * desktop's focused window), a grant that ends at the caller's next call, or at the
 * front's exit, for all that holds it; and games, grants of the same kind that a
 * session agent's bus connection holds until it unregisters them or leaves the bus.
 * It never takes back a value someone set after the call, and never takes a record an
 * earlier owner of a number left for the process's own.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "latmgr/latmgr_int.h"
#include "util/log.h"

/*
 * Whether process q holds what foreground record f granted: f's process, or one
 * started since under it (the kernel copies the nice into a child, and on_fork the
 * record), that still has exactly the grant's value, as the grant's, not a value
 * someone gave it since. The source names the caller, and a caller has one record:
 * what holds it is this grant's, whether or not f's own process is still there.
 */
static bool fg_holds(const struct latmgr_fg *f, const struct latmgr_proc *q)
{
	return q->grant && !q->from_rule && q->value == f->value &&
	       strcmp(q->source, f->source) == 0 && q->start_time >= f->start_time;
}

/*
 * Process q, which still holds what f granted, gets its own back: f's process the
 * value it had before the call (f->prev, a record the call pinned by start time), the
 * others, started under the grant, none. What f's process had may be another grant
 * (a game put in front): it is that grant's again, to end with it.
 */
static int fg_restore(struct latmgr *m, const struct latmgr_fg *f, const struct latmgr_proc *q)
{
	struct lat_req rq = { .tid = q->tgid, .tgid = q->tgid, .start_time = q->start_time,
			      .value = f->prev.value, .source = f->prev.source,
			      .trusted = f->prev.trusted, .no_inherit = f->prev.no_inherit };
	const struct latmgr_proc *p;
	struct latmgr_proc again;
	const char *why;
	int r;

	if (!f->had || q->tgid != f->tgid || q->start_time != f->start_time)
		return latmgr_take_back(m, q->tgid, q->start_time);
	r = latmgr_give_process(m, &rq, f->prev.from_rule, &why);
	p = latmgr_event_process(m, q->tgid);
	if (r >= 0 && f->prev.grant && p && p->start_time == q->start_time) {
		again = *p;
		again.grant = true;
		latmgr_proc_put(m, &again);
	}
	return r;
}

/*
 * The tasks of the processes that hold what f granted. The give-back remembers each
 * as given back (latact_given_find), and the rest must not push out the first, f's process,
 * whose children's forks may still be unread (a front that forked 300 children).
 */
static size_t fg_tasks(const struct latmgr *m, const struct latmgr_fg *f)
{
	size_t n = 0;

	for (size_t k = 0, nt = latmgr_ntasks(m); k < nt; k++) {
		const struct latmgr_proc *q = latmgr_event_process(m, latmgr_task_nth(m, k)->tgid);

		n += q && fg_holds(f, q);
	}
	return n;
}

/*
 * What the kernel copied of f's grant that the table does not hold: a child whose
 * fork event was lost (an overflow under a fork storm; the rescan that follows adopts
 * no child of a parent given back), or is read only after, found by state. What the
 * other grants stand for is theirs.
 */
static void fg_give_back_state(struct latmgr *m, const struct latmgr_fg *f)
{
	struct latact_front end = { .rec = &f->rec, .uid = f->owner };
	struct latact_front live[LATMGR_FG_MAX + LATMGR_GAMES_MAX];
	size_t n = 0;

	if (!f->has_rec || m->stopping)
		return;
	for (size_t i = 0; i < m->nfg + m->ngames; i++) {
		const struct latmgr_fg *g = i < m->nfg ? &m->fg[i] : &m->games[i - m->nfg];

		if (g != f && g->tgid && g->has_rec)
			live[n++] = (struct latact_front){ .rec = &g->rec, .uid = g->owner };
	}
	latact_give_back_grant(m->la, &end, live, n);
}

/*
 * Ends f's grant: every process that holds it is given its own back (fg_restore),
 * whether or not f's process is still there; a value someone set since stays.
 */
static void fg_give_back(struct latmgr *m, struct latmgr_fg *f)
{
	size_t i = 0, n = 0;

	if (!f->tgid)
		return;
	latact_given_reserve(m->la, fg_tasks(m, f) + LATACT_GIVEN_MAX);
	while (i < m->np) {
		struct latmgr_proc q = *m->p[i];
		size_t before = m->np;
		int r;

		if (!fg_holds(f, &q)) {
			i++;
			continue;
		}
		r = fg_restore(m, f, &q);
		n++;
		if (r < 0 && m->np == before)
			latmgr_proc_del(m, q.tgid); /* gone meanwhile, or it would not take it */
		else if (i < m->np && m->p[i]->tgid == q.tgid)
			i++; /* a set replaced it (a reset removed it) */
	}
	if (f->conn[0])
		log_info("latency: the grant of game %d (caller %u, connection %s) ended: %zu "
			 "process%s given back", (int)f->tgid, (unsigned)f->uid, f->conn, n,
			 n == 1 ? "" : "es");
	else
		log_info("latency: the grant of caller %u ended (process %d was in front): %zu "
			 "process%s given back", (unsigned)f->uid, (int)f->tgid, n,
			 n == 1 ? "" : "es");
	fg_give_back_state(m, f);
	f->tgid = 0;
}

void latmgr_fg_exited(struct latmgr *m, struct latmgr_fg *f)
{
	log_info("latency: process %d, %s for caller %u, exited", (int)f->tgid,
		 f->conn[0] ? "a game" : "in front", (unsigned)f->uid);
	fg_give_back(m, f);
}

/* Caller uid's record, or NULL. */
static struct latmgr_fg *fg_of(struct latmgr *m, uid_t uid)
{
	for (size_t i = 0; i < m->nfg; i++)
		if (m->fg[i].uid == uid)
			return &m->fg[i];
	return NULL;
}

/*
 * A new record for caller uid: a slot whose caller has nothing in front, else one
 * whose process is gone, whose grant ends first. NULL when LATMGR_FG_MAX callers hold
 * one, or out of memory.
 */
static struct latmgr_fg *fg_new(struct latmgr *m, uid_t uid)
{
	struct latmgr_fg *f = NULL;

	if (!m->fg && !(m->fg = calloc(LATMGR_FG_MAX, sizeof(*m->fg))))
		return NULL;
	for (size_t i = 0; i < m->nfg && !f; i++)
		if (!m->fg[i].tgid)
			f = &m->fg[i];
	for (size_t i = 0; i < m->nfg && !f; i++)
		if (!latmgr_find_process(m, m->fg[i].tgid, m->fg[i].start_time))
			f = &m->fg[i];
	if (!f && m->nfg == LATMGR_FG_MAX)
		return NULL;
	if (f)
		fg_give_back(m, f);
	else
		f = &m->fg[m->nfg++];
	memset(f, 0, sizeof(*f));
	f->uid = uid;
	return f;
}

/*
 * What the grant wrote on f's front, kept for its end: its copies that no event told
 * of hold exactly that, whether or not the front still runs then.
 */
static void fg_keep_rec(struct latmgr *m, struct latmgr_fg *f)
{
	const struct lat_entry *e = latact_find(m->la, f->tgid);

	f->has_rec = e && e->task.start_time == f->start_time &&
		     latact_owner(m->la, f->tgid, &f->owner) == 0;
	if (!f->has_rec)
		return;
	f->rec = *e;
	f->rec.task.pidfd = -1; /* a copy: the entry keeps its own */
}

/*
 * Puts process rq->tgid in front for f: it gets rq's value, unless it has a value at
 * most that already, which it keeps. Returns the value it has then, or LAT_NONE with
 * *ret_r: -errno with *ret_why, or not below 0 when it is gone.
 */
static int fg_put(struct latmgr *m, struct latmgr_fg *f, const struct lat_req *rq, int *ret_r,
		  const char **ret_why)
{
	const struct latmgr_proc *p = latmgr_find_process(m, rq->tgid, rq->start_time);
	struct latmgr_proc granted;

	if (p && p->value <= rq->value)
		return p->value;
	/* What the process had: only its own record, never one an earlier owner left. */
	f->had = p != NULL;
	if (p)
		f->prev = *p;
	*ret_r = latmgr_give_process(m, rq, false, ret_why);
	p = latmgr_event_process(m, rq->tgid);
	if (*ret_r < 0 || !p)
		return LAT_NONE;
	granted = *p;
	granted.grant = true;
	if (latmgr_proc_put(m, &granted) < 0)
		return LAT_NONE;
	f->tgid = rq->tgid;
	f->start_time = granted.start_time;
	fg_keep_rec(m, f);
	f->value = rq->value;
	snprintf(f->source, sizeof(f->source), "%s", rq->source);
	return rq->value;
}

int latmgr_foreground(struct latmgr *m, uid_t caller, const struct lat_req *rq, int *ret_value,
		      const char **ret_why)
{
	const struct latmgr_proc *p =
		rq->tgid ? latmgr_find_process(m, rq->tgid, rq->start_time) : NULL;
	struct latmgr_fg *f = fg_of(m, caller);
	int r = 0;

	*ret_why = NULL;
	/* Asked again: nothing changes, nothing is given back. */
	if (f && f->tgid && f->tgid == rq->tgid && p && p->start_time == f->start_time &&
	    fg_holds(f, p)) {
		*ret_value = p->value;
		return 0;
	}
	if (!f && rq->tgid && !(f = fg_new(m, caller))) {
		*ret_why = m->fg ? "too many callers have a process in front" : "out of memory";
		return m->fg ? -EUSERS : -ENOMEM;
	}
	if (f)
		fg_give_back(m, f);
	*ret_value = rq->tgid ? fg_put(m, f, rq, &r, ret_why) : LAT_NONE;
	latmgr_units_refresh(m);
	return rq->tgid && *ret_value == LAT_NONE ? (r < 0 ? r : -ESRCH) : 0;
}

/* ---- games: grants as the foreground's, many a caller, each its connection's ---- */

/* The record connection conn holds on game tgid of start_time, or NULL. */
static struct latmgr_fg *game_find(struct latmgr *m, const char *conn, pid_t tgid,
				   uint64_t start_time)
{
	for (size_t i = 0; i < m->ngames; i++) {
		struct latmgr_fg *g = &m->games[i];

		if (g->tgid && g->tgid == tgid && g->start_time == start_time &&
		    strcmp(g->conn, conn) == 0)
			return g;
	}
	return NULL;
}

/* Ends g's grant, and frees its slot. */
static void game_end(struct latmgr *m, struct latmgr_fg *g)
{
	fg_give_back(m, g);
	memset(g, 0, sizeof(*g));
	while (m->ngames && !m->games[m->ngames - 1].tgid)
		m->ngames--;
}

/*
 * Whether g's game still runs: its exit may not have been read yet, or at all (no
 * event source).
 */
static bool game_runs(const struct latmgr *m, const struct latmgr_fg *g)
{
	uint64_t start;
	bool kthread;

	return latmgr_task_info(m, g->tgid, &start, &kthread) == 0 && start == g->start_time;
}

/* A free record (NULL: none), and how many caller holds. */
static struct latmgr_fg *game_slot(struct latmgr *m, uid_t caller, unsigned *ret_mine)
{
	struct latmgr_fg *slot = NULL;

	*ret_mine = 0;
	for (size_t i = 0; i < LATMGR_GAMES_MAX; i++) {
		if (!m->games[i].tgid && !slot)
			slot = &m->games[i];
		*ret_mine += m->games[i].tgid && m->games[i].uid == caller;
	}
	return slot;
}

/* The games (of caller's; all where uid is (uid_t)-1) that ended unread end now. */
static void game_sweep(struct latmgr *m, uid_t caller)
{
	for (size_t i = 0; i < m->ngames; i++) {
		struct latmgr_fg *g = &m->games[i];

		if (g->tgid && (caller == (uid_t)-1 || g->uid == caller) && !game_runs(m, g))
			game_end(m, g);
	}
}

/*
 * A free record for a game of caller's, its games that no longer run (their exit not
 * read, or no event source) ended first, and every caller's where every slot is
 * taken. NULL and *ret_why when caller holds LATMGR_GAMES_PER_USER, or every slot is
 * taken.
 */
static struct latmgr_fg *game_new(struct latmgr *m, uid_t caller, const char **ret_why)
{
	struct latmgr_fg *slot;
	unsigned mine;

	if (!m->games && !(m->games = calloc(LATMGR_GAMES_MAX, sizeof(*m->games)))) {
		*ret_why = "out of memory";
		return NULL;
	}
	game_sweep(m, caller);
	slot = game_slot(m, caller, &mine);
	if (!slot) {
		game_sweep(m, (uid_t)-1);
		slot = game_slot(m, caller, &mine);
	}
	if (mine >= LATMGR_GAMES_PER_USER) {
		*ret_why = "the caller has as many games registered as one user may "
			   "(16 at once)";
		return NULL;
	}
	if (!slot) {
		*ret_why = "too many games are registered";
		return NULL;
	}
	if ((size_t)(slot - m->games) >= m->ngames)
		m->ngames = (size_t)(slot - m->games) + 1;
	return slot;
}

int latmgr_game(struct latmgr *m, uid_t caller, const char *conn, const struct lat_req *rq,
		int *ret_value, const char **ret_why)
{
	struct latmgr_fg *g = game_find(m, conn, rq->tgid, rq->start_time);
	const struct latmgr_proc *p = latmgr_find_process(m, rq->tgid, rq->start_time);
	int r = 0, v;

	*ret_why = NULL;
	if (strlen(conn) >= LATMGR_CONN_MAX || !conn[0]) {
		*ret_why = "the caller's bus connection has no unique name, or a longer one than "
			   "kept";
		return -EINVAL;
	}
	/* Asked again: nothing changes, nothing is given back (a value set since stays). */
	if (g && game_runs(m, g)) {
		*ret_value = p ? p->value : LAT_NONE;
		return 0;
	}
	if (g)
		game_end(m, g);
	if (!(g = game_new(m, caller, ret_why)))
		return -EUSERS;
	g->uid = caller;
	v = fg_put(m, g, rq, &r, ret_why);
	/* The ends above may have changed the table: p is found again. */
	p = latmgr_find_process(m, rq->tgid, rq->start_time);
	if (v != LAT_NONE && !g->tgid && p) {
		/* It keeps a value at most the game's: nothing granted, the record kept. */
		g->tgid = rq->tgid;
		g->start_time = p->start_time;
		g->value = rq->value;
		snprintf(g->source, sizeof(g->source), "%s", rq->source);
	}
	if (v == LAT_NONE || !g->tgid) {
		game_end(m, g);
		latmgr_units_refresh(m);
		return r < 0 ? r : -ESRCH;
	}
	snprintf(g->conn, sizeof(g->conn), "%s", conn);
	*ret_value = v;
	latmgr_units_refresh(m);
	return 0;
}

void latmgr_game_exited(struct latmgr *m, struct latmgr_fg *g)
{
	latmgr_fg_exited(m, g);
	game_end(m, g);
}

int latmgr_game_end(struct latmgr *m, const char *conn, pid_t tgid, uint64_t start_time)
{
	struct latmgr_fg *g = game_find(m, conn, tgid, start_time);

	if (!g)
		return -ESRCH;
	game_end(m, g);
	latmgr_units_refresh(m);
	return 0;
}

size_t latmgr_games_gone(struct latmgr *m, const char *conn, uid_t *ret_owner)
{
	size_t n = 0;

	for (size_t i = m->ngames; i-- > 0;) {
		struct latmgr_fg *g = &m->games[i];

		if (g->tgid && (!conn || strcmp(g->conn, conn) == 0)) {
			*ret_owner = g->uid;
			game_end(m, g);
			n++;
		}
	}
	if (!n)
		return 0;
	log_info("latency: %s left the bus: its %zu game%s given back", conn ? conn : "every "
		 "connection", n, n == 1 ? "" : "s");
	latmgr_units_refresh(m);
	return n;
}

bool latmgr_games_of(const struct latmgr *m, const char *conn)
{
	for (size_t i = 0; i < m->ngames; i++)
		if (m->games[i].tgid && strcmp(m->games[i].conn, conn) == 0)
			return true;
	return false;
}
