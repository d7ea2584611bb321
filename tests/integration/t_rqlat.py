"""Run-queue wait histograms (rqctl latency): under a wakeup workload given
latency-nice -7 through rqctl run, beside two CPU hogs, class -7's count is above 0
after one run of it and grows with a second run (with waits timed from the kernel's
enqueue mark, histograms_from = queue, and from the programs' own wakeup stamps), its buckets add up to its total, and the unmanaged
class ("none") counts too; the text form draws runqlat-style bars; a user other than
root may read them. Where the BPF programs cannot load (the daemon started without
CAP_BPF and CAP_PERFMON), the daemon runs on and rqctl latency says why; so it does
where [daemon] histograms = no turned them off.
Skips (77) with the daemon's reason where BPF cannot load at all."""
import json
import os
import re
import shutil
import subprocess

import rqb
from rqb import RQCTL, Daemon, Hogs, check, main, require, skip, tmpdir

WAKELAT = os.path.join(rqb.ROOT, rqb.BUILD, "bench", "wakelat")
VALUE = -7
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


def rqctl(sock, *args, pre=()):
    return subprocess.run([*pre, RQCTL, "-s", sock, *args], capture_output=True, text=True,
                          timeout=30)


def wait_histograms(d):
    """Skips with the daemon's reason if the programs cannot load here."""
    m = d.wait_for(r"run-queue wait histograms(: on| unavailable: (.*))")
    if m.group(2):
        d.stop()
        skip(f"the BPF histograms cannot load here: {m.group(2)}")
    d.wait_for(r"running: sampler")


def histograms(sock):
    p = rqctl(sock, "--json", "latency")
    check(p.returncode == 0, f"rqctl --json latency answers (rc {p.returncode}, {p.stderr!r})")
    return json.loads(p.stdout)


def check_class(h, name, settled=True):
    """settled: no task counts in the class any more while it is read. The daemon reads
    each CPU's slot while the BPF programs write it (bucket, then total): a class that
    counts as it is read may show one more in a bucket than in its total."""
    c = h.get(name)
    check(c is not None and c["total"] > 0, f"class {name} has waits: {c and c['total']}")
    if settled:
        check(sum(b["count"] for b in c["buckets"]) == c["total"],
              f"class {name}: the buckets add up to the total")
    check(all(b["hi_us"] is None or b["hi_us"] == 2 * max(b["lo_us"], 1)
              for b in c["buckets"]), f"class {name}: log2 buckets of microseconds")
    return c["total"]


def managed_workload(tmp, start):
    """start: [daemon] histograms_from, queue (the default) or wakeup."""
    if not os.path.exists(WAKELAT):
        skip(f"{WAKELAT} is not built (make benches)")
    d = Daemon(tmp, conf=f"[daemon]\nhistograms_from = {start}\n")
    with d:
        wait_histograms(d)
        m = d.wait_for(r"run-queue wait histograms: on \(rqctl latency\), waits from the "
                       r"(enqueue|wakeup)(: the enqueue mark's program did not load: .+)?")
        if start == "wakeup":
            check(m.group(1) == "wakeup" and not m.group(2), "waits count from the wakeup")
        else:
            check((m.group(1) == "enqueue") != bool(m.group(2)),
                  f"waits count from the enqueue, or the log says why not: {m.group(0)!r}")
        with Hogs(2):
            # Two runs of the workload, each to its end: its main thread sleeps on a
            # timer every interval (the first sleep at the latest in its first
            # interval), and every wakeup of it counts in its class, -7 from before
            # its exec (rqctl run sets it, then execs). So each run adds to class -7,
            # and a read after a run has all of that run's waits.
            reads = []
            for i in (1, 2):
                work = subprocess.run([RQCTL, "-s", d.ctl, "run", "-l", str(VALUE), "--",
                                       WAKELAT, "--seconds", "1"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                      timeout=60)
                check(work.returncode == 0,
                      f"run {i} of the workload went through rqctl run ({work.returncode}, "
                      f"{work.stderr.decode().strip()!r})")
                # Its exits handled, none of its tids counts as -7 any more.
                d.sync()
                reads.append(histograms(d.ctl))
        first, second = reads
        a = check_class(first, str(VALUE))
        b = check_class(second, str(VALUE))
        check(b > a, f"class {VALUE}'s count grew with the second run: {a} -> {b}")
        check_class(second, "none", settled=False)
        check(all(re.fullmatch(r"-?\d+|none|cg:/\S*", k) for k in second),
              f"classes are values, none or cgroups: {sorted(second)}")
        p = rqctl(d.ctl, "latency")
        check(p.returncode == 0 and f"class {VALUE}:" in p.stdout and
              re.search(r"^\s+\d+ -> \d+ : \d+\s+\|\**\s*\|$", p.stdout, re.M),
              "the text form draws a histogram per class")
        print(p.stdout)
        if shutil.which("setpriv"):
            os.chmod(tmp, 0o755)
            p = rqctl(d.ctl, "latency", "--json", pre=NOBODY)
            check(p.returncode == 0 and str(VALUE) in json.loads(p.stdout),
                  f"a user other than root reads them ({p.returncode}, {p.stderr!r})")


def refused(tmp):
    """Started without CAP_BPF and CAP_PERFMON: the daemon runs, rqctl latency says why."""
    if not shutil.which("setpriv"):
        print("setpriv(1) missing: the refused path is not tried")
        return
    wrapper = os.path.join(tmp, "confined-rqbalanced")
    with open(wrapper, "w") as f:
        f.write('#!/bin/sh\nexec setpriv --bounding-set -bpf,-perfmon,-sys_admin '
                f'"{rqb.DAEMON}" "$@"\n')
    os.chmod(wrapper, 0o755)
    saved, rqb.DAEMON = rqb.DAEMON, wrapper
    try:
        d = Daemon(tmp, conf="[daemon]\nsampler = proc\n")
    finally:
        rqb.DAEMON = saved
    with d:
        m = d.wait_for(r"run-queue wait histograms(: on| unavailable: (.*))")
        check(m.group(2) is not None, f"one line says the histograms are off: {m.group(0)!r}")
        d.wait_for(r"running: sampler proc")
        p = rqctl(d.ctl, "latency")
        check(p.returncode == 1 and "BPF programs did not load" in p.stderr,
              f"rqctl latency says why: {p.stderr.strip()!r}")
        p = rqctl(d.ctl, "status")
        check(p.returncode == 0, "the daemon still serves status")


def turned_off(tmp):
    """[daemon] histograms = no: no programs on the switch path, and rqctl latency says
    the config turned them off."""
    with Daemon(tmp, conf="[daemon]\nhistograms = no\n") as d:
        d.wait_for(r"running: sampler")
        check("run-queue wait histograms: off ([daemon] histograms = no)" in d.text(),
              "one line says the config turned them off")
        p = rqctl(d.ctl, "latency")
        check(p.returncode == 1 and "[daemon] histograms = no" in p.stderr and
              "did not load" not in p.stderr, f"rqctl latency says why: {p.stderr.strip()!r}")
        check(d.stop() == 0, "clean stop")


def test():
    require()
    for start in ("queue", "wakeup"):
        with tmpdir() as tmp:
            managed_workload(tmp, start)
    with tmpdir() as tmp:
        refused(tmp)
    with tmpdir() as tmp:
        turned_off(tmp)


main(test)
