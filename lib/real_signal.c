/*
 * libc's sigaction, found once with dlsym(RTLD_NEXT), as the mask
 * interposers find theirs.  RTLD_NEXT from this object is the next one in
 * the lookup order after it, whether the library is a shared object
 * (preloaded or linked) or an archive linked into the executable: libc in
 * every case, never our own interposer.  The look-up runs in a constructor,
 * so a call from a signal handler (the trap handler chaining a trap that is
 * not ours) does not run dlsym, which is not async-signal-safe; the lazy
 * look-up covers a call from another constructor that runs before ours.
 */
#include <dlfcn.h>
#include <errno.h>

#include "lib/real_signal.h"

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static sigaction_fn real_sigaction;

static sigaction_fn resolve(void)
{
	sigaction_fn fn = __atomic_load_n(&real_sigaction, __ATOMIC_ACQUIRE);

	if (!fn) {
		fn = (sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
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
