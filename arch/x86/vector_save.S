/*
 * Saving and restoring the vector and floating-point state around a
 * full-flavour handler.
 *
 * What is kept.  The handler is any C function, and it calls libc, whose
 * string functions use SSE, AVX2 and AVX-512 (EVEX code in ymm16-31 and
 * the opmask registers).  So the full trampoline keeps every vector
 * register the interrupted code can hold a value in: those its object's
 * code uses, as wide as it uses them (arch/x86/vector_use.c: xmm0-15; ymm0-15;
 * or zmm0-31 and k0-7), MXCSR (its status flags are caller-saved and the
 * handler's arithmetic sets them), and the x87 state: all of it when the
 * x87 stack is not empty, the status word when it is (the control word is
 * callee-saved, so the handler gives it back).
 *
 * Why plain moves and not XSAVE.  Per save+restore pair, measured on a
 * Sapphire Rapids class core in a loop (the range is over the state at
 * entry: upper halves clean or dirty, zmm16-31 and k in use or not):
 *
 *   moves: zmm0-31, k0-7, MXCSR, x87 check        8.7-9.0 ns
 *   XSAVEOPT/XRSTOR, mask 0xE7                     55-76 ns
 *   XSAVEC/XRSTOR, mask 0xE7                       56-93 ns
 *   XSAVE/XRSTOR, mask 0xE7                        77-98 ns
 *   XSAVE/XRSTOR, all-ones mask                   183-204 ns
 *   FXSAVE/FXRSTOR (xmm and x87 only)              ~40 ns
 *
 * The XSAVE family is microcoded and an order of magnitude slower with a
 * tight mask too (and XSAVEOPT would be wrong here anyway: it skips
 * components it believes unchanged since the last XRSTOR from the same
 * address, which on a stack need not hold what it did).  The moves are
 * bound by the stores, one 64-byte store per cycle: a hit through the
 * full trampoline costs about 5.5 ns over a nop with xmm0-15 saved and
 * 11.5-12 ns with zmm0-31 and k0-7 (bench/engine_hits shows both).
 * Storing less is then the only way to go faster, and the object's code
 * says what may be stored less.  XGETBV with ECX=1 (XINUSE) tells which
 * components are in their init state, but costs 2.5-3.4 ns by itself; in
 * the usual state (zmm16-31 and k in use since the first EVEX string
 * function, the upper halves of zmm0-15 clean) skipping what it says
 * gains back about as much, and when they are dirty the hit is 1-1.5 ns
 * slower.  So within a class every register is moved, every time.  The
 * restore writes the registers at the class's full width and so leaves
 * upper halves marked in use even if they were clean before the hit; that
 * costs nothing measurable on this core, and where the class is xmm only
 * the restore uses VEX moves, which clean the upper halves.
 *
 * On AMD Zen (EPYC, family 26) the moves cost as little, but two other
 * instructions do not: STMXCSR and FNSTSW block dispatch for about 4 ns
 * each, and a hit that read both on the way in and again on the way out
 * cost 22 ns over a nop; LDMXCSR there costs 0.3 ns.  So on AMD the way
 * back reloads MXCSR without reading it, and the x87 status word is read
 * only at sites whose object has x87 code (below): 7-9 ns a hit.
 *
 * The x87 state.  Compiled code has an empty x87 stack wherever it could
 * call a function, and so at nearly every marker; in an object without
 * x87, MMX or FXSAVE/XSAVE code at every one (vector_use.c), and there
 * the trampoline does not look at it: the handler finds the empty stack
 * and default control word the ABI promises, and gives them back.  What
 * it does not give back there is the exception flags of x87 arithmetic
 * of its own (long double), as a function call may not (the ABI does not
 * preserve the x87 status word across calls).  In an object with x87
 * code FNSTSW gives TOP and ES (an unmasked exception pending).  TOP = 0 and no
 * ES is the fast path: the routines keep the status word and, on the way
 * back, put it back only if the handler changed it (x87 arithmetic in
 * the handler does: FNSTENV/FLDENV in the red zone, and the flag it then
 * sets again on the next hit, cost ~120 ns a hit, for such handlers
 * only).  Otherwise the save does XSAVE of the x87 component alone (with
 * the header cleared) and FNINIT, so the handler starts with the empty
 * stack and default control word the ABI promises it, and the restore
 * does XRSTOR of that component: ~90 ns a hit, exact, and no worse than a
 * whole XSAVEC (FXSAVE/FXRSTOR, which also reloads xmm0-15, costs ~190 ns
 * a hit there, FNSAVE/FRSTOR ~110-150).  The limits: eight values on the
 * stack, or MMX state, also have TOP = 0 and so look empty (telling them
 * apart needs the tag word, and every way to read it costs on each hit:
 * FXAM of an empty register takes an 80 ns microcode assist, FNSTENV
 * ~30 ns, XINUSE ~2.5 ns); and the fast path keeps neither the x87
 * instruction and data pointers nor the contents of empty registers.
 *
 * Where the code is.  The moves are emitted inline by the full trampoline
 * (tramp_full.c, emit_vsave and emit_vrestore): a call and return on each
 * side cost another nanosecond a hit.  It follows this layout, in an area
 * 64-byte aligned on the trampoline's stack:
 *
 *   class     registers          area   layout
 *   SSE       xmm0-15             896   0 xmm, 256 MXCSR, 260 FSW, 320 x87 image
 *   AVX       ymm0-15            1152   0 ymm, 512 MXCSR, 516 FSW, 576 x87 image
 *   AVX-512   zmm0-31, k0-7      2752   0 zmm, 2048 k, 2112 MXCSR, 2116 FSW,
 *                                       2176 x87 image
 *
 * MXCSR is put back on AMD always, elsewhere only when the handler
 * changed it (LDMXCSR is not free on Intel).  What is here are the two x87 slow paths the trampoline calls,
 * with %rdi at the x87 image: djp_x87_save, when the saved status word
 * says TOP != 0 or ES, and djp_x87_restore, with that status word in %edx,
 * when it did or when the handler changed the status word.  Both clobber
 * %rax, %rdx and the flags and use 32 bytes of red zone; the slow path
 * needs XSAVE enabled by the system (CR4.OSXSAVE).
 */
	.text

