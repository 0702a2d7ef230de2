/*
 * The agent thread does not keep the process alive.
 *
 * glibc ends a process whose threads all end by themselves: it counts the
 * threads pthread_create made (__nptl_nthreads: pthread_create adds one
 * before its clone, a thread takes one off as it ends, after its TLS and
 * key destructors), and the thread that takes the count to zero calls
 * exit(0), in the thread that ended last: its atexit handlers run and its
 * stdio is flushed there.  Every other thread that ends, the main thread
 * after pthread_exit among them, only ends itself.  The agent thread is
 * made by pthread_create too, and it never ends; counted, it would be the
 * last thread of every program whose main calls pthread_exit, and such a
 * program would never exit once its own threads were done.
 *
 * So the agent thread takes itself off the count as it starts.  Then
 * glibc's own decision is the program's, made at the same instant, in
 * the same thread, with the same status as untraced; nothing watches,
 * nothing is woken, and no hit path pays anything.  The alternative, the
 * agent looking at /proc/self/task now and then and calling exit(0) when
 * only it is left, would exit in the wrong thread, late, and would have
 * to guess at what the count already knows: a thread pthread_create is
 * cloning (counted before its clone), a thread that is already in
 * exit(), a fork's child (glibc sets the count back to one there, before
 * the fork handler that starts a followed child's agent runs).  A vfork's
 * child (posix_spawn's) shares the count but runs no fork handler, so it
 * starts no agent and leaves the count as it found it.
 *
 * Between pthread_create and this thread's first instruction the count
 * holds the agent too.  Should every program thread end in that window
 * (an injection into a process whose threads are finishing), the last
 * one saw the agent still counted and ended only itself; the agent's
 * decrement then takes the count to zero and the agent does what that
 * thread would have done: exit(0), its atexit handlers then run on the
 * agent thread.  Only one decrement can see zero, so exit is never called
 * twice, and never while a counted thread lives: a thread in exit() is
 * still counted, and a thread pthread_create is making already is.
 *
 * The count is glibc's, not an API: GLIBC_PRIVATE, exported since 2.34
 * beside _thread_db___nptl_nthreads, the layout record through which
 * libthread_db (gdb) reads it; before 2.34 it was libpthread's own.
 * Where it cannot be found (an older glibc, another C library), the agent
 * stays counted, as before: such a program's last thread ends without
 * exiting the process.  Since the agent never ends, nothing adds it back.
 */
#include <dlfcn.h>
#include <stdlib.h>

#include "kernel/agent/agent.h"

void djp_agent_leave_thread_count(void)
{
	unsigned int *count = dlvsym(RTLD_DEFAULT, "__nptl_nthreads", "GLIBC_PRIVATE");

	if (count && __atomic_sub_fetch(count, 1, __ATOMIC_SEQ_CST) == 0)
		exit(0);
}
