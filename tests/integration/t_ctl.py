"""The ctl socket and rqctl: status as text and JSON (with the kinds of core on a fake
hybrid part, and none on a part of one kind), reload and its refusal with the
reasons, malformed messages (short, long, wrong magic or version, unknown or reply
type) each answered with an error or a close while the daemon keeps serving, more
connections than it takes at once, and who may reload: root, or ctl_group, not any
user (a real unprivileged user the test creates)."""
import grp
import json
import os
import shutil
import socket
import subprocess

from rqb import (BUILD, CTL_HDR, ROOT, TOPO_2LLC, Daemon, check, ctl_raw, main, require, tmpdir,
                 user_rqctl)
from rqb_user import User

RQCTL = os.path.join(ROOT, BUILD, "rqctl")
MAGIC, VERSION, STATUS, RELOAD, SYNC, OK, ERR = 0x43425152, 1, 1, 2, 8, 100, 101
HDR = CTL_HDR


def rqctl(sock, *args):
    return subprocess.run([RQCTL, "-s", sock, *args], capture_output=True, text=True,
                          timeout=30)


def malformed(sock):
    cases = {
        "a short header": HDR.pack(MAGIC, VERSION, STATUS, 0, 1)[:7],
        "a wrong magic": HDR.pack(MAGIC ^ 1, VERSION, STATUS, 0, 1),
        "a wrong version": HDR.pack(MAGIC, VERSION + 1, STATUS, 0, 1),
        "an unknown type": HDR.pack(MAGIC, VERSION, 77, 0, 1),
        "a reply sent as a request": HDR.pack(MAGIC, VERSION, OK, 0, 1),
        "a request too long": HDR.pack(MAGIC, VERSION, STATUS, 4097, 1) + b"x" * 100,
    }
    for what, data in cases.items():
        r = ctl_raw(sock, data)
        if what == "a short header":
            check(r is None, f"{what}: no answer until the rest comes (then a timeout)")
        else:
            check(r is not None and r[0] == ERR, f"{what}: an error reply")
        check(rqctl(sock, "status").returncode == 0, f"after {what} the daemon still serves")


def replies(sock, data, n):
    """Sends bytes on one connection and reads n replies: [(type, seq, payload)]."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(sock)
    s.sendall(data)
    got, out = b"", []
    while len(out) < n:
        chunk = s.recv(65536)
        if not chunk:
            break
        got += chunk
        while len(got) >= HDR.size and len(got) >= HDR.size + HDR.unpack(got[:HDR.size])[3]:
            _, _, typ, length, seq = HDR.unpack(got[:HDR.size])
            out.append((typ, seq, got[HDR.size:HDR.size + length].decode()))
            got = got[HDR.size + length:]
    s.close()
    return out


def ticks_of(text):
    return int(text.split("ticks ", 1)[1].split()[0])


def sync(sock):
    """rqctl sync answers after a tick that began after it; a request sent behind it on
    the same connection is answered after it, in order."""
    before = ticks_of(rqctl(sock, "status").stdout)
    p = rqctl(sock, "sync")
    check(p.returncode == 0 and ticks_of(p.stdout) > before,
          f"rqctl sync answers once a later tick has ended ({before} -> {p.stdout.strip()})")
    r = replies(sock, HDR.pack(MAGIC, VERSION, SYNC, 0, 1) + HDR.pack(MAGIC, VERSION, STATUS, 0, 2), 2)
    check([(t, q) for t, q, _ in r] == [(OK, 1), (OK, 2)],
          f"a status sent behind a sync is answered after it ({[(t, q) for t, q, _ in r]})")
    check(ticks_of(r[1][2]) >= ticks_of(r[0][2]), "and sees the tick the sync waited for")


def flood(sock):
    """80 connections at once, each with a status request sent as it connects: the
    daemon serves at most 64 at a time and closes the others unanswered; once the
    clients have let go of those it took, it serves again."""
    held = []
    for i in range(80):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(sock)  # blocking: waits while the listen backlog is full
        s.settimeout(30)
        try:
            s.sendall(HDR.pack(MAGIC, VERSION, STATUS, 0, i + 1))
        except (BrokenPipeError, ConnectionResetError):
            pass  # already closed unanswered
        held.append(s)
    answered, taken = 0, []
    for s in held:
        try:
            got = s.recv(HDR.size)
        except (BrokenPipeError, ConnectionResetError):
            got = b""
        if got:
            answered += 1
            taken.append(s)
    # A connection the daemon took is answered, unless it was held past its 2 s limit
    # before its request was read (a stalled machine): then it is closed unanswered too.
    print(f"80 connections: {answered} answered, {80 - answered} closed unanswered")
    check(0 < answered <= 64, f"at most 64 connections are served at once ({answered})")
    # Each one it took ends when the client does: the daemon reads the end, closes its
    # side, and the client reads that. Then all of its connection slots are free again.
    for s in taken:
        s.shutdown(socket.SHUT_WR)
        while True:
            try:
                if not s.recv(65536):
                    break
            except ConnectionResetError:
                break
    for s in held:
        s.close()
    check(rqctl(sock, "status").returncode == 0,
          "after 80 connections at once (64 taken) it still serves")


TOPO_HYBRID = os.path.join(ROOT, "tests", "data", "topo-hybrid-1p1e.xml")


def kinds(tmp):
    """A kind line each on a part with two kinds of core, most efficient first, and a
    "kinds" array in JSON; none on a part with one kind (the daemon's default fake
    topology). The LLC lines end in the cache's size either way."""
    with Daemon(tmp, ["--dry-run", "--topology", TOPO_HYBRID],
                conf="[daemon]\nsampler = proc\n") as d:
        d.wait_for(r"running: sampler")
        text = rqctl(d.ctl, "status").stdout
        check("\nkind 0 cpus 1 efficiency 0 type IntelAtom max_mhz 4300\n"
              "kind 1 cpus 0 efficiency 1 type IntelCore max_mhz 5800\n" in text,
              "status has a line for each kind of core")
        check("\nfast_cpus 0\n" in text, "and the CPUs fast_cores would keep for latency work")
        check("\nllc 0 cpus 0-1 runnable " in text and " cache_kb 8192\n" in text,
              "and the LLC's cache size")
        j = json.loads(rqctl(d.ctl, "--json", "status").stdout)
        check(j.get("kinds") == [
            {"kind": 0, "cpus": "1", "efficiency": 0, "type": "IntelAtom", "max_mhz": 4300},
            {"kind": 1, "cpus": "0", "efficiency": 1, "type": "IntelCore", "max_mhz": 5800}],
            f"rqctl --json status groups them as \"kinds\" ({j.get('kinds')})")
        check(j["llcs"][0]["cache_kb"] == 8192, "and the LLC's size as a number")
        check(d.stop() == 0, "clean stop")
    with Daemon(tmp, ["--dry-run"], conf="[daemon]\nsampler = proc\n") as d:
        d.wait_for(r"running: sampler")
        text = rqctl(d.ctl, "status").stdout
        check("\nllc 0 cpus 0-1 runnable " in text and "\nkind " not in text,
              "one kind of core (topo-1llc.xml): no kind line")
        check("kinds" not in json.loads(rqctl(d.ctl, "--json", "status").stdout),
              "and no \"kinds\" in JSON")
        check(d.stop() == 0, "clean stop")


