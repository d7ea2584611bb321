"""--features and the start-up log name what this kernel offers and what rqbalance
cannot use, and agree with what the test finds out for itself."""
import ctypes
import os
import platform
import re
import subprocess

from rqb import (DAEMON, TOPO_2LLC, Daemon, check, default_slice_ns, main, require, rqctl,
                 tmpdir, value_slice_ns)

CGROUP_MODE = "/sys/kernel/debug/sched/cgroup_mode"


def report(*args, details=False):
    out = subprocess.run([DAEMON, "--features", *args], capture_output=True, text=True,
                         check=True).stdout
    lines = out.splitlines()
    check(lines[0] == f"kernel: Linux {platform.release()} {platform.machine()}",
          "the report names the kernel")
    rows = [l.split(None, 2) for l in lines[1:]]
    if details:
        return {w[0]: (w[1], w[2] if len(w) > 2 else "") for w in rows}
    return {w[0]: w[1] for w in rows}


def single_core_llcs(tmp):
    """The fake topology's two LLCs are of one core each: nothing to spread across by
    default (min_llc_cores = 2), said in --features and in the start-up log; two LLCs to
    spread across with min_llc_cores = 1."""
    state, detail = report("--topology", TOPO_2LLC, details=True)["llc-groups"]
    check(state == "missing" and "nothing to spread across" in detail
          and "min_llc_cores" in detail,
          f"single-core LLCs are nothing to spread across by default: {state} {detail}")
    conf = os.path.join(tmp, "one-core.conf")
    with open(conf, "w") as f:
        f.write("[balance]\nmin_llc_cores = 1\n")
    check(report("-c", conf, "--topology", TOPO_2LLC)["llc-groups"] == "used",
          "with min_llc_cores = 1 the fake topology's two LLCs are used")
    with Daemon(tmp, ["--dry-run", "--topology", TOPO_2LLC], conf="[balance]\nmin_llc_cores = 2\n") as d:
        d.wait_for(r"running: sampler")
        check("features: cannot use llc-groups: 2 LLCs, 0 of them of 2 cores or more" in d.text(),
              "the start-up log says single-core LLCs are not spread across")


def uclamp_settable():
    """sched_setattr on this test process, keeping everything and re-setting its clamps."""
    libc = ctypes.CDLL(None, use_errno=True)
    attr = (ctypes.c_uint8 * 56)()
    if libc.syscall(315, 0, attr, 56, 0) < 0:  # sched_getattr
        return False
    flags = 0x08 | 0x10 | 0x20 | 0x40
    ctypes.c_uint64.from_buffer(attr, 8).value = flags
    return libc.syscall(314, 0, attr, 0) == 0  # sched_setattr


def cgroup_mode():
    """The mode in parentheses of debugfs sched/cgroup_mode, or unknown (7.3)."""
    try:
        with open(CGROUP_MODE) as f:
            m = re.search(r"\(([a-z_]+)\)", f.read())
        return m.group(1) if m else "unknown"
    except OSError:
        return "unknown"


def slices(major, minor):
    """The default slice line and the table of every value's slice in --features, and
    the same two in rqctl status."""
    out = subprocess.run([DAEMON, "--features"], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"^default slice: (\d+\.\d\d) ms \((.*)\)$", out, re.M)
    check(m is not None, "--features names the kernel's default slice")
    table = []
    for line in re.findall(r"^slices -?\d+\.\.-?\d+ ms:(.*)$", out, re.M):
        table += [float(x) for x in line.split()]
    check(len(table) == 40, f"--features lists the slice of every value -20..19 ({len(table)})")
    if (major, minor) >= (6, 12):
        d = default_slice_ns()
        check(m.group(1) == "%.2f" % (d / 1e6) and "sched_getattr" in m.group(2),
              f"on 6.12+ it is this task's own, from sched_getattr ({m.group(0)})")
        want = [round((value_slice_ns(v) or d) / 1e6, 2) for v in range(-20, 20)]
        check(table == want, f"each value's slice is the default x 2^(v/5) ({table})")
    check(table[20] == float(m.group(1)), "0 keeps the default")
    check(all(a < b for a, b in zip(table[:20], table[20:21] * 20)) or
          float(m.group(1)) <= 0.1, "every negative value is shorter than the default")
    check(all(b > table[20] for b in table[21:]), "every positive value is longer")
    check(table == sorted(table), "a higher value never has a shorter slice")
    return float(m.group(1))


