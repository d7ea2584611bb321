"""The Debian package: dpkg-buildpackage -us -uc -b builds it from a scratch copy of the
committed tree (RQB_DEB_TREE=worktree: of the working tree), so the repository stays
as it was; dpkg-deb unpacks it into a scratch root. It holds the daemon, the client,
the units with /usr paths, the config as a conffile, the D-Bus policy, the man pages,
the completion and the examples; its maintainer scripts, from dh_installsystemd, enable and start the
service and the socket, stop them on removal and forget them on purge; its
Build-Depends name the package of every pkg-config module config.mk links; and the
packaged rqbalanced accepts the packaged config."""
import glob
import os
import re
import shutil
import subprocess

from packaging import need, only_on_first_build, read_unit, value
from rqb import ROOT, check, main, tmpdir


def copy_tree(dest):
    """The committed tree, or with RQB_DEB_TREE=worktree the working tree's files that
    git tracks or would track; outside a git repository, the tree without its builds."""
    if not shutil.which("git") or subprocess.run(["git", "-C", ROOT, "rev-parse", "--git-dir"],
                                                 capture_output=True).returncode != 0:
        shutil.copytree(ROOT, dest, symlinks=True, ignore=shutil.ignore_patterns(
            "build", "build-*", "__pycache__"))
        return "the tree (not a git repository)"
    os.makedirs(dest)
    if os.environ.get("RQB_DEB_TREE") == "worktree":
        files = subprocess.run(["git", "-C", ROOT, "ls-files", "-z", "-co", "--exclude-standard"],
                               capture_output=True, check=True).stdout.decode().split("\0")
        for f in filter(None, files):
            src = os.path.join(ROOT, f)
            if os.path.isfile(src):
                os.makedirs(os.path.dirname(os.path.join(dest, f)), exist_ok=True)
                shutil.copy2(src, os.path.join(dest, f))
        return "the working tree"
    archive = subprocess.run(["git", "-C", ROOT, "archive", "HEAD"], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", dest], input=archive, check=True)
    return "HEAD"


def make_var(tree, name):
    r = subprocess.run(["make", "-s", "--no-print-directory", "-C", tree, "-f", "config.mk",
                        "-f", "-", "print"], input=f"print:\n\t@echo $({name})\n",
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def build_depends(tree):
    text = open(os.path.join(tree, "debian", "control")).read()
    field = re.search(r"^Build-Depends:(.*?)^\S", text, re.M | re.S).group(1)
    names = set()
    for dep in field.split(","):
        for alt in dep.split("|"):
            if alt.strip():
                names.add(re.match(r"\s*([a-z0-9.+-]+)", alt).group(1))
    return names


def check_build_depends(tree):
    """Each pkg-config module of PKGS comes from a package Build-Depends names."""
    deps = build_depends(tree)
    for mod in make_var(tree, "PKGS").split():
        pc = subprocess.run(["pkg-config", "--path", mod], capture_output=True, text=True)
        if pc.returncode != 0:
            check(False, f"pkg-config finds {mod} here (the build would fail)")
        owner = subprocess.run(["dpkg", "-S", os.path.realpath(pc.stdout.strip())],
                               capture_output=True, text=True)
        if owner.returncode != 0:
            owner = subprocess.run(["dpkg", "-S", pc.stdout.strip()], capture_output=True,
                                   text=True)
        pkg = owner.stdout.split(":")[0]
        check(pkg in deps, f"Build-Depends has {pkg}, which holds {mod}.pc")


def build(tmp, src):
    env = dict(os.environ, DEB_BUILD_OPTIONS=f"nocheck parallel={os.cpu_count() or 1}")
    env.pop("CI", None)
    log = os.path.join(tmp, "build.log")
    with open(log, "w") as f:
        r = subprocess.run(["dpkg-buildpackage", "-us", "-uc", "-b"], cwd=src, stdout=f,
                           stderr=subprocess.STDOUT, env=env, timeout=900)
    if r.returncode != 0:
        print(open(log).read()[-6000:])
    check(r.returncode == 0, "dpkg-buildpackage -us -uc -b builds")
    debs = [d for d in glob.glob(os.path.join(tmp, "rqbalance_*.deb"))]
    check(len(debs) == 1, f"one rqbalance .deb: {[os.path.basename(d) for d in debs]}")
    return debs[0]


def check_files(root, version, deb):
    files = set()
    for d, _, fs in os.walk(root):
        files.update("/" + os.path.relpath(os.path.join(d, f), root) for f in fs)
    want = {"/usr/sbin/rqbalanced", "/usr/bin/rqctl", "/lib/systemd/system/rqbalance.service",
            "/lib/systemd/system/rqbalance.socket", "/etc/rqbalance/rqbalance.conf",
            "/usr/share/man/man8/rqbalanced.8.gz", "/usr/share/man/man1/rqctl.1.gz",
            "/usr/share/man/man5/rqbalance.conf.5.gz",
            "/usr/share/bash-completion/completions/rqctl",
            "/usr/share/doc/rqbalance/copyright", "/usr/share/doc/rqbalance/changelog.gz",
            "/usr/share/doc/rqbalance/examples/rqbalance-nobpf.conf",
            "/usr/share/doc/rqbalance/examples/rqbalance-cgroupfs.conf",
            "/usr/share/doc/rqbalance/examples/rqbalance-daemonset.yaml",
            "/usr/share/dbus-1/system.d/org.rqbalance1.conf",
            "/usr/lib/systemd/user/rqbalance-gamemode.service",
            "/usr/share/dbus-1/services/com.feralinteractive.GameMode.rqbalance.service"}
    check(files == want, f"the package holds exactly its files: {sorted(files ^ want) or 'ok'}")
    check(os.path.isdir(os.path.join(root, "etc/rqbalance/rules.d")), "and an empty rules.d")
    check(os.path.basename(deb) == f"rqbalance_{version}_" + subprocess.run(
        ["dpkg", "--print-architecture"], capture_output=True, text=True).stdout.strip() +
        ".deb", f"its version is config.mk's {version}")
    unit = read_unit(os.path.join(root, "lib/systemd/system/rqbalance.service"))
    check(value(unit, "ExecStart") == "/usr/sbin/rqbalanced --foreground" and
          value(unit, "ExecReload") == "/usr/bin/rqctl reload",
          "the packaged unit runs /usr/sbin/rqbalanced and reloads with /usr/bin/rqctl")


def check_scripts(ctrl):
    conffiles = open(os.path.join(ctrl, "conffiles")).read().split()
    check(conffiles == ["/etc/rqbalance/rqbalance.conf"],
          "the config is a conffile: dpkg never overwrites a changed one")
    scripts = {s: open(os.path.join(ctrl, s)).read() for s in ("postinst", "prerm", "postrm")}
    for name, text in scripts.items():
        check(subprocess.run(["sh", "-n", os.path.join(ctrl, name)]).returncode == 0,
              f"{name} is valid sh")
    post = scripts["postinst"]
    for u in ("rqbalance.service", "rqbalance.socket"):
        check(f"deb-systemd-helper enable '{u}'" in post, f"postinst enables {u}")
    check(re.search(r"deb-systemd-invoke \$_dh_action 'rqbalance.service' 'rqbalance.socket'",
                    post), "postinst starts both, or restarts them on upgrade")
    check("deb-systemd-invoke stop 'rqbalance.service' 'rqbalance.socket'" in scripts["prerm"],
          "prerm stops both on removal, which gives every task back")
    check("deb-systemd-helper purge 'rqbalance.service' 'rqbalance.socket'" in scripts["postrm"],
          "postrm forgets them on purge")
    control = open(os.path.join(ctrl, "control")).read()
    depends = re.search(r"^Depends: (.*)$", control, re.M).group(1)
    check("libsystemd0" in depends and "libhwloc" in depends,
          f"shlibs found the libraries: {depends}")


def test():
    only_on_first_build()
    need("dpkg-buildpackage", "dh", "dpkg-deb")
    with tmpdir() as tmp:
        src = os.path.join(tmp, "src")
        print("building from", copy_tree(src))
        version = make_var(src, "VERSION")
        changelog = open(os.path.join(src, "debian", "changelog")).readline()
        check(f"rqbalance ({version})" in changelog, f"debian/changelog is at {version}")
        check_build_depends(src)
        deb = build(tmp, src)
        root, ctrl = os.path.join(tmp, "root"), os.path.join(tmp, "ctrl")
        subprocess.run(["dpkg-deb", "-x", deb, root], check=True)
        subprocess.run(["dpkg-deb", "-e", deb, ctrl], check=True)
        check_files(root, version, deb)
        check_scripts(ctrl)
        conf = os.path.join(root, "etc/rqbalance/rqbalance.conf")
        r = subprocess.run([os.path.join(root, "usr/sbin/rqbalanced"), "--check-config", conf],
                           capture_output=True, text=True, timeout=60)
        print(r.stdout + r.stderr)
        check(r.returncode == 0, "the packaged rqbalanced accepts the packaged config")


main(test)
