"""The systemd units as make install writes them: systemd-analyze verify says nothing,
systemd-analyze security --offline=true scores the service 1.9 or lower, and the unit
has what the daemon's life under systemd needs (notify, watchdog, a reload that can
fail, the runtime directory kept, the config checked before the start) and none of the
sandboxing that breaks it. The opt-in drop-ins verify too, and the example DaemonSet
grants the unit's capabilities, no more."""
import os
import re
import shutil
import subprocess

from packaging import (bounding_set, exposure, make, need,
                       only_on_first_build, read_unit, value, values)
from rqb import ROOT, check, main, tmpdir

# 1.9 with BPF in (CAP_BPF, CAP_PERFMON, bpf, perf_event_open, capset) and neither
# CAP_SYS_PTRACE nor CAP_NET_ADMIN, which the BPF events make unneeded: keep it so.
MAX_EXPOSURE = 1.9
# Settings that break the daemon: see the unit's opening comment.
BREAKING = ["PrivateUsers", "PrivateNetwork", "ProcSubset", "ProtectProc"]
DROPINS = ["rqbalance-nobpf.conf", "rqbalance-cgroupfs.conf"]
DAEMONSET = os.path.join(ROOT, "contrib", "kubernetes", "rqbalance-daemonset.yaml")


def analyze(*args, manpath=None):
    env = dict(os.environ)
    if manpath:
        env["MANPATH"] = manpath
    r = subprocess.run(["systemd-analyze", *args], capture_output=True, text=True, env=env,
                       timeout=120)
    return r.returncode, (r.stdout + r.stderr).strip()


def verify(paths, manpath):
    """Unknown keys and bad values are only warnings: any output at all fails."""
    args = ["verify"]
    if not shutil.which("man"):
        print("no man(1) here: Documentation= is not checked")
        args.append("--man=no")
    rc, out = analyze(*args, *paths, manpath=manpath)
    if out:
        print(out)
    return rc == 0 and out == ""


def check_service(unit, sbindir, bindir, rundir):
    check(value(unit, "Type") == "notify", "Type=notify")
    check(value(unit, "WatchdogSec") not in (None, "", "0"), "WatchdogSec= is set")
    check(value(unit, "Restart") == "on-failure", "Restart=on-failure")
    check(value(unit, "ExecStartPre") == f"{sbindir}/rqbalanced --check-config",
          "ExecStartPre= checks the config with the installed rqbalanced")
    check(re.fullmatch(rf"{re.escape(sbindir)}/rqbalanced (--foreground|-f)",
                       value(unit, "ExecStart") or ""),
          "ExecStart= runs the installed rqbalanced in the foreground")
    check(value(unit, "ExecReload") == f"{bindir}/rqctl reload",
          "ExecReload= is rqctl reload, which fails when the daemon refuses the config")
    check(value(unit, "RuntimeDirectory") == rundir.removeprefix("/run/"),
          f"RuntimeDirectory= is {rundir} without /run/")
    check(value(unit, "RuntimeDirectoryPreserve") == "yes",
          "RuntimeDirectoryPreserve=yes keeps the journal over a restart")
    check(value(unit, "ProtectSystem") == "strict", "ProtectSystem=strict")
    check(value(unit, "NoNewPrivileges") == "yes", "NoNewPrivileges=yes")
    check(value(unit, "RestrictAddressFamilies") == "AF_UNIX AF_NETLINK",
          "RestrictAddressFamilies=AF_UNIX AF_NETLINK")
    check("CAP_SYS_NICE" in bounding_set(unit), "the bounding set has CAP_SYS_NICE")
    for key in BREAKING:
        check(not values(unit, key), f"no {key}=, which breaks the daemon")


def check_daemonset(unit):
    text = open(DAEMONSET).read()
    check(re.search(r"^\s*hostPID: true$", text, re.M), "the DaemonSet uses the host's PIDs")
    check(re.search(r"^\s*hostNetwork: true$", text, re.M),
          "and the host's network namespace, where the proc connector is")
    check(re.search(r'drop: \["ALL"\]', text), "it drops every capability")
    added = re.search(r"^\s*add: \[(.*)\]$", text, re.M).group(1)
    added = {"CAP_" + c.strip().strip('"') for c in added.split(",")}
    check(added == bounding_set(unit), f"and adds the unit's bounding set: {sorted(added)}")
    check("path: /sys/fs/cgroup" in text, "it mounts /sys/fs/cgroup")


def test():
    only_on_first_build()
    need("systemd-analyze")
    with tmpdir() as tmp:
        # Installed under a real prefix, not a DESTDIR, so that the paths in the unit
        # exist here: verify checks that ExecStart= and the others are executable.
        prefix = os.path.join(tmp, "usr")
        unitdir = os.path.join(prefix, "lib", "systemd", "system")
        make("install", PREFIX=prefix, SYSCONFDIR=os.path.join(tmp, "etc"), UNITDIR=unitdir)
        service = os.path.join(unitdir, "rqbalance.service")
        socket = os.path.join(unitdir, "rqbalance.socket")
        manpath = os.path.join(prefix, "share", "man")
        rundir = "/run/rqbalance"

        broken = os.path.join(tmp, "broken.service")
        with open(broken, "w") as f:
            f.write(open(service).read().replace("ProtectSystem=", "ProtectSytsem="))
        check(not verify([broken], manpath), "verify speaks up about a misspelt key")
        check(verify([service, socket], manpath), "systemd-analyze verify is silent")
        rc, out = analyze("security", "--offline=true", service)
        print(out)
        score = exposure(out)
        check(rc == 0 and score <= MAX_EXPOSURE,
              f"systemd-analyze security --offline=true: {score} <= {MAX_EXPOSURE}")

        unit = read_unit(service)
        check_service(unit, os.path.join(prefix, "sbin"), os.path.join(prefix, "bin"), rundir)
        sock = read_unit(socket)
        check(value(sock, "ListenStream", "Socket") == f"{rundir}/ctl.sock",
              "the socket is the daemon's default ctl_socket")
        check(value(sock, "SocketMode", "Socket") == "0666",
              "anyone may connect; requests are judged by the caller's credentials")
        for path in (service, socket):
            left = re.findall(r"@[A-Z]+@", open(path).read())
            check(not left, f"no template placeholder is left in {os.path.basename(path)}")

        for name in DROPINS:
            merged = os.path.join(tmp, f"rqbalance-{name[:-5]}.service")
            with open(merged, "w") as f:
                f.write(open(service).read().replace("Also=rqbalance.socket\n", ""))
                f.write(open(os.path.join(ROOT, "systemd", name)).read())
            check(verify([merged], manpath), f"the unit with {name} verifies")
            score = exposure(analyze("security", "--offline=true", merged)[1])
            print(f"with {name}: exposure {score}")
        check_daemonset(unit)


main(test)
