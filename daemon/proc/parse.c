/*
 * /proc's home (proc/), its pure parsers: the text of /proc/TID/stat, /proc/TID/status's ids,
 * /proc/stat, /proc/PID/cgroup, /proc/mounts and /proc/PID/mountinfo into plain
 * values. Text in, values out: no I/O, no clock, no logging, so any stage that has
 * read such a file may parse it here.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rqbalance.h"
#include "proc/parse.h"

int parse_stat(const char *buf, struct parse_stat_line *ret)
{
	struct parse_stat_line l = { 0 };
	const char *open = strchr(buf, '('), *close = strrchr(buf, ')'), *p;
	unsigned long long v[40];
	int field = 3;
	size_t n;

	if (!open || !close || close < open)
		return -EINVAL;
	n = (size_t)(close - open - 1);
	if (n >= sizeof(l.comm))
		n = sizeof(l.comm) - 1;
	memcpy(l.comm, open + 1, n);
	p = close + 1;
	if (p[0] != ' ' || !p[1] || p[2] != ' ')
		return -EINVAL;
	l.state = p[1];
	p += 3;
	/* Fields 4..39, all numbers (some may be negative; we only need non-negative ones). */
	for (field = 4; field <= 39; field++) {
		char *end;

		while (*p == ' ')
			p++;
		if (*p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		errno = 0;
		v[field] = strtoull(p, &end, 10);
		if (errno)
			return -EINVAL;
		p = end;
	}
	l.ppid = (pid_t)v[4];
	l.flags = (uint32_t)v[9];
	l.utime = v[14];
	l.stime = v[15];
	l.start_time = v[22];
	l.cpu = (int)v[39];
	if (v[39] >= RQB_MAX_CPUS)
		return -EINVAL;
	*ret = l;
	return 0;
}

int parse_cpustat(const char *buf, int n, uint64_t *busy, uint64_t *total,
		  unsigned *ret_procs_running)
{
	const char *p = buf;
	bool got_running = false;
	unsigned running = 0;

	memset(busy, 0, (size_t)n * sizeof(*busy));
	memset(total, 0, (size_t)n * sizeof(*total));
	while (*p) {
		const char *eol = strchrnul(p, '\n');
		unsigned long long u, ni, sy, id, io, irq, sirq, st;
		int cpu;

		/* "cpu  ..." is the sum of all CPUs: %d would skip the blanks and misread it. */
		if (strncmp(p, "cpu", 3) == 0 && isdigit((unsigned char)p[3]) &&
		    sscanf(p, "cpu%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &u, &ni, &sy,
			   &id, &io, &irq, &sirq, &st) == 9) {
			if (cpu >= 0 && cpu < n) {
				busy[cpu] = u + ni + sy + irq + sirq + st;
				total[cpu] = busy[cpu] + id + io;
			}
		} else if (sscanf(p, "procs_running %u", &running) == 1) {
			got_running = true;
		}
		p = *eol ? eol + 1 : eol;
	}
	if (!got_running)
		return -EINVAL;
	*ret_procs_running = running;
	return 0;
}

/* Whether the comma-separated list [s, end) holds word. */
static bool list_has(const char *s, const char *end, const char *word)
{
	size_t wl = strlen(word);

	while (s < end) {
		const char *comma = memchr(s, ',', (size_t)(end - s));
		size_t l = (size_t)((comma ? comma : end) - s);

		if (l == wl && strncmp(s, word, l) == 0)
			return true;
		s += l + 1;
	}
	return false;
}

/* The text after key on the first line of status that begins with it, or NULL. */
static const char *status_line(const char *status, const char *key)
{
	size_t len = strlen(key);
	const char *p = status;

	while (*p) {
		const char *eol = strchrnul(p, '\n');

		if (strncmp(p, key, len) == 0)
			return p + len;
		p = *eol ? eol + 1 : eol;
	}
	return NULL;
}

/* A pid at p, at least min: 0 and *ret, or -EINVAL. */
static int status_pid(const char *p, long min, pid_t *ret)
{
	char *end;
	long v;

	if (!p)
		return -EINVAL;
	errno = 0;
	v = strtol(p, &end, 10);
	if (end == p || errno || v < min || v > INT_MAX)
		return -EINVAL;
	*ret = (pid_t)v;
	return 0;
}