#define FUNC(name)                 \
	.globl name;               \
	.hidden name;              \
	.type name, @function;     \
	.p2align 4;                \
name:
#define END(name) .size name, .-name

/*
 * XSAVE of the x87 component alone into the 576 bytes at %rdi (legacy
 * region and header: XRSTOR wants the header's reserved bytes zero, and
 * XSAVE does not write them), then a clean x87 unit for the handler.
 */
FUNC(djp_x87_save)
	xor %eax, %eax
	mov %rax, 512(%rdi)
	mov %rax, 520(%rdi)
	mov %rax, 528(%rdi)
	mov %rax, 536(%rdi)
	mov %rax, 544(%rdi)
	mov %rax, 552(%rdi)
	mov %rax, 560(%rdi)
	mov %rax, 568(%rdi)
	mov $1, %eax
	xor %edx, %edx
	xsave64 (%rdi)
	fninit
	ret
END(djp_x87_save)

/*
 * The x87 state saved whole (%edx, the status word at the save, says TOP
 * != 0 or ES): XRSTOR it.  Otherwise the stack was empty and the handler
 * left it empty, as the ABI wants, but changed the status word's flags:
 * put the old one back through an environment in the red zone whose
 * stack is empty and whose control word is the current one.
 */
FUNC(djp_x87_restore)
	test $0x3880, %edx
	jz 1f
	mov $1, %eax
	xor %edx, %edx
	xrstor64 (%rdi)
	ret
1:	fnstenv -32(%rsp)
	mov %dx, -28(%rsp)
	movw $0xffff, -24(%rsp)
	fldenv -32(%rsp)
	ret
END(djp_x87_restore)

	.section .note.GNU-stack,"",@progbits
