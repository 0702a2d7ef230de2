/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The trampolines' code: the slot region, and the common entry every slot
 * calls.  How the pieces fit is in ktramp.c; this is the part that must be
 * assembly.
 *
 * A slot (ktramp.c writes it at run time) is
 *
 *	push $index			68 imm32
 *	call djp_tramp_common		e8 rel32
 *	lea 8(%rsp), %rsp		48 8d 64 24 08
 *	jmp site + 6			e9 rel32
 *
 * so djp_tramp_common starts with its return address at 0(%rsp), the
 * slot's index at 8(%rsp), and the marker site's own stack above: the
 * site's %rsp is the entry %rsp + 16 (kernel code has no red zone).  It
 * builds a struct pt_regs below, as an int3 would have: every general
 * register, the flags (pushfq, before any instruction that changes them),
 * cs/ss, sp = the site's, ip filled in by the dispatcher with the site's
 * address, and calls djp_tramp_dispatch(regs, index).  Then it restores
 * every general register from the frame (argument registers and all: the
 * site's code expects every register as it left it, and a handler may only
 * change them through regs on purpose) and returns into the slot.
 *
 * No popfq: GCC treats every x86 asm statement as clobbering the flags (the
 * "cc" clobber is implicit on x86), so the code around a marker's asm never
 * keeps a live flag across it.  DF is 0 on entry (the kernel's ABI) and the
 * C code keeps it so.
 *
 * objtool: the frame is described to the ORC unwinder (UNWIND_HINT_REGS
 * while the handlers run, so a stack trace from a handler shows the
 * registers at the site), and the slot region is int3 filler, which
 * objtool decodes as traps and leaves alone.
 */
#include <linux/linkage.h>
#include <asm/asm.h>
#include <asm/linkage.h>
#include <asm/segment.h>
#include <asm/unwind_hints.h>
#include <asm/ptrace-abi.h>

#include "ktramp.h"

	.text

SYM_CODE_START(djp_tramp_common)
	UNWIND_HINT_FUNC
	pushfq
	leaq	-(FRAME_SIZE - 8)(%rsp), %rsp
	movq	%rax, RAX(%rsp)
	movq	SS(%rsp), %rax			/* the flags pushfq put there */
	movq	%rax, EFLAGS(%rsp)
	movq	$__KERNEL_DS, SS(%rsp)
	movq	$__KERNEL_CS, CS(%rsp)
	leaq	FRAME_SIZE + 16(%rsp), %rax	/* the site's %rsp */
	movq	%rax, RSP(%rsp)
	movq	$-1, ORIG_RAX(%rsp)
	movq	$0, RIP(%rsp)
	movq	%rcx, RCX(%rsp)
	movq	%rdx, RDX(%rsp)
	movq	%rsi, RSI(%rsp)
	movq	%rdi, RDI(%rsp)
	movq	%r8, R8(%rsp)
	movq	%r9, R9(%rsp)
	movq	%r10, R10(%rsp)
	movq	%r11, R11(%rsp)
	movq	%rbx, RBX(%rsp)
	movq	%rbp, RBP(%rsp)
	movq	%r12, R12(%rsp)
	movq	%r13, R13(%rsp)
	movq	%r14, R14(%rsp)
	movq	%r15, R15(%rsp)
	UNWIND_HINT_REGS
	movq	%rsp, %rdi
	movq	FRAME_SIZE + 8(%rsp), %rsi	/* the slot's index */
	call	djp_tramp_dispatch
	movq	R15(%rsp), %r15
	movq	R14(%rsp), %r14
	movq	R13(%rsp), %r13
	movq	R12(%rsp), %r12
	movq	RBP(%rsp), %rbp
	movq	RBX(%rsp), %rbx
	movq	R11(%rsp), %r11
	movq	R10(%rsp), %r10
	movq	R9(%rsp), %r9
	movq	R8(%rsp), %r8
	movq	RDI(%rsp), %rdi
	movq	RSI(%rsp), %rsi
	movq	RDX(%rsp), %rdx
	movq	RCX(%rsp), %rcx
	movq	RAX(%rsp), %rax
	UNWIND_HINT sp_reg=ORC_REG_SP sp_offset=FRAME_SIZE+8 type=UNWIND_HINT_TYPE_CALL
	leaq	FRAME_SIZE(%rsp), %rsp
	UNWIND_HINT_FUNC
	RET
SYM_CODE_END(djp_tramp_common)

	.balign DJP_TRAMP_SLOT_SIZE
SYM_CODE_START(djp_tramp_slots)
	UNWIND_HINT_EMPTY
	.fill DJP_TRAMP_SLOTS * DJP_TRAMP_SLOT_SIZE, 1, 0xcc
SYM_CODE_END(djp_tramp_slots)
