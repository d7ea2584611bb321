"""The second review's kind 2: a request is judged on the kernel's state of the target
now, never on rqbalance's record of it. A real unprivileged user the test creates asks
for values, through the ctl socket and the D-Bus API, for processes of its own whose
threads root gave one nice and policy or another; the same user then tries the kernel's
own calls (sched_setscheduler(2), setpriority(2) on every thread) on a twin in the same
state. The daemon's verdict must be the kernel's, every time (finding 3: root reniced a
process to 19, and the user got nice 0 back). Then finding 4: a process root put in a
cgroup of low weight (cpu.shares 2) or cpu.idle stays there when its user asks for a
value, and rqctl get says why; and finding 5: re-asserting the value root gave leaves
the value root's (its source), on both doors."""
import os
import shutil
import signal
import subprocess

from rqb import (Daemon, OwnCgroup, check, fields, main, require, rqctl, skip, tmpdir,
                 user_rqctl)
from rqb_dbus import SystemBus, call
from rqb_user import User

NAME, PATH, IFACE = "org.rqbalance1", "/org/rqbalance1", "org.rqbalance1.Latency"
OTHER, BATCH, IDLE = os.SCHED_OTHER, os.SCHED_BATCH, os.SCHED_IDLE
BATCH_FROM = 10

# A process with a second thread; prints its pid, then the thread's tid, and waits.
TWO_THREADS = ("import os, threading\n"
               "e = threading.Event()\n"
               "print(os.getpid(), flush=True)\n"
               "def run():\n"
               "    print(threading.get_native_id(), flush=True)\n"
               "    e.wait()\n"
               "threading.Thread(target=run, daemon=True).start()\n"
               "e.wait()\n")

# Run as the user: the kernel's verdict on giving every thread of a process a policy
# and a nice, as rqbalance would (policy first: the kernel judges leaving SCHED_IDLE
# on the nice a thread has; -1: the policy is left as it is).
KERNEL = ("import os, sys\n"
          "pid, nice, pol = (int(a) for a in sys.argv[1:])\n"
          "try:\n"
          "    for t in sorted(int(t) for t in os.listdir(f'/proc/{pid}/task')):\n"
          "        if pol >= 0:\n"
          "            os.sched_setscheduler(t, pol, os.sched_param(0))\n"
          "        os.setpriority(os.PRIO_PROCESS, t, nice)\n"
          "    print('ok')\n"
          "except PermissionError:\n"
          "    print('refused')\n")

# Each thread's (nice, policy) as root leaves it; the RLIMIT_NICE of the process.
STATES = [
    ("nice 0", [(0, OTHER), (0, OTHER)], 0),
    ("root reniced it to 19", [(19, OTHER), (19, OTHER)], 0),
    ("one thread reniced to 10", [(0, OTHER), (10, OTHER)], 0),
    ("batch at 5", [(5, BATCH), (5, BATCH)], 0),
    ("idle at 0", [(0, IDLE), (0, IDLE)], 0),
    ("idle at 19", [(19, IDLE), (19, IDLE)], 0),
    ("root boosted it to -5", [(-5, OTHER), (-5, OTHER)], 0),
    ("nice 10, RLIMIT_NICE 25", [(10, OTHER), (10, OTHER)], 25),
]
VALUES = [-5, -3, 0, 3, 10, 19]


def policy_of(v):
    """The policy rqbalance writes for v: a negative value's SCHED_OTHER, the positive
    side's SCHED_BATCH and SCHED_IDLE; from 0 up to those, a thread keeps its own (-1)."""
    return IDLE if v == 19 else BATCH if v >= BATCH_FROM else OTHER if v < 0 else -1


