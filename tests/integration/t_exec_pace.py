"""An idle daemon is not woken by every exec: with no rule and nothing managed, the BPF
exec event waits in the ring for the next tick (rqctl status: latency_exec_wakes
next_tick); a value set by rqctl or a rule loaded by a reload makes an exec wake it at
once again, and nothing that ran meanwhile is missed: a program started during the
pause gets the rule's value at the reload, and a new exec after it at once. Waits for
log lines, status and sync, never for time."""
import os
import subprocess

from rqb import (Daemon, check, fields, main, private_copy, require, rqctl, skip, tmpdir,
                 wait_until)

LAZY = "latency: an exec waits for the next tick"
AT_ONCE = "latency: an exec wakes the daemon at once"


def wakes(d):
    r = rqctl(d, "status")
    check(r.returncode == 0, f"rqctl status answers ({r.stderr.strip()})")
    return fields(r.stdout).get("latency_exec_wakes")


def nice(pid):
    return os.getpriority(os.PRIO_PROCESS, pid)


def test():
    require()
    with tmpdir() as tmp:
        with Daemon(tmp) as d:
            d.wait_for("running:")
            d.sync()
            if not fields(rqctl(d, "status").stdout).get("latency_events", "").startswith("bpf"):
                d.stop()
                skip("the events do not come from BPF here: an exec always wakes")
            d.wait_for(LAZY)
            check(wakes(d) == "next_tick", "no rule, nothing managed: an exec waits")
            prog = private_copy(tmp, "sleep")
            # Started during the pause: its exec event waits in the ring.
            early = subprocess.Popen([prog, "600"])
            other = subprocess.Popen(["sleep", "600"])
            try:
                d.sync()
                check(nice(early.pid) == 0, "no rule: the program keeps nice 0")
                r = rqctl(d, "set", "-l", "5", "-p", str(other.pid))
                check(r.returncode == 0, f"rqctl set answers ({r.stderr.strip()})")
                check(wakes(d) == "at_once", "a managed process: an exec wakes at once")
                r = rqctl(d, "reset", "-p", str(other.pid))
                check(r.returncode == 0, f"rqctl reset answers ({r.stderr.strip()})")
                d.sync()
                check(wakes(d) == "next_tick", "nothing managed again: an exec waits")
                with open(d.conf, "a") as f:
                    f.write(f"[rule pace]\nexe = {prog}\nlatency_nice = 7\n")
                r = rqctl(d, "reload")
                check(r.returncode == 0, f"reload answers ({r.stderr.strip()})")
                check(wakes(d) == "at_once", "a rule: an exec wakes at once")
                check(wait_until(lambda: nice(early.pid) == 7, 30),
                      "the program started during the pause has the rule's value")
                late = subprocess.Popen([prog, "600"])
                try:
                    check(wait_until(lambda: nice(late.pid) == 7, 30),
                          "a program started after the reload has it too")
                finally:
                    late.kill()
                    late.wait()
            finally:
                for p in (early, other):
                    p.kill()
                    p.wait()
            check(d.text().count(AT_ONCE) >= 2, "the log says each change")
            check(d.stop() == 0, "clean stop")


main(test)
