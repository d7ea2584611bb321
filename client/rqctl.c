/*
 * rqctl: asks rqbalanced over its ctl socket and prints the answer, as text or JSON.
 * It only formats: every decision, and every permission check, is the daemon's.
 */
#include <errno.h>
#include <getopt.h>
#include <locale.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ananicy.h"
#include "ctl_proto.h"
#include "gamemode.h"
#include "policy/rules.h"
#include "rqbalance.h"
#include "term.h"

#define TIMEOUT_MS 10000

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: rqctl [--socket PATH] [--json] COMMAND\n"
		"Talk to rqbalanced.\n"
		"\n"
		"Commands:\n"
		"  status                 the sampler, per-LLC load, tasks managed, moves, errors\n"
		"  reload                 re-read the config file; prints why if it is refused\n"
		"  set -l N TARGET        give TARGET latency-nice N (-20 most latency-sensitive,\n"
		"                         19 least); without CAP_SYS_NICE only upwards\n"
		"  get TARGET             the value TARGET has from rqbalance, and its knobs\n"
		"  explain TARGET         where TARGET's value came from (or why it has none),\n"
		"                         and each knob: applied, left to someone who changed\n"
		"                         it since, or without effect and why\n"
		"  reset TARGET           give TARGET back what it had\n"
		"  list                   every task and cgroup with a value\n"
		"  run -l N -- CMD [ARG]  run CMD with latency-nice N (it and what it starts)\n"
		"  latency [--json]       run-queue wait histograms per latency-nice class\n"
		"                         and managed cgroup (\"none\": unmanaged tasks)\n"
		"  sync                   wait until the daemon has handled every fork and exec\n"
		"                         so far and ended a tick begun after the request\n"
		"  import-ananicy [--allow-spoofable] DIR\n"
		"                         print an ananicy(-cpp) rules tree as [rule NAME]\n"
		"                         sections for rules.d (needs no daemon); negative\n"
		"                         values are written commented out unless\n"
		"                         --allow-spoofable; FILE:LINE of each bad line on stderr\n"
		"  gamemode-agent         carry GameMode's requests (gamemoderun, libgamemode)\n"
		"                         from the session bus to the daemon (a user service)\n"
		"\n"
		"TARGET is one of:\n"
		"  -p, --pid PID          a process: all its threads, now and later\n"
		"  -t, --tid TID          one thread\n"
		"  -g, --cgroup PATH      a cgroup, by its path in the cpu hierarchy\n"
		"\n"
		"  -s, --socket PATH  the ctl socket (default " RQB_RUNDIR "/ctl.sock)\n"
		"  -j, --json         print the answer as JSON\n"
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n"
		"\n"
		"Exit status: 0 done, 1 refused or failed (import-ananicy: a line skipped, or\n"
		"more live rules than the daemon takes), 2 bad usage. See rqctl(1).\n");
}

