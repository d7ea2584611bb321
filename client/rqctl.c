/*
 * rqctl: asks rqbalanced over its ctl socket and prints the answer, as text or JSON.
 * It only formats: every decision, and every permission check, is the daemon's.
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "ctl.h"
#include "rqbalance.h"

#define TIMEOUT_MS 10000

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: rqctl [--socket PATH] [--json] COMMAND\n"
		"Talk to rqbalanced.\n"
		"\n"
		"Commands:\n"
		"  status   the sampler, per-LLC load, tasks managed, moves and errors\n"
		"  reload   re-read the config file; prints why if it is refused\n"
		"\n"
		"  -s, --socket PATH  the ctl socket (default " RQB_RUNDIR "/ctl.sock)\n"
		"  -j, --json         print the answer as JSON\n"
		"  -h, --help         show this help\n"
		"  -V, --version      show the version\n"
		"\n"
		"Exit status: 0 done, 1 refused or failed, 2 bad usage. See rqctl(1).\n");
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
static ssize_t ask(int fd, uint16_t type, struct ctl_msg *m, char *buf, size_t len)
{
	uint8_t out[sizeof(struct ctl_hdr)];
	size_t have = 0;
	ssize_t n;

	n = (ssize_t)ctl_encode(out, type, 1, NULL, 0);
	if (send(fd, out, (size_t)n, MSG_NOSIGNAL) != n) {
		fprintf(stderr, "rqctl: send: %s\n", strerror(errno));
		return -1;
	}
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		n = ctl_decode(buf, have, m);
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

static void json_string(const char *s, size_t n)
{
	putchar('"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static bool all_digits(const char *s, size_t n)
{
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

/*
 * "key value" lines as one JSON object; lines whose key repeats ("llc") become an
 * array of objects built from their "k v k v" words.
 */
static void print_json(const char *p, size_t len)
{
	const char *end = p + len;
	bool first = true, in_llc = false;

	printf("{");
	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p)), *sp;
		size_t n;

		eol = eol ? eol : end;
		sp = memchr(p, ' ', (size_t)(eol - p));
		sp = sp ? sp : eol;
		n = (size_t)(sp - p);
		if (n == 3 && !strncmp(p, "llc", 3)) {
			const char *w = sp + 1, *k = "llc";
			size_t kn = 3;
			bool key = false;

			printf("%s", in_llc ? ", " : first ? "\"llcs\": [" : ", \"llcs\": [");
			in_llc = true;
			printf("{\"llc\": ");
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
		} else if (n) {
			if (in_llc)
				printf("]");
			in_llc = false;
			printf("%s", first ? "" : ", ");
			json_string(p, n);
			printf(": ");
			json_value(sp < eol ? sp + 1 : eol, sp < eol ? (size_t)(eol - sp - 1) : 0);
		}
		first = false;
		p = eol + 1;
	}
	printf("%s}\n", in_llc ? "]" : "");
}

static void print_text(const char *p, size_t len)
{
	fwrite(p, 1, len, stdout);
	if (len && p[len - 1] != '\n')
		putchar('\n');
}

/* CTL_ERR payload: "errno N" and "message ..." lines; print the message. */
static void print_error(const char *cmd, const char *p, size_t len, bool json)
{
	const char *m = memmem(p, len, "message ", 8);

	if (json) {
		print_json(p, len);
		return;
	}
	fprintf(stderr, "rqctl: %s: ", cmd);
	if (m)
		fwrite(m + 8, 1, len - (size_t)(m + 8 - p), stderr);
	else
		fwrite(p, 1, len, stderr);
	if (!len || p[len - 1] != '\n')
		fputc('\n', stderr);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "socket", required_argument, NULL, 's' }, { "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },         { "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *path = RQB_RUNDIR "/ctl.sock", *cmd;
	static char buf[sizeof(struct ctl_hdr) + CTL_MAX_PAYLOAD];
	struct ctl_msg m;
	bool json = false;
	uint16_t type;
	ssize_t n;
	int ch, fd;

	while ((ch = getopt_long(argc, argv, "s:jhV", lo, NULL)) != -1) {
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
	if (optind + 1 != argc) {
		usage(stderr);
		return 2;
	}
	cmd = argv[optind];
	if (!strcmp(cmd, "status")) {
		type = CTL_STATUS;
	} else if (!strcmp(cmd, "reload")) {
		type = CTL_RELOAD;
	} else {
		fprintf(stderr, "rqctl: unknown command '%s'\n", cmd);
		usage(stderr);
		return 2;
	}
	fd = connect_to(path);
	if (fd < 0)
		return 1;
	n = ask(fd, type, &m, buf, sizeof(buf));
	close(fd);
	if (n < 0)
		return 1;
	if (m.hdr.type == CTL_ERR) {
		print_error(cmd, m.payload, (size_t)n, json);
		return 1;
	}
	if (json)
		print_json(m.payload, (size_t)n);
	else if (type == CTL_RELOAD)
		printf("reloaded\n");
	else
		print_text(m.payload, (size_t)n);
	return 0;
}
