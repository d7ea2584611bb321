"""GameMode's own clients reach rqbalanced through rqctl gamemode-agent (issue 53): the
real gamemoderun (libgamemodeauto) and libgamemode, as a real unprivileged user A (a
member of [latency] game_group, RLIMIT_NICE 0) on a session bus of A's own
(dbus-run-session), the real daemon on a private system bus.

  alone   no gamemoded: the session bus's one activation file is the shipped
          com.feralinteractive.GameMode.rqbalance.service, so gamemoderun's call starts
          the agent, which answers GameMode's interface. The game gets [latency] game
          (its child too); libgamemode's ByPIDFd calls (its default) query (2), unregister
          (given back) and register again, and register another process of A's for the
          game (ProcessId and Requester as sent); the plain RegisterGame(i) and
          UnregisterGame(i) work too; ClientCount, ListGames and the game's object say
          what is registered. B's process is refused (-2) and gets nothing. The game's
          exit gives its child back and the agent forgets it; a second agent leaves
          the session to the first; the agent's end (SIGTERM) gives a game back.
  beside  the real gamemoded owns the name: a game it registered before the agent
          started (ListGames) and one after (GameRegistered) get the value;
          gamemoded's unregister (GameUnregistered) gives it back; the agent's end does.
  takeover  gamemoded ends while the agent follows it: its game is given back, and the
          agent, queued for the name, owns it and serves the next game itself.
          (gamemoded 1.7 cannot start while the agent owns the name: it asks for it
          neither queued nor replacing; the user unit is ordered after gamemoded's.)
  restart   the daemon stops (which gives the game back) and a new one starts: the
          agent asks it for its game again.

Arguments name the cases to run; all without."""
import os
import signal
import subprocess
import sys

from rqb import (ROOT, Daemon, check, comm_of, main, managed, ppid_of, require, skip, tmpdir,
                 user_rqctl, wait_until)
from rqb_user import User

GAME = -10  # [latency] game's default
GM, GM_PATH = "com.feralinteractive.GameMode", "/com/feralinteractive/GameMode"
ACTIVATION = "com.feralinteractive.GameMode.rqbalance.service"
PATH = "/usr/games:/usr/local/bin:/usr/bin:/bin"

SESSION_CONF = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:tmpdir=/tmp</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{services}</servicedir>
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""

# The game, under gamemoderun: libgamemodeauto registered it before this runs. Each
# line on stdin is a call of libgamemode's (whose answer it prints) or "fork" (a child
# that sleeps; its pid printed).
GAME_PY = """
import ctypes, os, sys, time
gm = ctypes.CDLL("libgamemode.so.0")
print(os.getpid(), flush=True)
for line in sys.stdin:
    cmd = line.split()
    if cmd[0] == "fork":
        k = os.fork()
        if k == 0:
            time.sleep(600)
            os._exit(0)
        print(k, flush=True)
    elif cmd[0] == "start_for":
        print(gm.real_gamemode_request_start_for(int(cmd[1])), flush=True)
    else:
        print(getattr(gm, "real_gamemode_" + cmd[0])(), flush=True)
"""


def value(d, pid):
    """The value rqctl get -p gives pid, or None."""
    m = managed(d, pid)
    return m[0] if m else None


