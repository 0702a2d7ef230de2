/*
 * Reading strings at addresses the program hands to a probe, in the
 * program, without ever killing it for a bad address.
 *
 * A recorder that copies a %s argument or a string a script asked for
 * (user_string) reads memory it knows nothing about: the pointer may be
 * NULL, freed, unmapped by another thread a moment ago, or past the end of
 * a file mapping.  Two ways are fault-safe:
 *
 *  - process_vm_readv() on our own thread: the kernel turns a fault into
 *    EFAULT.  Always correct, and about 0.3-0.5 us a string: a system call
 *    with the page walk of get_user_pages.  The ring uses it by default
 *    (lib/ring.c).
 *  - a plain copy whose every load is an instruction of one routine
 *    (arch/x86/copy_str.S), with a SIGSEGV/SIGBUS handler that, when the
 *    faulting instruction is one of those, resumes at the routine's fixup
 *    and makes it return "faulted": the kernel's exception tables, in user
 *    space.  A few nanoseconds a string.
 *
 * The second is only safe while three things hold, and this file turns it
 * on only when it can see that they do:
 *  1. our handler stays installed: the library's sigaction interposer must
 *     be what the program calls (the loader binds it so when the library is
 *     preloaded or linked; an injected library rewrites the program's GOT,
 *     kernel/got_patch.c), so that a sigaction(SIGSEGV) of the program is
 *     recorded as the action we chain to instead of replacing ours
 *     (lib/real_signal.c);
 *  2. no thread blocks SIGSEGV or SIGBUS: the kernel kills a thread that
 *     faults with the signal blocked, whatever the handler.  The mask
 *     interposers keep both unblocked from the moment the handler is in
 *     (kernel/sigmask.c); the threads' masks from before are read once
 *     from /proc (SigBlk);
 *  3. no handler installed before that blocks them while it runs (its
 *     sa_mask): a probe hit inside such a handler would fault blocked.
 *
 * If any does not hold, the ring keeps process_vm_readv: slower, never
 * wrong; and the handler is taken out again, the program's SIGSEGV and
 * SIGBUS left as it set them.  The stack walker's word reads (kernel/unwind.c) go the same way:
 * djp_arch_read_word lies in the same fixup range, and djp_safe_copy_on()
 * says which to use.  Turning it on happens once, the first time a session asks for a
 * string (djp_safe_copy_enable), not at load: a program traced without
 * strings keeps its SIGSEGV disposition untouched.
 *
 * The handler itself: a fault whose %rip is inside the copy routine, or
 * is one of the inline loads of the djp_extable section (a typed access's
 * loads in the recorder's fast entries, arch_load_safe: each resumes at
 * its own fixup), and that the kernel raised (si_code > 0; a kill() is
 * never ours) is ours;
 * anything else goes to the program's handler as the kernel would have
 * run it, or, with none, kills the process exactly as it would have died
 * without us (lib/real_signal.c, djp_kept_forward).  While such a handler
 * runs with SIGSEGV or SIGBUS blocked (its own signal, without
 * SA_NODEFER), a fault would kill: the copy declines in that thread and
 * the ring makes the system call (djp_faults_masked).
 *
 * A handler replaced behind the interposer's back.  A program may install
 * its own SIGSEGV handler with the raw rt_sigaction system call (Go's
 * runtime does), which no interposer sees; from then on a fault of the copy
 * would be the program's, which may well exit.  So whether ours is still
 * the kernel's is asked (one rt_sigaction query per signal) each time a
 * session asks for strings (djp_safe_copy_enable) and on the agent's
 * periodic look (djp_safe_copy_check, every 100 ms while probes are
 * connected).  Once it is gone the copy is off for good: the ring goes back
 * to process_vm_readv, the stack walker to its system call, and the signal
 * taken is handed back (lib/real_signal.c, djp_release_signal) so that
 * the program's sigaction for it reaches the kernel again.  What remains is the
 * time between the replacement and the next look: a string copy that
 * faults then reaches the program's handler.  Asking before every copy
 * would close it, at the price of a system call a string (measured on a
 * loaded 2-core machine: 350-390 ns a query, against 3 ns the copy and
 * 1.4-2 us a process_vm_readv of 23 bytes), which is what the fast copy
 * is there to avoid.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include "kernel/arming.h"
#include "kernel/engine.h"
#include "kernel/interpose.h"
#include "lib/real_signal.h"
#include "lib/ring.h"

extern uint64_t djp_arch_copy_str(char *dst, const char *src, uint64_t max);
extern const char djp__copy_str_begin[], djp__copy_str_end[], djp__copy_str_fixup[];
/* The inline loads' table (arch_load_safe), gathered by the linker; weak:
 * an object without any has no section and both are 0. */
extern const struct arch_extable __start_djp_extable[] __attribute__((weak, visibility("hidden")));
extern const struct arch_extable __stop_djp_extable[] __attribute__((weak, visibility("hidden")));