def class_weights(major, minor):
    """--features says whether class weights are scaled here, and why: the kernel's
    version where cgroup_mode cannot be read, else the mode."""
    out = subprocess.run([DAEMON, "--features"], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"^class weights: (scaled|not scaled): (.*)$", out, re.M)
    check(m is not None, "--features says whether class weights are scaled")
    mode = cgroup_mode()
    # Every kernel scales a group's weight by what it runs but 7.3's up (latweigh.h).
    scales = (major, minor) < (7, 3) or mode != "up"
    check(m.group(1) == ("scaled" if scales else "not scaled"),
          f"scaled where the kernel scales a group's weight ({m.group(0)})")
    why = f"Linux {major}.{minor}" if mode == "unknown" else f"cgroup_mode {mode}"
    check(why in m.group(2), f"and says why: {why} ({m.group(2)})")


def status_fields(tmp, default_ms):
    with Daemon(tmp, ["--dry-run"]) as d:
        d.wait_for(r"ctl: serving")
        st = dict(l.split(None, 1) for l in rqctl(d, "status").stdout.splitlines()
                  if " " in l)
        check(st.get("sched_cgroup_mode") == cgroup_mode(),
              f"rqctl status: sched_cgroup_mode {st.get('sched_cgroup_mode')}")
        check("%.2f" % (int(st.get("sched_default_slice_ns", "0")) / 1e6) == "%.2f" % default_ms,
              f"rqctl status: sched_default_slice_ns {st.get('sched_default_slice_ns')}")
        check(d.stop() == 0, "clean stop")


def test():
    require()
    major, minor = (int(x) for x in platform.release().split(".")[:2])
    f = report()
    check(f["pidfd-thread"] == ("used" if (major, minor) >= (6, 9) else "missing"),
          "pidfd-thread follows the kernel version (6.9+)")
    check(f["eevdf-slice"] == ("found" if (major, minor) >= (6, 12) else "missing"),
          "eevdf-slice follows the kernel version (6.12+)")
    check(f["btf"] == ("found" if os.path.exists("/sys/kernel/btf/vmlinux") else "missing"),
          "btf agrees with /sys/kernel/btf/vmlinux")
    check(f["schedstats"] == ("found" if os.path.exists("/proc/schedstat") else "missing"),
          "schedstats agrees with /proc/schedstat")
    check(f["uclamp"] == ("found" if uclamp_settable() else "missing"),
          "uclamp agrees with a sched_setattr util-clamp probe")
    v1cpu = any(l.split()[2] == "cgroup" and "cpu" in l.split()[3].split(",")
                for l in open("/proc/mounts"))
    check(f["cgroup-v1-cpu"] == ("found" if v1cpu else "missing"),
          "cgroup-v1-cpu agrees with /proc/mounts")
    mode = report(details=True)["cgroup-mode"]
    check(mode[0] == ("found" if cgroup_mode() != "unknown" else "missing")
          and mode[1].startswith(cgroup_mode()),
          f"cgroup-mode agrees with {CGROUP_MODE}: {mode}")
    default_ms = slices(major, minor)
    class_weights(major, minor)
    with tmpdir() as tmp:
        single_core_llcs(tmp)
        status_fields(tmp, default_ms)

        with Daemon(tmp, ["--dry-run"]) as d:
            d.wait_for(r"running: sampler")
            log = d.text()
            check("features: Linux" in log, "the start-up log names the kernel's features")
            for name, state in f.items():
                if state == "missing":
                    check(f"features: cannot use {name}: " in log,
                          f"the log says why {name} cannot be used")
            check(d.stop() == 0, "clean stop")


main(test)
