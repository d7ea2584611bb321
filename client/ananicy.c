/*
 * Client side: converts an ananicy(-cpp) rules tree into rqbalance [rule NAME] sections.
 * It reads only that tree, through the safe open (another user may have written it), and
 * writes only to its two streams, names escaped: never to the daemon, nor a config file.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ananicy.h"
#include "jsonl.h"
#include "policy/latency.h"
#include "policy/rules.h"
#include "rqbalance.h"
#include "term.h"
#include "util/safeopen.h"

/* The config reader takes lines of at most 198 bytes, comments too: stay well inside. */
#define OUT_LINE_MAX 180
/* A process's comm holds at most 15 bytes (TASK_COMM_LEN 16, NUL included). */
#define COMM_MAX 15
/* "ananicy-" and the name cut to this; a suffix "-N" keeps the section under inih's 49. */
#define SECTION_PREFIX "ananicy-"
#define SECTION_NAME_CUT 32
/* The values sched gives where nothing else does: idle the least weight, batch the
 * least value that makes rqbalance run a task SCHED_BATCH. */
#define SCHED_IDLE_VALUE 19
#define SCHED_BATCH_VALUE 10
/*
 * The type CachyOS's rules give game launchers (Steam, Lutris, Heroic): quiet itself,
 * but what it starts is the game, which must not run at its value: inherit = no.
 */
#define LAUNCHER_TYPE "Launcher"
/* ananicy-cpp-rules is three levels deep and its largest file some 100 KB. */
#define TREE_DEPTH_MAX 16
#define TREE_FILE_MAX (16 << 20)

enum ent_kind { ENT_RULE, ENT_TYPE, ENT_CGROUP };

/*
 * A string (with a kind) to an index, open-addressed: the last entry of a name and the
 * section names given so far are found in constant time, so that a tree of tens of
 * thousands of entries imports in time linear in its size.
 */
struct strtab_slot {
	const char *key; /* not owned: an entry's name or a section's */
	int kind;
	size_t val;
};

struct strtab {
	struct strtab_slot *s;
	size_t cap; /* a power of two, or 0 */
	size_t n;   /* keys held, at most half of cap */
};

/* One object line of the tree, kept as text and parsed again when written. */
struct entry {
	enum ent_kind kind;
	unsigned file; /* index into import.files */
	unsigned line;
	char *name;    /* a rule's name, a type's type, a cgroup's cgroup */
	char *text;
};

struct import {
	const char *dir;
	int topfd;    /* dir, which every file of the tree is resolved under */
	bool allow_spoofable;
	FILE *out, *err;
	char **files; /* paths under dir, sorted */
	size_t nfiles;
	struct entry *ents;
	size_t nents;
	char **sections; /* section names given so far */
	size_t nsections;
	struct strtab last;     /* (kind, name) to the index of its last entry */
	struct strtab sectab;   /* the section names given so far */
	struct ananicy_result res;
	struct jsonl_obj rule, type, cgroup; /* scratch objects for one entry */
};

/* Where a rule's value came from. */
struct pick {
	bool found;
	int value;
	const struct jsonl_value *from; /* the key that gave it */
	bool from_type;
	long long raw;                  /* the number before clamping */
};

/* Room for item n of an array that doubles: it grows when n is 0 or a power of two. */
static void *grow(void *p, size_t n, size_t size)
{
	if (n == 0)
		return p ? p : malloc(size);
	if (n & (n - 1))
		return p;
	return realloc(p, 2 * n * size);
}

static int push_str(char ***arr, size_t *n, const char *s)
{
	char **a = grow(*arr, *n, sizeof(**arr)), *copy;

	if (!a)
		return -ENOMEM;
	*arr = a;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	a[(*n)++] = copy;
	return 0;
}

static size_t strtab_home(const struct strtab *t, int kind, const char *key)
{
	uint64_t h = 0xcbf29ce484222325ull ^ (unsigned)kind;

	for (; *key; key++)
		h = (h ^ (unsigned char)*key) * 0x100000001b3ull;
	return (size_t)h & (t->cap - 1);
}

static struct strtab_slot *strtab_slot(const struct strtab *t, int kind, const char *key)
{
	size_t i;

