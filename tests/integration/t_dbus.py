"""The D-Bus interface end to end, on a private bus with a system bus's rules and the
shipped policy file (rqb_dbus), the real daemon and the real kernel: introspection
shows org.rqbalance1.Latency and com.system76.Scheduler with the documented
signatures; root sets, gets and resets a process, a thread and a cgroup, and the
task's nice follows; a user may raise its own process, and down to what RLIMIT_NICE
allows, and nothing more: a refused call is AccessDenied, says why, and changes
nothing. SetForeground gives the process in front [latency] foreground and gives the
one before it its own value back, unless someone changed that since; members of
[latency] foreground_group may put their own processes in front below RLIMIT_NICE,
nobody may put another user's. com.system76.Scheduler's SetForegroundProcess does the
same, and where another connection owns that name the daemon says so and serves
org.rqbalance1 all the same. Without a bus the daemon runs on after one "dbus:" line;
with [daemon] dbus = no it does not connect at all."""
import grp
import os
import re
import resource
import subprocess
import sys
import xml.etree.ElementTree as ET

from rqb import (RQCTL, TOPO_2LLC, Daemon, check, class_mount, fields, main, private_copy,
                 require, rqctl, skip, tmpdir, write_replay)
from rqb_dbus import NameOwner, SystemBus, call
from rqb_user import User

NAME, PATH, IFACE = "org.rqbalance1", "/org/rqbalance1", "org.rqbalance1.Latency"
S76, S76_PATH = "com.system76.Scheduler", "/com/system76/Scheduler"
DENIED = "org.freedesktop.DBus.Error.AccessDenied"
INVALID = "org.freedesktop.DBus.Error.InvalidArgs"
NO_TASK = "org.rqbalance1.Error.NoSuchTask"
NOT_MANAGED = "org.rqbalance1.Error.NotManaged"
FOREGROUND = -5

# name: (in signature, out signature), as the interface is documented.
METHODS = {
    "SetProcess": ("ui", "u"), "SetThread": ("ui", "u"), "SetCgroup": ("si", ""),
    "GetProcess": ("u", "is"), "GetThread": ("u", "is"), "GetCgroup": ("s", "is"),
    "ResetProcess": ("u", "u"), "ResetThread": ("u", "u"), "ResetCgroup": ("s", ""),
    "SetForeground": ("u", "i"), "RegisterGame": ("h", "i"), "UnregisterGame": ("h", ""),
}

# A process with one thread besides its main one, which prints its tid and waits.
THREAD = ("import threading\n"
          "e = threading.Event()\n"
          "def run():\n"
          "    print(threading.get_native_id(), flush=True)\n"
          "    e.wait()\n"
          "threading.Thread(target=run, daemon=True).start()\n"
          "e.wait()\n")

ARG = {"u": "uint32", "i": "int32", "s": "string"}


class Api:
    """org.rqbalance1 on one bus, called as root or as a user."""

    def __init__(self, bus):
        self.address = bus.address

    def __call__(self, method, *args, user=None):
        typed = [f"{ARG[t]}:{a}" for t, a in zip(METHODS[method][0], args)]
        return call(self.address, NAME, PATH, f"{IFACE}.{method}", *typed, user=user)

    def s76(self, pid, user=None):
        return call(self.address, S76, S76_PATH, f"{S76}.SetForegroundProcess",
                    f"uint32:{pid}", user=user)


def nice(pid):
    return os.getpriority(os.PRIO_PROCESS, pid)


def nice_limit(pid, n):
    """Sets another process's RLIMIT_NICE to n; False, saying so, where this root may
    not raise it (no CAP_SYS_RESOURCE, as in some containers)."""
    p = subprocess.run(["prlimit", "--pid", str(pid), f"--nice={n}:{n}"], capture_output=True,
                       text=True)
    if p.returncode != 0:
        print(f"(prlimit --nice={n} refused here: {p.stderr.strip()}; that case was not run)")
    return p.returncode == 0



