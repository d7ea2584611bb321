"""rqctl list's fields carry any byte: a real unprivileged user names its own process
"a<TAB>b<NEWLINE>c" and a backslash sequence, gives it a value, and root's rqctl list
shows it as one row whose columns are where they belong (the comm escaped, the
source after it intact), while --json gives the name's real bytes."""
import json
import os
import subprocess

from rqb import Daemon, check, main, private_copy, require, run_named, tmpdir, user_rqctl
from rqb_user import User

COMM = b"a\tb\nc\\x41\\"


def test():
    require()
    with tmpdir() as tmp, User("rqbx") as user:
        prog = user_rqctl(tmp)
        py = private_copy(tmp, "python3")
        with Daemon(tmp) as d:
            d.wait_for("ctl: serving")
            p, pid = run_named(user, prog, d, py, COMM)

            out = subprocess.run([prog, "-s", d.ctl, "list"], capture_output=True, timeout=30,
                                 env={**os.environ, "LC_ALL": "C.UTF-8"})
            text = out.stdout.decode("utf-8", "backslashreplace")
            print(text)
            check(out.returncode == 0, "root's rqctl list")
            lines = text.splitlines()
            check(len(lines) == 2, f"a header and one row ({len(lines)} lines)")
            cols = lines[1].split()
            check(cols[0] == str(pid) and cols[1] == str(pid) and cols[2] == "5",
                  "tid, pid and value in their columns")
            check(cols[7] == "a\\x09b\\x0ac\\x41\\" and cols[8:] == ["ctl", "uid", str(user.uid)],
                  f"the comm in its column, escaped, and the source after it ({cols[7:]})")

            r = subprocess.run([prog, "-s", d.ctl, "--json", "list"], capture_output=True,
                               timeout=30)
            check(r.returncode == 0, "root's rqctl --json list")
            entries = json.loads(r.stdout.decode("utf-8"))
            check(len(entries) == 1, f"one entry ({len(entries)})")
            e = entries[0]
            check(e["tid"] == pid and e["value"] == 5 and e["source"] == f"ctl uid {user.uid}",
                  "its fields in place")
            check(e["comm"].encode("utf-8", "surrogateescape") == COMM,
                  f"the JSON gives the comm's real bytes ({e['comm']!r})")
            p.stdin.close()
            p.wait()
            check(d.stop() == 0, "clean stop")


main(test)
