/*
 * Latency management, its event source: BPF where it loads and [latency] events allows
 * it, else the proc connector, else none (/proc is walked each tick), chosen in one
 * place for the daemon and for --features. Only here is it known which one it is.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "latmgr/latmgr_int.h"
#include "rqbalance.h"
#include "util/log.h"

/*
 * Whom a source reports to: the manager's event handlers and, in a loop, its reader
 * (latmgr_events.c, given by latmgr_source_open's caller, so that this file calls
 * nothing above it). A probe's are none: it is closed before anything is read.
 */
struct events_sink {
	const struct evsrc_callbacks *cb;
	sd_event_io_handler_t ready;
};
static const struct evsrc_callbacks probe_callbacks;

static const char *const bpf_what =
	"bpf: sched_process_fork/exec/exit tracepoints into a ring buffer; exe rules match "
	"the device and inode the kernel reports, with no access to /proc/PID/exe";

/* What the choice of event source came to, in the words of the log, --features and status. */
struct events_pick {
	struct evsrc *ev;              /* the source opened, NULL for none */
	sd_event_source *src;          /* its fd in the loop; NULL without a loop */
	int r;                         /* -errno: events = bpf, and BPF does not load */
	int level;                     /* the log line's syslog level */
	char state[96];                /* as latmgr.pc_state */
	char detail[320];              /* as latmgr.events_why */
	char log[512];                 /* the line to log at the daemon's start */
};

/*
 * Opens the source ops drives with m's callbacks (m NULL: a probe, which delivers
 * nothing) and, given a loop e, reads its fd there. 0, or -errno with why.
 */
static int try_source(const struct evsrc_ops *ops, struct latmgr *m, sd_event *e,
		      const struct events_sink *to, struct events_pick *ret, char *why,
		      size_t len)
{
	int r = evsrc_open(ops, to->cb, m, &ret->ev, why, len);

	if (r < 0 || !e)
		return r;
	r = sd_event_add_io(e, &ret->src, evsrc_fd(ret->ev), EPOLLIN, to->ready, m);
	if (r < 0) {
		evsrc_close(ret->ev);
		ret->ev = NULL;
		snprintf(why, len, "event loop: %s", strerror(-r));
	}
	return r;
}

static void say_bpf(struct events_pick *pk)
{
	pk->level = LOG_INFO;
	snprintf(pk->state, sizeof(pk->state), "bpf");
	snprintf(pk->detail, sizeof(pk->detail), "%s", bpf_what);
	snprintf(pk->log, sizeof(pk->log), "latency: fork, exec and exit events from BPF "
		 "tracepoints; exe rules match on the device and inode the kernel reports");
}

/* [latency] events = bpf, and BPF (why) does not load: the daemon does not start. */
static void say_bpf_required(struct events_pick *pk, int r, const char *why)
{
	pk->r = r;
	pk->level = LOG_ERR;
	snprintf(pk->detail, sizeof(pk->detail), "events = bpf, and BPF does not load: %s", why);
	snprintf(pk->log, sizeof(pk->log), "latency: [latency] events = bpf: BPF does not load: %s",
		 why);
}

/* No BPF (why) and no connector (r): /proc is walked each tick. */
static void say_none(struct events_pick *pk, const char *why, int r)
{
	pk->level = LOG_WARNING;
	snprintf(pk->state, sizeof(pk->state), "none (%s): walking /proc each tick",
		 strerror(-r));
	snprintf(pk->detail, sizeof(pk->detail), "no BPF (%s) and no proc connector (%s): /proc "
		 "is walked each tick, rules apply at start and reload only", why, strerror(-r));
	snprintf(pk->log, sizeof(pk->log), "latency: no BPF events (%s) and no proc connector: "
		 "%s; new threads are found by walking /proc each tick, and rules apply only at "
		 "start and reload", why, strerror(-r));
}

/* The connector, without BPF (why); asked: [latency] events = connector. */
static void say_connector(struct events_pick *pk, const char *why, bool asked)
{
	pk->level = asked ? LOG_INFO : LOG_NOTICE;
	snprintf(pk->state, sizeof(pk->state), "connector");
	snprintf(pk->detail, sizeof(pk->detail), "proc connector (no BPF: %s); exe rules read "
		 "/proc/PID/exe (CAP_SYS_PTRACE for other users' processes)", why);
	if (asked)
		snprintf(pk->log, sizeof(pk->log), "latency: fork, exec and exit events from the "
			 "proc connector ([latency] events = connector)");
	else
		snprintf(pk->log, sizeof(pk->log), "latency: no BPF events (%s): using the proc "
			 "connector; exe rules read /proc/PID/exe, which needs CAP_SYS_PTRACE for "
			 "other users' processes", why);
}

