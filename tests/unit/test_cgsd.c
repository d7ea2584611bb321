/*
 * Units' CPU weight through systemd: the cgroup → unit mapping, then cgsd_* against a
 * fake systemd Manager (sd-bus, in a child) on a private dbus-daemon, and what
 * systemd 252's own systemctl sends for CPUWeight=idle and CPUWeight= to that fake.
 * The bus tests skip, saying why, where dbus-daemon (or systemctl) is not installed.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "actuate/act.h"
#include "actuate/cgsd.h"
#include "actuate/latact.h"
#include "rqbalance.h"
#include "kit.h"

#define SD_DEST "org.freedesktop.systemd1"
#define SD_PATH "/org/freedesktop/systemd1"
#define FAKE_IFACE "org.rqbalance.test.Fake"

/* ---- the fake systemd, run in a child process ---- */

struct fake_unit {
	const char *name;
	const char *iface;
	uint64_t weight;       /* CPUWeight, systemd's encoding */
};

static struct fake_unit fake_units[] = {
	{ "foo.service", SD_DEST ".Service", CGSD_WEIGHT_UNSET },
	{ "user-1000.slice", SD_DEST ".Slice", 100 },
	{ "session-2.scope", SD_DEST ".Scope", CGSD_WEIGHT_UNSET },
	{ "locked.service", SD_DEST ".Service", CGSD_WEIGHT_UNSET },
};

/* What SetUnitProperties got last: the parent reads it as properties of FAKE_IFACE. */
struct fake_record {
	uint32_t calls;
	int runtime;           /* D-Bus b */
	uint64_t weight;
	const char *unit;
};

static struct fake_record fake_rec = { .unit = "" };

static struct fake_unit *fake_find(const char *name, sd_bus_error *e)
{
	for (size_t i = 0; i < ARRAY_SIZE(fake_units); i++)
		if (strcmp(fake_units[i].name, name) == 0)
			return &fake_units[i];
	sd_bus_error_setf(e, SD_DEST ".NoSuchUnit", "Unit %s not loaded.", name);
	return NULL;
}

static int fake_get_unit(sd_bus_message *m, void *userdata, sd_bus_error *e)
{
	struct fake_unit *u;
	const char *name;
	char *path = NULL;
	int r;

	r = sd_bus_message_read(m, "s", &name);
	if (r < 0)
		return r;
	u = fake_find(name, e);
	if (!u)
		return -ENOENT;
	r = sd_bus_path_encode(SD_PATH "/unit", u->name, &path);
	if (r < 0)
		return r;
	r = sd_bus_reply_method_return(m, "o", path);
	free(path);
	return r;
}

/* Reads one (sv) of SetUnitProperties; only CPUWeight, checked as systemd 252 does. */
static int fake_read_prop(sd_bus_message *m, struct fake_unit *u, sd_bus_error *e)
{
	const char *prop;
	uint64_t v;
	int r;

	r = sd_bus_message_read(m, "s", &prop);
	if (r < 0)
		return r;
	if (strcmp(prop, "CPUWeight") != 0)
		return sd_bus_error_setf(e, SD_BUS_ERROR_PROPERTY_READ_ONLY,
					 "Cannot set property %s, or unknown property.", prop);
	r = sd_bus_message_read(m, "v", "t", &v);
	if (r < 0)
		return sd_bus_error_set(e, SD_BUS_ERROR_INVALID_ARGS, "CPUWeight is not a t");
	if (v != CGSD_WEIGHT_UNSET && v != CGSD_WEIGHT_IDLE && v > CGSD_WEIGHT_MAX)
		return sd_bus_error_set(e, SD_BUS_ERROR_INVALID_ARGS,
					"Value specified in CPUWeight is out of range");
	u->weight = v;
	fake_rec.weight = v;
	return 0;
}

