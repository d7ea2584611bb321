"""Config errors: a bad file is refused at start with file:line: key: reason and exit 1;
--check-config says the same; --dump-config prints the effective values."""
import os
import subprocess

from rqb import DAEMON, ROOT, check, main, require, tmpdir


def run(*args):
    p = subprocess.run([DAEMON, *args], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def test():
    require()
    with tmpdir() as tmp:
        bad = os.path.join(tmp, "bad.conf")
        with open(bad, "w") as f:
            f.write("[daemon]\ninterval_ms = 100\n\n[balance]\nimbalance_pct = 5\n"
                    "frobnicate = 1\n[nosuch]\nx = 1\n")
        rc, out = run("--check-config", bad)
        check(rc == 1, "--check-config exits 1 on a bad file")
        check(f"{bad}:5: [balance] imbalance_pct: 5 is out of range 101..1000" in out,
              "out-of-range value named with file:line: key: reason")
        check(f"{bad}:6: [balance] frobnicate: unknown key" in out, "unknown key named")
        check(f"{bad}:8: [nosuch] x: unknown section" in out, "unknown section named")

        rc, out = run("-f", "-c", bad)
        check(rc == 1, "the daemon refuses to start on a bad config")
        check(f"{bad}:5: [balance] imbalance_pct" in out, "and says why")

        rc, out = run("-f", "-c", os.path.join(tmp, "missing.conf"))
        check(rc == 1 and "cannot open" in out, "an explicit config that is missing is an error")

        shipped = os.path.join(ROOT, "conf", "rqbalance.conf")
        rc, out = run("--check-config", shipped)
        check(rc == 0 and "ok" in out, "the shipped config is valid")

        good = os.path.join(tmp, "good.conf")
        with open(good, "w") as f:
            f.write("[balance]\nimbalance_pct = 125\n[exclude]\ncomms = pulseaudio jackd*\n")
        rc, out = run("-c", good, "--dump-config")
        check(rc == 0, "--dump-config succeeds")
        check("imbalance_pct = 125\n" in out, "--dump-config shows the file's value")
        check("comms = pulseaudio jackd*\n" in out, "and lists")
        check("interval_ms = 100\n" in out, "and defaults for keys not set")
        dumped = os.path.join(tmp, "dumped.conf")
        with open(dumped, "w") as f:
            f.write(out)
        rc, out = run("--check-config", dumped)
        check(rc == 0, "the dump is itself a valid config")


main(test)
