"""The directories the daemon makes its files in (journal_dir, the ctl socket's), as a
real unprivileged user would attack them: one the user owns (where it could put a
socket of its own in place of the daemon's, or a link at the journal's name), one
root owns but the user may write, and a path through the user's link to a good
directory are each refused at start, with the path and why, by --check-config and by
a reload (which keeps the running config). A directory of root's inside the user's is
used, and made when missing: its parents may be anyone's, as the metrics file's."""
import os
import re
import subprocess

from rqb import (DAEMON, TOPO_1LLC, Daemon, check, conf_line, main, require, rqctl, tmpdir,
                 user_rqctl)
from rqb_user import User


def refused(tmp, key, value, pattern):
    """A daemon whose key is value exits 1 at start, naming conf:line, key and why."""
    conf = os.path.join(tmp, "refused.conf")
    paths = {"journal_dir": os.path.join(tmp, "run"), "ctl_socket": os.path.join(tmp, "ctl.sock")}
    paths[key] = value
    with open(conf, "w") as f:
        f.write("[daemon]\nlog_level = debug\nrules_dir =\n" +
                "".join(f"{k} = {v}\n" for k, v in paths.items()))
    line = conf_line(conf, key)
    p = subprocess.Popen([DAEMON, "-f", "-c", conf, "--topology", TOPO_1LLC],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = ""
    for line_out in p.stdout:  # until it exits, or runs: then it took the directory
        out += line_out
        if "running: sampler" in line_out:
            p.terminate()
    rc = p.wait()
    print(out)
    check(rc == 1, f"{key} = {value}: the daemon refuses to start (exit {rc})")
    check(re.search(rf"refused\.conf:{line}: \[daemon\] {key}: {pattern}", out),
          f"{key}: it says file:line and why")
    p = subprocess.run([DAEMON, "--check-config", conf], capture_output=True, text=True,
                       timeout=60)
    check(p.returncode == 1 and re.search(pattern, p.stderr),
          f"{key}: --check-config refuses it too ({p.stderr.strip()!r})")


def test():
    require()
    with tmpdir() as tmp, User("rqbd") as user:
        user_rqctl(tmp)
        udir = os.path.join(tmp, "user-dir")
        os.mkdir(udir)
        os.chown(udir, user.uid, user.gid)
        open_dir = os.path.join(tmp, "open-dir")
        os.mkdir(open_dir)
        os.chmod(open_dir, 0o777)
        good = os.path.join(tmp, "good")
        os.mkdir(good, 0o755)
        r = user.run(["ln", "-s", good, os.path.join(udir, "link")])
        check(r.returncode == 0, "the user links its directory to a good one")
        owned = rf"directory \"{re.escape(udir)}\" belongs to uid {user.uid}, not root"
        writable = rf"directory \"{re.escape(open_dir)}\" may be written by others than root"
        link = r"\"link\" in the path of .* is not a directory \(a symbolic link is not followed\)"

        refused(tmp, "ctl_socket", f"{udir}/ctl.sock", owned)
        refused(tmp, "journal_dir", f"{udir}/run", owned)
        refused(tmp, "journal_dir", f"{udir}", owned)
        refused(tmp, "ctl_socket", f"{open_dir}/ctl.sock", writable)
        refused(tmp, "journal_dir", f"{open_dir}", writable)
        refused(tmp, "ctl_socket", f"{udir}/link/ctl.sock", link)
        refused(tmp, "journal_dir", f"{udir}/link/run", link)
        check(not os.listdir(good) and sorted(os.listdir(udir)) == ["link"] and
              not os.listdir(open_dir), "nothing was made in any of them")

        # Root's directory inside the user's: made, and used.
        nested = os.path.join(udir, "rqb")
        os.mkdir(nested, 0o755)
        with Daemon(tmp, journal=f"{nested}/run") as d:
            d.wait_for("ctl: serving")
            check(os.path.isfile(os.path.join(nested, "run", "affinity.journal")),
                  "a missing journal_dir inside root's directory is made and used")
            check(rqctl(d, "status").returncode == 0, "the daemon serves")
            with open(d.conf) as f:
                text = f.read()
            with open(d.conf, "w") as f:
                f.write(text.replace(f"{nested}/run", f"{udir}/run"))
            r = rqctl(d, "reload")
            check(r.returncode == 1 and re.search(owned, r.stderr),
                  f"a reload to the user's directory is refused ({r.stderr.strip()!r})")
            d.sync()
            check(d.alive() and "keeping the running configuration" in d.text(),
                  "and keeps the running configuration")
            check(d.stop() == 0, "clean stop")
        subprocess.run(["rm", "-rf", nested], check=True)


main(test)
