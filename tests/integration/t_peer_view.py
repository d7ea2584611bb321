"""What a caller's /proc shows it is judged on what the kernel says, and read bounded
(issue #50, finding 5; issue #49, finding 2), run as real unprivileged users the test
creates, against a daemon as the tests run it (root: it may follow /proc/PID/root) and
one under the service unit's capabilities (it may not, and reads mountinfo text).

1. The forged proc: user A's /proc is hidepid=invisible (a mount namespace of root's,
   as t_hidepid makes); in a user and mount namespace of its own A mounts the proc of
   a pid namespace below its own over /proc, staying itself in the daemon's pid
   namespace (peer_flood.py forge). Its rqctl list, get and explain, and GetProcess
   over the bus, must not show user B's process PB. Before, the daemon took the last
   proc line at /proc in A's mountinfo, which hides nothing, and showed PB.
2. The mount table: user C holds 20,000 bind mounts of long paths in a namespace of its
   own (some 17 MB of mountinfo, about a second of the kernel's time to read) and opens
   100 new connections at each door (ctl socket and D-Bus). Root's status is answered
   meanwhile, the flood is served, and the daemon's reads (rchar of /proc/PID/io) grow
   by less than 192 KiB a connection: no connection reads the table whole. Before,
   every connection read all of it on the loop.
A caller in the host's mount namespace still sees what its /proc shows it (nothing
hidden here) under both daemons."""
import os
import re
import shutil
import subprocess
import sys
import time

from rqb import (BUILD, ROOT, RQCTL, TOPO_2LLC, Daemon, check, main, private_copy, require, skip,
                 tmpdir, user_rqctl, write_replay)
from rqb_dbus import SystemBus
from rqb_user import NICE0, User

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
NAME, PATH, IFACE = "org.rqbalance1", "/org/rqbalance1", "org.rqbalance1.Latency"
MOUNTS, CONNS, WORKERS = 20000, 100, 4
# The capabilities of the shipped unit (systemd/rqbalance.service.in).
UNIT_CAPS = ["setpriv", "--bounding-set=-all,+sys_nice,+sys_resource,+bpf,+perfmon",
             "--inh-caps=-all", "--no-new-privs"]


def in_hidepid(argv):
    """argv where /proc is a proc of root's mounted hidepid=invisible (t_hidepid)."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t proc -o hidepid=invisible proc /proc && exec "$@"', "sh", *argv]


def plain_client(tmp):
    """A copy of rqctl for the forged /proc, built without a sanitizer: a sanitizer's
    runtime reads /proc/self/maps, which a proc of another pid namespace does not have
    for the caller (the client only carries the request; the daemon is under test)."""
    for build in (BUILD, "build"):
        path = os.path.join(ROOT, build, "rqctl")
        with open(path, "rb") as f:
            if b"__asan_init" not in f.read():
                prog = os.path.join(tmp, "rqctl-plain")
                shutil.copy(path, prog)
                os.chmod(prog, 0o755)
                return prog
    skip("no rqctl built without a sanitizer (make all) to run where /proc is forged")


def as_user(user, argv, forged, flood):
    cmd = ["runuser", "-u", user.name, "--", *NICE0, *argv]
    if forged:
        cmd = in_hidepid(["runuser", "-u", user.name, "--", *NICE0, PYTHON, flood, "forge",
                          "--", *argv])
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60)


def has_pid(text, pid):
    return re.search(rf"(?<![\d.]){pid}(?![\d.])", text) is not None


def shown(d, user, prog, bus, flood, pid, forged):
    """What user's list, get, explain and GetProcess tell it of pid: {key: shown}."""
    out = {}
    for k in ("list", "get", "explain", "dbus"):
        if k == "dbus":
            r = as_user(user, ["dbus-send", f"--bus={bus.address}", "--print-reply",
                               f"--dest={NAME}", PATH, f"{IFACE}.GetProcess",
                               f"uint32:{pid}"], forged, flood)
            check(r.returncode == 0 or "NoSuchTask" in r.stderr,
                  f"GetProcess({pid}) is answered or NoSuchTask ({r.stderr.strip()!r})")
            out[k] = r.returncode == 0
            continue
        r = as_user(user, [prog[forged], "-s", d.ctl, k,
                           *([] if k == "list" else ["-p", str(pid)])], forged, flood)
        check(r.returncode == 0 or "no such task" in r.stderr,
              f"rqctl {k} is answered or says no such task ({r.stderr.strip()!r})")
        out[k] = r.returncode == 0 and (k == "get" or has_pid(r.stdout, pid))
    return out


def rchar(pid):
    with open(f"/proc/{pid}/io") as f:
        return int(re.search(r"^rchar: (\d+)", f.read(), re.M).group(1))


