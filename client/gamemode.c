/*
 * rqctl gamemode-agent: a session agent that carries GameMode's requests to rqbalanced.
 * Where nobody else owns com.feralinteractive.GameMode on the session bus it owns the
 * name and answers GameMode's interface (as gamemoded 1.7 does) itself; where gamemoded
 * owns it, it only watches gamemoded's games. Either way each game goes to the daemon's
 * RegisterGame as a pidfd, on this agent's own system bus connection, so the daemon
 * judges it by the session user's credentials and gives it back when that connection
 * ends. It decides nothing about a game: it never changes a process itself.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "gamemode.h"

#define GM_NAME "com.feralinteractive.GameMode"
#define GM_PATH "/com/feralinteractive/GameMode"
#define GM_IFACE "com.feralinteractive.GameMode"
#define GM_GAMES GM_PATH "/Games"
#define GM_GAME_IFACE GM_IFACE ".Game"

#define RQB_NAME "org.rqbalance1"
#define RQB_PATH "/org/rqbalance1"
#define RQB_IFACE "org.rqbalance1.Latency"

/* The bus driver's word on who owns one name, and on no other name. */
#define OWNER_MATCH(name)                                                                   \
	"type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',"          \
	"interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='" name "'"

/* GameMode's answers (gamemoded 1.7's game_mode_context_register and friends). */
#define GM_OK 0
#define GM_ERROR (-1)
#define GM_REJECTED (-2)

enum gm_mode {
	MODE_NONE,   /* nobody owns the name (a moment, while the bus gives it to us) */
	MODE_OWNER,  /* this agent answers GameMode's interface */
	MODE_BESIDE, /* another connection (gamemoded) does; we watch its games */
};

struct gm_agent;

/* A game this agent holds a grant for, or is asking one for. */
struct gm_game {
	struct gm_agent *a;
	struct gm_game *next;
	pid_t pid;               /* the game, as the caller named it */
	pid_t requester;         /* who asked for it (GameMode's Requester); 0 if not known */
	int pidfd;               /* pins the game: what the daemon is given, and its exit */
	uint64_t since_s;        /* wall clock seconds at registration (GameMode's Timestamp) */
	char exe[PATH_MAX];      /* its /proc/PID/exe when registered; "" if unreadable */
	bool beside;             /* gamemoded's game, seen from its signals */
	bool granted;            /* the daemon said yes */
	sd_event_source *exit;   /* the pidfd becomes readable when the game exits */
	sd_bus_slot *asking;     /* the daemon's RegisterGame answer, still to come */
	sd_bus_message *caller;  /* the GameMode call that waits for that answer */
};

struct gm_agent {
	sd_event *ev;
	sd_bus *user, *sys;
	enum gm_mode mode;
	char *owner;             /* MODE_BESIDE: the unique name that owns GM_NAME */
	struct gm_game *games;
	sd_bus_slot *list;       /* ListGames asked of the owner, not answered yet */
};

static int pidfd_open_pid(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

/* The pid a pidfd stands for, from its fdinfo: -1 if it exited, 0 if it is outside our
 * pid namespace, -EBADF if fd is no pidfd. */
static int pidfd_pid(int fd, pid_t *ret_pid)
{
	char path[64], line[256];
	FILE *f;
	int pid, r = -EBADF;

	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", fd);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Pid:\t%d", &pid) == 1) {
			*ret_pid = pid;
			r = 0;
			break;
		}
	fclose(f);
	return r;
}

static void read_exe(pid_t pid, char *buf, size_t size)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
	n = readlink(path, buf, size - 1);
	buf[n > 0 ? n : 0] = '\0';
}

static struct gm_game *game_find(struct gm_agent *a, pid_t pid)
{
	for (struct gm_game *g = a->games; g; g = g->next)
		if (g->pid == pid)
			return g;
	return NULL;
}

/* Games GameMode's clients see here: ours, granted. */
static unsigned count_served(const struct gm_agent *a)
{
	unsigned n = 0;

	for (const struct gm_game *g = a->games; g; g = g->next)
		n += !g->beside && g->granted;
	return n;
}

static void game_path(pid_t pid, char *buf, size_t size)
{
	snprintf(buf, size, GM_GAMES "/%u", (unsigned)pid);
}