def got(d, pid):
    """(value, source) of rqctl get -p, or None where it is not managed."""
    p = rqctl(d, "get", "-p", str(pid))
    if p.returncode != 0:
        check("not managed" in p.stderr, f"rqctl get -p {pid}: not managed ({p.stderr!r})")
        return None
    f = fields(p.stdout)
    return int(f["value"]), f["source"]


def ok(r, what, values=None):
    check(r.ok and (values is None or r.values == values), f"{what}: {r!r}")


def refused(r, what, error=DENIED):
    check(not r.ok and r.error == error, f"{what}: {error} ({r!r})")
    if error == DENIED:
        check(r.message.startswith("permission denied") and len(r.message) > 19,
              f"and the message says why ({r.message!r})")


def signatures(xml, iface):
    """{method: (in, out)} and {property: (type, access)} of iface in introspection XML."""
    node = ET.fromstring(xml)
    it = next((i for i in node.findall("interface") if i.get("name") == iface), None)
    if it is None:
        return None, None
    methods = {}
    for m in it.findall("method"):
        args = m.findall("arg")
        methods[m.get("name")] = (
            "".join(a.get("type") for a in args if a.get("direction", "in") == "in"),
            "".join(a.get("type") for a in args if a.get("direction") == "out"))
    props = {p.get("name"): (p.get("type"), p.get("access")) for p in it.findall("property")}
    return methods, props


def introspect(bus, dest, path, user=None):
    r = call(bus.address, dest, path, "org.freedesktop.DBus.Introspectable.Introspect",
             user=user)
    ok(r, f"{path} may be introspected{' by a user' if user else ''}")
    return r.out[r.out.index('string "') + 8:r.out.rindex('"')]


def introspection(bus, user):
    methods, props = signatures(introspect(bus, NAME, PATH, user), IFACE)
    check(methods == METHODS, f"{IFACE} has every method with its signature: {methods}")
    check(props == {"ForegroundValue": ("i", "read")},
          f"and the read-only property ForegroundValue i: {props}")
    r = call(bus.address, NAME, PATH, "org.freedesktop.DBus.Properties.Get",
             f"string:{IFACE}", "string:ForegroundValue", user=user)
    ok(r, "ForegroundValue is [latency] foreground", [FOREGROUND])
    methods, _ = signatures(introspect(bus, S76, S76_PATH, user), S76)
    check(methods == {"SetForegroundProcess": ("u", "")},
          f"{S76_PATH} has SetForegroundProcess(u): {methods}")


def root_process(api, d, pid):
    ok(api("SetProcess", pid, 7), "root: SetProcess(pid, 7) gives one task", [1])
    check(nice(pid) == 7, f"the process's nice is 7 ({nice(pid)})")
    ok(api("GetProcess", pid), "GetProcess says 7, from dbus uid 0", [7, "dbus uid 0"])
    check(got(d, pid) == (7, "dbus uid 0"), "rqctl get says the same")
    ok(api("SetProcess", pid, -3), "root may lower it", [1])
    check(nice(pid) == -3, f"nice -3 ({nice(pid)})")
    ok(api("ResetProcess", pid), "ResetProcess gives one task back", [1])
    check(nice(pid) == 0 and got(d, pid) is None, "its nice is 0 again, and it is not managed")
    refused(api("GetProcess", pid), "GetProcess of it now", NOT_MANAGED)
    refused(api("ResetProcess", pid), "ResetProcess of it now", NOT_MANAGED)
    gone = int(open("/proc/sys/kernel/pid_max").read())
    refused(api("SetProcess", gone, 5), "SetProcess of a pid that does not exist", NO_TASK)
    refused(api("GetThread", gone), "GetThread of a tid that does not exist", NO_TASK)
    for v in (20, -21):
        refused(api("SetProcess", pid, v), f"SetProcess to {v}", INVALID)
    check(nice(pid) == 0 and got(d, pid) is None, "after the refusals it is untouched")