def root_status(d):
    t0 = time.monotonic()
    r = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True, text=True,
                       timeout=120)
    check(r.returncode == 0, f"root's status is answered ({r.stderr.strip()!r})")
    return time.monotonic() - t0


def mount_flood(d, tmp, c, prog, bus, flood, cpid, where):
    """C's 20,000 mounts and 100 connections at each door; root's status meanwhile."""
    os.makedirs(os.path.join(tmp, f"mnt-{where}"))
    p = c.popen([PYTHON, flood, "mounts", str(MOUNTS), os.path.join(tmp, f"mnt-{where}"),
                 prog, d.ctl, bus.address, str(cpid), str(CONNS), str(WORKERS)],
                stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline().split()
    check(line == ["ready", str(MOUNTS)], f"{where}: C holds {MOUNTS} mounts ({line})")
    before = rchar(d.proc.pid)
    waits = [root_status(d) for _ in range(5)]
    try:
        out, _ = p.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        p.kill()
        out = ""
    grew = rchar(d.proc.pid) - before
    done = out.split()
    print(f"{where}: root's status waited {', '.join(f'{w * 1000:.0f}' for w in waits)} ms; "
          f"the daemon read {grew >> 10} KiB; C's flood: {out.strip()!r}")
    check(done[:3] == ["done", str(CONNS), str(CONNS)],
          f"{where}: each of C's {CONNS} ctl and {CONNS} bus connections is answered "
          f"({out.strip()!r})")
    check(grew < 2 * CONNS * 192 * 1024,
          f"{where}: the daemon read {grew >> 10} KiB for {2 * CONNS} connections: less than "
          f"192 KiB each, no mount table read whole")
    # Generous: a table read whole on the loop held root for seconds at a time.
    check(max(waits) < 5, f"{where}: root's status waited at most "
          f"{max(waits) * 1000:.0f} ms during the flood (each: "
          f"{', '.join(f'{w * 1000:.0f}' for w in waits)} ms)")


def run_case(tmp, bus, users, prog, flood, pids, idle, wrap, where):
    a, c = users
    with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", idle], wrap=wrap,
                env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d:
        d.wait_for(r"dbus: serving org\.rqbalance1 on the system bus")
        d.wait_for(r"running: sampler")
        for n in ("PA", "PB"):
            r = subprocess.run([RQCTL, "-s", d.ctl, "set", "-l", "5", "-p", str(pids[n])],
                               capture_output=True, text=True, timeout=30)
            check(r.returncode == 0, f"root gives {n} the value 5 ({r.stderr.strip()!r})")
        got = shown(d, a, prog, bus, flood, pids["PB"], False)
        check(all(got.values()), f"{where}: A in the host's namespace is shown PB: {got}")
        got = shown(d, a, prog, bus, flood, pids["PA"], True)
        check(all(got.values()), f"{where}: A with the forged /proc is shown its own PA: {got}")
        got = shown(d, a, prog, bus, flood, pids["PB"], True)
        check(not any(got.values()), f"{where}: A with a child namespace's proc over its "
              f"hidepid /proc is not shown B's PB: {got}")
        mount_flood(d, tmp, c, prog[False], bus, flood, pids["PC"], where)
        check(d.stop() == 0, "clean stop")


def userns_works(user, flood):
    r = user.run([PYTHON, flood, "forge", "--", "true"])
    return r.returncode == 0, r.stderr.decode(errors="replace").strip()


def test():
    require()
    for tool in ("unshare", "setpriv", "dbus-send"):
        if not shutil.which(tool):
            skip(f"no {tool}")
    with tmpdir() as tmp, SystemBus() as bus, User("rqbva") as a, User("rqbvb") as b, \
            User("rqbvc") as c:
        prog = user_rqctl(tmp)
        plain = plain_client(tmp)
        flood = os.path.join(tmp, "peer_flood.py")
        shutil.copy(os.path.join(HERE, "peer_flood.py"), flood)
        os.chmod(flood, 0o644)
        works, why = userns_works(a, flood)
        if not works:
            skip(f"an unprivileged user cannot make a user, mount and pid namespace of its "
                 f"own and mount a proc in it here ({why})")
        sleep = private_copy(tmp, "sleep")
        idle = os.path.join(tmp, "idle.replay")
        write_replay(idle, [([(0, 0, 0), (1, 0, 0)], [])])
        pids = {"PA": a.start(f"echo $$; exec {sleep} 300"),
                "PB": b.start(f"echo $$; exec {sleep} 300"),
                "PC": c.start(f"echo $$; exec {sleep} 300")}
        progs = {False: prog, True: plain}
        run_case(tmp, bus, (a, c), progs, flood, pids, idle, (), "root")
        run_case(tmp, bus, (a, c), progs, flood, pids, idle, UNIT_CAPS,
                 "the unit's capabilities")


main(test)