	if (!t->cap)
		return NULL;
	for (i = strtab_home(t, kind, key); t->s[i].key; i = (i + 1) & (t->cap - 1))
		if (t->s[i].kind == kind && strcmp(t->s[i].key, key) == 0)
			break;
	return &t->s[i];
}

/* key (of kind) now maps to val, replacing what it mapped to. */
static int strtab_put(struct strtab *t, int kind, const char *key, size_t val)
{
	struct strtab_slot *sl;

	if ((t->n + 1) * 2 > t->cap) {
		struct strtab big = { .cap = t->cap ? t->cap * 2 : 64 };

		big.s = calloc(big.cap, sizeof(*big.s));
		if (!big.s)
			return -ENOMEM;
		for (size_t i = 0; i < t->cap; i++)
			if (t->s[i].key)
				*strtab_slot(&big, t->s[i].kind, t->s[i].key) = t->s[i];
		big.n = t->n;
		free(t->s);
		*t = big;
	}
	sl = strtab_slot(t, kind, key);
	if (!sl->key)
		t->n++;
	*sl = (struct strtab_slot){ .key = key, .kind = kind, .val = val };
	return 0;
}

static const struct strtab_slot *strtab_get(const struct strtab *t, int kind, const char *key)
{
	const struct strtab_slot *sl = strtab_slot(t, kind, key);

	return sl && sl->key ? sl : NULL;
}

/* ---- finding the files ---- */

static bool wanted(const char *name)
{
	static const char *const ext[] = { ".rules", ".types", ".cgroups" };
	size_t n = strlen(name);

	for (size_t i = 0; i < ARRAY_SIZE(ext); i++) {
		size_t e = strlen(ext[i]);

		if (n > e && strcmp(name + n - e, ext[i]) == 0)
			return true;
	}
	return false;
}

static void join(char *buf, size_t size, const char *a, const char *b)
{
	snprintf(buf, size, "%s%s%s", a, a[0] && b[0] ? "/" : "", b);
}

/* "rqctl: DIR/REL: what" on err, the path escaped: another user may have named it. */
static void say(struct import *im, const char *rel, const char *what)
{
	char path[PATH_MAX];

	join(path, sizeof(path), im->dir, rel);
	fputs("rqctl: ", im->err);
	term_put(im->err, path, strlen(path));
	fprintf(im->err, ": %s\n", what);
}

/* A file or directory of the tree not read: said, and counted. */
static int skip_entry(struct import *im, const char *rel, const char *why)
{
	say(im, rel, why);
	im->res.skipped++;
	return 0;
}

static int walk(struct import *im, const char *rel, int depth);

static int walk_entry(struct import *im, int dfd, const char *rel, const char *name, int depth)
{
	char child[PATH_MAX];
	struct stat st;

	if ((size_t)snprintf(child, sizeof(child), "%s%s%s", rel, rel[0] ? "/" : "", name) >=
	    sizeof(child))
		return skip_entry(im, rel, strerror(ENAMETOOLONG));
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return skip_entry(im, child, strerror(errno));
	if (S_ISDIR(st.st_mode))
		return walk(im, child, depth + 1);
	if (!wanted(name))
		return 0;
	/* Looked at again when opened: this is for the message, the open is the guard. */
	if (S_ISLNK(st.st_mode))
		return skip_entry(im, child, safeopen_strerror(-ELOOP));
	if (!S_ISREG(st.st_mode))
		return skip_entry(im, child, safeopen_strerror(-EINVAL));
	return push_str(&im->files, &im->nfiles, child);
}