def root_thread(api, d):
    p = subprocess.Popen([sys.executable, "-c", THREAD], stdout=subprocess.PIPE, text=True)
    try:
        tid = int(p.stdout.readline())
        refused(api("SetProcess", tid, 4), "a thread given as a process", INVALID)
        check(nice(tid) == 0, "changes nothing")
        ok(api("SetThread", tid, 4), "SetThread(tid, 4) gives one task", [1])
        check(nice(tid) == 4 and nice(p.pid) == 0,
              f"the thread's nice is 4, its process's still 0 ({nice(tid)}, {nice(p.pid)})")
        ok(api("GetThread", tid), "GetThread says 4", [4, "dbus uid 0"])
        ok(api("ResetThread", tid), "ResetThread", [1])
        check(nice(tid) == 0, "gives the thread its nice back")
        refused(api("GetThread", tid), "then GetThread", NOT_MANAGED)
    finally:
        p.kill()
        p.wait()



def root_cgroup(api, d, user):
    refused(api("SetCgroup", "relative/path", 5), "SetCgroup of a relative path", INVALID)
    mount = class_mount(d)
    if not mount:
        print("(no cpu hierarchy in use: the cgroup methods were not run)")
        return
    rel = f"/rqbd-{os.getpid()}"
    os.mkdir(mount + rel)
    try:
        wfile = next(os.path.join(mount + rel, f) for f in ("cpu.weight", "cpu.shares")
                     if os.path.exists(os.path.join(mount + rel, f)))
        weight = open(wfile).read()
        refused(api("SetCgroup", rel, 5, user=user), "a user's SetCgroup of root's cgroup")
        check(open(wfile).read() == weight, "leaves its weight")
        ok(api("SetCgroup", rel, 5), "root: SetCgroup(path, 5)", [])
        check(open(wfile).read() != weight, f"changes its weight ({weight.strip()} before)")
        ok(api("GetCgroup", rel), "GetCgroup says 5", [5, "dbus uid 0"])
        ok(api("ResetCgroup", rel), "ResetCgroup", [])
        check(open(wfile).read() == weight, "gives the weight back")
        refused(api("GetCgroup", rel), "then GetCgroup", NOT_MANAGED)
    finally:
        os.rmdir(mount + rel)


def user_rights(api, d, user, upid, rpid):
    ok(api("SetProcess", upid, 10, user=user), "a user may raise its own process to 10", [1])
    check(nice(upid) == 10, f"its nice is 10 ({nice(upid)})")
    ok(api("GetProcess", upid, user=user), "and read it back",
       [10, f"dbus uid {user.uid}"])
    refused(api("SetProcess", upid, 8, user=user), "lowering it, with RLIMIT_NICE 0")
    check(nice(upid) == 10 and got(d, upid) == (10, f"dbus uid {user.uid}"),
          "leaves nice and value at 10")
    low = 10
    if nice_limit(upid, 15):
        ok(api("SetProcess", upid, 5, user=user), "with RLIMIT_NICE 15 it may go down to 5",
           [1])
        check(nice(upid) == 5, f"nice 5 ({nice(upid)})")
        refused(api("SetProcess", upid, 4, user=user), "but not to 4")
        low = 5
    refused(api("ResetProcess", upid, user=user), f"nor reset it (from {low} to 0)")
    check(nice(upid) == low and got(d, upid) == (low, f"dbus uid {user.uid}"),
          f"which leave it at {low}")
    refused(api("SetProcess", rpid, 10, user=user), "raising root's process")
    refused(api("SetThread", rpid, 10, user=user), "raising root's thread")
    refused(api("ResetProcess", rpid, user=user), "resetting root's process")
    check(nice(rpid) == 0 and got(d, rpid) is None, "root's process is untouched")
    ok(api("ResetProcess", upid), "root may reset the user's process", [1])
    check(nice(upid) == 0, "which gives it nice 0 back")
    if low != 10:
        nice_limit(upid, 0)


