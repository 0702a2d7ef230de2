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

/* sigaction(2) of the object after ours (libc), resolved before main and
 * async-signal-safe from then on; -1 with errno set on failure. */
int djp_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

#endif
