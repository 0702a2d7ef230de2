/*
 * Where a diverted return lands (kernel/retprobes.c).
 *
 * A return probe's entry hook replaced the call's return address with
 * djp_ret_tramp, so the probed function's `ret` jumps here with %rsp one
 * word above the slot the address was in, and with the registers as the
 * function left them: %rax and %rdx (and xmm0-1, st0-1) hold its return
 * value, the callee-saved ones the caller's values.  Nothing the caller
 * may rely on may change.
 *
 * The trampoline reuses that slot for the way on: it stores the view of
 * the registers a handler sees (struct djp_regs, arch/x86/regs.h) below
 * it, with the key word below the view that djp_ret_dispatch fills in
 * (the return site), and calls djp_ret_dispatch with the stack aligned.
 * The dispatcher saves the vector state itself before it does anything
 * else, runs the handlers, and returns the real return address, which
 * goes into the slot; the registers come back from the view, and a `ret`
 * pops the slot: %rsp ends where the function's own `ret` left it.  The
 * caller's red zone is not in the way: a call has already overwritten it.
 * The status flags are not kept (no function returns any).
 *
 * The byte before the entry is a nop inside the symbol, so that an
 * unwinder that looks up the return address minus one finds this routine
 * and not whatever precedes it.
 */
	.text
	.globl	djp_ret_tramp
	.hidden	djp_ret_tramp
	.type	djp_ret_tramp, @function
	.p2align 4
djp_ret_tramp_start:
	nop
djp_ret_tramp:
	lea	-8(%rsp), %rsp		/* the slot again: the way on */
	lea	-144(%rsp), %rsp	/* the key and 17 registers */
	mov	%rax, 8(%rsp)
	mov	%rcx, 16(%rsp)
	mov	%rdx, 24(%rsp)
	mov	%rsi, 32(%rsp)
	mov	%rdi, 40(%rsp)
	mov	%r8, 48(%rsp)
	mov	%r9, 56(%rsp)
	mov	%r10, 64(%rsp)
	mov	%r11, 72(%rsp)
	mov	%rbx, 80(%rsp)
	mov	%rbp, 88(%rsp)
	mov	%r12, 96(%rsp)
	mov	%r13, 104(%rsp)
	mov	%r14, 112(%rsp)
	mov	%r15, 120(%rsp)
	lea	152(%rsp), %rax		/* %rsp after the function's ret */
	mov	%rax, 128(%rsp)
	movq	$0, 136(%rsp)		/* %rip: the dispatcher's */
	movq	$0, (%rsp)		/* the key: the dispatcher's */
	lea	8(%rsp), %rdi
	mov	%rsp, %rbx
	and	$-16, %rsp
	call	djp_ret_dispatch
	mov	%rbx, %rsp
	mov	%rax, 144(%rsp)		/* the real return address */
	mov	8(%rsp), %rax
	mov	16(%rsp), %rcx
	mov	24(%rsp), %rdx
	mov	32(%rsp), %rsi
	mov	40(%rsp), %rdi
	mov	48(%rsp), %r8
	mov	56(%rsp), %r9
	mov	64(%rsp), %r10
	mov	72(%rsp), %r11
	mov	80(%rsp), %rbx
	mov	88(%rsp), %rbp
	mov	96(%rsp), %r12
	mov	104(%rsp), %r13
	mov	112(%rsp), %r14
	mov	120(%rsp), %r15
	lea	144(%rsp), %rsp
	ret
	.size	djp_ret_tramp, . - djp_ret_tramp

	.section .note.GNU-stack, "", @progbits
