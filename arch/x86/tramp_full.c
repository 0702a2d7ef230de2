/*
 * The full trampoline: what a jump-armed site runs for handlers that may
 * use the vector registers (any C code: libc's memcpy and printf do).
 *
 * It is the lean one (tramp_lean.c) with the vector state saved around
 * the handler call: the same pushes, the same inline RCU read side, the
 * same direct call of the site's only handler (the list's `full` fast
 * call), whose return address is the hit's key.  The view sits below a
 * 64-byte aligned area: from %rsp up (64-byte aligned), the view, the old
 * %rsp, padding, the area; the alignment is made at run time, since the
 * call-frame information knows %rsp only modulo 16.
 *
 * What is saved is what the site's object can hold in vector registers
 * (arch/x86/vector_use.c), as wide as the machine has them: xmm0-15 for code of
 * legacy SSE only, ymm0-15 for VEX code, zmm0-31 and k0-7 for EVEX code.
 * The moves are emitted inline, not called (a call and a return on each
 * side cost another nanosecond a hit), in the layout of vector_save.S's
 * table.  MXCSR is read before the vector stores and put back after the
 * loads (on Intel only when the handler changed it).  Where the site's
 * object has x87 code, the x87 status word is read too, and when the x87
 * stack is in use (TOP != 0) or an exception is pending, stubs call
 * vector_save.S's slow paths, which save and restore the x87 state whole;
 * elsewhere the stack is empty by the ABI and left alone.
 * The stubs, like the one for the C dispatcher, come before the entry.
 *
 * On this machine class the save and restore of zmm0-31 and k0-7 is about
 * 9 ns a hit, bound by the stores (one 64-byte store a cycle); XSAVE and
 * its variants cost 55-200 ns a pair, and on AMD reading MXCSR or the x87
 * status word 4 ns each (vector_save.S has the figures).
 */
#include <cpuid.h>

#include "arch/x86/tramp.h"

/*
 * The vector save's classes, by what XCR0 enables and the site's object
 * uses (arch/x86/vector_use.h), and the layout of each one's area (the table in
 * vector_save.S, which has the x87 slow paths the code calls).
 */
enum vclass { V_SSE = DJP_VEC_SSE, V_AVX = DJP_VEC_AVX, V_AVX512 = DJP_VEC_AVX512 };
static const struct vlayout {
	uint32_t size, mxcsr, fsw, image;
} vlayouts[] = {
	[V_SSE] = { 896, 256, 260, 320 },
	[V_AVX] = { 1152, 512, 516, 576 },
	[V_AVX512] = { 2752, 2112, 2116, 2176 },
};
static enum vclass vclass; /* the machine's */
/* MXCSR is reloaded on every hit, not only when the handler changed it:
 * on AMD Zen LDMXCSR costs 0.3 ns and the STMXCSR that would tell 4 ns,
 * on Intel the other way round (vector_save.S). */
static int mxcsr_reload;

void djp_tramp_vector_init(void)
{
	unsigned a, b, c, d;
	uint32_t xcr0_lo, xcr0_hi;
	__cpuid(0, a, b, c, d);
	mxcsr_reload = (b == 0x68747541 && d == 0x69746e65 && c == 0x444d4163) || /* AuthenticAMD */
		       (b == 0x6f677948 && d == 0x6e65476e && c == 0x656e6975);	   /* HygonGenuine */
	__asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
	__cpuid_count(7, 0, a, b, c, d);
	if ((xcr0_lo & 0xe6) == 0xe6 && (b & bit_AVX512F) && (b & bit_AVX512BW))
		vclass = V_AVX512;
	else if ((xcr0_lo & 0x6) == 0x6)
		vclass = V_AVX;
	else
		vclass = V_SSE;
}

/* Move vector register n to (store) or from disp(%rsp), at the class's
 * width: movaps, vmovdqa (VEX), vmovdqa64 (EVEX, disp8 scaled by 64).  On
 * a machine with AVX an xmm is loaded with VEX, which clears its upper
 * bits: what the handler left there is dead for the site's code, and
 * clean upper halves spare its SSE code the dirty-upper penalty. */
