/*
 * Fuzz target: the ctl message decoder. The input is a stream of bytes as a client
 * sends them; every whole message is decoded in turn, as the server does, and its
 * payload searched for the keys the daemon and rqctl read.
 */
#include <errno.h>

#include "ctl.h"
#include "fuzz.h"
#include "latency.h"

static const char *const keys[] = { "pid", "tid", "self", "cgroup", "value",
				    "errno", "message", "tasks", "source", "" };

/* ctl_kv into buffers of several sizes, each exact so that an overrun is seen. */
static void kv(const struct ctl_msg *m)
{
	static const size_t sizes[] = { 1, 8, 256 };

	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			char *v = malloc(sizes[s]);
			int r, value;
			const char *why;

			if (!v)
				abort();
			r = ctl_kv(m->payload, m->hdr.len, keys[k], v, sizes[s]);
			FUZZ_CHECK(r == 0 || r == -ENOENT || r == -E2BIG || r == -EINVAL);
			if (r == 0) {
				/* The whole value: no NUL cut it short. */
				FUZZ_CHECK(strlen(v) < sizes[s]);
				FUZZ_CHECK(!strchr(v, '\n'));
				if (strcmp(keys[k], "value") == 0 && lat_parse(v, &value, &why) == 0)
					FUZZ_CHECK(value >= LAT_MIN && value <= LAT_MAX);
			}
			free(v);
		}
	}
}

/* One message of n bytes at buf: its prefixes are incomplete, and it encodes back. */
static void check_whole(const uint8_t *buf, size_t n, const struct ctl_msg *m)
{
	const size_t cuts[] = { 0, sizeof(m->hdr) - 1, sizeof(m->hdr), n - 1 };
	struct ctl_msg tmp;
	uint8_t *out;

	FUZZ_CHECK(n == sizeof(m->hdr) + m->hdr.len && m->hdr.len <= CTL_MAX_PAYLOAD);
	FUZZ_CHECK(m->payload == (const char *)buf + sizeof(m->hdr));
	for (size_t i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++)
		if (cuts[i] < n)
			FUZZ_CHECK(ctl_decode(buf, cuts[i], &tmp) == 0);
	out = malloc(n);
	if (!out)
		abort();
	FUZZ_CHECK(ctl_encode(out, m->hdr.type, m->hdr.seq, m->payload, m->hdr.len) == n);
	FUZZ_CHECK(memcmp(out, buf, n) == 0);
	free(out);
	FUZZ_CHECK(strcmp(ctl_type_name(m->hdr.type), "unknown") != 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	while (off < size) {
		struct ctl_msg m;
		ssize_t n = ctl_decode(data + off, size - off, &m);

		FUZZ_CHECK(n >= 0 || n == -EPROTO);
		if (n <= 0)
			break;
		FUZZ_CHECK((size_t)n <= size - off);
		check_whole(data + off, (size_t)n, &m);
		kv(&m);
		off += (size_t)n;
	}
	return 0;
}