class Session:
    """A session bus of user's (dbus-run-session), whose activation files are those in
    activation (a list of file names of systemd/, made from their templates with rqctl's
    path), and the system bus given to what runs on it."""

    def __init__(self, user, tmp, name, bus, prog, activation=()):
        self.user, self.prog = user, prog
        d = os.path.join(tmp, name)
        services = os.path.join(d, "services")
        os.makedirs(services)
        for p in (d, services):
            os.chmod(p, 0o755)
        for f in activation:
            with open(os.path.join(ROOT, "systemd", f + ".in")) as src, \
                    open(os.path.join(services, f), "w") as dst:
                dst.write(src.read().replace("@BINDIR@", os.path.dirname(prog)))
        conf = os.path.join(d, "session.conf")
        with open(conf, "w") as f:
            f.write(SESSION_CONF.format(services=services))
        os.chmod(conf, 0o644)
        self.env = ["env", f"PATH={PATH}", f"DBUS_SYSTEM_BUS_ADDRESS={bus.address}"]
        p = user.popen([*self.env, "dbus-run-session", f"--config-file={conf}", "--", "sh",
                        "-c", 'echo "$DBUS_SESSION_BUS_ADDRESS"; exec sleep 600'],
                       stdout=subprocess.PIPE, text=True)
        self.address = p.stdout.readline().strip()
        check(self.address.startswith("unix:"), f"{name}: a session bus ({self.address!r})")
        self.env.append(f"DBUS_SESSION_BUS_ADDRESS={self.address}")

    def popen(self, argv, **kw):
        return self.user.popen([*self.env, *argv], **kw)

    def call(self, dest, path, method, *args):
        """dbus-send on this bus as the user: (ok, values, output)."""
        from rqb_dbus import values
        p = self.user.run([*self.env, "dbus-send", f"--bus={self.address}", "--print-reply",
                           f"--dest={dest}", path, method, *args], text=True)
        return p.returncode == 0, values(p.stdout) if p.returncode == 0 else [], \
            p.stdout + p.stderr

    def gm(self, method, *args):
        ok, got, out = self.call(GM, GM_PATH, f"{GM}.{method}", *args)
        check(ok, f"{method}{args} answers: {out!r}")
        return got

    def prop(self, path, iface, name):
        ok, got, out = self.call(GM, path, "org.freedesktop.DBus.Properties.Get",
                                 f"string:{iface}", f"string:{name}")
        return got[0] if ok and got else out

    def owner_pid(self):
        ok, got, _ = self.call("org.freedesktop.DBus", "/org/freedesktop/DBus",
                               "org.freedesktop.DBus.GetConnectionUnixProcessID",
                               f"string:{GM}")
        return got[0] if ok and got else None


