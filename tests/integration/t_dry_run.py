"""--dry-run logs the plan and changes nothing: no affinity, no journal. SIGINT stops it."""
import os
import signal

from rqb import (Daemon, Hogs, TOPO_2LLC, allowed, check, main, require, tmpdir,
                 write_overload)


def test():
    require()
    with tmpdir() as tmp, Hogs(2) as hogs:
        a, b = sorted(hogs.pids)
        replay = os.path.join(tmp, "overload.replay")
        write_overload(replay, a, b)
        with Daemon(tmp, ["--dry-run", "--topology", TOPO_2LLC, "--replay", replay]) as d:
            d.wait_for(rf"dry-run: pin tid={b} .* llc=0->1 cpus=1")
            # The line comes after the tick's actuation; some more ticks on the same
            # overload change nothing either.
            d.sync(3)
            check(allowed(a) == {0, 1} and allowed(b) == {0, 1}, "no affinity changed")
            check(not os.path.exists(d.journal), "no journal was created")
            check(d.stop(signal.SIGINT) == 0, "SIGINT stops it cleanly")


main(test)
