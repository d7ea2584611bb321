/* CPU sets as the kernel lists them ("0-3,8"), on glibc's cpu_set_t. */
#ifndef RQB_CPUMASK_H
#define RQB_CPUMASK_H

#include <sched.h>
#include <stdbool.h>
#include <stddef.h>

/* Longest text form of a cpu_set_t ("0,2,4,..." up to CPU 1023). */
#define CPUMASK_STRLEN 4096

/* Writes the list form, "" for an empty set; returns buf. */
char *cpumask_format(const cpu_set_t *set, char *buf, size_t len);
/* Parses the list form; "" is the empty set. 0 or -EINVAL/-ERANGE; ret untouched on failure. */
int cpumask_parse(const char *s, cpu_set_t *ret_set);
bool cpumask_subset(const cpu_set_t *a, const cpu_set_t *b); /* a ⊆ b */
int cpumask_first(const cpu_set_t *set);                     /* -1 if empty */

#endif
