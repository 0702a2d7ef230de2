/*
 * Saving and restoring the vector registers around a full-flavour handler,
 * with plain moves: on the machines this runs on, XSAVE/XRSTOR (and even
 * FXSAVE/FXRSTOR) cost well over 100 ns a pair, while moving the registers
 * that a C handler and the libc it calls can clobber costs a few.
 *
 * Each routine takes the save area in %rdi (64-byte aligned) and touches no
 * other general register.  The trampoline picks one set at init by what
 * XCR0 enables: xmm0-15 (SSE), ymm0-15 (AVX), or zmm0-31 and k0-7
 * (AVX-512, which glibc's EVEX string functions use).  MXCSR is saved too.
 * The x87 stack is the trampoline's business: when it is not empty it
 * takes the XSAVE path instead (see trampoline.c).
 */
	.text

#define R16(m) m(0) m(1) m(2) m(3) m(4) m(5) m(6) m(7) m(8) m(9) m(10) m(11) m(12) m(13) m(14) m(15)
#define R32(m) R16(m) m(16) m(17) m(18) m(19) m(20) m(21) m(22) m(23) \
	m(24) m(25) m(26) m(27) m(28) m(29) m(30) m(31)

#define SX(n) movdqa %xmm##n, n*16(%rdi);
#define LX(n) movdqa n*16(%rdi), %xmm##n;
#define SY(n) vmovdqa %ymm##n, n*32(%rdi);
#define LY(n) vmovdqa n*32(%rdi), %ymm##n;
#define SZ(n) vmovdqa64 %zmm##n, n*64(%rdi);
#define LZ(n) vmovdqa64 n*64(%rdi), %zmm##n;

	.globl djp_vsave_sse
	.hidden djp_vsave_sse
	.type djp_vsave_sse, @function
djp_vsave_sse:
	R16(SX)
	stmxcsr 256(%rdi)
	ret
	.size djp_vsave_sse, .-djp_vsave_sse

	.globl djp_vrestore_sse
	.hidden djp_vrestore_sse
	.type djp_vrestore_sse, @function
djp_vrestore_sse:
	R16(LX)
	ldmxcsr 256(%rdi)
	ret
	.size djp_vrestore_sse, .-djp_vrestore_sse

	.globl djp_vsave_avx
	.hidden djp_vsave_avx
	.type djp_vsave_avx, @function
djp_vsave_avx:
	R16(SY)
	stmxcsr 512(%rdi)
	ret
	.size djp_vsave_avx, .-djp_vsave_avx

	.globl djp_vrestore_avx
	.hidden djp_vrestore_avx
	.type djp_vrestore_avx, @function
djp_vrestore_avx:
	R16(LY)
	ldmxcsr 512(%rdi)
	ret
	.size djp_vrestore_avx, .-djp_vrestore_avx

	.globl djp_vsave_avx512
	.hidden djp_vsave_avx512
	.type djp_vsave_avx512, @function
djp_vsave_avx512:
	R32(SZ)
	kmovq %k0, 2048(%rdi)
	kmovq %k1, 2056(%rdi)
	kmovq %k2, 2064(%rdi)
	kmovq %k3, 2072(%rdi)
	kmovq %k4, 2080(%rdi)
	kmovq %k5, 2088(%rdi)
	kmovq %k6, 2096(%rdi)
	kmovq %k7, 2104(%rdi)
	stmxcsr 2112(%rdi)
	ret
	.size djp_vsave_avx512, .-djp_vsave_avx512

	.globl djp_vrestore_avx512
	.hidden djp_vrestore_avx512
	.type djp_vrestore_avx512, @function
djp_vrestore_avx512:
	R32(LZ)
	kmovq 2048(%rdi), %k0
	kmovq 2056(%rdi), %k1
	kmovq 2064(%rdi), %k2
	kmovq 2072(%rdi), %k3
	kmovq 2080(%rdi), %k4
	kmovq 2088(%rdi), %k5
	kmovq 2096(%rdi), %k6
	kmovq 2104(%rdi), %k7
	ldmxcsr 2112(%rdi)
	ret
	.size djp_vrestore_avx512, .-djp_vrestore_avx512

	.section .note.GNU-stack,"",@progbits
