/* CPU lists as the kernel writes them: format and parse round trips, bad input refused. */
#include <errno.h>

#include "rqbalance.h"
#include "kit.h"

/* Parses s, formats the set again and checks the text is the canonical form. */
static void round_trip(const char *s, const char *canonical)
{
	char buf[CPUMASK_STRLEN];
	cpu_set_t set;

	assert_int_equal(cpumask_parse(s, &set), 0);
	assert_string_equal(cpumask_format(&set, buf, sizeof(buf)), canonical);
}

static void format_parse_round_trips(void **state)
{
	static const char *const lists[] = { "", "0", "0-3,8", "1,3,5", "0-1023" };

	for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
		round_trip(lists[i], lists[i]);
}

static void format_writes_what_is_set(void **state)
{
	char buf[CPUMASK_STRLEN];
	cpu_set_t set;

	CPU_ZERO(&set);
	assert_string_equal(cpumask_format(&set, buf, sizeof(buf)), "");
	CPU_SET(1023, &set);
	assert_string_equal(cpumask_format(&set, buf, sizeof(buf)), "1023");
	CPU_SET(0, &set);
	CPU_SET(1, &set);
	CPU_SET(1022, &set);
	assert_string_equal(cpumask_format(&set, buf, sizeof(buf)), "0-1,1022-1023");
}

static void ranges_collapse(void **state)
{
	round_trip("0,1,2,3", "0-3");
	round_trip("0-1,2-3,8", "0-3,8");
	round_trip("5,4,3", "3-5");
	round_trip("0-3,2-5", "0-5");
	round_trip("7-7", "7");
	round_trip("1,1,1", "1");
}

static void every_other_cpu_fits(void **state)
{
	char buf[CPUMASK_STRLEN];
	cpu_set_t set, back;

	CPU_ZERO(&set);
	for (int c = 0; c < RQB_MAX_CPUS; c += 2)
		CPU_SET(c, &set);
	cpumask_format(&set, buf, sizeof(buf));
	assert_int_equal(strncmp(buf, "0,2,4,", 6), 0);
	assert_non_null(strstr(buf, ",1020,1022"));
	assert_int_equal(cpumask_parse(buf, &back), 0);
	assert_true(CPU_EQUAL(&set, &back));
}

/* s with newlines as "\\n": failure messages must stay on one line for the TAP reader. */
static const char *visible(const char *s, char *buf, size_t len)
{
	size_t n = 0;

	for (; *s && n + 3 < len; s++) {
		if (*s == '\n') {
			buf[n++] = '\\';
			buf[n++] = 'n';
		} else {
			buf[n++] = *s;
		}
	}
	buf[n] = '\0';
	return buf;
}

/* A failed parse must leave the caller's set exactly as it was. */
static void expect_rejected(const char *s, int err)
{
	cpu_set_t set, before;
	char shown[64];

	CPU_ZERO(&set);
	CPU_SET(7, &set);
	CPU_SET(500, &set);
	before = set;
	if (cpumask_parse(s, &set) != err)
		fail_msg("cpumask_parse(\"%s\") did not return %d",
			 visible(s, shown, sizeof(shown)), err);
	assert_true(CPU_EQUAL(&set, &before));
}

static void bad_input_rejected(void **state)
{
	expect_rejected("a", -EINVAL);
	expect_rejected("1-", -EINVAL);
	expect_rejected("3-1", -EINVAL);
	expect_rejected("1,,2", -EINVAL);
	expect_rejected(",1", -EINVAL);
	expect_rejected("1,", -EINVAL);
	expect_rejected("-1", -EINVAL);
	expect_rejected("1--2", -EINVAL);
	expect_rejected(" 1", -EINVAL);
	expect_rejected("1 ", -EINVAL);
	expect_rejected("1x", -EINVAL);
	expect_rejected("0-3,8junk", -EINVAL);
	expect_rejected("0-3\n\n", -EINVAL);
	expect_rejected("1024", -ERANGE);
	expect_rejected("0-1024", -ERANGE);
	expect_rejected("99999999999999999999", -ERANGE);
}

static void trailing_newline_accepted(void **state)
{
	round_trip("0-3,8\n", "0-3,8");
	round_trip("5\n", "5");
	round_trip("\n", "");
}

/* Only a newline that ends the text is allowed: one that starts it is not an empty list. */
static void junk_after_leading_newline_rejected(void **state)
{
	expect_rejected("\n1", -EINVAL);
	expect_rejected("\njunk", -EINVAL);
}

static void subset(void **state)
{
	cpu_set_t empty = kit_mask(""), a = kit_mask("1-2"), b = kit_mask("0-3,8");

	assert_true(cpumask_subset(&a, &b));
	assert_false(cpumask_subset(&b, &a));
	assert_true(cpumask_subset(&b, &b));
	assert_true(cpumask_subset(&empty, &a));
	assert_false(cpumask_subset(&a, &empty));
	a = kit_mask("3-4");
	assert_false(cpumask_subset(&a, &b));
}

static void first(void **state)
{
	cpu_set_t s = kit_mask("");

	assert_int_equal(cpumask_first(&s), -1);
	s = kit_mask("0-3,8");
	assert_int_equal(cpumask_first(&s), 0);
	s = kit_mask("5,9");
	assert_int_equal(cpumask_first(&s), 5);
	s = kit_mask("1023");
	assert_int_equal(cpumask_first(&s), 1023);
}

KIT_TESTS(
	cmocka_unit_test(format_parse_round_trips),
	cmocka_unit_test(format_writes_what_is_set),
	cmocka_unit_test(ranges_collapse),
	cmocka_unit_test(every_other_cpu_fits),
	cmocka_unit_test(bad_input_rejected),
	cmocka_unit_test(trailing_newline_accepted),
	cmocka_unit_test(junk_after_leading_newline_rejected),
	cmocka_unit_test(subset),
	cmocka_unit_test(first),
);