def foreground(api, d, a, b, c):
    check(rqctl(d, "set", "-l", "3", "-p", str(a)).returncode == 0, "rqctl set -l 3 on A")
    check(rqctl(d, "set", "-l", "-10", "-p", str(c)).returncode == 0, "rqctl set -l -10 on C")
    ok(api("SetForeground", a), "SetForeground(A)", [FOREGROUND])
    check(nice(a) == FOREGROUND and got(d, a) == (FOREGROUND, "foreground uid 0"),
          f"A is in front at {FOREGROUND}: {got(d, a)}, nice {nice(a)}")
    ok(api("SetForeground", b), "SetForeground(B)", [FOREGROUND])
    check(nice(b) == FOREGROUND and got(d, b) == (FOREGROUND, "foreground uid 0"),
          f"B is in front: {got(d, b)}")
    check(got(d, a) == (3, "ctl uid 0") and nice(a) == 3,
          f"A has its own value back, 3 from ctl uid 0: {got(d, a)}, nice {nice(a)}")
    ok(api("SetForeground", 0), "SetForeground(0)")
    check(got(d, b) is None and nice(b) == 0, f"B had none, and has none again: {got(d, b)}")
    check(got(d, a) == (3, "ctl uid 0"), "A is left as it was")

    ok(api("SetForeground", a), "SetForeground(A) again", [FOREGROUND])
    check(rqctl(d, "set", "-l", "8", "-p", str(a)).returncode == 0,
          "someone sets A to 8 meanwhile")
    ok(api("SetForeground", b), "SetForeground(B)", [FOREGROUND])
    check(got(d, a) == (8, "ctl uid 0") and nice(a) == 8,
          f"A is left as that person set it: {got(d, a)}, nice {nice(a)}")
    ok(api("SetForeground", c), "SetForeground(C), which has -10")
    check(got(d, c) == (-10, "ctl uid 0") and nice(c) == -10,
          f"C keeps its more favoured -10: {got(d, c)}")
    check(got(d, b) is None and nice(b) == 0, "and B has none again")
    ok(api("SetForeground", 0), "SetForeground(0)")
    check(got(d, c) == (-10, "ctl uid 0"), "C keeps -10: the foreground never gave it")
    for pid in (a, c):
        check(rqctl(d, "reset", "-p", str(pid)).returncode == 0, f"reset {pid}")


def foreground_group(api, d, member, outsider, mp, np, rpid):
    ok(api("SetForeground", mp, user=member),
       "a member of foreground_group puts its own process in front", [FOREGROUND])
    check(nice(mp) == FOREGROUND and got(d, mp) == (FOREGROUND, f"foreground uid {member.uid}"),
          f"at {FOREGROUND}, below what its RLIMIT_NICE 0 allows: {got(d, mp)}")
    for who, user, pid in (("the member", member, np), ("the member", member, rpid),
                           ("the outsider", outsider, mp)):
        before = nice(pid), got(d, pid)
        refused(api("SetForeground", pid, user=user),
                f"{who} may not put another user's process {pid} in front")
        check((nice(pid), got(d, pid)) == before, "which is left as it was")
    refused(api("SetForeground", np, user=outsider),
            "a user outside the group may not put its own process below RLIMIT_NICE")
    check(nice(np) == 0 and got(d, np) is None, "which is left as it was")
    refused(api.s76(np, user=outsider), f"nor through {S76}")
    check(nice(np) == 0 and got(d, np) is None, "which is left as it was")
    if nice_limit(np, 25):
        ok(api("SetForeground", np, user=outsider),
           "with RLIMIT_NICE 25 (down to -5) the outsider may", [FOREGROUND])
        check(nice(np) == FOREGROUND, f"nice {FOREGROUND}")
        ok(api("SetForeground", 0, user=outsider), "and SetForeground(0)")
        check(nice(np) == 0 and got(d, np) is None, "gives it none again")
        nice_limit(np, 0)
    check(nice(mp) == FOREGROUND, "one foreground a uid: the member's is still in front")
    ok(api("SetForeground", 0, user=member), "the member's SetForeground(0)")
    check(nice(mp) == 0 and got(d, mp) is None, "gives its process none again")
    ok(api.s76(mp, user=member), f"{S76}.SetForegroundProcess by the member", [])
    check(nice(mp) == FOREGROUND and got(d, mp) == (FOREGROUND, f"foreground uid {member.uid}"),
          "puts its process in front the same way")
    ok(api("SetForeground", 0, user=member), "and SetForeground(0) takes it out again")
    check(nice(mp) == 0, "nice 0")


