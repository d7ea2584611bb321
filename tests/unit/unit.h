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

/* A synthetic hwloc topology that is not this machine (no online filter). */
static inline struct topo *unit_topo(const char *synthetic)
{
	struct topo_opts o = { .synthetic = synthetic };
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
