/* CPU list text <-> cpu_set_t. Pure helpers shared by every stage; no I/O. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rqbalance.h"
#include "util/cpumask.h"

char *cpumask_format(const cpu_set_t *set, char *buf, size_t len)
{
	size_t off = 0;
	int cpu = 0;

	if (len == 0)
		return buf;
	buf[0] = '\0';
	while (cpu < RQB_MAX_CPUS) {
		int end;

		if (!CPU_ISSET(cpu, set)) {
			cpu++;
			continue;
		}
		for (end = cpu; end + 1 < RQB_MAX_CPUS && CPU_ISSET(end + 1, set); end++)
			;
		int n = end > cpu ? snprintf(buf + off, len - off, "%s%d-%d", off ? "," : "", cpu, end)
				  : snprintf(buf + off, len - off, "%s%d", off ? "," : "", cpu);
		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
		cpu = end + 1;
	}
	return buf;
}

static int parse_cpu(const char **p, int *ret)
{
	char *end;
	long v;

	if (**p < '0' || **p > '9')
		return -EINVAL;
	errno = 0;
	v = strtol(*p, &end, 10);
	if (errno || v >= RQB_MAX_CPUS)
		return -ERANGE;
	*p = end;
	*ret = (int)v;
	return 0;
}

int cpumask_parse(const char *s, cpu_set_t *ret_set)
{
	cpu_set_t set;
	const char *p = s;

	CPU_ZERO(&set);
	if (*p == '\0' || (*p == '\n' && p[1] == '\0')) {
		*ret_set = set;
		return 0;
	}
	for (;;) {
		int a, b, r;

		r = parse_cpu(&p, &a);
		if (r < 0)
			return r;
		b = a;
		if (*p == '-') {
			p++;
			r = parse_cpu(&p, &b);
			if (r < 0)
				return r;
			if (b < a)
				return -EINVAL;
		}
		for (int c = a; c <= b; c++)
			CPU_SET(c, &set);
		if (*p == ',') {
			p++;
			continue;
		}
		if (*p == '\0' || (*p == '\n' && p[1] == '\0'))
			break;
		return -EINVAL;
	}
	*ret_set = set;
	return 0;
}

bool cpumask_subset(const cpu_set_t *a, const cpu_set_t *b)
{
	cpu_set_t and;

	CPU_AND(&and, a, b);
	return CPU_EQUAL(&and, a);
}

int cpumask_first(const cpu_set_t *set)
{
	for (int c = 0; c < RQB_MAX_CPUS; c++)
		if (CPU_ISSET(c, set))
			return c;
	return -1;
}
