"""rqctl import-ananicy on tests/data/ananicy, a tree of ananicy(-cpp) rules: each rule's
value as rqctl(1)'s table gives it, every field it cannot carry over kept as a comment,
negative values commented out (live with spoofable = yes under --allow-spoofable), each
bad line named FILE:LINE with exit status 1, and the output taken by
rqbalanced --check-config as a rules.d file. Then the 20,000 rules that
tests/data/gen_ananicy.py writes: every section with its value, the counts, and the daemon's
check of the output, a skip where it refuses only for the number of rules. And
tests/data/ananicy-cachyos, CachyOS's Steam rules: its type Launcher becomes inherit = no,
which the daemon reads. No daemon runs: the command is client side."""
import json
import os
import re
import subprocess

import sys

from rqb import DAEMON, RQCTL, ROOT, check, main, skip, tmpdir

sys.path.insert(0, os.path.join(ROOT, "tests", "data"))
import gen_ananicy  # noqa: E402

DATA = os.path.join(ROOT, "tests", "data", "ananicy")
CACHYOS = os.path.join(ROOT, "tests", "data", "ananicy-cachyos")
BAD = os.path.join(DATA, "zz-broken", "bad.rules")

# Section (without "ananicy-") -> (comm, value) of the rules written live by default.
LIVE = {
    "cc1": ("cc1", 15),            # the type's latency_nice
    "make": ("make", 19),          # nice 30, clamped
    "ld.gold": ("ld.gold", 10),    # sched batch
    "idler": ("idler", 19),        # the type's sched idle
    "batcher": ("batcher", 10),    # the type's sched batch
    "indexer": ("indexer", 15),    # the type's latency_nice before the rule's nice
    "this_that": ("this/that", 1),  # sanitised
    "this_that-2": ("this_that", 2),  # and its collision
    "a_b_": (r"a\*b\?", 4),        # fnmatch's characters escaped
    "Web_Content": ("Web Content", 1),
    "dup": ("dup", 2),             # the last rule of a name
    "svc": ("svc", 10),            # the type's nice
    "java": ("java", 10),
    "badnice": ("badnice", 15),    # a nice that is no integer gives way to the type
    "caf__": ("caf\u00e9", 0),     # a \\u escape decoded
    "okhash": ("okhash", 3),       # a comment after the object
    "chess": ("chess", 5),         # latency_nice before nice
    "after": ("after", 3),         # the good line after the bad ones
}
# Negative values: commented out by default.
NEGATIVE = {
    "jack": ("jack", -5),
    "supertux2": ("supertux2", -11),  # the type's latency_nice
    "wine-game": ("wine-game", -11),  # the type's latency_nice before the rule's nice
    "turbo": ("turbo", -20),          # nice -25, clamped
    "tight": ("tight", -1),
}
# Line of bad.rules -> the reason rqctl gives.
BAD_LINES = {
    1: "unterminated object",
    2: 'no "name", "type" or "cgroup"',
    3: '"name" is not a string',
    4: "a key given twice",
    5: "expected '{'",
    6: "nested objects and arrays are not supported",
    7: "text after the object",
}


