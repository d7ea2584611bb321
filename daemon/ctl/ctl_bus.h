/*
 * The D-Bus API on the system bus: org.rqbalance1 (set, get, reset a latency value;
 * put a process in front; register a game, by pidfd, for as long as the caller's
 * connection lasts) and, where nothing else owns it, system76-scheduler's
 * com.system76.Scheduler SetForegroundProcess, for the shell plugins that call it.
 * Each call is judged as the ctl socket judges a request (ctl_req.h), on what the bus
 * took when the caller connected (its uid, groups and pid), asked for once a
 * connection without waiting, and within the limits the ctl socket's connections
 * share (ctl_req_lim_admit).
 */
#ifndef RQB_CTL_BUS_H
#define RQB_CTL_BUS_H

#include <stdbool.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#define BUS_NAME "org.rqbalance1"
#define BUS_PATH "/org/rqbalance1"
#define BUS_IFACE "org.rqbalance1.Latency"
#define BUS_S76_NAME "com.system76.Scheduler"
#define BUS_S76_PATH "/com/system76/Scheduler"
/*
 * Connections whose credentials are remembered, the least recently heard forgotten
 * first; a forgotten one that calls again is asked for again. The calls that wait
 * for a connection's credentials are counted in the request layer's pool
 * (CTL_REQ_WAITING, CTL_REQ_WAITING_SOURCE).
 */
#define BUS_KNOWN 256

struct ctl_env;
struct bus_sender;

struct ctl_bus {
	sd_bus *bus;            /* NULL: no API (off, no system bus, or it went away) */
	sd_bus_slot *obj, *s76_obj, *name, *s76_name, *gone, *lost;
	sd_bus_slot *left;      /* NameOwnerChanged: a connection left, its games end */
	struct bus_sender *senders; /* connections that called: known, or being asked */
	unsigned nsenders, nknown;
	bool serving;           /* owns BUS_NAME */
	bool s76;               /* owns BUS_S76_NAME */
	struct ctl_env *env;    /* what the calls see of the daemon */
};

/*
 * Connects to the system bus (DBUS_SYSTEM_BUS_ADDRESS where set) on e and asks for the
 * names, when [daemon] dbus is on. Without a bus, or a name, it logs why: never fatal.
 */
void ctl_bus_init(struct ctl_bus *b, sd_event *e, struct ctl_env *env);
/*
 * Serves the API's objects on bus, a connection already made, which b then owns
 * (ctl_bus_fini closes it): the system bus, from ctl_bus_init, which also asks for the
 * names; or, in the bus fuzz target, one end of a peer-to-peer link whose other end
 * stands in for the caller and the bus driver. 0 or -errno.
 */
int ctl_bus_attach(struct ctl_bus *b, sd_bus *bus, struct ctl_env *env);
void ctl_bus_fini(struct ctl_bus *b);

#endif
