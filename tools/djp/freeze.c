/*
 * Stopping the threads of a traced process for its agent.
 *
 * A thread that blocks SIGTRAP is killed by the first int3 it meets, so
 * the agent writes the text of such a process with every other thread
 * stopped (kernel/freeze.c), and asks the tool to stop them (FREEZE, in
 * the middle of its answer to the request that arms or disarms; THAW
 * after).  Only a tracer can stop a thread that blocks every signal: each
 * thread is seized (PTRACE_SEIZE, which changes nothing while it runs)
 * and interrupted (PTRACE_INTERRUPT), and its stop waited for; the list of
 * threads is read again until a pass finds none new (a thread may clone
 * until it is stopped).  THAW detaches them all, which lets them go on.
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

#include "freeze.h"

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

/* Seize, interrupt and wait for one thread: 0 (stopped, or gone) or -errno. */
static int stop_one(struct freeze *f, pid_t tid)
{
	int st, err;

	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL))
		return errno == ESRCH ? 0 : -errno; /* gone */
	if ((err = add(f, tid))) {
		ptrace(PTRACE_DETACH, tid, NULL, NULL);
		return err;
	}
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) && errno != ESRCH)
		return -errno;
	for (;;) {
		pid_t w = waitpid(tid, &st, __WALL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 || WIFEXITED(st) || WIFSIGNALED(st)) {
			f->tids[--f->n] = 0; /* gone: nothing to let go */
			return 0;
		}
		if (WIFSTOPPED(st)) {
			/* the interrupt's stop (PTRACE_EVENT_STOP), or a
			 * signal's that came first: kept for the detach */
			if (st >> 16 != PTRACE_EVENT_STOP)
				f->sigs[f->n - 1] = WSTOPSIG(st);
			return 0;
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
		if (!d || pass == PASSES) {
			err = d ? -EAGAIN : -errno;
			if (d)
				closedir(d);
			break;
		}
		fresh = false;
		while (!err && (de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			if (tid <= 0 || tid == keep || have(f, tid))
				continue;
			fresh = true;
			err = stop_one(f, tid);
		}
		closedir(d);
	}
	if (err)
		freeze_thaw(f);
	return err;
}

void freeze_thaw(struct freeze *f)
{
	for (size_t i = 0; i < f->n; i++)
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
