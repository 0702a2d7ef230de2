/*
 * Stopping the threads of a traced process for its agent.
 *
 * A thread that blocks SIGTRAP is killed by the first int3 it meets, so
 * the agent writes the text of such a process with every other thread
 * stopped (kernel/freeze.c), and asks the tool to stop them (FREEZE, in
 * the middle of its answer to the request that arms or disarms; THAW
 * after).  Only a tracer can stop a thread that blocks every signal: each
 * thread is seized (PTRACE_SEIZE, which changes nothing while it runs)
 * and interrupted (PTRACE_INTERRUPT), all of them before any stop is
 * waited for, so that they stop side by side (one after the other, eight
 * threads spinning on two cores were held 93 to 185 ms; side by side, 1
 * to 14); the list of threads is read again until a pass finds none new
 * (a thread may clone until it is stopped).  THAW detaches them all, which lets them go on.
 *
 * A thread that stops for a signal rather than for the interrupt (the
 * signal came first) keeps it: the signal is given back when it is let go.
 * A thread asleep in the kernel is interrupted: a read, write or wait that
 * restarts goes on as if nothing happened; a few calls (epoll_wait, and
 * others that signal(7) lists for a stop and SIGCONT) return EINTR, as
 * they do for a debugger's stop.  If the tool dies while they are stopped,
 * the kernel lets them go.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "tools/djp/attach/freeze.h"

#define PASSES 100 /* rereads of the threads before giving up */

static bool have(const struct freeze *f, pid_t tid)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->tids[i] == tid)
			return true;
	return false;
}

static int add(struct freeze *f, pid_t tid)
{
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 16;
		pid_t *t = realloc(f->tids, cap * sizeof(*t));
		int *s;
		if (!t)
			return -ENOMEM;
		f->tids = t;
		if (!(s = realloc(f->sigs, cap * sizeof(*s))))
			return -ENOMEM;
		f->sigs = s;
		f->cap = cap;
	}
	f->tids[f->n] = tid;
	f->sigs[f->n++] = 0;
	return 0;
}

/* Seize and interrupt one thread: 0 (asked to stop, or gone) or -errno. */
static int interrupt_one(struct freeze *f, pid_t tid)
{
	int err;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
		return errno == ESRCH ? 0 : -errno; /* gone */
	if ((err = add(f, tid))) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return err;
	}
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) && errno != ESRCH) {
		err = -errno;
		f->tids[--f->n] = 0; /* not to be waited for (released when we exit) */
		return err;
	}
	return 0;
}

/* Wait for thread i's stop; one that is gone is taken off the list. */
static void wait_one(struct freeze *f, size_t i)
{
	int st;
	for (;;) {
		pid_t w = waitpid(f->tids[i], &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
			f->tids[i] = 0; /* gone: nothing to let go */
			return;
		}
		if (WIFSTOPPED(st)) {
			/* the interrupt's stop (PTRACE_EVENT_STOP), or a
			 * signal's that came first: kept for the detach */
			if (st >> 16 != PTRACE_EVENT_STOP)
				f->sigs[i] = WSTOPSIG(st);
			return;
		}
	}
}

int freeze_stop(struct freeze *f, pid_t pid, pid_t keep)
{
	char path[64];
	bool fresh = true;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	for (int pass = 0; fresh && !err; pass++) {
		DIR *d = opendir(path);
		struct dirent *de;
		size_t from = f->n;
		if (!d || pass == PASSES) {
			err = d ? -EAGAIN : -errno;
			if (d)
				closedir(d);
			break;
		}
		fresh = false;
		/* every new thread asked first, then each waited for: they
		 * stop side by side, not one after the other */
		while (!err && (de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid <= 0 || tid == keep || have(f, tid))
				continue;
			fresh = true;
			err = interrupt_one(f, tid);
		}
		closedir(d);
		for (size_t i = from; i < f->n; i++)
			wait_one(f, i);
	}
	if (err)
		freeze_thaw(f);
	return err;
}

void freeze_thaw(struct freeze *f)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->tids[i]) /* (0: gone) */
			ptrace(PTRACE_DETACH, f->tids[i], NULL, (void *)(long)f->sigs[i]);
	f->n = 0;
}

void freeze_free(struct freeze *f)
{
	freeze_thaw(f);
	free(f->tids);
	free(f->sigs);
	f->tids = NULL;
	f->sigs = NULL;
	f->cap = 0;
}
