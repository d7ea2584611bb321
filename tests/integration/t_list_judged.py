"""A list for a caller whose /proc hides others' processes reads a bounded number of
tasks (issue #49's kind: a request must not walk what users size in one go), run as a
real unprivileged user the test creates. The daemon's /proc is mounted
hidepid=invisible, so every managed process is judged for the user with a few /proc
reads of its own (once a process: its threads share the verdict). A rule of root's
manages 2,100 processes, more than CTL_REQ_JUDGED (2048): the user's `rqctl list` must
judge at most that many, say so ("judged only the first 2048"), and still show the
user's own process (older than the rule's, so judged first); root's list judges
nothing. Before, the list judged every managed task, whatever their number, in one
callback of the loop.
"""
import os
import re
import shutil
import subprocess

from rqb import (RQCTL, TOPO_2LLC, Daemon, check, main, private_copy, require, skip, tmpdir,
                 user_rqctl, wait_until, write_replay)
from rqb_user import NICE0, User

NPROCS = 2100
JUDGED = 2048


def in_proc_ns(argv, opts):
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            f'mount -t proc -o {opts} proc /proc && exec "$@"', "sh", *argv]


def test():
    require()
    if not shutil.which("unshare"):
        skip("no unshare: no mount namespace to mount a proc with hidepid in")
    with tmpdir() as tmp, User("rqbj") as a:
        prog = user_rqctl(tmp)
        sleep = private_copy(tmp, "sleep")
        idle = os.path.join(tmp, "idle.replay")
        write_replay(idle, [([(0, 0, 0), (1, 0, 0)], [])])
        mine = a.start(f"echo $$; exec {sleep} 300")
        held = []
        rule = f"[rule held]\nlatency_nice = 5\nexe = {sleep}\nuid = 0\n"
        try:
            with Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", idle], conf=rule,
                        wrap=in_proc_ns([], "hidepid=invisible")) as d:
                d.wait_for(r"running: sampler")
                r = subprocess.run(["runuser", "-u", a.name, "--", *NICE0, prog, "-s", d.ctl,
                                    "set", "-l", "5", "-p", str(mine)],
                                   capture_output=True, text=True, timeout=60)
                check(r.returncode == 0, f"the user gives its own process 5 ({r.stderr!r})")
                for _ in range(NPROCS):
                    held.append(subprocess.Popen([sleep, "300"]))
                d.sync(2)
                ok = wait_until(lambda: root_count(d) >= NPROCS + 1, 120)
                check(ok, f"the rule manages the {NPROCS} processes root started "
                      f"({root_count(d)} listed)")
                r = subprocess.run(["runuser", "-u", a.name, "--", *NICE0, prog, "-s", d.ctl,
                                    "list"], capture_output=True, text=True, timeout=60)
                check(r.returncode == 0, f"the user's list is answered ({r.stderr.strip()!r})")
                check(f"judged only the first {JUDGED} managed tasks" in r.stderr,
                      f"it says it judged only the first {JUDGED} tasks ({r.stderr.strip()!r})")
                shown = {l.split()[0] for l in r.stdout.splitlines() if l.split()}
                check(str(mine) in shown, "the user's own process is shown")
                check(not shown & {str(p.pid) for p in held},
                      "none of root's processes is shown to the user")
                r = subprocess.run([RQCTL, "-s", d.ctl, "list"], capture_output=True,
                                   text=True, timeout=60)
                check(r.returncode == 0 and "judged" not in r.stderr,
                      "root's list judges nothing: it sees every task")
                check(d.stop() == 0, "clean stop")
        finally:
            for p in held:
                p.kill()
            for p in held:
                p.wait()


def root_count(d):
    """How many entries root's list has: its lines, or the count of a cut list."""
    r = subprocess.run([RQCTL, "-s", d.ctl, "list"], capture_output=True, text=True,
                       timeout=60)
    m = re.search(r"cut short; (\d+) entries in all", r.stderr)
    return int(m.group(1)) if m else len([l for l in r.stdout.splitlines() if l.strip()])

main(test)