class Game:
    """gamemoderun python3 GAME_PY in session s."""

    def __init__(self, s):
        self.p = s.popen(["gamemoderun", "/usr/bin/python3", "-c", GAME_PY],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline()
        check(line.strip().isdigit(), f"the game under gamemoderun starts ({line!r})")
        self.pid = int(line)

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return int(self.p.stdout.readline())

    def kill(self):
        os.kill(self.pid, signal.SIGKILL)
        self.p.wait()


def gets(d, pid, v, what):
    check(wait_until(lambda: value(d, pid) == v, 60), f"{what}: {value(d, pid)} (want {v})")


def sleeper(user, s=None):
    p = (s.popen if s else user.popen)(["sh", "-c", "echo $$; exec sleep 600"],
                                       stdout=subprocess.PIPE, text=True)
    return p, int(p.stdout.readline())


def alone(d, bus, a, b, tmp, prog):
    s = Session(a, tmp, "alone", bus, prog, [ACTIVATION])
    g = Game(s)
    gets(d, g.pid, GAME, "gamemoderun's game, through the agent D-Bus activated")
    agent = s.owner_pid()
    check(comm_of(agent) == "rqctl", f"the agent owns {GM} ({agent}, {comm_of(agent)!r})")
    kid = g.ask("fork")
    gets(d, kid, GAME, "the child the game forks")
    check(g.ask("query_status") == 2, "libgamemode's QueryStatus: on, for this game (2)")
    check(s.prop(GM_PATH, GM, "ClientCount") == 1, "ClientCount is 1")
    check(s.gm("ListGames") == [g.pid], "ListGames names the game")
    path = f"{GM_PATH}/Games/{g.pid}"
    exe = s.prop(path, f"{GM}.Game", "Executable")
    check(exe == os.path.realpath("/usr/bin/python3"), f"the game's Executable ({exe!r})")
    check(s.prop(path, f"{GM}.Game", "ProcessId") == g.pid, "and its ProcessId")

    check(g.ask("request_end") == 0, "libgamemode's UnregisterGame answers 0")
    gets(d, g.pid, None, "an unregister gives the game back")
    gets(d, kid, None, "and its child")
    check(g.ask("query_status") == 0, "QueryStatus: off (0)")
    check(s.prop(GM_PATH, GM, "ClientCount") == 0, "ClientCount is 0")
    check(g.ask("request_start") == 0, "libgamemode's RegisterGame again answers 0")
    gets(d, g.pid, GAME, "the game has its value again")

    _, other = sleeper(a)
    check(g.ask(f"start_for {other}") == 0, "RegisterGameByPID(Fd) for another process of A's")
    gets(d, other, GAME, "that process gets the value")
    path = f"{GM_PATH}/Games/{other}"
    check(s.prop(path, f"{GM}.Game", "ProcessId") == other and
          s.prop(path, f"{GM}.Game", "Requester") == g.pid,
          "its object says the game asked for it: the pidfds came in libgamemode's order")

    _, theirs = sleeper(b)
    check(g.ask(f"start_for {theirs}") == -2, "B's process is refused (-2)")
    check(s.gm("RegisterGame", f"int32:{theirs}") == [-2], "by RegisterGame(i) too")
    check(value(d, theirs) is None, "and gets nothing")

    _, plain = sleeper(a)
    check(s.gm("RegisterGame", f"int32:{plain}") == [0], "the plain RegisterGame(i)")
    gets(d, plain, GAME, "gives its process the value")
    check(s.gm("QueryStatusByPID", f"int32:{plain}", f"int32:{plain}") == [2],
          "QueryStatusByPID: 2")
    check(s.gm("UnregisterGame", f"int32:{plain}") == [0], "UnregisterGame(i) answers 0")
    gets(d, plain, None, "and gives it back")
    check(s.gm("UnregisterGame", f"int32:{plain}") == [-1], "a second one is -1")

    g.kill()
    gets(d, kid, None, "the game's exit gives its child back")
    check(wait_until(lambda: g.pid not in s.gm("ListGames"), 60),
          "and the agent forgets the game")

    second = s.popen([prog, "gamemode-agent"], stderr=subprocess.PIPE, text=True)
    out = second.stderr.read()
    check(second.wait(60) == 0 and "another rqctl gamemode-agent" in out,
          f"a second agent in the session leaves it to the first, and ends with 0: {out!r}")
    g2 = Game(s)
    gets(d, g2.pid, GAME, "a second game")
    os.kill(agent, signal.SIGTERM)
    gets(d, g2.pid, None, "the agent's end gives it back")
    gets(d, other, None, "and the process registered for the game")
    g2.kill()


def start_gamemoded(s):
    gm = s.popen(["gamemoded"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    check(wait_until(lambda: comm_of(s.owner_pid()) == "gamemoded", 60),
          f"gamemoded owns {GM} ({s.owner_pid()})")
    return gm


def descendant(top, name):
    """The pid of a process named name below top (runuser's), or None."""
    for d in os.listdir("/proc"):
        if d.isdigit() and comm_of(d) == name:
            p = int(d)
            while p and p != top:
                p = ppid_of(p)
            if p == top:
                return int(d)
    return None


def start_agent(s, prog, says):
    """The agent, run by hand in session s, once it says says; (its pid, its runuser)."""
    p = s.popen([prog, "gamemode-agent"], stderr=subprocess.PIPE, text=True)
    while True:
        line = p.stderr.readline()
        check(line, f"the agent says it is {says!r}")
        print(line.rstrip())
        if says in line:
            return descendant(p.pid, "rqctl"), p


def beside(d, bus, a, b, tmp, prog):
    s = Session(a, tmp, "beside", bus, prog)
    start_gamemoded(s)
    g1 = Game(s)
    check(s.gm("ListGames") == [g1.pid], "gamemoded registered the game")
    check(value(d, g1.pid) is None, "which has no value without the agent")
    agent, run = start_agent(s, prog, "beside the owner")
    gets(d, g1.pid, GAME, "the agent gives gamemoded's game (ListGames) the value")
    g2 = Game(s)
    gets(d, g2.pid, GAME, "and a game gamemoded registers later (GameRegistered)")
    check(g2.ask("request_end") == 0, "gamemoded unregisters it")
    gets(d, g2.pid, None, "which gives it back (GameUnregistered)")
    check(value(d, g1.pid) == GAME, "the first game keeps its value")
    os.kill(agent, signal.SIGTERM)
    gets(d, g1.pid, None, "the agent's end gives it back")
    check(run.wait(60) == 0, "the agent ends with 0 on SIGTERM")
    g1.kill()
    g2.kill()


def takeover(d, bus, a, b, tmp, prog):
    s = Session(a, tmp, "takeover", bus, prog)
    gm = start_gamemoded(s)
    agent, _ = start_agent(s, prog, "beside the owner")
    g = Game(s)
    gets(d, g.pid, GAME, "the agent follows gamemoded's game")
    for p in (descendant(gm.pid, "gamemoded"), gm.pid):
        os.kill(p, signal.SIGTERM)
    gets(d, g.pid, None, "gamemoded's end gives its game back")
    check(wait_until(lambda: s.owner_pid() == agent, 60),
          f"the agent, queued behind gamemoded, owns {GM} now")
    g2 = Game(s)
    gets(d, g2.pid, GAME, "and serves the next game itself")
    os.kill(agent, signal.SIGTERM)
    gets(d, g2.pid, None, "the agent's end gives it back")
    g.kill()
    g2.kill()


def restart(tmp, bus, a, prog, conf, env):
    s = Session(a, tmp, "restart", bus, prog, [ACTIVATION])
    with Daemon(tmp, conf=conf, env=env) as d:
        d.wait_for(r"dbus: serving org\.rqbalance1")
        g = Game(s)
        gets(d, g.pid, GAME, "the game")
        check(d.stop() == 0, "the daemon stops, which gives the game back")
    with Daemon(tmp, conf=conf, env=env) as d:
        d.wait_for(r"dbus: serving org\.rqbalance1")
        gets(d, g.pid, GAME, "a new daemon: the agent asks for its game again")
        g.kill()
        check(d.stop() == 0, "clean stop")


def test():
    require()
    for prog in ("groupadd", "usermod", "dbus-daemon", "dbus-run-session", "dbus-send",
                 "gamemoded", "/usr/games/gamemoderun"):
        if subprocess.run(["sh", "-c", f"command -v {prog}"], capture_output=True).returncode:
            skip(f"{prog} missing (gamemode and dbus, in .ci/deps test)")
    from rqb_dbus import SystemBus
    cases = {"alone": alone, "beside": beside, "takeover": takeover}
    apart = {"restart": restart}
    group = f"rqbgm{os.getpid() % 100000}"
    with tmpdir() as tmp, SystemBus() as bus, User("rqbma") as a, User("rqbmb") as b:
        prog = user_rqctl(tmp)
        subprocess.run(["groupadd", group], check=True)
        try:
            subprocess.run(["usermod", "-a", "-G", group, a.name], check=True)
            conf = f"[latency]\ngame_group = {group}\n"
            env = {"DBUS_SYSTEM_BUS_ADDRESS": bus.address}
            names = sys.argv[1:] or [*cases, *apart]
            if any(n in cases for n in names):
                with Daemon(tmp, conf=conf, env=env) as d:
                    d.wait_for(r"dbus: serving org\.rqbalance1")
                    for name in (n for n in names if n in cases):
                        print(f"--- {name}")
                        cases[name](d, bus, a, b, tmp, prog)
                    check(d.stop() == 0, "clean stop")
            for name in (n for n in names if n in apart):
                print(f"--- {name}")
                apart[name](tmp, bus, a, prog, conf, env)
        finally:
            subprocess.run(["groupdel", group], capture_output=True, check=False)


if __name__ == "__main__":
    main(test)
