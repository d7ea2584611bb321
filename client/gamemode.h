/*
 * rqctl gamemode-agent: GameMode's session bus interface, answered for rqbalanced.
 */
#ifndef RQB_CLIENT_GAMEMODE_H
#define RQB_CLIENT_GAMEMODE_H

/* The subcommand, argv[0] being "gamemode-agent": runs until the session bus or the
 * system bus goes away, or SIGTERM/SIGINT. Returns the exit status. */
int gm_agent_main(int argc, char **argv);

#endif