/* GameMode's signal and ClientCount's change, as gamemoded sends them. */
static void announce(struct gm_agent *a, pid_t pid, bool registered)
{
	char path[sizeof(GM_GAMES) + 16];

	if (a->mode != MODE_OWNER)
		return;
	game_path(pid, path, sizeof(path));
	(void)sd_bus_emit_signal(a->user, GM_PATH, GM_IFACE,
				 registered ? "GameRegistered" : "GameUnregistered", "io",
				 (int32_t)pid, path);
	(void)sd_bus_emit_properties_changed(a->user, GM_PATH, GM_IFACE, "ClientCount", NULL);
}

static void answer(sd_bus_message **caller, int value)
{
	if (!*caller)
		return;
	(void)sd_bus_reply_method_return(*caller, "i", value);
	*caller = sd_bus_message_unref(*caller);
}

/* Unlinks and frees g; the daemon is not told (see give_back). */
static void game_forget(struct gm_game *g)
{
	struct gm_agent *a = g->a;

	for (struct gm_game **p = &a->games; *p; p = &(*p)->next)
		if (*p == g) {
			*p = g->next;
			break;
		}
	answer(&g->caller, GM_ERROR);
	sd_bus_slot_unref(g->asking);
	sd_event_source_disable_unref(g->exit);
	if (g->pidfd >= 0)
		close(g->pidfd);
	free(g);
}

/* The daemon's answer to UnregisterGame, and the GameMode call that waited for it. */
static int on_given_back(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	sd_bus_message *caller = userdata;
	const sd_bus_error *e = sd_bus_message_get_error(m);

	/* The game may have exited meanwhile: the daemon has given it back by itself then. */
	if (e && !sd_bus_error_has_name(e, "org.rqbalance1.Error.NoSuchTask"))
		fprintf(stderr, "gamemode-agent: rqbalanced: UnregisterGame: %s\n", e->message);
	answer(&caller, GM_OK);
	return 0;
}

/* Tells the daemon, answers caller (if any) once it has, and forgets g. */
static void give_back(struct gm_game *g, sd_bus_message *caller)
{
	struct gm_agent *a = g->a;
	bool served = !g->beside && g->granted;
	sd_bus_message *held = caller ? sd_bus_message_ref(caller) : NULL;
	pid_t pid = g->pid;
	int r = -ENOENT;

	if (g->granted || g->asking) {
		r = sd_bus_call_method_async(a->sys, NULL, RQB_NAME, RQB_PATH, RQB_IFACE,
					     "UnregisterGame", on_given_back, held, "h", g->pidfd);
		if (r < 0)
			fprintf(stderr, "gamemode-agent: rqbalanced: UnregisterGame: %s\n",
				strerror(-r));
	}
	if (r < 0)
		answer(&held, GM_OK);
	game_forget(g);
	if (served)
		announce(a, pid, false);
}

static int on_game_exit(sd_event_source *s, int fd, uint32_t revents, void *userdata)
{
	struct gm_game *g = userdata;
	struct gm_agent *a = g->a;
	bool served = !g->beside && g->granted;
	pid_t pid = g->pid;

	/* The daemon gives an exited game back by itself. */
	game_forget(g);
	if (served)
		announce(a, pid, false);
	return 0;
}

/* What GameMode's caller is told of the daemon's answer. */
static int daemon_answer(const sd_bus_error *e)
{
	if (!e)
		return GM_OK;
	if (sd_bus_error_has_name(e, SD_BUS_ERROR_ACCESS_DENIED))
		return GM_REJECTED;
	return GM_ERROR;
}

static int on_granted(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	struct gm_game *g = userdata;
	const sd_bus_error *e = sd_bus_message_get_error(m);
	int32_t value = 0;
	bool announced;

	g->asking = sd_bus_slot_unref(g->asking);
	announced = !g->beside && !g->caller; /* asked again after a daemon's restart */
	if (e) {
		struct gm_agent *a = g->a;
		pid_t pid = g->pid;

		fprintf(stderr, "gamemode-agent: game %d: rqbalanced: %s: %s\n", (int)pid, e->name,
			e->message);
		answer(&g->caller, daemon_answer(e));
		game_forget(g);
		if (announced)
			announce(a, pid, false);
		return 0;
	}
	(void)sd_bus_message_read(m, "i", &value);
	g->granted = true;
	fprintf(stderr, "gamemode-agent: game %d (%s): latency-nice %d\n", (int)g->pid,
		g->exe[0] ? g->exe : "?", (int)value);
	answer(&g->caller, GM_OK);
	if (!g->beside && !announced)
		announce(g->a, g->pid, true);
	return 0;
}

