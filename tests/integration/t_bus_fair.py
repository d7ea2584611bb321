"""One user cannot lock everyone out of the D-Bus API (issue #26, finding 7), run as
real unprivileged users the test creates, on a private bus with a system bus's rules
and the shipped policy (rqb_dbus): one user keeps 64 connections with 8 ResetProcess
calls in flight on each, sending each again as soon as it is answered. Before, the
calls waiting for their callers' credentials shared one pool of 64, which that flood
kept full: root's calls failed with LimitsExceeded (24 of 40 in the review). Now a
connection's credentials are asked for once, its calls wait in a pool one user cannot
fill, and the callers' slots have a share for each user and a reserve for root:
meanwhile 40 calls of root's and 20 of another user's are all answered as they
would be without the flood."""
import os
import subprocess
import sys

from rqb import TOPO_2LLC, Daemon, check, main, private_copy, require, tmpdir, write_replay
from rqb_dbus import SystemBus, call
from rqb_user import User

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
NAME, PATH, IFACE = "org.rqbalance1", "/org/rqbalance1", "org.rqbalance1.Latency"


def api(bus, method, *args, user=None):
    return call(bus.address, NAME, PATH, f"{IFACE}.{method}", *args, user=user)


def test():
    require()
    with tmpdir() as tmp, SystemBus() as bus, User("rqbb") as flooder, \
            User("rqbc") as other:
        os.chmod(tmp, 0o755)
        sleep = private_copy(tmp, "sleep")
        for name in ("bus_flood.py", "rqb_buscall.py"):  # the first imports the second
            with open(os.path.join(HERE, name)) as f, open(os.path.join(tmp, name), "w") as g:
                g.write(f.read())
            os.chmod(g.name, 0o644)
        flood = os.path.join(tmp, "bus_flood.py")
        idle = os.path.join(tmp, "idle.replay")
        write_replay(idle, [([(0, 0, 0), (1, 0, 0)], [])])
        fpid = flooder.start(f"echo $$; exec {sleep} 300")
        opid = other.start(f"echo $$; exec {sleep} 300")
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", idle],
                    env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d, \
                subprocess.Popen([sleep, "300"]) as mine:
            try:
                d.wait_for(r"dbus: serving org\.rqbalance1 on the system bus")
                d.wait_for(r"running: sampler")
                r = api(bus, "SetProcess", f"uint32:{opid}", "int32:10", user=other)
                check(r.ok, f"before the flood, the other user raises its process ({r!r})")
                r = api(bus, "SetProcess", f"uint32:{mine.pid}", "int32:10")
                check(r.ok, f"and root its own ({r!r})")

                hog = flooder.popen([PYTHON, flood, bus.address, "64", "8", "ResetProcess",
                                     str(fpid)], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, text=True)
                check(hog.stdout.readline().strip() == "started",
                      "the flooder keeps 8 calls in flight on each of 64 connections")
                failed, value = [], 10
                for i in range(40):
                    if i % 2 == 0:
                        r = api(bus, "SetProcess", f"uint32:{mine.pid}", f"int32:{i % 19}")
                        want = [1]
                        value = i % 19 if r.ok else value
                    else:
                        r = api(bus, "GetProcess", f"uint32:{mine.pid}")
                        want = [value, "dbus uid 0"]
                    if not r.ok or r.values != want:
                        failed.append(r)
                check(not failed, f"root's 40 calls are all answered meanwhile "
                      f"({len(failed)} failed: {failed[:3]})")
                failed = []
                for _ in range(20):
                    r = api(bus, "GetProcess", f"uint32:{opid}", user=other)
                    if not r.ok or r.values != [10, f"dbus uid {other.uid}"]:
                        failed.append(r)
                check(not failed, f"and the other user's 20 ({len(failed)} failed: "
                      f"{failed[:3]})")
                hog.stdin.close()
                counts = next(l for l in hog.stdout if l.startswith("answers ")).split()
                hog.wait()
                stats = dict(zip(counts[::2], map(int, counts[1::2])))
                print(f"the flood: {stats}")
                check(stats.get("answers", 0) > 0, "the flooder's own calls were answered too")
                check(d.alive(), "the daemon runs on")
                r = api(bus, "ResetProcess", f"uint32:{mine.pid}")
                check(r.ok, f"root resets its process after the flood ({r!r})")
                check(d.stop() == 0, "clean stop")
            finally:
                mine.kill()


main(test)
