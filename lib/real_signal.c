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
 * djp_kept_app_sigaction).  What is not ours goes to the recorded action:
 * ignored, called (with the siginfo and context we got), or, for the
 * default action, the default restored and the signal made to happen again:
 * a fault by returning to the faulting instruction, which faults again and
 * kills with the same siginfo and core dump as without us; anything else by
 * raise().  The record is a plain struct copied whole: a sigaction racing
 * a signal is as racy as it is without us.
 */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <string.h>

#include "lib/real_signal.h"

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
} kept[NSIG];

int djp_keep_signal(int sig, djp_sig_handler_fn fn)
{
	struct sigaction sa, old;

	if (sig <= 0 || sig >= NSIG)
		return -EINVAL;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (djp_real_sigaction(sig, &sa, &old))
		return -errno;
	if (!kept[sig].app_set) {
		kept[sig].app = old;
		kept[sig].app_set = true;
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
	}
	return 0;
}

static bool is_fault(int sig, const siginfo_t *info)
{
	return (sig == SIGSEGV || sig == SIGBUS || sig == SIGILL || sig == SIGFPE) && info && info->si_code > 0;
}

void djp_kept_forward(int sig, siginfo_t *info, void *uc)
{
	struct sigaction a = kept[sig].app;

	if (!kept[sig].app_set || a.sa_handler == SIG_DFL) {
		/* the real sigaction: our interposer would keep our handler */
		struct sigaction dfl;
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		djp_real_sigaction(sig, &dfl, NULL);
		if (!is_fault(sig, info))
			raise(sig);
		return;
	}
	if (a.sa_handler == SIG_IGN)
		return;
	if (a.sa_flags & SA_SIGINFO)
		a.sa_sigaction(sig, info, uc);
	else
		a.sa_handler(sig);
}
