"""Holds a running daemon at the entry of one system call (ptrace), so that a test can do
what another task might do between the daemon's last check and its write, at exactly
that moment: the window of a race, made certain instead of waited for. x86_64 only.

A Holder is a thread of the test (every ptrace request comes from the thread that
attached): it seizes every thread of the process, and the ones it makes, stops each at
every system call, and runs `action` once, at the first entry that `match` accepts;
the daemon's thread stays stopped until the action returns. While it traces a child of
the test's, nothing else in the test may wait for that child (Popen.poll, wait): a
waitpid from any thread of the tracer's process takes the tracee's ptrace stops too,
and the one taken is never resumed."""
import ctypes
import errno
import os
import platform
import signal
import threading
import time

PTRACE_SYSCALL = 24
PTRACE_DETACH = 17
PTRACE_SEIZE = 0x4206
PTRACE_INTERRUPT = 0x4207
PTRACE_GET_SYSCALL_INFO = 0x420E
PTRACE_O_TRACESYSGOOD = 1
PTRACE_O_TRACECLONE = 8
PTRACE_EVENT_CLONE = 3
PTRACE_EVENT_STOP = 128
WALL = 0x40000000
SYSCALL_INFO_ENTRY = 1

NR_WRITE = 1
NR_SCHED_SETAFFINITY = 203
NR_SCHED_SETATTR = 314

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.restype = ctypes.c_long
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]


def supported():
    return platform.machine() == "x86_64"


def ptrace(req, tid, addr=0, data=0):
    r = libc.ptrace(req, tid, ctypes.c_void_p(addr), ctypes.c_void_p(data))
    if r == -1:
        e = ctypes.get_errno()
        raise OSError(e, f"ptrace({req:#x}, {tid}): {os.strerror(e)}")
    return r


def entry(tid):
    """(nr, args) at a syscall-entry stop of tid, else None."""
    buf = ctypes.create_string_buffer(88)
    n = ptrace(PTRACE_GET_SYSCALL_INFO, tid, 88, ctypes.addressof(buf))
    raw = buf.raw[:n]
    if n < 80 or raw[0] != SYSCALL_INFO_ENTRY:
        return None
    nr = int.from_bytes(raw[24:32], "little")
    args = [int.from_bytes(raw[32 + 8 * i:40 + 8 * i], "little") for i in range(6)]
    return nr, args


def read_mem(tid, addr, size):
    with open(f"/proc/{tid}/mem", "rb") as f:
        f.seek(addr)
        return f.read(size)


def fd_path(pid, fd):
    try:
        return os.readlink(f"/proc/{pid}/fd/{fd}")
    except OSError:
        return ""


class Holder(threading.Thread):
    """Traces process pid until stop(); runs action() once, at the first syscall entry
    for which match(tid, nr, args) is true. .fired says whether it did, .error what
    went wrong in the tracer."""

    def __init__(self, pid, match, action):
        super().__init__(daemon=True)
        self.pid, self.match, self.action = pid, match, action
        self.tids = set()
        self.fired = threading.Event()
        self.ready = threading.Event()
        self.quit = threading.Event()
        self.error = None

    def seize(self, tid):
        try:
            ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACESYSGOOD | PTRACE_O_TRACECLONE)
            ptrace(PTRACE_INTERRUPT, tid)
        except OSError as e:
            if e.errno != errno.ESRCH:
                raise
            return
        self.tids.add(tid)

    def resume(self, tid, sig=0):
        try:
            ptrace(PTRACE_SYSCALL, tid, 0, sig)
        except OSError as e:
            if e.errno != errno.ESRCH:
                raise
            self.tids.discard(tid)

    def handle(self, tid, status):
        if os.WIFEXITED(status) or os.WIFSIGNALED(status):
            self.tids.discard(tid)
            return
        sig, event = os.WSTOPSIG(status), status >> 16
        if event == PTRACE_EVENT_CLONE:
            # The new thread is traced already (TRACECLONE) and starts with a stop.
            self.tids.add(self.new_tid(tid))
            self.resume(tid)
        elif event == PTRACE_EVENT_STOP or sig == signal.SIGTRAP and event:
            self.resume(tid)
        elif sig == signal.SIGTRAP | 0x80:
            if not self.fired.is_set():
                got = entry(tid)
                if got and self.match(tid, *got):
                    try:
                        self.action()
                    finally:
                        self.fired.set()
            self.resume(tid)
        else:
            self.resume(tid, sig)

    def new_tid(self, tid):
        msg = ctypes.c_ulong()
        ptrace(0x4201, tid, 0, ctypes.addressof(msg))  # PTRACE_GETEVENTMSG
        return msg.value

    def run(self):
        try:
            for t in os.listdir(f"/proc/{self.pid}/task"):
                self.seize(int(t))
            self.ready.set()
            while self.tids and not self.quit.is_set():
                if not self.poll_once():
                    time.sleep(0.0005)
        except Exception as e:  # handed to the test, which fails with it
            self.error = e
            self.ready.set()
            self.fired.set()
        finally:
            # Never leave a thread of the daemon stopped, whatever happened here.
            self.detach()

    def poll_once(self):
        busy = False
        for tid in list(self.tids):
            try:
                w, status = os.waitpid(tid, os.WNOHANG | WALL)
            except ChildProcessError:
                self.tids.discard(tid)
                continue
            if w:
                busy = True
                self.handle(tid, status)
        return busy

    def detach(self):
        """Stops each thread once more and lets it go."""
        for tid in list(self.tids):
            try:
                ptrace(PTRACE_INTERRUPT, tid)
            except OSError:
                self.tids.discard(tid)
        deadline = time.monotonic() + 30
        while self.tids and time.monotonic() < deadline:
            for tid in list(self.tids):
                try:
                    w, status = os.waitpid(tid, os.WNOHANG | WALL)
                except ChildProcessError:
                    self.tids.discard(tid)
                    continue
                if not w:
                    continue
                if os.WIFEXITED(status) or os.WIFSIGNALED(status):
                    self.tids.discard(tid)
                    continue
                sig = os.WSTOPSIG(status)
                deliver = 0 if sig in (signal.SIGTRAP, signal.SIGTRAP | 0x80) or status >> 16 \
                    else sig
                try:
                    ptrace(PTRACE_DETACH, tid, 0, deliver)
                except OSError:
                    pass
                self.tids.discard(tid)
            time.sleep(0.001)

    def stop(self):
        self.quit.set()
        self.join(60)
