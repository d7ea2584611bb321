/* Shared helpers for the cmocka unit tests: each test program links every daemon object but main.o. */
#ifndef RQB_UNIT_H
#define RQB_UNIT_H

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
#include "testonly.h"

/*
 * rs, emptied, then n rules named r0, r1… that name nothing yet: every string "", the
 * other fields zero (as calloc left the fixed-size rules). Set a string with unit_str.
 */
static inline struct rule_set *unit_rules(struct rule_set *rs, unsigned n)
{
	conf_rules_free(rs);
	for (unsigned i = 0; i < n; i++) {
		struct rule r = { .comm = "", .exe = "", .cmdline = "", .cgroup = "",
				  .file = "unit" };
		char name[16];

		snprintf(name, sizeof(name), "r%u", i);
		r.name = conf_rules_strdup(rs, name);
		assert_non_null(r.name);
		assert_int_equal(conf_rules_append(rs, &r), 0);
	}
	return rs;
}

/* printf into a string that lives as long as rs. */
static inline const char *unit_str(struct rule_set *rs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static inline const char *unit_str(struct rule_set *rs, const char *fmt, ...)
{
	char buf[4096];
	const char *s;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s = conf_rules_strdup(rs, buf);
	assert_non_null(s);
	return s;
}

/* A synthetic hwloc topology that is not this machine (no online filter). */
static inline struct topo *unit_topo(const char *synthetic)
{
	struct topo_opts o = { .synthetic = synthetic };
	struct topo *t = NULL;

	assert_int_equal(topo_load(&o, &t), 0);
	return t;
}

/* An hwloc XML topology that is not this machine (no online filter). */
static inline struct topo *unit_topo_xml(const char *path)
{
	struct topo_opts o = { .xml = path };
	struct topo *t = NULL;

	assert_int_equal(topo_load(&o, &t), 0);
	return t;
}

static inline cpu_set_t unit_mask(const char *list)
{
	cpu_set_t s;

	assert_int_equal(cpumask_parse(list, &s), 0);
	return s;
}

/* The plan's text dump, in a static buffer. */
static inline const char *unit_plan_dump(const struct plan *p)
{
	static char buf[1 << 16];
	FILE *f;

	buf[0] = '\0'; /* glibc's fmemopen leaves an untouched buffer as it was */
	f = fmemopen(buf, sizeof(buf), "w");

	assert_non_null(f);
	plan_dump(p, f);
	fclose(f);
	return buf;
}

/* Path to a file under tests/data, from the directory make check runs in. */
#define UNIT_DATA(name) "tests/data/" name

#endif
