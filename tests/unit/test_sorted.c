/*
 * Sorted tables (util/sorted.h): bisection finds the first of equal elements, an add
 * goes after its equals, full tables refuse, and many random adds and removes keep
 * the order.
 */
#include <errno.h>

#include "rqbalance.h"
#include "kit.h"
#include "util/sorted.h"

struct item {
	int key;
	unsigned seq; /* the order of the adds, to check that equals keep it */
};

/* key is an int, not an item: as a table looked up by tid alone. */
static int cmp_key(const void *key, const void *elem)
{
	int k = *(const int *)key, e = ((const struct item *)elem)->key;

	return (k > e) - (k < e);
}

/* sorted_add hands the new item itself as key. */
static int cmp_item(const void *key, const void *elem)
{
	return cmp_key(&((const struct item *)key)->key, elem);
}

KIT_TEST(empty_table)
{
	int key = 3;

	assert_int_equal(sorted_lower(NULL, 0, sizeof(struct item), &key, cmp_key), 0);
	assert_null(sorted_find(NULL, 0, sizeof(struct item), &key, cmp_key));
}

KIT_TEST(lower_is_first_of_equals)
{
	const struct item t[] = {{1, 0}, {3, 1}, {3, 2}, {3, 3}, {7, 4}};
	const int keys[] = {0, 1, 2, 3, 4, 7, 8};
	const size_t want[] = {0, 0, 1, 1, 4, 4, 5};

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++)
		assert_int_equal(sorted_lower(t, ARRAY_SIZE(t), sizeof(*t), &keys[i], cmp_key),
				 want[i]);
	assert_ptr_equal(sorted_find(t, ARRAY_SIZE(t), sizeof(*t), &keys[3], cmp_key), &t[1]);
	assert_ptr_equal(sorted_find(t, ARRAY_SIZE(t), sizeof(*t), &keys[5], cmp_key), &t[4]);
	assert_null(sorted_find(t, ARRAY_SIZE(t), sizeof(*t), &keys[2], cmp_key));
	assert_null(sorted_find(t, ARRAY_SIZE(t), sizeof(*t), &keys[6], cmp_key));
}

KIT_TEST(insert_shifts_and_refuses_when_full)
{
	struct item t[4] = {{1, 0}, {5, 1}};
	size_t n = 2;

	assert_int_equal(sorted_insert(t, &n, ARRAY_SIZE(t), sizeof(*t), 1, &(struct item){3, 2}),
			 0);
	assert_int_equal(sorted_insert(t, &n, ARRAY_SIZE(t), sizeof(*t), 3, &(struct item){9, 3}),
			 0);
	assert_int_equal(n, 4);
	assert_int_equal(t[0].key, 1);
	assert_int_equal(t[1].key, 3);
	assert_int_equal(t[2].key, 5);
	assert_int_equal(t[3].key, 9);
	assert_int_equal(sorted_insert(t, &n, ARRAY_SIZE(t), sizeof(*t), 0, &(struct item){0, 4}),
			 -ENOSPC);
	assert_int_equal(
	    sorted_add(t, &n, ARRAY_SIZE(t), sizeof(*t), &(struct item){0, 4}, cmp_item), -ENOSPC);
	assert_int_equal(n, 4);
	assert_int_equal(t[0].key, 1);
}

KIT_TEST(add_goes_after_equals)
{
	struct item t[8];
	size_t n = 0;
	const int keys[] = {4, 2, 4, 6, 4, 2};

	for (unsigned i = 0; i < ARRAY_SIZE(keys); i++)
		assert_int_equal(sorted_add(t, &n, ARRAY_SIZE(t), sizeof(*t),
					    &(struct item){keys[i], i}, cmp_item),
				 0);
	const struct item want[] = {{2, 1}, {2, 5}, {4, 0}, {4, 2}, {4, 4}, {6, 3}};

	assert_int_equal(n, ARRAY_SIZE(want));
	for (size_t i = 0; i < n; i++) {
		assert_int_equal(t[i].key, want[i].key);
		assert_int_equal(t[i].seq, want[i].seq);
	}
}

KIT_TEST(remove_keeps_order)
{
	struct item t[] = {{1, 0}, {2, 1}, {3, 2}, {4, 3}};
	size_t n = ARRAY_SIZE(t);

	sorted_remove(t, &n, sizeof(*t), 1);
	assert_int_equal(n, 3);
	assert_int_equal(t[0].key, 1);
	assert_int_equal(t[1].key, 3);
	assert_int_equal(t[2].key, 4);
	sorted_remove(t, &n, sizeof(*t), 2);
	sorted_remove(t, &n, sizeof(*t), 0);
	assert_int_equal(n, 1);
	assert_int_equal(t[0].key, 3);
	sorted_remove(t, &n, sizeof(*t), 0);
	assert_int_equal(n, 0);
}

/* Sorted by key, and equal keys in the order they were added. */
static void check_order(const struct item *t, size_t n)
{
	for (size_t i = 1; i < n; i++)
		assert_true(t[i - 1].key < t[i].key ||
			    (t[i - 1].key == t[i].key && t[i - 1].seq < t[i].seq));
}

/* A fixed seed: the same table every run. */
static unsigned next_rand(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 16;
}

KIT_TEST(random_adds_and_removes)
{
	enum { CAP = 512 };
	struct item t[CAP];
	size_t n = 0;
	unsigned seed = 43, seq = 0;

	for (size_t round = 0; round < 20; round++) {
		while (n < CAP - round)
			assert_int_equal(
			    sorted_add(t, &n, CAP, sizeof(*t),
				       &(struct item){(int)(next_rand(&seed) % 64), seq++},
				       cmp_item),
			    0);
		check_order(t, n);
		for (int k = 0; k < 64; k++) {
			int key = (int)(next_rand(&seed) % 64);
			size_t i = sorted_lower(t, n, sizeof(*t), &key, cmp_key);
			const struct item *hit = sorted_find(t, n, sizeof(*t), &key, cmp_key);

			assert_true(i == 0 || t[i - 1].key < key);
			assert_true(i == n || t[i].key >= key);
			assert_ptr_equal(hit, i < n && t[i].key == key ? &t[i] : NULL);
		}
		for (unsigned k = 0; k < 200 && n; k++)
			sorted_remove(t, &n, sizeof(*t), next_rand(&seed) % n);
		check_order(t, n);
	}
}

KIT_GROUP("sorted", NULL, NULL);
