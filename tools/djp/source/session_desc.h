/*
 * What both process sources (process.c for djp trace, script/live.c for
 * probe scripts) make of a session with an agent (session_desc.c).
 */
#ifndef DJP_SOURCE_SESSION_DESC_H
#define DJP_SOURCE_SESSION_DESC_H

#include <stdbool.h>
#include <stdint.h>

#include "source.h"
#include "tools/djp/session/session.h"

/* *d: descriptor `id` of the agent's marker m, whose format the session
 * parsed (m->fmt, NULL when it does not parse); its label the agent's full
 * name ("provider:name" for an SDT probe).  d points into m's strings. */
void session_desc_of_marker(struct djp_ev_desc *d, uint32_t id, const struct session_marker *m);

/* May the process of session s be a wrapper or an interpreter of the -c
 * command cmd (env, runuser, a shell, a PATH shim's interpreter), so that
 * a point may yet match in the program it execs in the same process?  When
 * it has no probes but libc's, or when the program it runs is not the file
 * cmd names (tools/djp/cmd_path.c). */
bool session_may_be_wrapper(const struct session *s, const char *cmd);

#endif
