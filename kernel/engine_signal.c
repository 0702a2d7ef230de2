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
 * SIGTRAP.  Its number is kernel/sigmask.c's, where the senders (rcu.c,
 * threads_check.c) ask for it too: the handler here answers for them, and
 * sits above them.  SA_RESTART, so that a read or a futex wait without a
 * timeout it lands in is restarted; it is sent only to a thread
 * found inside a section long after it should have left.
 */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <ucontext.h>

#include "kernel/arming.h"
#include "kernel/engine.h"
#include "kernel/rcu.h"
#include "lib/real_signal.h"

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

int djp_engine_signal_init(void)
{
	struct sigaction sa;
	int engine_sig = djp_engine_signal();
	if (!engine_sig)
		return -EINVAL;
	djp_keep_open(engine_sig); /* also inside a forwarded handler */
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = engine_signal_handler;
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return djp_real_sigaction(engine_sig, &sa, NULL) ? -errno : 0;
}
