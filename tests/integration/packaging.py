"""Helpers for the tests of what rqbalance installs: make install into a scratch
directory, and a reader for systemd unit files."""

import os
import re
import shutil
import subprocess
import tempfile

from rqb import BUILD, ROOT, skip

UNIT_TEMPLATE = os.path.join(ROOT, "systemd", "rqbalance.service.in")


def make(*args, **variables):
    """Runs make in the tree on this test's build (SANITIZE=1 for build-asan) and
    returns its output; a failure is an AssertionError with that output.

    make writes the units it installs into the build directory ($(B)/systemd/, made
    anew at every make with the paths given), so two runs installing with different
    paths at once would install each other's units: make gets a build directory of
    this call's own, B=, whose entries but systemd/ link to the real build's."""
    cmd = ["make", "-s", "--no-print-directory", "-C", ROOT]
    if os.path.basename(BUILD) == "build-asan":
        cmd.append("SANITIZE=1")
    with tempfile.TemporaryDirectory(prefix="rqb-make-") as b:
        real = os.path.join(ROOT, BUILD)
        for name in os.listdir(real) if os.path.isdir(real) else []:
            if name != "systemd":
                os.symlink(os.path.join(real, name), os.path.join(b, name))
        cmd += [f"B={b}"] + list(args) + [f"{k}={v}" for k, v in variables.items()]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise AssertionError(f"{' '.join(cmd)} failed:\n{r.stdout}{r.stderr}")
    return r.stdout + r.stderr


def read_unit(path):
    """[(section, key, value)] of a unit file, in order; continuation lines joined."""
    out, section, pending = [], None, ""
    with open(path) as f:
        for raw in f:
            line = pending + raw.rstrip("\n")
            pending = ""
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            s = line.strip()
            if not s or s[0] in "#;":
                continue
            if s.startswith("[") and s.endswith("]"):
                section = s[1:-1]
                continue
            key, _, value = s.partition("=")
            out.append((section, key.strip(), value.strip()))
    return out


def values(unit, key, section="Service"):
    return [v for s, k, v in unit if s == section and k == key]


def value(unit, key, section="Service"):
    vs = values(unit, key, section)
    return vs[-1] if vs else None


def bounding_set(unit):
    """The capabilities CapabilityBoundingSet= lines allow, as 'CAP_X' names."""
    caps = set()
    for v in values(unit, "CapabilityBoundingSet"):
        if v.startswith("~"):
            raise AssertionError("a deny-list bounding set: list what it keeps instead")
        caps.update(v.split())
    return caps


def need(*tools):
    for t in tools:
        if not shutil.which(t):
            skip(f"needs {t} (in .ci/deps test)")


def only_on_first_build():
    """For checks that do not depend on the build: run them once, on build."""
    if os.path.basename(BUILD) != "build":
        skip(f"does not depend on the build: checked with build, not {BUILD}")


def config_mk(name):
    """A variable's value as make sees it with config.mk's defaults."""
    r = subprocess.run(["make", "-s", "--no-print-directory", "-C", ROOT, "-f", "config.mk",
                        "-f", "-", "print"], input=f"print:\n\t@echo $({name})\n",
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def exposure(text):
    m = re.search(r"Overall exposure level for \S+: (\d+\.\d+)", text)
    if not m:
        raise AssertionError(f"no overall exposure level in:\n{text}")
    return float(m.group(1))