static int fake_set_props(sd_bus_message *m, void *userdata, sd_bus_error *e)
{
	struct fake_unit *u;
	const char *name;
	int runtime, r;

	r = sd_bus_message_read(m, "sb", &name, &runtime);
	if (r < 0)
		return r;
	u = fake_find(name, e);
	if (!u)
		return -ENOENT;
	if (strcmp(name, "locked.service") == 0)
		return sd_bus_error_set(e, SD_BUS_ERROR_ACCESS_DENIED, "Access denied");
	fake_rec.calls++;
	fake_rec.runtime = runtime;
	fake_rec.unit = u->name;
	r = sd_bus_message_enter_container(m, 'a', "(sv)");
	while (r >= 0 && (r = sd_bus_message_enter_container(m, 'r', "sv")) > 0) {
		r = fake_read_prop(m, u, e);
		if (r >= 0)
			r = sd_bus_message_exit_container(m);
	}
	if (r < 0)
		return r;
	return sd_bus_reply_method_return(m, NULL);
}

static const sd_bus_vtable fake_manager_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_METHOD("GetUnit", "s", "o", fake_get_unit, 0),
	SD_BUS_METHOD("LoadUnit", "s", "o", fake_get_unit, 0),
	SD_BUS_METHOD("SetUnitProperties", "sba(sv)", "", fake_set_props, 0),
	SD_BUS_VTABLE_END
};

static const sd_bus_vtable fake_unit_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("CPUWeight", "t", NULL, offsetof(struct fake_unit, weight), 0),
	SD_BUS_VTABLE_END
};

static const sd_bus_vtable fake_record_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("Calls", "u", NULL, offsetof(struct fake_record, calls), 0),
	SD_BUS_PROPERTY("Runtime", "b", NULL, offsetof(struct fake_record, runtime), 0),
	SD_BUS_PROPERTY("Weight", "t", NULL, offsetof(struct fake_record, weight), 0),
	SD_BUS_PROPERTY("Unit", "s", NULL, offsetof(struct fake_record, unit), 0),
	SD_BUS_VTABLE_END
};

static int fake_export(sd_bus *bus)
{
	int r;

	r = sd_bus_add_object_vtable(bus, NULL, SD_PATH, SD_DEST ".Manager",
				     fake_manager_vtable, NULL);
	if (r >= 0)
		r = sd_bus_add_object_vtable(bus, NULL, SD_PATH, FAKE_IFACE, fake_record_vtable,
					     &fake_rec);
	for (size_t i = 0; r >= 0 && i < ARRAY_SIZE(fake_units); i++) {
		char *path = NULL;

		r = sd_bus_path_encode(SD_PATH "/unit", fake_units[i].name, &path);
		if (r >= 0)
			r = sd_bus_add_object_vtable(bus, NULL, path, fake_units[i].iface,
						     fake_unit_vtable, &fake_units[i]);
		free(path);
	}
	return r;
}

/* Serves on address until the bus goes away; writes a byte to ready_fd once it owns the name. */
static int fake_systemd(const char *address, int ready_fd)
{
	sd_bus *bus = NULL;
	int r;

	r = sd_bus_new(&bus);
	if (r >= 0)
		r = sd_bus_set_address(bus, address);
	if (r >= 0)
		r = sd_bus_set_bus_client(bus, 1);
	if (r >= 0)
		r = sd_bus_start(bus);
	if (r >= 0)
		r = fake_export(bus);
	if (r >= 0)
		r = sd_bus_request_name(bus, SD_DEST, 0);
	if (r >= 0 && write(ready_fd, "1", 1) != 1)
		r = -errno;
	close(ready_fd);
	while (r >= 0) {
		r = sd_bus_process(bus, NULL);
		if (r == 0)
			r = sd_bus_wait(bus, UINT64_MAX);
	}
	fprintf(stderr, "fake systemd: %s\n", strerror(-r));
	sd_bus_flush_close_unref(bus);
	return r == -ECONNRESET || r == -ENOTCONN ? 0 : 1;
}

/* ---- the private bus ---- */

struct fixture {
	char dir[64];             /* mkdtemp: the bus socket and its config */
	char address[PATH_MAX];
	pid_t dbus;
	pid_t fake;
	sd_bus *bus;              /* cgsd_open's connection */
	const char *skip;         /* why the bus tests skip, or NULL */
};

