"""Churn: rqbalanced under thread, exec and fork churn, with a rule that names half of
the processes exec'd. Shared by tests/integration/t_churn.py (scaled down for make
check) and bench/churn (full size, printing its figures).

The load is bench/churn_load, which execs bench/churn_child under two paths: the rule
names the exe of one copy (with uid 0). Every child checks its own state and reports
it on a pipe, so short-lived processes are counted exactly:

- a matching child polls its own /proc/self/cgroup until it is in the rule's class
  cgroup, then checks its policy and slice; it waits up to WAIT_MS (20 s), far longer
  than a tick, so a child whose exec event was lost in an overflow is still alive
  at the rescan that follows. A miss is therefore always a failure: the daemon
  could have seen every matching process.
- a non-matching child checks, from its first instruction for HOLD_MS, that its cgroup,
  policy and slice stay those of its parent: any write to it is seen.
- thread holders (half matching) keep THREADS threads alive through the run and check
  every thread at the end.

Besides: the daemon stays alive and ticking; its VmRSS returns to within a margin of
its baseline by the daemon's first heap trim after the end; every record in its latency journal names a
matching process (pid and start time) or a thread of a matching holder, never
another process or a pid's next owner; the kernel's drop counter for its connector
socket (/proc/net/netlink), where the events come from the connector, is non-zero only
if latency_overflows is, and overflows (a full BPF ring buffer, an overflowing socket),
and only they, are followed by rescans (the daemon rescans once the source has been
read empty, or every second while it is not). A
fork storm from a managed process (BURST forks) runs first, so the overflow path is
exercised even where the churn alone does not overflow; where that storm does not
overflow the source either, the churn starts with the storm again while the daemon is
stopped (SIGSTOP), so that its first execs and the holders' threads come while the
daemon reads a full source, whose later losses the connector does not report."""

import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

from rqb import CGROUP_ROOT, RQCTL, ROOT, Daemon

VALUE = -5
SIZES = {
    # make check: about 30 s here
    "ci": dict(threads=2000, holders=4, rate=200, seconds=8, burst=20000),
    # the figures
    "full": dict(threads=10000, holders=10, rate=1000, seconds=60, burst=20000),
}
WAIT_MS = 20000
STOPPED_EXECS = 100
HOLD_MS = 20
# The daemon gives freed memory back to the kernel (malloc_trim) at a tick at most
# every 10 s (TRIM_EVERY_NS in daemon/core/daemon.c). Ticks keep their cadence, never
# faster than the 100 ms interval: this many ticks after the churn span a trim.
RSS_SETTLE_TICKS = 10 * 10 + 2
# The margin: what a few thousand tasks' entries may leave in malloc's free lists.
RSS_MARGIN_KIB = 4096
CFLAGS = ["-D_GNU_SOURCE", "-std=gnu11", "-O2", "-Wall", "-Wextra"]


def build(tmp):
    """Compiles the load without sanitizers (the daemon is what is under test) and puts
    churn_child under two paths. Returns (churn_load, match_path, other_path)."""
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if not cc:
        return None
    out = {}
    for name in ("churn_load", "churn_child"):
        out[name] = os.path.join(tmp, name)
        subprocess.run([cc, *CFLAGS, "-I", os.path.join(ROOT, "bench"), "-o", out[name],
                        os.path.join(ROOT, "bench", name + ".c"), "-lpthread"], check=True)
    paths = []
    for d in ("match", "other"):
        os.makedirs(os.path.join(tmp, d), exist_ok=True)
        p = os.path.join(tmp, d, "churn_child")
        shutil.copy(out["churn_child"], p)
        paths.append(os.path.realpath(p))
    return out["churn_load"], paths[0], paths[1]


def vm_kib(pid, key="VmRSS"):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def sanitized(pid):
    """Whether the daemon runs with AddressSanitizer, whose quarantine and allocator keep
    freed memory: its VmRSS says nothing about the daemon's own."""
    with open(f"/proc/{pid}/maps") as f:
        return "libasan" in f.read()


