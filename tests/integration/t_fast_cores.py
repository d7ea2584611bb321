"""fast_cores on real tasks, this host's two CPUs seen as a hybrid part
(topo-hybrid-1p1e.xml: CPU 0 a P-core, CPU 1 an E-core).

Replayed: a -10 task listed on the E-core and a +10 task on the P-core: the first is
pinned to the P-core (why=fast), the second to the E-core (why=off_fast); a replay
carries the latency tasks it recorded. SIGTERM gives both back.
Live: a hog given -10 with rqctl is pinned to the P-core, and given back once its
value is reset (why=latency_gone); the hog without a value is never pinned there.
With the rule off, the same hog is never pinned."""
import os
import re

from rqb import (ROOT, Daemon, Hogs, allowed, check, main, require, rqctl, start_time,
                 task_line, tmpdir, write_replay)

TOPO = os.path.join(ROOT, "tests", "data", "topo-hybrid-1p1e.xml")
CONF = "[balance]\nfast_cores = yes\n"


def replayed(tmp):
    with Hogs(2) as hogs:
        lat, batch = hogs.pids
        replay = os.path.join(tmp, "fast.replay")
        write_replay(replay, [([(0, 1, 100), (1, 1, 100)],
                               [task_line(lat, 1) + " lat=-10", task_line(batch, 0) + " lat=10",
                                f"latency {lat} {start_time(lat)} -10"])])
        with Daemon(tmp, ["--topology", TOPO, "--replay", replay], conf=CONF) as d:
            d.wait_for(r"fast_cores keeps latency work on CPUs 0: the fastest kind of core")
            d.wait_for(rf"pin tid={batch} .* why=off_fast")
            d.wait_for(rf"pin tid={lat} .* why=fast")
            d.sync()
            check(allowed(lat) == {0}, f"the -10 task is pinned to the P-core ({allowed(lat)})")
            check(allowed(batch) == {1},
                  f"the +10 task is pinned to the E-core ({allowed(batch)})")
            check(d.stop() == 0, "SIGTERM stops the daemon")
            check(allowed(lat) == {0, 1} and allowed(batch) == {0, 1},
                  "SIGTERM gave both their CPUs back")


def live(tmp, on):
    with Hogs(2) as hogs:
        lat, other = hogs.pids
        conf = CONF if on else ""
        with Daemon(tmp, ["--topology", TOPO], conf=conf) as d:
            d.wait_for(r"running")
            r = rqctl(d, "set", "-l", "-10", "-p", str(lat))
            check(r.returncode == 0, f"rqctl set -l -10 ({r.stderr.strip()})")
            if not on:
                d.sync(3)
                check(not re.search(r" pin tid=", d.text()), "with the rule off, no pin")
                check(allowed(lat) == {0, 1}, "and the -10 hog keeps both CPUs")
                return
            d.wait_for(rf"pin tid={lat} .* cpus=0 why=fast")
            d.sync()
            check(allowed(lat) == {0}, f"the -10 hog is pinned to the P-core ({allowed(lat)})")
            r = rqctl(d, "reset", "-p", str(lat))
            check(r.returncode == 0, f"rqctl reset ({r.stderr.strip()})")
            d.wait_for(rf"unpin tid={lat} .*why=latency_gone")
            d.sync()
            check(allowed(lat) == {0, 1}, f"without its value it has both CPUs ({allowed(lat)})")
            d.sync(2)
            text = d.text()
            check(not re.search(rf" pin tid={other} .*why=fast", text),
                  "the hog without a value is never pinned to the P-core")
            check(allowed(other) == {0, 1}, f"and keeps both CPUs ({allowed(other)})")
            check(d.stop() == 0, "SIGTERM stops the daemon")


def test():
    require()
    with tmpdir() as tmp:
        replayed(tmp)
    with tmpdir() as tmp:
        live(tmp, True)
    with tmpdir() as tmp:
        live(tmp, False)


main(test)
