/*
 * Keeping SIGTRAP and the engine's signal deliverable.
 *
 * A thread that blocks SIGTRAP and executes an int3 is killed by the kernel
 * (force_sig resets the handler to the default).  Threads that block every
 * signal are common (sigwait loops, runtimes), so sigprocmask and
 * pthread_sigmask are interposed here: SIG_BLOCK and SIG_SETMASK never
 * block SIGTRAP or the engine's signal.  sigaction and signal are interposed
 * for SIGTRAP only: the application's handler becomes the one our SIGTRAP
 * handler chains to, and ours stays installed; and no handler's sa_mask may
 * block SIGTRAP while it runs.
 *
 * A thread can still block them behind our back (the raw system call, or a
 * mask inherited before we were loaded), so before every batch the engine
 * reads SigBlk from /proc/self/task/TID/status and refuses to arm with
 * -EDEADLK, naming nothing it cannot prove: never a crash.
 *
 * SIGSEGV and SIGBUS join them once the safe string copy is on
 * (kernel/safe_copy.c): a fault in a thread that blocks the signal kills
 * the process whatever the handler, so they are kept unblocked and their
 * handler kept installed in the same way.  Blocking a fault signal has no
 * use but against kill(); the application's own faults are delivered as
 * before.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/arming.h"
#include "kernel/interpose.h"
#include "lib/real_signal.h"

static int engine_sig;

/* The engine's signal (kernel/engine_signal.c), known before init too:
 * sigprocmask must keep it unblocked from the start. */
int djp_engine_signal(void)
{
	if (!engine_sig) {
		const char *env = getenv("DJP_SIGNAL");
		int sig;
		if (!env)
			env = getenv("DJP_FREEZE_SIGNAL");
		sig = env ? atoi(env) : SIGRTMAX - 3;
		engine_sig = sig >= SIGRTMIN && sig <= SIGRTMAX ? sig : -1;
	}
	return engine_sig > 0 ? engine_sig : 0;
}

/* What no handler's sa_mask may block: the engine's signals. */
static void clean_engine(sigset_t *set)
{
	sigdelset(set, SIGTRAP);
	if (djp_engine_signal())
		sigdelset(set, djp_engine_signal());
}

static void clean(sigset_t *set)
{
	clean_engine(set);
	if (djp_signal_kept(SIGSEGV)) {
		sigdelset(set, SIGSEGV);
		sigdelset(set, SIGBUS);
	}
}

static void *next_symbol(const char *name)
{
	return djp_libc_sym(name);
}

/* The mask call `name` of the next object, with SIGTRAP and the freeze
 * signal taken out of what SIG_BLOCK and SIG_SETMASK would block. */
static int mask_call(int (**real)(int, const sigset_t *, sigset_t *), const char *name, int how,
		     const sigset_t *set, sigset_t *old)
{
	sigset_t copy;
	if (!*real)
		*real = (int (*)(int, const sigset_t *, sigset_t *))next_symbol(name);
	if (set && how != SIG_UNBLOCK) {
		copy = *set;
		clean(&copy);
		set = &copy;
	}
	return (*real)(how, set, old);
}

DJP_API int sigprocmask(int how, const sigset_t *set, sigset_t *old)
{
	static int (*real)(int, const sigset_t *, sigset_t *);
	return mask_call(&real, "sigprocmask", how, set, old);
}

DJP_API int pthread_sigmask(int how, const sigset_t *set, sigset_t *old)
{
	static int (*real)(int, const sigset_t *, sigset_t *);
	return mask_call(&real, "pthread_sigmask", how, set, old);
}

DJP_API int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction copy;
	bool kept = djp_signal_kept(sig);
	if (act) {
		copy = *act;
		/* a kept signal's handler is run by our forwarder, which
		 * blocks SIGSEGV and SIGBUS as asked and knows it */
		if (kept)
			clean_engine(&copy.sa_mask);
		else
			clean(&copy.sa_mask);
		act = &copy;
	}
	if (kept)
		return djp_kept_app_sigaction(sig, act, old);
	return djp_real_sigaction(sig, act, old);
}

/* The interposers by names that resolve to them from inside the library
 * too: the exported names resolve to libc's when the library was injected
 * (kernel/got_patch.c points the program's GOT slots at these). */
extern __typeof(sigprocmask) djp__sigprocmask __attribute__((alias("sigprocmask"), copy(sigprocmask), visibility("hidden")));
extern __typeof(pthread_sigmask) djp__pthread_sigmask __attribute__((alias("pthread_sigmask"), copy(pthread_sigmask), visibility("hidden")));
extern __typeof(sigaction) djp__sigaction __attribute__((alias("sigaction"), copy(sigaction), visibility("hidden")));

DJP_API sighandler_t signal(int sig, sighandler_t handler)
{
	struct sigaction sa, old;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (djp__sigaction(sig, &sa, &old)) /* ours, also when injected */
		return SIG_ERR;
	return old.sa_handler;
}

/* One pass over the threads: -EDEADLK when one blocks a signal of `bad`
 * (bit sig - 1). */
static int sigblk_scan(unsigned long long bad)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *de;
	int err = 0;
	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		char path[300], line[256];
		FILE *f;
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", de->d_name);
		if (!(f = fopen(path, "re")))
			continue; /* the thread exited */
		while (fgets(line, sizeof(line), f)) {
			unsigned long long m;
			if (sscanf(line, "SigBlk: %llx", &m) == 1) {
				if (m & bad)
					err = -EDEADLK;
				break;
			}
		}
		fclose(f);
	}
	closedir(d);
	return err;
}

/*
 * -EDEADLK when some thread keeps SIGTRAP or the engine's signal blocked.  A
 * thread that glibc is still creating runs with every signal blocked for a
 * moment, and so does one on its way out of a signal handler; only a block
 * that lasts (100 ms) is a refusal.
 */
int djp_check_sigblk(void)
{
	unsigned long long bad = 1ull << (SIGTRAP - 1);
	if (djp_engine_signal())
		bad |= 1ull << (djp_engine_signal() - 1);
	return djp_check_blocked(bad);
}

int djp_sigblk_now(unsigned long long bad)
{
	return sigblk_scan(bad);
}

int djp_check_blocked(unsigned long long bad)
{
	int err = 0;
	for (int i = 0; i < 50; i++) {
		if ((err = sigblk_scan(bad)) != -EDEADLK)
			return err;
		usleep(2000);
	}
	return err;
}

extern __typeof(signal) djp__signal __attribute__((alias("signal"), copy(signal), visibility("hidden")));
