"""The second review's kind 3: no value rqbalance set outlives its management, whatever
forks around a give-back. Each path gives a value back while the task it is taken from
forks as fast as it can, and afterwards every descendant either has its nice (and
class cgroup) back or is managed (rqctl get shows its value):

  rule exec   a rule boosts a launcher (an exe of the test's own, run as root); its
              children exec a shell that forks at once: the exec ends the rule's hold
              and gives the value back, and the shell's child's fork event is read
              after (finding 6: 12 of 20 grandchildren kept nice -10 and the class);
  reset       root gives a forking process -10, then rqctl reset;
  reload      a rule boosts a forking process; a reload drops the rule;
  foreground  a member of foreground_group (a real user the test creates) puts its
              process in front over D-Bus, from a connection it keeps open (no exec
              wakes the daemon), lets it fork 300 children in front, more than the
              256 give-backs the daemon remembers, and puts another in front while it
              forks on (issue 50, finding 1: the give-back of the children pushed out
              the front's own, and the children whose forks were read after kept
              nice -5 and the class: the case had let the storm make 10 children);
  stop        the daemon stops while a process with a value forks.

A child in one of the daemon's class cgroups counts as one that kept the value too.
Waits are for events (rqctl sync), the storms bounded by count. Arguments name the
cases to run (rule_exec reset reload foreground stop); all without."""
import os
import signal
import subprocess
import sys

from rqb import (Daemon, check, cpu_cgroup, main, nice_of, private_copy, require, rqctl, skip,
                 tmpdir, wait_until)
from rqb_buscall import Caller
from rqb_dbus import SystemBus
from rqb_user import User

VALUE = -10
FOREGROUND = -5  # [latency] foreground's default
CHILDREN = 20

# The launcher: waits for a line, then starts CHILDREN children that exec the shell,
# each forking at once, and prints each child's pid.
LAUNCHER = """
import os, sys
sys.stdin.readline()
for _ in range({n}):
    pid = os.fork()
    if pid == 0:
        os.execv({sh!r}, ["sh", "-c", "sleep 120 & sleep 120"])
    print(pid, flush=True)
sys.stdin.readline()
"""

# Forks a child every 2 ms (at most {most}) until a line on stdin, then waits for its
# end; prints its pid first, and "forking" after child number {ready}.
FORKER = """
import os, sys, threading, time
print(os.getpid(), flush=True)
stop = threading.Event()
threading.Thread(target=lambda: (sys.stdin.readline(), stop.set()), daemon=True).start()
kids = 0
while not stop.is_set() and kids < {most}:
    if os.fork() == 0:
        time.sleep(120)
        os._exit(0)
    kids += 1
    if kids == {ready}:
        print("forking", flush=True)
    stop.wait(0.002)
time.sleep(120)
"""


def descendants(pid):
    """Every process below pid (through /proc/PID/task/*/children)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        try:
            for t in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{t}/children") as f:
                    for c in f.read().split():
                        out.append(int(c))
                        todo.append(int(c))
        except OSError:
            pass
    return out


def managed(d, pid):
    return rqctl(d, "get", "-p", str(pid)).returncode == 0


def in_class(pid):
    """Whether the process sits in one of the daemon's class cgroups."""
    try:
        return "/rqbalance-lat-" in (cpu_cgroup(pid) or "")
    except OSError:
        return False


def leaked(d, pids, value=VALUE):
    """The processes of pids that have rqbalance's nice, or sit in its class cgroup, but
    are not managed."""
    return [p for p in pids if (nice_of(p) == value or in_class(p)) and not managed(d, p)]


def say_log(d, bad, creators):
    """On a leak, the daemon's log lines that name a leaked task or its creator."""
    if not bad:
        return
    parents = set()
    for b in bad[:3]:
        try:
            with open(f"/proc/{b}/stat") as f:
                parents.add(int(f.read().rsplit(")", 1)[1].split()[1]))
        except OSError:
            pass
    names = {str(x) for x in [*bad[:3], *parents]}
    for line in d.text().splitlines():
        if any(n in line.replace("(", " ").replace(",", " ").split() for n in names):
            print("   ", line)