static int ask_daemon(struct gm_game *g)
{
	return sd_bus_call_method_async(g->a->sys, &g->asking, RQB_NAME, RQB_PATH, RQB_IFACE,
					"RegisterGame", on_granted, g, "h", g->pidfd);
}

/* Takes pidfd (closed on failure). A game already known is GameMode's error. Answers
 * caller once the daemon has answered. */
static int game_add(struct gm_agent *a, int pidfd, pid_t pid, pid_t requester, bool beside,
		    sd_bus_message *caller)
{
	struct gm_game *g;
	int r;

	if (pid <= 0 || game_find(a, pid) || !(g = calloc(1, sizeof(*g)))) {
		close(pidfd);
		return GM_ERROR;
	}
	g->a = a;
	g->pid = pid;
	g->requester = requester;
	g->pidfd = pidfd;
	g->since_s = (uint64_t)time(NULL);
	g->beside = beside;
	read_exe(pid, g->exe, sizeof(g->exe));
	g->next = a->games;
	a->games = g;
	r = sd_event_add_io(a->ev, &g->exit, pidfd, EPOLLIN, on_game_exit, g);
	if (r >= 0)
		r = ask_daemon(g);
	if (r < 0) {
		fprintf(stderr, "gamemode-agent: game %d: cannot ask rqbalanced: %s\n", (int)pid,
			strerror(-r));
		game_forget(g);
		return GM_ERROR;
	}
	g->caller = caller ? sd_bus_message_ref(caller) : NULL;
	return GM_OK;
}

/* A pid as GameMode's plain calls name it: pinned now, else GameMode's error. */
static int pin_pid(pid_t pid)
{
	return pid > 0 ? pidfd_open_pid(pid) : -EINVAL;
}

/* A pidfd GameMode's ByPIDFd calls pass: our own copy, and its pid. */
static int pin_pidfd(int fd, pid_t *ret_pid)
{
	pid_t pid;
	int own;

	if (pidfd_pid(fd, &pid) < 0 || pid <= 0)
		return -ESRCH;
	own = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (own < 0)
		return -errno;
	*ret_pid = pid;
	return own;
}

/* Register, unregister, query, for a game already pinned (or not: pidfd < 0). */
static int do_register(sd_bus_message *m, struct gm_agent *a, int pidfd, pid_t game,
		       pid_t requester)
{
	if (pidfd < 0)
		return sd_bus_reply_method_return(m, "i", GM_ERROR);
	if (game_add(a, pidfd, game, requester, false, m) < 0)
		return sd_bus_reply_method_return(m, "i", GM_ERROR);
	return 1; /* answered when the daemon has */
}

static int do_unregister(sd_bus_message *m, struct gm_agent *a, pid_t game)
{
	struct gm_game *g = game_find(a, game);

	if (!g || g->beside)
		return sd_bus_reply_method_return(m, "i", GM_ERROR);
	give_back(g, m);
	return 1;
}

static int do_query(sd_bus_message *m, struct gm_agent *a, pid_t game)
{
	const struct gm_game *g = game_find(a, game);

	/* 0: GameMode is off; 1: on, not for this game; 2: on for it. */
	if (!count_served(a))
		return sd_bus_reply_method_return(m, "i", 0);
	return sd_bus_reply_method_return(m, "i", g && !g->beside && g->granted ? 2 : 1);
}

enum gm_op { OP_REGISTER, OP_UNREGISTER, OP_QUERY };

static int dispatch(sd_bus_message *m, struct gm_agent *a, enum gm_op op, pid_t game,
		    pid_t requester, int pidfd)
{
	switch (op) {
	case OP_REGISTER:
		return do_register(m, a, pidfd >= 0 ? pidfd : pin_pid(game), game, requester);
	case OP_UNREGISTER:
		if (pidfd >= 0)
			close(pidfd);
		return do_unregister(m, a, game);
	case OP_QUERY:
		if (pidfd >= 0)
			close(pidfd);
		return do_query(m, a, game);
	}
	return -EINVAL;
}

static enum gm_op op_of(sd_bus_message *m)
{
	const char *name = sd_bus_message_get_member(m);

	if (!strncmp(name, "RegisterGame", 12))
		return OP_REGISTER;
	if (!strncmp(name, "UnregisterGame", 14))
		return OP_UNREGISTER;
	return OP_QUERY;
}