def system76_root(api, d, a):
    ok(api.s76(a), f"root: {S76}.SetForegroundProcess(A)", [])
    check(nice(a) == FOREGROUND and got(d, a) == (FOREGROUND, "foreground uid 0"),
          f"A is in front: {got(d, a)}")
    ok(api("SetForeground", 0), "the same foreground as SetForeground's: (0) ends it")
    check(got(d, a) is None and nice(a) == 0, "A has none again")


def s76_taken_over(bus, d):
    """system76-scheduler, started after rqbalanced, asks for its name with replacement:
    it gets it, and the daemon says so and lets it be."""
    check(S76 in fields(rqctl(d, "status").stdout).get("dbus", ""),
          f"status names {S76} while the daemon owns it")
    flags = NameOwner.DO_NOT_QUEUE | NameOwner.REPLACE_EXISTING
    with NameOwner(bus.address, S76, flags) as owner:
        check(owner.granted, f"a later service that asks to replace the owner gets {S76}")
        d.wait_for(rf"dbus: {re.escape(S76)} was taken over by another service")
        st = fields(rqctl(d, "status").stdout).get("dbus", "")
        check(S76 not in st and NAME in st, f"status no longer names it ({st!r})")


def main_daemon(tmp, bus, group, member, outsider, sleep):
    api = Api(bus)
    idle = os.path.join(tmp, "idle.replay")
    write_replay(idle, [([(0, 0, 0), (1, 0, 0)], [])])
    mp = member.start(f"echo $$; exec {sleep} 300")
    np = outsider.start(f"echo $$; exec {sleep} 300")
    with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", idle],
                conf=f"[latency]\nforeground_group = {group}\n",
                env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d, \
            subprocess.Popen([sleep, "300"]) as a, subprocess.Popen([sleep, "300"]) as b, \
            subprocess.Popen([sleep, "300"]) as c:
        try:
            d.wait_for(r"dbus: serving org\.rqbalance1 on the system bus")
            d.wait_for(r"running: sampler")
            introspection(bus, None)
            introspection(bus, outsider)
            root_process(api, d, a.pid)
            root_thread(api, d)
            root_cgroup(api, d, outsider)
            user_rights(api, d, outsider, np, a.pid)
            foreground(api, d, a.pid, b.pid, c.pid)
            foreground_group(api, d, member, outsider, mp, np, a.pid)
            system76_root(api, d, a.pid)
            s76_taken_over(bus, d)
            check(re.search(rf"dbus: uid {outsider.uid} gave process {np} value 10", d.text()),
                  "the log says who gave what over the bus")
            check(re.search(rf"dbus: SetProcess on process \d+ refused to uid {outsider.uid}\b"
                            r"[^:]*: \S", d.text()),
                  "and who was refused, and why")
            check(re.search(rf"dbus: SetForeground on process \d+ refused to uid {member.uid}\b"
                            r"[^:]*: \S", d.text()),
                  "a refused foreground call too")
            check(d.stop() == 0, "clean stop")
        finally:
            for p in (a, b, c):
                p.kill()


