/*
 * The request layer's limits (see ctl_req.h): what both doors may hold for callers,
 * one share a person, and the log budget of their refusals. Counting only: it reads
 * nothing (ctl_peer.c reads the subordinate uids' table and a caller's map), and a
 * door asks before it keeps anything for a caller.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

#include "ctl/ctl_req.h"
#include "util/log.h"
#include "util/util.h"

int ctl_req_lim_admit(struct ctl_req_lim *l, const struct ctl_caller *k, bool admin, int *ret_slot)
{
	unsigned users = 0, mine = 0;
	int free_slot = -1;

	for (int i = 0; i < CTL_REQ_SLOTS; i++) {
		const struct ctl_req_slot *s = &l->slot[i];

		if (!s->used) {
			if (free_slot < 0)
				free_slot = i;
			continue;
		}
		if (s->admin)
			continue;
		users++;
		mine += s->share == k->share;
	}
	if (free_slot < 0 || (!admin && users >= CTL_REQ_SLOTS - CTL_REQ_RESERVED)) {
		l->refused++;
		return -EBUSY;
	}
	if (!admin && mine >= CTL_REQ_PER_UID) {
		l->refused++;
		return -EUSERS;
	}
	l->slot[free_slot] = (struct ctl_req_slot){ .used = true, .admin = admin, .share = k->share };
	l->held++;
	*ret_slot = free_slot;
	return 0;
}

/* What d owes at now_ns, paid back at CTL_REQ_LOOP_PCT of the time since it was charged. */
static uint64_t owed_now(const struct ctl_req_debt *d, uint64_t now_ns)
{
	uint64_t paid = now_ns > d->at_ns ? (now_ns - d->at_ns) * CTL_REQ_LOOP_PCT / 100 : 0;

	return d->owed_ns > paid ? d->owed_ns - paid : 0;
}

static struct ctl_req_debt *debt_of(struct ctl_req_lim *l, uid_t share)
{
	for (int i = 0; i < CTL_REQ_DEBTORS; i++)
		if (l->debt[i].at_ns && l->debt[i].share == share)
			return &l->debt[i];
	return NULL;
}

void ctl_req_lim_charge(struct ctl_req_lim *l, uid_t share, uint64_t cost_ns, uint64_t now_ns)
{
	struct ctl_req_debt *d = debt_of(l, share), *least = &l->debt[0];

	if (!d) {
		/* A free entry, or the one owing least: a debt paid back is forgotten. */
		for (int i = 0; i < CTL_REQ_DEBTORS; i++)
			if (!l->debt[i].at_ns || owed_now(&l->debt[i], now_ns) <
						 owed_now(least, now_ns))
				least = &l->debt[i];
		d = least;
		*d = (struct ctl_req_debt){ .share = share };
	}
	d->owed_ns = owed_now(d, now_ns) + cost_ns;
	d->at_ns = now_ns ? now_ns : 1;
}

uint64_t ctl_req_lim_owed(struct ctl_req_lim *l, uid_t share, uint64_t now_ns)
{
	const struct ctl_req_debt *d = debt_of(l, share);
	uint64_t owed = d ? owed_now(d, now_ns) : 0;

	if (owed <= CTL_REQ_OWED_NS)
		return 0;
	l->waited++;
	return (owed - CTL_REQ_OWED_NS) * 100 / CTL_REQ_LOOP_PCT;
}

void ctl_req_lim_fini(struct ctl_req_lim *l)
{
	ctl_peer_subids_free(&l->subids);
}

/* The owner of a subordinate range that [first, first + count) overlaps. */
static bool subid_owner(const struct ctl_subids *s, uint64_t first, uint64_t count,
			uid_t *ret)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct ctl_subid *e = &s->v[i];

		if (first < (uint64_t)e->first + e->count && e->first < first + count) {
			*ret = e->owner;
			return true;
		}
	}
	return false;
}

uid_t ctl_req_lim_share_of(const struct ctl_subids *s, uid_t uid, const struct ctl_idmap *map)
{
	uid_t owner;

	if (subid_owner(s, uid, 1, &owner))
		return owner;
	if (!map || map->same)
		return uid;
	for (int i = 0; i < map->n; i++)
		if (subid_owner(s, map->r[i].outside, map->r[i].count, &owner))
			return owner;
	if (map->n == 1 && map->r[0].count == 1)
		return map->r[0].outside;
	return CTL_SHARE_FOREIGN;
}

void ctl_req_lim_leave(struct ctl_req_lim *l, int slot)
{
	if (slot < 0 || slot >= CTL_REQ_SLOTS || !l->slot[slot].used)
		return;
	l->slot[slot].used = false;
	l->held--;
}

int ctl_req_lim_wait(struct ctl_req_lim *l, unsigned source_waiting)
{
	if (source_waiting >= CTL_REQ_WAITING_SOURCE || l->waiting >= CTL_REQ_WAITING) {
		l->refused_waiting++;
		return source_waiting >= CTL_REQ_WAITING_SOURCE ? -EUSERS : -EBUSY;
	}
	l->waiting++;
	return 0;
}

void ctl_req_lim_unwait(struct ctl_req_lim *l)
{
	if (l->waiting)
		l->waiting--;
}

void ctl_req_lim_log_refusal(struct ctl_req_lim *l, const char *fmt, ...)
{
	uint64_t now = util_now_ns();
	char text[512];
	va_list ap;

	if (now - l->log_window_ns >= CTL_REQ_LOG_WINDOW_NS && !l->unlogged) {
		l->log_window_ns = now;
		l->logged = 0;
	}
	if (l->logged >= CTL_REQ_LOG_BURST) {
		l->unlogged++;
		return;
	}
	l->logged++;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	log_notice("%s", text);
}

void ctl_req_lim_after_tick(struct ctl_req_lim *l)
{
	uint64_t now = util_now_ns();

	if (!l->unlogged || now - l->log_window_ns < CTL_REQ_LOG_WINDOW_NS)
		return;
	log_notice("ctl: %lu more refusals in the last %llu s not logged", l->unlogged,
		   (unsigned long long)((now - l->log_window_ns) / 1000000000ull));
	l->unlogged = 0;
	l->logged = 0;
	l->log_window_ns = now;
}
