/*
 * The agent's socket address: made by the agent, found by the tool
 * (lib/agent_addr.c has the essay).
 */
#ifndef DJP_LIB_AGENT_ADDR_H
#define DJP_LIB_AGENT_ADDR_H

#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

/* The abstract name is "\0" DJP_AGENT_SOCK_PREFIX "PID-TOKEN", TOKEN 32 hex
 * digits of getrandom(). */
#define DJP_AGENT_SOCK_PREFIX "djprobe-agent-"

/* A fresh name for the calling process's agent; 0 or -errno. */
/* The abstract socket address "\0name"; returns its length. */
socklen_t djp_abstract_addr(struct sockaddr_un *a, const char *name);

int djp_agent_addr_make(struct sockaddr_un *a, socklen_t *len);

/* The name process pid's agent listens on: the abstract socket with pid's
 * prefix whose inode is one of pid's own descriptors.  0, -ESRCH (no such
 * process), -EACCES (its descriptors cannot be read: we could not ptrace
 * it), -ENOENT (no agent listens there). */
int djp_agent_addr_find(pid_t pid, struct sockaddr_un *a, socklen_t *len);

#endif
