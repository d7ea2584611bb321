"""[metrics]: the daemon writes a Prometheus text file (exposition format 0.0.4) that a
strict reader accepts, with the counters of what it did: on the fake 2-LLC topology
with one LLC overloaded it moves a task, and the file says so. A reload to another path
removes the old file; a stop removes the file; a path it cannot write is logged."""
import math
import os
import re
import signal
import stat
import time

from rqb import (Daemon, Hogs, TOPO_2LLC, check, main, overload_replay, require, tmpdir)

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*\Z")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*\Z")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class FormatError(Exception):
    pass


def parse_labels(text, where):
    """'a="x",b="y\\"z"' -> (("a", "x"), ("b", 'y"z')), escapes checked."""
    labels, i = [], 0
    while i < len(text):
        m = re.compile(r'([^=]*)="').match(text, i)
        if not m or not LABEL.match(m.group(1)) or m.group(1).startswith("__"):
            raise FormatError(f"{where}: bad label name in {{{text}}}")
        i, value = m.end(), []
        while True:
            if i >= len(text):
                raise FormatError(f"{where}: unterminated label value")
            c = text[i]
            if c == "\\":
                esc = text[i + 1:i + 2]
                if esc not in ("\\", '"', "n"):
                    raise FormatError(f"{where}: bad escape \\{esc}")
                value.append("\n" if esc == "n" else esc)
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise FormatError(f"{where}: raw newline in a label value")
            else:
                value.append(c)
                i += 1
        labels.append((m.group(1), "".join(value)))
        if i < len(text):
            if text[i] != ",":
                raise FormatError(f"{where}: expected ',' between labels")
            i += 1
    names = [n for n, _ in labels]
    if len(set(names)) != len(names):
        raise FormatError(f"{where}: a label given twice")
    return tuple(sorted(labels))


