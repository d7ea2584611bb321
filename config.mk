# rqbalance build configuration: edit here, or override on the make command line.
VERSION = 0.1.0

PREFIX     = /usr/local
SBINDIR    = $(PREFIX)/sbin
BINDIR     = $(PREFIX)/bin
MANDIR     = $(PREFIX)/share/man
SYSCONFDIR = /etc
# Under /run: the systemd unit's RuntimeDirectory= is this path without /run/.
RUNDIR     = /run/rqbalance
# systemd units; a distribution package passes what
# pkg-config --variable=systemdsystemunitdir systemd says.
UNITDIR    = $(PREFIX)/lib/systemd/system
# The GameMode agent (rqctl gamemode-agent): its systemd user unit, and its D-Bus
# activation file for the session bus (which reads $XDG_DATA_DIRS/dbus-1/services,
# /usr/local/share included).
USERUNITDIR = $(PREFIX)/lib/systemd/user
DBUSSERVICEDIR = $(PREFIX)/share/dbus-1/services
BASHCOMPDIR = $(PREFIX)/share/bash-completion/completions
DOCDIR     = $(PREFIX)/share/doc/rqbalance
# The bus policy of the D-Bus interface. dbus-daemon reads /usr/share/dbus-1/system.d
# and /etc/dbus-1/system.d, not /usr/local: an install under /usr/local that wants the
# interface passes DBUSPOLICYDIR=/etc/dbus-1/system.d.
DBUSPOLICYDIR = $(PREFIX)/share/dbus-1/system.d

CC      = cc
PKG_CONFIG = pkg-config
PKGS    = libsystemd hwloc inih libnl-3.0 libnl-genl-3.0 libcgroup libbpf zlib

# Paths are built with snprintf into PATH_MAX buffers; a cut path fails to open.
WARN    = -Wall -Wextra -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
          -Wformat=2 -Wundef -Wpointer-arith -Wvla -Wno-unused-parameter \
          -Wno-format-truncation
CPPFLAGS = -D_GNU_SOURCE -Iinclude -Idaemon -DRQB_VERSION=\"$(VERSION)\" \
           -DRQB_SYSCONFDIR=\"$(SYSCONFDIR)\" -DRQB_RUNDIR=\"$(RUNDIR)\"
CFLAGS  = -std=gnu11 -O2 -g $(WARN)
LDFLAGS =

# The BPF programs: clang for the BPF target, bpftool for vmlinux.h and skeletons.
CLANG       = clang
LLVM_STRIP  = llvm-strip
BPFTOOL     = bpftool
BTF_VMLINUX = /sys/kernel/btf/vmlinux
BPF_CFLAGS  = -g -O2 -target bpf -D__TARGET_ARCH_x86 -Wall \
              -I/usr/include/$(shell $(CC) -dumpmachine 2>/dev/null)

# make SANITIZE=1 builds with AddressSanitizer and UBSan into build-asan/
SAN_FLAGS = -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all
