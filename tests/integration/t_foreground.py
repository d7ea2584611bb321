"""The foreground favour ends where it should, and lands on no other process (issue 50):
a member of [latency] foreground_group (RLIMIT_NICE 0, a real user the test creates)
calls SetForeground from a D-Bus connection of its own, which execs nothing between
calls.

  pid_reuse    (finding 2) root gives user B's process V -15; V exits; a new process of
               user A's takes V's number before the daemon has read the exit (the
               daemon is held stopped meanwhile, as a descheduled one would be); A calls
               SetForeground(V), then SetForeground(0). Neither that process nor an
               older one of A's that held the foreground value may end at -15: a record
               found by number is used only with its start time.
  fork_exit    (finding 4) a wrapper put in front forks a child and exits, five times;
               then X is put in front and raised from -5 to -4, and SetForeground(0):
               no child keeps -5, X does not keep -4. The grant ends for everything
               that holds it, front gone or not, and a change to a favoured process is
               judged as if it did not hold the favour.
  chain        the kind behind finding 4, for root and the member alike: a front that
               forks a child, which starts a thread and forks a grandchild; the next
               front gives all of them back.
  front_exit   a front that forks children (one with a thread and a grandchild) and
               exits on its own: its exit ends the grant, and all of them are given
               back with no further call (the favour does not outlive the front). The
               end of the caller's connection alone ends nothing: the grant is the
               person's (a call by dbus-send is a connection of its own).
  lost_fork    the daemon is held stopped while the front starts and ends threads
               until the proc connector's socket overflows (its drop count in
               /proc/net/netlink), then forks children, and grandchildren whose
               parent exits (no front's descendants), whose fork events are lost;
               SetForeground(0) is sent, the daemon resumed: the children are found
               by state (the rescan after the loss adopts no child of a front given
               back) and none keeps the value.

Finding 1 (a front that forks hundreds of children) is t_giveback_storm.py's
foreground case. Arguments name the cases to run; all without."""
import os
import signal
import subprocess
import sys

from rqb import (Daemon, check, main, managed, nice_of, require, rqctl, skip, spawn_at,
                 tids_of, tmpdir, uid_of, wait_until)
from rqb_buscall import Caller, root_call
from rqb_user import User

FG = -5  # [latency] foreground's default
DENIED = "org.freedesktop.DBus.Error.AccessDenied"

# A process of the user's that, on each line read, forks a child that sleeps (with
# "thread": which starts a thread, and with "grand": which forks a grandchild too),
# prints the pids it made, and exits.
WRAPPER = """
import os, sys, threading, time
print(os.getpid(), flush=True)
how = sys.stdin.readline().split()
r, w = os.pipe()
if os.fork() == 0:
    os.close(r)
    pids = [os.getpid()]
    if "thread" in how:
        threading.Thread(target=time.sleep, args=(300,), daemon=True).start()
    if "grand" in how:
        g = os.fork()
        if g == 0:
            time.sleep(300)
            os._exit(0)
        pids.append(g)
    os.write(w, " ".join(map(str, pids)).encode())
    os.close(w)
    time.sleep(300)
    os._exit(0)
os.close(w)
print(os.read(r, 100).decode(), flush=True)
if "stay" in how:
    sys.stdin.read()
"""

# A front of the user's that, on "churn N", starts and joins N threads; on "kids N",
# forks N children that sleep; on "orphans N", forks a child that forks N children
# that sleep and exits (they go to another parent); it answers each line with one
# line, and stays.
FRONT = """
import os, sys, threading, time


def sleepers(n):
    kids = []
    for _ in range(n):
        k = os.fork()
        if k == 0:
            time.sleep(300)
            os._exit(0)
        kids.append(k)
    return " ".join(map(str, kids))


print(os.getpid(), flush=True)
for line in sys.stdin:
    what, n = line.split()
    if what == "churn":
        for _ in range(int(n)):
            t = threading.Thread(target=int)
            t.start()
            t.join()
        print("done", flush=True)
    elif what == "orphans":
        r, w = os.pipe()
        c = os.fork()
        if c == 0:
            os.write(w, sleepers(int(n)).encode())
            os._exit(0)
        os.close(w)
        print(os.read(r, 1000).decode(), flush=True)
        os.waitpid(c, 0)
    else:
        print(sleepers(int(n)), flush=True)
"""


