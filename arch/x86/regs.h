/*
 * The register view a probe handler sees: the general registers at the
 * instant the marker was hit, in the order of enum djp_reg (lib/argloc.h).
 * The trampolines store exactly this layout on the stack; the SIGTRAP
 * handler builds it from the ucontext.  `rsp` is the thread's stack pointer
 * at the site (before the trampoline stepped over the red zone), so that
 * %rsp-relative argument locations read the right slots; `rip` is the site.
 */
#ifndef DJP_ARCH_X86_REGS_H
#define DJP_ARCH_X86_REGS_H

#include <stdint.h>

#include "lib/argloc.h"

struct djp_regs {
	uint64_t r[DJP_REG_COUNT]; /* rax rbx rcx rdx rsi rdi rbp rsp r8..r15 rip */
};

#define DJP_REGS_SIZE (8 * DJP_REG_COUNT)

#endif