/* dir/rel, a directory reached under dir by no link, for a walk. 0 or -errno. */
static int open_dir(struct import *im, const char *rel, DIR **ret)
{
	int fd, r;

	if (rel[0]) {
		r = safeopen_dir(im->topfd, rel, &fd);
		if (r < 0)
			return r;
	} else if ((fd = openat(im->topfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		return -errno;
	}
	*ret = fdopendir(fd);
	if (!*ret) {
		r = -errno;
		close(fd);
		return r;
	}
	return 0;
}

/* Adds the wanted files under dir/rel; only the top directory's failure is returned. */
static int walk(struct import *im, const char *rel, int depth)
{
	struct dirent *d;
	DIR *dp;
	int r;

	if (depth > TREE_DEPTH_MAX)
		return skip_entry(im, rel, "deeper than rqctl reads a tree");
	r = open_dir(im, rel, &dp);
	if (r < 0 && !rel[0]) {
		say(im, rel, strerror(-r));
		return r;
	}
	if (r < 0)
		return skip_entry(im, rel, r == -ENOTDIR ? "no longer a directory (a symbolic "
							  "link is not followed)" :
							  safeopen_strerror(r));
	while (r == 0 && (d = readdir(dp)))
		if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
			r = walk_entry(im, dirfd(dp), rel, d->d_name, depth);
	closedir(dp);
	return r;
}

static int by_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ---- reading them ---- */

static void bad_line(struct import *im, unsigned file, unsigned line, const char *reason)
{
	char path[PATH_MAX];

	join(path, sizeof(path), im->dir, im->files[file]);
	fputs("rqctl: ", im->err);
	term_put(im->err, path, strlen(path));
	fprintf(im->err, ":%u: %s\n", line, reason);
	im->res.skipped++;
}

/* What a line defines, as ananicy-cpp tells: a name, else a type, else a cgroup. */
static const char *classify(const struct jsonl_obj *o, enum ent_kind *kind, const char **name)
{
	static const struct {
		const char *key;
		enum ent_kind kind;
	} keys[] = { { "name", ENT_RULE }, { "type", ENT_TYPE }, { "cgroup", ENT_CGROUP } };

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		const struct jsonl_value *v = jsonl_get(o, keys[i].key);

		if (!v)
			continue;
		if (v->kind != JSONL_STR)
			return i == 0 ? "\"name\" is not a string" : "\"type\" is not a string";
		if (!v->text[0])
			return i == 0 ? "\"name\" is empty" : "an empty \"type\" or \"cgroup\"";
		*kind = keys[i].kind;
		*name = v->text;
		return NULL;
	}
	return "no \"name\", \"type\" or \"cgroup\": not a rule, a type or a cgroup";
}

static int add_entry(struct import *im, unsigned file, unsigned line, const char *text)
{
	struct entry *e = grow(im->ents, im->nents, sizeof(*e));
	const char *reason, *name;
	enum ent_kind kind;
	int r;

	if (!e)
		return -ENOMEM;
	im->ents = e;
	r = jsonl_parse(text, &im->rule, &reason);
	if (r > 0)
		return 0;
	if (r == 0 && (reason = classify(&im->rule, &kind, &name)))
		r = -EINVAL;
	if (r < 0) {
		bad_line(im, file, line, reason);
		return 0;
	}
	e += im->nents++;
	*e = (struct entry){ .kind = kind, .file = file, .line = line };
	e->name = strdup(name);
	e->text = strdup(text);
	return e->name && e->text ? 0 : -ENOMEM;
}

/* A file of the tree, through the safe open: the walk's look at it may be stale. */
static FILE *open_file(struct import *im, unsigned file)
{
	FILE *f = NULL;
	int fd, r;

	r = safeopen_file(im->topfd, im->files[file], 0, TREE_FILE_MAX, &fd);
	if (r == 0 && !(f = fdopen(fd, "re"))) {
		r = -errno;
		close(fd);
	}
	if (r < 0)
		skip_entry(im, im->files[file], safeopen_strerror(r));
	return f;
}

static int read_file(struct import *im, unsigned file)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	ssize_t n;
	int r = 0;
	FILE *f = open_file(im, file);

	if (!f)
		return 0;
	while (r == 0 && (n = getline(&line, &cap, f)) >= 0) {
		lineno++;
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		if (strlen(line) != (size_t)n)
			bad_line(im, file, lineno, "a NUL byte in the line");
		else
			r = add_entry(im, file, lineno, line);
	}
	if (r == 0 && ferror(f))
		skip_entry(im, im->files[file], strerror(errno));
	free(line);
	fclose(f);
	return r;
}

/* ---- writing ---- */

/*
 * One comment line, what a terminal would act on as \\xHH (term_put_utf8: the output
 * is a UTF-8 config file first), cut to fit the config reader's lines, never inside a
 * character.
 */
