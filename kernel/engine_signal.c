/*
 * The engine's signal: how a grace period asks a thread a question only the
 * thread can answer.
 *
 * A thread that left one of our read-side sections by a jump (siglongjmp
 * out of a handler, or out of a signal handler that interrupted one) looks,
 * from outside, like a thread still inside it.  The grace period's writer
 * sends such a thread this signal (kernel/rcu.c, after it has waited a
 * while); the handler looks at where the thread was interrupted and ends
 * the section if its frame is gone (djp_rcu_recover_interrupted).  The
 * one other question: before an instruction probe becomes a jump over
 * several instructions, whether the thread is inside them
 * (kernel/threads_check.c).  The serialisation after a text write never
 * signals anyone (kernel/sync.c): marker batches never cause an EINTR.
 *
 * The signal is a reserved real-time one (SIGRTMAX-3 unless DJP_SIGNAL, or
 * its older name DJP_FREEZE_SIGNAL, names another), kept unblockable like
 * SIGTRAP (kernel/sigmask.c).  SA_RESTART, so that a read or a futex wait
 * without a timeout it lands in is restarted; it is sent only to a thread
 * found inside a section long after it should have left.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include "kernel/arming.h"
#include "kernel/engine.h"
#include "kernel/rcu.h"
#include "lib/real_signal.h"

static int engine_sig;

static void engine_signal_handler(int sig, siginfo_t *info, void *ucv)
{
	int saved_errno = errno;
	void *q;
	(void)sig;
	(void)info;
	q = djp__quiet_begin(); /* the engine's work, not the program's */
	djp_threads_check_answer(ucv); /* a jump about to be placed asks */
	djp__quiet_end(q);
	djp_rcu_recover_interrupted(ucv);
	errno = saved_errno;
}

/* Known before init too: sigprocmask must keep it unblocked from the start. */
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

int djp_engine_signal_init(void)
{
	struct sigaction sa;
	if (!djp_engine_signal())
		return -EINVAL;
	djp_keep_open(engine_sig); /* also inside a forwarded handler */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = engine_signal_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return djp_real_sigaction(engine_sig, &sa, NULL) ? -errno : 0;
}
