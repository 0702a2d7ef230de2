/*
 * The library's interposers of the program's calls (sigmask.c: the signal
 * mask and handlers; dlhooks.c: dlopen and dlclose; threads.c:
 * pthread_create), and how an injected
 * library makes the program's calls reach them (got_patch.c).
 */
#ifndef DJP_KERNEL_INTERPOSE_H
#define DJP_KERNEL_INTERPOSE_H

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>

/* got_patch.c: in an injected library, point the program's GOT slots for
 * the interposed functions at ours (every loaded object; again for objects
 * loaded later).  djp_interposing: the program's calls reach them. */
int djp_got_interpose(void);
bool djp_interposing(void);
/* The interposers themselves (sigmask.c, dlhooks.c), by hidden names. */
extern __typeof(sigprocmask) djp__sigprocmask;
extern __typeof(pthread_sigmask) djp__pthread_sigmask;
extern __typeof(sigaction) djp__sigaction;
extern __typeof(signal) djp__signal;
extern __typeof(dlopen) djp__dlopen;
extern __typeof(dlclose) djp__dlclose;
/* threads.c: pthread_create, whose threads pass the markers of their
 * begin and end; and libc's, for the library's own threads. */
extern __typeof(pthread_create) djp__pthread_create;
int djp__pthread_create_real(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg);

#endif
