/*
 * libc's sigaction, found once with dlsym(RTLD_NEXT), as the mask
 * interposers find theirs.  RTLD_NEXT from this object is the next one in
 * the lookup order after it, whether the library is a shared object
 * (preloaded or linked) or an archive linked into the executable: libc in
 * every case, never our own interposer.  The look-up runs in a constructor,
 * so a call from a signal handler (the trap handler chaining a trap that is
 * not ours) does not run dlsym, which is not async-signal-safe; the lazy
 * look-up covers a call from another constructor that runs before ours.
 *
 * Kept signals.  For the signals the library must keep handling (SIGTRAP,
 * and SIGSEGV/SIGBUS for the safe copy) our handler stays installed and the
 * application's sigaction is recorded instead (kernel/sigmask.c calls
 * djp_kept_app_sigaction).  What is not ours goes to the recorded action
 * the way the kernel would have delivered it (get_signal, signal_delivered):
 *
 *  - the default action: the default restored and the signal made to
 *    happen again: a fault by returning to the faulting instruction, which
 *    faults again and kills with the same siginfo and core dump as without
 *    us; anything else by raise();
 *  - ignored: nothing, except for a synchronous fault (a kernel-raised
 *    SIGSEGV, SIGBUS, SIGILL, SIGFPE or SIGTRAP), which the kernel forces:
 *    an ignored one kills with the default action (force_sig_info), as
 *    does one the thread blocks, which the kernel kills itself;
 *  - a handler: SA_RESETHAND puts the default back before it runs (a
 *    crash reporter's handler that returns then dies by the fault it
 *    reported, once); it runs with its sa_mask blocked, and its own signal
 *    too unless SA_NODEFER (a fault inside it then kills), restored when it
 *    returns, and with the siginfo and context we got when SA_SIGINFO.  On
 *    the stack the kernel would have chosen: ours is installed with
 *    SA_ONSTACK as the application's handler has it (SIGTRAP's always),
 *    so it and the handler it calls run on the alternate stack, or on the
 *    interrupted one, as that handler would have.  SIGTRAP and the
 *    engine's signal are never blocked (an int3 probe inside would kill;
 *    a grace period could not ask the thread), also when a handler
 *    installed before the library was loaded has them in its sa_mask.
 *
 * While a forwarded handler blocks SIGSEGV or SIGBUS, the thread says so
 * (djp_faults_masked): the fast string copy must not fault then, and takes
 * the system call instead (kernel/safe_copy.c).  A handler that leaves by
 * siglongjmp leaves the word set; the copy then reads the real mask.
 *
 * The record is a plain struct copied whole: a sigaction racing a signal is
 * as racy as it is without us.
 */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/real_signal.h"

__thread bool djp_faults_masked __attribute__((tls_model("initial-exec")));

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction;

/* (When nothing after us has it, we come after libc in the global scope,
 * or are not in it: the first definition there is libc's, never ours.
 * A handle of libc's own is no use: glibc gives a library loaded as a
 * dependency no scope of its own to search.) */
void *djp_libc_sym(const char *name)
{
	void *fn = dlsym(RTLD_NEXT, name);
	Dl_info in_fn, in_us;
	if (!fn && (fn = dlsym(RTLD_DEFAULT, name)) && dladdr(fn, &in_fn) &&
	    dladdr((void *)djp_libc_sym, &in_us) && in_fn.dli_fbase == in_us.dli_fbase)
		fn = NULL; /* our interposer */
	return fn;
}

static sigaction_fn resolve(void)
{
	sigaction_fn fn = __atomic_load_n(&real_sigaction, __ATOMIC_ACQUIRE);

	if (!fn) {
		fn = (sigaction_fn)djp_libc_sym("sigaction");
		__atomic_store_n(&real_sigaction, fn, __ATOMIC_RELEASE);
	}
	return fn;
}

__attribute__((constructor(101))) static void real_signal_init(void)
{
	resolve();
}

int djp_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	sigaction_fn fn = resolve();

	if (!fn) {
		errno = ENOSYS;
		return -1;
	}
	return fn(sig, act, old);
}

static struct {
	struct sigaction app; /* what the application asked for */
	bool app_set, kept;
	djp_sig_handler_fn fn; /* ours */
	bool onstack;	       /* ours is installed SA_ONSTACK */
} kept[NSIG];

/* Ours runs where the application's would: on the alternate stack when
 * its handler asked for it (or it has none: a default action loses
 * nothing there), on the interrupted stack when it did not, as the kernel
 * would have run it.  SIGTRAP always on it: an int3 probe's hit is ours. */
static bool want_onstack(int sig)
{
	const struct sigaction *a = &kept[sig].app;
	return sig == SIGTRAP || !kept[sig].app_set || a->sa_handler == SIG_DFL || a->sa_handler == SIG_IGN ||
	       (a->sa_flags & SA_ONSTACK);
}