static int connect_to(const char *path)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(a.sun_path)) {
		fprintf(stderr, "rqctl: %s: path too long\n", path);
		return -1;
	}
	strcpy(a.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		fprintf(stderr, "rqctl: cannot reach rqbalanced at %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* Sends one request and reads its reply into buf; returns the payload length or -1. */
static ssize_t ask(int fd, uint16_t type, const char *payload, struct ctl_msg *m, char *buf,
		   size_t len)
{
	uint8_t out[sizeof(struct ctl_hdr) + 1024];
	size_t have = 0, plen = strlen(payload);
	ssize_t n;

	if (plen > 1024) {
		fprintf(stderr, "rqctl: request too long\n");
		return -1;
	}
	n = (ssize_t)ctl_proto_encode(out, type, 1, payload, (uint32_t)plen);
	if (send(fd, out, (size_t)n, MSG_NOSIGNAL) != n) {
		fprintf(stderr, "rqctl: send: %s\n", strerror(errno));
		return -1;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		n = ctl_proto_decode(buf, have, m);
		if (n > 0)
			return (ssize_t)m->hdr.len;
		if (n < 0 || have == len) {
			fprintf(stderr, "rqctl: malformed reply from rqbalanced\n");
			return -1;
		}
		if (poll(&p, 1, TIMEOUT_MS) <= 0) {
			fprintf(stderr, "rqctl: no reply from rqbalanced\n");
			return -1;
		}
		n = recv(fd, buf + have, len - have, 0);
		if (n <= 0) {
			fprintf(stderr, "rqctl: rqbalanced closed the connection\n");
			return -1;
		}
		have += (size_t)n;
	}
}

/*
 * A JSON string of the real bytes: '"', '\\', controls (C0, DEL, C1) as \uXXXX;
 * well-formed UTF-8 as it is; each byte that is not UTF-8 as \udcHH (a lone
 * surrogate, as Python's surrogateescape reads it back to the byte).
 */
static void json_string(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;

	putchar('"');
	for (size_t i = 0; i < n;) {
		size_t len = p[i] >= 0x80 ? term_utf8_len(p + i, n - i) : 1;

		if (p[i] == '"' || p[i] == '\\')
			printf("\\%c", p[i]);
		else if (p[i] < 0x20 || p[i] == 0x7f)
			printf("\\u%04x", p[i]);
		else if (!len)
			printf("\\udc%02x", p[i]);
		else if (term_is_c1(p + i, len))
			printf("\\u%04x", p[i + 1]);
		else
			fwrite(p + i, 1, len, stdout);
		i += len ? len : 1;
	}
	putchar('"');
}

static bool all_digits(const char *s, size_t n)
{
	if (n > 1 && s[0] == '-') {
		s++;
		n--;
	}
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

static void json_value(const char *v, size_t n)
{
	if (all_digits(v, n))
		printf("%.*s", (int)n, v);
	else
		json_string(v, n);
}

static int hex_digit(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/*
 * A "NAME N k v k v" line's words (an "llc" or a "kind" line of the status) as one JSON
 * object; name is the line's first word, w the words after it.
 */
static void json_group(const char *name, size_t nn, const char *w, const char *eol)
{
	const char *k = name;
	size_t kn = nn;
	bool key = false;

	printf("{");
	json_string(name, nn);
	printf(": ");
	while (w < eol) {
		const char *e = memchr(w, ' ', (size_t)(eol - w));

		e = e ? e : eol;
		if (key) {
			printf(", ");
			json_string(w, (size_t)(e - w));
			printf(": ");
			k = w;
			kn = (size_t)(e - w);
		} else if (kn == 4 && !strncmp(k, "cpus", 4)) {
			json_string(w, (size_t)(e - w)); /* a CPU list */
		} else {
			json_value(w, (size_t)(e - w));
		}
		key = !key;
		w = e + 1;
	}
	printf("}");
}

/* \xHH (a byte the daemon escaped) undone, from s (n bytes) into out; its length. */
static size_t unescape(const char *s, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		int hi = i + 3 < n && s[i] == '\\' && s[i + 1] == 'x' ? hex_digit(s[i + 2]) : -1;
		int lo = hi >= 0 ? hex_digit(s[i + 3]) : -1;

		if (lo >= 0 && (hi || lo)) {
			out[o++] = (char)(hi << 4 | lo);
			i += 3;
		} else {
			out[o++] = s[i];
		}
	}
	out[o] = '\0';
	return o;
}

/* A "shaping ID TEXT" line of the status: {"id": ID, "text": TEXT}, TEXT's real bytes. */
static void json_shaping(const char *w, const char *eol)
{
	static char text[CTL_MAX_PAYLOAD + 1];
	const char *sp = memchr(w, ' ', (size_t)(eol - w));
	size_t n;

	sp = sp ? sp : eol;
	printf("{\"id\": ");
	json_string(w, (size_t)(sp - w));
	n = sp < eol ? unescape(sp + 1, (size_t)(eol - sp - 1), text) : 0;
	printf(", \"text\": ");
	json_string(text, n);
	printf("}");
}

/*
 * "key value" lines as one JSON object; lines whose key repeats become an array of
 * objects: "llc" and "kind" lines ("llcs" and "kinds", from their "k v k v" words) and
 * "shaping" lines ("shaping"; always there in a status, empty if none).
 */
static void print_json(const char *p, size_t len, bool status)
{
	const char *end = p + len, *in = NULL; /* the array open, by its key */
	bool first = true, shaping = false;

	printf("{");
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *sp;
		const char *arr = NULL;
		size_t n;

		eol = eol ? eol : end;
		sp = memchr(p, ' ', (size_t)(eol - p));
		sp = sp ? sp : eol;
		n = (size_t)(sp - p);
		if (n == 3 && !strncmp(p, "llc", 3))
			arr = "llcs";
		else if (n == 4 && !strncmp(p, "kind", 4))
			arr = "kinds";
		else if (n == 7 && !strncmp(p, "shaping", 7))
			arr = "shaping";
		if (in && in != arr)
			printf("]");
		if (arr && in == arr) {
			printf(", ");
		} else if (arr) {
			printf("%s\"%s\": [", first ? "" : ", ", arr);
		} else if (n) {
			printf("%s", first ? "" : ", ");
			json_string(p, n);
			printf(": ");
			json_value(sp < eol ? sp + 1 : eol, sp < eol ? (size_t)(eol - sp - 1) : 0);
		}
		if (arr && arr[0] == 's')
			shaping = (json_shaping(sp + 1, eol), true);
		else if (arr)
			json_group(p, n, sp + 1, eol);
		in = arr;
		first = first && !n;
		p = eol + 1;
	}
	if (in)
		printf("]");
	if (status && !shaping)
		printf("%s\"shaping\": []", first ? "" : ", ");
	printf("}\n");
}

/* Lines, each made safe: they may hold names (a cgroup, a unit, a path in a reason). */
static void put_lines(FILE *out, const char *p, size_t len)
{
	const char *end = p + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		eol = eol ? eol : end;
		term_put(out, p, (size_t)(eol - p));
		fputc('\n', out);
		p = eol + 1;
	}
}

/* A status: each line made safe, a "shaping" line's \xHH undone first. */
static void print_text(const char *p, size_t len)
{
	static char text[CTL_MAX_PAYLOAD + 1];
	const char *end = p + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));

		eol = eol ? eol : end;
		if (eol - p > 8 && !strncmp(p, "shaping ", 8))
			term_put(stdout, text, unescape(p, (size_t)(eol - p), text));
		else
			term_put(stdout, p, (size_t)(eol - p));
		fputc('\n', stdout);
		p = eol + 1;
	}
}