def parse_value(text, where):
    if text in ("+Inf", "-Inf", "NaN"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        raise FormatError(f"{where}: bad value {text!r}")
    return float(text)


def read_metrics(text):
    """A strict reader: every line a HELP or TYPE comment or a sample; names valid;
    a metric's TYPE before its samples and its samples together; no series twice.
    Returns {name: {"type": T, "help": H, "samples": {labels: value}}}."""
    if not text.endswith("\n"):
        raise FormatError("the file does not end with a newline")
    metrics, current, done = {}, None, set()
    for n, line in enumerate(text[:-1].split("\n"), 1):
        where = f"line {n}"
        if line.startswith("#"):
            m = re.fullmatch(r"# (HELP|TYPE) (\S+) (.*)", line)
            if not m or not NAME.match(m.group(2)):
                raise FormatError(f"{where}: not a HELP or TYPE line: {line!r}")
            kind, name, rest = m.groups()
            if name in done:
                raise FormatError(f"{where}: {name} comes back after other metrics")
            if current and current != name:
                done.add(current)
            current = name
            e = metrics.setdefault(name, {"type": None, "help": None, "samples": {}})
            if e["samples"]:
                raise FormatError(f"{where}: {kind} of {name} after its samples")
            key = kind.lower()
            if e[key] is not None:
                raise FormatError(f"{where}: second {kind} for {name}")
            if kind == "TYPE" and rest not in TYPES:
                raise FormatError(f"{where}: unknown type {rest!r}")
            e[key] = rest
            continue
        m = re.fullmatch(r"([^\s{]+)(?:\{(.*)\})? (\S+)(?: (-?\d+))?", line)
        if not m or not NAME.match(m.group(1)):
            raise FormatError(f"{where}: not a sample: {line!r}")
        name, labels, value = m.group(1), m.group(2) or "", m.group(3)
        e = metrics.get(name)
        if not e or e["type"] is None:
            raise FormatError(f"{where}: sample of {name} before its TYPE")
        if name != current:
            raise FormatError(f"{where}: samples of {name} are not together")
        key = parse_labels(labels, where)
        if key in e["samples"]:
            raise FormatError(f"{where}: series {name}{{{labels}}} given twice")
        v = parse_value(value, where)
        if e["type"] == "counter" and (v < 0 or math.isnan(v)):
            raise FormatError(f"{where}: counter {name} is {v}")
        e["samples"][key] = v
    for name, e in metrics.items():
        if e["type"] is None or not e["samples"]:
            raise FormatError(f"{name}: a TYPE without samples, or samples without TYPE")
        if e["type"] == "counter" and not name.endswith("_total"):
            raise FormatError(f"{name}: a counter's name should end in _total")
    return metrics


def reader_refuses(text):
    try:
        read_metrics(text)
    except FormatError:
        return True
    return False


def check_reader():
    good = '# HELP a_total x\n# TYPE a_total counter\na_total{k="v\\"\\n"} 1\n'
    check(not reader_refuses(good), "the reader takes a well-formed file")
    for bad, what in [
        ("a 1\n", "a sample without TYPE"),
        ("# TYPE a gauge\na 1\na 2\n", "a series twice"),
        ("# TYPE a gauge\na{k=\"x\",k=\"y\"} 1\n", "a label twice"),
        ("# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\na{x=\"1\"} 2\n", "split samples"),
        ("# TYPE 1a gauge\n1a 1\n", "a bad name"),
        ("# TYPE a gauge\na{k=\"\\t\"} 1\n", "a bad escape"),
        ("# TYPE a gauge\na one\n", "a bad value"),
        ("# TYPE a gauge\n# some comment\na 1\n", "another comment"),
        ("# TYPE a gauge\na 1", "no final newline"),
    ]:
        check(reader_refuses(bad), f"the reader refuses {what}")


def sample(metrics, metric, **labels):
    return metrics[metric]["samples"][tuple(sorted(labels.items()))]


def read_file(path):
    with open(path) as f:
        return read_metrics(f.read())


def wait_for_file(path, cond, timeout=10.0):
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        if os.path.exists(path):
            last = read_file(path)
            if cond(last):
                return last
        time.sleep(0.1)
    raise AssertionError(f"{path} never showed what was expected; last: {last}")


def test():
    check_reader()
    require()
    with tmpdir() as tmp, Hogs(2) as hogs:
        a, b, replay = overload_replay(tmp, hogs)
        prom = os.path.join(tmp, "rqbalance.prom")
        # max_pin_ms: the pin stands whenever the test reads the file (the default
        # releases it after 10 s, and a slow run would then see 0 tasks managed).
        conf = (f"[metrics]\npath = {prom}\ninterval_ms = 1000\n"
                "[balance]\nmax_pin_ms = 86400000\n")
        # The service's UMask=0077: node_exporter, another user, must still read the file.
        old_umask = os.umask(0o077)
        try:
            d = Daemon(tmp, ["--topology", TOPO_2LLC, "--replay", replay], conf=conf)
        finally:
            os.umask(old_umask)
        with d:
            m = wait_for_file(prom, lambda m: sample(m, "rqbalance_moves_total") >= 1)
            print(open(prom).read())
            check(stat.S_IMODE(os.stat(prom).st_mode) == 0o644,
                  "the file is mode 0644 under umask 0077")
            check(sample(m, "rqbalance_sampler", name="replay") == 1,
                  'rqbalance_sampler{name="replay"} 1')
            check(len(m["rqbalance_sampler"]["samples"]) == 1, "one sampler series")
            check(sample(m, "rqbalance_managed_tasks") == 1, "one task managed")
            check(sample(m, "rqbalance_llc_runnable", llc="0", cpus="0") == 2 and
                  sample(m, "rqbalance_llc_runnable", llc="1", cpus="1") == 0,
                  "runnable per LLC is the snapshot's: 2 on LLC 0, none on LLC 1")
            check(sample(m, "rqbalance_llc_cpus", llc="1", cpus="1") == 1, "LLC 1 has 1 CPU")
            for kind in ("affinity_transient", "affinity_permanent", "latency", "sample"):
                check(sample(m, "rqbalance_errors_total", kind=kind) == 0,
                      f"no {kind} errors")
            check(m["rqbalance_ticks_total"]["type"] == "counter", "ticks is a counter")
            with open(prom) as held:
                first = held.read()
                ticks = sample(read_metrics(first), "rqbalance_ticks_total")
                m2 = wait_for_file(prom, lambda m: sample(m, "rqbalance_ticks_total") > ticks)
                # Written whole beside it and renamed over it: a reader that has the old
                # file open still reads all of it, unchanged, and it has no name any more.
                held.seek(0)
                check(os.fstat(held.fileno()).st_nlink == 0 and held.read() == first,
                      f"a new file replaces the one a reader holds, which stays as it was: "
                      f"ticks {ticks} -> {sample(m2, 'rqbalance_ticks_total')}")

            moved = os.path.join(tmp, "moved.prom")
            with open(d.conf) as f:
                text = f.read().replace(prom, moved)
            with open(d.conf, "w") as f:
                f.write(text)
            d.proc.send_signal(signal.SIGHUP)
            wait_for_file(moved, lambda m: True)
            check(not os.path.exists(prom), "a reload to another path removes the old file")

            with open(d.conf, "w") as f:
                f.write(text.replace(moved, os.path.join(tmp, "no", "such", "dir.prom")))
            d.proc.send_signal(signal.SIGHUP)
            d.wait_for(r"metrics: cannot write .*no/such/dir\.prom")
            check(not os.path.exists(moved), "the old file went when the path changed")
            check(d.alive(), "a path that cannot be written does not stop the daemon")

            with open(d.conf, "w") as f:
                f.write(text)
            d.proc.send_signal(signal.SIGHUP)
            m = wait_for_file(moved, lambda m: True)
            check(sample(m, "rqbalance_metrics_write_failures_total") >= 1,
                  "the failed writes were counted")
            check(d.stop() == 0, "clean stop")
            check(not os.path.exists(moved), "a stop removes the file")
            # Checked once the daemon is gone: while it runs, a write may be under way.
            left = [f for f in os.listdir(tmp) if f.endswith(".tmp")]
            check(not left, f"no temporary file is left ({left})")


main(test)
