"""rqctl and the D-Bus API show a user only what its own /proc would show it (issue
#26, finding 8), run as real unprivileged users the test creates. The host's /proc is
never remounted: each proc mounted with hidepid= here is a new instance, in a mount
namespace of its own (unshare -m, private propagation), which a proc mount since
Linux 5.8 is, with options of its own.

Root gives a value to a process of its own (R), of user A's (PA) and of user B's
(PB), and runs a program named gamemoded (G, which status reports as something else
that shapes scheduling); user A runs one too (GA). Then:
1. the daemon runs where /proc is mounted hidepid=invisible: A's rqctl list, get,
   explain and status, and its GetProcess over the bus, show PA and GA and nothing of
   PB, R or G (a get or explain of those is "no such task", as if they did not
   exist), while root still sees them all;
2. the daemon's /proc hides nothing, but A's does (A's rqctl and dbus-send run in a
   namespace whose /proc is hidepid=invisible): the same;
3. A's /proc is hidepid=invisible,gid=GID where A is in group GID: A sees everything,
   as it would in that /proc;
4. neither hides: A sees everything (nothing is hidden where /proc would not hide it).
Before, A saw every process in every case."""
import grp
import os
import re
import shutil
import subprocess

from rqb import (RQCTL, TOPO_2LLC, Daemon, check, main, private_copy, require, skip, tmpdir,
                 user_rqctl, write_replay)
from rqb_dbus import SystemBus
from rqb_user import NICE0, User

NAME, PATH, IFACE = "org.rqbalance1", "/org/rqbalance1", "org.rqbalance1.Latency"


def in_proc_ns(argv, opts):
    """argv run where /proc is a proc of its own mounted with opts, in a private mount
    namespace; the host's mounts are left as they are."""
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f'mount -t proc -o {opts} proc /proc && exec "$@"', "sh", *argv]


def as_user(user, argv, opts=None):
    """argv as user, where /proc is mounted with opts (None: the host's /proc)."""
    cmd = ["runuser", "-u", user.name, "--", *NICE0, *argv]
    p = subprocess.run(in_proc_ns(cmd, opts) if opts else cmd, capture_output=True, text=True,
                       timeout=60)
    return p


def host_proc():
    """The test's own /proc mount line's options (mount ID, device, super options)."""
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if fields[4] == "/proc":
                found = (fields[0], fields[2], fields[-1])
    return found


def has_pid(text, pid):
    return re.search(rf"(?<![\d.]){pid}(?![\d.])", text) is not None


def sees(d, user, prog, bus, opts, pid, keys):
    """What user's rqctl list, get, explain or status, or the bus's GetProcess (keys),
    tell it of pid, where its /proc is mounted with opts: {key: shown}. A refused get
    or GetProcess must say there is no such task, as for a pid that does not exist."""
    out = {}
    for k in keys:
        if k == "dbus":
            r = as_user(user, ["dbus-send", f"--bus={bus.address}", "--print-reply",
                               f"--dest={NAME}", PATH, f"{IFACE}.GetProcess", f"uint32:{pid}"],
                        opts)
            out[k] = r.returncode == 0
            check(r.returncode == 0 or "NoSuchTask" in r.stderr,
                  f"GetProcess({pid}) is answered or NoSuchTask ({r.stderr.strip()!r})")
            continue
        args = [] if k in ("list", "status") else ["-p", str(pid)]
        r = as_user(user, [prog, "-s", d.ctl, k, *args], opts)
        if k in ("list", "status"):
            check(r.returncode == 0, f"rqctl {k} is answered ({r.stderr.strip()!r})")
        elif r.returncode != 0:
            check("no such task" in r.stderr, f"rqctl {k} -p {pid} is answered or says no "
                  f"such task ({r.stderr.strip()!r})")
        out[k] = r.returncode == 0 and has_pid(r.stdout, pid) or (k == "get" and r.returncode == 0)
    return out


