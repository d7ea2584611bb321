"""A SIGTERM that arrives while the daemon is still starting (loading the topology,
restoring a journal, before its event loop runs) is not lost and does not kill it
half-started: once the daemon has blocked the signal at the top of its start-up,
the signal waits for the loop and the daemon stops in order, exit 0. Five free runs
send it as soon as it is blocked, wherever start-up then is; one more holds start-up
open (its replay file is a FIFO, which it opens only after blocking the signal), so
that the signal surely comes before the loop."""
import errno
import os
import signal
import time

from rqb import Daemon, check, main, require, status_field, tmpdir, write_replay

SIGTERM_BIT = 1 << (signal.SIGTERM - 1)


def wait_blocked(pid):
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            if int(status_field(pid, "SigBlk"), 16) & SIGTERM_BIT:
                return True
        except (FileNotFoundError, ProcessLookupError):
            return False
        time.sleep(0.0002)
    return False


def pending(pid):
    """SIGTERM is pending for the whole process: sent, not yet taken."""
    return bool(int(status_field(pid, "ShdPnd"), 16) & SIGTERM_BIT)


def open_writer(fifo, d):
    """The FIFO opened for writing once the daemon opens it for reading."""
    while d.alive():
        try:
            return os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise
        time.sleep(0.01)
    raise AssertionError(f"the daemon stopped before it read its replay; log:\n{d.text()}")


def held_start(tmp):
    """The signal sent while start-up waits on the replay FIFO: before the loop, surely."""
    fifo = os.path.join(tmp, "held.replay")
    os.mkfifo(fifo)
    content = os.path.join(tmp, "idle.replay")
    write_replay(content, [([(0, 0, 0), (1, 0, 0)], [])])
    d = Daemon(tmp, ["--replay", fifo])
    check(wait_blocked(d.proc.pid), "held run: SIGTERM blocked during start-up")
    d.proc.send_signal(signal.SIGTERM)
    check(d.alive() and pending(d.proc.pid) and "running:" not in d.text(),
          "held run: the SIGTERM waits, pending, with the loop not started")
    fd = open_writer(fifo, d)
    with open(content, "rb") as f:
        os.write(fd, f.read())
    os.close(fd)
    rc = d.stop(0)  # no second signal: the pending one must stop it
    text = d.text()
    check(rc == 0 and "running:" in text and "stopped:" in text,
          f"held run: the loop started, then the daemon stopped in order: exit {rc}")


def test():
    require()
    with tmpdir() as tmp:
        held_start(tmp)
        for i in range(5):
            # The default one-LLC topology: a daemon whose loop runs before the signal is
            # handled samples live and must find nothing to move (on two fake LLCs it
            # could pin another run's busy tasks for the moment it runs).
            d = Daemon(tmp)
            check(wait_blocked(d.proc.pid), f"run {i}: SIGTERM blocked during start-up")
            early = "running:" not in d.text()
            rc = d.stop(signal.SIGTERM)
            check(rc == 0, f"run {i}: SIGTERM {'before' if early else 'after'} the loop "
                  f"started: exit {rc}")


main(test)