static void __attribute__((format(printf, 2, 3))) comment(struct import *im, const char *fmt, ...)
{
	char buf[1024], safe[4 * sizeof(buf)];
	size_t cut = OUT_LINE_MAX - 5;
	va_list ap;
	FILE *f;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	f = fmemopen(safe, sizeof(safe), "w");
	if (!f)
		return;
	term_put_utf8(f, buf, strlen(buf));
	fclose(f);
	safe[sizeof(safe) - 1] = '\0';
	if (strlen(safe) > OUT_LINE_MAX - 2) {
		while (cut > 0 && ((unsigned char)safe[cut] & 0xc0) == 0x80)
			cut--;
		strcpy(safe + cut, "...");
	}
	fprintf(im->out, "# %s\n", safe);
}

static const char *value_text(const struct jsonl_value *v, char *buf, size_t size)
{
	FILE *f = fmemopen(buf, size, "w");

	if (!f)
		return "?";
	jsonl_put_value(f, v);
	fclose(f);
	buf[size - 1] = '\0';
	return buf;
}

static const char *where(const struct import *im, const struct entry *e, char *buf, size_t size)
{
	snprintf(buf, size, "%s:%u", im->files[e->file], e->line);
	return buf;
}

/* The last entry of kind named name (ananicy-cpp keeps the last), or NULL. */
static const struct entry *find_last(const struct import *im, enum ent_kind kind,
				     const char *name)
{
	const struct strtab_slot *sl = strtab_get(&im->last, (int)kind, name);

	return sl ? &im->ents[sl->val] : NULL;
}

static void parse_again(const struct entry *e, struct jsonl_obj *o)
{
	const char *reason;

	if (jsonl_parse(e->text, o, &reason) != 0)
		o->n = 0; /* cannot happen: it parsed when read */
}

/* Every key of o as a comment, but skip. */
static void put_keys(struct import *im, const struct jsonl_obj *o, const char *skip)
{
	char val[JSONL_MAX_STR * 2];

	for (unsigned i = 0; i < o->n; i++)
		if (strcmp(o->v[i].key, skip))
			comment(im, "  %s = %s", o->v[i].key,
				value_text(&o->v[i], val, sizeof(val)));
}

static void put_type(struct import *im, const struct entry *e)
{
	char w[PATH_MAX + 16];

	parse_again(e, &im->type);
	comment(im, "%s: type \"%s\", the defaults of the rules that name it:",
		where(im, e, w, sizeof(w)), e->name);
	put_keys(im, &im->type, "type");
	fputc('\n', im->out);
}

static void put_cgroup(struct import *im, const struct entry *e)
{
	char w[PATH_MAX + 16];

	parse_again(e, &im->cgroup);
	comment(im, "%s: cgroup \"%s\": not carried over (rqbalance gives weights, no quota):",
		where(im, e, w, sizeof(w)), e->name);
	put_keys(im, &im->cgroup, "cgroup");
	fputc('\n', im->out);
}

/* ---- one rule ---- */

/* An integer value of a key clamped to -20..19 into p; false if it is no integer. */
static bool take_int(const struct jsonl_value *v, bool from_type, struct pick *p)
{
	if (!v || v->kind != JSONL_NUM || !v->is_int)
		return false;
	p->found = true;
	p->raw = v->num;
	p->value = v->num < LAT_MIN ? LAT_MIN : v->num > LAT_MAX ? LAT_MAX : (int)v->num;
	p->from = v;
	p->from_type = from_type;
	return true;
}

/* The sched that applies: the rule's own, else its type's. */
static const struct jsonl_value *sched_of(const struct jsonl_obj *r, const struct jsonl_obj *t)
{
	const struct jsonl_value *v = jsonl_get(r, "sched");

	return v || !t ? v : jsonl_get(t, "sched");
}

/*
 * ananicy-cpp (src/rules.cpp, Rules::get_rule) merges the type under the rule, key by
 * key, so a key the rule gives is the rule's and any other is the type's; then
 * (src/worker.cpp, Worker::work) latency_nice is the merged latency_nice, else the
 * merged nice. So a type's latency_nice goes before the rule's own nice.
 */
