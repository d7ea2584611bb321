"""Only the bus says what happened to the daemon's names. An unprivileged user sends the
daemon's connection a unicast org.freedesktop.DBus.NameLost for each of its two names
(the bus routes a unicast signal to its destination whatever that connection's matches
say): the daemon ignores both, says so in its debug log, keeps saying in rqctl status
that it serves both, and still answers the user's calls. When the bus itself goes away,
the daemon still notices."""
import os
import re

from rqb import Daemon, check, fields, main, require, rqctl, tmpdir
from rqb_dbus import SystemBus, call
from rqb_user import User

NAME, PATH, IFACE = "org.rqbalance1", "/org/rqbalance1", "org.rqbalance1.Latency"
S76 = "com.system76.Scheduler"
DRIVER = ("org.freedesktop.DBus", "/org/freedesktop/DBus")


def owner_of(bus, name):
    r = call(bus.address, *DRIVER, "org.freedesktop.DBus.GetNameOwner", f"string:{name}")
    return r.values[0] if r.ok and r.values else None


def forged_name_lost(bus, user, dest, name):
    p = user.run(["dbus-send", f"--bus={bus.address}", f"--dest={dest}", "--type=signal",
                  DRIVER[1], "org.freedesktop.DBus.NameLost", f"string:{name}"], text=True)
    check(p.returncode == 0, f"the bus lets a user send a unicast NameLost ({p.stderr!r})")


def dbus_status(d):
    return fields(rqctl(d, "status").stdout).get("dbus", "")


def test():
    require()
    with tmpdir() as tmp, SystemBus() as bus, User("rqbs") as user:
        os.chmod(tmp, 0o755)
        with Daemon(tmp, env={"DBUS_SYSTEM_BUS_ADDRESS": bus.address}) as d:
            d.wait_for(r"dbus: serving org\.rqbalance1 on the system bus")
            d.wait_for(rf"dbus: serving {re.escape(S76)}'s SetForegroundProcess")
            d.wait_for(r"running: sampler")
            unique = owner_of(bus, NAME)
            check(unique and unique.startswith(":") and owner_of(bus, S76) == unique,
                  f"the daemon owns both names on one connection ({unique!r})")
            check(dbus_status(d) == f"{NAME} {S76}", f"status: dbus {dbus_status(d)!r}")
            for name in (NAME, S76):
                forged_name_lost(bus, user, unique, name)
            # The handler logs each signal it ignores (and it logs a lost name at once).
            for n in (1, 2):
                d.wait_for(rf"(?s)(dbus: lost {re.escape(NAME)}|was taken over"
                           r"|(dbus: ignored org\.freedesktop\.DBus\.NameLost from :[\d.]+: "
                           rf"only org\.freedesktop\.DBus sends it.*){{{n}}})")
            log = d.text()
            check(f"dbus: lost {NAME}" not in log and "was taken over" not in log,
                  "a user's NameLost does not make the daemon give up a name")
            check(dbus_status(d) == f"{NAME} {S76}",
                  f"status still says it serves both: dbus {dbus_status(d)!r}")
            check(owner_of(bus, NAME) == unique and owner_of(bus, S76) == unique,
                  "and it does own both")
            r = call(bus.address, NAME, PATH, "org.freedesktop.DBus.Properties.Get",
                     f"string:{IFACE}", "string:ForegroundValue", user=user)
            check(r.ok and r.values == [-5], f"the API still answers the user ({r!r})")
            # The real end of the bus still counts: sd-bus's own Disconnected.
            bus.close()
            d.wait_for(r"dbus: the system bus went away")
            check(dbus_status(d) == "off", f"with the bus gone, dbus {dbus_status(d)!r}")
            check(d.stop() == 0, "clean stop")


main(test)
