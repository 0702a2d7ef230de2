/*
 * The register view a probe handler sees: the general registers at the
 * instant the marker was hit, in the order of enum djp_reg below.
 * The trampolines store exactly this layout on the stack; the SIGTRAP
 * handler builds it from the ucontext.  `rsp` is the thread's stack pointer
 * at the site (before the trampoline stepped over the red zone), so that
 * %rsp-relative argument locations read the right slots; `rip` is the site.
 */
#ifndef DJP_ARCH_X86_REGS_H
#define DJP_ARCH_X86_REGS_H

#include <stddef.h>
#include <stdint.h>

/*
 * General registers in the order of struct djp_regs: the nine a C call
 * clobbers first, so that a trampoline saves them with nine pushes, then
 * the callee-saved ones, %rsp and %rip.
 */
enum djp_reg {
	DJP_REG_RAX,
	DJP_REG_RCX,
	DJP_REG_RDX,
	DJP_REG_RSI,
	DJP_REG_RDI,
	DJP_REG_R8,
	DJP_REG_R9,
	DJP_REG_R10,
	DJP_REG_R11,
	DJP_REG_RBX,
	DJP_REG_RBP,
	DJP_REG_R12,
	DJP_REG_R13,
	DJP_REG_R14,
	DJP_REG_R15,
	DJP_REG_RSP,
	DJP_REG_RIP,
	DJP_REG_COUNT,
	DJP_REG_NONE = -1,
	/* the ones that generic code names by their role: the pc, the
	 * stack pointer, the frame pointer and the return value's */
	DJP_REG_PC = DJP_REG_RIP,
	DJP_REG_SP = DJP_REG_RSP,
	DJP_REG_FP = DJP_REG_RBP,
	DJP_REG_RET = DJP_REG_RAX, /* where a function returns an integer */
};

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

/*
 * The registers by their assembler names (reg_names.c, which djprobe.ko
 * shares for lib/argloc.c): an argument string is in the target's AT&T
 * syntax, so its register names are x86's.
 */
/* A name of any width (%rax %eax %ax %al %ah, %r8 %r8d %r8w %r8b, with or
 * without the '%') to the register, its byte shift (8 for %ah %bh %ch
 * %dh) and its width in bytes; -1 when unknown. */
int djp_reg_from_name(const char *name, size_t len, uint8_t *shift, uint8_t *width);
/* The 64-bit name of a register ("rdi"), or NULL for DJP_REG_NONE. */
const char *djp_reg_name(int reg);
/* Its name at `width` bytes ("edi" for 4), as a compiler prints an
 * operand of that size; `shift` 8 for %ah and the like. */
const char *djp_reg_name_sized(int reg, unsigned width, unsigned shift);
/* Can a memory operand index by reg?  Not by %rsp (no encoding has it) nor
 * by %rip (which is a base only). */
static inline int djp_reg_can_index(int reg)
{
	return reg != DJP_REG_RSP && reg != DJP_REG_RIP;
}

#endif