/* The uids of a "Uid:" line's text at p, real then effective: the mask of those read. */
static unsigned status_uids(const char *p, struct parse_status *ret)
{
	static const unsigned bit[2] = { PARSE_STATUS_RUID, PARSE_STATUS_EUID };
	uid_t *field[2] = { &ret->ruid, &ret->euid };
	char *end = (char *)p;
	unsigned got = 0;

	for (int i = 0; p && i < 2; i++) {
		const char *start = end;
		unsigned long long uid;

		errno = 0;
		uid = strtoull(start, &end, 10);
		if (end == start || errno || uid >= (uid_t)-1)
			break;
		*field[i] = (uid_t)uid;
		got |= bit[i];
	}
	return got;
}

int parse_status_field(const char *buf, const char *key, char *ret, size_t size)
{
	char k[64];
	const char *p;

	snprintf(k, sizeof(k), "%s:", key);
	p = status_line(buf, k);
	if (!p)
		return -ENOENT;
	p += strspn(p, " \t");
	snprintf(ret, size, "%.*s", (int)strcspn(p, "\n"), p);
	return 0;
}

unsigned parse_status(const char *buf, struct parse_status *ret)
{
	unsigned got = 0;

	if (status_pid(status_line(buf, "Tgid:"), 1, &ret->tgid) == 0)
		got |= PARSE_STATUS_TGID;
	if (status_pid(status_line(buf, "PPid:"), 0, &ret->ppid) == 0)
		got |= PARSE_STATUS_PPID;
	return got | status_uids(status_line(buf, "Uid:"), ret);
}

int parse_cgroup(const char *buf, char *ret_path, size_t len)
{
	const char *p = buf, *unified = NULL, *cpu = NULL, *path;
	size_t ulen = 0, clen = 0, plen;

	while (*p) {
		const char *eol = strchrnul(p, '\n');
		const char *c1 = memchr(p, ':', (size_t)(eol - p));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(eol - c1 - 1)) : NULL;

		/* "0::/path" is cgroup2's; "4:cpu,cpuacct:/path" a v1 hierarchy's. */
		if (c2 && c2 + 1 < eol) {
			if (c1 == p + 1 && p[0] == '0' && c2 == c1 + 1) {
				unified = c2 + 1;
				ulen = (size_t)(eol - unified);
			} else if (list_has(c1 + 1, c2, "cpu")) {
				cpu = c2 + 1;
				clen = (size_t)(eol - cpu);
			}
		}
		p = *eol ? eol + 1 : eol;
	}
	path = cpu ? cpu : unified;
	plen = cpu ? clen : ulen;
	if (!path)
		return -ENOENT;
	if (plen >= len)
		return -ENAMETOOLONG;
	memcpy(ret_path, path, plen);
	ret_path[plen] = '\0';
	return 0;
}

void parse_mounts(const char *text, char *ret_v1cpu, char *ret_v2, size_t len)
{
	const char *p = text;

	ret_v1cpu[0] = ret_v2[0] = '\0';
	while (*p) {
		char dev[64], dir[PATH_MAX], type[32], opts[512];
		const char *eol = strchrnul(p, '\n');

		if (sscanf(p, "%63s %4095s %31s %511s", dev, dir, type, opts) == 4) {
			bool cpu = false;

			for (char *o = strtok(opts, ","); o; o = strtok(NULL, ","))
				cpu |= strcmp(o, "cpu") == 0;
			if (strcmp(type, "cgroup") == 0 && cpu && !ret_v1cpu[0])
				snprintf(ret_v1cpu, len, "%s", dir);
			else if (strcmp(type, "cgroup2") == 0 && !ret_v2[0])
				snprintf(ret_v2, len, "%s", dir);
		}
		p = *eol ? eol + 1 : eol;
	}
}

bool parse_mounts_favordynmods(const char *text)
{
	const char *p = text;

	while (*p) {
		char dev[64], dir[PATH_MAX], type[32], opts[512];
		const char *eol = strchrnul(p, '\n');

		if (sscanf(p, "%63s %4095s %31s %511s", dev, dir, type, opts) == 4 &&
		    (strcmp(type, "cgroup") == 0 || strcmp(type, "cgroup2") == 0)) {
			char *save = NULL;

			for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save))
				if (strcmp(o, "favordynmods") == 0)
					return true;
		}
		p = *eol ? eol + 1 : eol;
	}
	return false;
}

/*
 * The next blank-separated field of a mountinfo line at *p into out (size bytes),
 * with the kernel's octal escapes (\040 a blank, \011, \012, \134) undone. 0, or
 * -EINVAL at the end of the line or for a field longer than out.
 */
