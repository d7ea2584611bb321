"""Files another user can plant are opened only through the safe open (issue #26), each
attack made by a real unprivileged user:
(a) a copy of sleep named tuned, in a user and mount namespace of the user's own, whose
    /etc/tuned/active_profile is a symbolic link to a root-only file: rqctl status, as
    that user, never shows the file's line (a tuned that is not root is no tuned);
(b) the same with a FIFO there: the daemon still answers rqctl status and keeps ticking;
(c) root imports an ananicy tree the user wrote, one tree per attack: terminal escapes in
    a file name (and in a rule's name), a *.rules symbolic link to a root-only file, a
    FIFO: no control byte reaches the terminal, no line of the root-only file shows, no
    hang, and each refused file is named with the reason.
Root's own process named tuned, in a mount namespace of its own with the same link or
FIFO, is read only through the safe open: (a) and (b) again for it. Every case runs
before any verdict, so that a failing build shows all that it gets wrong."""
import os
import re
import shutil
import subprocess
import time

from rqb import (RQCTL, Daemon, check, comm_of, main, require, skip, tmpdir, unsafe, user_rqctl,
                 wait_until)
from rqb_user import User

MARKER = f"rqb-planted-{os.getpid()}"
FAKE_TUNED = """
set -e
mount -t tmpfs rqb-planted /etc
mkdir /etc/tuned
{plant}
echo $$
exec {tuned} 600
"""


def root_only(tmp, name, text):
    """A file only root may read, in tmp, with text: what no output may show."""
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, 0o600)
    return path


def fake_tuned_bin(tmp):
    """A copy of sleep named tuned, that every user may run."""
    d = os.path.join(tmp, "bin")
    os.makedirs(d, exist_ok=True)
    os.chmod(d, 0o755)
    dst = os.path.join(d, "tuned")
    shutil.copy2(os.path.realpath(shutil.which("sleep")), dst)
    os.chmod(dst, 0o755)
    return dst


def plant(kind, secret):
    return (f"ln -s {secret} /etc/tuned/active_profile" if kind == "link"
            else "mkfifo /etc/tuned/active_profile")


def start_tuned(popen, argv, tuned, kind, secret):
    """The fake tuned: its pid, once it runs under that name."""
    script = FAKE_TUNED.format(plant=plant(kind, secret), tuned=tuned)
    p = popen([*argv, "sh", "-c", script], stdout=subprocess.PIPE, text=True)
    pid = int(p.stdout.readline())
    check(wait_until(lambda: comm_of(pid) == "tuned", 10), f"the fake tuned {pid} runs")
    return p, pid


def release(pid):
    """Opens a FIFO planted for pid for writing, so that a reader blocked in open()
    (the unfixed daemon) goes on; nothing happens when no one waits."""
    fifo = f"/proc/{pid}/root/etc/tuned/active_profile"
    for _ in range(20):
        try:
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            pass
        time.sleep(0.05)


def stop(p, pid):
    release(pid)
    try:
        os.killpg(p.pid, 9)
    except ProcessLookupError:
        pass
    p.wait()
    wait_until(lambda: comm_of(pid) == "", 10)


def ticks(text):
    m = re.search(r"^ticks (\d+)$", text, re.M)
    return int(m.group(1)) if m else None


class Case:
    """Runs each attack, keeping what failed, so that every case runs."""

    def __init__(self):
        self.failed = []

    def run(self, name, fn, *args):
        print(f"--- {name} ---")
        try:
            fn(*args)
        except (AssertionError, subprocess.TimeoutExpired) as e:
            print(f"FAILED: {name}: {e}")
            self.failed.append(f"{name}: {e}")


def status_as(run, d):
    """rqctl status through run (the user's or root's), its output as bytes, text and json."""
    r = run(["status"])
    j = run(["--json", "status"])
    return r, (r.stdout or b"") + (j.stdout or b"")


