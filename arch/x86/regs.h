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
	uint64_t r[DJP_REG_COUNT]; /* rax rcx rdx rsi rdi r8-r11 rbx rbp r12-r15 rsp rip */
};

#define DJP_REGS_SIZE (8 * DJP_REG_COUNT)

/*
 * What a handler's `const struct djp_hit *` points to: the register view.
 * The word just below it is the hit's key, which names the site without a
 * store of its own on the lean path: there it is the return address of the
 * trampoline's call to the handler, an (even) address inside the site's
 * trampoline, which the trampoline pool maps back to the site
 * (arch_hit_site in arch.h).  Where nothing is pushed there for free (the
 * full trampoline, the SIGTRAP handler), it is the site pointer with bit 0
 * set.
 */
struct djp_hit {
	struct djp_regs regs;
};

#define DJP_HIT_KEY_SITE 1 /* bit 0 of the key: the rest is the site */

#endif
