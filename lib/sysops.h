/*
 * The system calls the engine makes while it changes text, routed through
 * these wrappers so that a test can make the Nth call fail (SQLite's way of
 * testing failure paths).  djp_sysops_fail_nth(n, err) arms the injector:
 * the nth call from then on, of any of these, fails with errno err; n = 0
 * disarms.
 * djp_sysops_calls() counts the calls made so far, so a test can walk n
 * over every call of an operation.
 */
#ifndef DJP_LIB_SYSOPS_H
#define DJP_LIB_SYSOPS_H

#include <stddef.h>
#include <sys/types.h>

void *djp_sys_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off);
int djp_sys_mprotect(void *addr, size_t len, int prot);
ssize_t djp_sys_pwrite(int fd, const void *buf, size_t len, off_t off);
int djp_sys_membarrier(int cmd, unsigned flags);

/* Test hooks: hidden, and kept out of libdjprobe.so's exports
 * (djprobe.map); the selftests link libdjprobe.a. */
void djp_sysops_fail_nth(unsigned long n, int err);
unsigned long djp_sysops_calls(void);

#endif
