/* The daemon: one struct holds the state of every stage, passed explicitly. */
#ifndef RQB_DAEMON_H
#define RQB_DAEMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-event.h>

#include "actuate/act.h"
#include "conf/conf.h"
#include "latmgr/latmgr.h"
#include "model/stats.h"
#include "core/idle.h"
#include "core/metrics.h"
#include "ctl/ctl_bus.h"
#include "ctl/ctl.h"
#include "ctl/ctl_req.h"
#include "diag/features.h"
#include "diag/peers.h"
#include "diag/rqlat.h"
#include "plan/plan.h"
#include "policy/spread.h"
#include "sample/latseen.h"
#include "sample/sampler.h"
#include "sample/topo.h"
#include "snapshot/snap.h"

/* What the command line asked for; it wins over the config file, on reload too. */
struct daemon_opts {
	const char *config_path;
	bool config_explicit;       /* -c given: a missing file is an error */
	bool dry_run;               /* --dry-run */
	const char *topology;       /* --topology */
	const char *replay;         /* --replay */
	const char *record;         /* --record */
	int log_level;              /* --log-level, or -1 */
};

struct daemon {
	struct daemon_opts opts;
	struct rqb_conf conf;
	struct topo *topo;
	struct features features;    /* probed once at start */
	char sched_cache[160];       /* where CONFIG_SCHED_CACHE=y was found; "" not built */
	struct latseen latseen;      /* where the latency tasks last ran, for latency_apart */
	enum kernel_places kernel_places; /* who else places by cache (features.h) */
	char kernel_places_why[320];
	const char *peers_root;      /* where daemon_peers reads: NULL the system (tests: a tree) */
	struct peers peers;          /* the last reading, for status */
	uint64_t peers_at_ns;        /* when it was read (CLOCK_MONOTONIC); 0: never */
	struct sampler *sampler;
	struct snapshot *snap;
	struct spread_state pol;
	struct plan plan;
	struct act act;
	struct latmgr lm;            /* who has a latency value, followed through fork/exec */
	struct ctl_req_lim req;      /* the limits the ctl socket and the D-Bus API share */
	struct ctl_env env;          /* what both doors see of the daemon */
	struct ctl_server ctl;
	struct ctl_bus bus;           /* the D-Bus API */
	FILE *record;
	sd_event *event;
	sd_event_source *timer;
	uint64_t next_tick_ns;
	struct idle_state idle;      /* the idle backoff's state (core/idle.h) */
	sd_event_source *wake;       /* a post source: after any event, whether to tick sooner */
	sd_event_source *moves;      /* latency class moves ending (latmgr_moves_start) */
	uint64_t wake_seen;          /* what the wake signals summed to at the last look */
	bool woken;                  /* a reload or a hotplug since the last tick */
	uint64_t next_trim_ns;       /* CLOCK_MONOTONIC: when freed memory goes back next */
	uint64_t ticks;
	uint64_t unsampled;             /* heartbeats that took no sample (one LLC group) */
	uint64_t sample_errors;
	uint64_t sample_failures;    /* ticks whose sample failed, ever: sample_errors resets */
	/* What the ticks took, by stage (enum tick_stage), summed since the start, in ns. */
	uint64_t tick_ns[TICK_STAGES];
	uint64_t tick_max_ns;        /* the longest whole tick */
	uint64_t hotplug_ns;         /* when the online CPUs were last read */
	int slice_cpus;              /* online CPUs when the default slice was last read */
	int slice_rereads;           /* seconds it is read again after they changed */
	struct rqlat_state *rqlat;   /* run-queue wait histograms; NULL where BPF cannot load */
	char rqlat_why[256];         /* why not, for rqctl latency */
	struct metrics metrics;
	sd_event_source *metrics_timer;
	char status[256];            /* last STATUS= sent */
};

/*
 * Loads the config the options name; missing default file means defaults. ret is
 * overwritten, not freed: the caller frees it (conf_free) or moves it on.
 */
int daemon_load_config(const struct daemon_opts *o, FILE *err, struct rqb_conf *ret);
/* What the daemon shows of itself now (rqctl status, the metrics file). */
void daemon_stats(const struct daemon *d, struct daemon_stats *ret);
/* Takes c's rules over (conf_move); daemon_fini frees them. */
int daemon_init(struct daemon *d, const struct daemon_opts *o, struct rqb_conf *c);
/* Runs the event loop until SIGTERM or SIGINT. */
int daemon_run(struct daemon *d);
/* Restores every task, then frees everything. */
void daemon_fini(struct daemon *d);
/* One pass of sample -> snapshot -> policy -> plan -> actuate. */
int daemon_tick(struct daemon *d, uint64_t now_ns);
/*
 * SIGHUP or rqctl reload: re-reads the config; on error keeps the old one and returns
 * -EINVAL, with the reasons (one "file:line: key: reason" a line) in *ret_errors when
 * ret_errors is not NULL (free it).
 */
int daemon_reload(struct daemon *d, char **ret_errors);
/*
 * What else shapes scheduling here, read now (sched_ext, autogroup, no cpu controller,
 * other tools running): at start, at reload and for each status request.
 */
void daemon_peers(const struct daemon *d, struct peers *ret);
/* status reads what else shapes scheduling again only after this long. */
#define PEERS_MAX_AGE_NS 1000000000ull

#endif
