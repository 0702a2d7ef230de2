/*
 * Kernel shim of <stdlib.h> (see errno.h).  The shared files allocate
 * small arrays: from process context they may sleep; the bootstrap batch
 * also runs inside stop_machine (kmod/ktext.c), with interrupts off, where
 * an allocation must not.
 */
#ifndef DJP_KMOD_COMPAT_STDLIB_H
#define DJP_KMOD_COMPAT_STDLIB_H

#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/preempt.h>
#include <linux/irqflags.h>

static inline gfp_t djp_compat_gfp(void)
{
	return preemptible() ? GFP_KERNEL : GFP_ATOMIC;
}

#define malloc(n) kmalloc((n), djp_compat_gfp())
#define calloc(n, m) kcalloc((n), (m), djp_compat_gfp())
#define realloc(p, n) krealloc((p), (n), djp_compat_gfp())
#define free(p) kfree(p)
#define labs(x) abs(x)
#define strtol(s, end, base) simple_strtol((s), (end), (base))

#endif