def target(user, state):
    """A two-thread process of the user's in state (its RLIMIT_NICE is 0, as the user's
    commands run, unless the state says otherwise); (Popen, pid), or None where this
    root may not set the state's RLIMIT_NICE (no CAP_SYS_RESOURCE, as here)."""
    p = user.popen(["/usr/bin/python3", "-c", TWO_THREADS], stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    tids = [pid, int(p.stdout.readline())]
    threads, rlim = state
    for tid, (nice, pol) in zip(tids, threads):
        os.sched_setscheduler(tid, pol, os.sched_param(0))
        os.setpriority(os.PRIO_PROCESS, tid, nice)
    if rlim and subprocess.run(["prlimit", "--pid", str(pid), f"--nice={rlim}:{rlim}"],
                               capture_output=True).returncode != 0:
        stop(p)
        return None
    return p, pid


def stop(p):
    os.killpg(p.pid, signal.SIGKILL)
    p.wait()


def kernel_verdict(user, pid, v):
    r = user.run(["/usr/bin/python3", "-c", KERNEL, str(pid), str(v), str(policy_of(v))])
    out = r.stdout.decode().strip()
    return out if out in ("ok", "refused") else f"unreadable ({out!r} {r.stderr!r})"


def ctl_verdict(d, user, prog, pid, v):
    r = subprocess.run(["runuser", "-u", user.name, "--", prog, "-s", d.ctl, "set", "-l", str(v),
                        "-p", str(pid)], capture_output=True, text=True, timeout=60)
    if r.returncode == 0:
        return "ok"
    return "refused" if "permission denied" in r.stderr else f"error ({r.stderr.strip()!r})"


def bus_verdict(bus, user, pid, v):
    r = call(bus.address, NAME, PATH, f"{IFACE}.SetProcess", f"uint32:{pid}", f"int32:{v}",
             user=user)
    if r.ok:
        return "ok"
    return "refused" if r.error == "org.freedesktop.DBus.Error.AccessDenied" else f"error ({r!r})"


def differential(d, bus, user, prog):
    wrong, cases = [], 0
    for name, threads, rlim in STATES:
        for v in VALUES:
            got = target(user, (threads, rlim))
            if not got:
                print(f"(RLIMIT_NICE {rlim} cannot be set here: {name} was not run)")
                break
            twin, tpid = got
            kernel = kernel_verdict(user, tpid, v)
            stop(twin)
            for door in ("ctl", "dbus"):
                p, pid = target(user, (threads, rlim))
                got = (ctl_verdict(d, user, prog, pid, v) if door == "ctl"
                       else bus_verdict(bus, user, pid, v))
                cases += 1
                if got != kernel:
                    wrong.append(f"{name}, value {v} by {door}: the kernel says {kernel}, "
                                 f"the daemon {got}")
                stop(p)
    for w in wrong:
        print(f"  {w}")
    check(cases >= 2 * len(VALUES) * (len(STATES) - 1) and not wrong,
          f"the daemon's verdict is the kernel's in all {cases} cases ({len(wrong)} differ)")


def cpu_v1_mount():
    with open("/proc/self/mounts") as f:
        for line in f:
            _, where, fs, opts = line.split()[:4]
            if fs == "cgroup" and "cpu" in opts.split(","):
                return where
    return None


class Held(OwnCgroup):
    """A cgroup of the test's own that holds its tasks' CPU back: knob = value."""

    def __init__(self, mount, knob, value):
        super().__init__(mount, f"/rqbk-{knob.replace('.', '-')}-{os.getpid()}", knob, value)


def in_cgroup(pid, rel):
    with open(f"/proc/{pid}/cgroup") as f:
        return any(line.rstrip("\n").split(":", 2)[2] == rel for line in f)


def held_back(d, user, prog):
    """Finding 4: a low weight or cpu.idle is the administrator's, as a quota is."""
    mount = cpu_v1_mount()
    if not mount:
        print("(no cgroup v1 cpu hierarchy here: the held-back cgroup cases were not run)")
        return
    knobs = [("cpu.shares", "2")]
    if os.path.exists(os.path.join(mount, "cpu.idle")):
        knobs.append(("cpu.idle", "1"))
    for knob, value in knobs:
        held = Held(mount, knob, value)
        try:
            p, pid = target(user, ([(0, OTHER), (0, OTHER)], 0))
            held.add(pid)
            r = subprocess.run(["runuser", "-u", user.name, "--", prog, "-s", d.ctl, "set", "-l",
                                "1", "-p", str(pid)], capture_output=True, text=True, timeout=60)
            check(r.returncode == 0, f"{knob} {value}: the user gives its process 1 "
                  f"({r.stderr.strip()!r})")
            check(in_cgroup(pid, held.rel), f"which stays in the cgroup with {knob} {value}")
            check(os.getpriority(os.PRIO_PROCESS, pid) == 1, "and gets the value's nice")
            get = fields(rqctl(d, "get", "-p", str(pid)).stdout)
            check("someone else's cgroup" in get.get("cgroup_left", ""),
                  f"rqctl get says why ({get})")
            stop(p)
        finally:
            held.remove()


def source_of(d, pid):
    return fields(rqctl(d, "get", "-p", str(pid)).stdout).get("source")


def not_resourced(d, bus, user, prog):
    """Finding 5: a value the user did not give stays its giver's."""
    for door in ("ctl", "dbus"):
        p, pid = target(user, ([(0, OTHER), (0, OTHER)], 0))
        check(rqctl(d, "set", "-l", "-5", "-p", str(pid)).returncode == 0,
              f"{door}: root gives the user's process -5")
        got = (ctl_verdict(d, user, prog, pid, -5) if door == "ctl"
               else bus_verdict(bus, user, pid, -5))
        check(got == "ok", f"{door}: the user may ask for the -5 it has")
        src = source_of(d, pid)
        check(src == "ctl uid 0", f"{door}: and the value stays root's ({src!r})")
        check(rqctl(d, "reset", "-p", str(pid)).returncode == 0
              and os.getpriority(os.PRIO_PROCESS, pid) == 0,
              f"{door}: so root's reset gives the nice back")
        stop(p)


def test():
    require()
    if not shutil.which("prlimit") or not os.access("/usr/bin/python3", os.X_OK):
        skip("prlimit or /usr/bin/python3 missing")
    with tmpdir() as tmp, SystemBus() as bus, User("rqbk") as user:
        prog = user_rqctl(tmp)
        conf = f"[latency]\nclass_cgroups = yes\nidle_at_19 = yes\nbatch_from = {BATCH_FROM}\n"
        with Daemon(tmp, conf=conf, env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d:
            d.wait_for("ctl: serving")
            d.wait_for("dbus: serving")
            differential(d, bus, user, prog)
            held_back(d, user, prog)
            not_resourced(d, bus, user, prog)
            check(d.stop() == 0, "clean stop")


main(test)