static void pick_value(const struct jsonl_obj *r, const struct jsonl_obj *t, struct pick *p)
{
	const struct jsonl_value *s = sched_of(r, t);

	*p = (struct pick){ 0 };
	if (take_int(jsonl_get(r, "latency_nice"), false, p) ||
	    (t && take_int(jsonl_get(t, "latency_nice"), true, p)) ||
	    take_int(jsonl_get(r, "nice"), false, p) ||
	    (t && take_int(jsonl_get(t, "nice"), true, p)))
		return;
	if (!s || s->kind != JSONL_STR)
		return;
	if (strcmp(s->text, "idle") == 0 || strcmp(s->text, "batch") == 0) {
		p->found = true;
		p->value = s->text[0] == 'i' ? SCHED_IDLE_VALUE : SCHED_BATCH_VALUE;
		p->raw = p->value;
		p->from = s;
		p->from_type = !jsonl_get(r, "sched");
	}
}

/* What rqbalance makes of a key it does not carry over, after its value; or "". */
static const char *why_not(struct import *im, const struct jsonl_value *v, char *buf, size_t size)
{
	const struct entry *cg;
	const struct jsonl_value *q;

	buf[0] = '\0';
	if ((!strcmp(v->key, "nice") || !strcmp(v->key, "latency_nice")) &&
	    !(v->kind == JSONL_NUM && v->is_int))
		snprintf(buf, size, " (not an integer)");
	if (!strcmp(v->key, "cgroup") && v->kind == JSONL_STR) {
		cg = find_last(im, ENT_CGROUP, v->text);
		if (cg)
			parse_again(cg, &im->cgroup);
		q = cg ? jsonl_get(&im->cgroup, "CPUQuota") : NULL;
		if (q)
			snprintf(buf, size, " (CPUQuota %s)", q->text);
		else if (!cg)
			snprintf(buf, size, " (no .cgroups file defines it)");
	}
	return buf;
}

static void not_carried(struct import *im, const struct jsonl_value *v, const char *type_name)
{
	char val[JSONL_MAX_STR * 2], why[64 + JSONL_MAX_STR];

	why_not(im, v, why, sizeof(why));
	if (type_name)
		comment(im, "not carried over: %s = %s%s, from type \"%s\"", v->key,
			value_text(v, val, sizeof(val)), why, type_name);
	else
		comment(im, "not carried over: %s = %s%s", v->key, value_text(v, val, sizeof(val)),
			why);
}

/* The rule's keys and its type's that gave neither comm nor the value, as comments. */
static void put_leftovers(struct import *im, const struct jsonl_obj *r, const struct jsonl_obj *t,
			  const char *type_name, const struct pick *p)
{
	for (unsigned i = 0; i < r->n; i++) {
		const struct jsonl_value *v = &r->v[i];

		if (v == p->from || !strcmp(v->key, "name") ||
		    (!strcmp(v->key, "type") && v->kind == JSONL_STR))
			continue;
		not_carried(im, v, NULL);
	}
	for (unsigned i = 0; t && i < t->n; i++) {
		const struct jsonl_value *v = &t->v[i];

		/* A key the rule gives too is the rule's, as ananicy-cpp merges them. */
		if (v == p->from || !strcmp(v->key, "type") || jsonl_get(r, v->key))
			continue;
		not_carried(im, v, type_name);
	}
}

/* Why name cannot be a comm = line, or NULL. */
static const char *comm_problem(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < n; i++)
		if ((unsigned char)name[i] < 0x20 || name[i] == 0x7f)
			return "it holds a control character, which no config line can";
	for (size_t i = 0, len; i < n; i += len ? len : 1) {
		const unsigned char *p = (const unsigned char *)name + i;

		len = p[0] >= 0x80 ? term_utf8_len(p, n - i) : 1;
		if (!len || term_is_c1(p, len))
			return "it holds a C1 control or a byte that is not UTF-8, which rqctl "
			       "writes to no config as it is";
	}
	if (n > COMM_MAX)
		return "longer than the 15 bytes of a process's comm: it matches no process";
	if (isspace((unsigned char)name[0]) || isspace((unsigned char)name[n - 1]))
		return "it starts or ends with a blank, which the config reader strips";
	if (name[0] == ';' || strstr(name, " ;") || strstr(name, "\t;"))
		return "the config reader would take its ';' for the start of a comment";
	return NULL;
}

