"""`rqctl set` on a process reads each thread once (issue #52): the judge opens each
thread's pidfd, then reads its stat, status and cgroup through one directory, and the
actuator opens the task from that pidfd and takes that cgroup instead of reading /proc
again. Under strace, one set of a process of 4 threads opens each thread's stat and
status once and its cgroup once before the write: a second cgroup read is only the
read-back of a class move the write made (the thread's cgroup changed). The window is
the request's: from the ctl connection's accept to the log line that says it was done."""
import os
import re
import shutil
import subprocess
import sys

from rqb import Daemon, check, main, require, rqctl, skip, status_field, tmpdir, wait_until

NTH = 4
PROG = ("import threading,time\n"
        f"for _ in range({NTH - 1}): threading.Thread(target=time.sleep, args=(600,), daemon=True).start()\n"
        "print('up', flush=True); time.sleep(600)\n")


def opens_in_request(path, pid, tids):
    """The /proc files of process pid's tasks (tids) the daemon opened between the
    accept of the first ctl connection (the set's; a sync's come after) and the log
    line that ends the request (ctl_req_run's last word): {tid: [name, ...]}."""
    per, inside, done = {}, False, False
    for l in open(path):
        m = re.match(r"\d+\s+(\w+)\((.*)", l)
        if not m:
            continue
        call, args = m.group(1), m.group(2)
        if call == "accept4" and "= -1" not in l and not done:
            inside = True
        elif call == "write" and inside and "gave process" in args:
            inside, done = False, True
        elif call == "openat" and inside:
            pm = (re.search(r'"/proc/(\d+)(?:/task/(\d+))?/(\w*)"', args) or
                  re.search(r'</proc/(\d+)(?:/task/(\d+))?>, "(\w+)"', args))
            if pm and int(pm.group(1)) in tids | {pid}:
                tid = int(pm.group(2) or pm.group(1))
                per.setdefault(tid, []).append(pm.group(3) or "dir")
    return per


def cgroups(pid):
    """Each thread's cgroup file, as the test reads it (not the daemon)."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{tid}/cgroup") as f:
            out[int(tid)] = f.read()
    return out


def test():
    require()
    if not shutil.which("strace"):
        skip("no strace")
    with tmpdir() as tmp:
        st = os.path.join(tmp, "strace.txt")
        p = subprocess.Popen([sys.executable, "-c", PROG], stdout=subprocess.PIPE, text=True)
        try:
            p.stdout.readline()
            with Daemon(tmp) as d:
                d.wait_for(r"running: sampler")
                d.sync()
                s = subprocess.Popen(["strace", "-f", "-y", "-o", st, "-e",
                                      "trace=openat,accept4,write", "-s", "200", "-p",
                                      str(d.proc.pid)], stderr=subprocess.DEVNULL)
                wait_until(lambda: status_field(d.proc.pid, "TracerPid") != "0", 30)
                before = cgroups(p.pid)
                r = rqctl(d, "set", "-l", "-5", "-p", str(p.pid))
                check(r.returncode == 0, f"root sets the process: {r.stderr.strip()}")
                d.sync()
                s.terminate()
                s.wait()
                after = cgroups(p.pid)
        finally:
            p.kill()
            p.wait()
        per = opens_in_request(st, p.pid, set(before))
        print(f"/proc opens per thread of {p.pid} in the request: {per}")
        print("moved:", [tid for tid in before if before[tid] != after.get(tid)])
        check(len(per) == NTH, f"each of the {NTH} threads was read ({sorted(per)})")
        for tid, what in per.items():
            for name in ("stat", "status"):
                check(what.count(name) == 1, f"thread {tid}: {name} opened once ({what})")
            moved = before.get(tid) != after.get(tid)
            check(what.count("cgroup") == 1 + moved,
                  f"thread {tid}: cgroup read once, and once more only to read back a "
                  f"move ({'moved' if moved else 'not moved'}: {what})")
            check(what.count("dir") <= 1, f"thread {tid}: its directory opened once ({what})")


main(test)
