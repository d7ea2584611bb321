/* The unit-test kit (kit.h): the one main, the temporary tree, and shared builders. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kit.h"

__attribute__((weak)) const struct kit_group kit_group = { .name = "tests" };

__attribute__((weak)) void kit_before(void)
{
}

struct kit_entry {
	struct CMUnitTest t;
	unsigned line;
};

static struct kit_entry *tests;
static size_t ntests;

void kit_register(const struct CMUnitTest *t, unsigned line)
{
	struct kit_entry *n = realloc(tests, (ntests + 1) * sizeof(*tests));

	if (!n)
		abort();
	tests = n;
	tests[ntests++] = (struct kit_entry){ *t, line };
}

static int by_line(const void *a, const void *b)
{
	const struct kit_entry *x = a, *y = b;

	return (x->line > y->line) - (x->line < y->line);
}

int main(void)
{
	struct CMUnitTest *list = calloc(ntests ? ntests : 1, sizeof(*list));
	int r;

	if (!list)
		abort();
	/* Constructors run in no order C promises: the order of the source is the one. */
	qsort(tests, ntests, sizeof(*tests), by_line);
	for (size_t i = 0; i < ntests; i++)
		list[i] = tests[i].t;
	kit_before();
	r = _cmocka_run_group_tests(kit_group.name, list, ntests, kit_group.setup,
				    kit_group.teardown);
	free(list);
	free(tests);
	return r;
}

/* ---- a temporary tree ---- */

void kit_tmp(char *dir, size_t len, const char *name)
{
	assert_true((size_t)snprintf(dir, len, "/tmp/rqb-%s.XXXXXX", name) < len);
	assert_non_null(mkdtemp(dir));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

int kit_rm(const char *dir)
{
	return nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS) < 0 ? -errno : 0;
}

/* dir/rel, or rel alone where dir is NULL. */
static const char *join(char *buf, size_t len, const char *dir, const char *rel)
{
	if (!dir)
		return rel;
	assert_true((size_t)snprintf(buf, len, "%s/%s", dir, rel) < len);
	return buf;
}

/* Makes the directories above path that are missing. */
static void parents(const char *path)
{
	char dir[PATH_MAX];

	assert_true(strlen(path) < sizeof(dir));
	strcpy(dir, path);
	for (char *slash = strchr(dir + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		if (mkdir(dir, 0755) < 0)
			assert_int_equal(errno, EEXIST);
		*slash = '/';
	}
}

void kit_putn(const char *dir, const char *rel, const void *data, size_t len)
{
	char buf[PATH_MAX];
	const char *path = join(buf, sizeof(buf), dir, rel);
	FILE *f;

	parents(path);
	f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, len, f), len);
	assert_int_equal(fclose(f), 0);
}

void kit_put(const char *dir, const char *rel, const char *text)
{
	kit_putn(dir, rel, text, strlen(text));
}

void kit_putf(const char *dir, const char *rel, const char *fmt, ...)
{
	char text[8192];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	assert_true(n >= 0 && (size_t)n < sizeof(text));
	kit_putn(dir, rel, text, (size_t)n);
}

void kit_mkdir(const char *dir, const char *rel)
{
	char buf[PATH_MAX];
	const char *path = join(buf, sizeof(buf), dir, rel);

	parents(path);
	if (mkdir(path, 0755) < 0)
		assert_int_equal(errno, EEXIST);
}

const char *kit_slurp(const char *dir, const char *rel)
{
	static char text[1 << 20];
	char buf[PATH_MAX];
	FILE *f = fopen(join(buf, sizeof(buf), dir, rel), "r");
	size_t n;

	if (!f)
		return NULL;
	n = fread(text, 1, sizeof(text) - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

/* ---- configuration, topology and plans ---- */

struct rule_set *kit_rules(struct rule_set *rs, unsigned n)
{
	conf_rules_free(rs);
	for (unsigned i = 0; i < n; i++) {
		struct rule r = { .comm = "", .exe = "", .cmdline = "", .cgroup = "",
				  .file = "unit" };
		char name[16];

		snprintf(name, sizeof(name), "r%u", i);
		r.name = conf_rules_strdup(rs, name);
		assert_non_null(r.name);
		assert_int_equal(conf_rules_append(rs, &r), 0);
	}
	return rs;
}

const char *kit_str(struct rule_set *rs, const char *fmt, ...)
{
	char buf[4096];
	const char *s;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	s = conf_rules_strdup(rs, buf);
	assert_non_null(s);
	return s;
}

struct topo *kit_topo(const char *synthetic)
{
	struct topo_opts o = { .synthetic = synthetic };
	struct topo *t = NULL;

	assert_int_equal(topo_load(&o, &t), 0);
	return t;
}

struct topo *kit_topo_xml(const char *path)
{
	struct topo_opts o = { .xml = path };
	struct topo *t = NULL;

	assert_int_equal(topo_load(&o, &t), 0);
	return t;
}

cpu_set_t kit_mask(const char *list)
{
	cpu_set_t s;

	assert_int_equal(cpumask_parse(list, &s), 0);
	return s;
}

const char *kit_plan_dump(const struct plan *p)
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