static void fault_handler(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;
	uintptr_t rip = (uintptr_t)uc->uc_mcontext.gregs[ARCH_GREG_PC], fixup;

	if (info && info->si_code > 0 && rip >= (uintptr_t)djp__copy_str_begin && rip < (uintptr_t)djp__copy_str_end) {
		uc->uc_mcontext.gregs[ARCH_GREG_PC] = (greg_t)(uintptr_t)djp__copy_str_fixup;
		return;
	}
	if (info && info->si_code > 0 && (fixup = arch_extable_fixup(__start_djp_extable, __stop_djp_extable, rip))) {
		uc->uc_mcontext.gregs[ARCH_GREG_PC] = (greg_t)fixup;
		return;
	}
	djp_kept_forward(sig, info, ucv);
}

/* 3: a handler whose sa_mask holds SIGSEGV or SIGBUS. */
static bool handler_blocks_faults(void)
{
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction a;
		if (sig == SIGKILL || sig == SIGSTOP || djp_real_sigaction(sig, NULL, &a))
			continue;
		if (a.sa_handler == SIG_DFL || a.sa_handler == SIG_IGN)
			continue;
		if (sigismember(&a.sa_mask, SIGSEGV) == 1 || sigismember(&a.sa_mask, SIGBUS) == 1)
			return true;
	}
	return false;
}

static pthread_mutex_t enable_lock = PTHREAD_MUTEX_INITIALIZER;
int djp__safe_copy_state; /* 0 not tried, 1 on, -errno refused or given up (engine.h) */

/* The ring's copy: the routine's, unless a forwarded handler of this
 * thread blocks the fault signals now. */
__attribute__((target("general-regs-only"))) static uint64_t ring_copy(char *dst, const char *src, uint64_t max)
{
	if (__atomic_load_n(&djp__safe_copy_state, __ATOMIC_ACQUIRE) != 1 || (djp_faults_masked && djp_faults_blocked_now()))
		return DJP_RING_COPY_DECLINED;
	return djp_arch_copy_str(dst, src, max);
}

/* Ours is the kernel's handler for sig. */
static bool handler_in_place(int sig)
{
	struct sigaction a;
	return !djp_real_sigaction(sig, NULL, &a) && (a.sa_flags & SA_SIGINFO) && a.sa_sigaction == fault_handler;
}

/* Under enable_lock: off for good when the program took the handler of
 * either signal.  That one is the program's from now on; the other stays
 * ours, forwarding as before (taking it out now could hand a copy still
 * running in another thread to the program's disposition). */
static void check_locked(void)
{
	bool segv, bus;
	if (djp__safe_copy_state != 1)
		return;
	segv = handler_in_place(SIGSEGV);
	bus = handler_in_place(SIGBUS);
	if (segv && bus)
		return;
	__atomic_store_n(&djp__safe_copy_state, -EBUSY, __ATOMIC_RELEASE);
	djp_ring_set_fast_copy(NULL);
	if (!segv)
		djp_release_signal(SIGSEGV, fault_handler);
	if (!bus)
		djp_release_signal(SIGBUS, fault_handler);
}

void djp_safe_copy_check(void)
{
	if (__atomic_load_n(&djp__safe_copy_state, __ATOMIC_ACQUIRE) != 1)
		return;
	pthread_mutex_lock(&enable_lock);
	check_locked();
	pthread_mutex_unlock(&enable_lock);
}

int djp_safe_copy_enable(void)
{
	int ret;

	pthread_mutex_lock(&enable_lock);
	if (!djp__safe_copy_state) {
		unsigned long long faults = 1ull << (SIGSEGV - 1) | 1ull << (SIGBUS - 1);
		if (!djp_interposing())
			ret = -ENOTSUP;
		else if ((ret = djp_keep_signal(SIGSEGV, fault_handler)) == 0 &&
			 (ret = djp_keep_signal(SIGBUS, fault_handler)) == 0) {
			/* from here on the interposers keep both unblocked:
			 * what is left to see is the state from before */
			if ((ret = djp_check_blocked(faults)) == 0 && handler_blocks_faults())
				ret = -EDEADLK;
		}
		__atomic_store_n(&djp__safe_copy_state, ret ? ret : 1, __ATOMIC_RELEASE);
		if (!ret) {
			djp_ring_set_fast_copy(ring_copy);
		} else {
			/* refused: the program's dispositions as they were */
			djp_release_signal(SIGSEGV, fault_handler);
			djp_release_signal(SIGBUS, fault_handler);
		}
	} else {
		check_locked();
	}
	ret = djp__safe_copy_state < 0 ? djp__safe_copy_state : 0;
	pthread_mutex_unlock(&enable_lock);
	return ret;
}

bool djp_safe_copy_on(void)
{
	return __atomic_load_n(&djp__safe_copy_state, __ATOMIC_ACQUIRE) == 1 && !(djp_faults_masked && djp_faults_blocked_now());
}