/* comm's value: the name with fnmatch's special characters escaped. */
static void comm_value(const char *name, char *buf, size_t size)
{
	size_t n = 0;

	for (; *name && n + 3 < size; name++) {
		if (strchr("*?[\\", *name))
			buf[n++] = '\\';
		buf[n++] = *name;
	}
	buf[n] = '\0';
}

static bool section_used(const struct import *im, const char *s)
{
	return strtab_get(&im->sectab, 0, s) != NULL;
}

/* A section name the config takes, from name, not given before. */
static int section_name(struct import *im, const char *name, char *buf, size_t size)
{
	char base[sizeof(SECTION_PREFIX) + SECTION_NAME_CUT];
	size_t n = strlen(SECTION_PREFIX);

	memcpy(base, SECTION_PREFIX, n);
	for (; *name && n < sizeof(base) - 1; name++)
		base[n++] = isalnum((unsigned char)*name) || strchr("-_.@", *name) ? *name : '_';
	base[n] = '\0';
	snprintf(buf, size, "%s", base);
	for (unsigned k = 2; section_used(im, buf); k++)
		snprintf(buf, size, "%s-%u", base, k);
	if (push_str(&im->sections, &im->nsections, buf) < 0)
		return -ENOMEM;
	return strtab_put(&im->sectab, 0, im->sections[im->nsections - 1], 0);
}

static void put_source(struct import *im, const struct pick *p, const char *type_name)
{
	char clamp[64] = "";

	if (p->raw != p->value)
		snprintf(clamp, sizeof(clamp), ", %lld clamped to -20..19", p->raw);
	if (!strcmp(p->from->key, "sched"))
		comment(im, "latency_nice %d: sched \"%s\"%s%s%s", p->value, p->from->text,
			p->from_type ? " of type \"" : "", p->from_type ? type_name : "",
			p->from_type ? "\"" : "");
	else if (p->from_type)
		comment(im, "latency_nice %d: the %s of type \"%s\"%s", p->value, p->from->key,
			type_name, clamp);
	else
		comment(im, "latency_nice %d: the rule's %s%s", p->value, p->from->key, clamp);
}

/*
 * The section itself: live, or each line commented out with the reason before it.
 * launcher: its type is LAUNCHER_TYPE, whose value stays with it (inherit = no).
 */
static int put_section(struct import *im, const char *name, const struct pick *p,
		       bool launcher)
{
	bool live = p->value >= 0 || im->allow_spoofable;
	const char *c = live ? "" : "# ";
	char sec[RULE_NAME_MAX], comm[2 * COMM_MAX + 2];

	if (section_name(im, name, sec, sizeof(sec)) < 0)
		return -ENOMEM;
	comm_value(name, comm, sizeof(comm));
	if (!live) {
		comment(im, "Left out: a negative value on comm alone, which any process can");
		comment(im, "set for itself, needs spoofable = yes (%s).",
			"import with --allow-spoofable");
	}
	if (launcher)
		comment(im, "type \"%s\": the programs it starts do not inherit its value",
			LAUNCHER_TYPE);
	fprintf(im->out, "%s[rule %s]\n%scomm = %s\n%slatency_nice = %d\n", c, sec, c, comm, c,
		p->value);
	if (launcher)
		fprintf(im->out, "%sinherit = no\n", c);
	if (p->value < 0 && live)
		fprintf(im->out, "spoofable = yes\n");
	im->res.live += live;
	return 0;
}

static const char *type_line(struct import *im, const struct jsonl_value *tv,
			     const struct entry **ret)
{
	char w[PATH_MAX + 16];

	*ret = NULL;
	if (!tv || tv->kind != JSONL_STR)
		return NULL;
	*ret = find_last(im, ENT_TYPE, tv->text);
	if (*ret)
		comment(im, "type \"%s\", defined at %s", tv->text, where(im, *ret, w, sizeof(w)));
	else
		comment(im, "type \"%s\": no .types file defines it", tv->text);
	return tv->text;
}

