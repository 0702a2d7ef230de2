/*
 * Who may trace whom: ptrace's rule, applied by the agent to every peer and
 * by the djp tool to every agent (lib/ptrace_perm.c has the essay).
 */
#ifndef DJP_LIB_PTRACE_PERM_H
#define DJP_LIB_PTRACE_PERM_H

#include <stdbool.h>
#include <sys/types.h>

struct djp_creds {
	uid_t uid[4];	 /* real, effective, saved, filesystem */
	gid_t gid[4];
	bool cap_ptrace; /* CAP_SYS_PTRACE in the effective set */
	bool dumpable;	 /* PR_GET_DUMPABLE == 1 (SUID_DUMP_USER) */
};

/* The calling process's credentials.  0 or -errno. */
int djp_creds_self(struct djp_creds *c);
/* Process pid's credentials, from /proc/PID/status; dumpable from the
 * owner of /proc/PID/status, which the kernel makes root for a process that is not
 * dumpable.  0 or -errno (-ESRCH: no such process). */
int djp_creds_of(pid_t pid, struct djp_creds *c);

/* Whether a process with credentials `tracer` could ptrace one with
 * `target` (PTRACE_MODE_READ with real credentials, as the kernel decides
 * it, less LSMs and namespaces).  On false, why is set to a short reason. */
bool djp_may_trace(const struct djp_creds *tracer, const struct djp_creds *target, const char **why);

#endif
