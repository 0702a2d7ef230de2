/*
 * A target for the injection tests that sets the injector's traps, the
 * way a program can without meaning to (selftests/test_inject_hostile.c).
 * Linked without libdjprobe, as trace_target is, and bound at load time
 * (-z now): the short stack has no room for the lazy binder.
 *
 *   hostile_target [--handler-in-malloc] [--short-stack BYTES] [--spare] [--usr1 | --usr1-raw]
 *                  [--waits-in-handler] [--stale-frame]
 *                  [--seccomp-kill CALL | --seccomp-kill-main CALL | --seccomp-errno CALL |
 *                   --seccomp-kill-wx | --seccomp-allow-list]
 *                  [--hide DIR]
 *
 * Its main thread reads commands with readv, a system call the injector
 * does not stop a thread in, so that only the threads a test asks for can
 * be chosen:
 *
 *   --handler-in-malloc  the main thread mallocs 1.5 GiB, and the mmap that
 *                   malloc makes (holding its arena's lock) gets SIGSYS
 *                   from a seccomp filter (SECCOMP_RET_TRAP); the handler
 *                   prints "in handler" and waits in read for a line "go",
 *                   then fails the mmap (ENOMEM), and malloc returns:
 *                   "malloc done".  A second thread waits in write to a
 *                   full pipe (a call the injector does not stop in).
 *   --short-stack N a thread with a 64 KiB stack recurses until N bytes of
 *                   it are left, prints "short N", and waits in read.
 *   --spare         a thread with the default stack waits in read.
 *   --seccomp-kill CALL, --seccomp-errno CALL
 *                   a filter that kills the process on CALL (openat,
 *                   membarrier, socket, clone3, memfd_create), or fails it
 *                   with EPERM; everything else is allowed.  Every filter
 *                   applies to every thread (SECCOMP_FILTER_FLAG_TSYNC).
 *   --seccomp-kill-main CALL
 *                   the same, for the main thread alone (also rt_sigreturn:
 *                   the return from a signal handler).
 *   --seccomp-kill-wx
 *                   a filter that kills on mmap and mprotect of pages both
 *                   writable and executable.
 *   --seccomp-allow-list
 *                   a filter that allows the calls of
 *                   kernel/agent/agent_syscalls.c and the few this program
 *                   makes, and kills the process on any other.
 *   --sleeper       a thread sleeps in nanosleep, for an hour at a time.
 *   --vfork         a thread vforks a child that sleeps until killed (the
 *                   thread waits in vfork, uninterruptible): "vfork child
 *                   PID"; once the child is gone, "vfork done".
 *   --storm         a thread sends SIGUSR1 to the main thread and to the
 *                   waiting threads every 200 us; the handler runs a few
 *                   microseconds and returns (the stress's signals).
 *   --usr1          that handler for SIGUSR1, and no storm: the test sends
 *                   the signals.
 *   --usr1-raw      that handler for SIGUSR1 without SA_RESTART, and a
 *                   thread that waits in read through syscall(2), whose
 *                   frame then shows neither the number nor the restart.
 *   --waits-in-handler
 *                   two threads wait in read, each sent a signal there
 *                   whose handler waits in read too (as PostgreSQL's
 *                   workers live inside the postmaster's handler that
 *                   forked them): SIGUSR2's handler has SA_RESTART (the
 *                   frame's read is to be restarted), SIGURG's not (it
 *                   returns EINTR); "in handler SIG TID" once each is in.
 *   --stale-frame   a thread waits in read with, in its own frame, what
 *                   a signal frame starts with but no kernel made: the
 *                   handler's return address (__restore_rt), then zeros
 *                   but for a saved %rip in libc (PostgreSQL's backends
 *                   carry such copies in bytes their frames never wrote).
 *   --hide DIR      run in a mount namespace of its own, where DIR is an
 *                   empty tmpfs (needs root).
 *   --loader-waits LIB
 *                   a thread dlopens LIB (trace_progs/hostile_plugin.c),
 *                   whose constructor waits in readv, the loader's lock
 *                   held, until "release"; then "loaded".
 *
 * It prints "ready PID", then answers, one line each:
 *
 *   burst N         fire marker ht_burst N times: "burst N"
 *   dlopen PATH     dlopen(PATH, RTLD_NOW): "dlopen ok", or "dlopen failed: WHY"
 *   ping            "pong"
 *   release         let --loader-waits's constructor return
 *
 * and exits 0 at end of input.
 */
#include <djprobe/marker.h>
#include <dlfcn.h>
#include <errno.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include "kernel/agent/agent_syscalls.h"

#define MAX_INSNS 512

static int idle_pipe[2], full_pipe[2];
static size_t short_room;

static void say(const char *s)
{
	if (write(1, s, strlen(s)) < 0)
		_exit(3);
}

