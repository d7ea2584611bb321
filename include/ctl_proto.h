/*
 * The ctl protocol between rqctl and rqbalanced, on a local stream socket.
 * Versioned and length-checked on both sides: a header, then len bytes of payload.
 * Payloads are text, one "key value" pair a line; the client only formats them.
 */
#ifndef RQB_CTL_PROTO_H
#define RQB_CTL_PROTO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define CTL_MAGIC 0x43425152u /* "RQBC" as bytes on a little-endian machine */
#define CTL_VERSION 1
#define CTL_MAX_PAYLOAD 65536 /* a bigger len is a protocol error */

enum ctl_type {
	CTL_STATUS = 1,  /* request: no payload; reply: status lines */
	CTL_RELOAD = 2,  /* request: no payload; reply: ok, or the reasons it failed */
	/*
	 * The latency requests name one target in their payload: "pid N" (a process:
	 * its threads now and later), "tid N" (one thread), "cgroup PATH", or "self 1"
	 * (the peer process itself, pinned by SO_PEERPIDFD where the kernel has it).
	 */
	CTL_SET = 3,     /* request: target and "value N"; reply: "tasks N" or "cgroup PATH" */
	CTL_GET = 4,     /* request: target; reply: "value", "source", "tasks", knobs */
	CTL_LIST = 5,    /* request: none; reply: one tab-separated line per task and cgroup */
	CTL_RESET = 6,   /* request: target; reply: "tasks N" given back */
	CTL_LATENCY = 7, /* request: none; reply: run-queue wait histograms (rqlat.h) */
	/*
	 * A barrier: the reply ("ticks N") comes once every proc connector event queued
	 * before the request has been handled and a whole tick that began after it has
	 * ended, so what the caller did before asking has been seen and acted on.
	 */
	CTL_SYNC = 8,
	/*
	 * request: target; reply: "key text" lines, each key once: the value and where it
	 * came from, or why there is none, what it maps to, each knob's state
	 * (latmgr_explain).
	 */
	CTL_EXPLAIN = 9,
	CTL_OK = 100,    /* reply: success, payload as the request defines */
	CTL_ERR = 101,   /* reply: failure, payload "errno N" then "message ..." lines */
};

struct ctl_hdr {
	uint32_t magic;
	uint16_t version;
	uint16_t type;
	uint32_t len;    /* payload bytes that follow */
	uint32_t seq;    /* a reply carries its request's */
};

struct ctl_msg {
	struct ctl_hdr hdr;
	const char *payload; /* into the decoded buffer; not NUL-terminated */
};

/*
 * Decodes one message from the start of buf. Returns the bytes it takes, 0 if buf
 * holds less than a whole message yet, or -EPROTO (bad magic, version, type or
 * length); *ret is set only on success.
 */
ssize_t ctl_proto_decode(const void *buf, size_t len, struct ctl_msg *ret);
/* Writes a header and payload into out (room for sizeof(hdr) + len); returns the size. */
size_t ctl_proto_encode(void *out, uint16_t type, uint32_t seq, const void *payload, uint32_t len);
/* A request type the daemon serves (replies are not requests). */
int ctl_proto_is_request(uint16_t type);
const char *ctl_proto_type_name(uint16_t type);
/*
 * Finds "key value" in a payload of len bytes and copies value (to the end of its
 * line) into ret. 0, -ENOENT, -E2BIG when it does not fit in size, or -EINVAL when
 * the value holds a NUL byte.
 */
int ctl_proto_kv(const char *payload, size_t len, const char *key, char *ret, size_t size);
/* The lines of a payload that give key: one given twice is refused, not guessed at. */
int ctl_proto_kv_count(const char *payload, size_t len, const char *key);
/* A pid as a payload gives it: decimal, 1 to INT32_MAX, nothing after. 0 or -EINVAL. */
int ctl_proto_pid(const char *s, pid_t *ret);

#endif
