/*
 * The agent: the part of libdjprobe.so that lets the djp tool trace this
 * process (kernel/agent/agent.c has the essay).  Internal; never installed.
 */
#ifndef DJP_KERNEL_AGENT_H
#define DJP_KERNEL_AGENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "djprobe/djprobe.h"
#include "kernel/agent/agg.h"
#include "kernel/agent/recorder.h"
#include "lib/agent_addr.h"
#include "lib/proto.h"
#include "lib/ptrace_perm.h"

#define DJP_AGENT_MAX_SESSIONS 8
/* DJP_AGENT_MAX_PROBES, DJP_AGENT_PATTERN_MAX, the ring bounds and the
 * environment of a launch are the tool's too: lib/proto.h. */

struct djp_agent_session {
	int fd;
	pid_t peer_pid;
	uid_t peer_uid;
	bool used;
	bool hello;	/* HELLO done */
	bool launch;	/* the -c session: its START releases the constructor */
	bool ending;	/* being torn down; retried until every probe is gone */
	/* the engine's count of dlopen/dlclose arming errors at the open:
	 * STATS reports those since */
	unsigned arm_errors_at_open;
	struct djp_recorder *rec;
	struct djp_agg *agg; /* TABLES: lost counters and aggregation tables */
	int probe[DJP_AGENT_MAX_PROBES]; /* engine probe ids, -1 when free */
	unsigned nprobes;
	/* its tool answers the FREEZE of batches no request asked for (it
	 * has probes): the process's freezer asks it */
	bool serves;
	unsigned owed; /* answers to asks given up, dropped when they come */
	size_t inlen;
	uint8_t in[DJP_PROTO_HDR_SIZE + DJP_PROTO_MAX_PAYLOAD];
};

/* agent_session.c: one tool's session. */
void djp_agent_session_open(struct djp_agent_session *s, int fd, pid_t pid, uid_t uid, bool launch);
/* Read what the socket has and answer every complete request.  0: keep the
 * session; < 0: end it (end of file, an error, a malformed frame, BYE). */
int djp_agent_session_input(struct djp_agent_session *s);
/* Disarm everything the session armed, free its ring and close it.  0 when
 * done; -EAGAIN when a probe could not be disconnected yet (retry). */
int djp_agent_session_end(struct djp_agent_session *s);
/* A whole request waits in s->in (a freezer's ask read it off the socket):
 * djp_agent_session_input handles it. */
bool djp_agent_session_pending(struct djp_agent_session *s);
/* The sessions (DJP_AGENT_MAX_SESSIONS of them) the process's freezer
 * chooses a tool from; again in a child of fork, before its agent thread. */
void djp_agent_sessions_init(struct djp_agent_session *v);

/* agent_launch.c: `djp trace -c`, the command's side. */
/* The socket to the waiting tool, connected, or -1 (not launched by a tool,
 * or this process has no markers of its own). */
int djp_agent_launch_dial(void);
/* Connect to the tool listening on the abstract socket `name`, and check
 * that it may trace us; the socket or -1. */
int djp_agent_dial_tool(const char *name);
/* A child of fork waits for its own START (djp_agent_launch_wait). */
void djp_agent_launch_rearm(void);
/* Block the constructor until released or timed out. */
void djp_agent_launch_wait(void);
/* START arrived, or the launch session ended. */
void djp_agent_launch_release(void);

/* agent.c: a session asked that the children of fork dial the tool's
 * socket `name` (FOLLOW); "" from a session that ends stops it. */
int djp_agent_follow(const struct djp_agent_session *s, const char *name);
void djp_agent_unfollow(const struct djp_agent_session *s);

/* last_thread.c: called by the agent thread as it starts; glibc's count
 * of threads then ends the process when the program's last thread ends,
 * as it would without the agent. */
void djp_agent_leave_thread_count(void);

/* agent.c: may the peer SO_PEERCRED describes trace us (ptrace's rule)?
 * On false, *why says why not. */
bool djp_agent_peer_allowed(const struct ucred *cred, const char **why);

#endif
