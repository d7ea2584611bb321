"""[metrics] path in a directory another user may write: a real unprivileged user who
owns the directory plants a FIFO at the name the daemon used for its temporary file.
The daemon refuses such a directory with file:line at start (it exits 1, it does not
hang on the FIFO), --check-config says the same, a reload to it is refused and keeps
the running config (the old file is still written), and a sticky world-writable
directory such as /tmp is refused too. A directory of root's inside the user's (Debian's
/var/lib/prometheus/node-exporter) is accepted, and no path through a link is followed,
even when the user swaps root's directory for one after the start."""
import os
import re
import subprocess
from contextlib import contextmanager

from rqb import DAEMON, Daemon, check, conf_line, main, require, rqctl, tmpdir, user_rqctl
from rqb_user import User


def metrics_conf(path):
    return f"[metrics]\npath = {path}\ninterval_ms = 1000\n"


def repoint(conf, old, new):
    """The config file now names new where it named old."""
    with open(conf) as f:
        text = f.read()
    with open(conf, "w") as f:
        f.write(text.replace(old, new))


@contextmanager
def written_then_reloaded(tmp, path, new, what):
    """A daemon whose metrics file is path, checked written (what); then its config names
    new instead and is reloaded. Gives the daemon and rqctl reload's result."""
    with Daemon(tmp, conf=metrics_conf(path)) as d:
        d.wait_for(r"running: sampler")
        check(wait_written(d, path), what)
        repoint(d.conf, path, new)
        yield d, rqctl(d, "reload")


def test():
    require()
    with tmpdir() as tmp, User("rqbw") as user:
        user_rqctl(tmp)  # tmp may be entered by the user
        bad = os.path.join(tmp, "user-dir")
        os.mkdir(bad)
        os.chown(bad, user.uid, user.gid)
        prom = os.path.join(bad, "rqbalance.prom")
        fifo = prom + ".tmp"
        r = user.run(["mkfifo", fifo])
        check(r.returncode == 0, "the user plants a FIFO at the old temporary name")
        good = os.path.join(tmp, "good")
        os.mkdir(good, 0o755)
        good_prom = os.path.join(good, "rqbalance.prom")
        want = re.escape(bad)
        try:
            d = Daemon(tmp, conf=metrics_conf(prom))
            with d:
                try:
                    rc = d.proc.wait(60)  # a safety net: the daemon must exit at once
                except subprocess.TimeoutExpired:
                    rc = None
                    release(fifo)  # so that the daemon may stop
                check(rc == 1, f"the daemon refuses to start (exit {rc}), not hanging on the FIFO")
                line = conf_line(d.conf, "path = ")
                check(re.search(rf"rqbalance\.conf:{line}: \[metrics\] path: directory "
                                rf"\"{want}\" belongs to uid {user.uid}, not root", d.text()),
                      "it says file:line and why")
            p = subprocess.run([DAEMON, "--check-config", d.conf], capture_output=True,
                               text=True, timeout=60)
            check(p.returncode == 1 and "[metrics] path: directory" in p.stderr,
                  f"--check-config refuses it too ({p.stderr.strip()!r})")

            repoint(d.conf, prom, "/tmp/rqbalance.prom")
            p = subprocess.run([DAEMON, "--check-config", d.conf], capture_output=True,
                               text=True, timeout=60)
            check(p.returncode == 1 and 'directory "/tmp" may be written by others' in p.stderr,
                  f"a sticky world-writable directory is refused ({p.stderr.strip()!r})")

            # Debian's layout: node_exporter's directory is root's, in /var/lib/prometheus,
            # which is the prometheus user's. Accepted: the file is made through the
            # directory's descriptor, reached following no link. A link in the path is
            # refused, even to a good directory: its owner could point it anywhere.
            nested = os.path.join(bad, "node-exporter")
            os.mkdir(nested, 0o755)
            nested_prom = os.path.join(nested, "rqbalance.prom")
            r = user.run(["ln", "-s", good, os.path.join(bad, "link")])
            check(r.returncode == 0, "the user links its directory to a good one")
            linked_prom = os.path.join(bad, "link", "rqbalance.prom")
            with written_then_reloaded(tmp, nested_prom, linked_prom, "root's directory inside "
                                       "the user's is accepted and written") as (d, r):
                check(r.returncode == 1 and "a symbolic link is not followed" in r.stderr,
                      f"a path through the user's link is refused ({r.stderr.strip()!r})")
                # The user swaps root's directory for a link to another: the next write
                # finds no directory there, and nothing is written through the link.
                r = user.run(["sh", "-c", f"mv {nested} {bad}/old && ln -s {good} {nested}"])
                check(r.returncode == 0, "the user swaps the directory for a link")
                d.wait_for(r"metrics: cannot write .*node-exporter/rqbalance\.prom: .*"
                           r"a symbolic link is not followed")
                check(not os.path.exists(good_prom), "nothing was written through the link")
                check(d.alive() and d.stop() == 0, "the daemon goes on, and stops cleanly")
            for name in ("link", "node-exporter"):
                os.unlink(os.path.join(bad, name))
            subprocess.run(["rm", "-rf", os.path.join(bad, "old")], check=True)

            with written_then_reloaded(tmp, good_prom, prom, "the metrics file is written in a "
                                       "root-owned directory") as (d, r):
                check(r.returncode == 1 and re.search(
                    rf"rqbalance\.conf:\d+: \[metrics\] path: directory \"{want}\"", r.stderr),
                      f"a reload to the user's directory is refused ({r.stderr.strip()!r})")
                d.sync()
                check(d.alive(), "the daemon still runs")
                check("reload failed: keeping the running configuration" in d.text(),
                      "it keeps the running configuration")
                os.unlink(good_prom)
                check(wait_written(d, good_prom), "the old path is still written")
                check(d.stop() == 0, "clean stop")
            left = [f for f in os.listdir(bad) if f != "rqbalance.prom.tmp"]
            check(not left, f"nothing was written in the user's directory ({left})")
        finally:
            release(fifo)


def release(fifo):
    """A daemon blocked opening the FIFO for writing goes on once a reader opens it."""
    try:
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    except OSError:
        pass


def wait_written(d, path):
    """The metrics timer fires each interval_ms: sync ticks until it did (at most 30)."""
    for _ in range(30):
        if os.path.exists(path):
            return True
        d.sync(5)
    return os.path.exists(path)


main(test)