def tuned_case(d, run, popen, argv, tuned, kind, secret, as_root):
    """(a) or (b), for the user's fake tuned or root's."""
    p, pid = start_tuned(popen, argv, tuned, kind, secret)
    try:
        time.sleep(1.2)  # status reads the peers again once its last reading is 1 s old
        t0 = time.monotonic()
        r, both = status_as(run, d)
        took = time.monotonic() - t0
        print(r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace"))
        check(r.returncode == 0 and took < 8, f"rqctl status answers ({took:.1f} s, "
              f"exit {r.returncode}: {r.stderr!r})")
        check(MARKER.encode() not in both, "status shows no line of the root-only file")
        check(not unsafe(r.stdout), "status holds no control byte")
        line = re.search(rf"^shaping tuned tuned \(pids? {pid}\b.*$", r.stdout.decode(), re.M)
        if as_root:
            # Named only while no other tuned with a lower pid runs here.
            if line:
                check("its profile unknown" in line.group(0)
                      and ("symbolic link" in line.group(0)
                           or "not a regular file" in line.group(0)),
                      f"root's tuned: its profile unknown, and why ({line.group(0)})")
        else:
            check(not line, "a process named tuned that is not root is no tuned")
        n1 = ticks(r.stdout.decode())
        # sync ends a whole tick begun after it (waking an idle tick): the loop still runs.
        r2 = run(["sync"])
        n2 = ticks(r2.stdout.decode())
        check(r2.returncode == 0 and n1 is not None and n2 is not None and n2 > n1,
              f"the daemon keeps ticking ({n1} then {n2})")
    finally:
        stop(p, pid)


USER_TREE = r"""
import os, sys
d, case, secret = sys.argv[1], sys.argv[2], sys.argv[3]
if case == "escape":
    name = b"\x1b]0;owned\x07\x1b[2J\xc2\x9b\xff.rules"
    with open(os.path.join(d.encode(), name), "wb") as f:
        f.write(b'{"name": "esc\\u001b[31m\\u009b", "nice": 3}\n{"oops"\n')
elif case == "link":
    os.symlink(secret, os.path.join(d, "leak.rules"))
    os.mkdir(os.path.join(d, "sub"))
    os.symlink(os.path.dirname(secret), os.path.join(d, "sub", "up"))
else:
    os.mkfifo(os.path.join(d, "hang.rules"))
with open(os.path.join(d, "ok.rules"), "w") as f:
    f.write('{"name": "plain", "nice": 4}\n')
"""


def ananicy_case(tmp, user, case, secret):
    tree = os.path.join(tmp, f"tree-{case}")
    os.mkdir(tree)
    os.chown(tree, user.uid, user.gid)
    w = user.run(["python3", "-c", USER_TREE, tree, case, secret])
    check(w.returncode == 0, f"the user wrote its tree ({w.stderr!r})")
    try:
        r = subprocess.run([RQCTL, "import-ananicy", tree], capture_output=True, timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError("import-ananicy hung")
    print(r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace"))
    check(r.returncode in (0, 1), f"import-ananicy ends (exit {r.returncode})")
    check(MARKER.encode() not in r.stdout + r.stderr, "no line of the root-only file")
    check(not unsafe(r.stdout), f"stdout holds no control byte ({unsafe(r.stdout)})")
    check(not unsafe(r.stderr), f"stderr holds no control byte ({unsafe(r.stderr)})")
    check(b"[rule ananicy-plain]" in r.stdout, "the plain rule beside them is read")
    if case == "link":
        check(re.search(rb"leak\.rules: .*symbolic link", r.stderr) is not None,
              "the link is named, with the reason")
    elif case == "fifo":
        check(re.search(rb"hang\.rules: .*not a regular file", r.stderr) is not None,
              "the FIFO is named, with the reason")
    else:
        check(rb"\x1b]0;owned\x07\x1b[2J" in r.stderr, "the file name shown escaped")


def test():
    require()
    for prog in ("unshare", "mkfifo"):
        if not shutil.which(prog):
            skip(f"no {prog}")
    if not os.path.exists(RQCTL):
        skip(f"{RQCTL} is not built")
    cases = Case()
    with tmpdir() as tmp, User("rqbp") as user:
        userns = user.run(["unshare", "-Urm", "true"])
        if userns.returncode != 0:
            skip("unprivileged user namespaces are off here (unshare -Urm as a user: "
                 f"{userns.stderr.decode(errors='replace').strip()})")
        prog = user_rqctl(tmp)
        tuned = fake_tuned_bin(tmp)
        secret = root_only(tmp, "secret", f"{MARKER}:*:19000:0:99999:7:::\n")
        rules = root_only(tmp, "secret.rules", f'{{"name": "{MARKER}", "nice": 1}}\n')
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")

            def as_user(args):
                return user.run([prog, "-s", d.ctl, *args])

            def as_root(args):
                return subprocess.run([RQCTL, "-s", d.ctl, *args], capture_output=True,
                                      timeout=60)

            def root_popen(argv, **kw):
                return user.adopt(subprocess.Popen(argv, start_new_session=True, **kw))

            for kind, what in (("link", "a"), ("fifo", "b")):
                cases.run(f"({what}) user's fake tuned, active_profile a {kind}", tuned_case,
                          d, as_user, user.popen, ["unshare", "-Urm"], tuned, kind, secret,
                          False)
                cases.run(f"({what}) root's tuned, active_profile a {kind}", tuned_case, d,
                          as_root, root_popen, ["unshare", "-m", "--propagation", "private"],
                          tuned, kind, secret, True)
            check(d.alive(), "the daemon still runs")
        for case in ("escape", "link", "fifo"):
            cases.run(f"(c) import-ananicy, {case}", ananicy_case, tmp, user, case, rules)
    check(not cases.failed, "every case passes:\n  " + "\n  ".join(cases.failed))


main(test)