def cpu_s(pid):
    """The process's CPU time so far, in seconds."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def status(d):
    r = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True, text=True,
                       timeout=30)
    if r.returncode != 0:
        return None
    out = {}
    for line in r.stdout.splitlines():
        k, _, v = line.partition(" ")
        if v.strip().isdigit():
            out[k] = int(v)
    return out


def status_text(d):
    """rqctl status as {key: text}."""
    r = subprocess.run([RQCTL, "-s", d.ctl, "status"], capture_output=True, text=True,
                       timeout=30)
    return dict(line.split(" ", 1) for line in r.stdout.splitlines() if " " in line)


def netlink_drops(pid):
    """Drops the kernel counted on the daemon's proc connector sockets (NETLINK_CONNECTOR
    is protocol 11), or None when it has none."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            m = re.match(r"socket:\[(\d+)\]", os.readlink(f"/proc/{pid}/fd/{fd}"))
        except OSError:
            continue
        if m:
            inodes.add(m.group(1))
    drops = None
    with open("/proc/net/netlink") as f:
        next(f)
        for line in f:
            c = line.split()
            if c[1] == "11" and c[9] in inodes:
                drops = (drops or 0) + int(c[8])
    return drops


class Poller(threading.Thread):
    """rqctl status and VmRSS twice a second, while the load runs."""

    def __init__(self, d):
        super().__init__(daemon=True)
        self.d = d
        self.samples = []
        self.failures = 0
        self.peak_rss = 0
        self.stop_ev = threading.Event()

    def run(self):
        while not self.stop_ev.is_set():
            s = status(self.d) if self.d.alive() else None
            rss = vm_kib(self.d.proc.pid)
            if s is None:
                self.failures += 1
            else:
                self.samples.append((time.monotonic(), s))
            if rss:
                self.peak_rss = max(self.peak_rss, rss)
            self.stop_ev.wait(0.5)

    def stop(self):
        self.stop_ev.set()
        self.join()


def journal_records(path, offset):
    """(tid, tgid, start) of every 'lat' record from offset on."""
    out = []
    with open(path, "rb") as f:
        f.seek(offset)
        for line in f.read().decode(errors="replace").splitlines():
            w = line.split()
            if len(w) > 4 and w[0] == "lat":
                out.append((int(w[1]), int(w[2]), int(w[3])))
    return out


