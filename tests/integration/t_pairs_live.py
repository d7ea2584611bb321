"""Wake pairs as the bpf sampler sees them: a writer and a reader through a fifo wake
each other, and with keep_pairs (the default) each is listed with the other as its
partner, and the CPU the partner last ran on; a busy task that wakes no one has no
partner; with keep_pairs = no the sampler reads no pairs (partner= never shows), and
--features and the log say which. The daemon runs dry: nothing is moved."""
import os
import subprocess

from rqb import DAEMON, Daemon, Hogs, check, main, require, tmpdir
from rqb_bpf import records, wait_bpf


def fifo_pair(tmp):
    """A yes | cat pair through a fifo of the test's own: (writer, reader) Popens."""
    path = os.path.join(tmp, "pair.fifo")
    os.mkfifo(path)
    reader = subprocess.Popen(["cat", path], stdout=subprocess.DEVNULL)
    with open(os.path.join(tmp, "yes.err"), "w") as err:
        writer = subprocess.Popen(f"exec yes > {path}", shell=True, stderr=err)
    return writer, reader


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
            print(f"writer {w}: {sorted(seen.get(w, []))}; reader {r}: {sorted(seen.get(r, []))}")
            check("features: wake-pairs: the bpf sampler reads" in log,
                  "the log says the sampler reads wake pairs")
            check(any(f.startswith(f"partner={r}@") for f in seen.get(w, ())),
                  "the writer is listed with the reader as its partner, and a CPU")
            check(any(f.startswith(f"partner={w}@") for f in seen.get(r, ())),
                  "the reader is listed with the writer as its partner")
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
