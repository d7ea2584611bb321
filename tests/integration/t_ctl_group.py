"""ctl_group is resolved to a gid when the config is loaded, never looked up in the
event loop (where NSS may block). A real unprivileged user, a member of a group the
test makes, may reload; once the group is deleted from /etc/group the running daemon
still judges the user by the gid it resolved (it looks nothing up per request), and a
reload, which resolves again, is refused with file:line and keeps the running config.
--check-config refuses a group that does not exist, and takes a gid as a number."""
import grp
import os
import re
import subprocess

from rqb import DAEMON, Daemon, check, main, require, rqctl, tmpdir, user_rqctl
from rqb_user import User


def check_config(path):
    return subprocess.run([DAEMON, "--check-config", path], capture_output=True, text=True,
                          timeout=60)


def test():
    require()
    group = f"rqbg{os.getpid() % 100000}"
    with tmpdir() as tmp, User("rqbg") as user:
        prog = user_rqctl(tmp)
        subprocess.run(["groupadd", group], check=True)
        try:
            gid = grp.getgrnam(group).gr_gid
            subprocess.run(["usermod", "-a", "-G", group, user.name], check=True)
            with Daemon(tmp, conf=f"[daemon]\nctl_group = {group}\n") as d:
                d.wait_for("ctl: serving")
                r = user.run([prog, "-s", d.ctl, "reload"], text=True)
                check(r.returncode == 0, f"a member of ctl_group may reload ({r.stderr.strip()!r})")
                # A process of the user's that holds the group (runuser fixes its gids
                # from /etc/group before the shell starts: the group is deleted only once
                # the shell says it runs), asking only once the group is gone.
                p = user.popen(["sh", "-c", f"echo up; read x; exec {prog} -s {d.ctl} reload"],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True)
                check(p.stdout.readline() == "up\n", "the user's shell runs, in the group")
                subprocess.run(["groupdel", group], check=True)
                p.stdin.write("go\n")
                p.stdin.close()
                r = subprocess.CompletedProcess(p.args, p.wait(), "", p.stderr.read())
                check("permission denied" not in r.stderr and
                      d.text().count("reload asked by uid") == 2,
                      "with the group gone from /etc/group, the gid resolved at load still "
                      f"counts: nothing is looked up per request ({r.stderr.strip()!r})")
                check(r.returncode == 1 and "ctl_group: no such group" in r.stderr,
                      "the reload it asked for resolves the group again, and fails")
                r = rqctl(d, "reload")
                check(r.returncode == 1 and re.search(
                    rf"rqbalance\.conf:\d+: \[daemon\] ctl_group: no such group", r.stderr),
                    f"a reload resolves it again, and refuses it ({r.stderr.strip()!r})")
                d.sync()
                check(d.alive() and "keeping the running configuration" in d.text(),
                      "and keeps the running configuration")
                check(check_config(d.conf).returncode == 1,
                      "--check-config refuses a group that does not exist")
                with open(d.conf) as f:
                    text = f.read()
                with open(d.conf, "w") as f:
                    f.write(text.replace(f"ctl_group = {group}", f"ctl_group = {gid}"))
                p = check_config(d.conf)
                check(p.returncode == 0, f"a gid as a number is taken ({p.stderr.strip()!r})")
                r = rqctl(d, "reload")
                check(r.returncode == 0, "and a reload to it is applied")
                r = subprocess.run([DAEMON, "--check-config", d.conf], capture_output=True)
                check(r.returncode == 0, "the config by the number checks")
                check(d.stop() == 0, "clean stop")
            with open(d.conf) as f:
                text = f.read()
            with open(d.conf, "w") as f:
                f.write(text.replace(f"ctl_group = {gid}", "ctl_group = rqb-no-such-group"))
            p = check_config(d.conf)
            check(p.returncode == 1 and "[daemon] ctl_group: no such group" in p.stderr,
                  f"--check-config names a group that does not resolve ({p.stderr.strip()!r})")
        finally:
            subprocess.run(["groupdel", group], capture_output=True, check=False)


main(test)
