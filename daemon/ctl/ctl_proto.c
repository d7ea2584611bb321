/*
 * The ctl protocol's encoder and decoder: pure, shared by rqbalanced and rqctl, and
 * the fuzz target's subject. It never trusts a length it has not checked.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_proto.h"

int ctl_proto_is_request(uint16_t type)
{
	return type == CTL_STATUS || type == CTL_RELOAD || type == CTL_SET || type == CTL_GET ||
	       type == CTL_LIST || type == CTL_RESET || type == CTL_LATENCY || type == CTL_SYNC ||
	       type == CTL_EXPLAIN;
}

static int known_type(uint16_t type)
{
	return ctl_proto_is_request(type) || type == CTL_OK || type == CTL_ERR;
}

const char *ctl_proto_type_name(uint16_t type)
{
	switch (type) {
	case CTL_STATUS:
		return "status";
	case CTL_RELOAD:
		return "reload";
	case CTL_SET:
		return "set";
	case CTL_GET:
		return "get";
	case CTL_LIST:
		return "list";
	case CTL_RESET:
		return "reset";
	case CTL_LATENCY:
		return "latency";
	case CTL_EXPLAIN:
		return "explain";
	case CTL_SYNC:
		return "sync";
	case CTL_OK:
		return "ok";
	case CTL_ERR:
		return "error";
	}
	return "unknown";
}

ssize_t ctl_proto_decode(const void *buf, size_t len, struct ctl_msg *ret)
{
	struct ctl_hdr h;

	if (len < sizeof(h))
		return 0;
	memcpy(&h, buf, sizeof(h));
	if (h.magic != CTL_MAGIC || h.version != CTL_VERSION || !known_type(h.type) ||
	    h.len > CTL_MAX_PAYLOAD)
		return -EPROTO;
	if (len - sizeof(h) < h.len)
		return 0;
	ret->hdr = h;
	ret->payload = (const char *)buf + sizeof(h);
	return (ssize_t)(sizeof(h) + h.len);
}

size_t ctl_proto_encode(void *out, uint16_t type, uint32_t seq, const void *payload, uint32_t len)
{
	struct ctl_hdr h = { .magic = CTL_MAGIC, .version = CTL_VERSION, .type = type,
			     .len = len, .seq = seq };

	memcpy(out, &h, sizeof(h));
	if (len)
		memcpy((char *)out + sizeof(h), payload, len);
	return sizeof(h) + len;
}

int ctl_proto_kv(const char *payload, size_t len, const char *key, char *ret, size_t size)
{
	size_t kl = strlen(key), off = 0;

	while (off < len) {
		const char *line = payload + off, *nl = memchr(line, '\n', len - off);
		size_t ll = nl ? (size_t)(nl - line) : len - off;

		off += ll + 1;
		if (ll <= kl || memcmp(line, key, kl) != 0 || line[kl] != ' ')
			continue;
		if (ll - kl - 1 >= size)
			return -E2BIG;
		/* A NUL would cut the value short where the rest of the line says more. */
		if (memchr(line + kl + 1, '\0', ll - kl - 1))
			return -EINVAL;
		memcpy(ret, line + kl + 1, ll - kl - 1);
		ret[ll - kl - 1] = '\0';
		return 0;
	}
	return -ENOENT;
}

int ctl_proto_kv_count(const char *payload, size_t len, const char *key)
{
	size_t kl = strlen(key), off = 0;
	int n = 0;

	while (off < len) {
		const char *line = payload + off, *nl = memchr(line, '\n', len - off);
		size_t ll = nl ? (size_t)(nl - line) : len - off;

		off += ll + 1;
		n += ll > kl && memcmp(line, key, kl) == 0 && line[kl] == ' ';
	}
	return n;
}

int ctl_proto_pid(const char *s, pid_t *ret)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v <= 0 || v > INT32_MAX)
		return -EINVAL;
	*ret = (pid_t)v;
	return 0;
}
