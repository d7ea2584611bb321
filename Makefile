# rqbalance: a POSIX-ish Makefile. Objects go to build/ (or build-asan/ with
# SANITIZE=1); unit tests link every daemon object but main.o.
include config.mk

# A bare make builds rqbalanced, rqctl and the units ("all"), whatever rule comes first.
.DEFAULT_GOAL := all

ifeq ($(SANITIZE),1)
B = build-asan
CFLAGS += $(SAN_FLAGS) -O1
LDFLAGS += $(SAN_FLAGS)
else
B = build
endif
ifeq ($(CI),true)
CFLAGS += -Werror
endif

PKG_CFLAGS := $(shell $(PKG_CONFIG) --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell $(PKG_CONFIG) --libs $(PKGS) 2>/dev/null)

# The pipeline, in the order data walks it each tick.
DAEMON_SRC = \
	daemon/util/log.c daemon/util/util.c daemon/util/safedir.c daemon/util/safeopen.c daemon/util/timedread.c daemon/util/cpumask.c daemon/util/sorted.c daemon/conf/conf.c daemon/conf/conf_ruleset.c \
	daemon/proc/parse.c daemon/proc/procfs.c daemon/sample/latseen.c daemon/sample/topo.c daemon/sample/proc.c daemon/sample/replay.c \
	daemon/sample/sampler.c daemon/sample/bpf.c daemon/sample/bpfload.c \
	daemon/taskev/ident.c daemon/taskev/evsrc.c daemon/taskev/procconn.c daemon/taskev/bpfev.c daemon/taskev/cgm.c \
	daemon/diag/features.c daemon/diag/rqlat.c daemon/diag/peers.c \
	daemon/util/caps.c daemon/core/selfsched.c \
	daemon/snapshot/snap.c \
	daemon/policy/spread.c daemon/policy/spread_tick.c daemon/policy/place.c daemon/policy/place_kit.c daemon/policy/place_together.c daemon/policy/place_apart.c daemon/policy/place_fast.c daemon/policy/rules.c daemon/policy/rules_index.c daemon/policy/latency.c daemon/policy/latpol.c daemon/policy/latweigh.c \
	daemon/plan/plan.c \
	daemon/actuate/journal.c daemon/actuate/act.c daemon/actuate/act_reuse.c \
	daemon/actuate/act_linux.c daemon/actuate/act_dryrun.c daemon/actuate/latact.c \
	daemon/actuate/latact_journal.c daemon/actuate/latact_cls.c daemon/actuate/latact_task.c \
	daemon/actuate/latact_cg.c daemon/actuate/latact_replay.c \
	daemon/actuate/latact_offspring.c \
	daemon/actuate/latact_apply.c daemon/actuate/latact_move.c daemon/actuate/latact_reuse.c \
	daemon/actuate/latknob.c \
	daemon/actuate/cgsd.c \
	daemon/latmgr/latmgr_plan.c daemon/latmgr/latmgr_fg.c daemon/latmgr/latmgr_rules.c \
	daemon/latmgr/latmgr_events.c daemon/latmgr/latmgr_source.c daemon/latmgr/latmgr_units.c \
	daemon/latmgr/latmgr_weigh.c daemon/latmgr/latmgr_procs.c \
	daemon/latmgr/latmgr.c daemon/ctl/ctl_peer.c daemon/ctl/ctl_perm.c daemon/ctl/ctl_proto.c daemon/latmgr/latmgr_view.c \
	daemon/ctl/ctl_req.c daemon/ctl/ctl_req_lim.c daemon/ctl/ctl_bus.c \
	daemon/ctl/ctl_listen.c daemon/ctl/ctl.c daemon/core/metrics.c daemon/core/idle.c \
	daemon/core/status.c daemon/core/daemon.c
DAEMON_OBJ = $(DAEMON_SRC:%.c=$(B)/%.o)
MAIN_OBJ   = $(B)/daemon/core/main.o

UNIT_TESTS = conf latency latpol perm cpumask topo snapshot spread place plan proc journal act features ctl cgsd cgm procconn \
	rules rulesidx ident bpf rqlat bpfev latact ctlsrv latmgr peers safeopen timedread idle latseen safedir metrics latact_journal latact_cls latmgr_view \
	sorted sampler latmgr_plan latmgr_events latmgr_source latweigh ananicy
