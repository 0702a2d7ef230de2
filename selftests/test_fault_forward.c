/*
 * Faults that are not ours, once the in-process string copy keeps its
 * SIGSEGV/SIGBUS handler (kernel/safe_copy.c): the program's handler runs
 * as the kernel would have run it (lib/real_signal.c, djp_kept_forward),
 * an ignored fault kills, and a handler the program installs with the raw
 * system call takes the copy back to process_vm_readv.  Each case runs in a
 * child, whose _exit code says which check failed.
 */
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "harness.h"
#include "kernel/arming.h"
#include "kernel/engine.h"
#include "lib/real_signal.h"
#include "lib/ring.h"

/* An address that faults, hidden from the compiler's bounds checks. */
static volatile int *bad_address(uintptr_t a)
{
	volatile int *p;
	__asm__("" : "=r"(p) : "0"(a));
	return p;
}

extern uint64_t djp_arch_copy_str(char *dst, const char *src, uint64_t max);

static uint64_t djp_arch_copy_str_for_test(const char *src)
{
	char buf[16];
	return djp_arch_copy_str(buf, src, sizeof(buf));
}

/* A string no load can read. */
static uint64_t unreadable(void)
{
	void *p = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		_exit(87);
	return (uint64_t)(uintptr_t)p;
}

/* fn in a child with the copy on; its wait status.  alarm: a child that
 * loops on a fault ends by SIGALRM instead of hanging the test. */
static int in_child(void (*fn)(void))
{
	int status;
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		alarm(10);
		if (djp_safe_copy_enable())
			_exit(90);
		fn();
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	return status;
}

static void expect_status(int st, int sig, int code)
{
	if (sig ? !WIFSIGNALED(st) || WTERMSIG(st) != sig : !WIFEXITED(st) || WEXITSTATUS(st) != code)
		djp_test_fail(__FILE__, __LINE__, "child status %#x, want %s %d", st, sig ? "signal" : "exit",
			      sig ? sig : code);
}

/* This thread's mask, from the kernel. */
static sigset_t mask_now(void)
{
	sigset_t cur;
	sigemptyset(&cur);
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, _NSIG / 8);
	return cur;
}

static volatile sig_atomic_t calls;

static void returns(int sig)
{
	(void)sig;
	if (++calls > 1)
		_exit(98); /* called again: the fault looped */
}

static void resethand(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = returns;
	sa.sa_flags = SA_RESETHAND;
	sigaction(SIGSEGV, &sa, NULL);
	*bad_address(16) = 1;
	_exit(91);
}

/* A crash reporter's handler that returns: called once, then the fault
 * kills with SIGSEGV, as without us. */
TEST(fault_forward_resethand_handler_runs_once)
{
	expect_status(in_child(resethand), SIGSEGV, 0);
}

static void ignored(void)
{
	signal(SIGSEGV, SIG_IGN);
	*bad_address(16) = 1;
	_exit(91);
}

/* SIGSEGV ignored, then a real fault: the kernel kills such a thread. */
TEST(fault_forward_ignored_fault_kills)
{
	expect_status(in_child(ignored), SIGSEGV, 0);
}

static sigjmp_buf jb;
static uint64_t bad_string;
static volatile sig_atomic_t depth, seen;
static char *alt;

#define ALT_SIZE (64 * 1024)

/* Without SA_NODEFER, with SIGUSR1 in sa_mask: both blocked while it runs,
 * a string copy at a bad address inside it declines the fast copy (a fault
 * would kill now), and it runs on the alternate stack it asked for. */
static void masked_handler(int sig, siginfo_t *info, void *uc)
{
	struct djp_ring_opts o = { .sz = sizeof(o) };
	struct djp_region *r;
	sigset_t cur = mask_now();
	char here;
	(void)sig, (void)uc;
	if (info->si_addr != (void *)(uintptr_t)24)
		_exit(92);
	if (!sigismember(&cur, SIGUSR1) || !sigismember(&cur, SIGSEGV))
		_exit(93);
	if (djp_safe_copy_on())
		_exit(94);
	if (!(r = djp_region_create(&o)) || djp_ring_record(r, 1, &bad_string, 1, 1, 0))
		_exit(95);
	if (&here < alt || &here >= alt + ALT_SIZE)
		_exit(96);
	seen = 1;
	siglongjmp(jb, 1);
}

static void masked(void)
{
	struct sigaction sa;
	stack_t ss = { .ss_size = ALT_SIZE };
	sigset_t cur;

	if (!(alt = ss.ss_sp = malloc(ALT_SIZE)) || sigaltstack(&ss, NULL))
		_exit(89);
	bad_string = unreadable();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = masked_handler;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGUSR1);
	sigaction(SIGSEGV, &sa, NULL);
	if (!sigsetjmp(jb, 1))
		*bad_address(24) = 1;
	cur = mask_now();
	if (!seen || sigismember(&cur, SIGUSR1) || sigismember(&cur, SIGSEGV))
		_exit(97);
	/* out by a jump that restored the mask: the copy is fast again */
	if (!djp_safe_copy_on())
		_exit(88);
}

TEST(fault_forward_handler_mask_and_alternate_stack)
{
	expect_status(in_child(masked), 0, 0);
}

/* Without SA_ONSTACK, on a thread that has an alternate stack: it runs on
 * the stack that faulted, as the kernel would have run it. */
static void main_stack_handler(int sig)
{
	char here;
	(void)sig;
	if (&here >= alt && &here < alt + ALT_SIZE)
		_exit(96);
	seen = 1;
	siglongjmp(jb, 1);
}

