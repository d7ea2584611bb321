"""--dry-run logs the plan and changes nothing: no affinity, no latency-nice value (its
actions are logged as pins are), no journal. SIGINT stops it."""
import os
import signal

from rqb import (Daemon, Hogs, TOPO_2LLC, allowed, check, main, overload_replay,
                 require, rqctl, tmpdir)


def test():
    require()
    with tmpdir() as tmp, Hogs(2) as hogs:
        a, b, replay = overload_replay(tmp, hogs)
        with Daemon(tmp, ["--dry-run", "--topology", TOPO_2LLC, "--replay", replay]) as d:
            d.wait_for(rf"dry-run: pin tid={b} .* llc=0->1 cpus=1")
            # The line comes after the tick's actuation; some more ticks on the same
            # overload change nothing either.
            d.sync(3)
            check(allowed(a) == {0, 1} and allowed(b) == {0, 1}, "no affinity changed")
            nice = os.getpriority(os.PRIO_PROCESS, a)
            p = rqctl(d, "set", "-l", "7", "-p", str(a))
            check(p.returncode == 0, f"rqctl set answers in a dry run: {p.stdout!r} {p.stderr!r}")
            d.wait_for(rf'dry-run: lat tid={a} tgid={a} start=\d+ value=7 source="ctl uid 0" whole')
            check(os.getpriority(os.PRIO_PROCESS, a) == nice, "no nice value changed")
            check(not os.path.exists(d.journal), "no journal was created")
            check(d.stop(signal.SIGINT) == 0, "SIGINT stops it cleanly")


main(test)
