"""A request the daemon was late for is answered; a client that is late is not (the
CI failure of stop 55: a guest's `rqctl set` found its connection closed). A
connection's deadline (CTL_CONN_TIMEOUT_USEC, 2 s) bounds how long a client may hold
it; it used to count the daemon's own delays too: a user's request that came whole
while the loop was busy elsewhere lost to its deadline, whose timer sd-event serves
ahead of a user's socket. Here an unprivileged user has a status answered on
connection A, opens B (which never sends) and C (half a header); the daemon is
stopped (SIGSTOP), A's second status is written, and the daemon resumes past A's
deadline:
- A's status is answered (the connection then ends);
- B and C are closed unanswered, as before: a slow client still holds nothing."""
import os
import signal
import subprocess
import sys
import time

from rqb import Daemon, check, lines_until, main, private_copy, require, tmpdir
from rqb_user import User

HERE = os.path.dirname(os.path.abspath(__file__))
PYTHON = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else sys.executable
OK = 100
DEADLINE_S = 2.0


def test():
    require()
    with tmpdir() as tmp, User("rqbw") as user:
        # Where the user may read it (tmp and tmp/bin 755).
        helper = private_copy(tmp, os.path.join(HERE, "ctl_stall.py"))
        with Daemon(tmp) as d:
            d.wait_for(r"running: sampler")
            p = user.popen([PYTHON, helper, "late", d.ctl], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, text=True)
            opened = lines_until(p, "opened")
            check(opened[-1:] == ["opened"] and f"reply first {OK}" in opened,
                  f"the user's first status is answered ({opened})")
            accepted = time.monotonic()
            d.proc.send_signal(signal.SIGSTOP)
            try:
                p.stdin.write("go\n")
                p.stdin.flush()
                sent = lines_until(p, "sent")
                check(sent == ["sent"], f"A's second status is written ({sent})")
                # The stimulus is time itself: the deadline of a connection accepted
                # before `accepted` passes while the daemon cannot run.
                time.sleep(max(0.0, accepted + DEADLINE_S + 0.5 - time.monotonic()))
            finally:
                d.proc.send_signal(signal.SIGCONT)
            p.stdin.write("read\n")
            p.stdin.flush()
            out = lines_until(p, "done")
            p.wait()
            check(f"reply A {OK}" in out,
                  f"the status the daemon was late for is answered ({out})")
            check("closed B" in out and "closed C" in out,
                  f"a client that sent nothing, or half a header, is still closed ({out})")
            check(d.proc.poll() is None, "the daemon runs")


main(test)
