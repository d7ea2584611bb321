"""SIGHUP reloads; a bad file is refused and the running config kept, which shows in
behaviour: an exclusion from the old config keeps protecting a task until a good
reload lifts it."""
import signal

from rqb import (Daemon, Hogs, NotifySocket, TOPO_2LLC, allowed, check, main,
                 overload_replay, require, tmpdir)


def test():
    require()
    with tmpdir() as tmp, Hogs(2) as hogs:
        a, b, replay = overload_replay(tmp, hogs, comm="busy")
        notify = NotifySocket(tmp)
        d = Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", replay],
                   conf="[exclude]\ncomms = busy\n", env={"NOTIFY_SOCKET": notify.path})
        with d:
            notify.wait_for("READY=1")
            # Unexcluded, b would be pinned by tick 2 (an overload of one task counts the
            # second tick it is seen): the daemon acts on the overload 3 times first.
            d.sync(3)
            check("pin tid=" not in d.text(), "the excluded comm is not moved")
            journal_line = f"journal_dir = {d.journal}\nctl_socket = {d.ctl}\n"

            with open(d.conf, "w") as f:
                f.write(f"[daemon]\n{journal_line}[balance]\nimbalance_pct = 2\n")
            d.proc.send_signal(signal.SIGHUP)
            d.wait_for(r"reload failed: keeping the running configuration")
            check(":5: [balance] imbalance_pct: 2 is out of range" in d.text(),
                  "the failed reload says file:line: key: reason")
            notify.wait_for("RELOADING=1")
            notify.wait_for("STATUS=reload failed: kept the running configuration")
            d.sync(3)
            check(d.alive(), "the daemon survives a bad reload")
            check("pin tid=" not in d.text(), "the old exclusion still holds")
            check(allowed(a) == {0, 1} and allowed(b) == {0, 1}, "no task was touched")

            with open(d.conf, "w") as f:
                # The fake topology's LLCs are of one core: spread across them anyway.
                f.write(f"[daemon]\n{journal_line}log_level = debug\n"
                        "[balance]\nmin_llc_cores = 1\n")
            d.proc.send_signal(signal.SIGHUP)
            d.wait_for(r"reloaded ")
            d.wait_for(rf"pin tid={b} ")
            check(allowed(b) == {1}, "after a good reload the exclusion is gone and b moves")
            check(d.stop() == 0, "clean stop")
            check(allowed(b) == {0, 1}, "and is restored")


main(test)
