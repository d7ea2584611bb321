/* The ctl socket in the daemon: accepts rqctl connections and answers them. */
#ifndef RQB_CTL_H
#define RQB_CTL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <systemd/sd-event.h>

/*
 * How many connections are served at once, and how many of one user's, is the request
 * layer's to say (CTL_REQ_SLOTS, CTL_REQ_PER_UID, CTL_REQ_RESERVED in ctl_req.h): one
 * set of limits for the ctl socket and the D-Bus API. A connection's own bounds:
 */
#define CTL_MAX_REQUEST 4096  /* payload bytes a request may carry */
#define CTL_MAX_MSGS 16       /* requests on one connection */
#define CTL_CONN_TIMEOUT_USEC (2 * 1000000ULL) /* a connection's whole life */
#define CTL_SYNC_TICKS 16     /* ...and this many ticks more for each sync it waits on */
#define CTL_SYNC_LATE 16      /* ...and that again, this many times, while the daemon is late */

struct conn;
struct ctl_caller;
struct ctl_env;

/*
 * What the server asks of the daemon, passed in the ctl_env at ctl_init: ctl calls no
 * function of the daemon's own, so the two do not depend on each other. d is the
 * env's daemon.
 */
struct ctl_ops {
	/* Reloads the config: 0, or -errno with what was wrong in *ret_errors (to free). */
	int (*reload)(void *d, char **ret_errors);
	/*
	 * rqctl status's text for who (core/status.c), NUL-terminated in out: the doors
	 * send it as it is. What else shapes scheduling in it is a walk of /proc, which
	 * any user may ask for, so read again at most once a second (PEERS_MAX_AGE_NS).
	 */
	void (*status)(void *d, const struct ctl_caller *who, char *out, size_t len);
	/* Ticks done so far: a sync waits for one that begins after it. */
	uint64_t (*ticks)(void *d);
	/* A sync waits: bring the next tick to one interval from now (an idle heartbeat). */
	void (*wake)(void *d);
	/*
	 * The run-queue histograms' text, their cgroups brought up to date first
	 * (malloc'd), or NULL with errno, and why in ret_why when they are not there.
	 */
	char *(*histograms)(void *d, char *ret_why, size_t len);
};

struct ctl_server {
	int fd;                 /* listening socket, -1 if none */
	bool activated;         /* passed in by the service manager: not ours to unlink */
	char path[108];
	int dirfd;              /* path's directory (safedir), -1 if none: bind and unlink go there */
	char name[108];         /* the socket's name in it */
	sd_event_source *src;
	unsigned nconns;
	unsigned long refused;  /* connections closed at accept: no slot for them, or over
				 * their uid's share (ctl_req_lim_admit) */
	unsigned long bad;      /* messages refused as malformed */
	struct conn *conns;     /* open connections */
	struct ctl_env *env;    /* what the requests see of the daemon */
};

/*
 * Serves path: takes a socket from the service manager (sd_listen_fds) if one was
 * passed, else creates it (mode 0666: every user may ask for status; what a request
 * may do is checked against the peer's credentials). 0 or -errno.
 */
int ctl_init(struct ctl_server *s, sd_event *e, const char *path, struct ctl_env *env);
void ctl_fini(struct ctl_server *s);
/*
 * Serves fd, one end of a connected stream socket, as a connection accepted from a
 * peer with credentials cred (SO_PEERCRED) and ngroups supplementary groups
 * (SO_PEERGROUPS): what the daemon does with a connection it accepts, from the point
 * where it has read those. Its capabilities and what its /proc shows it are read
 * then, as at accept, under the latency manager's proc root. The accept handler calls
 * it; so does the ctl fuzz target, which drives every request handler without a
 * listening socket or a real peer of each kind. Takes fd (closed on failure). 0, or
 * -errno: refused as the daemon would refuse it (-EBUSY: no slot; -EUSERS: over a
 * user's share, ctl_req_lim_admit).
 */
int ctl_serve_fd(struct ctl_server *s, sd_event *e, int fd, const struct ucred *cred,
		 const gid_t *groups, int ngroups);
/* After each tick: answers the syncs that tick completed (CTL_SYNC). */
void ctl_after_tick(struct ctl_server *s);

#endif
