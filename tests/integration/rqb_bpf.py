"""Helpers for the bpf sampler's integration tests (see rqb.py for the rest)."""
import re
import time

from rqb import record_lines, skip

# Capability bits, as /proc/PID/status prints them in hex.
CAP_SYS_ADMIN, CAP_SYS_NICE, CAP_PERFMON, CAP_BPF = 21, 23, 38, 39


def wait_bpf(d, timeout=60.0):
    """Waits until d runs the bpf sampler; skips (exit 77) with the daemon's reason
    if BPF cannot load here, fails if it starts some other way. The timeout only
    bounds a failure: an ASan daemon loading BTF beside 40 hogs on a crowded machine
    took more than 15 s to say it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = d.text()
        m = re.search(r"bpf sampler: cannot start: (.*)", text)
        if m:
            d.stop()
            skip(f"the bpf sampler cannot load here: {m.group(1)}")
        if re.search(r"running: sampler ", text):
            d.wait_for(r"running: sampler bpf", timeout=0.1)
            return re.search(r"bpf: rq via ([a-z ]+?),", text).group(1)
        if not d.alive():
            break
        time.sleep(0.05)
    raise AssertionError(f"the daemon never said 'running:'; log:\n{d.text()}")


def caps(pid):
    """(effective, permitted) capability sets of pid, as ints."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("CapEff", "CapPrm"):
                out[k] = int(v.strip(), 16)
    return out["CapEff"], out["CapPrm"]


def records(path):
    """The snapshots in a --record file: a list of (cpus {cpu: nr}, tasks [fields])."""
    snaps, cpus, tasks = [], {}, []
    for w in record_lines(path):
        if not w:
            continue
        if w[0] == "snapshot":
            cpus, tasks = {}, []
        elif w[0] == "cpu":
            cpus[int(w[1])] = int(w[2])
        elif w[0] == "task":
            tasks.append(w)
        elif w[0] == "end":
            snaps.append((cpus, tasks))
    return snaps
