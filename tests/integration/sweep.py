"""What killed test runs left behind, removed before a run starts (tests/run calls it as
root): the rqb-it-PID cgroups of the integration tests (rqb.CGROUP_ROOT, the daemon's
classes below it, and the tests' own rqb-it-PID-NAME groups) at the top of every
cgroup hierarchy, and the throwaway users of rqb_user.User (rqb, a letter, the test's
pid modulo 100000). Several runs may share the machine, so only what is surely a dead
run's goes:
- a group whose test process (PID) is gone, that no rqbalanced still running was
  configured with, and in which no task is left, anywhere below it;
- a user whose every trait is the test's (nologin shell, the nogroup or nobody group,
  no home), that runs no process, and whose number no live process has modulo 100000.
Whether the run lives is asked just before each removal, not once at the start: a
run that starts meanwhile has a live pid by the time it has made anything. Prints a
line for each thing removed; never fails."""
import grp
import os
import pwd
import re
import subprocess
import sys

CGROUP_FS = "/sys/fs/cgroup"
GROUP_NAME = re.compile(r"rqb-it-(\d+)(-[\w-]+)?")
USER_NAME = re.compile(r"rqb[a-z]{1,2}(\d{1,7})")
# rqb_user.User folds pids into five digits; t_ctl's user once had the whole pid.
USER_PIDS = 100000


def live_pids():
    return {int(p) for p in os.listdir("/proc") if p.isdigit()}


def read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""


def daemon_confs():
    """The config files of every rqbalanced running now (-c FILE), as text."""
    out = []
    for pid in live_pids():
        argv = read(f"/proc/{pid}/cmdline").split(b"\0")
        if not argv or not os.path.basename(argv[0]).startswith(b"rqbalanced"):
            continue
        for i, a in enumerate(argv[:-1]):
            if a in (b"-c", b"--config"):
                out.append(read(argv[i + 1].decode(errors="replace")).decode(errors="replace"))
    return out


def hierarchies():
    """The root of each mounted cgroup hierarchy (v1 controllers, cgroup2)."""
    roots = [CGROUP_FS] if os.path.exists(f"{CGROUP_FS}/cgroup.procs") else []
    if os.path.isdir(CGROUP_FS):
        for name in sorted(os.listdir(CGROUP_FS)):
            path = os.path.join(CGROUP_FS, name)
            if os.path.isdir(path) and os.path.exists(f"{path}/cgroup.procs"):
                roots.append(path)
    return roots


def has_tasks(group):
    for d, _, _ in os.walk(group):
        for f in ("cgroup.procs", "tasks", "cgroup.threads"):
            if read(os.path.join(d, f)).strip():
                return True
    return False


def remove_group(group):
    """rmdir from the bottom up; False if the kernel kept any of it (a task came)."""
    for d, _, _ in os.walk(group, topdown=False):
        try:
            os.rmdir(d)
        except FileNotFoundError:
            pass  # another run's sweep took it
        except OSError as e:
            print(f"sweep: kept {group}: {d}: {e.strerror}")
            return False
    return True


def group_owned(owner_pid):
    """The run that named the group may still be at work: its test process lives, or a
    daemon that outlived it still has its classes there. Asked at the last moment."""
    if os.path.exists(f"/proc/{owner_pid}"):
        return True
    line = re.compile(rf"^cgroup_root = rqb-it-{owner_pid}$", re.M)
    return any(line.search(c) for c in daemon_confs())


def sweep_groups():
    for root in hierarchies():
        for name in sorted(os.listdir(root)):
            m = GROUP_NAME.fullmatch(name)
            group = os.path.join(root, name)
            if not m or not os.path.isdir(group) or has_tasks(group):
                continue
            if not group_owned(int(m.group(1))) and remove_group(group):
                print(f"sweep: removed cgroup {group} (run {m.group(1)} is gone)")


def test_groups():
    gids = set()
    for g in ("nogroup", "nobody"):
        try:
            gids.add(grp.getgrnam(g).gr_gid)
        except KeyError:
            pass
    return gids


def uids_running(pids):
    """Every uid (real, effective, saved, fs) that some process runs as."""
    uids = set()
    for pid in pids:
        for line in read(f"/proc/{pid}/status").decode(errors="replace").splitlines():
            if line.startswith("Uid:"):
                uids.update(int(u) for u in line.split()[1:])
                break
    return uids


def user_busy(pw, n):
    """A process runs as the user, or one lives whose pid may have named it. Asked at
    the last moment: a run that starts meanwhile has a live pid."""
    pids = live_pids()
    return n % USER_PIDS in {p % USER_PIDS for p in pids} or pw.pw_uid in uids_running(pids)


def sweep_users():
    gids = test_groups()
    for pw in pwd.getpwall():
        m = USER_NAME.fullmatch(pw.pw_name)
        if (not m or pw.pw_shell != "/usr/sbin/nologin" or pw.pw_gid not in gids or
                pw.pw_uid < 1000 or os.path.exists(pw.pw_dir) or
                user_busy(pw, int(m.group(1)))):
            continue
        r = subprocess.run(["userdel", pw.pw_name], capture_output=True, text=True)
        if r.returncode == 0:
            print(f"sweep: removed user {pw.pw_name} (run {m.group(1)} is gone)")
        elif pw.pw_name in {p.pw_name for p in pwd.getpwall()}:
            print(f"sweep: kept user {pw.pw_name}: {r.stderr.strip()}")


def main():
    if os.geteuid() == 0:
        sweep_groups()
        sweep_users()


if __name__ == "__main__":
    main()
    sys.exit(0)