static int mi_field(const char **p, char *out, size_t size)
{
	const char *s = *p + strspn(*p, " ");
	size_t n = 0;

	if (!*s || *s == '\n')
		return -EINVAL;
	while (*s && *s != ' ' && *s != '\n') {
		char c = *s++;

		if (c == '\\' && s[0] >= '0' && s[0] <= '3' && s[1] >= '0' && s[1] <= '7' &&
		    s[2] >= '0' && s[2] <= '7') {
			c = (char)((s[0] - '0') * 64 + (s[1] - '0') * 8 + (s[2] - '0'));
			s += 3;
			if (!c)
				return -EINVAL; /* no path holds a NUL */
		}
		if (n + 1 >= size)
			return -EINVAL;
		out[n++] = c;
	}
	out[n] = '\0';
	*p = s;
	return 0;
}

static unsigned hidepid_value(const char *v)
{
	static const struct {
		const char *name;
		unsigned value;
	} known[] = { { "0", 0 }, { "off", 0 }, { "1", 1 }, { "noaccess", 1 }, { "2", 2 },
		      { "invisible", 2 }, { "4", 4 }, { "ptraceable", 4 } };

	for (size_t i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (strcmp(v, known[i].name) == 0)
			return known[i].value;
	return 2;
}

static void procfs_opts(char *opts, struct parse_procfs *ret)
{
	char *save = NULL, *end;

	for (char *o = strtok_r(opts, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
		if (strncmp(o, "hidepid=", 8) == 0) {
			ret->hidepid = hidepid_value(o + 8);
		} else if (strncmp(o, "gid=", 4) == 0) {
			unsigned long g;

			errno = 0;
			g = strtoul(o + 4, &end, 10);
			ret->gid_set = !errno && end != o + 4 && !*end && g <= UINT32_MAX;
			ret->gid = ret->gid_set ? (unsigned)g : 0;
		}
	}
}

int parse_mountinfo_proc(const char *line, const char *mnt, struct parse_procfs *ret)
{
	char f[PATH_MAX], point[PATH_MAX], type[64];
	struct parse_procfs r = { 0 };
	const char *p = line;

	/* ID, parent ID, major:minor, root, mount point, mount options. */
	for (int i = 0; i < 6; i++)
		if (mi_field(&p, i == 4 ? point : f, i == 4 ? sizeof(point) : sizeof(f)) < 0)
			return -EINVAL;
	/* Optional fields, up to the separator. */
	do {
		if (mi_field(&p, f, sizeof(f)) < 0)
			return -EINVAL;
	} while (strcmp(f, "-") != 0);
	if (mi_field(&p, type, sizeof(type)) < 0 || mi_field(&p, f, sizeof(f)) < 0)
		return -EINVAL;
	if (strcmp(type, "proc") != 0 || strcmp(point, mnt) != 0)
		return 0;
	/* Super options: may be missing on a line cut short; none then. */
	if (mi_field(&p, f, sizeof(f)) == 0)
		procfs_opts(f, &r);
	*ret = r;
	return 1;
}

int parse_mountinfo(const char *line, const char *mnt, struct parse_mount *ret)
{
	char f[PATH_MAX], root[PATH_MAX], point[PATH_MAX], type[64];
	struct parse_mount m = { 0 };
	const char *p = line;
	char *end;
	unsigned long v;

	if (mi_field(&p, f, sizeof(f)) < 0)
		return -EINVAL;
	errno = 0;
	v = strtoul(f, &end, 10);
	if (errno || end == f || *end || v > UINT32_MAX)
		return -EINVAL;
	m.id = (unsigned)v;
	if (mi_field(&p, f, sizeof(f)) < 0 || mi_field(&p, f, sizeof(f)) < 0 ||
	    sscanf(f, "%u:%u", &m.major, &m.minor) != 2 || mi_field(&p, root, sizeof(root)) < 0 ||
	    mi_field(&p, point, sizeof(point)) < 0 || mi_field(&p, f, sizeof(f)) < 0)
		return -EINVAL;
	do {
		if (mi_field(&p, f, sizeof(f)) < 0)
			return -EINVAL;
	} while (strcmp(f, "-") != 0);
	if (mi_field(&p, type, sizeof(type)) < 0 || mi_field(&p, f, sizeof(f)) < 0)
		return -EINVAL;
	m.whole = strcmp(root, "/") == 0;
	m.proc = strcmp(type, "proc") == 0;
	m.at_mnt = mnt && strcmp(point, mnt) == 0;
	if (m.proc && mi_field(&p, f, sizeof(f)) == 0)
		procfs_opts(f, &m.procfs);
	*ret = m;
	return 0;
}
