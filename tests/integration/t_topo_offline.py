"""A fake topology that names CPUs which are not online here: tests/data/
topo-4cpu-interleaved.xml has LLCs {0,2} and {1,3}, of which this machine has only
CPUs 0 and 1. The daemon says it leaves CPUs 2 and 3 out, counts each LLC by its
online CPU, and never pins to an offline CPU, even when the replayed snapshot shows
CPUs 2 and 3 idle. (A CPU that goes offline while the daemon runs is the VM tier's
t_hotplug: this machine's CPUs are not the test's to unplug.)"""
import os
import re
import subprocess

from rqb import (RQCTL, ROOT, Daemon, Hogs, allowed, check, main, require, task_line, tmpdir,
                 write_replay)

TOPO = os.path.join(ROOT, "tests", "data", "topo-4cpu-interleaved.xml")


def test():
    require()
    with open("/sys/devices/system/cpu/online") as f:
        online = f.read().strip()
    if online != "0-1":
        print(f"needs exactly CPUs 0-1 online (the XML's 2 and 3 offline), not {online}")
        raise SystemExit(77)
    with tmpdir() as tmp, Hogs(2) as hogs:
        a, b = sorted(hogs.pids)
        replay = os.path.join(tmp, "overload.replay")
        snap = ([(0, 2, 100), (1, 0, 0), (2, 0, 0), (3, 0, 0)],
                [task_line(a, 0), task_line(b, 0)])
        write_replay(replay, [snap])
        # Each LLC keeps one online core here: below the default min_llc_cores (2),
        # which would leave nothing to spread across.
        with Daemon(tmp, ["--topology", TOPO, "--replay", replay],
                    conf="[balance]\nmin_llc_cores = 1\n") as d:
            d.wait_for(r"topology: 2 CPUs it names are not online here: left out")
            d.wait_for(rf"pin tid={b} .* llc=0->1 cpus=1 why=overload")
            check("2 CPUs, 2 cores, 2 LLCs" in d.text(), "two LLCs of one online CPU each")
            status = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True,
                                    text=True).stdout
            check(re.search(r"^llc 0 cpus 0 ", status, re.M) and
                  re.search(r"^llc 1 cpus 1 ", status, re.M),
                  "rqctl status shows LLC 0 as CPU 0 and LLC 1 as CPU 1")
            check(allowed(b) == {1}, f"{b} is pinned to CPU 1 alone")
            pins = re.findall(r" pin tid=\d+ .* cpus=(\S+) ", d.text())
            check(pins and all(p == "1" for p in pins),
                  f"no pin names CPU 2 or 3 ({pins})")
            check(d.stop() == 0, "clean stop")
        check(allowed(b) == {0, 1}, "the stop gives the pin back")


main(test)