static bool in_path(const char *prog)
{
	const char *p = getenv("PATH");
	char buf[PATH_MAX];

	for (p = p ? p : "/usr/bin:/bin"; *p; p += *p == ':') {
		size_t len = strcspn(p, ":");

		snprintf(buf, sizeof(buf), "%.*s/%s", (int)len, p, prog);
		if (len > 0 && access(buf, X_OK) == 0)
			return true;
		p += len;
	}
	return false;
}

/*
 * Reads up to len - 1 bytes from fd, stopping after a newline; gives up after 60 s
 * without a byte (a hung dbus-daemon or fake, not a slow one: a loaded sanitizer run).
 */
static ssize_t read_line(int fd, char *buf, size_t len)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	size_t n = 0;

	while (n + 1 < len && (n == 0 || buf[n - 1] != '\n')) {
		ssize_t k;

		if (poll(&p, 1, 60000) <= 0)
			return -1;
		k = read(fd, buf + n, len - 1 - n);
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	buf[n] = '\0';
	return (ssize_t)n;
}

static void write_conf(const struct fixture *f)
{
	char path[PATH_MAX];
	FILE *c;

	snprintf(path, sizeof(path), "%s/bus.conf", f->dir);
	c = fopen(path, "w");
	assert_non_null(c);
	fprintf(c, "<!DOCTYPE busconfig PUBLIC\n"
		   " \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
		   " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
		   "<busconfig>\n"
		   "  <type>session</type>\n"
		   "  <listen>unix:path=%s/bus</listen>\n"
		   "  <auth>EXTERNAL</auth>\n"
		   "  <policy context=\"default\">\n"
		   "    <allow send_destination=\"*\"/>\n"
		   "    <allow receive_sender=\"*\"/>\n"
		   "    <allow own=\"*\"/>\n"
		   "  </policy>\n"
		   "</busconfig>\n",
		f->dir);
	assert_int_equal(fclose(c), 0);
}

/* Its stderr goes to dbus.log: as root it warns that it cannot raise its fd limit. */
static void start_dbus(struct fixture *f)
{
	char conf[PATH_MAX], log[PATH_MAX];
	int out[2];

	snprintf(conf, sizeof(conf), "--config-file=%s/bus.conf", f->dir);
	snprintf(log, sizeof(log), "%s/dbus.log", f->dir);
	assert_int_equal(pipe2(out, O_CLOEXEC), 0);
	f->dbus = fork();
	assert_true(f->dbus >= 0);
	if (f->dbus == 0) {
		int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		dup2(out[1], STDOUT_FILENO);
		if (fd >= 0)
			dup2(fd, STDERR_FILENO);
		execlp("dbus-daemon", "dbus-daemon", conf, "--nofork", "--nosyslog",
		       "--print-address", (char *)NULL);
		_exit(127);
	}
	close(out[1]);
	if (read_line(out[0], f->address, sizeof(f->address)) <= 0)
		fail_msg("dbus-daemon printed no address; see %s", log);
	close(out[0]);
	f->address[strcspn(f->address, "\n")] = '\0';
	assert_true(strncmp(f->address, "unix:", 5) == 0);
}

static void start_fake(struct fixture *f)
{
	int ready[2];
	char c[2];

	assert_int_equal(pipe2(ready, O_CLOEXEC), 0);
	f->fake = fork();
	assert_true(f->fake >= 0);
	if (f->fake == 0) {
		close(ready[0]);
		_exit(fake_systemd(f->address, ready[1]));
	}
	close(ready[1]);
	assert_int_equal(read_line(ready[0], c, sizeof(c)), 1);
	close(ready[0]);
}