/* explain's "key text" lines, the keys in a column ("knob_nice" as "nice"). */
static void print_explain(const char *p, size_t len)
{
	const char *end = p + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *sp;
		int kn;

		eol = eol ? eol : end;
		sp = memchr(p, ' ', (size_t)(eol - p));
		sp = sp ? sp : eol;
		if (sp - p > 5 && !strncmp(p, "knob_", 5))
			p += 5;
		kn = (int)(sp - p);
		printf("%-15.*s ", kn, p);
		term_put(stdout, sp < eol ? sp + 1 : eol, sp < eol ? (size_t)(eol - sp - 1) : 0);
		putchar('\n');
		p = eol + 1;
	}
}

/* CTL_ERR payload: "errno N" and "message ..." lines; print the message. */
static void print_error(const char *cmd, const char *p, size_t len, bool json)
{
	const char *m = memmem(p, len, "message ", 8);

	if (json) {
		print_json(p, len, false);
		return;
	}
	fprintf(stderr, "rqctl: %s: ", cmd);
	if (m)
		put_lines(stderr, m + 8, len - (size_t)(m + 8 - p));
	else
		put_lines(stderr, p, len);
	if (!len)
		fputc('\n', stderr);
}

struct req {
	const char *cmd;
	uint16_t type;
	char payload[1024];
	char **run_argv;     /* run: the command to exec once the value is set */
	bool json;           /* latency --json */
};

static int add_kv(struct req *q, const char *key, const char *value)
{
	size_t off = strlen(q->payload);

	if (strchr(value, '\n') ||
	    snprintf(q->payload + off, sizeof(q->payload) - off, "%s %s\n", key, value) >=
		    (int)(sizeof(q->payload) - off)) {
		fprintf(stderr, "rqctl: %s: bad argument\n", key);
		return -1;
	}
	return 0;
}

