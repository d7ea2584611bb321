"""A task in a cgroup whose name holds a space, a tab and a backslash (a v1 cpu group
delegated to a real unprivileged user, who names it and moves its task there) is given
back its cgroup and nice by the next start after the daemon was SIGKILLed: the latency
journal's record round-trips the name."""
import os
import signal
import subprocess

from rqb import Daemon, check, cpu_cgroup, main, private_copy, require, rqctl, skip, tmpdir
from rqb_user import User

CPU_V1 = "/sys/fs/cgroup/cpu"


def odd_cgroup(tmp, user):
    if not os.path.isdir(CPU_V1):
        skip(f"no v1 cpu hierarchy at {CPU_V1}")
    top = os.path.join(CPU_V1, f"rqb-itj-{os.getpid()}")
    name = "odd name\twith\\x20 bytes"
    group = os.path.join(top, name)
    rel = group[len(CPU_V1):]
    journal = os.path.join(tmp, "crash")
    sleep = private_copy(tmp, "sleep")
    os.makedirs(group)
    pid = None
    try:
        # Delegated: the user owns the group and may move its own tasks into it.
        for f in ("", "tasks", "cgroup.procs"):
            os.chown(os.path.join(group, f), user.uid, -1)
        p = user.popen(["sh", "-c", f'echo $$ > "{group}/tasks" && echo $$ && exec {sleep} 300'],
                       stdout=subprocess.PIPE, text=True)
        pid = int(p.stdout.readline())
        check(cpu_cgroup(pid) == rel, "the user moved its task into the oddly named cgroup")
        nice0 = os.getpriority(os.PRIO_PROCESS, pid)
        # The user's own group is the user's choice: the admin names it as one a value
        # may move a task out of (a * stands for the odd name).
        conf = f"[latency]\nmove_from = {top[len(CPU_V1):]}/*\n"
        with Daemon(tmp, journal=journal, conf=conf) as d:
            d.wait_for("ctl: serving")
            r = rqctl(d, "set", "-l", "-10", "-p", str(pid))
            check(r.returncode == 0, f"root gives the user's task -10 ({r.stderr.strip()!r})")
            check(cpu_cgroup(pid) != rel, "it moved to its class")
            check(d.stop(signal.SIGKILL) == -signal.SIGKILL, "the daemon was killed")
        with Daemon(tmp, journal=journal, conf=conf) as d:
            d.wait_for("ctl: serving")
            d.sync()
            text = d.text()
            check("malformed latency journal record" not in text,
                  "the restart reads every record")
            check(cpu_cgroup(pid) == rel, f"the task is back in {rel!r} "
                  f"(it is in {cpu_cgroup(pid)!r})")
            check(os.getpriority(os.PRIO_PROCESS, pid) == nice0,
                  "the task has its nice back")
            check(d.stop() == 0, "clean stop")
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)
        for p in user.procs:
            p.wait()  # runuser reaps the sleeper first: the group is empty after
        user.procs.clear()
        for g in (group, top):
            try:
                os.rmdir(g)
            except OSError as e:
                print(f"cannot remove {g}: {e}")


def test():
    require()
    with tmpdir() as tmp, User("rqbn") as user:
        os.chmod(tmp, 0o755)  # the user runs a copy of sleep from there
        odd_cgroup(tmp, user)


main(test)