def test():
    require()
    if not os.path.exists(RQCTL):
        from rqb import skip
        skip(f"{RQCTL} is not built")
    with tmpdir() as tmp:
        os.chmod(tmp, 0o755)  # the unprivileged user must reach the socket
        with Daemon(tmp, ["--dry-run", "--topology", TOPO_2LLC],
                    conf="[daemon]\nsampler = proc\n") as d:
            d.wait_for(r"running: sampler")
            p = rqctl(d.ctl, "status")
            check(p.returncode == 0 and "sampler proc\n" in p.stdout, "rqctl status")
            check("llc 1 cpus 1 runnable " in p.stdout, "status has the load per LLC")
            j = json.loads(rqctl(d.ctl, "--json", "status").stdout)
            check(j["sampler"] == "proc" and isinstance(j["ticks"], int),
                  "rqctl --json status is JSON with numbers as numbers")
            check([l["cpus"] for l in j["llcs"]] == ["0", "1"], "and the LLCs as an array")

            p = rqctl(d.ctl, "reload")
            check(p.returncode == 0 and p.stdout == "reloaded\n", "rqctl reload")
            good = open(d.conf).read()
            with open(d.conf, "a") as f:
                f.write("[daemon]\nbogus = 1\n")
            p = rqctl(d.ctl, "reload")
            check(p.returncode == 1, "a reload of a bad config fails with exit 1")
            check("[daemon] bogus: unknown key" in p.stderr, f"and says why: {p.stderr!r}")
            check(rqctl(d.ctl, "status").returncode == 0, "the daemon keeps running")
            with open(d.conf, "w") as f:
                f.write(good)

            sync(d.ctl)
            check(rqctl(d.ctl, "frob").returncode == 2, "an unknown command is bad usage")
            malformed(d.ctl)

            flood(d.ctl)
            permissions(tmp, d)
            check(d.stop() == 0, "clean stop")
        kinds(tmp)


def permissions(tmp, d):
    if not shutil.which("useradd") or not shutil.which("runuser"):
        print("(useradd or runuser missing: permission checks not run)")
        return
    with User("rqbs") as user:
        # The checkout may sit where the user cannot reach: run a copy from the test's dir.
        prog = user_rqctl(tmp)
        p = user.run([prog, "-s", d.ctl, "status"], text=True)
        check(p.returncode == 0, f"any user may ask for status {p.stderr!r}")
        p = user.run([prog, "-s", d.ctl, "reload"], text=True)
        check(p.returncode == 1 and "permission denied" in p.stderr,
              "an unprivileged user may not reload")
        with open(d.conf, "a") as f:
            f.write(f"[daemon]\nctl_group = {grp.getgrgid(user.gid).gr_name}\n")
        check(rqctl(d.ctl, "reload").returncode == 0, "root may (and sets ctl_group)")
        p = user.run([prog, "-s", d.ctl, "reload"], text=True)
        check(p.returncode == 0, "a member of ctl_group may reload")


main(test)