/* The options of set, get, reset and run: a value and one target. */
static int parse_target_args(int argc, char **argv, struct req *q, bool need_value,
			     bool need_target)
{
	static const struct option lo[] = {
		{ "latency", required_argument, NULL, 'l' }, { "pid", required_argument, NULL, 'p' },
		{ "tid", required_argument, NULL, 't' },     { "cgroup", required_argument, NULL, 'g' },
		{ NULL, 0, NULL, 0 },
	};
	int ch, targets = 0;
	bool value = false;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "+l:p:t:g:", lo, NULL)) != -1) {
		const char *key = ch == 'l' ? "value" : ch == 'p' ? "pid" : ch == 't' ? "tid" :
			ch == 'g' ? "cgroup" : NULL;

		if (!key)
			return -1;
		if (ch == 'l')
			value = true;
		else
			targets++;
		if (add_kv(q, key, optarg) < 0)
			return -1;
	}
	if (need_value != value) {
		fprintf(stderr, "rqctl: %s: %s\n", q->cmd,
			value ? "takes no -l" : "needs -l N (-20 to 19)");
		return -1;
	}
	if (need_target ? targets != 1 : targets != 0) {
		fprintf(stderr, "rqctl: %s: %s\n", q->cmd,
			need_target ? "needs one of -p PID, -t TID, -g PATH" : "takes no target");
		return -1;
	}
	if (!strcmp(q->cmd, "run")) {
		if (optind >= argc) {
			fprintf(stderr, "rqctl: run: needs a command after --\n");
			return -1;
		}
		q->run_argv = argv + optind;
		return add_kv(q, "self", "1");
	}
	if (optind != argc) {
		fprintf(stderr, "rqctl: %s: unexpected '%s'\n", q->cmd, argv[optind]);
		return -1;
	}
	return 0;
}

static int parse_command(int argc, char **argv, struct req *q)
{
	static const struct {
		const char *name;
		uint16_t type;
		bool value, target;
	} cmds[] = {
		{ "status", CTL_STATUS, false, false }, { "reload", CTL_RELOAD, false, false },
		{ "list", CTL_LIST, false, false },     { "set", CTL_SET, true, true },
		{ "get", CTL_GET, false, true },        { "reset", CTL_RESET, false, true },
		{ "run", CTL_SET, true, false },        { "latency", CTL_LATENCY, false, false },
		{ "sync", CTL_SYNC, false, false },     { "explain", CTL_EXPLAIN, false, true },
	};

	if (!strcmp(argv[0], "latency") && argc == 2 &&
	    (!strcmp(argv[1], "--json") || !strcmp(argv[1], "-j"))) {
		q->json = true;
		argc = 1;
	}
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++) {
		if (strcmp(argv[0], cmds[i].name))
			continue;
		q->cmd = cmds[i].name;
		q->type = cmds[i].type;
		return parse_target_args(argc, argv, q, cmds[i].value, cmds[i].target);
	}
	fprintf(stderr, "rqctl: unknown command '%s'\n", argv[0]);
	return -1;
}

/* The next field of a list line, its \xHH (a byte the daemon escaped) undone in place. */
static const char *field(char **p)
{
	char *f = strsep(p, "\t"), *in, *out;

	if (!f)
		return "";
	for (in = out = f; *in; in++) {
		int hi, lo;

		if (in[0] == '\\' && in[1] == 'x' && (hi = hex_digit(in[2])) >= 0 &&
		    (lo = hex_digit(in[3])) >= 0 && (hi || lo)) {
			*out++ = (char)(hi << 4 | lo);
			in += 3;
		} else {
			*out++ = *in;
		}
	}
	*out = '\0';
	return f;
}

