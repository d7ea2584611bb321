"""Names that come from processes reach root's terminal only escaped. A real
unprivileged user names its process (comm) and a cgroup delegated to it with terminal
escapes (ESC [2J, a colour, a C1 CSI, a byte that is not UTF-8), gives both a value,
and root runs rqctl list, latency and --json list: the human output holds no control
byte and shows each as \\xHH, while the JSON is valid and gives the real bytes back."""
import json
import os
import subprocess

from rqb import (Daemon, check, main, private_copy, require, run_named, skip, tmpdir, unsafe,
                 user_rqctl)
from rqb_user import User

CPU_V1 = "/sys/fs/cgroup/cpu"
COMM = b"\x1b[2J\x1b[31mpw\xc2\x9b\xff"  # 15 bytes: the most comm holds
CGNAME = b"\x1b[2Jcg\x1b]0;t\x07"


def test():
    require()
    if not os.path.isdir(CPU_V1):
        skip(f"no v1 cpu hierarchy at {CPU_V1}")
    top = os.path.join(CPU_V1, f"rqb-ite-{os.getpid()}").encode()
    group = os.path.join(top, CGNAME)
    rel = group[len(CPU_V1):]
    with tmpdir() as tmp, User("rqbe") as user:
        prog = user_rqctl(tmp)
        py = private_copy(tmp, "python3")
        os.makedirs(group)
        try:
            for f in (b"", b"cpu.shares"):
                os.chown(os.path.join(group, f), user.uid, -1)
            with Daemon(tmp) as d:
                d.wait_for("ctl: serving")
                p, pid = run_named(user, prog, d, py, COMM)
                r = user.run([prog, "-s", d.ctl, "set", "-l", "5", "-g", rel])
                check(r.returncode == 0, f"the user gives its cgroup a value ({r.stderr!r})")

                out = subprocess.run([prog, "-s", d.ctl, "list"], capture_output=True,
                                     timeout=30, env={**os.environ, "LC_ALL": "C.UTF-8"})
                print(out.stdout.decode("utf-8", "backslashreplace"))
                check(out.returncode == 0, "root's rqctl list")
                check(not unsafe(out.stdout), f"no control byte reaches the terminal "
                      f"({unsafe(out.stdout)})")
                check(b"\\x1b[2J\\x1b[31mpw\\xc2\\x9b\\xff" in out.stdout,
                      "the comm is shown with its bytes as \\xHH")
                check(b"\\x1b[2Jcg\\x1b]0;t\\x07" in out.stdout,
                      "the cgroup path is shown with its bytes as \\xHH")

                out = subprocess.run([prog, "-s", d.ctl, "list"], capture_output=True,
                                     timeout=30, env={**os.environ, "LC_ALL": "C"})
                check(not unsafe(out.stdout) and out.stdout.isascii(),
                      "in a locale that is not UTF-8 the output is ASCII")

                r = subprocess.run([prog, "-s", d.ctl, "--json", "list"], capture_output=True,
                                   timeout=30)
                check(r.returncode == 0, "root's rqctl --json list")
                entries = json.loads(r.stdout.decode("utf-8"))
                task = next(e for e in entries if e["kind"] == "task" and e["tid"] == pid)
                check(task["comm"].encode("utf-8", "surrogateescape") == COMM,
                      "the JSON gives the comm's real bytes")
                cg = next(e for e in entries if e["kind"] == "cgroup")
                check(cg["path"].encode("utf-8", "surrogateescape") == rel,
                      "the JSON gives the cgroup path's real bytes")

                r = subprocess.run([prog, "-s", d.ctl, "latency"], capture_output=True,
                                   timeout=30)
                if r.returncode == 0:
                    check(not unsafe(r.stdout), "rqctl latency: no control byte either")
                else:
                    print("rqctl latency unavailable:", r.stderr.decode(errors="replace"))
                r = subprocess.run([prog, "-s", d.ctl, "reset", "-g", rel + b"x"],
                                   capture_output=True, timeout=30)
                check(not unsafe(r.stderr), "nor in an error")
                p.stdin.close()
                p.wait()
                check(d.stop() == 0, "clean stop")
        finally:
            for g in (group, top):
                try:
                    os.rmdir(g)
                except OSError as e:
                    print(f"cannot remove {g}: {e}")


main(test)
