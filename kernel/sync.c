/*
 * Serialising every core after a text write: the "sync" of the int3
 * bootstrap.
 *
 * The rule (Intel SDM 8.1.3, AMD APM 7.6.1): after one core writes code,
 * any other core must execute a serialising instruction before it runs
 * that code.  Only cores that are running a thread of this process at the
 * moment of the sync need to be made to; every other core serialises on
 * its own before it runs one of our threads again:
 *
 *  - a core that switches to our address space from another writes CR3;
 *  - a core that was idle is woken by an interrupt, and returns from it
 *    with IRET, before it switches to our thread;
 *  - a core that runs one of our threads now is one the sync interrupts.
 *
 * A thread asleep in a system call is therefore never touched: it is not
 * signalled, so its sleep, poll, read or futex wait never sees EINTR
 * because a marker was armed.  This is the reasoning membarrier's SYNC_CORE
 * command rests on for threads that are not running (the kernel's
 * Documentation/features/sched/membarrier-sync-core).
 *
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) interrupts the
 * cores that run our threads and serialises them (Linux 4.16+; registered
 * once; it also closes the one case the list above leaves to the kernel, a
 * core idle in our address space woken without an interrupt).  Where it is
 * missing, or when DJP_SYNC=shootdown asks for it (the name `freeze` is
 * accepted too: the fallback once stopped every thread with a signal, which
 * made other threads' sleep and poll fail with EINTR), a TLB shootdown does
 * the interrupting: taking away the access to a page of ours that is
 * present and dirty makes the kernel flush the TLB of every core that may
 * hold our address space, by an IPI to each that runs it, and the IPI
 * returns with IRET, which serialises.  A core that skips the IPI because
 * it is lazily holding our page tables flushes them (CR3 or INVLPG, both
 * serialising) before it runs our code again.  This is how runtimes without
 * membarrier flush other cores (CoreCLR's FlushProcessWriteBuffers).  It
 * rests on the kernel flushing remote TLBs by interrupt: a kernel that
 * flushes them by broadcast instead (AMD's INVLPGB, arm64's TLBI) has
 * membarrier, which is then used, unless a seccomp filter hides it.
 *
 * The patching thread itself needs only the branch that follows its stores
 * (arch_serialize makes that explicit).
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/arming.h"
#include "kernel/engine.h"
#include "lib/sysops.h"

static int use_membarrier;
static long *shootdown_page;
static size_t page_size;
static pthread_mutex_t shootdown_lock = PTHREAD_MUTEX_INITIALIZER;

static bool membarrier_wanted(void)
{
	const char *want = getenv("DJP_SYNC");
	return !want || (strcmp(want, "shootdown") && strcmp(want, "freeze"));
}

/* Registering for SYNC_CORE makes the kernel wait for an RCU grace period
 * (some 10 ms) when the address space has other users, and not at all
 * while the process has one thread: the agent registers then, as it
 * starts, so that the first arming does not wait.  A process of several
 * threads already registers at its first arming, as before. */
void djp_sync_prepare(void)
{
	struct stat st;
	int q;
	/* /proc/self/task has a link per thread, and . and .. */
	if (!membarrier_wanted() || stat("/proc/self/task", &st) || st.st_nlink != 3)
		return;
	q = djp_sys_membarrier(MEMBARRIER_CMD_QUERY, 0);
	if (q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		(void)djp_sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0);
}

int djp_sync_init(void)
{
	int q;

	if (membarrier_wanted()) {
		q = djp_sys_membarrier(MEMBARRIER_CMD_QUERY, 0);
		if (q >= 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) &&
		    !djp_sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0)) {
			use_membarrier = 1;
			return 0;
		}
	}
	/* the fallback's page, only where it is used */
	page_size = (size_t)sysconf(_SC_PAGESIZE);
	shootdown_page = mmap(NULL, page_size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (shootdown_page == MAP_FAILED) {
		shootdown_page = NULL;
		return -errno;
	}
	return 0;
}

/* Open the page, dirty it (a page that is not present needs no flush, and
 * the write makes it present), and close it again. */
static int shootdown(void)
{
	int r;

	pthread_mutex_lock(&shootdown_lock);
	r = djp_sys_mprotect(shootdown_page, page_size, PROT_READ | PROT_WRITE);
	if (!r) {
		__atomic_fetch_add(shootdown_page, 1, __ATOMIC_SEQ_CST);
		r = djp_sys_mprotect(shootdown_page, page_size, PROT_NONE);
	}
	pthread_mutex_unlock(&shootdown_lock);
	return r ? -errno : 0;
}

int djp_sync_cores(void)
{
	int r;
	if (use_membarrier)
		r = djp_sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0) ? -errno : 0;
	else
		r = shootdown();
	arch_serialize();
	return r;
}
