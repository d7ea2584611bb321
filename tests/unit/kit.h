/*
 * The unit-test kit: what every cmocka unit program shares, compiled once into
 * libkit.a (tests/unit/kit.c, the ctl harness, the spread fixture) and linked into each.
 * A program defines its tests with KIT_TEST, and the kit's main runs them: a new
 * program is, whole,
 *
 *	#include "kit.h"
 *	#include "util/cpumask.h"
 *
 *	KIT_TEST(parses_a_range)
 *	{
 *		cpu_set_t s = kit_mask("0-3");
 *
 *		assert_int_equal(CPU_COUNT(&s), 4);
 *	}
 *
 * and a line in the Makefile's UNIT_TESTS.
 *
 * Files a test makes live under a temporary tree (kit_tmp, removed by kit_rm), written
 * with kit_put and read back with kit_slurp. Each program links every daemon object but
 * main.o.
 */
#ifndef RQB_KIT_H
#define RQB_KIT_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf/conf.h"
#include "plan/plan.h"
#include "sample/topo.h"
#include "snapshot/snap.h"
#include "util/cpumask.h"

/* ---- registration: a test is registered where it is defined ---- */

/*
 * KIT_TEST(name) { ... } defines the test function name(void **state) and registers
 * it; KIT_TEST_FX(name, setup, teardown) also runs setup and teardown around it. The
 * kit's main runs a program's tests in the order they are defined.
 */
#define KIT_TEST_FX(fn, setup, teardown)                                                 \
	static void fn(void **state);                                                     \
	__attribute__((constructor)) static void kit_register_##fn(void)                  \
	{                                                                                 \
		kit_register(&(const struct CMUnitTest){ #fn, fn, setup, teardown, NULL },  \
			     __LINE__);                                                   \
	}                                                                                 \
	static void fn(void **state)
#define KIT_TEST(fn) KIT_TEST_FX(fn, NULL, NULL)

void kit_register(const struct CMUnitTest *t, unsigned line);

/*
 * The TAP summary's name and what runs once around all of a program's tests: "tests"
 * and nothing, unless the program says otherwise with KIT_GROUP.
 */
struct kit_group {
	const char *name;
	CMFixtureFunction setup, teardown; /* NULL: none */
};

extern const struct kit_group kit_group;

#define KIT_GROUP(name, setup, teardown) \
	const struct kit_group kit_group = { name, setup, teardown }

/*
 * Run once before the tests (a log level, a fake system every test shares). The kit's
 * own does nothing; a program that needs one defines it.
 */
void kit_before(void);

/* ---- a temporary tree ---- */

/* A fresh directory /tmp/rqb-NAME.XXXXXX, its path in dir. */
void kit_tmp(char *dir, size_t len, const char *name);
/* Removes dir and everything below it, links not followed; 0 or -errno. */
int kit_rm(const char *dir);
/*
 * The file rel under dir (or the path rel, where dir is NULL): written with text (len
 * bytes of data), the directories it needs made; made a directory; its text read back
 * (up to 1 MiB, in a static buffer the next call reuses; NULL: unreadable).
 */
void kit_put(const char *dir, const char *rel, const char *text);
void kit_putn(const char *dir, const char *rel, const void *data, size_t len);
void kit_putf(const char *dir, const char *rel, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void kit_mkdir(const char *dir, const char *rel);
const char *kit_slurp(const char *dir, const char *rel);

/* ---- configuration, topology and plans ---- */

/*
 * rs, emptied, then n rules named r0, r1… that name nothing yet: every string "", the
 * other fields zero (as calloc left the fixed-size rules). Set a string with kit_str.
 */
struct rule_set *kit_rules(struct rule_set *rs, unsigned n);
/* printf into a string that lives as long as rs. */
const char *kit_str(struct rule_set *rs, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A synthetic hwloc topology that is not this machine (no online filter). */
struct topo *kit_topo(const char *synthetic);
/* An hwloc XML topology that is not this machine (no online filter). */
struct topo *kit_topo_xml(const char *path);
cpu_set_t kit_mask(const char *list);
/* The plan's text dump, in a static buffer. */
const char *kit_plan_dump(const struct plan *p);

/* Path to a file under tests/data, from the directory make check runs in. */
#define KIT_DATA(name) "tests/data/" name

#endif