UNIT_BIN   = $(UNIT_TESTS:%=$(B)/tests/unit/test_%)
# The unit-test kit (tests/unit/kit.h), compiled once into one archive that every unit
# program links: the kit's main and temporary tree, the spread policy's fixture, and
# the ctl harness (tests/common), the in-memory daemon the ctl and bus fuzz targets
# also link.
KIT_HDR = tests/unit/kit.h tests/unit/spread_fx.h tests/common/ctl_harness.h
KIT_OBJ = $(B)/tests/unit/kit.o $(B)/tests/unit/spread_fx.o $(B)/tests/common/ctl_harness.o
KIT_LIB = $(B)/tests/libkit.a
$(KIT_OBJ) build-fuzz/tests/common/ctl_harness.o: $(KIT_HDR)
$(KIT_LIB): $(KIT_OBJ)
	rm -f $@
	$(AR) rcs $@ $^
$(B)/tests/fuzz/fuzz_ctl $(B)/tests/fuzz/fuzz_bus: FUZZ_LINK = $(B)/tests/common/ctl_harness.o
$(B)/tests/fuzz/fuzz_ctl $(B)/tests/fuzz/fuzz_bus: $(B)/tests/common/ctl_harness.o
$(B)/fuzz/fuzz_ctl $(B)/fuzz/fuzz_bus: FUZZ_LINK = build-fuzz/tests/common/ctl_harness.o
$(B)/fuzz/fuzz_ctl $(B)/fuzz/fuzz_bus: build-fuzz/tests/common/ctl_harness.o
# A test of the client's code builds its sources in, as a client fuzz target does.
UNIT_SRC_ananicy = client/ananicy.c client/jsonl.c client/term.c
$(B)/tests/unit/test_ananicy: $(UNIT_SRC_ananicy) $(wildcard client/*.h)
$(B)/tests/unit/test_ananicy: CPPFLAGS += -Iclient

SIM_SRC    = bench/sim/main.c bench/sim/machine.c bench/sim/balance.c bench/sim/plot.c
SIM_OBJ    = $(SIM_SRC:%.c=$(B)/%.o)
BENCH_BIN  = $(B)/bench/spinner $(B)/bench/wakelat $(B)/bench/hackbench $(B)/bench/execlat \
             $(B)/bench/cgattach \
             $(B)/bench/churn_load $(B)/bench/churn_child $(B)/bench/sim/sim
# The samplers alone, on the daemon's own objects (bench/overhead runs it).
BENCH_BIN += $(B)/bench/samplecost
# Rule load and match cost, 1 rule against 20000, on the daemon's own objects.
BENCH_BIN += $(B)/bench/rules
# The systemd unit bookkeeping with 50 and 5,000 managed processes, on a fake /proc.
BENCH_BIN += $(B)/bench/units
# The busy exec probe: static (no loader before main, as the report that asked for it), so
# never with the sanitizer's flags, which cannot link statically.
BENCH_BIN += $(B)/bench/spinprobe
# Processes whose threads share a buffer, or pairs passing a token (bench/placement-ab).
BENCH_BIN += $(B)/bench/shareload
# A game's frame loop: a render thread and its workers at 60 or 144 Hz (bench/frames).
BENCH_BIN += $(B)/bench/frames

# Fuzz targets, one per parser and one per door of the request layer (ctl: the
# socket's bytes; bus: the D-Bus API's method calls): each builds with libFuzzer and
# clang (make fuzz: into $(B)/fuzz/, on daemon objects of its own in build-fuzz/) and
# as a plain program that replays its stored corpus, tests/fuzz/corpus/NAME, which
# tests/run runs.
FUZZ_TARGETS = conf rules ctl bus proc journal replay jsonl
# A target whose parser is the client's, no daemon object, builds its source in.
FUZZ_SRC_jsonl = client/jsonl.c
$(B)/tests/fuzz/fuzz_jsonl $(B)/fuzz/fuzz_jsonl: client/jsonl.c client/jsonl.h
$(B)/tests/fuzz/fuzz_jsonl $(B)/fuzz/fuzz_jsonl: CPPFLAGS += -Iclient
FUZZ_CC      = clang
FUZZ_CFLAGS  = -std=gnu11 -O1 -g $(filter-out -Wno-format-truncation,$(WARN)) \
               -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all
FUZZ_OBJ     = $(DAEMON_SRC:%.c=build-fuzz/%.o)
FUZZ_BIN     = $(FUZZ_TARGETS:%=$(B)/fuzz/fuzz_%)
FUZZ_REPLAY  = $(FUZZ_TARGETS:%=$(B)/tests/fuzz/fuzz_%)

all: $(B)/rqbalanced $(B)/rqctl

$(B)/rqbalanced: $(DAEMON_OBJ) $(MAIN_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

# rqctl needs only the protocol, not the daemon, and the safe open, which import-ananicy
# reads a user's tree through; import-ananicy is its own.
# gamemode-agent speaks D-Bus through sd-bus, as the daemon does.
CLIENT_OBJ = $(B)/client/rqctl.o $(B)/client/ananicy.o $(B)/client/jsonl.o $(B)/client/term.o \
	$(B)/client/gamemode.o
$(B)/rqctl: $(CLIENT_OBJ) $(B)/daemon/ctl/ctl_proto.o $(B)/daemon/util/safeopen.o
	$(CC) $(LDFLAGS) -o $@ $^ $(shell $(PKG_CONFIG) --libs libsystemd 2>/dev/null)

$(CLIENT_OBJ): $(wildcard client/*.h)

$(B)/%.o: %.c $(wildcard include/*.h daemon/*/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) -c -o $@ $<

