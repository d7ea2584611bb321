"""make install and make uninstall into a DESTDIR: every file where PREFIX and the
directories of config.mk put it, the unit's paths following them, and the installed
rqbalanced accepting the installed config. A second install keeps a changed config;
uninstall removes everything but a changed config."""
import os
import stat
import subprocess

from packaging import config_mk, make, read_unit, value, values
from rqb import ROOT, check, main, tmpdir


def installed(destdir):
    out = set()
    for d, _, files in os.walk(destdir):
        out.update(os.path.relpath(os.path.join(d, f), destdir) for f in files)
    return out


def expected(prefix, unitdir, sysconfdir="etc"):
    p = prefix.strip("/")
    return {
        f"{p}/sbin/rqbalanced", f"{p}/bin/rqctl",
        f"{unitdir.strip('/')}/rqbalance.service", f"{unitdir.strip('/')}/rqbalance.socket",
        f"{p}/share/man/man8/rqbalanced.8", f"{p}/share/man/man1/rqctl.1",
        f"{p}/share/man/man5/rqbalance.conf.5",
        f"{p}/share/bash-completion/completions/rqctl",
        f"{p}/share/doc/rqbalance/examples/rqbalance-nobpf.conf",
        f"{p}/share/doc/rqbalance/examples/rqbalance-cgroupfs.conf",
        f"{p}/share/doc/rqbalance/examples/rqbalance-daemonset.yaml",
        f"{p}/share/dbus-1/system.d/org.rqbalance1.conf",
        f"{p}/lib/systemd/user/rqbalance-gamemode.service",
        f"{p}/share/dbus-1/services/com.feralinteractive.GameMode.rqbalance.service",
        f"{sysconfdir}/rqbalance/rqbalance.conf",
    }


def defaults(tmp):
    """The defaults of config.mk: everything under /usr/local, the config in /etc."""
    dest = os.path.join(tmp, "default")
    make("install", DESTDIR=dest)
    prefix = config_mk("PREFIX")
    check(prefix == "/usr/local", f"PREFIX defaults to /usr/local ({prefix})")
    want = expected(prefix, f"{prefix}/lib/systemd/system")
    check(installed(dest) == want, "the default install puts every file under "
          f"/usr/local, the config in /etc: {sorted(installed(dest) ^ want) or 'as expected'}")
    unit = read_unit(os.path.join(dest, "usr/local/lib/systemd/system/rqbalance.service"))
    check(value(unit, "ExecStart").startswith("/usr/local/sbin/rqbalanced "),
          "the unit runs /usr/local/sbin/rqbalanced")
    check(os.path.isdir(os.path.join(dest, "etc/rqbalance/rules.d")), "an empty rules.d")
    make("uninstall", DESTDIR=dest)
    check(installed(dest) == set(), "uninstall removes what install put there")


