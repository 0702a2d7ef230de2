/*
 * Every system call that loading libdjprobe.so into a running process and
 * running its agent makes: the loader's dlopen of the library and of its
 * dependencies (openat, read, the mappings), malloc, the agent's thread
 * (clone3, and clone where the kernel has no clone3), its socket and
 * sessions, the rings and the marker log (memfd_create), the engine's
 * text writes, syncs, freezes and signal handlers.  The injector refuses a
 * process whose seccomp filter would kill it or send it SIGSYS on any of
 * them (tools/djp/attach/inject_seccomp.c); a call a filter fails with an errno
 * is one the code already copes with.
 *
 * Where a filter may look at an argument (a socket's domain, membarrier's
 * command, fcntl's, the protection of a mapping: a filter may refuse
 * pages both writable and executable), the entry carries the value the
 * code passes; one entry per value.  selftests/test_inject_hostile.c runs a traced process under a
 * filter that allows exactly these (and what the program itself does) and
 * kills on anything else: a call added to the agent without its line here
 * kills that test's target.
 */
#include <fcntl.h>
#include <linux/membarrier.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "kernel/agent/agent_syscalls.h"

#define S(n, ...) { SYS_##n, #n, { __VA_ARGS__ } }

const struct djp_agent_syscall djp_agent_syscalls[] = {
	/* the loader, and malloc */
	S(openat), S(open), S(read), S(pread64), S(close), S(fstat), S(newfstatat), S(lseek), S(access),
	S(mmap, 0, 0, PROT_READ, MAP_PRIVATE | MAP_DENYWRITE),
	S(mmap, 0, 0, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED | MAP_DENYWRITE),
	S(mmap, 0, 0, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED | MAP_DENYWRITE),
	S(mmap, 0, 0, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS),
	S(mmap, 0, 0, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED),
	S(mmap, 0, 0, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE),
	S(mmap, 0, 0, PROT_READ | PROT_WRITE, MAP_SHARED),
	S(mprotect, 0, 0, PROT_NONE), S(mprotect, 0, 0, PROT_READ), S(mprotect, 0, 0, PROT_READ | PROT_WRITE),
	S(munmap), S(mremap), S(madvise), S(brk),
	/* the agent's thread */
	S(clone3), S(clone), S(set_robust_list), S(rseq), S(exit), S(exit_group), S(futex), S(rt_sigprocmask),
	S(sched_yield), S(nanosleep), S(clock_nanosleep), S(clock_gettime), S(gettid), S(getpid),
	S(getuid), S(geteuid), S(getgid), S(getegid), S(sysinfo), S(sched_getaffinity), S(getrandom),
	S(prctl, PR_GET_DUMPABLE), S(prctl, PR_SET_NAME),
	/* its socket, sessions, rings and marker log */
	S(socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK), S(socket, AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC),
	S(bind), S(listen), S(accept4), S(connect), S(getsockopt), S(setsockopt), S(poll), S(ppoll),
	S(recvfrom), S(recvmsg), S(sendto), S(sendmsg), S(write), S(memfd_create), S(ftruncate),
	S(fcntl, 0, F_ADD_SEALS), S(fcntl, 0, F_GETFL), S(fcntl, 0, F_SETFL), S(fcntl, 0, F_GETFD), S(fcntl, 0, F_SETFD),
	S(readlink), S(getdents64),
	/* the injector's stop: a thread stopped in nanosleep or poll resumes
	 * its call through restart_syscall */
	S(restart_syscall),
	/* the engine: text writes, syncs, freezes, its signals; its
	 * trampolines (executable pages it maps and writes), and the look at
	 * whether the text can be made writable (arch/x86/text.c) */
	S(mmap, 0, 0, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS),
	S(mmap, 0, 0, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE),
	S(mprotect, 0, 0, PROT_READ | PROT_EXEC), S(mprotect, 0, 0, PROT_READ | PROT_WRITE | PROT_EXEC),
	S(pwrite64), S(process_vm_readv), S(process_vm_writev), S(membarrier, MEMBARRIER_CMD_QUERY),
	S(membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED), S(membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED),
	S(membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE),
	S(membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE), S(rt_sigaction), S(rt_sigreturn),
	S(sigaltstack), S(tgkill), S(kill),
};

const size_t djp_agent_nsyscalls = sizeof(djp_agent_syscalls) / sizeof(djp_agent_syscalls[0]);
