"""A CPU that runs a single task, however busy, never loses it: nothing is pinned
while LLC 0 holds one fully busy task and LLC 1 idles."""
import os

from rqb import (Daemon, Hogs, TOPO_2LLC, allowed, check, main, require, task_line, tmpdir,
                 write_replay)


def test():
    require()
    with tmpdir() as tmp, Hogs(1) as hogs:
        (a,) = hogs.pids
        replay = os.path.join(tmp, "lone.replay")
        write_replay(replay, [([(0, 1, 100), (1, 0, 0)], [task_line(a, 0)])])
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", replay],
                    conf="[daemon]\ninterval_ms = 20\n") as d:
            d.wait_for(r"running: sampler replay")
            # A pin would come by tick 2 (an overload of one task counts the second tick
            # it is seen): after these syncs the daemon has acted on the snapshot 20 times.
            d.sync(20)
            check(d.alive(), "the daemon is running")
            check("pin tid=" not in d.text(), "no pin was planned for the lone task")
            check(allowed(a) == {0, 1}, "the lone task keeps CPUs 0-1")
            check(d.stop() == 0, "clean stop")


main(test)
