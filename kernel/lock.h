/*
 * The engine lock: one global mutex (the kernel's text_mutex and
 * kprobe_mutex in one) that serialises every change of probes, sites and
 * text.  kernel/lock.c has how it is held and checked.
 */
#ifndef DJP_KERNEL_LOCK_H
#define DJP_KERNEL_LOCK_H

#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

extern pthread_mutex_t djp_engine_lock;
/* Take and release djp_engine_lock, marking this thread as its holder
 * (connect and disconnect from a signal handler then return -EDEADLK). */
void djp_engine_lock_take(void);
void djp_engine_lock_release(void);
/* Set while this thread holds the lock, or is taking it (kernel/lock.c). */
extern __thread volatile sig_atomic_t djp_engine_lock_mine;

/* A function that must be called with the engine lock held says so with
 * this at its top: without the lock it reports the function and aborts,
 * before it touches anything (a batch run beside another would tear the
 * text).  One thread-local load and a branch. */
#define DJP_LOCK_HELD()                                                                  \
	do {                                                                             \
		if (__builtin_expect(!djp_engine_lock_mine, 0))                            \
			djp_engine_lock_not_held(__func__);                              \
	} while (0)
__attribute__((noreturn, cold)) void djp_engine_lock_not_held(const char *func);

#endif