# ---- the processes


def wrapper(user):
    """A wrapper of the user's (WRAPPER): (its Popen, its pid)."""
    p = user.popen(["/usr/bin/python3", "-c", WRAPPER], stdin=subprocess.PIPE,
                   stdout=subprocess.PIPE, text=True)
    return p, int(p.stdout.readline())


def go(p, pid, how=""):
    """Lets the wrapper fork and exit (with "stay": stay until its stdin closes): the
    pids it made, once it is gone."""
    p.stdin.write(how + "\n")
    p.stdin.flush()
    made = [int(x) for x in p.stdout.readline().split()]
    if "stay" not in how:
        wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 60)
    return made


def kill(pids):
    """The orphans a wrapper left (its session is gone, so the user's end misses them)."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# ---- the cases


def pid_reuse(d, bus, a, b):
    ca = Caller(a, bus.address)
    # The daemon may read the exit before the call (a tick on resuming): three rounds.
    for n in range(1, 4):
        reuse_round(d, ca, a, b, f"round {n}")
    ca.p.stdin.close()


def reuse_round(d, ca, a, b, what):
    # An older process of A's that holds the foreground value: the child of the
    # front (which stays: a front's exit would end the grant).
    wp, w = wrapper(a)
    check(ca.ask("SetForeground", w) == ["ok", str(FG)], f"{what}: A puts a wrapper in front")
    older = go(wp, w, "stay")
    d.sync()
    check(len(older) == 1 and nice_of(older[0]) == FG,
          f"{what}: its child {older} holds the foreground value")
    v = b.start("echo $$; exec sleep 300")
    d.sync()
    check(rqctl(d, "set", "-l", "-15", "-p", str(v)).returncode == 0 and nice_of(v) == -15,
          f"{what}: root gives B's process V -15")
    # Held stopped: V's exit and the new process's fork stay unread until after the call.
    os.kill(d.proc.pid, signal.SIGSTOP)
    try:
        os.kill(v, signal.SIGKILL)
        wait_until(lambda: not os.path.exists(f"/proc/{v}"), 30)
        new = spawn_at(v, a)
        wait_until(lambda: uid_of(new) == a.uid, 30)
        check(new == v and uid_of(v) == a.uid, f"{what}: A's new process has V's number {v}")
        check(ca.ask("send", "SetForeground", v) == ["sent"], f"{what}: A calls SetForeground(V)")
    finally:
        os.kill(d.proc.pid, signal.SIGCONT)
    r = ca.ask("wait")
    check(r[0] == "ok", f"{what}: SetForeground(V) answered: {r}")
    r = ca.ask("SetForeground", 0)
    check(r[0] == "ok", f"{what}: and SetForeground(0): {r}")
    d.sync()
    check(nice_of(v) != -15 and managed(d, v) != (-15, "ctl uid 0"),
          f"{what}: A's process at V's number does not get B's -15: nice {nice_of(v)}, "
          f"{managed(d, v)}")
    check(nice_of(v) == 0, f"{what}: it has nice 0 again ({nice_of(v)})")
    check(nice_of(older[0]) not in (-15, FG),
          f"{what}: A's older process neither gets -15 nor keeps {FG}: nice "
          f"{nice_of(older[0])}, {managed(d, older[0])}")
    os.kill(v, signal.SIGKILL)
    os.waitpid(v, 0)
    os.kill(older[0], signal.SIGKILL)
    wp.stdin.close()
    wp.wait()


def fork_exit(d, bus, a):
    ca = Caller(a, bus.address)
    kids = []
    for i in range(5):
        wp, w = wrapper(a)
        check(ca.ask("SetForeground", w) == ["ok", str(FG)], f"wrapper {i + 1} is put in front")
        kids += go(wp, w)
        d.sync()
        check(nice_of(kids[-1]) == 0 and managed(d, kids[-1]) is None,
              f"its exit ends the grant: its child {kids[-1]} is given back: nice "
              f"{nice_of(kids[-1])}, {managed(d, kids[-1])}")
    x = a.start("echo $$; exec sleep 300")
    check(ca.ask("SetForeground", x) == ["ok", str(FG)], "then X is put in front")
    d.sync()
    check(nice_of(x) == FG, f"X at {FG}")
    r = ca.ask("SetProcess", x, FG + 1)
    check(r == ["error", DENIED] or r[0] == "ok", f"A raises X to {FG + 1}: {r}")
    check(r[0] != "ok" or nice_of(x) == FG + 1, "which, where allowed, it has")
    check(ca.ask("SetForeground", 0)[0] == "ok", "SetForeground(0)")
    d.sync()
    left = [k for k in kids if nice_of(k) == FG]
    check(not left, f"no child of a wrapper keeps {FG}: {left} of {kids}")
    check(nice_of(x) not in (FG, FG + 1),
          f"X keeps neither {FG} nor {FG + 1}, below A's limit: nice {nice_of(x)}, {managed(d, x)}")
    kill(kids)
    ca.p.stdin.close()


def chain(d, bus, a):
    ca = Caller(a, bus.address)
    for who, ask in (("root", lambda *w: root_call(bus.address, *w)), (a.name, ca.ask)):
        wp, w = wrapper(a)
        check(ask("SetForeground", w) == ["ok", str(FG)], f"{who} puts a wrapper in front")
        made = go(wp, w, "thread grand stay")
        d.sync()
        tasks = [t for p in made for t in tids_of(p)]
        check(len(made) == 2 and len(tasks) == 3 and all(nice_of(t) == FG for t in tasks),
              f"{who}: its child, the child's thread and its grandchild hold {FG}: "
              f"{[(t, nice_of(t)) for t in tasks]}")
        other = a.start("echo $$; exec sleep 300")
        check(ask("SetForeground", other) == ["ok", str(FG)], f"{who} puts another in front")
        d.sync()
        check(all(nice_of(t) == 0 for t in tasks) and all(managed(d, p) is None for p in made),
              f"{who}: all of them are given back: {[(t, nice_of(t)) for t in tasks]}")
        check(ask("SetForeground", 0)[0] == "ok" and nice_of(other) == 0,
              f"{who}: SetForeground(0) gives the other back")
        wp.stdin.close()
        wp.wait()
        kill(made)
    ca.p.stdin.close()


def front_exit(d, bus, a):
    first = Caller(a, bus.address)
    wp, w = wrapper(a)
    check(first.ask("SetForeground", w) == ["ok", str(FG)], "A puts a wrapper in front")
    # The grant is the caller's person's, not its connection's (dbus-send makes one a
    # call): the connection's end leaves it.
    first.p.stdin.close()
    first.p.wait()
    other = a.start("echo $$; exec sleep 300")
    d.sync()
    check(nice_of(w) == FG and managed(d, w) == (FG, f"foreground uid {a.uid}"),
          f"the caller's connection is gone: the front keeps the grant: {managed(d, w)}")
    ca = Caller(a, bus.address)
    # It makes a child with a thread and a grandchild, then exits: nothing more is called.
    made = go(wp, w, "thread grand")
    try:
        front_exit_made(d, ca, made, other)
    finally:
        kill(made)
    ca.p.stdin.close()


def front_exit_made(d, ca, made, other):
    d.sync()
    tasks = [t for p in made for t in tids_of(p)]
    check(len(made) == 2 and len(tasks) == 3, f"its child, thread and grandchild: {tasks}")
    check(wait_until(lambda: all(nice_of(t) == 0 for t in tasks), 30),
          f"the front's exit ends the grant: all it made are given back: "
          f"{[(t, nice_of(t)) for t in tasks]}")
    check(all(managed(d, p) is None for p in made), f"and none is managed: "
                                               f"{[managed(d, p) for p in made]}")
    check(nice_of(other) == 0, "a process of A's never in front is left as it was")
    # The next call puts another in front, with nothing of the last to give back.
    check(ca.ask("SetForeground", other) == ["ok", str(FG)] and nice_of(other) == FG,
          "A puts another in front")
    check(ca.ask("SetForeground", 0)[0] == "ok" and nice_of(other) == 0, "and none")


def connector_drops(pid):
    """The drop count of process pid's proc connector socket (NETLINK_CONNECTOR, 11)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    with open("/proc/net/netlink") as f:
        for line in f.readlines()[1:]:
            x = line.split()
            if x[1] == "11" and x[9] in inodes:
                return int(x[8])
    return None