/* ---- seccomp ---------------------------------------------------------------- */

static struct sock_filter prog[MAX_INSNS];
static unsigned ninsns;

static void emit(struct sock_filter f)
{
	if (ninsns == MAX_INSNS)
		_exit(4);
	prog[ninsns++] = f;
}

static bool main_thread_only; /* --seccomp-kill-main: no TSYNC */

static void install(void)
{
	struct sock_fprog fp = { (unsigned short)ninsns, prog };
	unsigned flags = main_thread_only ? 0 : SECCOMP_FILTER_FLAG_TSYNC;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) || syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fp)) {
		perror("seccomp");
		_exit(5);
	}
	ninsns = 0;
}

static void load_nr_checking_arch(void)
{
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
}

static int call_nr(const char *name)
{
	static const struct {
		const char *name;
		int nr;
	} calls[] = {
		{ "openat", SYS_openat },	    { "membarrier", SYS_membarrier }, { "socket", SYS_socket },
		{ "clone3", SYS_clone3 },	    { "memfd_create", SYS_memfd_create },
		{ "rt_sigreturn", SYS_rt_sigreturn },
	};
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (!strcmp(calls[i].name, name))
			return calls[i].nr;
	fprintf(stderr, "hostile_target: unknown call %s\n", name);
	exit(2);
}

/* CALL gets `action`; everything else is allowed. */
static void filter_one(const char *name, unsigned action)
{
	load_nr_checking_arch();
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)call_nr(name), 0, 1));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, action));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	install();
}

/* mmap or mprotect of pages both writable and executable kills (as
 * systemd's MemoryDenyWriteExecute= refuses them, here with KILL). */
static void filter_wx(void)
{
	load_nr_checking_arch();
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 1, 0));
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mprotect, 0, 4));
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[2])));
	emit((struct sock_filter)BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC));
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	install();
}

/* The agent's calls and this program's; anything else kills. */
static void filter_allow_list(void)
{
	static const int own[] = { SYS_readv, SYS_exit_group, SYS_write, SYS_read };
	unsigned n = (unsigned)(djp_agent_nsyscalls + sizeof(own) / sizeof(own[0]));
	load_nr_checking_arch();
	for (unsigned i = 0; i < n; i++) {
		int nr = i < djp_agent_nsyscalls ? djp_agent_syscalls[i].nr : own[i - djp_agent_nsyscalls];
		/* to the ALLOW at the end: past the rest of the list and the KILL */
		emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr, (unsigned char)(n - i), 0));
	}
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	install();
}

/* ---- a handler that waits inside malloc --------------------------------------- */

static void read_line(char *buf, size_t sz)
{
	size_t n = 0;
	char c;
	while (n + 1 < sz && read(0, &c, 1) == 1 && c != '\n')
		buf[n++] = c;
	buf[n] = 0;
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	char line[16];
	(void)sig;
	(void)si;
	say("in handler\n");
	do
		read_line(line, sizeof(line));
	while (strcmp(line, "go"));
	((ucontext_t *)uc)->uc_mcontext.gregs[REG_RAX] = -ENOMEM; /* the mmap failed */
}

static void *writer(void *arg)
{
	static char block[4096];
	(void)arg;
	for (;;) /* until the pipe is full, then in write for good */
		if (write(full_pipe[1], block, sizeof(block)) < 0)
			return NULL;
}

static void handler_in_malloc(void)
{
	struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
	pthread_t th;
	void *volatile p; /* a malloc and free of nothing else would go */

	sigaction(SIGSYS, &sa, NULL);
	if (pipe(full_pipe) || pthread_create(&th, NULL, writer, NULL)) /* malloc now locks its arenas */
		_exit(6);
	/* mmap of 1 GiB or more: SIGSYS */
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 3));
	emit((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[1])));
	emit((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 1u << 30, 0, 1));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_TRAP));
	emit((struct sock_filter)BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW));
	install();
	p = malloc(3u << 29);
	free(p);
	say("malloc done\n");
}

/* ---- threads the injector may choose ------------------------------------------ */

static pid_t waiters[8];
static int nwaiters;
static pthread_mutex_t waiters_lock = PTHREAD_MUTEX_INITIALIZER;

static void wait_forever(void)
{
	char c;
	while (read(idle_pipe[0], &c, 1) < 0)
		;
}

/* A thread that waits, and gets --storm's signals. */
static void *waiter(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&waiters_lock);
	if (nwaiters < 8)
		waiters[nwaiters++] = (pid_t)syscall(SYS_gettid);
	pthread_mutex_unlock(&waiters_lock);
	wait_forever();
	return NULL;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		nanosleep(&(struct timespec){ 3600, 0 }, NULL);
	return NULL;
}

