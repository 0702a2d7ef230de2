/*
 * The engine lock and its holder.
 *
 * Every change of probes, sites and text happens under one mutex,
 * djp_engine_lock, taken by the entry points (connect, disconnect, the
 * dlopen and dlclose interposers, the agent's periodic look) and by no
 * function below them.  Those functions say that they need it with
 * DJP_LOCK_HELD (kernel/lock.h), which checks a thread-local mark rather
 * than the mutex: a mutex knows no owner that a signal handler could ask
 * for without a system call, and the same mark is what lets connect and
 * disconnect called from a signal handler that interrupted this thread
 * inside the engine refuse (-EDEADLK) instead of waiting on a lock their
 * own thread holds.  The mark is set before the lock is taken and cleared
 * after it is released, so no moment of holding it is unmarked (at worst
 * a handler in those instants is refused needlessly).
 *
 * fork's handlers take and release the mutex itself around fork (the
 * child unlocks it); nothing they run asks for the mark.
 */
#include <stdio.h>
#include <stdlib.h>

#include "kernel/lock.h"

pthread_mutex_t djp_engine_lock = PTHREAD_MUTEX_INITIALIZER;
__thread volatile sig_atomic_t djp_engine_lock_mine;

void djp_engine_lock_take(void)
{
	djp_engine_lock_mine = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	pthread_mutex_lock(&djp_engine_lock);
}

void djp_engine_lock_release(void)
{
	pthread_mutex_unlock(&djp_engine_lock);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	djp_engine_lock_mine = 0;
}

void djp_engine_lock_not_held(const char *func)
{
	fprintf(stderr, "djprobe: %s called without the engine lock\n", func);
	abort();
}