/* list: tab-separated lines, as a table or a JSON array. */
static void print_list(char *p, size_t len, bool json)
{
	static char b1[4 * CTL_MAX_PAYLOAD + 1], b2[sizeof(b1)], b3[sizeof(b1)];
	bool first = true;

	p[len] = '\0';
	if (json)
		printf("[");
	else
		printf("%-8s %-8s %5s %-8s %-7s %10s  %-20s %-16s %s\n", "TID", "PID", "VALUE",
		       "SCOPE", "POLICY", "SLICE_US", "CGROUP", "COMM", "SOURCE");
	for (char *line = strtok(p, "\n"); line; line = strtok(NULL, "\n")) {
		const char *kind = field(&line);

		if (!strcmp(kind, "task")) {
			const char *tid = field(&line), *pid = field(&line), *v = field(&line),
				   *src = field(&line), *scope = field(&line), *pol = field(&line),
				   *slice = field(&line), *cg = field(&line), *comm = field(&line);

			if (!json) {
				printf("%-8s %-8s %5s %-8s %-7s %10llu  %-20s %-16s %s\n", tid, pid, v,
				       scope, pol, strtoull(slice, NULL, 10) / 1000,
				       term_safe(cg, b1, sizeof(b1)),
				       term_safe(comm, b2, sizeof(b2)),
				       term_safe(src, b3, sizeof(b3)));
				continue;
			}
			printf("%s{\"kind\": \"task\", \"tid\": %s, \"pid\": %s, \"value\": %s, "
			       "\"source\": ", first ? "" : ", ", tid, pid, v);
			json_string(src, strlen(src));
			printf(", \"scope\": \"%s\", \"policy\": \"%s\", \"slice_ns\": %s, \"cgroup\": ",
			       scope, pol, slice);
			json_string(cg, strlen(cg));
			printf(", \"comm\": ");
			json_string(comm, strlen(comm));
			printf("}");
		} else if (!strcmp(kind, "cgroup")) {
			const char *path = field(&line), *v = field(&line), *src = field(&line),
				   *w = field(&line), *idle = field(&line);

			if (!json) {
				printf("%-8s %-8s %5s %-8s %-7s %10s  %-20s %-16s %s (weight %s%s)\n", "-",
				       "-", v, "cgroup", "-", "-", term_safe(path, b1, sizeof(b1)), "-",
				       term_safe(src, b2, sizeof(b2)), w,
				       !strcmp(idle, "1") ? ", idle" : "");
				continue;
			}
			printf("%s{\"kind\": \"cgroup\", \"path\": ", first ? "" : ", ");
			json_string(path, strlen(path));
			printf(", \"value\": %s, \"source\": ", v);
			json_string(src, strlen(src));
			printf(", \"weight\": %s, \"idle\": %s}", w, idle);
		} else if (!strcmp(kind, "unit")) {
			const char *path = field(&line), *unit = field(&line), *v = field(&line),
				   *w = field(&line), *idle = field(&line), *why = field(&line);
			bool set = !strcmp(why, "-");

			if (!json) {
				printf("%-8s %-8s %5s %-8s %-7s %10s  %-20s %-16s %s %s%s%s%s\n", "-", "-",
				       strcmp(v, "127") ? v : "-", "unit", "-", "-",
				       term_safe(path, b1, sizeof(b1)), "-",
				       term_safe(unit, b2, sizeof(b2)), set ? "(weight " : "not set: ",
				       set ? w : term_safe(why, b3, sizeof(b3)),
				       set && !strcmp(idle, "1") ? ", idle" : "", set ? ")" : "");
				continue;
			}
			printf("%s{\"kind\": \"unit\", \"cgroup\": ", first ? "" : ", ");
			json_string(path, strlen(path));
			printf(", \"unit\": ");
			json_string(unit, strlen(unit));
			printf(", \"value\": %s, \"weight\": %s, \"idle\": %s, \"why\": ",
			       strcmp(v, "127") ? v : "null", set ? w : "null", idle);
			json_string(set ? "" : why, set ? 0 : strlen(why));
			printf("}");
		} else if (!strcmp(kind, "truncated")) {
			fprintf(stderr, "rqctl: list: cut short; %s entries in all\n", field(&line));
			continue;
		} else if (!strcmp(kind, "judged")) {
			fprintf(stderr, "rqctl: list: cut short; the daemon judged only the first %s "
				"managed tasks against what your /proc shows you\n", field(&line));
			continue;
		}
		first = false;
	}
	if (json)
		printf("]\n");
}

/* One class of a latency reply: its "class" line's numbers and its buckets. */
struct lclass {
	char name[300];
	unsigned long long total, sum_us, max_us;
	size_t nb;
	unsigned long long lo[32], hi[32], count[32]; /* hi 0: open-ended */
};

