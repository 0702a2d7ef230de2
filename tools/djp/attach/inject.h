/*
 * Loading libdjprobe.so into a running process that does not have it, from
 * outside, through ptrace (inject.c has the essay).
 */
#ifndef DJP_TOOLS_INJECT_H
#define DJP_TOOLS_INJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Make one thread of process pid call dlopen(lib, RTLD_NOW) and give every
 * register back.  0, or -1 with one line (no newline) in err saying what
 * refused it; the process then runs as before.  `force`: inject into a
 * process whose seccomp filter cannot be read. */
int djp_inject(pid_t pid, const char *lib, bool force, char *err, size_t errsz);

/* The descriptors process pid may still open under its RLIMIT_NOFILE (the
 * numbers below the limit no descriptor has), and the limit: 0 or -errno. */
int djp_fds_free(pid_t pid, long *nfree, unsigned long long *limit);

#endif
