/*
 * The ctl protocol's encoder and decoder: pure, shared by rqbalanced and rqctl, and
 * the fuzz target's subject. It never trusts a length it has not checked.
 */
#include <errno.h>
#include <string.h>

#include "ctl.h"

int ctl_is_request(uint16_t type)
{
	return type == CTL_STATUS || type == CTL_RELOAD;
}

static int known_type(uint16_t type)
{
	return ctl_is_request(type) || type == CTL_OK || type == CTL_ERR;
}

const char *ctl_type_name(uint16_t type)
{
	switch (type) {
	case CTL_STATUS:
		return "status";
	case CTL_RELOAD:
		return "reload";
	case CTL_OK:
		return "ok";
	case CTL_ERR:
		return "error";
	}
	return "unknown";
}

ssize_t ctl_decode(const void *buf, size_t len, struct ctl_msg *ret)
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

size_t ctl_encode(void *out, uint16_t type, uint32_t seq, const void *payload, uint32_t len)
{
	struct ctl_hdr h = { .magic = CTL_MAGIC, .version = CTL_VERSION, .type = type,
			     .len = len, .seq = seq };

	memcpy(out, &h, sizeof(h));
	if (len)
		memcpy((char *)out + sizeof(h), payload, len);
	return sizeof(h) + len;
}
