/*
 * Arming a process whose threads block SIGTRAP: with every other thread
 * stopped, as the seeds' djprobe armed the kernel under freeze_processes.
 *
 * A thread that blocks SIGTRAP and executes an int3 is killed by the
 * kernel.  (One that blocks only the engine's signal survives an int3, but
 * cannot answer the check of kernel/threads_check.c: it is served the same
 * way, its int3 probes allowed.)  The interposers of kernel/sigmask.c keep the program from
 * blocking it through libc once the library is in; but a thread can block
 * it before that (the process was running when the agent was injected, a
 * handler installed then blocks every signal while it runs, and a child of
 * fork made there inherits that mask), or by a raw system call.  The int3
 * bootstrap leaves an int3 at every site of a batch for a moment, which
 * such a thread may meet; so a batch in such a process is refused
 * (-EDEADLK) unless a freezer serves it: someone who can stop every other
 * thread (the agent's tool, by ptrace: it is the only one here that can, a
 * thread that blocks every signal cannot be stopped from inside).  The
 * thread's own serves first (the agent's thread answering the tool's
 * request), else the process's (batches no request asked for: a library
 * loaded later, armed on the thread that loaded it, a site taken back from
 * a uprobe; the agent then asks a tool of its own accord).  Then, for the
 * batch:
 *
 *   1. no site may end as an int3 probe (a jump is wanted and can be
 *      placed, or the site goes back to its bytes): one that would is
 *      refused, named (djp__refused_site), nothing written;
 *   2. the freezer stops every thread but this one; each is checked to be
 *      stopped (/proc/self/task/TID/stat: 't' or 'T', or gone); from here
 *      to step 5 nothing is allocated (a thread may have been stopped
 *      inside malloc), only system calls made;
 *   3. no stopped thread may be inside the instructions a jump is about to
 *      cover, nor return there from a signal handler
 *      (djp_stopped_check_run): if one is, the threads go on for a moment
 *      and the check is made again, for up to three seconds, then the
 *      batch is refused (-EAGAIN);
 *   4. each site's new bytes are written whole, one sync for the batch
 *      (arch_poke_whole): no thread runs while the text changes, so none
 *      can meet an int3 or half a jump;
 *   5. the threads go on.
 *
 * The grace periods of the batch (kernel/arm.c) come after the threads go
 * on: a stopped thread may be inside a handler.
 *
 * The threads are stopped only for the writes of a batch, a millisecond or
 * so.  If the one holding them dies meanwhile (a tool killed by SIGKILL),
 * the kernel lets them go at once, perhaps before the writes are done: the
 * one window left, as short as the writes.  A session that ends without
 * its tool (it died) has no freezer: its disarming is refused like any
 * batch in such a process, and retried until the threads stop blocking
 * SIGTRAP (kernel/agent/agent.c): the jumps stay, whole, and harmless.  A
 * freezer that cannot stop them (no tool, or it did not answer in time)
 * refuses the batch the same way: nothing written.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <unistd.h>

#include "kernel/arming.h"
#include "kernel/engine.h"

/* how long a busy range is waited for, in naps between freezes, before
 * the batch is refused */
#define FREEZE_WAIT_US 3000000

static __thread const struct djp_freezer *freezer;
static __thread const struct djp_site *refused;
/* the process's: for the batches of a thread that has none of its own */
static const struct djp_freezer *_Atomic process_freezer;
/* the one serving this thread's batch, from djp_freeze_needed on */
static __thread const struct djp_freezer *active;

void djp__engine_set_freezer(const struct djp_freezer *f)
{
	freezer = f;
}

void djp__engine_set_process_freezer(const struct djp_freezer *f)
{
	atomic_store(&process_freezer, f);
}

const struct djp_site *djp__refused_site(void)
{
	return refused;
}

int djp_freeze_needed(struct djp_site *const *sites, const struct djp_poke *p, size_t n)
{
	const unsigned long long trap = 1ull << (SIGTRAP - 1);
	int sig = djp_engine_signal();

	refused = NULL;
	if (!(active = freezer ? freezer : atomic_load(&process_freezer)))
		return djp_check_sigblk(); /* a block that lasts (sigmask.c) refuses */
	if (djp_sigblk_now(trap | (sig ? 1ull << (sig - 1) : 0)) != -EDEADLK)
		return 0;
	/* (the engine's signal alone: int3 probes are safe, but the check of
	 * threads_check.c would get no answer from that thread) */
	/* (a block that lasts: a thread that glibc is creating blocks every
	 * signal for a moment, and so does its creator) */
	if (djp_check_blocked(trap) != -EDEADLK)
		return 1;
	for (size_t i = 0; i < n; i++)
		if (p[i].new[0] == X86_INT3) {
			refused = sites[i];
			return -EDEADLK;
		}
	return 1;
}

/* arch_poke_whole's hold and release: the threads stopped and checked. */
static int hold(void *ctx)
{
	int err;
	if (active->freeze(active->ctx))
		return -EDEADLK;
	if ((err = djp_stopped_check_run(ctx)))
		active->thaw(active->ctx);
	return err;
}

static void release(void *ctx)
{
	(void)ctx;
	active->thaw(active->ctx);
}

int djp_freeze_poke(struct djp_poke *p, size_t n)
{
	int err = -EDEADLK;
	unsigned slept = 0;

	for (unsigned round = 1; slept < FREEZE_WAIT_US; round++) {
		/* allocated before the threads stop: one may stop in malloc */
		struct djp_stopped_check *c = djp_stopped_check_new(p, n);
		if (!c)
			return -ENOMEM;
		err = arch_poke_whole(p, n, djp_sync_cores, hold, release, c);
		djp_stopped_check_free(c);
		if (err != -EAGAIN)
			return err;
		/* let the thread inside leave (a thread preempted there
		 * needs a core first) */
		usleep(round * 500 < 20000 ? round * 500 : 20000);
		slept += round * 500 < 20000 ? round * 500 : 20000;
	}
	return err;
}