static void *vforker(void *arg)
{
	char msg[64];
	pid_t child;
	int st;
	(void)arg;
	/* the child shares this memory until it execs or exits: raw system
	 * calls only */
	child = vfork();
	if (child == 0) {
		char line[32];
		int n = snprintf(line, sizeof(line), "vfork child %d\n", (int)syscall(SYS_getpid));
		syscall(SYS_write, 1, line, n);
		for (;;)
			syscall(SYS_pause);
	}
	waitpid(child, &st, 0);
	snprintf(msg, sizeof(msg), "vfork done\n");
	say(msg);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	for (volatile int i = 0; i < 5000; i++)
		;
}

static void wait_in_handler(int sig)
{
	char msg[64];
	snprintf(msg, sizeof(msg), "in handler %d %d\n", sig, (int)syscall(SYS_gettid));
	say(msg);
	wait_forever();
}

static void *raw_waiter(void *arg)
{
	char c;
	while (syscall(SYS_read, idle_pipe[0], &c, 1) < 0)
		;
	return arg;
}

static volatile pid_t handler_waiter_tid;

static void *handler_waiter(void *arg)
{
	handler_waiter_tid = (pid_t)syscall(SYS_gettid);
	wait_forever();
	return arg;
}

/* Each thread is sent its signal once it waits in read. */
static void waits_in_handler(void)
{
	static const int sigs[2] = { SIGUSR2, SIGURG };
	for (int i = 0; i < 2; i++) {
		struct sigaction sa = { .sa_handler = wait_in_handler, .sa_flags = i ? 0 : SA_RESTART };
		pthread_t th;
		char path[64], line[64] = "";
		pid_t tid;
		FILE *f;
		sigaction(sigs[i], &sa, NULL);
		handler_waiter_tid = 0;
		if (pthread_create(&th, NULL, handler_waiter, NULL))
			_exit(8);
		while (!(tid = handler_waiter_tid))
			usleep(1000);
		snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
		while (strncmp(line, "0 ", 2)) { /* in read */
			usleep(1000);
			if ((f = fopen(path, "r"))) {
				if (!fgets(line, sizeof(line), f))
					line[0] = 0;
				fclose(f);
			}
		}
		syscall(SYS_tgkill, getpid(), tid, sigs[i]);
	}
}

static void *stale_frame(void *arg)
{
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	volatile uint64_t copy[24] = { 0 };
	(void)arg;
	sigaction(SIGUSR2, &sa, NULL);
	sigaction(SIGUSR2, NULL, &sa); /* glibc's restorer */
	copy[0] = (uint64_t)(uintptr_t)sa.sa_restorer;
	copy[22] = (uint64_t)(uintptr_t)&read;
	wait_forever();
	return (void *)copy[0];
}

static void *storm(void *arg)
{
	sigset_t usr1;
	(void)arg;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL);
	for (;;) {
		syscall(SYS_tgkill, getpid(), getpid(), SIGUSR1);
		pthread_mutex_lock(&waiters_lock);
		for (int i = 0; i < nwaiters; i++)
			syscall(SYS_tgkill, getpid(), waiters[i], SIGUSR1);
		pthread_mutex_unlock(&waiters_lock);
		nanosleep(&(struct timespec){ 0, 200000 }, NULL);
	}
	return NULL;
}

__attribute__((noinline)) static void dig(char *lo)
{
	volatile char pad[256];
	char *here = __builtin_frame_address(0);
	pad[0] = 0;
	if ((size_t)(here - lo) > short_room + 256) {
		dig(lo);
	} else {
		char msg[64];
		snprintf(msg, sizeof(msg), "short %zu\n", (size_t)(here - lo));
		say(msg);
		wait_forever(); /* no signal: its frame would not fit */
	}
	pad[1] = pad[0];
}

static void *short_stack(void *arg)
{
	pthread_attr_t a;
	void *lo;
	size_t size;
	(void)arg;
	if (pthread_getattr_np(pthread_self(), &a) || pthread_attr_getstack(&a, &lo, &size))
		_exit(7);
	dig(lo);
	return NULL;
}

static void start_thread(void *(*fn)(void *), size_t stack)
{
	pthread_attr_t a;
	pthread_t th;
	pthread_attr_init(&a);
	if (stack)
		pthread_attr_setstacksize(&a, stack);
	if (pthread_create(&th, &a, fn, NULL))
		_exit(8);
	pthread_attr_destroy(&a);
}

static int gate[2];

static void *load_waiting(void *lib)
{
	if (!dlopen(lib, RTLD_NOW))
		_exit(10);
	say("loaded\n");
	return NULL;
}

