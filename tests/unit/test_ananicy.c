/*
 * rqctl import-ananicy (client/ananicy.c) on small trees written here: a rule of type
 * Launcher (CachyOS's type for Steam and the other game launchers) becomes a section
 * with inherit = no, which the config reader takes as a rule whose value is not handed
 * down; a rule of another type, or of its own nice, does not. The same for a negative
 * launcher, commented out or live with spoofable = yes.
 */
#include <limits.h>

#include "ananicy.h"
#include "kit.h"
#include "rqbalance.h"

static char dir[PATH_MAX];

static int setup(void **state)
{
	kit_tmp(dir, sizeof(dir), "ananicy");
	kit_put(dir, "00-types.types",
	    "{ \"type\": \"Launcher\", \"nice\": 16, \"ioclass\": \"idle\", \"sched\": \"normal\" }\n"
	    "{ \"type\": \"BG_CPUIO\", \"nice\": 16, \"ioclass\": \"idle\", \"sched\": \"idle\" }\n");
	kit_put(dir, "launchers.rules",
	    "{ \"name\": \"steam\", \"type\": \"Launcher\" }\n"
	    "{ \"name\": \"lutris\", \"type\": \"Launcher\", \"nice\": -2 }\n"
	    "{ \"name\": \"shaders\", \"type\": \"BG_CPUIO\" }\n"
	    "{ \"name\": \"launcher\", \"nice\": 16 }\n");
	return 0;
}

static int teardown(void **state)
{
	assert_int_equal(kit_rm(dir), 0);
	return 0;
}

/* The import of dir, as text to free. */
static char *import(bool spoofable, struct ananicy_result *res)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len), *err = fopen("/dev/null", "w");

	assert_non_null(out);
	assert_non_null(err);
	assert_int_equal(ananicy_import(dir, spoofable, out, err, res), 0);
	fclose(out);
	fclose(err);
	return text;
}

/* The rule set the config reader makes of the import's text. */
static void load(const char *text, struct rqb_conf *c)
{
	FILE *err = fopen("/dev/null", "w");

	assert_non_null(err);
	assert_int_equal(conf_load_string("import", text, err, c), 0);
	fclose(err);
}

static const struct rule *rule(const struct rqb_conf *c, const char *name)
{
	int i = conf_rules_find(&c->rules, name);

	assert_true(i >= 0);
	return &c->rules.r[i];
}

KIT_TEST_FX(launcher_is_not_handed_down, setup, teardown)
{
	struct ananicy_result res;
	char *text = import(false, &res);
	struct rqb_conf c;

	assert_non_null(strstr(text, "[rule ananicy-steam]\ncomm = steam\nlatency_nice = 16\n"
				     "inherit = no\n"));
	/* Left out as a favour on comm alone: commented out, inherit = no with it. */
	assert_non_null(strstr(text, "# [rule ananicy-lutris]\n# comm = lutris\n"
				     "# latency_nice = -2\n# inherit = no\n"));
	assert_non_null(strstr(text, "[rule ananicy-shaders]\ncomm = shaders\n"
				     "latency_nice = 16\n\n"));
	assert_non_null(strstr(text, "[rule ananicy-launcher]\ncomm = launcher\n"
				     "latency_nice = 16\n\n"));
	assert_int_equal(res.live, 3);
	load(text, &c);
	assert_false(rule(&c, "ananicy-steam")->inherit);
	assert_true(rule(&c, "ananicy-shaders")->inherit);
	assert_true(rule(&c, "ananicy-launcher")->inherit);
	assert_int_equal(conf_rules_find(&c.rules, "ananicy-lutris"), -1);
	conf_free(&c);
	free(text);
}

KIT_TEST_FX(spoofable_launcher_keeps_inherit, setup, teardown)
{
	struct ananicy_result res;
	char *text = import(true, &res);
	struct rqb_conf c;

	assert_non_null(strstr(text, "[rule ananicy-lutris]\ncomm = lutris\nlatency_nice = -2\n"
				     "inherit = no\nspoofable = yes\n"));
	load(text, &c);
	assert_false(rule(&c, "ananicy-lutris")->inherit);
	assert_true(rule(&c, "ananicy-lutris")->spoofable);
	conf_free(&c);
	free(text);
}