/*
 * The one choice of event source, for the daemon (m, in loop e) and for a probe (both
 * NULL): BPF where it loads and [latency] events allows it, else the connector unless
 * events = bpf, else none.
 */
static void pick_events(const struct rqb_conf *c, struct latmgr *m, sd_event *e,
			const struct events_sink *to, struct events_pick *ret)
{
	char why[256] = "", cwhy[256];
	int r = -ENOENT;

	*ret = (struct events_pick){ 0 };
	if (c->lat_events == CONF_EVENTS_CONNECTOR)
		snprintf(why, sizeof(why), "[latency] events = connector");
	else
		r = try_source(&bpfev_ops, m, e, to, ret, why, sizeof(why));
	if (r == 0)
		say_bpf(ret);
	else if (c->lat_events == CONF_EVENTS_BPF)
		say_bpf_required(ret, r, why);
	else if ((r = try_source(&procconn_ops, m, e, to, ret, cwhy, sizeof(cwhy))) < 0)
		say_none(ret, why, r);
	else
		say_connector(ret, why, c->lat_events == CONF_EVENTS_CONNECTOR);
}

bool latmgr_probe_events(const struct rqb_conf *c, char *ret_detail, size_t len)
{
	struct events_pick pk;
	bool on;

	pick_events(c, NULL, NULL, &(struct events_sink){ .cb = &probe_callbacks }, &pk);
	on = pk.ev != NULL;
	evsrc_close(pk.ev);
	snprintf(ret_detail, len, "%s", pk.detail);
	return on;
}

/* The source pick_events chooses, and what it says of it. */
int latmgr_source_open(struct latmgr *m, sd_event *e, const struct evsrc_callbacks *cb,
		       sd_event_io_handler_t ready)
{
	struct events_pick pk;

	pick_events(m->conf, m, e, &(struct events_sink){ .cb = cb, .ready = ready }, &pk);
	m->ev = pk.ev;
	m->ev_src = pk.src;
	snprintf(m->pc_state, sizeof(m->pc_state), "%s", pk.state);
	snprintf(m->events_why, sizeof(m->events_why), "%s", pk.detail);
	log_msg(pk.level, "%s", pk.log);
	return pk.r;
}

void latmgr_source_close(struct latmgr *m)
{
	sd_event_source_disable_unref(m->ev_src);
	evsrc_close(m->ev);
	m->ev_src = NULL;
	m->ev = NULL;
}

bool latmgr_has_events(const struct latmgr *m)
{
	return m->ev != NULL;
}

/*
 * With no rule and nothing managed, an exec can lead to nothing at once: the source
 * is told to let execs wait like forks (read at the next tick, or once enough queue
 * up), so that an idle daemon is not woken by every exec on the machine. Called after
 * anything that changes either: a tick, a reload, an apply.
 */
void latmgr_source_pace(struct latmgr *m)
{
	bool lazy = !m->conf->rules.n && !m->np && !m->la->n && !m->la->ncg;

	if (!m->ev || !m->ev->ops->exec_wakes || lazy == m->exec_lazy)
		return;
	m->ev->ops->exec_wakes(m->ev, !lazy);
	m->exec_lazy = lazy;
	log_debug("latency: an exec %s", lazy ? "waits for the next tick: no rule, nothing "
		  "managed" : "wakes the daemon at once");
}

const char *latmgr_source_name(const struct latmgr *m)
{
	return m->ev ? m->ev->ops->name : "none";
}

bool latmgr_walks_unprivileged(struct latmgr *m)
{
	return !m->ev || evsrc_walks_unprivileged(m->ev);
}

/* Rounded down to whole ticks, as the kernel rounds. */
uint64_t latmgr_boot_ticks(uint64_t ns)
{
	long hz = sysconf(_SC_CLK_TCK);

	return hz > 0 ? ns / (NSEC_PER_SEC / (uint64_t)hz) : 0;
}

/*
 * Events have CLOCK_MONOTONIC; start times count CLOCK_BOOTTIME, which runs on through
 * suspend. 0 also when the clocks cannot be read.
 */
uint64_t latmgr_mono_ticks(uint64_t ns)
{
	struct timespec mono, boot;
	long hz = sysconf(_SC_CLK_TCK);
	uint64_t off;

	if (!ns || hz <= 0 || clock_gettime(CLOCK_MONOTONIC, &mono) < 0 ||
	    clock_gettime(CLOCK_BOOTTIME, &boot) < 0)
		return 0;
	off = ((uint64_t)boot.tv_sec - (uint64_t)mono.tv_sec) * NSEC_PER_SEC +
	      (uint64_t)boot.tv_nsec - (uint64_t)mono.tv_nsec;
	return (ns + off) / (NSEC_PER_SEC / (uint64_t)hz);
}
