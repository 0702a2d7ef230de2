/*
 * What the injector's files share (inject.c has the essay): the process
 * being injected into, and the handling of its threads under ptrace.
 *
 *   inject.c          the loader's dlopen, the call, the reasons it failed
 *   inject_threads.c  which thread may make the call, stopping and giving back
 *   inject_seccomp.c  whether a seccomp filter would kill it for the call
 */
#ifndef DJP_TOOLS_INJECT_TARGET_H
#define DJP_TOOLS_INJECT_TARGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#define INJECT_MAX_RANGES 16
#define INJECT_MAX_PENDING 32
#define INJECT_MAX_RESTORERS 4
#define INJECT_STOP_TIMEOUT_MS 5000 /* a thread asked to stop stops */
/* Stack the call needs below a thread's %rsp: the loader's dlopen of
 * libdjprobe.so and of its dependencies, the constructors and the agent's
 * start wrote 6 KiB below it on a fresh thread stack (glibc 2.36, AVX2);
 * the rest is for other loaders and larger XSAVE areas (the lazy binder
 * saves one on the stack). */
#define INJECT_STACK_NEED (32 * 1024)

struct target {
	pid_t pid;
	bool force; /* --force: inject where the seccomp filter cannot be read */
	double call_timeout_ms;
	uintptr_t dlopen, dlerror;
	int mode;
	uintptr_t lo[INJECT_MAX_RANGES], hi[INJECT_MAX_RANGES]; /* libc's and the loader's code */
	unsigned nranges;
	uintptr_t restorer[INJECT_MAX_RESTORERS]; /* libc's __restore_rt: signal frames */
	unsigned nrestorers;
	int pending[INJECT_MAX_PENDING]; /* signals taken from the held thread */
	unsigned npending;
	/* why threads were passed over, for the refusal */
	pid_t in_handler, short_stack;
	pid_t seccomp_ok[64]; /* threads whose filters were found harmless */
	unsigned nseccomp_ok;
	size_t short_room;
	/* libdjprobe already mapped in it, without an agent (a child of fork):
	 * where (its first mapping), and the file to read its symbols from */
	uintptr_t loaded_lo;
	char loaded_file[4200];
	char *err;
	size_t errsz;
};

int inject_fail(struct target *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
double inject_now_ms(void);

/* inject_threads.c */
/* Seize the threads one at a time until one qualifies; its tid (held and
 * stopped in the kernel's signal path, its registers in *regs), or -1. */
pid_t inject_pick_thread(struct target *t, struct user_regs_struct *regs);
/* Stop thread tid in the kernel's signal path (see inject_threads.c);
 * `held`: it is in a ptrace stop now.  0, -1 when it is gone, -2 when it
 * did not stop within INJECT_STOP_TIMEOUT_MS. */
int inject_stop_in_signal_path(struct target *t, pid_t tid, bool held);
/* Detach from thread tid (stopped) and send it the signals taken from it. */
void inject_let_go(struct target *t, pid_t tid);
void inject_take_signal(struct target *t, int sig);

/* inject_seccomp.c */
/* 0 when thread tid (held) has no seccomp filter that would kill it or
 * send it SIGSYS for a call of kernel/agent/agent_syscalls.c; else -1 with
 * the reason in t->err.  Each thread's filters are read once. */
int inject_seccomp_check(struct target *t, pid_t tid);

#endif