def lost_fork(d, bus, a):
    ca = Caller(a, bus.address)
    front = a.popen(["/usr/bin/python3", "-c", FRONT], stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE, text=True)
    f = int(front.stdout.readline())

    def ask(line):
        front.stdin.write(line + "\n")
        front.stdin.flush()
        return front.stdout.readline().split()

    check(ca.ask("SetForeground", f) == ["ok", str(FG)], "A puts a front in front")
    d.sync()
    check(nice_of(f) == FG, f"the front has {FG}")
    before = connector_drops(d.proc.pid)
    check(before is not None, "the daemon's proc connector socket is listed")
    os.kill(d.proc.pid, signal.SIGSTOP)
    try:
        for _ in range(40):
            ask("churn 2000")
            if connector_drops(d.proc.pid) > before:
                break
        check(connector_drops(d.proc.pid) > before, "the connector's socket overflowed")
        # The socket is full and nothing reads it: these forks' events are lost. The
        # orphans' parent exits: they are no front's descendants, only in its class.
        kids = [int(k) for k in ask("kids 20")]
        orphans = [int(k) for k in ask("orphans 5")]
        check(len(kids) == 20 and all(nice_of(k) == FG for k in kids),
              f"its 20 children inherited {FG}")
        check(len(orphans) == 5 and all(nice_of(k) == FG for k in orphans),
              f"and 5 grandchildren whose parent exited: {orphans}")
        kids += orphans
        check(ca.ask("send", "SetForeground", 0) == ["sent"], "A calls SetForeground(0)")
    finally:
        os.kill(d.proc.pid, signal.SIGCONT)
    check(ca.ask("wait")[0] == "ok", "SetForeground(0) answered")
    d.sync()
    check(nice_of(f) == 0, f"the front is given back: {nice_of(f)}")
    left = [(k, nice_of(k), managed(d, k)) for k in kids if nice_of(k) == FG or managed(d, k)]
    check(not left, f"no child whose fork was lost keeps {FG}: {left}")
    for k in kids:
        os.kill(k, signal.SIGKILL)
    front.stdin.close()
    front.wait()
    ca.p.stdin.close()


