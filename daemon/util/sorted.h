/*
 * Sorted tables (sorted.c): an array of n fixed-size elements kept in the order of a
 * compare function, searched by bisection and changed by shifting the tail. The caller
 * owns the array and makes room (util_grow); these never allocate, log or do I/O, so
 * the pure policy may call them.
 */
#ifndef RQB_SORTED_H
#define RQB_SORTED_H

#include <stddef.h>

/*
 * Negative, zero or positive as key sorts before, with or after elem. key need not be
 * an element (a tid, say) where only sorted_lower and sorted_find see it; sorted_add
 * passes the new element as key.
 */
typedef int sorted_cmp_fn(const void *key, const void *elem);

/* The index of the first element that does not sort before key: n if none. */
size_t sorted_lower(const void *arr, size_t n, size_t size, const void *key, sorted_cmp_fn *cmp);
/* The first element that sorts with key, or NULL. */
void *sorted_find(const void *arr, size_t n, size_t size, const void *key, sorted_cmp_fn *cmp);
/*
 * Puts a copy of elem at index i (at most *n), shifting the elements from i up by one,
 * and counts it in *n. The caller chose i to keep the order; elem is not in arr. 0, or
 * -ENOSPC when *n has reached cap (nothing changed).
 */
int sorted_insert(void *arr, size_t *n, size_t cap, size_t size, size_t i, const void *elem);
/* Inserts elem after every element that sorts with it or before it: as sorted_insert. */
int sorted_add(void *arr, size_t *n, size_t cap, size_t size, const void *elem, sorted_cmp_fn *cmp);
/* Takes out the element at index i (below *n), shifting the rest down, keeping the order. */
void sorted_remove(void *arr, size_t *n, size_t size, size_t i);

#endif
