"""The service's capability bounding set is enough, and each capability in it is used:
rqbalanced runs as root under setpriv with exactly the set the unit names (and
NoNewPrivileges), as systemd would start it, and works on another user's tasks: it pins
and restores a hog, and an exe rule gives its latency value to another user's sleeper
that ran before the daemon started (found by the BPF task iterator) and to one exec'd
while it runs (the BPF exec event), and keeps both through a reload (a rescan after the
start-up capabilities were dropped). The fork, exec and exit events come from BPF.
Without CAP_SYS_NICE the pin fails; without CAP_BPF or CAP_PERFMON the BPF programs do
not load: the events come from the proc connector (from Linux 6.6 any process may
listen to it), and the exe rule matches neither sleeper, since /proc/PID/exe of another
user's process takes CAP_SYS_PTRACE, which the unit no longer grants. The rest of the
sandbox (seccomp, mount namespace) needs systemd as PID 1 and is not run here."""
import os
import subprocess
import time

import rqb
from packaging import UNIT_TEMPLATE, bounding_set, need, read_unit, value
from rqb import (RQCTL, TOPO_2LLC, Daemon, allowed, check, main, private_copy, require, tmpdir,
                 wait_until)

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


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


def start_sleeper(sleep):
    """Another user's sleeper, once setpriv has made it nobody and exec'd the copy: a state
    of the test's own child, which the daemon plays no part in, read in /proc."""
    p = subprocess.Popen(NOBODY + [sleep, "60"])
    check(wait_until(lambda: exe(p.pid) == sleep, 30), f"the sleeper {p.pid} runs {sleep} as nobody")
    return p


def status(d):
    out = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True, text=True,
                         timeout=30).stdout
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def run_once(tmp, caps, sleep):
    """Starts the daemon under caps; returns what it managed to do."""
    # Each says it runs once setpriv has made it nobody and exec'd the shell: the
    # daemon must find another user's task, not root's setpriv.
    hogs = [subprocess.Popen(NOBODY + ["sh", "-c", "echo; while :; do :; done"],
                             stdout=subprocess.PIPE) for _ in range(2)]
    procs = list(hogs)
    got = {}
    real = rqb.DAEMON
    try:
        for h in hogs:
            check(h.stdout.readline() == b"\n", f"hog {h.pid} runs as nobody")
        before = start_sleeper(sleep)
        procs.append(before)
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
            d.sync()
            after = start_sleeper(sleep)
            procs.append(after)
            # Its exec handled, and two whole ticks.
            d.sync(2)
            got["pinned"] = allowed(b) == {1}
            got["rule_before"] = sched_policy(before.pid) == 3
            got["rule_after"] = sched_policy(after.pid) == 3
            got["events"] = status(d).get("latency_events", "?")
            # A reload rescans /proc and applies the rules again: a rule value that no
            # longer matches would be given back.
            r = subprocess.run([RQCTL, "-s", d.ctl, "reload"], capture_output=True, text=True,
                               timeout=60)
            check(r.returncode == 0, f"reload under {sorted(caps)}: {r.stderr.strip()}")
            d.sync()
            got["kept_at_reload"] = (got["rule_before"] and got["rule_after"] and
                                     sched_policy(before.pid) == 3 and
                                     sched_policy(after.pid) == 3)
            check(d.stop() == 0, f"clean stop under {sorted(caps)}")
            got["restored"] = (allowed(b) == {0, 1} and sched_policy(before.pid) == 0 and
                               sched_policy(after.pid) == 0)
    finally:
        rqb.DAEMON = real
        for p in procs:
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
    check(not caps & {"CAP_SYS_PTRACE", "CAP_NET_ADMIN", "CAP_SYS_ADMIN"},
          f"the unit grants neither CAP_SYS_PTRACE nor CAP_NET_ADMIN: {sorted(caps)}")
    with tmpdir() as tmp:
        os.chmod(tmp, 0o755)
        # The rule's exe: a copy of the test's own, which no other run's sleeper runs
        # (and no other run's rule names), that nobody may execute.
        sleep = private_copy(tmp, "sleep")
        got = run_once(tmp, caps, sleep)
        check(got["pinned"], "with the unit's set: another user's hog is pinned")
        check(got["events"] == "bpf", f"fork, exec and exit events come from BPF: {got['events']}")
        check(got["rule_before"], "an exe rule gives another user's sleeper that ran before "
              "the start its value (SCHED_BATCH), found by the task iterator")
        check(got["rule_after"], "and one exec'd while the daemon runs, from the exec event")
        check(got["kept_at_reload"], "both keep it through a reload's rescan")
        check(got["restored"], "and the stop gives all three back what they had")
        for cap, lost in [("CAP_SYS_NICE", ["pinned"]),
                          ("CAP_BPF", ["events", "rule_before", "rule_after"]),
                          ("CAP_PERFMON", ["events", "rule_before", "rule_after"])]:
            check(cap in caps, f"the unit grants {cap}")
            without = run_once(tmp, caps - {cap}, sleep)
            for what in lost:
                if what == "events":
                    check(without[what] != "bpf",
                          f"without {cap}: no BPF events ({without[what]}), so the unit needs it")
                else:
                    check(not without[what], f"without {cap}: not {what}, so the unit needs it")


main(test)