static int put_rule(struct import *im, const struct entry *e)
{
	const struct entry *te, *later = find_last(im, ENT_RULE, e->name);
	const struct jsonl_obj *t = NULL;
	const char *type_name, *problem = comm_problem(e->name);
	char w[PATH_MAX + 16];
	struct pick p;

	parse_again(e, &im->rule);
	comment(im, "%s: \"%s\"", where(im, e, w, sizeof(w)), e->name);
	type_name = type_line(im, jsonl_get(&im->rule, "type"), &te);
	if (te) {
		parse_again(te, &im->type);
		t = &im->type;
	}
	pick_value(&im->rule, t, &p);
	if (later != e) {
		comment(im, "Left out: replaced by %s (ananicy keeps the last rule of a name)",
			where(im, later, w, sizeof(w)));
		p = (struct pick){ 0 };
	} else if (problem) {
		comment(im, "Left out: %s", problem);
		p = (struct pick){ 0 };
	} else if (p.found) {
		put_source(im, &p, type_name);
	} else {
		comment(im, "Left out: no latency_nice, nice, or sched %s, gives a value",
			"idle or batch");
	}
	put_leftovers(im, &im->rule, t, type_name, &p);
	if (p.found && put_section(im, e->name, &p,
				   type_name && strcmp(type_name, LAUNCHER_TYPE) == 0) < 0)
		return -ENOMEM;
	fputc('\n', im->out);
	return 0;
}

/* ---- the whole tree ---- */

static int read_tree(struct import *im)
{
	int r = walk(im, "", 0);

	if (r < 0)
		return r;
	if (im->nfiles)
		qsort(im->files, im->nfiles, sizeof(*im->files), by_path);
	for (size_t i = 0; i < im->nfiles && r == 0; i++)
		r = read_file(im, (unsigned)i);
	return r;
}

static int write_all(struct import *im)
{
	comment(im, "rqbalance rules from the ananicy rules in %s (rqctl import-ananicy).",
		im->dir);
	comment(im, "What rqbalance does not carry over is kept in comments; rqctl(1) has the");
	comment(im, "mapping. Files: %zu; rules, types and cgroups: %zu.", im->nfiles, im->nents);
	fputc('\n', im->out);
	for (size_t i = 0; i < im->nents; i++) /* a later entry of a name replaces it */
		if (strtab_put(&im->last, (int)im->ents[i].kind, im->ents[i].name, i) < 0)
			return -ENOMEM;
	for (size_t i = 0; i < im->nents; i++) {
		const struct entry *e = &im->ents[i];

		if (e->kind == ENT_TYPE)
			put_type(im, e);
		else if (e->kind == ENT_CGROUP)
			put_cgroup(im, e);
		else if (put_rule(im, e) < 0)
			return -ENOMEM;
	}
	return 0;
}

static void import_free(struct import *im)
{
	for (size_t i = 0; i < im->nfiles; i++)
		free(im->files[i]);
	for (size_t i = 0; i < im->nents; i++) {
		free(im->ents[i].name);
		free(im->ents[i].text);
	}
	for (size_t i = 0; i < im->nsections; i++)
		free(im->sections[i]);
	if (im->topfd >= 0)
		close(im->topfd);
	free(im->files);
	free(im->ents);
	free(im->sections);
	free(im->last.s);
	free(im->sectab.s);
	free(im);
}

int ananicy_import(const char *dir, bool allow_spoofable, FILE *out, FILE *err,
		   struct ananicy_result *ret)
{
	struct import *im = calloc(1, sizeof(*im));
	int r;

	if (!im)
		return -ENOMEM;
	*im = (struct import){ .dir = dir, .allow_spoofable = allow_spoofable, .out = out,
			       .err = err };
	/* dir itself is root's to name: a link there is followed, as it would be by cd. */
	im->topfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	r = im->topfd < 0 ? -errno : read_tree(im);
	if (im->topfd < 0)
		say(im, "", strerror(-r));
	if (r == 0)
		r = write_all(im);
	if (r == -ENOMEM)
		fprintf(err, "rqctl: import-ananicy: out of memory\n");
	if (r == 0)
		*ret = im->res;
	import_free(im);
	return r;
}
