/*
 * latmgr_source.c, which event source the latency manager reads, on the in-memory daemon
 * of tests/common/ctl_harness.h with a scripted source in place of BPF or the proc
 * connector. It checks what the manager says of its source (whether events arrive,
 * the source's name, whether a rescan's task walk needs no privilege), that an exec is
 * let wait only while no rule exists and nothing is managed, the source told only when
 * that changes, and that closing forgets the source. Choosing and opening the real
 * sources (latmgr_probe_events, latmgr_source_open) loads BPF or opens the proc
 * connector, which a unit test does not do: those are left to the integration tests.
 */
#include "kit.h"

#include "../common/ctl_harness.h"
#include "latmgr/latmgr.h"
#include "latmgr/latmgr_int.h"
#include "util/log.h"

/* ---- a scripted event source: it records what the manager tells it ---- */

static int nwakes;      /* calls of exec_wakes */
static bool last_wake;  /* and what the last one said */
static int ncloses;
static bool walks;      /* what walks_unprivileged answers */

static void script_exec_wakes(struct evsrc *es, bool wake)
{
	(void)es;
	nwakes++;
	last_wake = wake;
}

static bool script_walks(struct evsrc *es)
{
	(void)es;
	return walks;
}

static int script_open(struct evsrc *es, char *why, size_t len)
{
	(void)es;
	(void)why;
	(void)len;
	return 0;
}

static void script_close(struct evsrc *es)
{
	(void)es;
	ncloses++;
}

static const struct evsrc_ops script_ops = { .name = "script", .open = script_open,
					     .close = script_close,
					     .walks_unprivileged = script_walks,
					     .exec_wakes = script_exec_wakes };
/* One that says nothing of walks or execs: it needs no privilege, every event wakes. */
static const struct evsrc_ops plain_ops = { .name = "plain" };
static struct evsrc script = { .ops = &script_ops };
static struct evsrc plain = { .ops = &plain_ops };

static struct ctlh *daemon_with(uint8_t managed, struct evsrc *ev)
{
	struct ctlh_scenario sc = { .managed = managed };
	struct ctlh *d = ctlh_daemon_new(&sc);

	d->lm.ev = ev;
	nwakes = ncloses = 0;
	last_wake = false;
	return d;
}

/* ---- what the manager says of its source ---- */

KIT_TEST(test_no_source_no_events)
{
	struct ctlh *d = daemon_with(0, NULL);

	(void)state;
	assert_false(latmgr_has_events(&d->lm));
	assert_string_equal(latmgr_source_name(&d->lm), "none");
	/* Without BPF a rescan reads /proc, which needs no CAP_BPF. */
	assert_true(latmgr_walks_unprivileged(&d->lm));
	/* Nothing to tell. */
	latmgr_source_pace(&d->lm);
	assert_false(d->lm.exec_lazy);
	ctlh_daemon_free(d);
}

KIT_TEST(test_source_named_by_its_driver)
{
	struct ctlh *d = daemon_with(0, &script);

	(void)state;
	assert_true(latmgr_has_events(&d->lm));
	assert_string_equal(latmgr_source_name(&d->lm), "script");
	d->lm.ev = &plain;
	assert_string_equal(latmgr_source_name(&d->lm), "plain");
	ctlh_daemon_free(d);
}

KIT_TEST(test_walks_unprivileged_is_the_source_answer)
{
	struct ctlh *d = daemon_with(0, &script);

	(void)state;
	walks = false;
	assert_false(latmgr_walks_unprivileged(&d->lm));
	walks = true;
	assert_true(latmgr_walks_unprivileged(&d->lm));
	/* A source that needs no capability after it opened. */
	d->lm.ev = &plain;
	assert_true(latmgr_walks_unprivileged(&d->lm));
	ctlh_daemon_free(d);
}

/* ---- whether an exec wakes the daemon ---- */

/* No rule, nothing managed: an exec waits for the next tick; said once. */
KIT_TEST(test_pace_idle_daemon_lets_exec_wait)
{
	struct ctlh *d = daemon_with(0, &script);

	(void)state;
	latmgr_source_pace(&d->lm);
	assert_int_equal(nwakes, 1);
	assert_false(last_wake);
	assert_true(d->lm.exec_lazy);
	latmgr_source_pace(&d->lm);
	assert_int_equal(nwakes, 1);
	ctlh_daemon_free(d);
}

/* A rule, a managed process, a task entry or a cgroup entry: an exec wakes it again. */
KIT_TEST(test_pace_wakes_for_rule_or_anything_managed)
{
	static const uint8_t managed[] = { 1, 2, 4 };
	struct ctlh *d;

	(void)state;
	for (size_t i = 0; i < sizeof(managed); i++) {
		d = daemon_with(managed[i], &script);
		d->lm.exec_lazy = true;
		latmgr_source_pace(&d->lm);
		assert_int_equal(nwakes, 1);
		assert_true(last_wake);
		assert_false(d->lm.exec_lazy);
		ctlh_daemon_free(d);
	}

	d = daemon_with(0, &script);
	latmgr_source_pace(&d->lm);
	assert_true(d->lm.exec_lazy);
	kit_rules(&d->conf.rules, 1);
	latmgr_source_pace(&d->lm);
	assert_int_equal(nwakes, 2);
	assert_true(last_wake);
	assert_false(d->lm.exec_lazy);
	/* The rule removed: lazy again. */
	kit_rules(&d->conf.rules, 0);
	latmgr_source_pace(&d->lm);
	assert_int_equal(nwakes, 3);
	assert_false(last_wake);
	ctlh_daemon_free(d);
}

/* A source where every event wakes is told nothing. */
KIT_TEST(test_pace_source_without_lazy_execs)
{
	struct ctlh *d = daemon_with(0, &plain);

	(void)state;
	latmgr_source_pace(&d->lm);
	assert_false(d->lm.exec_lazy);
	ctlh_daemon_free(d);
}

/* ---- closing ---- */

KIT_TEST(test_close_forgets_source)
{
	struct ctlh *d = daemon_with(0, NULL);
	char why[64];

	(void)state;
	assert_int_equal(evsrc_open(&script_ops, &latmgr_event_callbacks, &d->lm, &d->lm.ev, why,
				    sizeof(why)),
			 0);
	assert_true(latmgr_has_events(&d->lm));
	latmgr_source_close(&d->lm);
	assert_int_equal(ncloses, 1);
	assert_null(d->lm.ev);
	assert_null(d->lm.ev_src);
	assert_false(latmgr_has_events(&d->lm));
	assert_string_equal(latmgr_source_name(&d->lm), "none");
	/* Closed twice: nothing more. */
	latmgr_source_close(&d->lm);
	assert_int_equal(ncloses, 1);
	ctlh_daemon_free(d);
}

void kit_before(void)
{
	log_set_level(-1);
	ctlh_init("rqb-test-latmgr-source");
}