static void vmove(struct emit *e, enum vclass vc, int n, int32_t disp, int store)
{
	switch (vc) {
	case V_SSE:
		if (!store && vclass >= V_AVX) {
			b1(e, 0xc5), b1(e, (uint8_t)(n >= 8 ? 0x79 : 0xf9)); /* VEX.128.66.0F, ~R */
			b1(e, 0x6f);					       /* vmovdqa */
		} else {
			if (n >= 8)
				b1(e, 0x44); /* REX.R */
			b1(e, 0x0f), b1(e, store ? 0x29 : 0x28);
		}
		rsp_operand(e, n, disp, 0);
		break;
	case V_AVX:
		b1(e, 0xc5), b1(e, (uint8_t)(n >= 8 ? 0x7d : 0xfd)); /* VEX.256.66.0F, ~R */
		b1(e, store ? 0x7f : 0x6f);
		rsp_operand(e, n, disp, 0);
		break;
	case V_AVX512:
		/* EVEX.512.66.0F.W1: P0 = ~R ~X ~B ~R' 0 0 0 1 */
		b1(e, 0x62);
		b1(e, (uint8_t)((n & 8 ? 0 : 0x80) | 0x60 | (n & 16 ? 0 : 0x10) | 0x01));
		b1(e, 0xfd), b1(e, 0x48);
		b1(e, store ? 0x7f : 0x6f);
		rsp_operand(e, n, disp, 64);
		break;
	}
}

/* kmovq %k<n> to or from disp(%rsp) (VEX.L0.0F.W1 91 / 90). */
static void kmove(struct emit *e, int n, int32_t disp, int store)
{
	EMIT(e, "\xc4\xe1\xf8"), b1(e, store ? 0x91 : 0x90);
	rsp_operand(e, n, disp, 0);
}

/* Save every vector register, the opmask registers and MXCSR into the
 * area at area(%rsp); where the x87 stack can be in use (the object has
 * x87 code), the x87 status word too, and when the stack is in use (TOP
 * != 0) or an exception is pending, go to the stub at x87 (which comes
 * back to just after). */
static void emit_vsave(struct emit *e, enum vclass vc, int x87, int32_t area, size_t x87stub, size_t *resume)
{
	const struct vlayout *l = &vlayouts[vc];
	int nregs = vc == V_AVX512 ? 32 : 16, width = vc == V_SSE ? 16 : vc == V_AVX ? 32 : 64;
	EMIT(e, "\x0f\xae"), rsp_operand(e, 3, area + (int32_t)l->mxcsr, 0); /* stmxcsr */
	if (x87) {
		EMIT(e, "\xdf\xe0");						   /* fnstsw %ax */
		EMIT(e, "\x66\x89"), rsp_operand(e, 0, area + (int32_t)l->fsw, 0); /* mov %ax,fsw */
	}
	for (int n = 0; n < nregs; n++)
		vmove(e, vc, n, area + width * n, 1);
	if (vc == V_AVX512)
		for (int n = 0; n < 8; n++)
			kmove(e, n, area + 2048 + 8 * n, 1);
	if (x87) {
		EMIT(e, "\xa9\x80\x38\x00\x00"); /* test $0x3880,%eax */
		jcc_back(e, JNE8, x87stub);
	}
	*resume = e->n;
}

/* The way back: the registers, MXCSR (reloaded, or where that costs more
 * than reading it, reloaded when the handler changed it), then where the
 * object has x87 code the x87 state (a stub, when it was saved or the
 * handler changed the status word). */
static void emit_vrestore(struct emit *e, enum vclass vc, int x87, int32_t area, size_t x87stub, size_t *resume)
{
	const struct vlayout *l = &vlayouts[vc];
	int nregs = vc == V_AVX512 ? 32 : 16, width = vc == V_SSE ? 16 : vc == V_AVX ? 32 : 64;
	size_t je = 0;
	for (int n = 0; n < nregs; n++)
		vmove(e, vc, n, area + width * n, 0);
	if (vc == V_AVX512)
		for (int n = 0; n < 8; n++)
			kmove(e, n, area + 2048 + 8 * n, 0);
	if (!mxcsr_reload) {
		EMIT(e, "\x0f\xae\x5c\x24\xfc");				  /* stmxcsr -4(%rsp) */
		EMIT(e, "\x8b\x44\x24\xfc");					  /* mov -4(%rsp),%eax */
		EMIT(e, "\x3b"), rsp_operand(e, 0, area + (int32_t)l->mxcsr, 0); /* cmp mxcsr,%eax */
		b1(e, 0x74), b1(e, 0), je = e->n - 1;
	}
	EMIT(e, "\x0f\xae"), rsp_operand(e, 2, area + (int32_t)l->mxcsr, 0); /* ldmxcsr */
	if (!mxcsr_reload)
		e->buf[je] = (uint8_t)(e->n - (je + 1));
	if (x87) {
		EMIT(e, "\x0f\xb7"), rsp_operand(e, 2, area + (int32_t)l->fsw, 0); /* movzwl fsw,%edx */
		EMIT(e, "\xf7\xc2\x80\x38\x00\x00");			   /* test $0x3880,%edx */
		jcc_back(e, JNE8, x87stub);
		EMIT(e, "\xdf\xe0");	 /* fnstsw %ax */
		EMIT(e, "\x66\x39\xd0"); /* cmp %dx,%ax */
		jcc_back(e, JNE8, x87stub);
	}
	*resume = e->n;
}