def rqctl(*args):
    p = subprocess.run([RQCTL, *args], capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


def sections(text):
    """name -> (live, {key: value}) for each [rule NAME], live or commented out."""
    out, cur = {}, None
    for line in text.splitlines():
        m = re.fullmatch(r"(# )?\[rule ananicy-(.*)\]", line)
        if m:
            cur = out.setdefault(m.group(2), (m.group(1) is None, {}))[1]
            continue
        m = re.fullmatch(r"(?:# )?(\w+) = (.*)", line)
        if cur is not None and m and m.group(1) in ("comm", "latency_nice", "spoofable",
                                                    "inherit"):
            cur[m.group(1)] = m.group(2)
        elif not line:
            cur = None
    return out


def block(text, where):
    """The paragraph of the output about the entry at where (REL:LINE)."""
    for para in text.split("\n\n"):
        if para.startswith(f"# {where}: "):
            return para
    raise AssertionError(f"no paragraph for {where}")


def check_values(secs, expect, live, spoofable):
    for name, (comm, value) in expect.items():
        got = secs.get(name)
        check(got is not None, f"[rule ananicy-{name}] written")
        check(got[0] == live, f"{name}: {'live' if live else 'commented out'}")
        check(got[1].get("comm") == comm, f"{name}: comm = {comm} (got {got[1].get('comm')})")
        check(got[1].get("latency_nice") == str(value), f"{name}: latency_nice = {value}")
        check(got[1].get("spoofable") == spoofable, f"{name}: spoofable {spoofable}")


def data_lines():
    """(REL:LINE, object) of each line of the tree that Python's json reads as an object."""
    for top, _, files in os.walk(DATA):
        for f in files:
            if not f.endswith((".rules", ".types", ".cgroups")):
                continue
            path = os.path.join(top, f)
            for n, line in enumerate(open(path, encoding="utf-8"), 1):
                try:
                    obj = json.loads(line.split("} #")[0] + ("}" if "} #" in line else ""))
                except ValueError:
                    continue
                if isinstance(obj, dict) and path != BAD:
                    yield f"{os.path.relpath(path, DATA)}:{n}", obj


def check_nothing_dropped(out):
    """Every key of every line shows in its paragraph: as comm, the value, or a comment."""
    for where, obj in data_lines():
        para = block(out, where)
        # What the line defines, as ananicy-cpp tells: a name, else a type, else a cgroup.
        kind = next(k for k in ("name", "type", "cgroup") if k in obj)
        for key, value in obj.items():
            if key == kind:
                shown = f'"{value}"' in para.splitlines()[0]
            elif key == "type":
                shown = f'# type "{value}"' in para
            else:
                shown = (f"{key} = " in para or f"the rule's {key}" in para
                         or f'sched "{value}"' in para)
            check(shown, f"{where}: {key} is in the output")


def check_comments(out):
    cc1 = block(out, "00-default/compilers/compilers.rules:1")
    check('# not carried over: cgroup = "cpu90" (CPUQuota 90), from type "Heavy_CPU"' in cc1,
          "a type's cgroup kept as a comment with its CPUQuota")
    check('# not carried over: ionice = 7, from type "Heavy_CPU"' in cc1, "ionice kept")
    check('# latency_nice 15: the latency_nice of type "Heavy_CPU"' in cc1, "the source said")
    rustc = block(out, "00-default/compilers/compilers.rules:3")
    check('# type "Nope": no .types file defines it' in rustc and "[rule" not in rustc,
          "an unknown type said, and no value: comments only")
    nothing = block(out, "00-default/compilers/compilers.rules:8")
    check("# not carried over: oom_score_adj = 500" in nothing and "[rule" not in nothing,
          "oom_score_adj kept, no section without a value")
    audio = block(out, "00-default/compilers/compilers.rules:14")
    check('# not carried over: sched = "rr"' in audio and "rtprio = 50" in audio,
          "sched rr and rtprio kept as comments")
    jack = block(out, "00-default/compilers/compilers.rules:15")
    check('# not carried over: list = ["a", 1]' in jack and "custom_key = true" in jack,
          "unknown keys kept, arrays too")
    check("Left out: a negative value on comm alone" in jack, "why a negative value is out")
    dup = block(out, "00-default/compilers/compilers.rules:16")
    check("# Left out: replaced by 00-default/compilers/compilers.rules:17" in dup,
          "a rule replaced by a later one of its name")
    long_ = block(out, "00-default/compilers/compilers.rules:13")
    check("Left out: longer than the 15 bytes" in long_ and "[rule" not in long_,
          "a name no comm can hold is left out")
    turbo = block(out, "00-default/games.rules:7")
    check("# latency_nice -20: the rule's nice, -25 clamped to -20..19" in turbo, "clamping said")
    cg = block(out, "00-cgroups.cgroups:3")
    check("#   CPUQuota = 90" in cg, "a .cgroups entry kept as a comment")
    game = block(out, "00-types.types:2")
    check("#   latency_nice = -11" in game and "#   ioclass = \"best-effort\"" in game,
          "a .types entry kept as comments")
    check(max(len(l) for l in out.splitlines()) <= 198, "no line longer than the config takes")


def write_conf(tmp, text, name):
    """A config whose rules_dir holds text as ananicy.conf; its path."""
    rules = os.path.join(tmp, name, "rules.d")
    os.makedirs(rules)
    with open(os.path.join(rules, "ananicy.conf"), "w") as f:
        f.write(text)
    conf = os.path.join(tmp, name, "rqbalance.conf")
    with open(conf, "w") as f:
        f.write(f"[daemon]\nrules_dir = {rules}\n")
    return conf


def check_config(tmp, text, name):
    conf = write_conf(tmp, text, name)
    p = subprocess.run([DAEMON, "--check-config", conf], capture_output=True, text=True,
                       timeout=30)
    check(p.returncode == 0, f"{name}: rqbalanced --check-config takes it ({p.stdout}{p.stderr})")
    p = subprocess.run([DAEMON, "--config", conf, "--dump-config"], capture_output=True,
                       text=True, timeout=30)
    return p.stdout


def test():
    if not os.path.exists(RQCTL) or not os.path.exists(DAEMON):
        skip(f"{RQCTL} or {DAEMON} is not built")
    rc, out, err = rqctl("import-ananicy", DATA)
    print(err)
    check(rc == 1, "exit status 1: some lines were skipped")
    for n, reason in BAD_LINES.items():
        check(f"rqctl: {BAD}:{n}: {reason}" in err, f"bad.rules:{n} reported: {reason}")
    check("rqctl: import-ananicy: 7 skipped" in err, "the count of skipped lines")
    check("old-format" not in out, "files of other names are not read")
    secs = sections(out)
    check_values(secs, LIVE, True, None)
    check_values(secs, NEGATIVE, False, None)
    check(len(secs) == len(LIVE) + len(NEGATIVE), f"no other section ({sorted(secs)})")
    check_comments(out)
    check_nothing_dropped(out)
    check(rqctl("import-ananicy", DATA)[1] == out, "the same output twice")

    rc, spoof, _ = rqctl("import-ananicy", "--allow-spoofable", DATA)
    check(rc == 1, "--allow-spoofable: the same exit status")
    ssecs = sections(spoof)
    check_values(ssecs, NEGATIVE, True, "yes")
    check_values(ssecs, LIVE, True, None)

    with tmpdir() as tmp:
        dump = check_config(tmp, out, "default")
        check("[rule ananicy-cc1]" in dump and "[rule ananicy-jack]" not in dump,
              "the daemon reads the live rules, and not the commented-out ones")
        dump = check_config(tmp, spoof, "spoofable")
        check("[rule ananicy-jack]" in dump, "--allow-spoofable: the negative rules are read")
        # What the default leaves out is what the config refuses.
        live = re.sub(r"^# (\[rule |comm = |latency_nice = )", r"\1", out, flags=re.M)
        rules = os.path.join(tmp, "refused")
        os.makedirs(rules)
        with open(os.path.join(rules, "ananicy.conf"), "w") as f:
            f.write(live)
        conf = os.path.join(tmp, "refused.conf")
        with open(conf, "w") as f:
            f.write(f"[daemon]\nrules_dir = {rules}\n")
        p = subprocess.run([DAEMON, "--check-config", conf], capture_output=True, text=True,
                           timeout=30)
        check(p.returncode == 1 and "[rule ananicy-jack] latency_nice: a negative value"
              in p.stderr, "uncommented, a negative rule without spoofable is refused")

    rc, out, err = rqctl("import-ananicy", os.path.join(DATA, "00-default"))
    check(rc == 0 and not err, f"a tree without a bad line: exit 0, nothing on stderr ({err})")
    rc, _, err = rqctl("import-ananicy", os.path.join(DATA, "missing"))
    check(rc == 1 and "missing: No such file or directory" in err, "a missing DIR: exit 1")
    rc, _, err = rqctl("import-ananicy")
    check(rc == 2, "no DIR: bad usage, exit 2")
    rc, _, err = rqctl("import-ananicy", "--frob", DATA)
    check(rc == 2 and "--frob" in err, "an unknown option: exit 2")
    for opt in ("--help", "-h"):
        rc, out, err = rqctl("import-ananicy", opt)
        check(rc == 0 and out.startswith("Usage: rqctl import-ananicy") and not err,
              f"import-ananicy {opt}: its usage, exit 0")
    rc, out, _ = rqctl("--help")
    check(rc == 0 and "import-ananicy [--allow-spoofable] DIR" in out,
          "rqctl --help lists import-ananicy")



def generated_values(text):
    """comm -> (live, latency_nice) of every section, live or commented out."""
    pat = r"^(# )?\[rule ananicy-.*\]\n(?:# )?comm = (.*)\n(?:# )?latency_nice = (-?\d+)$"
    return {m.group(2): (m.group(1) is None, int(m.group(3)))
            for m in re.finditer(pat, text, re.M)}


def test_generated(tmp):
    """The 20,000 rules of gen_ananicy.py: each one that can be carried over is there with
    its value, the counts add up, and the daemon loads the output where it takes that many."""
    tree = os.path.join(tmp, "tree")
    g = gen_ananicy.generate(tree)
    rc, out, err = rqctl("import-ananicy", tree)
    check(rc == 1, "generated: exit 1, lines were skipped")
    for path, line, reason in g["bad"]:
        check(f"rqctl: {path}:{line}: {reason}" in err, f"generated: {path}:{line} reported")
    check(f"import-ananicy: {len(g['bad'])} skipped" in err,
          f"generated: {len(g['bad'])} skipped, one a bad line")
    check(f"Files: {g['files']}; rules, types and cgroups: {g['entries']}." in out,
          f"generated: {g['files']} files and {g['entries']} entries counted")
    got = generated_values(out)
    want = {n: (v >= 0, v) for n, v in g["expect"].items()}
    wrong = sorted(n for n in set(got) | set(want) if got.get(n) != want.get(n))
    check(not wrong, f"generated: {len(want)} sections, each with its value ({wrong[:5]})")
    live = sum(v >= 0 for v in g["expect"].values())
    m = re.search(r"import-ananicy: (\d+) live rules, but rqbalanced takes at most", err)
    check(not m or int(m.group(1)) == live, f"generated: {live} live rules counted")
    check(max(len(l) for l in out.splitlines()) <= 198, "generated: no line too long")
    p = subprocess.run([DAEMON, "--check-config", write_conf(tmp, out, "generated")],
                       capture_output=True, text=True, timeout=120)
    errs = [l for l in p.stderr.splitlines() if ": " in l and not l.endswith(": ok")]
    if p.returncode != 0 and errs and all("too many rules" in l for l in errs):
        return (f"the daemon refuses only for the count of the {live} live rules "
                f"({errs[0].split(': ', 1)[1]})")
    check(p.returncode == 0, f"generated: rqbalanced --check-config takes it ({p.stderr})")
    return None


def test_cachyos(tmp):
    """CachyOS's launchers (type Launcher: nice 16, sched normal) are not handed down; its
    web view (Doc-View) and its game (Game) are favours on comm alone, commented out; the
    shader builder's name is longer than a comm."""
    rc, out, err = rqctl("import-ananicy", CACHYOS)
    check(rc == 0 and not err, f"cachyos: exit 0, nothing on stderr ({err})")
    secs = sections(out)
    for name in ("steam", "steam.sh", "Steam.exe", "bottles"):
        got = secs.get(name)
        check(got == (True, {"comm": name, "latency_nice": "16", "inherit": "no"}),
              f"cachyos: {name}, a Launcher: live, 16, inherit = no ({got})")
    for name, v in (("steamwebhelper", "-4"), ("hl2_linux", "-5")):
        got = secs.get(name)
        check(got == (False, {"comm": name, "latency_nice": v}),
              f"cachyos: {name}: commented out, {v}, handed down ({got})")
    check(len(secs) == 6, f"cachyos: no other section ({sorted(secs)})")
    check("Left out: longer than the 15 bytes" in block(out, "00-default/Games/launchers.rules:12"),
          "cachyos: fossilize_replay is longer than a comm")
    dump = check_config(tmp, out, "cachyos")
    steam = dump.split("[rule ananicy-steam]\n", 1)[-1].split("\n\n", 1)[0]
    check("inherit = no" in steam.splitlines(), f"cachyos: the daemon reads inherit = no ({steam})")


def test_all():
    test()
    with tmpdir() as tmp:
        test_cachyos(tmp)
    with tmpdir() as tmp:
        why = test_generated(tmp)
    if why:
        skip(f"skip: generated: daemon load not checked: {why}")


main(test_all)
