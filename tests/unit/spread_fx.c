/* The spread policy's fixture (spread_fx.h). */
#include "spread_fx.h"

/* The policy's view of f->c, as the daemon builds it each tick. */
const struct spread_conf *sconf(struct fx *f)
{
	conf_spread(&f->c, &f->sc);
	f->sc.whole_processes = f->whole;
	return &f->sc;
}

/* The fixture on topology t, which it owns. */
struct fx *fx_on(struct topo *t)
{
	struct fx *f = calloc(1, sizeof(*f));

	f->topo = t;
	f->s = snap_new(f->topo);
	f->s->self_tgid = 1;
	conf_defaults(&f->c);
	/*
	 * Every LLC counts, however small (a machine of one-core LLCs is below the default
	 * min_llc_cores); the tests of a rule that needs more raise it.
	 */
	f->c.min_llc_cores = 1;
	spread_init(&f->st);
	plan_init(&f->plan);
	return f;
}

struct fx *fx_new(const char *synthetic)
{
	return fx_on(kit_topo(synthetic));
}

/* The fixture on an hwloc XML topology (tests/data) instead of a synthetic one. */
struct fx *fx_new_xml(const char *path)
{
	return fx_on(kit_topo_xml(path));
}

void fx_free(struct fx *f)
{
	plan_fini(&f->plan);
	spread_fini(&f->st);
	snap_free(f->s);
	topo_free(f->topo);
	free(f);
}

/* A runnable task on cpu, allowed everywhere; start_time derives from tid. */
struct snap_task *add(struct fx *f, pid_t tid, int cpu)
{
	struct snap_task t = { .tid = tid, .tgid = tid, .cpu = cpu, .start_time = 1000 + tid,
			       .allowed = f->topo->online };
	struct snap_task *n;

	snprintf(t.comm, sizeof(t.comm), "t%d", (int)tid);
	n = snap_add_task(f->s, &t, "/user.slice");
	assert_non_null(n);
	f->s->cpus[cpu].nr_running++;
	return n;
}

/* t, narrowed to the CPU it is on: load that counts everywhere and never moves. */
struct snap_task *narrowed(struct snap_task *t)
{
	CPU_ZERO(&t->allowed);
	CPU_SET(t->cpu, &t->allowed);
	return t;
}

/* Runs one tick at now_ms; returns the plan's dump. */
const char *tick(struct fx *f, uint64_t now_ms)
{
	f->s->now_ns = now_ms * MS;
	plan_clear(&f->plan);
	assert_true(spread_decide(f->s, sconf(f), &f->st, &f->plan) >= 0);
	return kit_plan_dump(&f->plan);
}

/* Runs one tick on a snapshot in replay format (what --record writes), at its time. */
const char *replay_tick(struct fx *f, const char *text)
{
	FILE *in = fmemopen((void *)text, strlen(text), "r");
	unsigned line = 0;
	char err[256] = "";

	assert_non_null(in);
	if (snap_read(in, f->s, &line, err, sizeof(err)) != 1)
		fail_msg("replay line %u: %s", line, err);
	fclose(in);
	plan_clear(&f->plan);
	assert_true(spread_decide(f->s, sconf(f), &f->st, &f->plan) >= 0);
	return kit_plan_dump(&f->plan);
}

/* Counts plan lines that start with op. */
int count_ops(const char *dump, const char *op)
{
	int n = 0;

	for (const char *p = dump; (p = strstr(p, op)); p++)
		n += p == dump || p[-1] == '\n';
	return n;
}