def test():
    require()
    for prog in ("groupadd", "usermod", "dbus-daemon"):
        if subprocess.run(["sh", "-c", f"command -v {prog}"], capture_output=True).returncode:
            skip(f"{prog} missing")
    from rqb_dbus import SystemBus
    cases = {"pid_reuse": pid_reuse, "fork_exit": fork_exit, "chain": chain,
             "front_exit": front_exit, "lost_fork": lost_fork}
    # lost_fork overflows the proc connector's socket: the connector, not BPF.
    extra = {"lost_fork": "events = connector\n"}
    group = f"rqbfg{os.getpid() % 100000}"
    with tmpdir() as tmp, SystemBus() as bus, User("rqbfa") as a, User("rqbfb") as b:
        os.chmod(tmp, 0o755)
        subprocess.run(["groupadd", group], check=True)
        try:
            subprocess.run(["usermod", "-a", "-G", group, a.name], check=True)
            for name in sys.argv[1:] or cases:
                with Daemon(tmp, conf=f"[latency]\nforeground_group = {group}\n"
                                      f"{extra.get(name, '')}",
                            env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d:
                    d.wait_for(r"dbus: serving org\.rqbalance1")
                    fn = cases[name]
                    fn(d, bus, a, b) if name == "pid_reuse" else fn(d, bus, a)
                    check(d.stop() == 0, f"{name}: clean stop")
        finally:
            subprocess.run(["groupdel", group], capture_output=True, check=False)


main(test)
