#!/usr/bin/env python3
"""Writes a large ananicy-style rules tree, the same for the same seed, and says what
rqctl import-ananicy should make of it. Nothing is downloaded: the tree stands in for
a real collection (hundreds of files, thousands of JSON lines) with every field, every
type, cgroups, comments, blank lines, bad lines and names given twice.

    gen_ananicy.py DIR [RULES [FILES [SEED]]]   writes the tree, prints its summary

As a module, generate(dir, rules, files, seed) returns the expectation: for each rule
name rqctl should turn into a section, its value; the bad lines; the counts."""
import json
import os
import random
import sys

SCHEDS = ["idle", "batch", "other", "fifo", "rr", "iso"]
IOCLASSES = ["idle", "best-effort", "realtime"]
CGROUPS = ["cpu30", "cpu50", "cpu80", "cpu90"]
# Lines that no JSON reader takes, each with the reason rqctl gives (its start).
BAD = [
    ('{ "name": "unterminated", "nice": 3', "unterminated object"),
    ('{ "nice": 4 }', 'no "name", "type" or "cgroup"'),
    ('{ "name": 12, "nice": 4 }', '"name" is not a string'),
    ('{ "name": "twice", "nice": 1, "nice": 2 }', "a key given twice"),
    ('name = "ini-style"', "expected '{'"),
]


def clamp(v):
    return max(-20, min(19, v))


def is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def value_of(rule, typ):
    """rqctl's pick: latency_nice, the type's, nice, the type's; else sched idle/batch."""
    typ = typ or {}
    for v in (rule.get("latency_nice"), typ.get("latency_nice"), rule.get("nice"),
              typ.get("nice")):
        if is_int(v):
            return clamp(v)
    sched = rule["sched"] if "sched" in rule else typ.get("sched")
    return {"idle": 19, "batch": 10}.get(sched)


def random_fields(rng, d):
    if rng.random() < 0.4:
        d["latency_nice"] = rng.randint(-25, 25)
    if rng.random() < 0.5:
        d["nice"] = rng.choice([rng.randint(-25, 25), str(rng.randint(0, 9))])
    if rng.random() < 0.3:
        d["sched"] = rng.choice(SCHEDS)
        if d["sched"] in ("fifo", "rr"):
            d["rtprio"] = rng.randint(1, 99)
    if rng.random() < 0.3:
        d["ioclass"] = rng.choice(IOCLASSES)
        d["ionice"] = rng.randint(0, 7)
    if rng.random() < 0.2:
        d["oom_score_adj"] = rng.randint(-1000, 1000)
    if rng.random() < 0.2:
        d["cgroup"] = rng.choice(CGROUPS + ["undefined"])
    return d


def make_types(rng):
    types = {}
    lines = ["# types, as ananicy-cpp's 00-types.types", ""]
    for i in range(24):
        name = f"Type{i:02d}"
        t = random_fields(rng, {"type": name})
        if i % 8 == 0:
            lines.append(json.dumps({"type": name, "nice": 1}))  # replaced below
        lines.append(json.dumps(t))
        types[name] = t
    return types, lines


def make_rule(rng, name, types):
    r = {"name": name}
    if rng.random() < 0.7:
        r["type"] = rng.choice(list(types) + ["Undefined"])
    random_fields(rng, r)
    if rng.random() < 0.05:
        r["cmdlines"] = ["--flag"]
    return r


def rule_name(rng, i):
    if i % 97 == 0:
        return f"a-very-long-program-name-{i}"  # longer than a comm
    return f"p{i:05d}" + rng.choice(["", "-bin", ".x", "_d"])


def write(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def generate(top, nrules=20000, nfiles=300, seed=28):
    rng = random.Random(seed)
    types, tlines = make_types(rng)
    write(os.path.join(top, "00-types.types"), tlines)
    write(os.path.join(top, "00-cgroups.cgroups"),
          ["# cgroups"] + [json.dumps({"cgroup": c, "CPUQuota": int(c[3:])}) for c in CGROUPS])
    entries = len(types) + 3 + len(CGROUPS)  # three types are given twice
    last, bad, names = {}, [], []
    per = -(-nrules // nfiles)
    n = 0
    for fi in range(nfiles):
        # Written in the byte order rqctl reads them, so "last" here is its last.
        rel = os.path.join(f"{fi // 25:02d}-group", f"f{fi:03d}.rules")
        lines = [f"# file {fi}"]
        for _ in range(min(per, nrules - n)):
            if names and rng.random() < 0.03:
                name = rng.choice(names)  # a name given again: the last one counts
            else:
                name = rule_name(rng, n)
                names.append(name)
            r = make_rule(rng, name, types)
            text = json.dumps(r)
            if rng.random() < 0.05:
                text = "  " + text + "  # trailing comment"
            lines.append(text)
            last[name] = r
            n += 1
            if rng.random() < 0.02:
                lines.append("")
            if rng.random() < 0.01:
                b = rng.choice(BAD)
                lines.append(b[0])
                bad.append((os.path.join(top, rel), len(lines), b[1]))
        write(os.path.join(top, rel), lines)
    expect = {}
    for name, r in last.items():
        v = value_of(r, types.get(r.get("type")))
        if v is not None and len(name.encode()) <= 15:
            expect[name] = v
    return {"files": nfiles + 2, "entries": entries + n, "rules": n, "expect": expect,
            "bad": bad, "types": types}


if __name__ == "__main__":
    a = sys.argv[1:]
    if a and a[0] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0)
    if not a or a[0].startswith("-"):
        sys.exit(__doc__)
    g = generate(a[0], *(int(x) for x in a[1:4]))
    live = sum(v >= 0 for v in g["expect"].values())
    print(f"{g['files']} files, {g['rules']} rules, {len(g['bad'])} bad lines, "
          f"{len(g['expect'])} sections, {live} live")
