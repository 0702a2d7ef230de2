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

#endif