static void stop(pid_t *pid)
{
	if (*pid <= 0)
		return;
	kill(*pid, SIGTERM);
	waitpid(*pid, NULL, 0);
	*pid = 0;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	assert_non_null(f);
	*state = f;
	if (!in_path("dbus-daemon")) {
		f->skip = "dbus-daemon is not installed (Debian: dbus-daemon)";
		return 0;
	}
	snprintf(f->dir, sizeof(f->dir), "/tmp/rqb-test-cgsd.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	write_conf(f);
	start_dbus(f);
	start_fake(f);
	assert_int_equal(cgsd_open(f->address, &f->bus), 0);
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char path[PATH_MAX];

	cgsd_close(f->bus);
	stop(&f->fake);
	stop(&f->dbus);
	if (f->dir[0]) {
		snprintf(path, sizeof(path), "%s/bus.conf", f->dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/bus", f->dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/dbus.log", f->dir);
		unlink(path);
		rmdir(f->dir);
	}
	free(f);
	return 0;
}

static struct fixture *bus_fixture(void **state)
{
	struct fixture *f = *state;

	if (f->skip) {
		print_message("skipped: %s\n", f->skip);
		skip();
	}
	return f;
}

static struct fake_record read_record(sd_bus *bus)
{
	sd_bus_error e = SD_BUS_ERROR_NULL;
	struct fake_record rec = { 0 };
	static char unit[CGSD_UNIT_MAX];
	char *s = NULL;

	assert_true(sd_bus_get_property_trivial(bus, SD_DEST, SD_PATH, FAKE_IFACE, "Calls", &e,
						'u', &rec.calls) >= 0);
	assert_true(sd_bus_get_property_trivial(bus, SD_DEST, SD_PATH, FAKE_IFACE, "Runtime", &e,
						'b', &rec.runtime) >= 0);
	assert_true(sd_bus_get_property_trivial(bus, SD_DEST, SD_PATH, FAKE_IFACE, "Weight", &e,
						't', &rec.weight) >= 0);
	assert_true(sd_bus_get_property_string(bus, SD_DEST, SD_PATH, FAKE_IFACE, "Unit", &e,
					       &s) >= 0);
	snprintf(unit, sizeof(unit), "%s", s);
	free(s);
	rec.unit = unit;
	return rec;
}

/* ---- cgroup path → unit ---- */

KIT_TEST(unit_for_cgroup)
{
	static const struct {
		const char *path;
		int r;
		const char *unit;
	} cases[] = {
		{ "/system.slice/foo.service", 0, "foo.service" },
		{ "/user.slice/user-1000.slice/session-2.scope", 0, "session-2.scope" },
		{ "/user.slice/user-1000.slice", 0, "user-1000.slice" },
		{ "/system.slice", 0, "system.slice" },
		{ "/init.scope", 0, "init.scope" },
		{ "/system.slice/system-getty.slice/getty@tty1.service", 0, "getty@tty1.service" },
		{ "/system.slice/boot-efi.mount", 0, "boot-efi.mount" },
		{ "/system.slice/dev-sda2.swap", 0, "dev-sda2.swap" },
		{ "/system.slice/foo.socket", 0, "foo.socket" },
		{ "/system.slice/foo.service/", 0, "foo.service" },
		{ "//system.slice//foo.service", 0, "foo.service" },
		{ "/system.slice/_cpu.service", 0, "cpu.service" },
		{ "/system.slice/system-foo\\x2dbar.slice", 0, "system-foo\\x2dbar.slice" },
		/* a unit's delegated subtree: its payload's, not systemd's, not ours */
		{ "/system.slice/foo.service/sub", -EPERM, NULL },
		{ "/system.slice/docker-1a2b.scope/init.scope", -EPERM, NULL },
		{ "/user.slice/user-1000.slice/user@1000.service/app.slice", -EPERM, NULL },
		{ "/init.scope/x.slice", -EPERM, NULL },
		/* nobody's unit */
		{ "/", -EINVAL, NULL },
		{ "", -EINVAL, NULL },
		{ "//", -EINVAL, NULL },
		{ "system.slice/foo.service", -EINVAL, NULL },
		{ "/mygroup", -EINVAL, NULL },
		{ "/mygroup/foo.service", -EINVAL, NULL },
		{ "/system.slice/mygroup", -EINVAL, NULL },
		{ "/system.slice/foo.timer", -EINVAL, NULL },
		{ "/system.slice/.service", -EINVAL, NULL },
		{ "/system.slice/foo bar.service", -EINVAL, NULL },
		{ "/user-1000.slice", -EINVAL, NULL },
		{ "/user.slice/system-x.slice", -EINVAL, NULL },
		{ "/user.slice/user-.slice", -EINVAL, NULL },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		char unit[CGSD_UNIT_MAX] = "untouched";
		int r = cgsd_unit_for_cgroup(cases[i].path, unit, sizeof(unit));

		if (r != cases[i].r)
			fail_msg("'%s': %d, expected %d", cases[i].path, r, cases[i].r);
		assert_string_equal(unit, cases[i].unit ? cases[i].unit : "untouched");
	}
	assert_int_equal(cgsd_unit_for_cgroup(NULL, NULL, 0), -EINVAL);
}

KIT_TEST(unit_for_cgroup_size)
{
	char unit[12] = "untouched";

	assert_int_equal(cgsd_unit_for_cgroup("/system.slice/foobar.service", unit, sizeof(unit)),
			 -ENAMETOOLONG);
	assert_string_equal(unit, "untouched");
	assert_int_equal(cgsd_unit_for_cgroup("/system.slice/foo.service", unit, sizeof(unit)), 0);
	assert_string_equal(unit, "foo.service");
}

KIT_TEST(unit_interface)
{
	assert_string_equal(cgsd_unit_interface("foo.service"), SD_DEST ".Service");
	assert_string_equal(cgsd_unit_interface("a-b.slice"), SD_DEST ".Slice");
	assert_string_equal(cgsd_unit_interface("session-2.scope"), SD_DEST ".Scope");
	assert_null(cgsd_unit_interface("foo.timer"));
	assert_null(cgsd_unit_interface("foo.target"));
	assert_null(cgsd_unit_interface(".service"));
	assert_null(cgsd_unit_interface("service"));
	assert_null(cgsd_unit_interface(""));
}

/* ---- against the fake systemd ---- */

KIT_TEST(weight_round_trip)
{
	struct fixture *f = bus_fixture(state);
	const char *u = "foo.service";
	char err[256] = "untouched";
	struct fake_record rec;
	uint64_t w = 1;
	uint32_t calls;

	calls = read_record(f->bus).calls;
	assert_int_equal(cgsd_get_weight(f->bus, u, &w, err, sizeof(err)), 0);
	assert_true(w == CGSD_WEIGHT_UNSET);
	assert_int_equal(cgsd_set_weight(f->bus, u, 8000, err, sizeof(err)), 0);
	assert_int_equal(cgsd_get_weight(f->bus, u, &w, err, sizeof(err)), 0);
	assert_int_equal(w, 8000);
	rec = read_record(f->bus);
	assert_int_equal(rec.calls, calls + 1);
	assert_int_equal(rec.runtime, 1);
	assert_int_equal(rec.weight, 8000);
	assert_string_equal(rec.unit, "foo.service");

	assert_int_equal(cgsd_set_weight(f->bus, u, CGSD_WEIGHT_UNSET, err, sizeof(err)), 0);
	assert_int_equal(cgsd_get_weight(f->bus, u, &w, err, sizeof(err)), 0);
	assert_true(w == CGSD_WEIGHT_UNSET);
	rec = read_record(f->bus);
	assert_int_equal(rec.calls, calls + 2);
	assert_int_equal(rec.runtime, 1);
	assert_true(rec.weight == CGSD_WEIGHT_UNSET);
	assert_string_equal(err, "untouched");
}

KIT_TEST(weight_of_slice_and_scope)
{
	struct fixture *f = bus_fixture(state);
	uint64_t w = 0;

	assert_int_equal(cgsd_get_weight(f->bus, "user-1000.slice", &w, NULL, 0), 0);
	assert_int_equal(w, 100);
	assert_int_equal(cgsd_set_idle(f->bus, "session-2.scope", NULL, 0), 0);
	assert_int_equal(cgsd_get_weight(f->bus, "session-2.scope", &w, NULL, 0), 0);
	assert_true(w == CGSD_WEIGHT_IDLE);
	assert_int_equal(read_record(f->bus).runtime, 1);
	assert_int_equal(cgsd_set_weight(f->bus, "session-2.scope", CGSD_WEIGHT_UNSET, NULL, 0), 0);
	assert_int_equal(cgsd_get_weight(f->bus, "session-2.scope", &w, NULL, 0), 0);
	assert_true(w == CGSD_WEIGHT_UNSET);
}

KIT_TEST(weight_errors)
{
	struct fixture *f = bus_fixture(state);
	uint32_t calls = read_record(f->bus).calls;
	uint64_t w = 42;
	char err[256];

	assert_int_equal(cgsd_get_weight(f->bus, "nosuch.service", &w, err, sizeof(err)), -ENOENT);
	assert_non_null(strstr(err, SD_DEST ".NoSuchUnit: Unit nosuch.service not loaded."));
	assert_int_equal(w, 42);
	assert_int_equal(cgsd_set_weight(f->bus, "nosuch.service", 200, err, sizeof(err)), -ENOENT);
	assert_int_equal(cgsd_set_weight(f->bus, "locked.service", 200, err, sizeof(err)), -EACCES);
	assert_non_null(strstr(err, "org.freedesktop.DBus.Error.AccessDenied"));

	/* Refused here, before systemd sees them. */
	assert_int_equal(cgsd_set_weight(f->bus, "foo.service", 0, err, sizeof(err)), -ERANGE);
	assert_int_equal(cgsd_set_weight(f->bus, "foo.service", 10001, NULL, 0), -ERANGE);
	assert_int_equal(cgsd_set_weight(f->bus, "foo.timer", 100, err, sizeof(err)), -EINVAL);
	assert_int_equal(cgsd_get_weight(f->bus, "foo.target", &w, err, sizeof(err)), -EINVAL);
	assert_int_equal(cgsd_set_idle(f->bus, "x", NULL, 0), -EINVAL);
	assert_int_equal(read_record(f->bus).calls, calls);
	assert_int_equal(w, 42);
}

KIT_TEST(open_bad_address)
{
	static char sentinel;
	sd_bus *bus = (sd_bus *)&sentinel; /* must stay as it was */

	assert_true(cgsd_open("unix:path=/nonexistent/rqb-bus", &bus) < 0);
	assert_ptr_equal(bus, (sd_bus *)&sentinel);
}

/* Runs systemctl --user against the fake (through $DBUS_SESSION_BUS_ADDRESS). */
static int systemctl(const struct fixture *f, const char *const *args)
{
	const char *argv[8] = { "systemctl", "--user", "--no-ask-password" };
	size_t n = 3;
	int status;
	pid_t pid;

	for (; *args && n + 1 < ARRAY_SIZE(argv); args++)
		argv[n++] = *args;
	argv[n] = NULL;
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Its private socket is not there: systemctl falls back to the bus. */
		setenv("XDG_RUNTIME_DIR", f->dir, 1);
		setenv("DBUS_SESSION_BUS_ADDRESS", f->address, 1);
		execvp("systemctl", (char *const *)argv);
		_exit(127);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

/* What systemd 252 itself puts on the wire: what cgsd_set_idle and the restore must match. */
KIT_TEST(systemctl_encoding)
{
	struct fixture *f = bus_fixture(state);
	static const char *const idle[] = { "--runtime", "set-property", "foo.service",
					    "CPUWeight=idle", NULL };
	static const char *const unset[] = { "set-property", "foo.service", "CPUWeight=", NULL };
	struct fake_record rec;
	uint32_t calls;

	if (!in_path("systemctl")) {
		print_message("skipped: systemctl is not installed (Debian: systemd)\n");
		skip();
	}
	calls = read_record(f->bus).calls;
	assert_int_equal(systemctl(f, idle), 0);
	rec = read_record(f->bus);
	assert_int_equal(rec.calls, calls + 1);
	assert_string_equal(rec.unit, "foo.service");
	assert_true(rec.weight == CGSD_WEIGHT_IDLE);
	assert_int_equal(rec.runtime, 1);
	assert_int_equal(systemctl(f, unset), 0);
	rec = read_record(f->bus);
	assert_int_equal(rec.calls, calls + 2);
	assert_true(rec.weight == CGSD_WEIGHT_UNSET);
	assert_int_equal(rec.runtime, 0);
}

/* ---- a process target's unit: latact_unit, journalled and given back ---- */

#define FOO_CG "/system.slice/foo.service"

static void lat_dir(char *dir, size_t size)
{
	snprintf(dir, size, "/tmp/rqb-test-cgsd-lat.XXXXXX");
	assert_non_null(mkdtemp(dir));
}

static void lat_dir_rm(const char *dir)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/" LAT_JOURNAL_NAME, dir);
	unlink(path);
	rmdir(dir);
}

/* A latency actuator on the fake systemd, as the daemon makes one on a systemd host. */
static int lat_open(const struct fixture *f, const char *dir, struct latact *la)
{
	struct latact_opts o = { .journal_dir = dir, .systemd = true, .bus_address = f->address,
				 .mounts_file = "/dev/null" };
	struct lat_conf lc = { .batch_from = 10 };

	return latact_init(la, &act_linux_ops, &o, &lc);
}

static uint64_t foo_weight(const struct fixture *f)
{
	uint64_t w = 42;

	assert_int_equal(cgsd_get_weight(f->bus, "foo.service", &w, NULL, 0), 0);
	return w;
}

/*
 * The unit-weight cases, one a row: each runs on a latency actuator opened afresh on
 * the fake systemd, with a journal directory of its own; then the actuator stops, as
 * the daemon does, and foo.service's CPUWeight must be the row's after_stop.
 */
struct unit_weight_case {
	const char *name;
	/* Before the actuator opens: what an earlier daemon left in dir. May be NULL. */
	void (*before)(struct fixture *f, const char *dir);
	void (*run)(struct fixture *f, struct latact *la);
	uint64_t after_stop;
};

/* Both sides of the mapping on the unit, then given back: CPUWeight "[not set]" again. */
static void given_back_at_release(struct fixture *f, struct latact *la)
{
	const char *why;
	uint32_t calls;

	assert_int_equal(latact_unit(la, FOO_CG, -20, "unit of ctl uid 0", &why), 0);
	assert_int_equal(foo_weight(f), 8668);
	assert_true(latact_find_cgroup(la, FOO_CG)->by_procs);
	assert_true(latact_find_cgroup(la, FOO_CG)->prev_weight == CGSD_WEIGHT_UNSET);
	/* The same value again asks systemd nothing. */
	calls = read_record(f->bus).calls;
	assert_int_equal(latact_unit(la, FOO_CG, -20, "unit of ctl uid 0", &why), 0);
	assert_int_equal(read_record(f->bus).calls, calls);
	assert_int_equal(latact_unit(la, FOO_CG, 19, "unit of ctl uid 0", &why), 0);
	assert_int_equal(foo_weight(f), 1);
	assert_int_equal(read_record(f->bus).runtime, 1);
	assert_true(latact_find_cgroup(la, FOO_CG)->prev_weight == CGSD_WEIGHT_UNSET);
	assert_int_equal(latact_unit_release(la, FOO_CG), 0);
	assert_true(foo_weight(f) == CGSD_WEIGHT_UNSET);
	assert_null(latact_find_cgroup(la, FOO_CG));
	assert_int_equal(latact_unit_release(la, FOO_CG), -ENOENT);
}

/* Set, then the stop (after_stop) gives it back. */
static void given_back_at_stop(struct fixture *f, struct latact *la)
{
	const char *why;

	assert_int_equal(latact_unit(la, FOO_CG, 10, "unit of rule x", &why), 0);
	assert_int_equal(foo_weight(f), 11);
}

/* A daemon killed with the weight set: the next start gives it back from the journal. */
static void killed_with_weight_set(struct fixture *f, const char *dir)
{
	struct latact la;
	int status;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		const char *why;

		/* No latact_fini: gone as a killed daemon is, journal and all. */
		_exit(lat_open(f, dir, &la) == 0 &&
		      latact_unit(&la, FOO_CG, -5, "unit of ctl uid 0", &why) == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	assert_int_equal(foo_weight(f), 305);
}

static void given_back_after_a_crash(struct fixture *f, struct latact *la)
{
	assert_true(foo_weight(f) == CGSD_WEIGHT_UNSET);
	assert_int_equal(la->cnt.restored, 1);
}

/* Someone changed the weight since: that is theirs, and stays, past the stop too. */
static void changed_since_is_left_alone(struct fixture *f, struct latact *la)
{
	const char *why;

	assert_int_equal(latact_unit(la, FOO_CG, -20, "unit of ctl uid 0", &why), 0);
	assert_int_equal(cgsd_set_weight(f->bus, "foo.service", 500, NULL, 0), 0);
	assert_int_equal(latact_unit_release(la, FOO_CG), 0);
	assert_int_equal(foo_weight(f), 500);
	assert_int_equal(la->cnt.left_alone, 1);
}

/*
 * A cgroup given a value of its own keeps it; a unit's processes never weigh what is
 * not a unit, nor anything in a delegated subtree.
 */
static void refused(struct fixture *f, struct latact *la)
{
	const char *why;

	assert_int_equal(latact_cgroup(la, FOO_CG, -5, "ctl uid 0", &why), 0);
	assert_int_equal(latact_unit(la, FOO_CG, -20, "unit of ctl uid 0", &why), -EEXIST);
	assert_non_null(strstr(why, "a value of its own"));
	assert_int_equal(latact_unit_release(la, FOO_CG), -ENOENT);
	assert_int_equal(foo_weight(f), 305);
	assert_int_equal(latact_cgroup_reset(la, FOO_CG), 0);
	assert_true(foo_weight(f) == CGSD_WEIGHT_UNSET);
	assert_int_equal(latact_unit(la, "/mygroup", -20, "x", &why), -EINVAL);
	assert_int_equal(latact_unit(la, FOO_CG "/sub", -20, "x", &why), -EPERM);
	assert_int_equal(la->ncg, 0);
}

static const struct unit_weight_case unit_weight_cases[] = {
	{ "given back at release", NULL, given_back_at_release, CGSD_WEIGHT_UNSET },
	{ "given back at stop", NULL, given_back_at_stop, CGSD_WEIGHT_UNSET },
	{ "given back after a crash", killed_with_weight_set, given_back_after_a_crash,
	  CGSD_WEIGHT_UNSET },
	{ "changed since is left alone", NULL, changed_since_is_left_alone, 500 },
	{ "refused", NULL, refused, CGSD_WEIGHT_UNSET },
};

KIT_TEST(unit_weight)
{
	struct fixture *f = bus_fixture(state);

	for (size_t i = 0; i < ARRAY_SIZE(unit_weight_cases); i++) {
		const struct unit_weight_case *c = &unit_weight_cases[i];
		struct latact la;
		char dir[64];

		print_message("unit weight: %s\n", c->name);
		lat_dir(dir, sizeof(dir));
		if (c->before)
			c->before(f, dir);
		assert_int_equal(lat_open(f, dir, &la), 0);
		c->run(f, &la);
		latact_fini(&la);
		assert_true(foo_weight(f) == c->after_stop);
		/* The next row starts from a unit with no weight of its own. */
		assert_int_equal(cgsd_set_weight(f->bus, "foo.service", CGSD_WEIGHT_UNSET, NULL, 0),
				 0);
		lat_dir_rm(dir);
	}
}

/* Last: it stops the fake. */
KIT_TEST(no_systemd_on_bus)
{
	struct fixture *f = bus_fixture(state);
	char err[256];
	uint64_t w;

	stop(&f->fake);
	assert_int_equal(cgsd_get_weight(f->bus, "foo.service", &w, err, sizeof(err)),
			 -EHOSTUNREACH);
	assert_non_null(strstr(err, "org.freedesktop.DBus.Error.ServiceUnknown"));
}

KIT_GROUP("tests", setup, teardown);