/* RegisterGame(i), UnregisterGame(i), QueryStatus(i): the game asks for itself. */
static int method_self(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	int32_t pid;
	int r = sd_bus_message_read(m, "i", &pid);

	if (r < 0)
		return r;
	return dispatch(m, userdata, op_of(m), pid, pid, -1);
}

/* The ByPID variants: (caller, game), in the order gamemoded 1.7 reads them. */
static int method_by_pid(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	int32_t caller, game;
	int r = sd_bus_message_read(m, "ii", &caller, &game);

	if (r < 0)
		return r;
	return dispatch(m, userdata, op_of(m), game, caller, -1);
}

/* The ByPIDFd variants: (game, requester), as libgamemode sends them. */
static int method_by_pidfd(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	pid_t game = 0, requester = 0;
	int fds[2], own, r = sd_bus_message_read(m, "hh", &fds[0], &fds[1]);

	if (r < 0)
		return r;
	if (pidfd_pid(fds[1], &requester) < 0 || requester <= 0)
		return sd_bus_reply_method_return(m, "i", GM_ERROR);
	own = pin_pidfd(fds[0], &game);
	if (own < 0)
		return sd_bus_reply_method_return(m, "i", GM_ERROR);
	return dispatch(m, userdata, op_of(m), game, requester, own);
}

/* Nothing of GameMode's config is read here: the daemon's config is the daemon's. */
static int method_refresh(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	return sd_bus_reply_method_return(m, "i", GM_OK);
}

static int method_list(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	struct gm_agent *a = userdata;
	sd_bus_message *reply = NULL;
	char path[sizeof(GM_GAMES) + 16];
	int r = sd_bus_message_new_method_return(m, &reply);

	if (r >= 0)
		r = sd_bus_message_open_container(reply, 'a', "(io)");
	for (struct gm_game *g = a->games; g && r >= 0; g = g->next) {
		if (g->beside || !g->granted)
			continue;
		game_path(g->pid, path, sizeof(path));
		r = sd_bus_message_append(reply, "(io)", (int32_t)g->pid, path);
	}
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	if (r >= 0)
		r = sd_bus_send(NULL, reply, NULL);
	sd_bus_message_unref(reply);
	return r;
}

static int prop_count(sd_bus *bus, const char *path, const char *iface, const char *prop,
		      sd_bus_message *reply, void *userdata, sd_bus_error *err)
{
	int32_t n = (int32_t)count_served(userdata);

	return sd_bus_message_append_basic(reply, 'i', &n);
}