/* Parses "class" and "hist" lines into classes; returns how many, at most max. */
static size_t parse_latency(char *p, struct lclass *cls, size_t max)
{
	size_t n = 0;

	for (char *line = strtok(p, "\n"); line; line = strtok(NULL, "\n")) {
		char name[300], hi[32];
		struct lclass *c;
		unsigned long long lo, count;

		if (n < max && sscanf(line, "class %299s total %llu sum_us %llu max_us %llu", name,
				      &cls[n].total, &cls[n].sum_us, &cls[n].max_us) == 4) {
			snprintf(cls[n].name, sizeof(cls[n].name), "%s", name);
			cls[n++].nb = 0;
			continue;
		}
		if (!n || sscanf(line, "hist %299s %llu %31s %llu", name, &lo, hi, &count) != 4)
			continue;
		c = &cls[n - 1];
		if (strcmp(c->name, name) || c->nb >= ARRAY_SIZE(c->lo))
			continue;
		c->lo[c->nb] = lo;
		c->hi[c->nb] = strcmp(hi, "inf") ? strtoull(hi, NULL, 10) : 0;
		c->count[c->nb++] = count;
	}
	return n;
}

static void print_bar(unsigned long long count, unsigned long long max, int width)
{
	int stars = max ? (int)(count * (unsigned long long)width / max) : 0;

	putchar('|');
	for (int i = 0; i < width; i++)
		putchar(i < stars ? '*' : ' ');
	putchar('|');
}

/* runqlat's look: per class a block of "usecs : count |bars|" lines. */
static void print_latency_text(const struct lclass *cls, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct lclass *c = &cls[i];
		unsigned long long max = 0;

		for (size_t b = 0; b < c->nb; b++)
			max = c->count[b] > max ? c->count[b] : max;
		printf("%sclass ", i ? "\n" : "");
		term_put(stdout, c->name, strlen(c->name));
		printf("%s: %llu waits, mean %llu us, max %llu us\n",
		       strcmp(c->name, "none") ? "" : " (unmanaged)", c->total,
		       c->total ? c->sum_us / c->total : 0, c->max_us);
		printf("%24s : %-10s %s\n", "usecs", "count", "distribution");
		for (size_t b = 0; b < c->nb; b++) {
			char range[48];

			if (c->hi[b])
				snprintf(range, sizeof(range), "%llu -> %llu", c->lo[b], c->hi[b] - 1);
			else
				snprintf(range, sizeof(range), "%llu -> ...", c->lo[b]);
			printf("%24s : %-10llu ", range, c->count[b]);
			print_bar(c->count[b], max, 40);
			putchar('\n');
		}
	}
}

static void print_latency_json(const struct lclass *cls, size_t n)
{
	printf("{");
	for (size_t i = 0; i < n; i++) {
		const struct lclass *c = &cls[i];

		printf("%s", i ? ", " : "");
		json_string(c->name, strlen(c->name));
		printf(": {\"total\": %llu, \"sum_us\": %llu, \"max_us\": %llu, \"buckets\": [",
		       c->total, c->sum_us, c->max_us);
		for (size_t b = 0; b < c->nb; b++) {
			printf("%s{\"lo_us\": %llu, \"hi_us\": ", b ? ", " : "", c->lo[b]);
			if (c->hi[b])
				printf("%llu", c->hi[b]);
			else
				printf("null");
			printf(", \"count\": %llu}", c->count[b]);
		}
		printf("]}");
	}
	printf("}\n");
}

static int print_latency(char *p, size_t len, bool json)
{
	static struct lclass cls[64];
	size_t n;

	p[len] = '\0';
	n = parse_latency(p, cls, ARRAY_SIZE(cls));
	if (json)
		print_latency_json(cls, n);
	else
		print_latency_text(cls, n);
	return 0;
}

static void import_usage(void)
{
	printf("Usage: rqctl import-ananicy [--allow-spoofable] DIR\n"
	       "Print the ananicy(-cpp) rules under DIR (*.rules, *.types, *.cgroups) as\n"
	       "[rule NAME] sections for a rules.d file. Needs no daemon.\n\n"
	       "  --allow-spoofable  write negative values live, with spoofable = yes\n"
	       "  -h, --help         show this help\n\n"
	       "Each rule's name becomes comm; its value is its latency_nice, else its\n"
	       "type's, else its nice, else its type's, else 19 for sched idle, 10 for\n"
	       "batch. What is not carried over is kept as comments. Bad lines go to\n"
	       "stderr as FILE:LINE. Exit status: 0 done, 1 a line or file skipped or\n"
	       "more live rules than the daemon takes, 2 bad usage. See rqctl(1).\n");
}

