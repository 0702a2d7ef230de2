/*
 * The order of the library's constructors.
 *
 * Constructors of one shared object without a priority run in link order,
 * which is the sorted order of the source files' paths: a file moved to
 * another folder would change it.  The engine's own set-up (the ring's and
 * the grace periods' thread keys, the return probes' key, the objects
 * mapped at start-up, the real signal functions) must be done before the
 * agent's constructor, which under `djp trace -c` waits while the tool
 * arms probes: a return probe armed before its key exists loses the
 * return of every call it sees.  So the engine's constructors carry a
 * priority, and run before every constructor without one (the agent's).
 */
#ifndef DJP_LIB_INIT_ORDER_H
#define DJP_LIB_INIT_ORDER_H

/* 0-100 are the C library's and the compiler's. */
#define DJP_ENGINE_INIT __attribute__((constructor(200)))
/* Before them, the key whose destructor passes a thread's end marker
 * (kernel/threads.c): glibc runs a round of destructors in the keys'
 * order, lowest first, so the end is recorded before the ring's, the
 * grace periods' and the return probes' destructors let the thread's
 * slot, reader and stack go. */
#define DJP_THREADS_INIT __attribute__((constructor(199)))

#endif