static void loader_waits(const char *lib)
{
	char fd[16];
	pthread_t th;
	if (pipe(gate))
		_exit(11);
	snprintf(fd, sizeof(fd), "%d", gate[0]);
	setenv("HT_GATE_FD", fd, 1);
	if (pthread_create(&th, NULL, load_waiting, (void *)lib))
		_exit(12);
}

static void hide(const char *dir)
{
	if (unshare(CLONE_NEWNS) || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("tmpfs", dir, "tmpfs", 0, NULL)) {
		perror("hostile_target: --hide");
		_exit(9);
	}
}

/* ---- commands ---------------------------------------------------------------- */

__attribute__((noinline)) static void burst(long n)
{
	for (long i = 0; i < n; i++) {
		MARK(ht_burst, "i=%ld", i);
		__asm__ volatile("" ::: "memory");
	}
}

/* One line of stdin, read with readv. */
static bool command(char *buf, size_t sz)
{
	size_t n = 0;
	for (;;) {
		char c;
		struct iovec v = { &c, 1 };
		if (readv(0, &v, 1) != 1)
			return n > 0;
		if (c == '\n' || n + 1 == sz)
			break;
		buf[n++] = c;
	}
	buf[n] = 0;
	return true;
}

int main(int argc, char **argv)
{
	bool in_malloc = false;
	char line[4200], msg[4400];

	if (pipe(idle_pipe))
		return 1;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--handler-in-malloc")) {
			in_malloc = true;
		} else if (!strcmp(argv[i], "--short-stack") && i + 1 < argc) {
			short_room = strtoul(argv[++i], NULL, 0);
			start_thread(short_stack, 64 * 1024);
		} else if (!strcmp(argv[i], "--spare")) {
			start_thread(waiter, 0);
		} else if (!strcmp(argv[i], "--seccomp-kill") && i + 1 < argc) {
			filter_one(argv[++i], SECCOMP_RET_KILL_PROCESS);
		} else if (!strcmp(argv[i], "--seccomp-kill-main") && i + 1 < argc) {
			main_thread_only = true;
			filter_one(argv[++i], SECCOMP_RET_KILL_PROCESS);
		} else if (!strcmp(argv[i], "--seccomp-errno") && i + 1 < argc) {
			filter_one(argv[++i], SECCOMP_RET_ERRNO | EPERM);
		} else if (!strcmp(argv[i], "--seccomp-kill-wx")) {
			filter_wx();
		} else if (!strcmp(argv[i], "--seccomp-allow-list")) {
			filter_allow_list();
		} else if (!strcmp(argv[i], "--loader-waits") && i + 1 < argc) {
			loader_waits(argv[++i]);
		} else if (!strcmp(argv[i], "--usr1-raw")) {
			struct sigaction sa = { .sa_handler = on_usr1 };
			sigaction(SIGUSR1, &sa, NULL);
			start_thread(raw_waiter, 0);
		} else if (!strcmp(argv[i], "--waits-in-handler")) {
			waits_in_handler();
		} else if (!strcmp(argv[i], "--stale-frame")) {
			start_thread(stale_frame, 0);
		} else if (!strcmp(argv[i], "--sleeper")) {
			start_thread(sleeper, 0);
		} else if (!strcmp(argv[i], "--vfork")) {
			start_thread(vforker, 0);
		} else if (!strcmp(argv[i], "--storm") || !strcmp(argv[i], "--usr1")) {
			struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
			sigaction(SIGUSR1, &sa, NULL);
			if (!strcmp(argv[i], "--storm"))
				start_thread(storm, 0);
		} else if (!strcmp(argv[i], "--hide") && i + 1 < argc) {
			hide(argv[++i]);
		} else {
			fprintf(stderr, "hostile_target: unknown argument %s\n", argv[i]);
			return 2;
		}
	}
	snprintf(msg, sizeof(msg), "ready %d\n", (int)getpid());
	say(msg);
	if (in_malloc)
		handler_in_malloc();
	while (command(line, sizeof(line))) {
		if (!strncmp(line, "burst ", 6)) {
			burst(atol(line + 6));
			snprintf(msg, sizeof(msg), "burst %ld\n", atol(line + 6));
		} else if (!strncmp(line, "dlopen ", 7)) {
			if (dlopen(line + 7, RTLD_NOW))
				snprintf(msg, sizeof(msg), "dlopen ok\n");
			else
				snprintf(msg, sizeof(msg), "dlopen failed: %s\n", dlerror());
		} else if (!strcmp(line, "release")) {
			if (write(gate[1], "", 1) != 1)
				return 13;
			continue;
		} else if (!strcmp(line, "ping")) {
			snprintf(msg, sizeof(msg), "pong\n");
		} else {
			snprintf(msg, sizeof(msg), "what? %s\n", line);
		}
		say(msg);
	}
	return 0;
}
