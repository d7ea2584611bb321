/*
 * Policy stage: placement beyond spreading, a table of rules, each off by default
 * ([balance] keep_together, latency_apart, fast_cores), each in its own file
 * (place_together.c, place_apart.c, place_fast.c) with the kit they share in
 * place_kit.c. A new rule is one file and one row below. Pure, as spread.c: the
 * snapshot, the config and the policy's memory in, pins and releases out, within the
 * tick's budget of moves. Each pin records the rule that made it, and each rule
 * releases only its own: a task has one pin at a time.
 *
 * Cost: O(tasks log tasks + processes + pins + CPUs) a tick.
 */
#include <stddef.h>
#include <string.h>

#include "policy/place_int.h"
#include "policy/spread.h"
#include "policy/spread_int.h"
#include "rqbalance.h"

/*
 * The rules in the order they run: latency_apart's pins come before fast_cores' where
 * both are on, and keep_together, which holds whole processes, comes last.
 */
static const struct place_rule place_rules[] = {
	{ "latency_apart", offsetof(struct spread_conf, latency_apart), PIN_APART, true,
	  place_apart_decide, place_apart_forget, NULL },
	{ "fast_cores", offsetof(struct spread_conf, fast_cores), PIN_FAST, true,
	  place_fast_decide, place_fast_forget, NULL },
	{ "keep_together", offsetof(struct spread_conf, keep_together), PIN_TOGETHER, false,
	  place_together_decide, place_together_forget, place_together_pin_lost },
};

static bool rule_on(const struct spread_conf *c, const struct place_rule *r)
{
	return *(const bool *)((const char *)c + r->gate);
}

static const char *off_why(const struct spread_tick *tk, const struct spread_pin *p,
			   const void *arg)
{
	return arg;
}

void place_pin_lost(struct spread_state *st, const struct spread_pin *p)
{
	for (size_t i = 0; i < ARRAY_SIZE(place_rules); i++)
		if (place_rules[i].kind == p->kind && place_rules[i].lost)
			place_rules[i].lost(st, p->tgid);
}

int place_decide(struct spread_tick *tk)
{
	bool lats = false;
	int r = 0;

	memset(tk->st->reserved, 0, (size_t)tk->tp->nllcs);
	tk->st->nreserved = 0;
	for (size_t i = 0; i < ARRAY_SIZE(place_rules); i++)
		lats |= place_rules[i].lats && rule_on(tk->c, &place_rules[i]);
	if (lats)
		r = place_kit_update_lats(tk);
	else
		tk->st->nlats = 0;
	for (size_t i = 0; i < ARRAY_SIZE(place_rules) && r == 0; i++) {
		const struct place_rule *pr = &place_rules[i];

		r = rule_on(tk->c, pr) ? pr->decide(tk) : PLACE_STAND_DOWN;
		if (r == PLACE_STAND_DOWN) {
			pr->forget(tk->st);
			r = place_kit_release(tk, pr->kind, off_why, "off");
		}
	}
	tk->st->place_prev_ns = tk->s->now_ns;
	return r;
}
