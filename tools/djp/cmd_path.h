/*
 * The program a -c command names, found as execvp(3) finds it: what the
 * tool compares with the program its agent reports, to tell the command
 * itself from a wrapper or an interpreter that runs it (a PATH shim, env,
 * runuser, sh -c 'exec ...').
 */
#ifndef DJP_TOOLS_CMD_PATH_H
#define DJP_TOOLS_CMD_PATH_H

#include <stdbool.h>
#include <stddef.h>

/* The canonical path (realpath) of the file the first word of cmd names,
 * searched in PATH when it has no '/', into buf; false when cmd is not a
 * plain word list (it runs through /bin/sh) or names no executable file. */
bool cmd_path_resolve(const char *cmd, char *buf, size_t sz);

/* Does the program at path `program` (as the agent reports it) differ from
 * the one cmd names?  False when cmd names none that can be found. */
bool cmd_path_runs_other(const char *cmd, const char *program);

#endif
