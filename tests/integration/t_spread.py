"""One LLC overloaded, the other idle (fake 2-LLC topology, replay sampler, real tasks):
the daemon soft-pins one task to the idle LLC, and SIGTERM gives its affinity back."""
import os
import re

from rqb import (Daemon, Hogs, TOPO_2LLC, allowed, check, main, overload_replay,
                 require, tmpdir)


def test():
    require()
    with tmpdir() as tmp, Hogs(2) as hogs:
        a, b, replay = overload_replay(tmp, hogs)
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", replay]) as d:
            d.wait_for(rf"pin tid={b} .* llc=0->1 cpus=1 why=overload")
            check(allowed(b) == {1}, f"the younger task {b} is pinned to LLC 1 (CPU 1)")
            check(allowed(a) == {0, 1}, f"the other task {a} keeps CPUs 0-1")
            journal = open(os.path.join(d.journal, "affinity.journal")).read()
            check(re.search(rf"^set {b} {b} \d+ 0-1 1 \d+$", journal, re.M),
                  "the journal recorded the previous affinity before the change")
            rc = d.stop()
            check(rc == 0, "SIGTERM stops the daemon with status 0")
            check(allowed(b) == {0, 1}, "SIGTERM restored the pinned task to 0-1")
            check(allowed(a) == {0, 1}, "the untouched task is still 0-1")
            journal = open(os.path.join(d.journal, "affinity.journal")).read()
            check("set " not in journal, "the journal is empty after an orderly stop")
            check("restored tid" in d.text(), "the log says what was restored")


main(test)
