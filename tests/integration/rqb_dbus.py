"""A private message bus standing in for the system bus, for the tests of the daemon's
D-Bus interface: dbus-daemon with a system bus's rules (type system, EXTERNAL auth
only, nobody may own a name or call a method unless a policy file says so, as in
Debian's /usr/share/dbus-1/system.conf), and the tree's own
systemd/org.rqbalance1.conf included, so the calls the tests make pass or are refused
by the policy that is shipped. Root is given nothing beyond what Debian gives it: the
daemon owns its names only because the shipped policy lets root do so."""
import os
import re
import shutil
import signal
import struct
import subprocess
import tempfile

from rqb import ROOT, skip
from rqb_buscall import Bus, _str

POLICY = os.path.join(ROOT, "systemd", "org.rqbalance1.conf")

CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>system</type>
  <listen>unix:path={socket}</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow user="*"/>
    <deny own="*"/>
    <deny send_type="method_call"/>
    <allow send_type="signal"/>
    <allow send_requested_reply="true" send_type="method_return"/>
    <allow send_requested_reply="true" send_type="error"/>
    <allow receive_type="method_call"/>
    <allow receive_type="method_return"/>
    <allow receive_type="error"/>
    <allow receive_type="signal"/>
    <allow send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Introspectable"/>
    <allow send_destination="org.freedesktop.DBus"
           send_interface="org.freedesktop.DBus.Properties"/>
    <deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus"
          send_member="UpdateActivationEnvironment"/>
  </policy>
  <include>{policy}</include>
</busconfig>
"""


class SystemBus:
    """dbus-daemon on a socket in a directory of its own that every user may reach;
    .address is what DBUS_SYSTEM_BUS_ADDRESS takes. On exit the bus is killed and its
    directory removed. Skips where dbus-daemon or dbus-send is missing."""

    def __init__(self):
        for prog in ("dbus-daemon", "dbus-send"):
            if not shutil.which(prog):
                skip(f"{prog} missing (dbus-daemon and dbus-bin, in .ci/deps test)")
        self.dir = tempfile.mkdtemp(prefix="rqb-bus-")
        os.chmod(self.dir, 0o755)
        self.socket = os.path.join(self.dir, "system_bus_socket")
        self.config = os.path.join(self.dir, "system.conf")
        with open(self.config, "w") as f:
            f.write(CONFIG.format(socket=self.socket, policy=POLICY))
        # --print-address writes the address once the bus listens, and nothing else.
        self.log = open(os.path.join(self.dir, "bus.log"), "w")
        self.proc = subprocess.Popen(["dbus-daemon", f"--config-file={self.config}", "--nofork",
                                      "--print-address"], stdout=subprocess.PIPE,
                                     stderr=self.log, text=True)
        self.address = self.proc.stdout.readline().strip()
        if not self.address:
            self.log.flush()
            why = open(self.log.name).read()
            self.close()
            raise AssertionError(f"dbus-daemon did not start on {self.config}: {why}")

    def close(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        self.proc.wait()
        self.proc.stdout.close()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Reply:
    """What dbus-send said: .ok, .error (the error's name), .message, .values, and .out,
    its whole output."""

    def __init__(self, p):
        self.ok, self.out = p.returncode == 0, p.stdout
        self.error, self.message = None, ""
        m = re.match(r"Error (\S+): (.*)", p.stderr.strip(), re.S)
        if m:
            self.error, self.message = m.group(1), m.group(2)
        self.values = values(p.stdout) if self.ok else []

    def __repr__(self):
        return f"<ok {self.values}>" if self.ok else f"<{self.error}: {self.message!r}>"


def values(out):
    """The numbers and one-line strings of dbus-send --print-reply's output, as Python
    values."""
    got = []
    for m in re.finditer(r'^\s+(?:variant\s+)?(u?int\d+|string) (-?\d+|".*")$', out, re.M):
        got.append(m.group(2)[1:-1] if m.group(1) == "string" else int(m.group(2)))
    return got


def call(address, dest, path, method, *args, user=None):
    """dbus-send DEST PATH METHOD ARGS ('uint32:5', 'int32:-5', 'string:/x'), as root or as
    user (an rqb_user.User); a Reply."""
    pre = ["runuser", "-u", user.name, "--"] if user else []
    p = subprocess.run([*pre, "dbus-send", f"--bus={address}", "--print-reply",
                        f"--dest={dest}", path, method, *args],
                       capture_output=True, text=True, timeout=60)
    return Reply(p)


class NameOwner:
    """A connection of root's that owns a well-known name until close(): rqb_buscall's
    plain client (EXTERNAL auth, Hello) that asks RequestName, so that no client library
    is needed. The name is granted by the policy under test, not by this class."""

    DO_NOT_QUEUE, REPLACE_EXISTING = 4, 2

    def __init__(self, address, name, flags=DO_NOT_QUEUE):
        self.bus = Bus(address)
        # RequestName(s name, u flags): 1 is "now the primary owner".
        body = _str(name, 0)
        body += b"\0" * (-len(body) % 4) + struct.pack("<I", flags)
        typ, error, reply = self.bus.call("org.freedesktop.DBus", "/org/freedesktop/DBus",
                                          "org.freedesktop.DBus", "RequestName", "su", body)
        if typ != 2:
            raise AssertionError(f"org.freedesktop.DBus.RequestName failed: {error}")
        self.granted = struct.unpack("<I", reply[:4])[0] == 1

    def close(self):
        self.bus.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
