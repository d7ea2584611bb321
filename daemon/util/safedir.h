/*
 * Directories the root daemon writes in (the journals', the ctl socket's, the metrics
 * file's): reached following no symbolic link, and refused unless root alone may
 * write them, so that nothing another user planted can redirect or block a write.
 */
#ifndef RQB_SAFEDIR_H
#define RQB_SAFEDIR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>

/*
 * Whether st, the directory dir, may hold the daemon's files: a directory of root's
 * (or of the daemon's own user) that neither its group nor others may write, sticky
 * or not (a sticky one still lets them plant names). 0, or -errno with why naming dir.
 */
int safedir_check(const char *dir, const struct stat *st, char *why, size_t len);

/*
 * Opens the absolute directory dir (O_PATH) one component at a time, following no
 * symbolic link (O_NOFOLLOW), and checks it (safedir_check). Its parents may be
 * anyone's (Debian's /var/lib/prometheus is the prometheus user's): without a link
 * their owner can only rename or replace a directory, never make one that root owns
 * and alone may write, and the caller works through the descriptor, never the path
 * again. With create, missing components are made (mode 0755) and each is checked
 * as it is reached. Without: -ENOENT when one is missing, *ret_fd then being the
 * deepest that exists, which passed the same check (whoever may make the rest there
 * must be root alone). Else 0 with *ret_fd, or -errno with the reason in why and
 * *ret_fd -1.
 */
int safedir_open(const char *dir, bool create, int *ret_fd, char *why, size_t len);

/* safedir_open without create, for a config check: 0 also when dir is not made yet. */
int safedir_check_path(const char *dir, char *why, size_t len);
/*
 * The directory of a file's absolute path, opened as safedir_open does without create
 * (-ENOENT: not made yet), and its config check: 0 also when it is not made yet.
 */
int safedir_open_parent(const char *path, int *ret_fd, char *why, size_t len);
int safedir_check_parent(const char *path, char *why, size_t len);

#endif
