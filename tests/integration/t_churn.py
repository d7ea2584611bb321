"""Churn, scaled down for make check (bench/churn runs it at full size): 2,000 threads
held in 4 processes and 200 execs a second for 8 s, half of them of a binary a rule
names, after a fork storm of 20,000 forks from a managed process (and, when that does
not overflow the event source here, the churn starts with the storm again, the
daemon stopped while it forks and the holders start). The daemon stays alive and
ticking, every matching process gets its setting and no other process is written to
(each child checks itself), its journal names only matching tasks by pid and start
time, every overflow (of the BPF ring buffer or the connector socket) is counted and
followed by a rescan, and its VmRSS comes back to rest by its next heap trim. What is checked, and the criteria, are in churn.py."""
import os
import shutil
import sys

import churn
from rqb import main, require, tmpdir


def test():
    require()
    if not os.path.exists("/sys/fs/cgroup/cpu/cpu.shares"):
        print("needs the v1 cpu controller at /sys/fs/cgroup/cpu (the class cgroup is "
              "what each child checks)")
        sys.exit(77)
    if not (shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")):
        print("needs a C compiler for bench/churn_load.c and bench/churn_child.c")
        sys.exit(77)
    with tmpdir() as tmp:
        fig, failed = churn.run(tmp, "ci")
        print(" ".join(f"{k}={v}" for k, v in sorted(fig.items())))
    if failed:
        raise AssertionError(f"{len(failed)} checks failed: " + "; ".join(failed))


main(test)