/* import-ananicy [--allow-spoofable] DIR: client side only, no socket. */
static int import_ananicy(int argc, char **argv)
{
	struct ananicy_result res;
	bool spoofable = false, opts = true;
	const char *dir = NULL;
	int r;

	for (int i = 1; i < argc; i++) {
		if (opts && (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))) {
			import_usage();
			return 0;
		} else if (opts && !strcmp(argv[i], "--allow-spoofable")) {
			spoofable = true;
		} else if (opts && !strcmp(argv[i], "--")) {
			opts = false;
		} else if ((opts && argv[i][0] == '-') || dir) {
			fprintf(stderr, "rqctl: import-ananicy: unexpected '%s'\n", argv[i]);
			return 2;
		} else {
			dir = argv[i];
		}
	}
	if (!dir) {
		fprintf(stderr, "rqctl: import-ananicy: a directory is needed\n");
		return 2;
	}
	r = ananicy_import(dir, spoofable, stdout, stderr, &res);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "rqctl: import-ananicy: writing: %s\n", strerror(errno));
		return 1;
	}
	if (r < 0)
		return 1;
	if (res.skipped)
		fprintf(stderr, "rqctl: import-ananicy: %u skipped (%s)\n", res.skipped,
			"lines, or files that could not be read");
	if (res.live > RULES_MAX)
		fprintf(stderr,
			"rqctl: import-ananicy: %u live rules, but rqbalanced takes at most %d\n",
			res.live, RULES_MAX);
	return res.skipped || res.live > RULES_MAX ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },         { "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = RQB_RUNDIR "/ctl.sock";
	static char buf[sizeof(struct ctl_hdr) + CTL_MAX_PAYLOAD + 1];
	struct req q = { 0 };
	struct ctl_msg m;
	bool json = false;
	ssize_t n;
	int ch, fd;

	setlocale(LC_CTYPE, "");
	term_init();
	while ((ch = getopt_long(argc, argv, "+s:jhV", lo, NULL)) != -1) {
		switch (ch) {
		case 's':
			path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("rqctl %s\n", RQB_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[optind], "import-ananicy")) {
		if (json) {
			fprintf(stderr, "rqctl: import-ananicy writes no JSON\n");
			return 2;
		}
		return import_ananicy(argc - optind, argv + optind);
	}
	if (!strcmp(argv[optind], "gamemode-agent")) {
		if (json) {
			fprintf(stderr, "rqctl: gamemode-agent writes no JSON\n");
			return 2;
		}
		return gm_agent_main(argc - optind, argv + optind);
	}
	if (parse_command(argc - optind, argv + optind, &q) < 0) {
		fprintf(stderr, "Try 'rqctl --help'.\n");
		return 2;
	}
	fd = connect_to(path);
	if (fd < 0)
		return 1;
	n = ask(fd, q.type, q.payload, &m, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return 1;
	if (m.hdr.type == CTL_ERR) {
		print_error(q.cmd, m.payload, (size_t)n, json || q.json);
		return 1;
	}
	if (q.run_argv) {
		execvp(q.run_argv[0], q.run_argv);
		fprintf(stderr, "rqctl: run: %s: %s\n", q.run_argv[0], strerror(errno));
		return errno == ENOENT ? 127 : 126; /* as the shell says it */
	}
	if (q.type == CTL_LIST)
		print_list((char *)m.payload, (size_t)n, json);
	else if (q.type == CTL_EXPLAIN && !json)
		print_explain(m.payload, (size_t)n);
	else if (q.type == CTL_LATENCY)
		print_latency((char *)m.payload, (size_t)n, json || q.json);
	else if (json)
		print_json(m.payload, (size_t)n, q.type == CTL_STATUS);
	else if (q.type == CTL_RELOAD)
		printf("reloaded\n");
	else
		print_text(m.payload, (size_t)n);
	return 0;
}
