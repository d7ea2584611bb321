"""Helpers for the integration tests: the real rqbalanced on the real kernel, acting
only on processes the test starts. A test exits 0 to pass, 77 to skip (the last line
printed says why), anything else to fail."""

import ctypes
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("RQB_BUILD", "build")
DAEMON = os.path.join(ROOT, BUILD, "rqbalanced")
TOPO_2LLC = os.path.join(ROOT, "tests", "data", "topo-2llc.xml")
# CPUs 0 and 1 in one LLC: the spread policy finds nothing to move, so a daemon on a live
# sampler touches no task the test did not name, whatever LLCs this machine shows.
TOPO_1LLC = os.path.join(ROOT, "tests", "data", "topo-1llc.xml")
RQCTL = os.path.join(ROOT, BUILD, "rqctl")
CGROUP_ROOT = f"rqb-it-{os.getpid()}"
CPU_V1 = "/sys/fs/cgroup/cpu"


def skip(why):
    print(why)
    sys.exit(77)


def require_cpu_v1(file="cpu.shares"):
    """Skips the test unless the v1 cpu controller, with file, is at CPU_V1 (this
    machine's layout)."""
    if not os.path.exists(os.path.join(CPU_V1, file)):
        skip(f"needs the v1 cpu controller with {file} at {CPU_V1} (this machine's layout)")


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def require(ncpus=2):
    if os.geteuid() != 0:
        skip("needs root: the daemon changes other processes' affinity")
    if not os.path.exists(DAEMON):
        skip(f"{DAEMON} is not built")
    cpus = allowed(os.getpid())
    if not {0, 1} <= cpus:
        skip(f"needs CPUs 0 and 1, this test may use {sorted(cpus)}")


def parse_list(text):
    out = set()
    for part in text.strip().split(","):
        if not part:
            continue
        a, _, b = part.partition("-")
        out.update(range(int(a), int(b or a) + 1))
    return out


def status_field(pid, name):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
    raise KeyError(name)


def allowed(pid):
    return parse_list(status_field(pid, "Cpus_allowed_list"))


def stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        data = f.read()
    # Fields after the last ')': index 0 is field 3 (state).
    return data[data.rindex(")") + 2:].split()


def start_time(pid):
    return int(stat_fields(pid)[22 - 3])


def last_cpu(pid):
    return int(stat_fields(pid)[39 - 3])


