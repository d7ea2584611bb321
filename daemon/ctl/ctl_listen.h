/* The ctl socket's file (ctl_listen.c), for the ctl server (ctl.c). */
#ifndef RQB_CTL_LISTEN_H
#define RQB_CTL_LISTEN_H

struct ctl_server;

/*
 * Binds path in its directory, made if missing and refused (logged with why) unless
 * only root may write it: there nobody else can put a link or a socket of their own
 * at the name. Mode 0666 comes from the umask at bind: no chmod by path to redirect.
 * Sets s->dirfd, s->name and s->fd, listening; 0 or -errno (s->fd may be open then).
 */
int ctl_listen_bind(struct ctl_server *s, const char *path);

#endif
