"""rqctl explain, and a knob someone else changed is theirs (issue #17, parts 1 and 2).
A rule gives -10 to a service (a private copy of python). explain says, for the
service, the rule and its conditions, when, what -10 maps to here and each knob's
state (uclamp without effect where the kernel has none); for a child it forks, whom it
inherited the value from. Then the test renices the service to 5, as another tool
would: explain says the nice was changed by someone else and is left as it is; a child
forked after that keeps the 5 the kernel gave it; another value from rqctl and the
stop leave it too, while the first child's -10, still rqbalance's, is given back. A
process no rule matches: explain says which condition of the rule fails (to root),
and only that the rules do not apply to a user who does not own it; a real-time task:
that nice and weight do not count while it runs real-time. Waits are for events
(rqctl sync)."""
import json
import os
import subprocess

from rqb import Daemon, check, main, private_copy, require, rqctl, tmpdir, user_rqctl
from rqb_user import User

SERVICE = """
import os, sys, time
print(os.getpid(), flush=True)
for line in iter(sys.stdin.readline, ""):
    pid = os.fork()
    if pid == 0:
        time.sleep(120)
        os._exit(0)
    print(pid, flush=True)
"""


def nice(pid):
    return os.getpriority(os.PRIO_PROCESS, pid)


def explain(d, pid, *extra):
    r = rqctl(d, "--json", "explain", "-p", str(pid), *extra)
    check(r.returncode == 0, f"rqctl explain -p {pid}: {r.stderr.strip()}")
    out = json.loads(r.stdout)
    print(f"explain {pid}: {json.dumps(out, indent=1)}")
    return out


def has_uclamp():
    return os.path.exists("/proc/sys/kernel/sched_util_clamp_min")


def test():
    require(1)
    with tmpdir() as tmp:
        py = private_copy(tmp, "python3")
        conf = f"[rule svc]\nlatency_nice = -10\nexe = {py}\n"
        svc = subprocess.Popen([py, "-c", SERVICE], stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, text=True)
        sleeper = subprocess.Popen(["sleep", "120"])
        try:
            pid = int(svc.stdout.readline())
            with Daemon(tmp, conf=conf) as d:
                d.wait_for(r"running: sampler")
                d.sync()
                run(d, tmp, svc, pid, sleeper.pid, py)
        finally:
            svc.kill()
            sleeper.kill()
            svc.wait()
            sleeper.wait()


def fork(svc):
    svc.stdin.write("fork\n")
    svc.stdin.flush()
    return int(svc.stdout.readline())


def run(d, tmp, svc, pid, other, py):
    e = explain(d, pid)
    check(e["value"] == -10 and e["source"] == "rule svc", "the rule's value, from the rule")
    check(f'exe "{py}"' in e["rule"] and "all held" in e["rule"], "the rule's conditions")
    check(e["knob_nice"] == "applied: -10 (was 0)", "nice applied, and what it was")
    check("since" in e and e["maps_to"].startswith("nice -10"), "when, and what -10 maps to")
    check(e["changed_since"].startswith("nothing"), "nothing changed by anyone else yet")
    if not has_uclamp():
        check(e["knob_uclamp"].startswith("without effect: this kernel has no uclamp"),
              "uclamp without effect, and why")

    child = fork(svc)
    d.sync()
    e = explain(d, child)
    check(e["value"] == -10 and e["inherited_from"].startswith(f"task {pid},"),
          "the child inherited the value from the service")

    os.setpriority(os.PRIO_PROCESS, pid, 5)  # another tool renices the service
    e = explain(d, pid)
    check(e["knob_nice"].startswith("changed by someone else since rqbalance set -10: now 5"),
          "explain says the nice was changed by someone else")
    check(e["changed_since"] == "nice", "only the nice is someone else's")
    d.wait_for(rf"task {pid}: someone else changed its nice since rqbalance set it")

    late = fork(svc)
    d.sync()
    check(nice(late) == 5, f"a child forked after keeps the nice the kernel gave it "
          f"(5), not -10: {nice(late)}")
    check(rqctl(d, "get", "-p", str(late)).returncode == 0, "yet it has the value")
    check(explain(d, late)["knob_nice"].startswith("changed by someone else"),
          "and explain says whose its nice is")

    r = rqctl(d, "set", "-l", "-5", "-p", str(pid))
    check(r.returncode == 0, f"another value: {r.stderr.strip()}")
    check(nice(pid) == 5, f"another value does not take the nice back: {nice(pid)}")

    e = explain(d, other)
    check(e["value"] == "none" and "no rule gave it one" in e["why"], "no value, and why")
    check(e["rule_svc"].startswith("does not match: its exe is"), "which condition fails")

    with User() as user:
        prog = user_rqctl(tmp)
        r = user.run([prog, "-s", d.ctl, "--json", "explain", "-p", str(other)], text=True)
        check(r.returncode == 0, f"a user may ask: {r.stderr}")
        u = json.loads(r.stdout)
        check("rule_svc" not in u and "shown to its owner" in u["rules"],
              "another user's process: no detail read from it")

    # chrt sets the policy, then runs sh, which says so: no wait on time.
    rt = subprocess.Popen(["chrt", "-f", "1", "sh", "-c", "echo ready; exec sleep 120"],
                          stdout=subprocess.PIPE, text=True)
    try:
        if rt.stdout.readline().strip() == "ready":
            e = explain(d, rt.pid)
            check("note_realtime" in e and "fifo" in e["note_realtime"],
                  "a real-time task: explain says its knobs do not count")
        else:
            print("chrt -f 1 failed here: the real-time case is not checked")
    finally:
        rt.kill()
        rt.wait()

    check(d.stop() == 0, "the daemon stops cleanly")
    check(nice(pid) == 5 and nice(late) == 5, "the stop leaves someone else's nice")
    check(nice(child) == 0, f"and gives back its own: child's nice {nice(child)}")


if __name__ == "__main__":
    main(test)
