"""The live proc sampler, through the real daemon: a busy task the test pinned to a CPU
shows up on that CPU in the snapshots --record writes (the replay format). A record
whose writes fail (/dev/full) stops with one warning, and the daemon runs on."""
import os

from rqb import Daemon, Hogs, check, main, record_lines, require, start_time, tmpdir


def tasks_in(record, pid):
    return [w for w in record_lines(record) if w[:2] == ["task", str(pid)]]


def test():
    require()
    with tmpdir() as tmp:
        for cpu in (1, 0):
            with Hogs(1, cpus=str(cpu)) as hogs:
                (pid,) = hogs.pids
                record = os.path.join(tmp, f"record-{cpu}")
                with Daemon(tmp, ["--dry-run", "--record", record],
                            conf="[daemon]\nsampler = proc\n") as d:
                    d.wait_for(r"running: sampler proc")
                    d.sync(5)  # 5 more ticks, each recorded
                    check(d.stop() == 0, "clean stop")
                seen = tasks_in(record, pid)
                check(len(seen) >= 3, f"the busy task was seen in {len(seen)} snapshots")
                check(all(w[3] == str(cpu) for w in seen), f"always on CPU {cpu}")
                check(all(w[4] == str(start_time(pid)) for w in seen), "with its start time")
                check(all(w[6] == str(cpu) for w in seen), "and its allowed list")
                mine = tasks_in(record, d.proc.pid)
                check(not mine, "the daemon never lists itself")
        with Daemon(tmp, ["--dry-run", "--record", "/dev/full"],
                    conf="[daemon]\nsampler = proc\n") as d:
            d.wait_for(r"running: sampler proc")
            d.sync(5)
            said = d.text().count("--record /dev/full: write failed")
            check(said == 1 and "recording stopped" in d.text(),
                  f"a record that cannot be written stops, said once ({said} times)")
            check(d.stop() == 0, "and the daemon ran on to a clean stop")


main(test)