static const sd_bus_vtable gm_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("ClientCount", "i", prop_count, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
	SD_BUS_METHOD("RegisterGame", "i", "i", method_self, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("UnregisterGame", "i", "i", method_self, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("QueryStatus", "i", "i", method_self, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("RegisterGameByPID", "ii", "i", method_by_pid, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("UnregisterGameByPID", "ii", "i", method_by_pid,
		      SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("QueryStatusByPID", "ii", "i", method_by_pid, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("RegisterGameByPIDFd", "hh", "i", method_by_pidfd,
		      SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("UnregisterGameByPIDFd", "hh", "i", method_by_pidfd,
		      SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("QueryStatusByPIDFd", "hh", "i", method_by_pidfd,
		      SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("RefreshConfig", "", "i", method_refresh, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD("ListGames", "", "a(io)", method_list, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_SIGNAL("GameRegistered", "io", 0),
	SD_BUS_SIGNAL("GameUnregistered", "io", 0),
	SD_BUS_VTABLE_END,
};

/* A served game's object, by its path; none for another path. */
static struct gm_game *game_of_path(struct gm_agent *a, const char *path)
{
	static const char prefix[] = GM_GAMES "/";
	struct gm_game *g;
	unsigned long n;
	char *end;

	if (strncmp(path, prefix, sizeof(prefix) - 1))
		return NULL;
	errno = 0;
	n = strtoul(path + sizeof(prefix) - 1, &end, 10);
	if (errno || *end || end == path + sizeof(prefix) - 1 || n > INT_MAX)
		return NULL;
	g = game_find(a, (pid_t)n);
	return g && !g->beside && g->granted ? g : NULL;
}

static int game_object_find(sd_bus *bus, const char *path, const char *iface, void *userdata,
			    void **found, sd_bus_error *err)
{
	struct gm_game *g = game_of_path(userdata, path);

	if (!g)
		return 0;
	*found = g;
	return 1;
}

static int game_nodes(sd_bus *bus, const char *path, void *userdata, char ***nodes,
		      sd_bus_error *err)
{
	struct gm_agent *a = userdata;
	unsigned n = count_served(a), i = 0;
	char **v = calloc(n + 1, sizeof(*v));
	char buf[sizeof(GM_GAMES) + 16];

	if (!v)
		return -ENOMEM;
	for (struct gm_game *g = a->games; g && i < n; g = g->next) {
		if (g->beside || !g->granted)
			continue;
		game_path(g->pid, buf, sizeof(buf));
		if (!(v[i++] = strdup(buf))) {
			for (unsigned k = 0; k < i; k++)
				free(v[k]);
			free(v);
			return -ENOMEM;
		}
	}
	*nodes = v;
	return 1;
}

static int prop_game(sd_bus *bus, const char *path, const char *iface, const char *prop,
		     sd_bus_message *reply, void *userdata, sd_bus_error *err)
{
	const struct gm_game *g = userdata;
	int32_t v;

	if (!strcmp(prop, "Executable"))
		return sd_bus_message_append_basic(reply, 's', g->exe);
	if (!strcmp(prop, "Timestamp"))
		return sd_bus_message_append_basic(reply, 't', &g->since_s);
	v = !strcmp(prop, "Requester") ? (int32_t)g->requester : (int32_t)g->pid;
	return sd_bus_message_append_basic(reply, 'i', &v);
}

static const sd_bus_vtable game_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("ProcessId", "i", prop_game, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("Executable", "s", prop_game, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("Requester", "i", prop_game, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_PROPERTY("Timestamp", "t", prop_game, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	SD_BUS_VTABLE_END,
};

/*
 * A daemon that stopped gave every game back, and a new one knows none of them: each game
 * still held is asked for again, by the same pidfd.
 */
static int on_daemon_owner(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	struct gm_agent *a = userdata;
	const char *name, *old, *new;

	if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0 || strcmp(name, RQB_NAME) ||
	    !*new)
		return 0;
	for (struct gm_game *g = a->games; g; g = g->next) {
		if (!g->granted || g->asking)
			continue;
		g->granted = false;
		if (ask_daemon(g) < 0)
			fprintf(stderr, "gamemode-agent: game %d: cannot ask rqbalanced again\n",
				(int)g->pid);
	}
	return 0;
}

/* Beside gamemoded: one of its games, by pid. */
static void beside_add(struct gm_agent *a, pid_t pid)
{
	int fd;

	if (game_find(a, pid))
		return;
	fd = pin_pid(pid);
	if (fd < 0) {
		fprintf(stderr, "gamemode-agent: gamemoded's game %d: %s\n", (int)pid,
			strerror(errno));
		return;
	}
	(void)game_add(a, fd, pid, 0, true, NULL);
}

static void beside_drop_all(struct gm_agent *a)
{
	struct gm_game *g = a->games, *next;

	for (; g; g = next) {
		next = g->next;
		if (g->beside)
			give_back(g, NULL);
	}
}

static int on_owner_signal(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	struct gm_agent *a = userdata;
	const char *sender = sd_bus_message_get_sender(m), *path;
	struct gm_game *g;
	int32_t pid;

	if (a->mode != MODE_BESIDE || !sender || strcmp(sender, a->owner))
		return 0;
	if (sd_bus_message_read(m, "io", &pid, &path) < 0)
		return 0;
	if (sd_bus_message_is_signal(m, GM_IFACE, "GameRegistered"))
		beside_add(a, pid);
	else if (sd_bus_message_is_signal(m, GM_IFACE, "GameUnregistered") &&
		 (g = game_find(a, pid)) && g->beside)
		give_back(g, NULL);
	return 0;
}

static int on_listed(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	struct gm_agent *a = userdata;
	const char *path;
	int32_t pid;
	int r;

	a->list = sd_bus_slot_unref(a->list);
	if (sd_bus_message_is_method_error(m, NULL) || a->mode != MODE_BESIDE)
		return 0;
	r = sd_bus_message_enter_container(m, 'a', "(io)");
	while (r > 0 && (r = sd_bus_message_read(m, "(io)", &pid, &path)) > 0)
		beside_add(a, pid);
	return 0;
}

/* The comm of a bus connection's process; "" where unknown. */
static void conn_comm(sd_bus *bus, const char *name, char *buf, size_t size)
{
	sd_bus_message *reply = NULL;
	char path[64];
	uint32_t pid = 0;
	FILE *f;

	buf[0] = '\0';
	if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus",
			       "org.freedesktop.DBus", "GetConnectionUnixProcessID", NULL, &reply,
			       "s", name) < 0 ||
	    sd_bus_message_read(reply, "u", &pid) < 0 || !pid) {
		sd_bus_message_unref(reply);
		return;
	}
	sd_bus_message_unref(reply);
	snprintf(path, sizeof(path), "/proc/%u/comm", pid);
	f = fopen(path, "re");
	if (f) {
		if (fgets(buf, (int)size, f))
			buf[strcspn(buf, "\n")] = '\0';
		fclose(f);
	}
}

/*
 * A second agent in one session would ask for every game twice: the first one serves,
 * and this one ends as done (0), not failed, so that its unit is not restarted for it.
 */
static bool another_agent(struct gm_agent *a)
{
	char comm[32];

	conn_comm(a->user, a->owner, comm, sizeof(comm));
	if (strcmp(comm, "rqctl"))
		return false;
	fprintf(stderr, "gamemode-agent: another rqctl gamemode-agent (%s) serves this session\n",
		a->owner);
	(void)sd_event_exit(a->ev, 0);
	return true;
}

/* Who owns GameMode's name now: owner is a unique name, "" for nobody. */
static void set_owner(struct gm_agent *a, const char *owner)
{
	const char *me = NULL;
	enum gm_mode was = a->mode;

	(void)sd_bus_get_unique_name(a->user, &me);
	free(a->owner);
	a->owner = NULL;
	a->list = sd_bus_slot_unref(a->list);
	if (me && !strcmp(owner, me))
		a->mode = MODE_OWNER;
	else if (*owner && (a->owner = strdup(owner)))
		a->mode = MODE_BESIDE;
	else
		a->mode = MODE_NONE;
	/* The games of a gamemoded that is gone are no longer in its game mode. */
	beside_drop_all(a);
	if (a->mode == MODE_BESIDE && another_agent(a))
		return;
	if (a->mode == MODE_BESIDE)
		(void)sd_bus_call_method_async(a->user, &a->list, GM_NAME, GM_PATH, GM_IFACE,
					       "ListGames", on_listed, a, "");
	if (a->mode != was || a->mode == MODE_BESIDE)
		fprintf(stderr, "gamemode-agent: %s\n",
			a->mode == MODE_OWNER	 ? "serving " GM_NAME :
			a->mode == MODE_BESIDE ? "beside the owner of " GM_NAME
						 ", following its games" :
						 "waiting for " GM_NAME);
}

static int on_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	const char *name, *old, *new;

	if (sd_bus_message_read(m, "sss", &name, &old, &new) < 0 || strcmp(name, GM_NAME))
		return 0;
	set_owner(userdata, new);
	return 0;
}

static int start_session(struct gm_agent *a)
{
	sd_bus_message *reply = NULL;
	const char *owner = "";
	int r;

	r = sd_bus_add_object_vtable(a->user, NULL, GM_PATH, GM_IFACE, gm_vtable, a);
	if (r >= 0)
		r = sd_bus_add_fallback_vtable(a->user, NULL, GM_GAMES, GM_GAME_IFACE, game_vtable,
					       game_object_find, a);
	if (r >= 0)
		r = sd_bus_add_node_enumerator(a->user, NULL, GM_GAMES, game_nodes, a);
	if (r >= 0)
		r = sd_bus_add_match(a->user, NULL, OWNER_MATCH(GM_NAME), on_owner_changed, a);
	if (r >= 0)
		/* No sender in the match: the owner's unique name is compared on receipt. */
		r = sd_bus_match_signal(a->user, NULL, NULL, GM_PATH, GM_IFACE, NULL,
					on_owner_signal, a);
	/*
	 * Queued behind gamemoded, the bus gives us the name when it leaves. gamemoded (1.7
	 * to 1.8.2) asks for the name neither queued nor replacing, so it cannot start while
	 * we own it: the user unit is ordered after gamemoded.service.
	 */
	if (r >= 0)
		r = sd_bus_request_name(a->user, GM_NAME,
					SD_BUS_NAME_ALLOW_REPLACEMENT | SD_BUS_NAME_QUEUE);
	if (r < 0)
		return r;
	/* Changes after this come as NameOwnerChanged, the match being in place. */
	if (sd_bus_call_method(a->user, "org.freedesktop.DBus", "/org/freedesktop/DBus",
			       "org.freedesktop.DBus", "GetNameOwner", NULL, &reply, "s",
			       GM_NAME) >= 0)
		(void)sd_bus_message_read(reply, "s", &owner);
	set_owner(a, owner);
	sd_bus_message_unref(reply);
	return 0;
}

static int on_user_gone(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	struct gm_agent *a = userdata;

	return sd_event_exit(a->ev, 0);
}

static void agent_usage(FILE *out)
{
	fprintf(out,
		"Usage: rqctl gamemode-agent\n"
		"Carry GameMode's requests (gamemoderun, libgamemode) from the session bus to\n"
		"rqbalanced on the system bus: own com.feralinteractive.GameMode where nobody\n"
		"else does, else follow gamemoded's games. Runs until the session ends.\n\n"
		"  -h, --help  show this help\n\n"
		"Exit status: 0 the session bus or a signal ended it, or another agent serves\n"
		"the session; 1 it could not start or the system bus went away. See rqctl(1).\n");
}

static int on_signal(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata)
{
	return sd_event_exit(sd_event_source_get_event(s), 0);
}

static int on_sys_gone(sd_bus_message *m, void *userdata, sd_bus_error *err)
{
	struct gm_agent *a = userdata;

	fprintf(stderr, "gamemode-agent: the system bus went away\n");
	return sd_event_exit(a->ev, 1);
}

static int agent_setup(struct gm_agent *a)
{
	sigset_t ss;
	int r;

	sigemptyset(&ss);
	sigaddset(&ss, SIGTERM);
	sigaddset(&ss, SIGINT);
	sigprocmask(SIG_BLOCK, &ss, NULL);
	r = sd_event_default(&a->ev);
	if (r >= 0)
		r = sd_event_add_signal(a->ev, NULL, SIGTERM, on_signal, a);
	if (r >= 0)
		r = sd_event_add_signal(a->ev, NULL, SIGINT, on_signal, a);
	if (r < 0)
		return r;
	r = sd_bus_open_system(&a->sys);
	if (r < 0) {
		fprintf(stderr, "gamemode-agent: the system bus: %s\n", strerror(-r));
		return r;
	}
	r = sd_bus_open_user(&a->user);
	if (r < 0) {
		fprintf(stderr, "gamemode-agent: the session bus: %s\n", strerror(-r));
		return r;
	}
	r = sd_bus_match_signal(a->sys, NULL, "org.freedesktop.DBus.Local",
				"/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
				"Disconnected", on_sys_gone, a);
	/* The session's end is the agent's. */
	if (r >= 0)
		r = sd_bus_match_signal(a->user, NULL, "org.freedesktop.DBus.Local",
					"/org/freedesktop/DBus/Local", "org.freedesktop.DBus.Local",
					"Disconnected", on_user_gone, a);
	if (r >= 0)
		r = sd_bus_add_match(a->sys, NULL, OWNER_MATCH(RQB_NAME), on_daemon_owner, a);
	if (r >= 0)
		r = sd_bus_attach_event(a->sys, a->ev, SD_EVENT_PRIORITY_NORMAL);
	if (r >= 0)
		r = sd_bus_attach_event(a->user, a->ev, SD_EVENT_PRIORITY_NORMAL);
	if (r >= 0)
		r = start_session(a);
	if (r < 0)
		fprintf(stderr, "gamemode-agent: cannot serve " GM_NAME ": %s\n", strerror(-r));
	return r;
}

int gm_agent_main(int argc, char **argv)
{
	struct gm_agent a = { 0 };
	int r;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			agent_usage(stdout);
			return 0;
		}
		fprintf(stderr, "rqctl: gamemode-agent: unexpected '%s'\n", argv[i]);
		return 2;
	}
	setvbuf(stderr, NULL, _IOLBF, 0);
	r = agent_setup(&a);
	if (r >= 0)
		r = sd_event_loop(a.ev);
	/* Our system bus connection's end gives every grant back; nothing to tell first. */
	while (a.games)
		game_forget(a.games);
	free(a.owner);
	sd_bus_slot_unref(a.list);
	sd_bus_flush_close_unref(a.user);
	sd_bus_flush_close_unref(a.sys);
	sd_event_unref(a.ev);
	return r == 0 ? 0 : 1;
}