def calibrate(d):
    """The slice the rule's value gives, read off an idle process that rqctl gives it."""
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        r = subprocess.run([RQCTL, "-s", d.ctl, "set", "-l", str(VALUE), "-p", str(p.pid)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise AssertionError(f"rqctl set on an idle process: {r.stderr.strip()}")
        with open(f"/proc/{p.pid}/sched") as f:
            slice_ns = next(int(line.split(":")[1].split(".")[0]) for line in f
                            if line.startswith("se.slice"))
        subprocess.run([RQCTL, "-s", d.ctl, "reset", "-p", str(p.pid)], capture_output=True)
        return slice_ns
    finally:
        p.kill()
        p.wait()


def run_load(load, args, listfile):
    r = subprocess.run([load, *args, "--list", listfile], capture_output=True, text=True,
                       timeout=3600)
    if r.returncode != 0:
        raise AssertionError(f"churn_load failed ({r.returncode}): {r.stderr}")
    fig = {}
    for line in r.stdout.splitlines():
        k, _, v = line.partition("=")
        fig[k] = int(v) if v.isdigit() else float(v) if re.fullmatch(r"[0-9]+\.[0-9]*", v) else v
    return fig, r.stderr.strip()


class Checks:
    def __init__(self, out):
        self.out = out
        self.failed = []

    def __call__(self, cond, what):
        self.out(("ok: " if cond else "FAILED: ") + what)
        if not cond:
            self.failed.append(what)


def read_list(path):
    """{kind: set of (pid, start)} from a churn_load --list file."""
    out = {}
    with open(path) as f:
        for line in f:
            kind, pid, start = line.split()[:3]
            out.setdefault(kind, set()).add((int(pid), int(start)))
    return out


def counters(d):
    s = status(d) or {}
    return {k: s.get(k, 0) for k in ("ticks", "latency_overflows", "latency_rescans",
                                       "latency_rule_matches", "latency_errors")}


def check_children(check, f, what):
    """The verdicts on one run of churn_load's children."""
    n = f["match_spawned"] + f["other_spawned"]
    check(f["match_reports"] == f["match_spawned"] and f["other_reports"] == f["other_spawned"]
          and f["lost"] == 0 and f["bad_records"] == 0, f"{what}: every one of {n} children "
          f"reported ({f['lost']} died without a report)")
    check(f["match_ok"] == f["match_spawned"],
          f"{what}: every matching child got its setting: {f['match_ok']} of "
          f"{f['match_spawned']} ({f['match_missed']} missed, {f['match_wrong']} with another "
          f"policy or slice)")
    check(f["other_touched"] == 0 and f["other_ok"] == f["other_spawned"],
          f"{what}: no non-matching child was changed: {f['other_touched']} of "
          f"{f['other_spawned']} were")


def run(tmp, size, out=print, events=None, **over):
    """Runs the churn at size ("ci", "full") with overrides, and [latency] events =
    events if given; returns (figures, failed checks)."""
    p = dict(SIZES[size], **over)
    load, match, other = build(tmp)
    cls = f"/{CGROUP_ROOT}/rqbalance-lat{VALUE}"
    conf = f"[rule churn]\nlatency_nice = {VALUE}\nexe = {match}\nuid = 0\n"
    if events:
        conf += f"[latency]\nevents = {events}\n"
    check = Checks(out)
    fig = dict(p)
    with Daemon(tmp, conf=conf) as d:
        d.wait_for("ctl: serving")
        pid = d.proc.pid
        slice_ns = calibrate(d)
        d.sync(2)  # the calibration's exit handled, and a tick at rest
        base_rss = vm_kib(pid)
        c0, drops0 = counters(d), netlink_drops(pid) or 0
        fig["events"] = (status_text(d).get("latency_events") or "?")
        out(f"daemon {pid}: VmRSS {base_rss} KiB at rest; the rule's value {VALUE} gives "
            f"{cls} and a {slice_ns} ns slice; events from {fig['events']}")
        poll = Poller(d)
        poll.start()
        common = ["--match", match, "--other", other, "--cgroup", cls, "--slice", str(slice_ns),
                  "--wait-ms", str(WAIT_MS), "--hold-ms", str(HOLD_MS)]

        # 1. A fork storm from a managed process: each fork is work for the daemon.
        cpu_b = cpu_s(pid)
        bf, err = run_load(load, common + ["--burst", str(p["burst"]), "--seconds", "0"],
                           os.path.join(tmp, "burst.list"))
        # Every event of the storm handled (an overflow is counted as the socket is
        # read), then a tick that saw the socket drained (the rescan).
        d.sync(2)
        c1 = counters(d)
        fig.update(burst_ms=bf["burst_ms"], burst_managed=bf["burst_managed"],
                   burst_overflows=c1["latency_overflows"] - c0["latency_overflows"])
        out(f"fork storm: {bf['burst_forks']} forks in {bf['burst_ms']} ms from a managed "
            f"process: {fig['burst_overflows']} overflows")
        fig["burst_daemon_cpu_s"] = round(cpu_s(pid) - cpu_b, 2)
        check(bf["burst_managed"] == 1 and bf["burst_forks"] == p["burst"],
              "the storm's parent got its setting and forked")

        # 2. The churn: threads held, execs at a fixed rate. If the storm did not overflow
        # the socket, the churn starts with it again, the daemon stopped (SIGSTOP) while it
        # forks, as a descheduled daemon would be, and execs made before it goes on: then
        # the churn's first execs and the holders' threads arrive while the daemon works
        # through a full socket, and the kernel drops what comes meanwhile without a word.
        stopped = fig["burst_overflows"] == 0
        journal = os.path.join(d.journal, "latency.journal")
        extra = ["--journal", journal]
        if stopped:
            out(f"the storm did not overflow the {fig['events']} events: the churn starts with it "
                "again, the daemon stopped while it forks")
            extra += ["--burst", str(p["burst"]), "--stop", str(pid), "--stopped-execs",
                      str(STOPPED_EXECS)]
        t1, cpu1, load1 = time.monotonic(), cpu_s(pid), os.getloadavg()[0]
        try:
            cf, err = run_load(load, common + extra + [
                "--rate", str(p["rate"]), "--seconds", str(p["seconds"]),
                "--threads", str(p["threads"]), "--holders", str(p["holders"])],
                os.path.join(tmp, "churn.list"))
        finally:
            os.kill(pid, signal.SIGCONT)
        t_end, cpu2, load2 = time.monotonic(), cpu_s(pid), os.getloadavg()[0]
        if err:
            out(err)
        if stopped:
            fig.update(stopped_ms=cf["burst_ms"], stopped_execs=2 * STOPPED_EXECS)
            out(f"stopped storm: {cf['burst_forks']} forks in {cf['burst_ms']} ms, then "
                f"{STOPPED_EXECS} execs of each path before the daemon went on")
        d.sync(2)  # as after the storm: every event handled, and the rescan done
        c3 = counters(d)
        records = journal_records(journal, cf["journal_offset"])
        drops = (netlink_drops(pid) or 0) - drops0
        fig.update({k: v for k, v in cf.items() if not k.startswith("burst")})
        fig.update(churn_overflows=c3["latency_overflows"] - c1["latency_overflows"],
                   overflows=c3["latency_overflows"] - c0["latency_overflows"],
                   rescans=c3["latency_rescans"] - c0["latency_rescans"],
                   netlink_drops=drops, churn_wall_s=round(t_end - t1, 1),
                   daemon_cpu_pct=round(100 * (cpu2 - cpu1) / (t_end - t1), 1),
                   loadavg=f"{load1:.1f} at the start, {load2:.1f} at the end",
                   rule_matches=c3["latency_rule_matches"] - c0["latency_rule_matches"],
                   latency_errors=c3["latency_errors"] - c0["latency_errors"],
                   exec_rate=round((cf["match_spawned"] + cf["other_spawned"] -
                                    (2 * STOPPED_EXECS if stopped else 0)) /
                                   max(cf.get("churn_seconds", 1), 0.001)))
        # 3. Memory back to rest: at the latest once the daemon has trimmed its heap
        # after the churn (RSS_SETTLE_TICKS); how soon is a figure (rss_settle_s).
        rss, settle, asan = vm_kib(pid), None, sanitized(pid)
        tick = c3["ticks"]
        while not asan and tick - c3["ticks"] <= RSS_SETTLE_TICKS:
            rss = vm_kib(pid)
            if rss is not None and rss <= base_rss + RSS_MARGIN_KIB:
                settle = round(time.monotonic() - t_end, 1)
                break
            tick = d.sync()
        poll.stop()
        fig.update(rss_base_kib=base_rss, rss_peak_kib=max(poll.peak_rss, vm_kib(pid, "VmHWM") or 0),
                   rss_after_kib=rss, rss_settle_s=settle, ticks=c3["ticks"] - c0["ticks"],
                   status_failures=poll.failures, status_answers=len(poll.samples))
        alive = d.alive()
        rc = d.stop()

    check(alive and rc == 0, "the daemon stayed alive and stopped cleanly")
    check(fig["ticks"] > 0, f"it kept ticking: {fig['ticks']} ticks; it answered "
          f"{fig['status_answers']} status requests ({fig['status_failures']} failed)")
    check_children(check, cf, "churn")
    check(cf["holders_done"] == p["holders"] and cf["threads_bad"] == 0 and
          cf["threads_started"] >= p["threads"] - p["holders"],
          f"{cf['threads_started']} threads held in {p['holders']} processes: "
          f"{cf['threads_ok']} right at the end (main threads too), {cf['threads_bad']} wrong")
    ids = read_list(os.path.join(tmp, "churn.list"))
    hold_match = {pid for pid, _ in ids.get("hold-match", ())}
    strays = [r for r in records if (r[0], r[2]) not in ids.get("match", set()) and
              r[1] not in hold_match]
    others = {pid: start for pid, start in ids.get("other", ()) | ids.get("hold-other", ())}
    for r in strays[:10]:
        out(f"  journal: lat tid {r[0]} tgid {r[1]} start {r[2]}: "
            f"{'a non-matching child' if others.get(r[1]) == r[2] else 'not a matching task'}")
    fig.update(journal_records=len(records), journal_strays=len(strays))
    check(not strays, f"each of the churn's {len(records)} journal records names a matching "
          f"process or a thread of one, by pid and start time ({cf['reused_pids']} pids were "
          f"reused among the children): {len(strays)} do not")
    check(fig["latency_errors"] == 0, f"no write failed ({fig['latency_errors']} latency_errors; "
          "a task that exits under a write is no error)")
    check(fig["netlink_drops"] == 0 or fig["overflows"] > 0,
          f"the kernel dropped {fig['netlink_drops']} connector messages; the daemon counted "
          f"{fig['overflows']} overflows")
    check(fig["overflows"] > 0, "the overflow path ran")
    check(fig["rescans"] >= 1 if fig["overflows"] else fig["rescans"] == 0,
          f"overflows were followed by rescans, and only they: {fig['rescans']} rescans for "
          f"{fig['overflows']} overflows")
    if stopped:
        check(cf["burst_managed"] == 1 and cf["burst_forks"] == p["burst"],
              "the second storm's parent got its setting and forked")
    if asan:
        out(f"VmRSS not checked: the daemon runs under AddressSanitizer, which keeps freed "
            f"memory (at rest {base_rss} KiB, peak {fig['rss_peak_kib']}, after {rss})")
        return fig, check.failed
    check(settle is not None,
          f"VmRSS back within {RSS_MARGIN_KIB} KiB of its {base_rss} KiB at rest by the "
          f"daemon's next heap trim ({RSS_SETTLE_TICKS} ticks): {rss} KiB after "
          f"{'%.1f s' % settle if settle is not None else 'them'} "
          f"(peak {fig['rss_peak_kib']} KiB)")
    return fig, check.failed