/*
 * The full flavour: the same view as the lean one (the return address of
 * the call to the handler names the site), built below a 64-byte aligned
 * vector area: from %rsp up (64-byte aligned), the view, the old %rsp,
 * padding, the area.  The
 * stubs that call the C dispatcher and the x87 slow paths come first.
 */
size_t djp_tramp_gen_full(struct emit *e, const struct djp_tramp_req *r, uintptr_t *entry)
{
	/* the area 64 bytes-aligned from %rsp too, for EVEX's scaled disp8 */
	const int32_t upper = VIEW - 8 * (DJP_REG_R11 + 1), area = (VIEW + 8 + 63) & ~63;
	const int use = r->vec_use < 0 ? (int)vclass | DJP_VEC_X87 : r->vec_use;
	const enum vclass vc = (use & DJP_VEC_CLASS) < (int)vclass ? (enum vclass)(use & DJP_VEC_CLASS) : vclass;
	const int x87 = !!(use & DJP_VEC_X87);
	const struct vlayout *l = &vlayouts[vc];
	struct frame f = { 0, VIEW, 0, RED_ZONE + point_pre(r) };
	uintptr_t hdr = (e->at & ~(DJP_TRAMP_CHUNK - 1));
	size_t slow, to_back, x87s, to_x87s, x87r, to_x87r, resume_s, resume_r, back;

	/* slow: the C dispatcher does the read side itself */
	slow = emit_slow_stub(e, HDR_FULL, &to_back);
	/* the x87 state: save it whole and reset the unit, or put it back */
	x87s = e->n;
	lea_rsp(e, DJP_REG_RDI, area + (int32_t)l->image);
	EMIT(e, "\xff\x15"), rel32(e, hdr + HDR_X87_SAVE);
	to_x87s = jcc32(e, JMP);
	x87r = e->n;
	lea_rsp(e, DJP_REG_RDI, area + (int32_t)l->image); /* %edx: the status word at the save */
	EMIT(e, "\xff\x15"), rel32(e, hdr + HDR_X87_RESTORE);
	to_x87r = jcc32(e, JMP);
	while (e->n < 64)
		b1(e, 0xcc);
	*entry = e->at + e->n;
	point_prologue(e, r);

	lea_rsp(e, DJP_REG_RSP, -RED_ZONE);
	b1(e, 0x50);			 /* push %rax */
	lea_rsp(e, DJP_REG_RAX, 8);	 /* the old %rsp */
	EMIT(e, "\x48\x83\xe4\xc0");	 /* and $-64,%rsp */
	lea_rsp(e, DJP_REG_RSP, -(int32_t)(l->size + area - 8 * (DJP_REG_R11 + 1)));
	mov_rsp(e, DJP_REG_RAX, upper, 1);
	EMIT(e, "\x48\x8b\x40\xf8"); /* mov -8(%rax),%rax */
	for (int i = DJP_REG_R11; i >= DJP_REG_RAX; i--)
		push_pop(e, i, 0);
	djp_tramp_save_view(e, &f, r->regs_used & ~(ARCH_CALLER_SAVED | 1u << DJP_REG_RSP | 1u << DJP_REG_RIP), r);
	emit_vsave(e, vc, x87, area, x87s, &resume_s);
	djp_tramp_fast_call(e, r, slow, 0, (int32_t)djp_tramp_ops.full_call);
	back = e->n;
	emit_vrestore(e, vc, x87, area, x87r, &resume_r);
	for (int i = DJP_REG_RAX; i <= DJP_REG_R11; i++)
		push_pop(e, i, 1);
	mov_rsp(e, DJP_REG_RSP, upper, 0);
	lea_rsp(e, DJP_REG_RSP, RED_ZONE);
	tramp_return(e, r);
	memcpy(e->buf + to_back, &(int32_t){ (int32_t)(back - (to_back + 4)) }, 4);
	memcpy(e->buf + to_x87s, &(int32_t){ (int32_t)(resume_s - (to_x87s + 4)) }, 4);
	memcpy(e->buf + to_x87r, &(int32_t){ (int32_t)(resume_r - (to_x87r + 4)) }, 4);
	return e->n;
}

