"""Idle costs nothing: with nothing managed and nothing to spread (one LLC), the tick
backs off to a heartbeat; a sync or a reload brings it back at once, and rqctl status
shows which; idle_backoff_ms = 0 keeps the tick. Waits for log lines, never for time."""
from rqb import Daemon, check, fields, main, require, rqctl, tmpdir, wait_until

BACKOFF = r"tick: nothing to do: backing off"
WOKEN = r"tick: woken: back to interval_ms"


def status(d):
    r = rqctl(d, "status")
    check(r.returncode == 0, f"rqctl status answers ({r.stderr.strip()})")
    return fields(r.stdout)


def test():
    require()
    with tmpdir() as tmp, tmpdir() as tmp_off:
        off = Daemon(tmp_off, conf="[daemon]\ninterval_ms = 20\nidle_backoff_ms = 0\n")
        with off, Daemon(tmp, conf="[daemon]\ninterval_ms = 20\nidle_backoff_ms = 2000\n") as d:
            d.wait_for(BACKOFF)
            # One LLC group (the fake topology): nothing to spread, so no sample is taken.
            d.wait_for(r"tick: fewer than two LLC groups: a heartbeat takes no sample")
            st = status(d)
            check(st["idle"] == "yes", "status says idle")
            check(int(st["tick_now_ms"]) > int(st["tick_ms"]), "the tick now is a heartbeat")
            # A sync waits for a tick that begins after it: it brings the tick back.
            d.sync()
            check(d.text().count("tick: woken") == 1, "the sync woke the tick")
            check(wait_until(lambda: d.text().count("backing off") == 2, 60),
                  "backs off again once quiet")
            r = rqctl(d, "reload")
            check(r.returncode == 0, f"reload answers ({r.stderr.strip()})")
            check(wait_until(lambda: d.text().count("tick: woken") == 2, 60),
                  "a reload woke the tick")
            # The other daemon, started first, has had as many quiet ticks and more.
            st = status(off)
            check(int(st["ticks"]) > 10, "the daemon without backoff ticks")
            check(st["idle"] == "no" and st["tick_now_ms"] == st["tick_ms"],
                  "idle_backoff_ms = 0: never idle")
            check("backing off" not in off.text(), "idle_backoff_ms = 0: never backed off")
            check(d.stop() == 0, "clean stop")
            check(off.stop() == 0, "clean stop, no backoff")


main(test)
