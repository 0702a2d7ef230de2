/*
 * The x86-64 psABI's facts that generic code works with, as small tables
 * and inline functions: how DWARF numbers the registers, which registers
 * a call keeps for its caller, where a call leaves the return address,
 * and how a signal frame looks.  kernel/dispatch.c, kernel/unwind.c,
 * kernel/callee_saved.c, kernel/arm.c, lib/unwind_table.c and lib/
 * func_params.c ask for them here (through arch.h) and name no register
 * of their own, as kprobes' generic code asks regs_return_value() and
 * instruction_pointer() of its arch.  Another arch has its own table for
 * each; the numbers here are the psABI's (figure 3.36, "DWARF Register
 * Number Mapping") and the kernel's (arch/x86/kernel/signal.c).
 */
#ifndef DJP_ARCH_X86_ABI_H
#define DJP_ARCH_X86_ABI_H

#include <stdbool.h>
#include <stdint.h>

#include "arch/x86/regs.h"

/* ---- DWARF's register numbers ---- */
#define ARCH_DWARF_FP 6	 /* %rbp */
#define ARCH_DWARF_SP 7	 /* %rsp */
#define ARCH_DWARF_RA 16 /* the return-address column: the caller's %rip */

/* The view's register that DWARF register `dwarf` names (the
 * return-address column names DJP_REG_PC), or DJP_REG_NONE: a vector
 * register, or a number the psABI does not give. */
static inline int arch_dwarf_reg(uint64_t dwarf)
{
	static const int8_t view_of_dwarf[ARCH_DWARF_RA + 1] = {
		DJP_REG_RAX, DJP_REG_RDX, DJP_REG_RCX, DJP_REG_RBX, DJP_REG_RSI, DJP_REG_RDI,
		DJP_REG_RBP, DJP_REG_RSP, DJP_REG_R8,  DJP_REG_R9,  DJP_REG_R10, DJP_REG_R11,
		DJP_REG_R12, DJP_REG_R13, DJP_REG_R14, DJP_REG_R15, DJP_REG_RIP,
	};
	return dwarf <= ARCH_DWARF_RA ? view_of_dwarf[dwarf] : DJP_REG_NONE;
}

/* Is DWARF register `dwarf` a vector register (%xmm0-%xmm15)? */
static inline bool arch_dwarf_is_vector(uint64_t dwarf)
{
	return dwarf >= 17 && dwarf <= 32;
}

/* ---- calls ---- */
/* Registers every trampoline saves in the view: what a C call clobbers. */
#define ARCH_CALLER_SAVED                                                                                    \
	((1u << DJP_REG_RAX) | (1u << DJP_REG_RCX) | (1u << DJP_REG_RDX) | (1u << DJP_REG_RSI) |          \
	 (1u << DJP_REG_RDI) | (1u << DJP_REG_R8) | (1u << DJP_REG_R9) | (1u << DJP_REG_R10) |            \
	 (1u << DJP_REG_R11))
/* The ones a C call keeps for its caller (the stack pointer aside): a
 * function that changes one saves it first, where its call-frame
 * information says (kernel/callee_saved.c). */
#define ARCH_CALLEE_SAVED                                                                                    \
	((1u << DJP_REG_RBX) | (1u << DJP_REG_RBP) | (1u << DJP_REG_R12) | (1u << DJP_REG_R13) |          \
	 (1u << DJP_REG_R14) | (1u << DJP_REG_R15))
/* Every register a view can hold: all but the pc, which is the site's. */
#define ARCH_VIEW_ALL (((1u << DJP_REG_COUNT) - 1) & ~(1u << DJP_REG_PC))

/* A call pushes the return address: at a function's entry the CFA (the
 * caller's stack pointer after the call returns) is 8 bytes above the
 * stack pointer, and the return address is the word at CFA - 8. */
#define ARCH_RA_FROM_CFA (-8)

/* ---- signal frames ---- */
/*
 * Is the code at pc the kernel's signal restorer as glibc gives it
 * (__restore_rt: mov $15,%eax; syscall, 48 c7 c0 0f 00 00 00 0f 05)?
 * Read as two overlapping words, at pc and pc + 1, so that no byte past
 * the ninth is touched; `read` returns false when a word cannot be read.
 */
static inline bool arch_at_sigreturn(bool (*read)(void *ctx, uint64_t addr, uint64_t *out), void *ctx, uint64_t pc)
{
	uint64_t a, b;
	return read(ctx, pc, &a) && a == 0x0f0000000fc0c748ull && read(ctx, pc + 1, &b) && b >> 56 == 0x05;
}
/* The interrupted pc, stack and frame pointers in a signal handler's
 * ucontext: their indexes in uc_mcontext.gregs (<ucontext.h> where they
 * are used). */
#define ARCH_GREG_PC REG_RIP
#define ARCH_GREG_SP REG_RSP
#define ARCH_GREG_FP REG_RBP
/* At the restorer the stack pointer is the ucontext_t the kernel pushed
 * (struct rt_sigframe: the return address, then the ucontext); these are
 * the offsets there of the interrupted pc, stack and frame pointers. */
#define ARCH_UC_PC (offsetof(ucontext_t, uc_mcontext.gregs) + 8 * ARCH_GREG_PC)
#define ARCH_UC_SP (offsetof(ucontext_t, uc_mcontext.gregs) + 8 * ARCH_GREG_SP)
#define ARCH_UC_FP (offsetof(ucontext_t, uc_mcontext.gregs) + 8 * ARCH_GREG_FP)

/* ---- objects ---- */
/* The ELF machine of the code the engine patches and reads (<elf.h>
 * where it is used). */
#define ARCH_ELF_MACHINE EM_X86_64

#endif
