/*
 * A thread's begin and end, as markers of the library's own.
 *
 * A script's process.thread.begin must fire for a thread that never hits a
 * probe, in that thread, before anything it records; .thread.end in the
 * thread, after everything it records.  The engine sees a thread only at
 * its first hit, so the library interposes pthread_create: the new thread
 * starts in start_wrapper, which sets a value of the library's end key and
 * passes one marker, __djp_thread_begin, before it calls the program's
 * start routine.  The key's destructor passes the other,
 * __djp_thread_end: glibc runs it when the thread returns from its start
 * routine, calls pthread_exit or is cancelled, after the cleanup handlers
 * and C++ thread_local destructors, and before the library's other keys'
 * destructors (lib/init_order.h), so in the ring of its other events.
 *
 * Being markers, they are armed, recorded and disarmed as any marker is:
 * a session that wants them CONNECTs their names (the only patterns that
 * match them: lib/marker_match.h keeps globs off the reserved names), the
 * recorder writes the event into the thread's ring with its tid, and a
 * program nobody traces this way pays a 6-byte NOP at each end of a thread
 * and the small allocation that carries the start routine and its argument
 * into the new thread.
 *
 * What is not seen.  Threads libc starts itself (a SIGEV_THREAD timer's,
 * posix_spawn's helper) and threads made by clone() without pthread_create
 * have no begin and no end: nothing runs in them that the library owns.
 * Threads made before the library came (djp -x injects it into a running
 * program) are not announced either, nor their end.  A thread still
 * running when the process exits (exit(), a fatal signal, exec) passes no
 * end: glibc runs no destructor for it.  A child of fork gets the end key
 * cleared in its one thread, which is the child's main thread now, whose
 * end is the process's.  Where the allocation fails the thread is created
 * as the program asked, unannounced.
 *
 * An injected library makes the program's calls reach this interposer by
 * its GOT (kernel/got_patch.c); the agent's own thread is created through
 * the real function, unannounced.
 */
#define DJP_NO_SDT_NOTE /* the library's own: no USDT probe for other tools */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "djprobe/djprobe.h"
#include "djprobe/marker.h"
#include "kernel/interpose.h"
#include "lib/init_order.h"
#include "lib/real_signal.h"

typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

static pthread_key_t end_key;
static bool end_key_ok;

struct start {
	void *(*fn)(void *);
	void *arg;
};

/* The names are lib/marker_match.h's DJP_MARKER_THREAD_BEGIN and _END. */
static __attribute__((noinline)) void thread_begins(void)
{
	DJP_MARK(__djp_thread_begin);
	__asm__ volatile("" ::: "memory");
}

static __attribute__((noinline)) void thread_ends(void *unused)
{
	(void)unused;
	DJP_MARK(__djp_thread_end);
	__asm__ volatile("" ::: "memory");
}

static void *start_wrapper(void *p)
{
	struct start st = *(struct start *)p;

	free(p);
	if (end_key_ok)
		pthread_setspecific(end_key, (void *)1);
	thread_begins();
	return st.fn(st.arg);
}

/* The forking thread is the child's only one: its end is the process's. */
static void atfork_child(void)
{
	if (end_key_ok)
		pthread_setspecific(end_key, NULL);
}

DJP_THREADS_INIT static void threads_init(void)
{
	end_key_ok = !pthread_key_create(&end_key, thread_ends);
	pthread_atfork(NULL, NULL, atfork_child);
}

int djp__pthread_create_real(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	static create_fn real;
	create_fn f = __atomic_load_n(&real, __ATOMIC_ACQUIRE);

	if (!f) {
		if (!(f = (create_fn)djp_libc_sym("pthread_create")))
			return EAGAIN;
		__atomic_store_n(&real, f, __ATOMIC_RELEASE);
	}
	return f(th, attr, fn, arg);
}

DJP_API int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct start *st = malloc(sizeof(*st));
	int err;

	if (!st)
		return djp__pthread_create_real(th, attr, fn, arg);
	st->fn = fn;
	st->arg = arg;
	err = djp__pthread_create_real(th, attr, start_wrapper, st);
	if (err)
		free(st);
	return err;
}

/* The interposer by a name that resolves to it from inside the library
 * too (kernel/got_patch.c points GOT slots at it). */
extern __typeof(pthread_create) djp__pthread_create
	__attribute__((alias("pthread_create"), copy(pthread_create), visibility("hidden")));
