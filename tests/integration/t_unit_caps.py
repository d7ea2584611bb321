"""The service's capability bounding set is enough, and each capability in it is used:
rqbalanced runs as root under setpriv with exactly the set the unit names (and
NoNewPrivileges), as systemd would start it, and works on another user's tasks: it pins
and restores a hog, an exe rule gives a sleeper its latency value, and the proc
connector runs. Without CAP_SYS_NICE the pin fails, without CAP_SYS_PTRACE the exe rule
matches nothing, and without CAP_NET_ADMIN there is no connector before Linux 6.6
(from 6.6 any process may listen to it). The rest of the
sandbox (seccomp, mount namespace) needs systemd as PID 1 and is not run here."""
import os
import subprocess
import time

import rqb
from packaging import UNIT_TEMPLATE, bounding_set, need, read_unit, value
from rqb import (RQCTL, TOPO_2LLC, Daemon, allowed, check, main, private_copy, require, tmpdir,
                 wait_until)

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def kernel():
    return tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])


def sched_policy(pid):
    with open(f"/proc/{pid}/sched") as f:
        for line in f:
            if line.startswith("policy"):
                return int(line.split(":")[1])
    raise KeyError("policy")


def wrapper(tmp, caps):
    """An executable that starts rqbalanced as systemd would, under these capabilities."""
    path = os.path.join(tmp, f"rqbalanced-{len(caps)}-{time.monotonic_ns()}")
    bset = ",".join(["-all"] + [f"+{c.removeprefix('CAP_').lower()}" for c in sorted(caps)])
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\nexec setpriv --bounding-set={bset} --inh-caps=-all "
                f"--no-new-privs {rqb.DAEMON} \"$@\"\n")
    os.chmod(path, 0o755)
    return path


def exe(pid):
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return None


def run_once(tmp, caps, sleep):
    """Starts the daemon under caps; returns what it managed to do."""
    # Each says it runs once setpriv has made it nobody and exec'd the shell: the
    # daemon must find another user's task, not root's setpriv.
    hogs = [subprocess.Popen(NOBODY + ["sh", "-c", "echo; while :; do :; done"],
                             stdout=subprocess.PIPE) for _ in range(2)]
    sleeper = subprocess.Popen(NOBODY + [sleep, "60"])
    got = {}
    real = rqb.DAEMON
    try:
        for h in hogs:
            check(h.stdout.readline() == b"\n", f"hog {h.pid} runs as nobody")
        # setpriv's exec of the sleeper is not the test's to see but in /proc: a state
        # of the test's own child, which the daemon plays no part in.
        check(wait_until(lambda: exe(sleeper.pid) == sleep, 30),
              f"the sleeper {sleeper.pid} runs {sleep} as nobody")
        a, b = sorted(h.pid for h in hogs)
        replay = os.path.join(tmp, "overload.replay")
        rqb.write_overload(replay, a, b)
        conf = (f"[latency]\nclass_cgroups = no\n"
                f"[rule sleeper]\nlatency_nice = 15\nexe = {sleep}\nuid = nobody\n")
        rqb.DAEMON = wrapper(tmp, caps)
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", replay], conf=conf) as d:
            d.wait_for("running: sampler replay")
            # The rule is applied to what runs at start, before the loop runs; the
            # replayed overload (two tasks) is acted on in the first tick, and the
            # snapshot stays: after two whole ticks, a pin made or refused is settled.
            d.sync(2)
            got["pinned"] = allowed(b) == {1}
            got["rule"] = sched_policy(sleeper.pid) == 3
            status = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True,
                                    text=True, timeout=30).stdout
            got["connector"] = "latency_events connector\n" in status
            check(d.stop() == 0, f"clean stop under {sorted(caps)}")
            got["restored"] = allowed(b) == {0, 1} and sched_policy(sleeper.pid) == 0
    finally:
        rqb.DAEMON = real
        for p in hogs + [sleeper]:
            p.kill()
            p.wait()
    print(f"under {sorted(caps)}: {got}")
    return got


def test():
    require()
    need("setpriv")
    unit = read_unit(UNIT_TEMPLATE)
    caps = bounding_set(unit)
    check(value(unit, "NoNewPrivileges") == "yes", "the unit sets NoNewPrivileges")
    with tmpdir() as tmp:
        os.chmod(tmp, 0o755)
        # The rule's exe: a copy of the test's own, which no other run's sleeper runs
        # (and no other run's rule names), that nobody may execute.
        sleep = private_copy(tmp, "sleep")
        got = run_once(tmp, caps, sleep)
        check(got["pinned"], "with the unit's set: another user's hog is pinned")
        check(got["rule"], "an exe rule gives another user's sleeper its value (SCHED_BATCH)")
        check(got["connector"], "the proc connector runs")
        check(got["restored"], "and the stop gives both back what they had")
        for cap, what in [("CAP_SYS_NICE", "pinned"), ("CAP_SYS_PTRACE", "rule"),
                          ("CAP_NET_ADMIN", "connector")]:
            if cap not in caps:
                continue
            without = run_once(tmp, caps - {cap}, sleep)
            if cap == "CAP_NET_ADMIN" and without[what] and kernel() >= (6, 6):
                print(f"without {cap} the connector runs on Linux {kernel()}: from 6.6 "
                      "anyone may listen; Debian 12's 6.1 still asks for it")
                continue
            check(not without[what], f"without {cap}: not {what}, so the unit needs it")


main(test)