def distro(tmp):
    """PREFIX=/usr and a distribution's unit directory, then the installed daemon."""
    dest = os.path.join(tmp, "distro")
    variables = dict(DESTDIR=dest, PREFIX="/usr", UNITDIR="/lib/systemd/system")
    make("install", **variables)
    want = expected("/usr", "/lib/systemd/system")
    check(installed(dest) == want,
          f"PREFIX=/usr UNITDIR=/lib/systemd/system: {sorted(installed(dest) ^ want) or 'ok'}")
    for f, mode in [("usr/sbin/rqbalanced", 0o755), ("usr/bin/rqctl", 0o755),
                    ("etc/rqbalance/rqbalance.conf", 0o644),
                    ("usr/share/dbus-1/system.d/org.rqbalance1.conf", 0o644),
                    ("lib/systemd/system/rqbalance.service", 0o644)]:
        got = stat.S_IMODE(os.stat(os.path.join(dest, f)).st_mode)
        check(got == mode, f"{f} is mode {mode:o}")
    unit = read_unit(os.path.join(dest, "lib/systemd/system/rqbalance.service"))
    check(value(unit, "ExecStart").startswith("/usr/sbin/rqbalanced "),
          "the unit runs /usr/sbin/rqbalanced")
    agent = read_unit(os.path.join(dest, "usr/lib/systemd/user/rqbalance-gamemode.service"))
    act = read_unit(os.path.join(
        dest, "usr/share/dbus-1/services/com.feralinteractive.GameMode.rqbalance.service"))
    check(value(agent, "ExecStart") == "/usr/bin/rqctl gamemode-agent" and
          values(act, "Exec", "D-BUS Service") == ["/usr/bin/rqctl gamemode-agent"] and
          values(act, "SystemdService", "D-BUS Service") == ["rqbalance-gamemode.service"],
          "the agent's user unit and D-Bus activation file run /usr/bin/rqctl gamemode-agent")
    check(value(unit, "ExecReload") == "/usr/bin/rqctl reload", "and reloads with /usr/bin/rqctl")

    conf = os.path.join(dest, "etc/rqbalance/rqbalance.conf")
    r = subprocess.run([os.path.join(dest, "usr/sbin/rqbalanced"), "--check-config", conf],
                       capture_output=True, text=True, timeout=60)
    print(r.stdout + r.stderr)
    check(r.returncode == 0 and r.stdout.strip() == f"{conf}: ok",
          "the installed rqbalanced --check-config accepts the installed config")

    with open(conf, "a") as f:
        f.write("\n[daemon]\nlog_level = notice\n")
    changed = open(conf).read()
    out = make("install", **variables)
    check(open(conf).read() == changed, "a second install keeps the changed config")
    check("keeping the existing" in out, "and says so")
    r = subprocess.run([os.path.join(dest, "usr/sbin/rqbalanced"), "--check-config", conf],
                       capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "the changed config checks out too")

    make("uninstall", **variables)
    check(installed(dest) == {"etc/rqbalance/rqbalance.conf"},
          "uninstall leaves only the changed config")
    os.unlink(conf)
    with open(os.path.join(ROOT, "conf", "rqbalance.conf")) as f:
        shipped = f.read()
    make("install", **variables)
    check(open(conf).read() == shipped, "into an empty /etc the shipped config is installed")
    make("uninstall", **variables)
    check(installed(dest) == set(), "and an unchanged one is removed by uninstall")
    check(not os.path.exists(os.path.join(dest, "etc/rqbalance")),
          "with its directory and rules.d")


def each_directory(tmp):
    """Every directory variable on its own: nothing lands where another one points."""
    dest = os.path.join(tmp, "each")
    variables = dict(DESTDIR=dest, PREFIX="/p", SBINDIR="/s", BINDIR="/b", MANDIR="/m",
                     UNITDIR="/u", SYSCONFDIR="/c", DBUSPOLICYDIR="/d", USERUNITDIR="/uu",
                     DBUSSERVICEDIR="/ds")
    make("install", **variables)
    want = {"s/rqbalanced", "b/rqctl", "m/man8/rqbalanced.8", "m/man1/rqctl.1",
            "m/man5/rqbalance.conf.5", "u/rqbalance.service", "u/rqbalance.socket",
            "c/rqbalance/rqbalance.conf", "d/org.rqbalance1.conf",
            "uu/rqbalance-gamemode.service", "ds/com.feralinteractive.GameMode.rqbalance.service",
            "p/share/bash-completion/completions/rqctl",
            "p/share/doc/rqbalance/examples/rqbalance-nobpf.conf",
            "p/share/doc/rqbalance/examples/rqbalance-cgroupfs.conf",
            "p/share/doc/rqbalance/examples/rqbalance-daemonset.yaml"}
    check(installed(dest) == want, "SBINDIR, BINDIR, MANDIR, UNITDIR, SYSCONFDIR, "
          "DBUSPOLICYDIR, USERUNITDIR and "
          f"DBUSSERVICEDIR are each honoured: {sorted(installed(dest) ^ want) or 'ok'}")
    unit = read_unit(os.path.join(dest, "u/rqbalance.service"))
    check(value(unit, "ExecStartPre") == "/s/rqbalanced --check-config" and
          value(unit, "ExecReload") == "/b/rqctl reload", "the unit follows SBINDIR and BINDIR")
    make("uninstall", **variables)
    check(installed(dest) == set(), "and uninstall finds them all")


def test():
    with tmpdir() as tmp:
        defaults(tmp)
        distro(tmp)
        each_directory(tmp)


main(test)
