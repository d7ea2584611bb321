"""A class cgroup weighs what it runs (issue #51): on a kernel that splits a group's
weight among the CPUs it runs on (every kernel before 7.3, and this host's 6.18), the
class of two busy hogs at -5 weighs 2 x 3121 in cpu.shares (cgroup2: 2 x 305 in
cpu.weight), so that each hog competes, on its CPU, with the weight -5 promises; with
one hog left, after the daemon's hold, the class is back to 3121; rqctl explain says it
is scaled by busy CPUs. Before, the class kept 3121 whatever it ran: two hogs at -5
competed with half of it each. On this 2-CPU host the split is only in half, but it is
the same split a 32-CPU machine makes in thirty-two."""
import os
import re

from rqb import (CGROUP_ROOT, Daemon, Hogs, allowed, check, class_mount, main, require,
                 rqctl, skip, tmpdir, wait_until)


def weight_file(mount, v):
    base = f"{mount}/{CGROUP_ROOT}/rqbalance-lat{v}"
    for name in ("cpu.shares", "cpu.weight"):
        if os.path.exists(f"{base}/{name}"):
            return f"{base}/{name}", name
    return None, None


def read(path):
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def debugfs_mode():
    try:
        with open("/sys/kernel/debug/sched/cgroup_mode") as f:
            return f.read()
    except OSError:
        return ""


def run():
    require()
    if len(allowed(os.getpid()) & {0, 1}) < 2:
        skip("needs CPUs 0 and 1")
    mode = debugfs_mode()
    if re.search(r"\((up|concur|max|tasks)\)", mode):
        skip(f"cgroup_mode {mode.strip()}: not a plain split (the guests' t_class_share)")
    if tuple(int(x) for x in os.uname().release.split(".")[:2]) >= (7, 3) and not mode:
        skip("a 7.3 kernel whose cgroup_mode cannot be read: taken as concur")
    with tmpdir() as tmp, Daemon(tmp) as d, Hogs(2, cpus="0-1") as hogs:
        d.wait_for("ctl: serving")
        mount = class_mount(d)
        if not mount:
            skip("no class cgroups on this host")
        for pid in hogs.pids:
            r = rqctl(d, "set", "-l", "-5", "-p", str(pid))
            check(r.returncode == 0, f"set -l -5 on hog {pid}: {r.stderr.strip()}")
        path, name = weight_file(mount, -5)
        check(path is not None, "the class of -5 exists")
        one = 3121 if name == "cpu.shares" else 305
        two = 6242 if name == "cpu.shares" else 610
        check(wait_until(lambda: read(path) == two, timeout=60),
              f"two busy hogs at -5: the class weighs {two} in {name} ({read(path)})")
        r = rqctl(d, "explain", "-p", str(hogs.pids[0]))
        check(r.returncode == 0 and re.search(r"scaled by 2 busy CPUs", r.stdout),
              f"explain says the class is scaled by 2 busy CPUs:\n{r.stdout}")
        # One hog left: the class comes back once the count has been lower for the hold.
        hogs.procs[1].kill()
        hogs.procs[1].wait()
        check(wait_until(lambda: read(path) == one, timeout=60),
              f"one busy hog left: the class weighs {one} again ({read(path)})")
        r = rqctl(d, "explain", "-p", str(hogs.pids[0]))
        check(r.returncode == 0 and re.search(r"scaled by 1 busy CPU\b", r.stdout),
              f"explain says 1 busy CPU now:\n{r.stdout}")


if __name__ == "__main__":
    main(run)
