"""The third review's finding 3 and its kind, "shares per uid, where one person holds many
uids": a real unprivileged user maps 8 of its subordinate uids (/etc/subuid, as useradd
gives every user 65,536) into a user namespace of its own, as newuidmap does, and from
each of them keeps 20 ctl connections open, reopened as soon as the daemon closes one.
Counted per uid that was 160 connections, more than the 56 all users but root share,
and another user's rqctl status was refused 13 and 8 times in 20. Counted per person:

- the other user's 20 rqctl status and 20 calls over the bus, and root's, are all
  answered;
- the eight uids hold 16 connections between them, one user's share;
- the same share holds at the D-Bus door: calls from one of those uids over a private
  bus with a system bus's rules are refused while the person holds its 16, and the log
  names the person whose share they count in."""
import os
import subprocess
import sys

from rqb import (RQCTL, TOPO_2LLC, Daemon, check, main, private_copy, require, skip, tmpdir,
                 user_rqctl, write_replay)
from rqb_dbus import SystemBus, call
from rqb_user import User, subids

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3"
NAME, PATH, IFACE = "org.rqbalance1", "/org/rqbalance1", "org.rqbalance1.Latency"
NUIDS = 8

# Run in the user namespace, as its root (the user): a ctl_hog.py "hold" from each of
# uids 1..NUIDS, or a bus flood from uid 3; "started" once all are.
NS_HOLD = ("import subprocess, sys\n"
           "hog, sock, n = sys.argv[1], sys.argv[2], int(sys.argv[3])\n"
           "ps = [subprocess.Popen(['setpriv', f'--reuid={k}', f'--regid={k}',\n"
           "                        '--clear-groups', sys.executable, hog, sock, 'hold', '20'],\n"
           "                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)\n"
           "      for k in range(1, n + 1)]\n"
           "for p in ps:\n"
           "    assert p.stdout.readline().strip() == 'started'\n"
           "print('started', flush=True)\n"
           "sys.stdin.read()\n"
           "for p in ps:\n"
           "    p.stdin.close()\n"
           "    p.wait()\n")


def copy_helper(tmp, name, text=None):
    dst = os.path.join(tmp, name)
    with open(dst, "w") as g:
        if text is None:
            with open(os.path.join(HERE, name)) as f:
                text = f.read()
        g.write(text)
    os.chmod(dst, 0o644)
    return dst


def ranges(user):
    """The user's first subordinate uid and gid: useradd's, or given here."""
    uids, gids = subids("/etc/subuid", user.name), subids("/etc/subgid", user.name)
    if not uids or not gids:
        first = max([100000] + [end("/etc/subuid"), end("/etc/subgid")])
        subprocess.run(["usermod", "--add-subuids", f"{first}-{first + 65535}",
                        "--add-subgids", f"{first}-{first + 65535}", user.name], check=True)
        uids, gids = subids("/etc/subuid", user.name), subids("/etc/subgid", user.name)
    return uids[0][0], gids[0][0]


def end(path):
    """Past the last subordinate id path gives anyone."""
    top = 0
    try:
        with open(path) as f:
            for line in f:
                parts = line.strip().split(":")
                if len(parts) == 3 and parts[1].isdigit() and parts[2].isdigit():
                    top = max(top, int(parts[1]) + int(parts[2]))
    except FileNotFoundError:
        pass
    return top


def in_namespace(user, first_uid, first_gid, argv, **kw):
    """argv as the user, root of a user namespace of its own that maps NUIDS of its
    subordinate uids and gids as 1..NUIDS (newuidmap, newgidmap)."""
    return user.popen(["unshare", "--user", "--map-root-user",
                       f"--map-users={first_uid},1,{NUIDS}",
                       f"--map-groups={first_gid},1,{NUIDS}", "--", *argv], **kw)


def field(text, key):
    return int(next(l.split()[1] for l in text.splitlines() if l.startswith(key + " ")))


