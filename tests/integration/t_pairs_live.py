"""Wake pairs as the bpf sampler sees them: two shells that ping-pong a byte through
fifos wake each other, and with keep_pairs (the default) each is listed with the other
as its partner, and the CPU the partner last ran on; a busy task that wakes no one has no
partner; with keep_pairs = no the sampler reads no pairs (partner= never shows), and
--features and the log say which. The daemon runs dry: nothing is moved."""
import os
import subprocess

from rqb import DAEMON, Daemon, Hogs, check, main, require, tmpdir
from rqb_bpf import records, wait_bpf


def fifo_pair(tmp):
    """Two shells that ping-pong a byte through two fifos of the test's own, each waking
    the other in turn: (first, second) Popens. (A pipe's writer and reader are no sure
    pair: where the reader keeps up, it never wakes the writer.)"""
    a, b = os.path.join(tmp, "pair.1"), os.path.join(tmp, "pair.2")
    os.mkfifo(a)
    os.mkfifo(b)
    first = subprocess.Popen(["sh", "-c", f"exec 3<>{b} 4<>{a}; "
                              "while :; do echo x >&4; read -r y <&3; done"])
    second = subprocess.Popen(["sh", "-c", f"exec 3<>{a} 4<>{b}; "
                               "while :; do read -r y <&3; echo x >&4; done"])
    return first, second


def partners(record):
    """{tid: set of partner fields} over every snapshot of a --record file."""
    seen = {}
    for _, tasks in records(record):
        for w in tasks:
            p = [f for f in w[9:] if f.startswith("partner=")]
            seen.setdefault(int(w[1]), set()).update(p)
    return seen


def run(tmp, conf, name):
    record = os.path.join(tmp, f"record-{name}")
    with Daemon(tmp, ["--dry-run", "--record", record], conf=conf) as d:
        wait_bpf(d)
        d.sync(20)
        log = d.text()
        check(d.stop() == 0, "clean stop")
    return partners(record), log


def test():
    require()
    with tmpdir() as tmp, Hogs(1) as hogs:
        (hog,) = hogs.pids
        writer, reader = fifo_pair(tmp)
        try:
            seen, log = run(tmp, "[daemon]\nsampler = bpf\n", "on")
            w, r = writer.pid, reader.pid
            print(f"first {w}: {sorted(seen.get(w, []))}; second {r}: {sorted(seen.get(r, []))}")
            check("features: wake-pairs: the bpf sampler notes who wakes whom" in log,
                  "the log says the sampler reads wake pairs")
            check(any(f.startswith(f"partner={r}@") for f in seen.get(w, ())),
                  "the first is listed with the second as its partner, and a CPU")
            check(any(f.startswith(f"partner={w}@") for f in seen.get(r, ())),
                  "the second is listed with the first as its partner")
            check(all(f.split("=")[1].split("@")[0] in (str(w), str(r))
                      for t in (w, r) for f in seen.get(t, ())),
                  "neither is ever listed with another partner")
            check(hog in seen and not seen[hog], "the hog, which wakes no one, has no partner")

            seen, log = run(tmp, "[daemon]\nsampler = bpf\n[balance]\nkeep_pairs = no\n", "off")
            check("features: cannot use wake-pairs: keep_pairs = no" in log,
                  "with keep_pairs = no the log says pairs are not read")
            check(not any(seen.values()), "and no task is listed with a partner")
        finally:
            writer.kill()
            reader.kill()
            writer.wait()
            reader.wait()
    out = subprocess.run([DAEMON, "--features", "-c", "/dev/null"], capture_output=True,
                         text=True).stdout
    check("wake-pairs " in out, "--features has a wake-pairs line")


main(test)
