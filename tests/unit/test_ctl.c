/* The ctl protocol's encoder and decoder: round trips and every malformed header. */
#include <errno.h>

#include "ctl_proto.h"
#include "rqbalance.h"
#include "kit.h"

static uint8_t buf[sizeof(struct ctl_hdr) + CTL_MAX_PAYLOAD + 16];

KIT_TEST(round_trip)
{
	struct ctl_msg m;
	size_t n = ctl_proto_encode(buf, CTL_OK, 7, "sampler proc\n", 13);

	assert_int_equal(n, sizeof(struct ctl_hdr) + 13);
	assert_int_equal(ctl_proto_decode(buf, n, &m), (ssize_t)n);
	assert_int_equal(m.hdr.type, CTL_OK);
	assert_int_equal(m.hdr.seq, 7);
	assert_int_equal(m.hdr.len, 13);
	assert_memory_equal(m.payload, "sampler proc\n", 13);
	/* Two messages back to back: the first is taken, its size says where the next is. */
	ctl_proto_encode(buf + n, CTL_STATUS, 8, NULL, 0);
	assert_int_equal(ctl_proto_decode(buf, n + sizeof(struct ctl_hdr), &m), (ssize_t)n);
	assert_int_equal(ctl_proto_decode(buf + n, sizeof(struct ctl_hdr), &m),
			 (ssize_t)sizeof(struct ctl_hdr));
	assert_int_equal(m.hdr.type, CTL_STATUS);
}

KIT_TEST(partial_waits)
{
	struct ctl_msg m = { .hdr.seq = 99 };
	size_t n = ctl_proto_encode(buf, CTL_ERR, 1, "errno 1\n", 8);

	for (size_t k = 0; k < n; k++)
		assert_int_equal(ctl_proto_decode(buf, k, &m), 0);
	assert_int_equal(m.hdr.seq, 99); /* untouched */
}

KIT_TEST(bad_headers)
{
	struct ctl_hdr h = { CTL_MAGIC, CTL_VERSION, CTL_STATUS, 0, 1 };
	struct ctl_msg m = { .hdr.seq = 99 };
	struct ctl_hdr bad[] = { h, h, h, h, h, h };

	bad[0].magic ^= 1;
	bad[1].version = CTL_VERSION + 1;
	bad[2].version = 0;
	bad[3].type = 77;
	bad[4].type = 0;
	bad[5].len = CTL_MAX_PAYLOAD + 1;
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		memcpy(buf, &bad[i], sizeof(bad[i]));
		assert_int_equal(ctl_proto_decode(buf, sizeof(bad[i]), &m), -EPROTO);
	}
	assert_int_equal(m.hdr.seq, 99);
	/* The largest payload allowed is accepted once it is all there. */
	h.type = CTL_OK;
	h.len = CTL_MAX_PAYLOAD;
	memcpy(buf, &h, sizeof(h));
	assert_int_equal(ctl_proto_decode(buf, sizeof(h) + CTL_MAX_PAYLOAD - 1, &m), 0);
	assert_int_equal(ctl_proto_decode(buf, sizeof(h) + CTL_MAX_PAYLOAD, &m),
			 (ssize_t)(sizeof(h) + CTL_MAX_PAYLOAD));
}

KIT_TEST(requests_and_names)
{
	assert_true(ctl_proto_is_request(CTL_STATUS));
	assert_true(ctl_proto_is_request(CTL_RELOAD));
	assert_true(ctl_proto_is_request(CTL_LATENCY));
	assert_true(ctl_proto_is_request(CTL_SYNC));
	assert_true(ctl_proto_is_request(CTL_EXPLAIN));
	assert_false(ctl_proto_is_request(CTL_OK));
	assert_false(ctl_proto_is_request(CTL_ERR));
	assert_false(ctl_proto_is_request(77));
	assert_string_equal(ctl_proto_type_name(CTL_RELOAD), "reload");
	assert_string_equal(ctl_proto_type_name(CTL_LATENCY), "latency");
	assert_string_equal(ctl_proto_type_name(CTL_SYNC), "sync");
	assert_string_equal(ctl_proto_type_name(CTL_EXPLAIN), "explain");
	assert_string_equal(ctl_proto_type_name(77), "unknown");
}
