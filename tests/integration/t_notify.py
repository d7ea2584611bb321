"""sd_notify: READY=1, a one-line STATUS= naming sampler, managed tasks and moves,
WATCHDOG=1 when WATCHDOG_USEC is set, RELOADING=1 then READY=1 around SIGHUP,
STOPPING=1 on SIGTERM."""
import signal

from rqb import (Daemon, Hogs, NotifySocket, TOPO_2LLC, check, main, overload_replay,
                 require, tmpdir)


def test():
    require()
    with tmpdir() as tmp, Hogs(2) as hogs:
        a, b, replay = overload_replay(tmp, hogs)
        n = NotifySocket(tmp)
        env = {"NOTIFY_SOCKET": n.path, "WATCHDOG_USEC": "200000"}
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", replay], env=env) as d:
            n.wait_for("READY=1")
            n.wait_for("STATUS=sampler replay, 1 task managed, 1 move")
            n.wait_for("WATCHDOG=1")
            # Kept aside, so that the waits below see only what the reload sends.
            seen = list(n.messages)
            n.messages.clear()
            d.proc.send_signal(signal.SIGHUP)
            n.wait_for("RELOADING=1")
            n.wait_for("READY=1")
            order = [m for m in n.messages if "RELOADING=1" in m or "READY=1" in m]
            check("RELOADING=1" in order[0], "RELOADING=1 comes before READY=1")
            d.proc.send_signal(signal.SIGTERM)
            n.wait_for("STOPPING=1")
            check(d.stop() == 0, "clean stop")
        # The status waited for above is among them, so there is one at least.
        statuses = [m for m in seen + n.messages if m.startswith("STATUS=")]
        check(statuses and all("\n" not in s for s in statuses),
              f"STATUS= is one line ({len(statuses)} seen)")


main(test)