def kill_tree(p, pids):
    for q in pids:
        try:
            os.kill(q, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.kill()
    p.wait()


def rule_exec(tmp):
    py, sh = private_copy(tmp, "python3"), private_copy(tmp, "sh")
    conf = f"[rule launcher]\nlatency_nice = {VALUE}\nexe = {py}\nuid = 0\n"
    with Daemon(tmp, conf=conf) as d:
        d.wait_for("ctl: serving")
        p = subprocess.Popen([py, "-c", LAUNCHER.format(n=CHILDREN, sh=sh)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        d.sync()
        check(nice_of(p.pid) == VALUE, "rule exec: the rule gives the launcher its value")
        p.stdin.write("go\n")
        p.stdin.flush()
        kids = [int(p.stdout.readline()) for _ in range(CHILDREN)]
        # Each shell has forked its sleep once it shows two children of its own.
        wait_until(lambda: all(len(descendants(k)) >= 1 for k in kids), 60)
        d.sync()
        tree = descendants(p.pid)
        bad = leaked(d, tree)
        say_log(d, bad, kids)
        check(not bad, f"rule exec: none of the {len(tree)} processes below the launcher "
              f"keeps nice {VALUE} or its class unmanaged ({len(bad)} do: {bad[:5]})")
        kill_tree(p, tree)
        check(d.stop() == 0, "rule exec: clean stop")


def forker(d, ready=10, most=400, user=None):
    argv = ["python3", "-c", FORKER.format(ready=ready, most=most)]
    kw = dict(stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    p = user.popen(["/usr/bin/python3", *argv[1:]], **kw) if user else subprocess.Popen(argv, **kw)
    return p, int(p.stdout.readline())


def end_storm(p):
    p.stdin.write("stop\n")
    p.stdin.flush()


def after(d, what, p, pid, value=VALUE):
    d.sync()
    tree = descendants(pid)
    check(len(tree) >= 10, f"{what}: the storm made its children ({len(tree)})")
    bad = leaked(d, tree, value)
    say_log(d, bad, [pid])
    check(not bad, f"{what}: none of the {len(tree)} children keeps nice {value} or its "
          f"class unmanaged ({len(bad)} do: {bad[:5]})")
    check(nice_of(pid) in (0, None), f"{what}: the process has its nice back")
    return tree


def reset(tmp):
    with Daemon(tmp) as d:
        d.wait_for("ctl: serving")
        p, pid = forker(d)
        check(rqctl(d, "set", "-l", str(VALUE), "-p", str(pid)).returncode == 0,
              "reset: root gives the forking process a value")
        p.stdout.readline()
        check(rqctl(d, "reset", "-p", str(pid)).returncode == 0,
              "reset: and resets it while it forks")
        end_storm(p)
        tree = after(d, "reset", p, pid)
        kill_tree(p, tree)
        check(d.stop() == 0, "reset: clean stop")


def reload(tmp):
    py = private_copy(tmp, "python3")
    with Daemon(tmp, conf=f"[rule forker]\nlatency_nice = {VALUE}\nexe = {py}\nuid = 0\n") as d:
        d.wait_for("ctl: serving")
        p = subprocess.Popen([py, "-c", FORKER.format(ready=10, most=400)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        pid = int(p.stdout.readline())
        d.sync()
        check(nice_of(pid) == VALUE, "reload: the rule gives the forking process its value")
        p.stdout.readline()
        with open(d.conf) as f:
            text = f.read()
        with open(d.conf, "w") as f:
            f.write(text[:text.index("[rule forker]")])
        check(rqctl(d, "reload").returncode == 0, "reload: the rule is gone")
        end_storm(p)
        tree = after(d, "reload", p, pid)
        kill_tree(p, tree)
        check(d.stop() == 0, "reload: clean stop")


def foreground(tmp):
    group = f"rqbgs{os.getpid() % 100000}"
    with SystemBus() as bus, User("rqbgs") as member:
        os.chmod(tmp, 0o755)
        subprocess.run(["groupadd", group], check=True)
        try:
            subprocess.run(["usermod", "-a", "-G", group, member.name], check=True)
            member_front(tmp, bus, group, member)
        finally:
            subprocess.run(["groupdel", group], capture_output=True, check=False)


def member_front(tmp, bus, group, member):
    with Daemon(tmp, conf=f"[latency]\nforeground_group = {group}\n",
                env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d:
        d.wait_for("dbus: serving")
        fg = FOREGROUND
        caller = Caller(member, bus.address)
        p, pid = forker(d, ready=300, most=450, user=member)
        other = member.start("echo $$; exec sleep 120")
        r = caller.ask("SetForeground", pid)
        check(r == ["ok", str(fg)] and nice_of(pid) == fg,
              f"foreground: the member puts its forking process in front ({r})")
        p.stdout.readline()
        r = caller.ask("SetForeground", other)
        check(r[0] == "ok", f"foreground: and another in its place while it forks ({r})")
        end_storm(p)
        tree = after(d, "foreground", p, pid, fg)
        check(len(tree) >= 300, f"foreground: {len(tree)} children, 300 of them in front")
        kill_tree(p, tree)
        check(d.stop() == 0, "foreground: clean stop")


def stop(tmp):
    with Daemon(tmp) as d:
        d.wait_for("ctl: serving")
        p, pid = forker(d)
        check(rqctl(d, "set", "-l", str(VALUE), "-p", str(pid)).returncode == 0,
              "stop: root gives the forking process a value")
        p.stdout.readline()
        check(d.stop() == 0, "stop: the daemon stops while it forks")
        end_storm(p)
        tree = descendants(pid)
        check(len(tree) >= 10, f"stop: the storm made its children ({len(tree)})")
        bad = [q for q in tree + [pid] if nice_of(q) == VALUE]
        check(not bad, f"stop: none of the {len(tree)} children keeps nice {VALUE} "
              f"({len(bad)} do: {bad[:5]})")
        kill_tree(p, tree)


def test():
    require()
    if not os.access("/usr/bin/python3", os.X_OK):
        skip("no /usr/bin/python3")
    cases = {c.__name__: c for c in (rule_exec, reset, reload, foreground, stop)}
    # One case by name (python3 t_giveback_storm.py reset), or all.
    for name in sys.argv[1:] or cases:
        with tmpdir() as tmp:
            cases[name](tmp)


main(test)
