/*
 * Saving and restoring the vector and floating-point state around a
 * full-flavour handler.
 *
 * What is kept.  The handler is any C function, and it calls libc, whose
 * string functions use SSE, AVX2 and AVX-512 (EVEX code in ymm16-31 and
 * the opmask registers); the code it interrupts may have live values in
 * every one of those registers.  So the routines keep everything the SysV
 * ABI lets a C function clobber: the vector registers as wide as XCR0
 * enables them (xmm0-15; ymm0-15; or zmm0-31 and k0-7), MXCSR (its
 * status flags are caller-saved and the handler's arithmetic sets them),
 * and the x87 state: all of it when the x87 stack is not empty, the
 * status word when it is (the control word is callee-saved, so the
 * handler gives it back).
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
 * bound by the stores, one 64-byte store per cycle: in a mock of the
 * trampoline a hit costs ~5 ns over a nop without any vector saving and
 * ~14 ns with it.  Storing less is then the only way to go faster.
 * XGETBV with ECX=1 (XINUSE) tells which components are in their init
 * state and need no storing, but costs 2.5-3.4 ns by itself; in the usual
 * state (zmm16-31 and k in use since the first EVEX string function, the
 * upper halves of zmm0-15 clean) skipping those halves gains back about
 * as much, and when they are dirty the hit is 1-1.5 ns slower.  Even an
 * oracle that knew the state for free would gain under 1 ns a hit.  So
 * every register is moved, every time.  One consequence: the restore
 * writes zmm0-15 (ymm0-15) at full width and leaves their upper halves
 * marked in use even if they were clean before the hit; that costs
 * nothing measurable on this core, even to legacy SSE code, though on
 * older cores it can slow SSE code down until the next VZEROUPPER.
 *
 * The x87 state.  Compiled code has an empty x87 stack wherever it could
 * call a function, and so at nearly every marker.  FNSTSW is nearly free
 * and gives TOP and ES (an unmasked exception pending).  TOP = 0 and no
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
 * The contract.  %rdi holds the area: 64-byte aligned, of the size given
 * for the class below, owned by the routines from the save to the
 * restore.  The routines clobber %rax, %rdx and the flags, use 32 bytes
 * of red zone, and leave every other general register alone; the slow
 * x87 path needs XSAVE enabled by the system (CR4.OSXSAVE).  The caller
 * picks one pair at init by what XCR0 enables (the AVX-512 pair also
 * needs AVX512BW, for 64-bit opmask moves).
 *
 *   class     registers          area   layout
 *   SSE       xmm0-15             896   0 xmm, 256 MXCSR, 260 FSW, 320 x87 image
 *   AVX       ymm0-15            1152   0 ymm, 512 MXCSR, 516 FSW, 576 x87 image
 *   AVX-512   zmm0-31, k0-7      2752   0 zmm, 2048 k, 2112 MXCSR, 2116 FSW,
 *                                       2176 x87 image
 */
	.text

#define R16(m) m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7) m(8) m(9) m(10) m(11) m(12) m(13) m(14) m(15)
#define R32(m) R16(m) m(16) m(17) m(18) m(19) m(20) m(21) m(22) m(23) \
	m(24) m(25) m(26) m(27) m(28) m(29) m(30) m(31)
#define R8(m) m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7)

#define SX(n) movaps %xmm##n, n*16(%rdi);
#define LX(n) movaps n*16(%rdi), %xmm##n;
#define SY(n) vmovdqa %ymm##n, n*32(%rdi);
#define LY(n) vmovdqa n*32(%rdi), %ymm##n;
#define SZ(n) vmovdqa64 %zmm##n, n*64(%rdi);
#define LZ(n) vmovdqa64 n*64(%rdi), %zmm##n;
#define SK(n) kmovq %k##n, 2048+n*8(%rdi);
#define LK(n) kmovq 2048+n*8(%rdi), %k##n;

#define FUNC(name)                 \
	.globl name;               \
	.hidden name;              \
	.type name, @function;     \
	.p2align 4;                \
name:
#define END(name) .size name, .-name

/*
 * The end of every save: keep the x87 status word; if TOP != 0 or an
 * unmasked exception is pending (ES), keep the x87 state, with XSAVE of
 * that one component into the 576 bytes at `image` (legacy region and
 * header; XRSTOR wants the header's reserved bytes zero, XSAVE does not
 * write them), and give the handler a clean x87 unit.
 */
#define X87_SAVE(fsw, image)                                     \
	fnstsw %ax;                                              \
	mov %ax, fsw(%rdi);                                      \
	test $0x3880, %eax;                                      \
	jnz 1f;                                                  \
	ret;                                                     \
1:	xor %eax, %eax;                                          \
	mov %rax, image+512(%rdi);                               \
	mov %rax, image+520(%rdi);                               \
	mov %rax, image+528(%rdi);                               \
	mov %rax, image+536(%rdi);                               \
	mov %rax, image+544(%rdi);                               \
	mov %rax, image+552(%rdi);                               \
	mov %rax, image+560(%rdi);                               \
	mov %rax, image+568(%rdi);                               \
	mov $1, %eax;                                            \
	xor %edx, %edx;                                          \
	xsave64 image(%rdi);                                     \
	fninit;                                                  \
	ret

/*
 * The end of every restore: the x87 state if it was saved; else the
 * status word, if it is not what it was (the stack was empty, the handler
 * left it empty, as the ABI wants, but may have set flags), through an
 * environment in the red zone whose stack is empty and whose control word
 * is the current one.
 */
#define X87_RESTORE(fsw, image)                                  \
	movzwl fsw(%rdi), %edx;                                  \
	test $0x3880, %edx;                                      \
	jnz 2f;                                                  \
	fnstsw %ax;                                              \
	cmp %dx, %ax;                                            \
	jne 3f;                                                  \
	ret;                                                     \
2:	mov $1, %eax;                                            \
	xor %edx, %edx;                                          \
	xrstor64 image(%rdi);                                    \
	ret;                                                     \
3:	fnstenv -32(%rsp);                                       \
	mov %dx, -28(%rsp);                                      \
	movw $0xffff, -24(%rsp);                                 \
	fldenv -32(%rsp);                                        \
	ret

FUNC(djp_vsave_sse)
	R16(SX)
	stmxcsr 256(%rdi)
	X87_SAVE(260, 320)
END(djp_vsave_sse)

FUNC(djp_vrestore_sse)
	R16(LX)
	ldmxcsr 256(%rdi)
	X87_RESTORE(260, 320)
END(djp_vrestore_sse)

FUNC(djp_vsave_avx)
	R16(SY)
	stmxcsr 512(%rdi)
	X87_SAVE(516, 576)
END(djp_vsave_avx)

FUNC(djp_vrestore_avx)
	R16(LY)
	ldmxcsr 512(%rdi)
	X87_RESTORE(516, 576)
END(djp_vrestore_avx)

FUNC(djp_vsave_avx512)
	R32(SZ)
	R8(SK)
	stmxcsr 2112(%rdi)
	X87_SAVE(2116, 2176)
END(djp_vsave_avx512)

FUNC(djp_vrestore_avx512)
	R32(LZ)
	R8(LK)
	ldmxcsr 2112(%rdi)
	X87_RESTORE(2116, 2176)
END(djp_vrestore_avx512)

	.section .note.GNU-stack,"",@progbits
