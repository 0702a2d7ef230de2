/*
 * The system calls that loading libdjprobe.so into a process and running
 * its agent make (agent_syscalls.c), for the injector's look at a seccomp
 * filter (tools/djp/attach/inject_seccomp.c).
 */
#ifndef DJP_KERNEL_TRACE_AGENT_SYSCALLS_H
#define DJP_KERNEL_TRACE_AGENT_SYSCALLS_H

#include <stddef.h>
#include <stdint.h>

struct djp_agent_syscall {
	int nr;
	const char *name;
	uint64_t args[4]; /* the arguments a filter may look at; 0 elsewhere */
};

extern const struct djp_agent_syscall djp_agent_syscalls[];
extern const size_t djp_agent_nsyscalls;

#endif
