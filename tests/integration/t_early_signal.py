"""A SIGTERM that arrives while the daemon is still starting (loading the topology,
restoring a journal, before its event loop runs) is not lost and does not kill it
half-started: once the daemon has blocked the signal at the top of its start-up,
the signal waits for the loop and the daemon stops in order, exit 0."""
import signal
import time

from rqb import Daemon, check, main, require, status_field, tmpdir

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


def test():
    require()
    with tmpdir() as tmp:
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
