"""A throwaway unprivileged user for the integration tests that act as one."""
import grp
import os
import pwd
import shutil
import signal
import subprocess

from rqb import skip

# The user's commands lower their own RLIMIT_NICE, so that no limits.conf lets them
# lower a value without CAP_SYS_NICE.
NICE0 = ["prlimit", "--nice=0:0", "--"] if shutil.which("prlimit") else []


def has_group(name):
    try:
        grp.getgrnam(name)
        return True
    except KeyError:
        return False


def subids(path, name):
    """The (first, count) ranges of name's subordinate ids in path (/etc/subuid)."""
    out = []
    try:
        with open(path) as f:
            for line in f:
                parts = line.strip().split(":")
                if len(parts) == 3 and parts[0] == name:
                    out.append((int(parts[1]), int(parts[2])))
    except FileNotFoundError:
        pass
    return out


class User:
    """useradd on entry (with uid, that uid); its processes killed and the user removed
    on exit, whatever happened in between. Skips where there is no way to make one.
    Every command runs under NICE0."""

    def __init__(self, prefix="rqbl", uid=None):
        if not shutil.which("useradd") or not shutil.which("runuser"):
            skip("useradd or runuser missing: no unprivileged user to test with")
        self.name = f"{prefix}{os.getpid() % 100000}"
        group = next((g for g in ("nogroup", "nobody") if has_group(g)), None)
        if not group:
            skip("no nogroup or nobody group for the test user")
        subprocess.run(["useradd", "-M", "-N", "-g", group, "-s", "/usr/sbin/nologin",
                        *(["-u", str(uid)] if uid is not None else []), self.name], check=True)
        pw = pwd.getpwnam(self.name)
        self.uid, self.gid = pw.pw_uid, pw.pw_gid
        self.procs = []

    def popen(self, argv, **kw):
        """argv as the user, in a session of its own that __exit__ kills."""
        p = subprocess.Popen(["runuser", "-u", self.name, "--", *NICE0, *argv],
                             start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def run(self, argv, **kw):
        """argv as the user, to its end; its output captured."""
        return subprocess.run(["runuser", "-u", self.name, "--", *NICE0, *argv],
                              capture_output=True, timeout=60, **kw)

    def start(self, script):
        """Runs sh -c script as the user; the script echoes its pid first."""
        p = self.popen(["sh", "-c", script], stdout=subprocess.PIPE, text=True)
        return int(p.stdout.readline())

    def adopt(self, p):
        """A process of the test's whose session also holds the user's processes."""
        self.procs.append(p)
        return p

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            p.wait()
        # useradd gave it subordinate ids where /etc/subuid is kept; userdel leaves them.
        for flag, path in (("--del-subuids", "/etc/subuid"), ("--del-subgids", "/etc/subgid")):
            for first, count in subids(path, self.name):
                subprocess.run(["usermod", flag, f"{first}-{first + count - 1}", self.name],
                               check=False)
        subprocess.run(["userdel", self.name], check=False)