def test():
    require()
    for prog in ("unshare", "newuidmap", "newgidmap", "setpriv", "usermod"):
        if not any(os.access(os.path.join(d, prog), os.X_OK)
                   for d in os.environ.get("PATH", "/usr/bin").split(":") + ["/usr/sbin"]):
            skip(f"{prog} missing (uidmap and util-linux, in .ci/deps test)")
    with tmpdir() as tmp, SystemBus() as bus, User("rqbsa") as person, User("rqbsb") as other:
        os.chmod(tmp, 0o755)
        first_uid, first_gid = ranges(person)
        hog = copy_helper(tmp, "ctl_hog.py")
        flood = copy_helper(tmp, "bus_flood.py")
        copy_helper(tmp, "rqb_buscall.py")  # which bus_flood.py imports
        ns_hold = copy_helper(tmp, "ns_hold.py", NS_HOLD)
        prog = user_rqctl(tmp)
        sleep = private_copy(tmp, "sleep")
        idle = os.path.join(tmp, "idle.replay")
        write_replay(idle, [([(0, 0, 0), (1, 0, 0)], [])])
        opid = other.start(f"echo $$; exec {sleep} 300")
        with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", idle],
                    env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d:
            d.wait_for(r"dbus: serving org\.rqbalance1 on the system bus")
            h = in_namespace(person, first_uid, first_gid, [PYTHON, ns_hold, hog, d.ctl,
                                                             str(NUIDS)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            check(h.stdout.readline().strip() == "started",
                  f"{person.name}'s {NUIDS} subordinate uids each keep 20 ctl connections open")
            failed, most = [], 0
            for i in range(20):
                r = subprocess.run(["runuser", "-u", other.name, "--", prog, "-s", d.ctl,
                                    "status"], capture_output=True, text=True, timeout=30)
                if r.returncode != 0:
                    failed.append(r.stderr.strip())
                else:
                    most = max(most, field(r.stdout, "ctl_connections"))
                r = call(bus.address, NAME, PATH, f"{IFACE}.SetProcess", f"uint32:{opid}",
                         f"int32:{min(1 + i, 19)}", user=other)
                if not r.ok:
                    failed.append(repr(r))
            check(not failed, f"{other.name}'s 20 rqctl status and 20 bus calls are all "
                  f"answered ({len(failed)} failed: {failed[:3]})")
            check(most <= 16 + 1, f"the {NUIDS} uids hold one person's 16 ctl connections "
                  f"({most} at most, {other.name}'s one with them)")
            r = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True,
                               text=True, timeout=30)
            check(r.returncode == 0, "root's status is answered")
            # The bus door: dbus-daemon disconnects a caller whose uid has no passwd
            # entry at its first call a policy judges (as subordinate uids have none), so
            # the caller here is a user root made with one of the person's subordinate
            # uids: one uid of its range, at the other door.
            with User("rqbsc", uid=first_uid + 2) as sub:
                spid = sub.start(f"echo $$; exec {sleep} 300")
                fl = sub.popen([PYTHON, flood, bus.address, "4", "2", "ResetProcess",
                                str(spid)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
                check(fl.stdout.readline().strip() == "started",
                      f"{sub.name} (uid {first_uid + 2}, of {person.name}'s subordinate "
                      f"uids) calls over the bus")
                check(fl.stdout.readline().strip() == "answered", "and is answered")
                d.wait_for(rf"refused to uid {first_uid + 2}: over its share")
                fl.stdin.close()
                stats = next(l for l in fl.stdout if l.startswith("answers ")).split()
                fl.wait()
                # The holders run as the same uids: gone before the user is removed.
                h.stdin.close()
                h.wait()
            stats = dict(zip(stats[::2], map(int, stats[1::2])))
            print(f"the bus calls: {stats}")
            check(stats.get("limits", 0) > 0 and stats.get("ok", 0) == 0,
                  "its bus calls are refused, the log saying it is over its share: the "
                  "person holds its 16")
            check(d.alive(), "the daemon runs on")
            check(d.stop() == 0, "clean stop")


main(test)
