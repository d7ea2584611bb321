/*
 * Sorted tables for any stage, the pure policy included: bisection and ordered insert
 * and remove over an array the caller owns. No allocation, no I/O, no logging.
 */
#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "util/sorted.h"

static const char *at(const void *arr, size_t size, size_t i)
{
	return (const char *)arr + i * size;
}

/* Where key goes among the elements: before those it sorts with, or after them when past_equal. */
static size_t bisect(const void *arr, size_t n, size_t size, const void *key, sorted_cmp_fn *cmp,
		     bool past_equal)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp(key, at(arr, size, mid));

		if (c > 0 || (c == 0 && past_equal))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

size_t sorted_lower(const void *arr, size_t n, size_t size, const void *key, sorted_cmp_fn *cmp)
{
	return bisect(arr, n, size, key, cmp, false);
}

void *sorted_find(const void *arr, size_t n, size_t size, const void *key, sorted_cmp_fn *cmp)
{
	size_t i = sorted_lower(arr, n, size, key, cmp);

	return i < n && cmp(key, at(arr, size, i)) == 0 ? (void *)at(arr, size, i) : NULL;
}

int sorted_insert(void *arr, size_t *n, size_t cap, size_t size, size_t i, const void *elem)
{
	char *base = arr;

	assert(i <= *n);
	if (*n >= cap)
		return -ENOSPC;
	memmove(base + (i + 1) * size, base + i * size, (*n - i) * size);
	memcpy(base + i * size, elem, size);
	(*n)++;
	return 0;
}

int sorted_add(void *arr, size_t *n, size_t cap, size_t size, const void *elem, sorted_cmp_fn *cmp)
{
	return sorted_insert(arr, n, cap, size, bisect(arr, *n, size, elem, cmp, true), elem);
}

void sorted_remove(void *arr, size_t *n, size_t size, size_t i)
{
	char *base = arr;

	assert(i < *n);
	memmove(base + i * size, base + (i + 1) * size, (*n - i - 1) * size);
	(*n)--;
}
