/* The run-queue histograms' buckets: the function the BPF program runs, against a loop. */
#include <stdint.h>

#include "diag/rqlat.h"
#include "kit.h"

/* floor(log2(µs)) the slow way, 0 below 2 µs, capped at the last bucket (25). */
static unsigned slow_bucket(uint64_t ns)
{
	uint64_t us = ns / 1000;
	unsigned b = 0;

	while (us > 1) {
		us >>= 1;
		b++;
	}
	return b > 25 ? 25 : b;
}

KIT_TEST(buckets_are_log2_of_microseconds)
{
	assert_int_equal(rqlat_bucket(0), 0);
	assert_int_equal(rqlat_bucket(1999), 0);
	assert_int_equal(rqlat_bucket(2000), 1);
	assert_int_equal(rqlat_bucket(3999), 1);
	assert_int_equal(rqlat_bucket(4000), 2);
	assert_int_equal(rqlat_bucket(1024000), 10);
	assert_int_equal(rqlat_bucket(UINT64_MAX), 25);
	for (uint64_t ns = 1; ns && ns < UINT64_MAX / 3; ns = ns * 3 + 7) {
		assert_int_equal(rqlat_bucket(ns), slow_bucket(ns));
		assert_int_equal(rqlat_bucket(ns - 1), slow_bucket(ns - 1));
	}
}

KIT_TEST(every_wait_falls_in_its_bucket_range)
{
	for (uint64_t us = 0; us < (1u << 26) + 5; us = us < 64 ? us + 1 : us * 5 / 4) {
		uint64_t lo, hi;

		rqlat_bucket_range(rqlat_bucket(us * 1000), &lo, &hi);
		assert_true(us >= lo);
		assert_true(hi == 0 || us < hi);
	}
}
