"""SIGKILL leaves a pin behind; the next start reads the journal and gives it back,
unless the task has chosen another affinity since: then its choice stands."""
import os
import signal
import subprocess

from rqb import (Daemon, Hogs, TOPO_2LLC, allowed, check, main, require, task_line, tmpdir,
                 write_overload, write_replay)


def pin_then_kill(tmp, journal, overload, b):
    d = Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", overload], journal=journal)
    with d:
        d.wait_for(rf"pin tid={b} ")
        rc = d.stop(signal.SIGKILL)
        check(rc == -signal.SIGKILL, "the daemon was killed")
    check(allowed(b) == {1}, "after SIGKILL the pin is still in place")


def test():
    require()
    with tmpdir() as tmp, Hogs(2) as hogs:
        a, b = sorted(hogs.pids)
        journal = os.path.join(tmp, "run")
        overload = os.path.join(tmp, "overload.replay")
        balanced = os.path.join(tmp, "balanced.replay")
        write_overload(overload, a, b)
        write_replay(balanced, [([(0, 1, 100), (1, 1, 100)],
                                 [task_line(a, 0), task_line(b, 1, allowed_list="0-1")])])

        pin_then_kill(tmp, journal, overload, b)
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", balanced], journal=journal) as d:
            d.wait_for(r"a previous run left changes: 1 restored")
            check(allowed(b) == {0, 1}, "the restart restored the task SIGKILL left pinned")
            check(d.stop() == 0, "clean stop")

        pin_then_kill(tmp, journal, overload, b)
        subprocess.run(["taskset", "-pc", "0", str(b)], check=True, stdout=subprocess.DEVNULL)
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", balanced], journal=journal) as d:
            d.wait_for(r"a previous run left changes: 0 restored, 1 left as the task chose")
            check(allowed(b) == {0}, "a task that changed its own affinity keeps its choice")
            check(d.stop() == 0, "clean stop")
        check(allowed(a) == {0, 1}, "the task never pinned was never touched")


main(test)
