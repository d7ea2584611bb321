"""The fallback to /proc, where BPF is forced off and where the kernel refuses it.

Forced off: sampler = proc never tries BPF. Refused: the daemon runs under
setpriv(1) with CAP_BPF, CAP_PERFMON and CAP_SYS_ADMIN out of its bounding set, so
root gets none of them at exec and the kernel itself refuses to create the BPF
maps and programs (EPERM): this is the path an unprivileged or confined service
takes. There, sampler = auto says why in one log line and samples /proc, and
rqctl status names the proc sampler; sampler = bpf fails to start, saying why."""
import os
import re
import shutil
import subprocess
import time

import rqb
from rqb import RQCTL, Daemon, check, main, require, skip, tmpdir

DROP = "-bpf,-perfmon,-sys_admin"


def confined(tmp):
    """A wrapper that starts the daemon without the three capabilities."""
    path = os.path.join(tmp, "confined-rqbalanced")
    with open(path, "w") as f:
        f.write(f'#!/bin/sh\nexec setpriv --bounding-set {DROP} "{rqb.DAEMON}" "$@"\n')
    os.chmod(path, 0o755)
    return path


def status(d):
    p = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True, text=True,
                       timeout=10)
    return p.stdout


def bpf_lines(text):
    """The sampler's lines about BPF; the latency event source's (t_events) say what
    they are apart: it tries BPF whatever the sampler."""
    return [l for l in text.splitlines() if re.search(r"\bbpf\b|libbpf", l) and
            "task-events" not in l and "latency:" not in l and "bpfev:" not in l]


def forced_off(tmp):
    with Daemon(tmp, ["--dry-run", "-l", "info"], conf="[daemon]\nsampler = proc\n") as d:
        d.wait_for(r"running: sampler proc")
        check(not bpf_lines(d.text()), "sampler = proc: no attempt at BPF is logged")
        check(d.stop() == 0, "clean stop")


def refused(tmp):
    real = rqb.DAEMON
    rqb.DAEMON = confined(tmp)
    try:
        with Daemon(tmp, ["--dry-run", "-l", "info"]) as d:
            d.wait_for(r"running: sampler ")
            lines = bpf_lines(d.text())
            print("bpf lines:", lines)
            check(len(lines) == 1 and "bpf sampler unavailable: " in lines[0] and
                  "using the proc sampler" in lines[0], "auto: one line says BPF is unavailable")
            check("Operation not permitted" in lines[0], "and that the kernel refused it")
            check("running: sampler proc" in d.text(), "auto: the proc sampler runs")
            if os.path.exists(RQCTL):
                check("sampler proc\n" in status(d), "rqctl status names the proc sampler")
            check(d.stop() == 0, "clean stop")
        with Daemon(tmp, ["--dry-run", "-l", "info"], conf="[daemon]\nsampler = bpf\n") as d:
            rc = d.proc.wait(30)
            m = re.search(r"bpf sampler: cannot start: (.*)", d.text())
            check(rc != 0, f"sampler = bpf: the daemon fails to start (exit {rc})")
            check(m and "Operation not permitted" in m.group(1), "and says why")
    finally:
        rqb.DAEMON = real


def test():
    require()
    if not shutil.which("setpriv"):
        skip("needs setpriv(1) (util-linux) to start the daemon without CAP_BPF")
    p = subprocess.run(["setpriv", "--bounding-set", DROP, "true"], capture_output=True)
    if p.returncode != 0:
        skip(f"this setpriv cannot drop {DROP}: {p.stderr.decode().strip()}")
    with tmpdir() as tmp:
        forced_off(tmp)
        refused(tmp)


main(test)