class Hogs:
    """CPU-bound processes, each allowed every CPU of the test."""

    def __init__(self, n, cpus=None):
        self.procs = []
        for _ in range(n):
            pre = ["taskset", "-c", cpus] if cpus else []
            self.procs.append(subprocess.Popen(pre + ["sh", "-c", "while :; do :; done"]))
        # Each runs the loop once taskset (where asked) has exec'd sh: a test that reads
        # their comm, or records them, must not meet a taskset that waited for its CPU.
        for p in self.procs:
            wait_until(lambda p=p: p.poll() is not None or comm_of(p.pid) == "sh", 60)

    @property
    def pids(self):
        return [p.pid for p in self.procs]

    def stop(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def nice_of(pid):
    """The nice of process pid, None where it is gone."""
    try:
        return os.getpriority(os.PRIO_PROCESS, pid)
    except OSError:
        return None


def sched_field(pid, name):
    """A number from /proc/PID/sched ("policy", "se.slice"), its integer part."""
    with open(f"/proc/{pid}/sched") as f:
        for line in f:
            if line.startswith(name):
                return int(line.split(":")[1].split(".")[0])
    raise KeyError(name)


def default_slice_ns():
    """The kernel's default slice: this test's own se.slice (it has none of its own)."""
    return sched_field(os.getpid(), "se.slice")


def value_slice_ns(v, default=None):
    """The slice latency-nice v gets (rqbalanced(8)): the kernel's default x 2^(v/5),
    in the integer steps the daemon takes, within 0.1-100 ms; 0 for the default."""
    frac = (1000000, 1148698, 1319508, 1515717, 1741101)  # 2^(k/5), millionths
    d = default_slice_ns() if default is None else default
    if v == 0:
        return 0
    if v > 0:
        ns = (d << (v // 5)) * frac[v % 5] // 1000000
    else:
        up = (-v + 4) // 5
        ns = (d * frac[up * 5 + v] // 1000000) >> up
    ns = min(max(ns, 100000), 100000000)
    return 0 if (v < 0 and ns >= d) or (v > 0 and ns <= d) else ns


def cpu_cgroup(pid):
    """The task's cgroup in the v1 cpu hierarchy, or None."""
    with open(f"/proc/{pid}/cgroup") as f:
        for line in f:
            _, ctl, path = line.rstrip("\n").split(":", 2)
            if "cpu" in ctl.split(","):
                return path
    return None


def lines_until(p, word, timeout=120.0):
    """Lines Popen p (text stdout) prints until one starting with word, returned last."""
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        if not line:
            break
        out.append(line.strip())
        if line.startswith(word):
            break
    return out


def comm_of(pid):
    """/proc/PID/comm, or "" once it is gone."""
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def ppid_of(pid):
    """The parent of process pid, None once it is gone."""
    try:
        return int(stat_fields(pid)[4 - 3])
    except (OSError, ValueError, IndexError):
        return None


def uid_of(pid):
    """The real uid of process pid, None once it is gone."""
    try:
        return int(status_field(pid, "Uid").split()[0])
    except (OSError, KeyError):
        return None


def tids_of(pid):
    """The threads of process pid, [] once it is gone."""
    try:
        return [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        return []


def spawn_at(pid, user):
    """A process of user's (all its ids) at pid, which must be free (clone3's set_tid),
    made by root: it sleeps, with no exec (an exec would wake the daemon)."""
    libc = ctypes.CDLL(None, use_errno=True)
    SYS_CLONE3 = 435
    tid = (ctypes.c_int * 1)(pid)
    args = struct.pack("<11Q", 0, 0, 0, 0, signal.SIGCHLD, 0, 0, 0, ctypes.addressof(tid), 1, 0)
    buf = ctypes.create_string_buffer(args, len(args))
    r = libc.syscall(SYS_CLONE3, buf, ctypes.c_size_t(len(args)))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    if r == 0:
        try:
            os.setgroups([])
            os.setresgid(user.gid, user.gid, user.gid)
            os.setresuid(user.uid, user.uid, user.uid)
            time.sleep(300)
        finally:
            os._exit(0)
    return r


def namer(comm):
    """A python3 program that names itself comm (bytes, as /proc/self/comm takes them),
    prints its pid and waits for a line on stdin."""
    return f"""
import os, sys
with open("/proc/self/comm", "wb") as f:
    f.write({comm!r})
print(os.getpid(), flush=True)
sys.stdin.readline()
"""


def run_named(user, prog, d, py, comm):
    """The namer of comm, run by user (rqb_user's User) through rqctl prog's run -l 5 on
    daemon d with python py: its Popen and pid once it has named itself. It ends once
    its stdin is closed."""
    p = user.popen([prog, "-s", d.ctl, "run", "-l", "5", "--", py, "-c", namer(comm)],
                   stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    pid = int(p.stdout.readline())
    with open(f"/proc/{pid}/comm", "rb") as f:
        check(f.read() == comm + b"\n", "the user's process named itself")
    return p, pid


def unsafe(out):
    """The bytes of out a terminal would act on: C0 but newline, DEL, C1, not UTF-8."""
    bad = [b for b in out if (b < 0x20 and b != 0x0a) or b == 0x7f]
    if bad:
        return bad
    try:
        text = out.decode("utf-8")
    except UnicodeDecodeError as e:
        return f"not UTF-8: {e}"
    return [c for c in text if 0x80 <= ord(c) < 0xa0]


def wait_until(fn, timeout=3.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if fn():
            return True
        time.sleep(0.01)
    return fn()


def rqctl(d, *args):
    """rqctl against Daemon d's socket."""
    return subprocess.run([RQCTL, "-s", d.ctl, *args], capture_output=True, text=True,
                          timeout=30)


def fields(text):
    """'key value' lines (rqctl status) as a dict."""
    return dict(l.split(" ", 1) for l in text.splitlines() if " " in l)


def managed(d, pid):
    """(value, source) of rqctl get -p pid, or None where pid is not managed."""
    p = rqctl(d, "get", "-p", str(pid))
    if p.returncode != 0:
        return None
    f = fields(p.stdout)
    return int(f["value"]), f["source"]


CTL_HDR = struct.Struct("=IHHII")  # the ctl header: magic, version, type, length, seq


def ctl_raw(sock, data):
    """Sends bytes on a new connection to the ctl socket sock: (type, payload) of the
    reply, or None where the daemon closed the connection without one."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    s.connect(sock)
    try:
        s.sendall(data)
    except (BrokenPipeError, ConnectionResetError):
        pass
    got = b""
    try:
        while len(got) < CTL_HDR.size or \
                len(got) < CTL_HDR.size + CTL_HDR.unpack(got[:CTL_HDR.size])[3]:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except (socket.timeout, ConnectionResetError):
        pass
    s.close()
    if len(got) < CTL_HDR.size:
        return None
    _, _, typ, length, _ = CTL_HDR.unpack(got[:CTL_HDR.size])
    return typ, got[CTL_HDR.size:CTL_HDR.size + length].decode()


class OwnCgroup:
    """A cgroup of the test's own at mount + rel, made here with knob = value. add(pid)
    moves a task in; remove() waits until its tasks are gone (the test killed them: the
    cgroup empties once they are reaped), then removes it."""

    def __init__(self, mount, rel, knob, value):
        self.rel = rel
        self.path = mount + rel
        os.mkdir(self.path)
        with open(os.path.join(self.path, knob), "w") as f:
            f.write(value)

    def add(self, pid):
        with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
            f.write(str(pid))

    def remove(self):
        wait_until(lambda: not open(os.path.join(self.path, "cgroup.procs")).read().strip(), 30)
        os.rmdir(self.path)


def class_mount(d):
    """Where Daemon d's latency class cgroups live (the v1 cpu hierarchy, else
    cgroup2), or None when they are off: then the daemon takes no cgroup targets."""
    if fields(rqctl(d, "status").stdout).get("latency_class_cgroups", "off") == "off":
        return None
    v2 = None
    with open("/proc/self/mounts") as f:
        for line in f:
            _, where, fs, opts = line.split()[:4]
            if fs == "cgroup" and "cpu" in opts.split(","):
                return where
            if fs == "cgroup2":
                v2 = where
    return v2


def task_line(pid, cpu, allowed_list="0-1", comm="sh", cgroup="/", flags=0):
    return f"task {pid} {pid} {cpu} {start_time(pid)} {flags} {allowed_list} {comm} {cgroup}"


def write_replay(path, snapshots):
    """snapshots: list of (cpus, tasks); cpus is [(cpu, nr_running, busy_pct)],
    tasks a list of task_line() strings."""
    with open(path, "w") as f:
        f.write("# written by an rqbalance integration test\n")
        for seq, (cpus, tasks) in enumerate(snapshots, 1):
            f.write(f"snapshot {seq} {seq * 100000000} 1\n")
            for c, nr, busy in cpus:
                f.write(f"cpu {c} {nr} {busy}\n")
            for t in tasks:
                f.write(t + "\n")
            f.write("end\n")


def write_overload(path, a, b, comm="sh"):
    """Both tasks runnable on CPU 0 (LLC 0 of the fake topology), CPU 1 idle."""
    write_replay(path, [([(0, 2, 100), (1, 0, 0)],
                         [task_line(a, 0, comm=comm), task_line(b, 0, comm=comm)])])


def overload_replay(tmp, hogs, comm="sh"):
    """Two hogs' pids, the younger last, and tmp/overload.replay, where both are
    runnable on CPU 0 (write_overload): the set-up of a test of one pin."""
    a, b = sorted(hogs.pids)
    replay = os.path.join(tmp, "overload.replay")
    write_overload(replay, a, b, comm=comm)
    return a, b, replay


class Daemon:
    """rqbalanced in the foreground, with its own journal dir, ctl socket, class cgroups
    and a log file. Unless args name a topology, it runs on TOPO_1LLC (topology=None:
    the machine's own), so that it never moves another run's or the machine's tasks."""

    def __init__(self, tmp, args=(), conf="", env=None, journal=None, topology=TOPO_1LLC,
                 wrap=()):
        if topology and "--topology" not in args:
            args = ["--topology", topology, *args]
        topo = args[args.index("--topology") + 1] if "--topology" in args else None
        if topo == TOPO_2LLC and "min_llc_cores" not in conf:
            # The fake topology's two LLCs are of one core each: the tests of spreading
            # across them ask for it (min_llc_cores = 2 by default leaves them alone).
            conf = f"[balance]\nmin_llc_cores = 1\n{conf}"
        self.tmp = tmp
        self.journal = journal or os.path.join(tmp, "run")
        self.conf = os.path.join(tmp, "rqbalance.conf")
        self.ctl = os.path.join(tmp, "ctl.sock")
        self.log = os.path.join(tmp, f"daemon-{time.monotonic_ns()}.log")
        with open(self.conf, "w") as f:
            # Class cgroups below a parent of the test's own, not beside a real daemon's.
            # No rules but the test's: rules_dir defaults to the machine's rules.d.
            f.write(f"[daemon]\njournal_dir = {self.journal}\nctl_socket = {self.ctl}\n"
                    f"log_level = debug\nrules_dir =\n[latency]\ncgroup_root = {CGROUP_ROOT}\n"
                    f"{conf}")
        e = dict(os.environ)
        e.pop("NOTIFY_SOCKET", None)
        e.pop("JOURNAL_STREAM", None)
        e.update(env or {})
        self.logf = open(self.log, "w")
        # wrap: a command that runs the daemon (unshare ...); self.proc is then that.
        self.proc = subprocess.Popen([*wrap, DAEMON, "-f", "-c", self.conf, *args],
                                     stdout=self.logf, stderr=subprocess.STDOUT, env=e)

    def text(self):
        with open(self.log) as f:
            return f.read()

    # Waits for an event; the timeout is only a safety net against a daemon that never
    # logs it (an ASan daemon loading BPF beside a loaded machine took over 10 s).
    def wait_for(self, pattern, timeout=120.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            m = re.search(pattern, self.text())
            if m:
                return m
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        raise AssertionError(f"log never matched {pattern!r}; log:\n{self.text()}")

    def sync(self, ticks=1):
        """Waits until the daemon has handled every fork, exec and exit so far and has
        ended `ticks` ticks begun after the call (rqctl sync); returns its tick count.
        What the test did before is then seen and acted on: check the outcome at once."""
        for _ in range(ticks):
            r = subprocess.run([RQCTL, "-s", self.ctl, "sync"], capture_output=True, text=True,
                               timeout=60)
            if r.returncode != 0:
                raise AssertionError(f"rqctl sync failed: {r.stderr.strip()}; log:\n{self.text()}")
        return int(r.stdout.split()[1])

    def stop(self, sig=signal.SIGTERM, timeout=120.0):
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            rc = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            rc = self.proc.wait()
            raise AssertionError("daemon did not stop in time")
        self.logf.close()
        return rc

    def alive(self):
        return self.proc.poll() is None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.proc.poll() is None:
            self.stop()
        print("--- daemon log ---")
        print(self.text())


def conf_line(path, key):
    """The number of the first line of config file path that starts with key, as the
    daemon's file:line errors give it."""
    with open(path) as f:
        for n, line in enumerate(f, 1):
            if line.startswith(key):
                return n
    raise AssertionError(f"no {key} in {path}")


def private_copy(tmp, prog):
    """A copy of prog (a name on PATH, or a path) in a directory of the test's own that
    every user may enter: a rule naming its exe matches what this test runs and nothing
    else, not another run's processes nor the machine's. Its comm stays prog's."""
    src = os.path.realpath(shutil.which(prog) or prog)
    d = os.path.join(tmp, "bin")
    os.makedirs(d, exist_ok=True)
    for p in (tmp, d):
        os.chmod(p, 0o755)
    dst = os.path.join(d, os.path.basename(src))
    shutil.copy2(src, dst)
    return dst


def record_lines(path):
    """Each line of a --record file, split into its fields. A comm is the kernel's
    bytes, which need not be UTF-8: they are read as they are."""
    with open(path, errors="surrogateescape") as f:
        return [line.split() for line in f]


def tmpdir():
    return tempfile.TemporaryDirectory(prefix="rqb-it-")


class NotifySocket:
    """A datagram socket standing in for the service manager's NOTIFY_SOCKET."""

    def __init__(self, tmp):
        self.path = os.path.join(tmp, "notify.sock")
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(self.path)
        self.sock.settimeout(0.1)
        self.messages = []

    def drain(self, timeout=0.5):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.messages.append(self.sock.recv(4096).decode())
            except socket.timeout:
                pass
        return self.messages

    def wait_for(self, line, timeout=120.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for m in self.messages:
                if line in m.split("\n"):
                    return m
            self.drain(0.1)
        raise AssertionError(f"no notify message with {line!r}; got {self.messages}")


def user_rqctl(tmp):
    """A copy of rqctl the test user may run, in tmp, which it may enter (the checkout may
    sit where the user cannot reach); tmp also holds the daemon's socket."""
    os.chmod(tmp, 0o755)
    prog = os.path.join(tmp, "rqctl")
    shutil.copy(RQCTL, prog)
    os.chmod(prog, 0o755)
    return prog


def main(fn):
    # What the tests check is measured from the kernel's default nice, 0, which is what
    # every process they start inherits: a run under nice(1) starts them there again,
    # as root may (a lower priority for the whole run is not theirs to keep).
    if os.geteuid() == 0 and os.getpriority(os.PRIO_PROCESS, 0) != 0:
        os.setpriority(os.PRIO_PROCESS, 0, 0)
    try:
        fn()
    except AssertionError as e:
        print("FAIL:", e)
        sys.exit(1)
