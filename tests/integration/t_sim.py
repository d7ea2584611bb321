"""The simulator's own invariants: every scenario under every balancer keeps its tasks
(each queued task on exactly one run queue, none lost or duplicated), runs a task only
on CPUs it is allowed, splits its wasted idle into parts that add up, and places
wakeups wide only where the workload makes wake_wide() say so; and a seed gives the
same figures twice (another seed, others)."""
import os
import subprocess
import sys

from rqb import BUILD, ROOT, check, main, skip


def test():
    sim = os.path.join(ROOT, BUILD, "bench", "sim", "sim")
    if not os.path.exists(sim):
        skip(f"{sim} is not built")
    p = subprocess.run([sim, "--check"], capture_output=True, text=True, timeout=600)
    sys.stdout.write(p.stdout + p.stderr)
    check(p.returncode == 0, "sim --check exits 0")
    lines = p.stdout.splitlines()
    check(lines[-1].endswith(" passed, 0 failed"), "no invariant broke")
    check(sum(l.startswith("PASS ") for l in lines) >= 67, "every scenario and balancer ran")


main(test)
