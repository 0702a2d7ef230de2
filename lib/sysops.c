/*
 * Fault injection for the engine's system calls.
 *
 * Every mmap, mprotect, pwrite (to /proc/self/mem) and membarrier
 * that the engine makes on the way to changing text goes through these
 * wrappers.  Normally each is one predictable branch and
 * the real call.  A test sets `fail_at` = calls + n; the call whose running
 * count reaches it fails once with the given errno, exactly as the kernel
 * would have failed it, and the injector disarms itself.  The engine's
 * rollback paths are thereby exercised at every step of a batch: a test
 * walks n = 1, 2, ... until a connect succeeds, and after every failure
 * checks that the text is byte-identical to the file.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "djprobe/djprobe.h"
#include "lib/sysops.h"

static atomic_ulong calls;
static atomic_ulong fail_at;
static int fail_err;

static int injected(void)
{
	unsigned long n = atomic_fetch_add_explicit(&calls, 1, memory_order_relaxed) + 1;
	unsigned long at = atomic_load_explicit(&fail_at, memory_order_relaxed);
	if (__builtin_expect(at == 0, 1) || n != at)
		return 0;
	atomic_store(&fail_at, 0);
	errno = fail_err;
	return 1;
}

void djp_sysops_fail_nth(unsigned long n, int err)
{
	fail_err = err;
	atomic_store(&fail_at, n ? atomic_load(&calls) + n : 0);
}

unsigned long djp_sysops_calls(void)
{
	return atomic_load(&calls);
}

void *djp_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	return injected() ? MAP_FAILED : mmap(addr, len, prot, flags, fd, off);
}


int djp_sys_mprotect(void *addr, size_t len, int prot)
{
	return injected() ? -1 : mprotect(addr, len, prot);
}

ssize_t djp_sys_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return injected() ? -1 : pwrite(fd, buf, len, off);
}

int djp_sys_membarrier(int cmd, unsigned flags)
{
	return injected() ? -1 : (int)syscall(SYS_membarrier, cmd, flags, 0);
}