# BPF: CO-RE objects from the bpf/ folder beside the code that loads each (sample/,
# taskev/, diag/), compiled by clang for the BPF target (never with the sanitizer's
# flags), stripped of DWARF (BTF stays), and turned into skeleton headers that embed
# them. vmlinux.h comes from the BTF of the kernel that builds, or, on a build machine
# without BTF, from the hand-written daemon/sample/bpf/vmlinux_min.h: only the types and
# fields the programs use, marked preserve_access_index, so CO-RE relocates them
# against the running kernel's BTF at load either way.
BPF_DIRS = daemon/sample/bpf daemon/taskev/bpf daemon/diag/bpf
BPF_SRC  = $(wildcard $(BPF_DIRS:%=%/*.bpf.c))
BPF_NAME = $(notdir $(BPF_SRC:%.bpf.c=%))
BPF_SKEL = $(BPF_NAME:%=$(B)/bpf/%.skel.h)
vpath %.bpf.c $(BPF_DIRS)
vpath %.bpf.h $(BPF_DIRS)

$(B)/bpf/vmlinux.h: daemon/sample/bpf/vmlinux_min.h
	@mkdir -p $(@D)
	@if [ -r $(BTF_VMLINUX) ]; then \
		$(BPFTOOL) btf dump file $(BTF_VMLINUX) format c >$@.tmp; \
	else \
		echo "bpf: no $(BTF_VMLINUX): using daemon/sample/bpf/vmlinux_min.h"; \
		cp daemon/sample/bpf/vmlinux_min.h $@.tmp; \
	fi && mv $@.tmp $@

$(B)/bpf/%.bpf.o: %.bpf.c %.bpf.h $(B)/bpf/vmlinux.h
	$(CLANG) $(BPF_CFLAGS) -I$(B)/bpf -I$(<D) -c -o $@.dbg $<
	$(LLVM_STRIP) -g -o $@ $@.dbg
	@rm -f $@.dbg

$(B)/bpf/%.skel.h: $(B)/bpf/%.bpf.o
	$(BPFTOOL) gen skeleton $< name $(notdir $(basename $(basename $<))) >$@.tmp && mv $@.tmp $@

# The fallback header must keep compiling: make check builds the objects on it too.
$(B)/bpf/min/vmlinux.h: daemon/sample/bpf/vmlinux_min.h
	@mkdir -p $(@D)
	cp $< $@

$(B)/bpf/min/%.bpf.o: %.bpf.c %.bpf.h $(B)/bpf/min/vmlinux.h
	$(CLANG) $(BPF_CFLAGS) -I$(B)/bpf/min -I$(<D) -c -o $@ $<

bpf-fallback: $(BPF_NAME:%=$(B)/bpf/min/%.bpf.o)

$(B)/daemon/sample/bpf.o build-fuzz/daemon/sample/bpf.o: CPPFLAGS += -I$(B)/bpf -Idaemon/sample/bpf
$(B)/daemon/sample/bpf.o build-fuzz/daemon/sample/bpf.o: $(BPF_SKEL) daemon/sample/bpf/rqsample.bpf.h
$(B)/daemon/diag/rqlat.o build-fuzz/daemon/diag/rqlat.o: CPPFLAGS += -I$(B)/bpf
$(B)/daemon/diag/rqlat.o build-fuzz/daemon/diag/rqlat.o: $(B)/bpf/rqlat.skel.h daemon/diag/bpf/rqlat.bpf.h
$(B)/daemon/taskev/bpfev.o build-fuzz/daemon/taskev/bpfev.o: CPPFLAGS += -I$(B)/bpf
$(B)/daemon/taskev/bpfev.o build-fuzz/daemon/taskev/bpfev.o: $(B)/bpf/rqevents.skel.h \
	daemon/taskev/bpf/rqevents.bpf.h

$(B)/tests/unit/test_%: tests/unit/test_%.c $(KIT_HDR) $(KIT_LIB) $(DAEMON_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) -Itests/unit $(CFLAGS) $(LDFLAGS) -o $@ $< \
		$(UNIT_SRC_$*) $(KIT_LIB) $(DAEMON_OBJ) $(PKG_LIBS) -lcmocka

$(B)/tests/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/replay_main.c tests/fuzz/fuzz.h $(DAEMON_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) -Itests/fuzz $(CFLAGS) $(LDFLAGS) -o $@ $< \
		tests/fuzz/replay_main.c $(FUZZ_SRC_$*) $(FUZZ_LINK) $(DAEMON_OBJ) $(PKG_LIBS)

build-fuzz/%.o: %.c $(wildcard include/*.h daemon/*/*.h)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(PKG_CFLAGS) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c -o $@ $<

# Named only through the pattern rule below, they would be deleted as intermediates.
.SECONDARY: $(FUZZ_OBJ)

$(B)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c tests/fuzz/fuzz.h $(FUZZ_OBJ)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(CPPFLAGS) $(PKG_CFLAGS) -Itests/fuzz $(FUZZ_CFLAGS) -fsanitize=fuzzer -o $@ $< \
		$(FUZZ_SRC_$*) $(FUZZ_LINK) $(FUZZ_OBJ) $(PKG_LIBS)

# bench/units drives the latency manager through the unit tests' fake daemon.
BENCH_LINK_units = $(B)/tests/common/ctl_harness.o
$(B)/bench/units: $(B)/tests/common/ctl_harness.o
$(B)/bench/samplecost $(B)/bench/rules $(B)/bench/units: $(B)/bench/%: bench/%.c $(DAEMON_OBJ)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< $(BENCH_LINK_$*) $(DAEMON_OBJ) $(PKG_LIBS)

# The simulator links the daemon's real policy: every daemon object but main.o.
$(B)/bench/sim/sim: $(SIM_OBJ) $(DAEMON_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(PKG_LIBS)

$(B)/bench/sim/%.o: bench/sim/%.c bench/sim/sim.h bench/sim/plot.h $(wildcard include/*.h daemon/*/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(PKG_CFLAGS) -Ibench/sim $(CFLAGS) -c -o $@ $<

$(B)/bench/spinprobe: bench/spinprobe.c
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(filter-out $(SAN_FLAGS),$(CFLAGS)) -static -o $@ $<

$(B)/bench/%: bench/%.c $(wildcard bench/*.h)
	@mkdir -p $(@D)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -o $@ $< -lpthread

deps:
	@.ci/deps build

deps-test:
	@.ci/deps test

# The README's run command: build, then run in the foreground on the shipped config.
run: deps
	@$(MAKE) --no-print-directory all
	./$(B)/rqbalanced --foreground --config conf/rqbalance.conf

unit: $(UNIT_BIN) $(FUZZ_REPLAY)

# The libFuzzer programs, and the corpus replayers of this build. Run one with e.g.
#   $(B)/fuzz/fuzz_conf -max_total_time=600 NEW_DIR tests/fuzz/corpus/conf
fuzz: $(FUZZ_BIN) $(FUZZ_REPLAY)

# The bench programs of this build ($(B) is the sub-make's own).
benches: $(BENCH_BIN)

# The README's test command: unit and integration tests on the normal build,
# then the same again on an ASan+UBSan build, then the qemu tiers: Debian's kernels
# on a two-LLC busybox guest (Debian 12's 6.1, Debian 13's 6.12, 7.3, 7.2 and the
# PREEMPT_RT 6.1 and 6.12: tests/run), and Debian 12 and 13 guests with systemd as
# PID 1 running the project's .deb (make check-systemd).
check: check-build
	@tests/run --vm build build-asan

# Everything make check runs, built (tests/flakes runs the suite on it many times).
check-build: deps-test
	@$(MAKE) --no-print-directory all unit benches bpf-fallback
	@$(MAKE) --no-print-directory SANITIZE=1 all unit benches

# The qemu tier alone.
check-vm: deps-test
	@$(MAKE) --no-print-directory all
	@tests/vm/run

# The systemd tier alone: it builds its .debs from the working tree itself.
check-systemd:
	@tests/systemd/run --build $(B)

bench: deps-test
	@$(MAKE) --no-print-directory all benches
	bench/overhead

# Wakeup latency beside CPU hogs: no daemon, the workload at -20, the hogs at +19, light and
# heavy workloads; and the exec-to-applied delay.
bench-latency: deps-test
	@$(MAKE) --no-print-directory all benches
	bench/latency

# min_llc_cores both ways on one-CPU LLCs (the fake topology tests/data/topo-2llc.xml):
# wakeup latency and hackbench, without the daemon, at min_llc_cores = 1 and at the default.
bench-small-llc: deps-test
	@$(MAKE) --no-print-directory all benches
	bench/small-llc

# The churn at full size: 10,000 threads, 1,000 execs a second for 60 s, a fork storm.
bench-churn: deps-test
	@$(MAKE) --no-print-directory all
	bench/churn

# The loop under a ctl flood and a fork storm: the watchdog's longest gap, ticks kept.
bench-flood: deps-test
	@$(MAKE) --no-print-directory all
	bench/flood

# A game's frame times (60 and 144 Hz) beside a build at twice the CPUs: no daemon, the
# game at [latency] game's -10, the build at +15 by a rule, both.
bench-frames: deps-test
	@$(MAKE) --no-print-directory all benches
	bench/frames

# The simulator's table and plots, kept in the tree for bench/sim/README.md.
bench-sim: deps
	@$(MAKE) --no-print-directory $(B)/bench/sim/sim
	./$(B)/bench/sim/sim --out bench/sim/out

# The systemd units, from their templates with this build's paths: made every time,
# since a different PREFIX on the command line must not leave old paths behind.
UNITS = $(B)/systemd/rqbalance.service $(B)/systemd/rqbalance.socket
# The session agent's user unit and its D-Bus activation file.
USER_UNIT = $(B)/systemd/rqbalance-gamemode.service
DBUS_SERVICE = $(B)/systemd/com.feralinteractive.GameMode.rqbalance.service

all: units

units: $(UNITS) $(USER_UNIT) $(DBUS_SERVICE)

$(B)/systemd/%: systemd/%.in FORCE
	@mkdir -p $(@D)
	@sed -e 's|@SBINDIR@|$(SBINDIR)|g' -e 's|@BINDIR@|$(BINDIR)|g' \
		-e 's|@RUNDIR@|$(RUNDIR)|g' -e 's|@RUNTIMEDIR@|$(RUNDIR:/run/%=%)|g' $< >$@.tmp
	@mv $@.tmp $@

FORCE:

# PREFIX, DESTDIR and the directories of config.mk. An existing configuration file is
# never replaced; uninstall removes it only if it is still the shipped one.
INSTALL = install
CONFFILE = $(DESTDIR)$(SYSCONFDIR)/rqbalance/rqbalance.conf
EXAMPLES = systemd/rqbalance-nobpf.conf systemd/rqbalance-cgroupfs.conf \
	contrib/kubernetes/rqbalance-daemonset.yaml

install: all
	$(INSTALL) -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(DOCDIR)/examples \
		$(DESTDIR)$(DBUSPOLICYDIR) $(DESTDIR)$(SYSCONFDIR)/rqbalance/rules.d \
		$(DESTDIR)$(USERUNITDIR) $(DESTDIR)$(DBUSSERVICEDIR)
	$(INSTALL) -m 0755 $(B)/rqbalanced $(DESTDIR)$(SBINDIR)/rqbalanced
	$(INSTALL) -m 0755 $(B)/rqctl $(DESTDIR)$(BINDIR)/rqctl
	$(INSTALL) -m 0644 $(UNITS) $(DESTDIR)$(UNITDIR)/
	$(INSTALL) -m 0644 $(USER_UNIT) $(DESTDIR)$(USERUNITDIR)/
	$(INSTALL) -m 0644 $(DBUS_SERVICE) $(DESTDIR)$(DBUSSERVICEDIR)/
	$(INSTALL) -m 0644 systemd/org.rqbalance1.conf $(DESTDIR)$(DBUSPOLICYDIR)/org.rqbalance1.conf
	$(INSTALL) -m 0644 man/rqctl.1 $(DESTDIR)$(MANDIR)/man1/rqctl.1
	$(INSTALL) -m 0644 man/rqbalance.conf.5 $(DESTDIR)$(MANDIR)/man5/rqbalance.conf.5
	$(INSTALL) -m 0644 man/rqbalanced.8 $(DESTDIR)$(MANDIR)/man8/rqbalanced.8
	$(INSTALL) -m 0644 client/rqctl.bash $(DESTDIR)$(BASHCOMPDIR)/rqctl
	$(INSTALL) -m 0644 $(EXAMPLES) $(DESTDIR)$(DOCDIR)/examples/
	@if [ -e $(CONFFILE) ]; then \
		echo "install: keeping the existing $(CONFFILE)"; \
	else \
		echo "$(INSTALL) -m 0644 conf/rqbalance.conf $(CONFFILE)"; \
		$(INSTALL) -m 0644 conf/rqbalance.conf $(CONFFILE); \
	fi

uninstall:
	rm -f $(DESTDIR)$(SBINDIR)/rqbalanced $(DESTDIR)$(BINDIR)/rqctl \
		$(DESTDIR)$(UNITDIR)/rqbalance.service $(DESTDIR)$(UNITDIR)/rqbalance.socket \
		$(DESTDIR)$(MANDIR)/man1/rqctl.1 $(DESTDIR)$(MANDIR)/man5/rqbalance.conf.5 \
		$(DESTDIR)$(MANDIR)/man8/rqbalanced.8 $(DESTDIR)$(BASHCOMPDIR)/rqctl \
		$(DESTDIR)$(DBUSPOLICYDIR)/org.rqbalance1.conf \
		$(DESTDIR)$(USERUNITDIR)/$(notdir $(USER_UNIT)) \
		$(DESTDIR)$(DBUSSERVICEDIR)/$(notdir $(DBUS_SERVICE)) \
		$(addprefix $(DESTDIR)$(DOCDIR)/examples/,$(notdir $(EXAMPLES)))
	@rmdir $(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null || true
	@if [ -e $(CONFFILE) ] && ! cmp -s conf/rqbalance.conf $(CONFFILE); then \
		echo "uninstall: keeping $(CONFFILE), which was changed"; \
	else \
		rm -f $(CONFFILE); \
	fi
	@rmdir $(DESTDIR)$(SYSCONFDIR)/rqbalance/rules.d $(DESTDIR)$(SYSCONFDIR)/rqbalance \
		2>/dev/null || true

.PHONY: units install uninstall FORCE

clean:
	rm -rf build build-asan build-fuzz

.PHONY: all bpf-fallback deps deps-test run unit fuzz benches check check-build check-vm check-systemd bench bench-latency bench-small-llc bench-churn bench-flood bench-frames bench-sim clean
