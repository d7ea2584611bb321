"""The latency journal (latency.journal) against a real unprivileged user's process at
+5 that forks short-lived children, round after round: the journal's size follows what
is managed now, not every child the process ever had (it is compacted as the affinity
journal is), and the process's own record stays."""
import os
import subprocess

from rqb import RQCTL, Daemon, check, main, private_copy, require, rqctl, skip, tmpdir, user_rqctl
from rqb_user import User

ROUNDS, CHILDREN = 8, 100
SLACK = 1024  # latact_int.h's LATACT_JOURNAL_SLACK

# Says its pid; forks CHILDREN children that wait on a pipe, says "forked", waits for a line on
# stdin, lets them exit and reaps them, says "reaped", waits for a line; ROUNDS times.
FORKER = f"""
import os, sys
print(os.getpid(), flush=True)
for _ in range({ROUNDS}):
    r, w = os.pipe()
    kids = []
    for _ in range({CHILDREN}):
        pid = os.fork()
        if pid == 0:
            os.close(w)
            os.read(r, 1)
            os._exit(0)
        kids.append(pid)
    os.close(r)
    print("forked", flush=True)
    sys.stdin.readline()
    os.close(w)
    for k in kids:
        os.waitpid(k, 0)
    print("reaped", flush=True)
    sys.stdin.readline()
print("done", flush=True)
sys.stdin.readline()
"""


def journal_lines(d):
    with open(os.path.join(d.journal, "latency.journal"), "rb") as f:
        return [l for l in f.read().split(b"\n") if l and not l.startswith(b"#")]


def compacted(tmp, user, prog):
    py = private_copy(tmp, "python3")
    with Daemon(tmp) as d:
        d.wait_for("ctl: serving")
        p = user.popen([prog, "-s", d.ctl, "run", "-l", "5", "--", py, "-c", FORKER],
                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        pid = int(p.stdout.readline())
        most = 0
        for _ in range(ROUNDS):
            check(p.stdout.readline() == "forked\n", "the user's process forked its children")
            d.sync()
            most = max(most, len(journal_lines(d)))
            p.stdin.write("\n")
            p.stdin.flush()
            check(p.stdout.readline() == "reaped\n", "its children exited and were reaped")
            d.sync()
            p.stdin.write("\n")
            p.stdin.flush()
        check(p.stdout.readline() == "done\n", "all rounds done")
        d.sync()
        lines = journal_lines(d)
        print(f"journal: {len(lines)} records at the end, at most {most} seen; "
              f"{ROUNDS * CHILDREN} children")
        r = rqctl(d, "get", "-p", str(pid))
        check(r.returncode == 0 and "value 5" in r.stdout, "the process still has its value")
        check(len(lines) <= SLACK + 2 and most <= SLACK + CHILDREN + 2,
              f"the journal stays within the live entries plus {SLACK} records "
              f"({len(lines)} now, {most} at most; {2 * ROUNDS * CHILDREN} were appended)")
        check(any(l.startswith(b"lat %d " % pid) for l in lines),
              "the live process's record is still in the journal")
        p.stdin.write("\n")
        p.stdin.flush()
        p.wait()
        check(d.stop() == 0, "clean stop")


def test():
    require()
    if not os.path.exists(RQCTL):
        skip(f"{RQCTL} is not built")
    with tmpdir() as tmp, User("rqbj") as user:
        compacted(tmp, user, user_rqctl(tmp))


main(test)
