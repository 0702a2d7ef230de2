/*
 * libc's own sigaction, for every call the library makes.  The library
 * interposes sigaction and signal (kernel/sigmask.c) for the application;
 * its own calls must not go through those interposers, or a trap that is
 * not ours would be "chained" by re-installing our handler instead of the
 * default action.
 */
#ifndef DJP_LIB_REAL_SIGNAL_H
#define DJP_LIB_REAL_SIGNAL_H

#include <signal.h>
#include <stdbool.h>

/* libc's definition of `name`, the one our interposers stand in front
 * of: the next object's (dlsym RTLD_NEXT), or, when the library was loaded
 * after libc (a dependency of a preloaded or dlopen'd library: nothing
 * after us has it), libc's own; never our own interposer.  NULL when
 * neither has it. */
void *djp_libc_sym(const char *name);

/* sigaction(2) of the object after ours (libc), resolved before main and
 * async-signal-safe from then on; -1 with errno set on failure. */
int djp_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/*
 * Signals the library keeps its own handler on: SIGTRAP (int3 probes,
 * arch/x86/trap.c), and SIGSEGV and SIGBUS once the safe string copy is on
 * (kernel/safe_copy.c).  The handler stays installed; the application's
 * sigaction for such a signal (interposed, kernel/sigmask.c) is recorded as
 * the action ours forwards to what is not ours.
 */
typedef void (*djp_sig_handler_fn)(int, siginfo_t *, void *);

/* Install fn for sig (SA_SIGINFO | SA_NODEFER | SA_RESTART, and SA_ONSTACK
 * when the application's handler has it, or for SIGTRAP); what was
 * installed becomes the application's action, unless the application
 * already told us one.  0 or -errno. */
int djp_keep_signal(int sig, djp_sig_handler_fn fn);
/* True once djp_keep_signal(sig) succeeded. */
bool djp_signal_kept(int sig);
/* The application's sigaction(sig, act, old) for a kept signal: recorded,
 * ours stays.  Returns 0. */
int djp_kept_app_sigaction(int sig, const struct sigaction *act, struct sigaction *old);
/* Hand a signal that is not ours to the application's action as the
 * kernel would have delivered it (its sa_flags and sa_mask); with none
 * (SIG_DFL), or ignored when the kernel forces it, die as the process
 * would have died without us. */
void djp_kept_forward(int sig, siginfo_t *info, void *uc);
/* sig (the engine's signal) is never blocked while a forwarded handler
 * runs, whatever its sa_mask; SIGTRAP never is either. */
void djp_keep_open(int sig);
/* Stop keeping sig: the application's sigaction reaches the kernel again,
 * and where our handler fn is still installed the application's recorded
 * action replaces it.  For a handler the program replaced by the raw
 * system call, which no interposer sees. */
void djp_release_signal(int sig, djp_sig_handler_fn fn);

/* Set while a forwarded handler runs with SIGSEGV or SIGBUS blocked in
 * this thread (cleared when it returns, not when it leaves by a jump): a
 * fault then kills, so nothing of ours may fault on purpose. */
extern __thread bool djp_faults_masked __attribute__((tls_model("initial-exec")));
/* Whether this thread blocks SIGSEGV or SIGBUS now (a system call);
 * async-signal-safe. */
bool djp_faults_blocked_now(void);

#endif
