"""The ctl socket and the D-Bus API are two doors into one request layer, and the same
limits hold at both (issue #26): the callers served at once, 16 at most of one user,
and 8 kept for root and ctl_group. Run as real unprivileged users the test creates,
on a private bus with a system bus's rules and the shipped policy (rqb_dbus).

Three users each keep 20 ctl connections open (reopened as soon as the daemon closes
one), and one of them also floods the bus, 64 connections with 8 ResetProcess calls
in flight on each; then a fourth user holds 20 more, which is more than the 56 slots
all users but root may share. Meanwhile:
- root's rqctl status and its calls over the bus are all answered (its reserve, at
  both doors: before, the bus's own pool of waiting calls, which one user filled,
  refused root's calls);
- no user holds more than its 16 (three users hold 48 at most, and four 56);
- and the share is one for both doors: while the flooder holds its 16 connections,
  its calls over the bus are refused with LimitsExceeded, saying it is over its share.
"""
import os
import subprocess
import sys

from rqb import (RQCTL, TOPO_2LLC, Daemon, check, main, private_copy, require, tmpdir,
                 write_replay)
from rqb_dbus import SystemBus, call
from rqb_user import User

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
NAME, PATH, IFACE = "org.rqbalance1", "/org/rqbalance1", "org.rqbalance1.Latency"


def field(text, key):
    return int(next(l.split()[1] for l in text.splitlines() if l.startswith(key + " ")))


def copy_helper(tmp, name):
    dst = os.path.join(tmp, name)
    with open(os.path.join(HERE, name)) as f, open(dst, "w") as g:
        g.write(f.read())
    os.chmod(dst, 0o644)
    return dst


def test():
    require()
    with tmpdir() as tmp, SystemBus() as bus, User("rqbq") as u1, User("rqbr") as u2, \
            User("rqbu") as u3, User("rqbv") as u4:
        os.chmod(tmp, 0o755)
        users = [u1, u2, u3, u4]
        sleep = private_copy(tmp, "sleep")
        hog = copy_helper(tmp, "ctl_hog.py")
        flood = copy_helper(tmp, "bus_flood.py")
        copy_helper(tmp, "rqb_buscall.py")  # which bus_flood.py imports
        idle = os.path.join(tmp, "idle.replay")
        write_replay(idle, [([(0, 0, 0), (1, 0, 0)], [])])
        fpid = u1.start(f"echo $$; exec {sleep} 300")
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", idle],
                    env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d, \
                subprocess.Popen([sleep, "300"]) as mine:
            try:
                d.wait_for(r"dbus: serving org\.rqbalance1 on the system bus")
                d.wait_for(r"running: sampler")
                holds = []

                def hold(u):
                    h = u.popen([PYTHON, hog, d.ctl, "hold", "20"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)
                    check(h.stdout.readline().strip() == "started",
                          f"{u.name} keeps 20 ctl connections open")
                    holds.append(h)

                def root_answered(users_now):
                    failed, most = [], 0
                    for i in range(20):
                        r = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True,
                                           text=True, timeout=30)
                        if r.returncode != 0:
                            failed.append(r.stderr.strip())
                        else:
                            most = max(most, field(r.stdout, "ctl_connections"))
                        r = call(bus.address, NAME, PATH, f"{IFACE}.SetProcess",
                                 f"uint32:{mine.pid}", f"int32:{i % 19}")
                        if not r.ok or r.values != [1]:
                            failed.append(repr(r))
                    check(not failed, f"with {users_now} users holding, root's 20 rqctl status "
                          f"and 20 bus calls are all answered ({len(failed)} failed: "
                          f"{failed[:3]})")
                    bound = min(users_now * 16, 64 - 8) + 1
                    check(most <= bound, f"and the users hold at most {bound - 1} ctl "
                          f"connections ({most} at most, root's one with them)")

                for u in users[:3]:
                    hold(u)
                fl = u1.popen([PYTHON, flood, bus.address, "64", "8", "ResetProcess",
                               str(fpid)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True)
                check(fl.stdout.readline().strip() == "started",
                      f"{u1.name} also keeps 8 calls in flight on each of 64 bus connections")
                root_answered(3)
                hold(users[3])
                root_answered(4)
                fl.stdin.close()
                counts = next(l for l in fl.stdout if l.startswith("answers ")).split()
                fl.wait()
                stats = dict(zip(counts[::2], map(int, counts[1::2])))
                print(f"the bus flood: {stats}")
                check(stats.get("limits", 0) > 64 * 8,
                      "the flooder's bus calls were refused while it held its share of "
                      "ctl connections")
                check(d.alive(), "the daemon runs on")
                text = d.text()
                check("dbus: ResetProcess refused to uid %d: over its share" % u1.uid in text,
                      "the log says the bus calls were over the user's share")
                for h in holds:
                    h.stdin.close()
                    h.wait()
                check(d.stop() == 0, "clean stop")
            finally:
                mine.kill()


main(test)
