/*
 * Freeze and thaw every other thread of the process.
 *
 * Step 1: list the threads in /proc/self/task and send each (but ourselves)
 *         the freeze signal with tgkill.
 * Step 2: each thread's handler records its tid and interrupted RIP in a
 *         report slot, counts itself in, and waits on a futex for the
 *         freeze generation to change.
 * Step 3: rescan /proc/self/task until every thread listed is either
 *         reported or gone (threads created meanwhile are signalled in turn;
 *         a thread that exits before it handles the signal is noticed by
 *         tgkill(..., 0) failing).  Give up after a timeout: a thread that
 *         blocks the signal behind our back must not hang the patcher.
 * Step 4: thaw: bump the generation and wake them; each executes cpuid
 *         before it returns to the code it was running, which makes the
 *         freeze a core-serialising sync where membarrier is missing.
 *
 * The signal is a reserved real-time one (SIGRTMAX-3 unless
 * DJP_FREEZE_SIGNAL names another), kept unblockable like SIGTRAP.  The
 * interrupted RIPs are what a later range patch needs to prove no thread is
 * inside the range it replaces.
 */
#include <dirent.h>
#include <sched.h>
#include <ucontext.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "kernel/engine.h"
#include "kernel/rcu.h"
#include "lib/real_signal.h"
#include "lib/sysops.h"

#define MAX_THREADS 4096
#define FREEZE_TIMEOUT_NS 2000000000LL

struct report {
	pid_t tid;
	uintptr_t rip;
};

static int freeze_sig;
static atomic_int generation;
static atomic_int frozen_count;
static atomic_int active;
static struct report reports[MAX_THREADS];

static void freeze_handler(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;
	int saved_errno = errno, gen = atomic_load(&generation);
	(void)sig;
	(void)info;
	/* also the grace period's question: "did you leave a section of
	 * ours by a jump?" (kernel/rcu.c) */
	djp_rcu_recover_interrupted(uc);
	if (!atomic_load(&active)) {
		errno = saved_errno;
		return;
	}
	int slot = atomic_fetch_add(&frozen_count, 1);
	if (slot < MAX_THREADS) {
		reports[slot].rip = (uintptr_t)uc->uc_mcontext.gregs[REG_RIP];
		__atomic_store_n(&reports[slot].tid, (pid_t)syscall(SYS_gettid), __ATOMIC_RELEASE);
	}
	while (atomic_load(&generation) == gen)
		syscall(SYS_futex, &generation, FUTEX_WAIT_PRIVATE, gen, NULL, NULL, 0);
	arch_serialize();
	errno = saved_errno;
}

/* Known before init too: sigprocmask must keep it unblocked from the start. */
int djp_freeze_signal(void)
{
	if (!freeze_sig) {
		const char *env = getenv("DJP_FREEZE_SIGNAL");
		int sig = env ? atoi(env) : SIGRTMAX - 3;
		freeze_sig = sig >= SIGRTMIN && sig <= SIGRTMAX ? sig : -1;
	}
	return freeze_sig > 0 ? freeze_sig : 0;
}

int djp_freeze_init(void)
{
	struct sigaction sa;
	if (!djp_freeze_signal())
		return -EINVAL;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = freeze_handler;
	/* SA_NODEFER: a thread still on its way out of one freeze must not show
	 * the signal as blocked to the next batch's SigBlk check. */
	sa.sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return djp_real_sigaction(freeze_sig, &sa, NULL) ? -errno : 0;
}

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int reported(pid_t tid, int n)
{
	for (int i = 0; i < n && i < MAX_THREADS; i++)
		if (__atomic_load_n(&reports[i].tid, __ATOMIC_ACQUIRE) == tid)
			return 1;
	return 0;
}

/* Stop every other thread; returns 0, or -errno with every thread running. */
static int freeze_all(void)
{
	static pid_t signalled[MAX_THREADS];
	pid_t self = (pid_t)syscall(SYS_gettid), pid = getpid();
	int nsig = 0, err = 0;
	int64_t deadline = now_ns() + FREEZE_TIMEOUT_NS;

	memset(reports, 0, sizeof(reports));
	atomic_store(&frozen_count, 0);
	atomic_store(&active, 1);
	for (;;) {
		DIR *d = opendir("/proc/self/task");
		struct dirent *de;
		int pending = 0, fresh = 0;
		if (!d) {
			err = -errno;
			break;
		}
		while ((de = readdir(d))) {
			pid_t tid = (pid_t)atoi(de->d_name);
			int known = 0;
			if (tid <= 0 || tid == self)
				continue;
			for (int i = 0; i < nsig && !known; i++)
				known = signalled[i] == tid;
			if (!known) {
				if (nsig == MAX_THREADS) {
					err = -E2BIG;
					break;
				}
				if (djp_sys_tgkill(pid, tid, freeze_sig)) {
					if (errno == ESRCH)
						continue;
					err = -errno;
					break;
				}
				signalled[nsig++] = tid;
				fresh = 1;
			}
			if (!reported(tid, atomic_load(&frozen_count)) && syscall(SYS_tgkill, pid, tid, 0) == 0)
				pending = 1;
		}
		closedir(d);
		if (err || (!pending && !fresh))
			break;
		if (now_ns() > deadline) {
			err = -ETIMEDOUT;
			break;
		}
		sched_yield();
	}
	return err;
}

static void thaw_all(void)
{
	atomic_store(&active, 0);
	atomic_fetch_add(&generation, 1);
	syscall(SYS_futex, &generation, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

int djp_freeze_sync(void)
{
	int err = freeze_all();
	thaw_all();
	if (err) {
		errno = -err;
		return -1;
	}
	return 0;
}
