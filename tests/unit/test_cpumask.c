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

KIT_TEST(format_parse_round_trips)
{
	static const char *const lists[] = { "", "0", "0-3,8", "1,3,5", "0-1023" };

	for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
		round_trip(lists[i], lists[i]);
}

KIT_TEST(format_writes_what_is_set)
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

KIT_TEST(ranges_collapse)
{
	round_trip("0,1,2,3", "0-3");
	round_trip("0-1,2-3,8", "0-3,8");
	round_trip("5,4,3", "3-5");
	round_trip("0-3,2-5", "0-5");
	round_trip("7-7", "7");
	round_trip("1,1,1", "1");
}

KIT_TEST(every_other_cpu_fits)
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

KIT_TEST(bad_input_rejected)
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

KIT_TEST(trailing_newline_accepted)
{
	round_trip("0-3,8\n", "0-3,8");
	round_trip("5\n", "5");
	round_trip("\n", "");
}

/* Only a newline that ends the text is allowed: one that starts it is not an empty list. */
KIT_TEST(junk_after_leading_newline_rejected)
{
	expect_rejected("\n1", -EINVAL);
	expect_rejected("\njunk", -EINVAL);
}

KIT_TEST(subset)
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

KIT_TEST(first)
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