def expect(d, user, prog, bus, opts, pids, shown, where):
    for name, pid in pids.items():
        # status names the gamemoded processes; the other replies the processes with values.
        keys = ["status"] if name.startswith("G") else ["list", "get", "explain", "dbus"]
        got = sees(d, user, prog, bus, opts, pid, keys)
        want = name in shown
        check(all(got[k] == want for k in keys),
              f"{where}: {user.name} {'is' if want else 'is not'} shown {name} "
              f"({pid}): {got}")


def root_sees_all(d, pids):
    r = subprocess.run([RQCTL, "-s", d.ctl, "list"], capture_output=True, text=True,
                       timeout=30)
    s = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True, text=True,
                       timeout=30)
    check(all(has_pid(r.stdout, p) for n, p in pids.items() if not n.startswith("G")) and
          all(has_pid(s.stdout, p) for n, p in pids.items() if n.startswith("G")),
          "root is shown every process")


def give_values(d, pids):
    for n, p in pids.items():
        if not n.startswith("G"):
            r = subprocess.run([RQCTL, "-s", d.ctl, "set", "-l", "5", "-p", str(p)],
                               capture_output=True, text=True, timeout=30)
            check(r.returncode == 0, f"root gives {n} ({p}) the value 5 ({r.stderr.strip()!r})")


def run_case(tmp, bus, a, prog, pids, idle, wrap, opts, shown, where):
    with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", idle], wrap=wrap,
                env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d:
        d.wait_for(r"dbus: serving org\.rqbalance1 on the system bus")
        d.wait_for(r"running: sampler")
        give_values(d, pids)
        root_sees_all(d, pids)
        expect(d, a, prog, bus, opts, pids, shown, where)
        check(d.stop() == 0, "clean stop")


def test():
    require()
    if not shutil.which("unshare"):
        skip("no unshare: no mount namespace to mount a proc with hidepid in")
    p = subprocess.run(in_proc_ns(["grep", "-c", "hidepid=invisible", "/proc/self/mountinfo"],
                                  "hidepid=invisible"), capture_output=True, text=True)
    if p.returncode != 0:
        skip(f"cannot mount a proc of its own with hidepid=invisible in a private mount "
             f"namespace here ({p.stderr.strip() or p.stdout.strip()})")
    host = host_proc()
    with tmpdir() as tmp, SystemBus() as bus, User("rqbh") as a, User("rqby") as b:
        prog = user_rqctl(tmp)
        sleep = private_copy(tmp, "sleep")
        game = os.path.join(os.path.dirname(sleep), "gamemoded")
        shutil.copy2(sleep, game)
        idle = os.path.join(tmp, "idle.replay")
        write_replay(idle, [([(0, 0, 0), (1, 0, 0)], [])])
        with subprocess.Popen([sleep, "300"]) as r, subprocess.Popen([game, "300"]) as g:
            try:
                pids = {"R": r.pid, "G": g.pid,
                        "PA": a.start(f"echo $$; exec {sleep} 300"),
                        "GA": a.start(f"echo $$; exec {game} 300"),
                        "PB": b.start(f"echo $$; exec {sleep} 300")}
                mine = {"PA", "GA"}
                run_case(tmp, bus, a, prog, pids, idle, in_proc_ns([], "hidepid=invisible"),
                         None, mine, "the daemon's /proc hidepid=invisible")
                run_case(tmp, bus, a, prog, pids, idle, (), "hidepid=invisible", mine,
                         "A's /proc hidepid=invisible")
                gid = grp.getgrgid(a.gid).gr_gid
                run_case(tmp, bus, a, prog, pids, idle, (), f"hidepid=invisible,gid={gid}",
                         set(pids), f"A's /proc hidepid=invisible,gid={gid}, A in that group")
                run_case(tmp, bus, a, prog, pids, idle, (), None, set(pids),
                         "no /proc hides")
            finally:
                r.kill()
                g.kill()
    check(host_proc() == host, f"the host's /proc is as it was: {host}")


main(test)