static void not_onstack(void)
{
	stack_t ss = { .ss_size = ALT_SIZE };
	if (!(alt = ss.ss_sp = malloc(ALT_SIZE)) || sigaltstack(&ss, NULL))
		_exit(89);
	signal(SIGSEGV, main_stack_handler);
	if (!sigsetjmp(jb, 1))
		*bad_address(24) = 1;
	if (!seen)
		_exit(97);
	/* and the copy's own faults are still caught there */
	if (djp_arch_copy_str_for_test((const char *)(uintptr_t)unreadable()) >> 63 != 1)
		_exit(98);
}

TEST(fault_forward_handler_without_onstack_runs_on_the_faulting_stack)
{
	expect_status(in_child(not_onstack), 0, 0);
}

/* Never reached: the handlers that use it exit (x86-64 wants one). */
static void no_return(void)
{
	_exit(100);
}

/* The kernel's struct sigaction, for the raw system call. */
struct k_sigaction {
	void (*handler)(int);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

/* A handler installed before the library (the raw system call) with
 * every signal in its sa_mask: all blocked while it runs but SIGTRAP and
 * the engine's signal, which an int3 probe and a grace period need. */
static void full_mask_handler(int sig)
{
	sigset_t cur = mask_now();
	(void)sig;
	if (!sigismember(&cur, SIGUSR1) || !sigismember(&cur, SIGSEGV))
		_exit(93);
	if (sigismember(&cur, SIGTRAP) || sigismember(&cur, djp_engine_signal()))
		_exit(94);
	seen = 1;
	siglongjmp(jb, 1);
}

static void full_mask_from_before(void)
{
	struct k_sigaction k = { .handler = full_mask_handler, .mask = ~0ull };
	if (djp_engine_signal_init())
		_exit(88);
	if (syscall(SYS_rt_sigaction, SIGSEGV, &k, NULL, 8))
		_exit(89);
}

static void full_mask(void)
{
	if (!sigsetjmp(jb, 1))
		*bad_address(24) = 1;
	if (!seen)
		_exit(97);
}

TEST(fault_forward_full_mask_keeps_the_engine_signals_open)
{
	int status;
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		alarm(10);
		full_mask_from_before();
		if (djp_safe_copy_enable())
			_exit(90);
		full_mask();
		_exit(0);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	expect_status(status, 0, 0);
}

static void faults_inside(int sig)
{
	(void)sig;
	if (depth++)
		_exit(97); /* entered again: SIGSEGV was not blocked */
	*bad_address(32) = 1;
}

static void fault_in_handler(void)
{
	signal(SIGSEGV, faults_inside);
	*bad_address(16) = 1;
	_exit(91);
}

/* A fault inside a handler that runs with its own signal blocked kills. */
TEST(fault_forward_fault_in_deferring_handler_kills)
{
	expect_status(in_child(fault_in_handler), SIGSEGV, 0);
}

static void nests(int sig)
{
	(void)sig;
	if (depth++)
		siglongjmp(jb, 1);
	*bad_address(32) = 1;
}

static void nodefer(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = nests;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	if (!sigsetjmp(jb, 1))
		*bad_address(16) = 1;
	if (depth != 2)
		_exit(92);
}

/* With SA_NODEFER the handler's own fault reaches it again. */
TEST(fault_forward_nodefer_handler_nests)
{
	expect_status(in_child(nodefer), 0, 0);
}

static void exits_99(int sig)
{
	(void)sig;
	_exit(99);
}

static void raw_replaced(void)
{
	struct k_sigaction k = { .handler = exits_99, .flags = 0x04000000 /* SA_RESTORER */, .restorer = no_return };
	struct djp_ring_opts o = { .sz = sizeof(o) };
	struct djp_region *r;
	struct sigaction now;
	uint64_t arg = unreadable();

	if (syscall(SYS_rt_sigaction, SIGSEGV, &k, NULL, 8))
		_exit(91);
	djp_safe_copy_check(); /* the agent's look */
	if (djp_safe_copy_on() || djp_safe_copy_enable() == 0)
		_exit(92);
	/* a bad string: the system call, not a fault into the program's */
	if (!(r = djp_region_create(&o)) || djp_ring_record(r, 1, &arg, 1, 1, 0))
		_exit(93);
	/* the program's sigaction is its own again */
	if (sigaction(SIGSEGV, NULL, &now) || now.sa_handler != exits_99)
		_exit(94);
	/* and SIGBUS, which it left alone, is still forwarded to what the
	 * program set (the default) */
	if (sigaction(SIGBUS, NULL, &now) || now.sa_handler != SIG_DFL)
		_exit(95);
	if (syscall(SYS_rt_sigaction, SIGBUS, NULL, &k, 8) || k.handler == SIG_DFL)
		_exit(96);
}

/* A SIGSEGV handler put in ours' place by the raw system call: the copy
 * goes back to process_vm_readv and SIGSEGV to the program. */
TEST(fault_forward_raw_handler_takes_the_copy_back)
{
	expect_status(in_child(raw_replaced), 0, 0);
}

static void nothing(const struct djp_hit *hit, void *data)
{
	(void)hit, (void)data;
}

static __attribute__((noinline)) void ff_site(int a)
{
	MARK(ff_trap_site, "a=%d", a);
}

/* SIGTRAP ignored, then an int3 that is not the engine's: the kernel kills
 * a thread whose forced SIGTRAP is ignored, and so do we. */
TEST(fault_forward_ignored_foreign_int3_kills_with_sigtrap)
{
	int status;
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (!pid) {
		alarm(10);
		if (djp_connect("ff_trap_*", nothing, NULL, 0) < 0)
			_exit(90);
		ff_site(1);
		signal(SIGTRAP, SIG_IGN);
		__asm__ volatile("int3");
		_exit(91);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	expect_status(status, SIGTRAP, 0);
}
