"""Malformed journals: a start over an affinity.journal and a latency.journal full of
garbage, cut lines, huge lines and binary warns about each bad record, does not
crash, and still gives back what the valid records among them name (a pin, a policy,
a cgroup's weight); then it stops cleanly and leaves both journals empty. Files of
nothing but random bytes, and empty files, are taken the same way."""
import os
import random
import subprocess
import sys

from rqb import (CGROUP_ROOT, CPU_V1, Daemon, allowed, check, main, require, require_cpu_v1,
                 start_time, tmpdir)

IDLER = [sys.executable, "-c", "import time; time.sleep(600)"]

# Records that parse, or nearly, name pid 99999999, which no task has.
GARBAGE = [
    b"garbage",
    b"set",
    b"set 99999999 2",
    b"set 99999999 1 1 0-1",
    b"set 99999999999999999999 1 1 0-1 1",
    b"set -5 -5 1 0-1 1",
    b"set 99999999 7 1 0-1 1 junk",
    b"set 99999999 7 1 0-1 999999 1",
    b"set 99999999 7 1 4096-9999 1",
    b"clear",
    b"clear x y",
    b"lat 99999999 2 3",
    b"lat 99999999 1 1 -5 0 0 0 -1 -1 / 0 0 0 -1 -1",
    b"lat 0 0 0 -5 0 0 0 -1 -1 / 0 0 0 -1 -1 /",
    b"lat 99999999 1 1 -5 0 0 0 -1 -1 / 0 0 0 -1 -1 / extra",
    b"unlat x y",
    b"cg",
    b"cg -5 relative - 1 1 1 1",
    b"cg x / - 1 1 1",
    b"uncg",
    b"uncg relative",
    b"root extra",
    b"\x00\x01\x02\xff\xfe\x00set 99999999 1 1 0-1 1",
    bytes(range(256)) * 8,
    b"x" * (1 << 20),
    b"set 99999999 1 1 " + b"0-1," * 50000 + b"1 1",
    b"lat 99999999 1 1 -5 0 0 0 -1 -1 /" + b"a" * 5000 + b" 0 0 0 -1 -1 /" + b"b" * 5000,
    b"cg -5 /" + b"c" * 5000 + b" - 1024 0 512 0",
    b"uncg /" + b"d" * 5000,
    b"lat " + b"9" * 100000,
]


def policy(pid):
    with open(f"/proc/{pid}/sched") as f:
        return next(int(line.split(":")[1]) for line in f if line.startswith("policy"))


def shares(cg):
    with open(f"{CPU_V1}{cg}/cpu.shares") as f:
        return int(f.read())


def write(path, head, good, rng):
    """The header, then the valid records spread among the garbage; the last line cut."""
    lines = [head] + GARBAGE[:]
    for g in good:
        lines.insert(rng.randrange(1, len(lines) + 1), g)
    with open(path, "wb") as f:
        f.write(b"\n".join(lines) + b"\n" + b"set 99999999 123 1 0-")


def garbage_with_records(tmp):
    rng = random.Random(3)
    journal = os.path.join(tmp, "run")
    os.makedirs(journal, exist_ok=True)
    cg = f"/{CGROUP_ROOT}-w"
    os.mkdir(CPU_V1 + cg)
    a, b = subprocess.Popen(IDLER), subprocess.Popen(IDLER)
    try:
        subprocess.run(["taskset", "-pc", "1", str(a.pid)], check=True, stdout=subprocess.DEVNULL)
        subprocess.run(["chrt", "-b", "-p", "0", str(b.pid)], check=True)
        with open(f"{CPU_V1}{cg}/cpu.shares", "w") as f:
            f.write("512")
        write(os.path.join(journal, "affinity.journal"), b"# rqbalance affinity journal v1",
              [f"set {a.pid} {a.pid} {start_time(a.pid)} 0-1 1 1".encode()], rng)
        write(os.path.join(journal, "latency.journal"), b"# rqbalance latency journal v1",
              [f"lat {b.pid} {b.pid} {start_time(b.pid)} 12 0 0 0 -1 -1 / 3 0 0 -1 -1 /".encode(),
               f"cg -5 {cg} - 1024 0 512 0".encode()], rng)
        with Daemon(tmp, journal=journal) as d:
            d.wait_for("ctl: serving")
            text = d.text()
            aff = text.count("malformed journal record skipped")
            lat = text.count("malformed latency journal record skipped")
            print(f"{aff} affinity and {lat} latency records skipped as malformed")
            check(aff >= 10 and lat >= 10, "each journal's bad records are warned about")
            check("1 restored" in text, "the valid affinity record was restored")
            check(allowed(a.pid) == {0, 1}, "the pinned task has CPUs 0-1 back")
            check(policy(b.pid) == 0, "the task set SCHED_BATCH is SCHED_OTHER again")
            check(shares(cg) == 1024, "the cgroup has its weight back")
            check(d.stop() == 0, "clean stop")
        for name in ("affinity.journal", "latency.journal"):
            with open(os.path.join(journal, name)) as f:
                body = [line for line in f if not line.startswith("#")]
            check(body == [], f"{name} is empty after the stop")
    finally:
        for p in (a, b):
            p.kill()
            p.wait()
        os.rmdir(CPU_V1 + cg)


def random_bytes(tmp):
    for name, content in (("random", None), ("empty", b"")):
        journal = os.path.join(tmp, name)
        os.makedirs(journal, exist_ok=True)
        for f in ("affinity.journal", "latency.journal"):
            with open(os.path.join(journal, f), "wb") as out:
                out.write(os.urandom(1 << 16) if content is None else content)
        with Daemon(tmp, journal=journal) as d:
            d.wait_for("ctl: serving")
            check(d.alive(), f"{name} journals: the daemon starts")
            check(d.stop() == 0, f"{name} journals: clean stop")


def test():
    require()
    require_cpu_v1("cpu.idle")
    with tmpdir() as tmp:
        garbage_with_records(tmp)
        random_bytes(tmp)


main(test)