static int install(int sig, struct sigaction *old)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = kept[sig].fn;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_RESTART;
	kept[sig].onstack = want_onstack(sig);
	if (kept[sig].onstack)
		sa.sa_flags |= SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	return djp_real_sigaction(sig, &sa, old) ? -errno : 0;
}

int djp_keep_signal(int sig, djp_sig_handler_fn fn)
{
	struct sigaction old;
	int err;

	if (sig <= 0 || sig >= NSIG)
		return -EINVAL;
	kept[sig].fn = fn;
	if ((err = install(sig, &old)))
		return err;
	if (!kept[sig].app_set) {
		kept[sig].app = old;
		kept[sig].app_set = true;
		if (want_onstack(sig) != kept[sig].onstack)
			install(sig, NULL);
	}
	__atomic_store_n(&kept[sig].kept, true, __ATOMIC_RELEASE);
	return 0;
}

bool djp_signal_kept(int sig)
{
	return sig > 0 && sig < NSIG && __atomic_load_n(&kept[sig].kept, __ATOMIC_ACQUIRE);
}

int djp_kept_app_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	if (old)
		*old = kept[sig].app;
	if (act) {
		kept[sig].app = *act;
		kept[sig].app_set = true;
		if (want_onstack(sig) != kept[sig].onstack)
			install(sig, NULL);
	}
	return 0;
}

static int open_sig; /* the engine's signal: never blocked either */

void djp_keep_open(int sig)
{
	open_sig = sig;
}

/* A fault that returning to its instruction raises again. */
static bool is_fault(int sig, const siginfo_t *info)
{
	return (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) && info && info->si_code > 0;
}

/* One the kernel forces (force_sig_fault): ignored or blocked, it kills. */
static bool is_forced(int sig, const siginfo_t *info)
{
	return is_fault(sig, info) || (sig == SIGTRAP && info && info->si_code > 0);
}

static void die_by_default(int sig, const siginfo_t *info)
{
	/* the real sigaction: our interposer would keep our handler */
	struct sigaction dfl;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	kept[sig].app.sa_handler = SIG_DFL;
	djp_real_sigaction(sig, &dfl, NULL);
	if (!is_fault(sig, info))
		raise(sig);
}

void djp_kept_forward(int sig, siginfo_t *info, void *uc)
{
	struct sigaction a = kept[sig].app;
	sigset_t block, old;
	bool masked = djp_faults_masked;

	if (!kept[sig].app_set || a.sa_handler == SIG_DFL || (a.sa_handler == SIG_IGN && is_forced(sig, info))) {
		die_by_default(sig, info);
		return;
	}
	if (a.sa_handler == SIG_IGN)
		return;
	if (a.sa_flags & SA_RESETHAND)
		kept[sig].app.sa_handler = SIG_DFL;
	block = a.sa_mask;
	if (!(a.sa_flags & SA_NODEFER))
		sigaddset(&block, sig);
	sigdelset(&block, SIGTRAP);
	if (open_sig)
		sigdelset(&block, open_sig);
	if (sigismember(&block, SIGSEGV) == 1 || sigismember(&block, SIGBUS) == 1)
		djp_faults_masked = true;
	syscall(SYS_rt_sigprocmask, SIG_BLOCK, &block, &old, _NSIG / 8);
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, info, uc);
	else
		a.sa_handler(sig);
	syscall(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, _NSIG / 8);
	djp_faults_masked = masked;
}

/* On a probe's hit path (the ring's copy, the recorder's promise of
 * general registers only: kernel/agent/recorder.c): no libc but the
 * system call, the kernel's 64-bit mask read as it is. */
__attribute__((target("general-regs-only"))) bool djp_faults_blocked_now(void)
{
	uint64_t cur = 0;
	if (syscall(SYS_rt_sigprocmask, SIG_BLOCK, NULL, &cur, sizeof(cur)))
		return true;
	return cur & (1ull << (SIGSEGV - 1) | 1ull << (SIGBUS - 1));
}

void djp_release_signal(int sig, djp_sig_handler_fn fn)
{
	struct sigaction now;

	if (!djp_signal_kept(sig))
		return;
	__atomic_store_n(&kept[sig].kept, false, __ATOMIC_RELEASE);
	if (djp_real_sigaction(sig, NULL, &now) || now.sa_sigaction != fn)
		return; /* replaced behind our back: the program's now */
	if (!kept[sig].app_set) {
		memset(&now, 0, sizeof(now));
		now.sa_handler = SIG_DFL;
		sigemptyset(&now.sa_mask);
		kept[sig].app = now;
	}
	djp_real_sigaction(sig, &kept[sig].app, NULL);
}