def s76_taken(tmp, bus, user):
    api = Api(bus)
    with NameOwner(bus.address, S76) as owner, subprocess.Popen(["sleep", "300"]) as p:
        check(owner.granted, f"another connection of root's owns {S76} first")
        # While rqbalanced owns both names on one connection, the bus applies
        # org.rqbalance1's open rule to either (a rule's send_destination matches any
        # name the receiver owns); the narrow rule counts where the name is another's.
        r = call(bus.address, S76, S76_PATH, f"{S76}.SetForeground", "uint32:1", user=user)
        check(not r.ok and r.error == DENIED and "Rejected send message" in r.message,
              f"the policy lets a user call nothing else of another's {S76} ({r!r})")
        try:
            with Daemon(tmp, env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d:
                d.wait_for(r"dbus: serving org\.rqbalance1")
                d.wait_for(rf"dbus: {re.escape(S76)} is owned by another service")
                ok(api("SetProcess", p.pid, 6), "org.rqbalance1 works all the same", [1])
                check(nice(p.pid) == 6, "nice 6")
                r = call(bus.address, "org.freedesktop.DBus", "/org/freedesktop/DBus",
                         "org.freedesktop.DBus.GetNameOwner", f"string:{S76}")
                check(r.ok and r.values and r.values[0] != owner_of(bus, NAME),
                      f"{S76} stays the other connection's ({r!r})")
                check(d.stop() == 0, "clean stop")
            check(nice(p.pid) == 0, "the stop gives nice 0 back")
        finally:
            p.kill()


def owner_of(bus, name):
    r = call(bus.address, "org.freedesktop.DBus", "/org/freedesktop/DBus",
             "org.freedesktop.DBus.GetNameOwner", f"string:{name}")
    return r.values[0] if r.ok and r.values else None


def dbus_lines(d):
    return [l for l in d.text().splitlines() if "dbus:" in l]


def no_bus(tmp):
    missing = os.path.join(tmp, "no-such-bus-socket")
    with Daemon(tmp, env={"DBUS_SYSTEM_BUS_ADDRESS": f"unix:path={missing}"}) as d, \
            subprocess.Popen(["sleep", "300"]) as p:
        try:
            d.wait_for("running: sampler")
            d.wait_for("dbus: ")
            d.sync()
            lines = dbus_lines(d)
            check(len(lines) == 1 and "serving" not in lines[0],
                  f"without a bus the daemon logs one dbus: line: {lines}")
            check(re.search(r"No such file|not found|connect", lines[0], re.I),
                  "which says why")
            r = rqctl(d, "set", "-l", "4", "-p", str(p.pid))
            check(d.alive() and r.returncode == 0 and nice(p.pid) == 4,
                  "and runs on: rqctl set works")
            check(d.stop() == 0, "clean stop")
        finally:
            p.kill()


def dbus_off(tmp, bus):
    with Daemon(tmp, conf="[daemon]\ndbus = no\n",
                env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d:
        d.wait_for("running: sampler")
        d.sync()
        check(dbus_lines(d) == [], f"with dbus = no, no dbus: line at all: {dbus_lines(d)}")
        check(owner_of(bus, NAME) is None, f"and nobody owns {NAME} on the bus")
        check(d.stop() == 0, "clean stop")


def test():
    require()
    if not os.path.exists(RQCTL):
        skip(f"{RQCTL} is not built")
    for prog in ("groupadd", "usermod", "prlimit"):
        if subprocess.run(["sh", "-c", f"command -v {prog}"], capture_output=True).returncode:
            skip(f"{prog} missing")
    resource.setrlimit(resource.RLIMIT_NICE, (0, 0))  # and none inherited from here
    group = f"rqbfg{os.getpid() % 100000}"
    with tmpdir() as tmp, SystemBus() as bus, User("rqbm") as member, \
            User("rqbo") as outsider:
        os.chmod(tmp, 0o755)
        # A sleep of the test's own, which the users may run and no rule names.
        sleep = private_copy(tmp, "sleep")
        subprocess.run(["groupadd", group], check=True)
        try:
            # Before any process of the member's starts: runuser takes its groups then.
            subprocess.run(["usermod", "-a", "-G", group, member.name], check=True)
            check(member.name in grp.getgrnam(group).gr_mem, f"{member.name} is in {group}")
            main_daemon(tmp, bus, group, member, outsider, sleep)
            s76_taken(tmp, bus, outsider)
        finally:
            subprocess.run(["groupdel", group], capture_output=True, check=False)
        no_bus(tmp)
        dbus_off(tmp, bus)


main(test)
