/*
 * Private to the trampoline generator (tramp_*.c): its layout constants,
 * its shared state, and a tiny x86-64 emitter.  The generator writes the
 * code of each trampoline into a buffer, with absolute addresses known
 * (`at`), then the pool writes it through the text writer.
 */
#ifndef DJP_ARCH_X86_TRAMP_H
#define DJP_ARCH_X86_TRAMP_H

#include <stdint.h>
#include <string.h>

#include "arch/x86/arch.h"
#include "arch/x86/insn_reloc.h"
#include "arch/x86/vector_use.h"
#include "lib/argloc.h"

/* The data page: the slow-path dispatchers and the x87 slow paths at
 * these offsets, the slot sites from DJP_TRAMP_SITES_AT. */
#define HDR_LEAN 0
#define HDR_FULL 8
#define HDR_X87_SAVE 16
#define HDR_X87_RESTORE 24
#define RED_ZONE 128
#define VIEW DJP_REGS_SIZE /* struct djp_regs: 17 words */
/* Slots a full trampoline takes: its vector moves are inline (AVX-512:
 * about 1.1 KiB of code). */
#define FULL_SLOTS 3
#define MAX_SIZE (FULL_SLOTS * DJP_TRAMP_SLOT)

_Static_assert(DJP_TRAMP_SITES_AT >= HDR_X87_RESTORE + 8, "the data page holds header and slot table");
_Static_assert(DJP_TRAMP_DATA + DJP_TRAMP_SLOTS * DJP_TRAMP_SLOT == DJP_TRAMP_CHUNK, "slots fill the chunk");

/* What the kernel gave arch_tramp_init (tramp_pool.c). */
extern struct djp_tramp_ops djp_tramp_ops;
/* The widest vector class XCR0 enables (tramp_full.c). */
void djp_tramp_vector_init(void);

/* ---- the emitter ---- */
struct emit {
	uint8_t *buf;
	size_t n, cap; /* bytes emitted; room in buf (more is dropped) */
	uintptr_t at;  /* runtime address of buf[0] */
	int overflow;  /* something was dropped (or is wrong): not usable */
};

static inline int room(struct emit *e, size_t k)
{
	if (e->n + k <= e->cap)
		return 1;
	e->overflow = 1;
	return 0;
}
static inline void b1(struct emit *e, uint8_t v)
{
	if (room(e, 1))
		e->buf[e->n++] = v;
}
static inline void bytes(struct emit *e, const char *s, size_t n)
{
	if (room(e, n))
		memcpy(e->buf + e->n, s, n), e->n += n;
}
#define EMIT(e, lit) bytes(e, lit, sizeof(lit) - 1)
static inline void b4(struct emit *e, uint32_t v)
{
	if (room(e, 4))
		memcpy(e->buf + e->n, &v, 4), e->n += 4;
}
static inline void b8(struct emit *e, uint64_t v)
{
	if (room(e, 8))
		memcpy(e->buf + e->n, &v, 8), e->n += 8;
}
static inline void rel32(struct emit *e, uintptr_t target)
{
	/* a rel32 that ends the instruction: relative to the next byte */
	b4(e, (uint32_t)(int32_t)(target - (e->at + e->n + 4)));
}
/* After a call whose return address is a hit's key: that it is even (its
 * tag bit clear), or the code is not to be used. */
static inline void key_check(struct emit *e)
{
	if ((e->at + e->n) & DJP_HIT_KEY_SITE)
		e->overflow = 1;
}

/* A forward rel32 branch (0f 8x / e9), its displacement filled in later. */
static inline size_t jcc32(struct emit *e, uint8_t cc)
{
	if (cc == 0xe9)
		b1(e, 0xe9);
	else
		b1(e, 0x0f), b1(e, cc);
	b4(e, 0);
	return e->n - 4;
}
#define JMP 0xe9

/* Hardware register numbers, indexed by enum djp_reg. */
static const uint8_t hw[16] __attribute__((unused)) = { 0, 1, 2, 6, 7, 8, 9, 10, 11, 3, 5, 12, 13, 14, 15, 4 };

/* mov %reg,disp(%rsp) (store=1) or mov disp(%rsp),%reg; disp8 where it
 * fits (5-byte instructions instead of 8: the front end decodes fewer). */
static inline void mov_rsp(struct emit *e, int reg, int32_t disp, int store)
{
	uint8_t r = hw[reg];
	int short_disp = disp >= -128 && disp <= 127;
	b1(e, 0x48 | (r >= 8 ? 0x04 : 0));
	b1(e, store ? 0x89 : 0x8b);
	b1(e, (short_disp ? 0x44 : 0x84) | (uint8_t)((r & 7) << 3)); /* mod=01/10 r/m=100 (SIB) */
	b1(e, 0x24);						    /* SIB: base=rsp, no index */
	if (short_disp)
		b1(e, (uint8_t)(int8_t)disp);
	else
		b4(e, (uint32_t)disp);
}

/* lea disp(%rsp),%reg  (%rsp, %rax or %rdi) */
static inline void lea_rsp(struct emit *e, int reg, int32_t disp)
{
	uint8_t r = hw[reg];
	int short_disp = disp >= -128 && disp <= 127;
	b1(e, 0x48), b1(e, 0x8d);
	b1(e, (short_disp ? 0x44 : 0x84) | (uint8_t)(r << 3));
	b1(e, 0x24);
	if (short_disp)
		b1(e, (uint8_t)(int8_t)disp);
	else
		b4(e, (uint32_t)disp);
}

/* A branch back to `to` (already emitted): short where it reaches. */
static inline void jcc_back(struct emit *e, uint8_t cc8, size_t to)
{
	if (e->n + 2 - to <= 128) {
		b1(e, cc8), b1(e, (uint8_t)(int8_t)((intptr_t)to - (intptr_t)(e->n + 1)));
	} else {
		b1(e, 0x0f), b1(e, (uint8_t)(cc8 + 0x10)); /* 7x rel8 -> 0f 8x rel32 */
		b4(e, (uint32_t)(int32_t)((intptr_t)to - (intptr_t)(e->n + 4)));
	}
}
#define JNE8 0x75
#define JZ8 0x74

/* push %reg / pop %reg */
static inline void push_pop(struct emit *e, int reg, int pop)
{
	uint8_t r = hw[reg];
	if (r >= 8)
		b1(e, 0x41);
	b1(e, (uint8_t)((pop ? 0x58 : 0x50) | (r & 7)));
}

/* ModRM (mod 01/10, r/m = SIB) + SIB (base %rsp) + displacement. */
static inline void rsp_operand(struct emit *e, int regf, int32_t disp, int scale8)
{
	int32_t d8 = scale8 ? disp / scale8 : disp;
	int short_disp = (!scale8 || disp % scale8 == 0) && d8 >= -128 && d8 <= 127;
	b1(e, (uint8_t)((short_disp ? 0x44 : 0x84) | (regf & 7) << 3));
	b1(e, 0x24);
	if (short_disp)
		b1(e, (uint8_t)(int8_t)d8);
	else
		b4(e, (uint32_t)disp);
}

/*
 * The frame.  `view` is where the register view starts, relative to %rsp
 * once the frame is built; `saved_rsp` is where the stack pointer from
 * before the alignment is kept (dynamic alignment only, else -1), and
 * `to_site_rsp` what to add to the current %rsp (static) or to the saved
 * one (dynamic) to get the %rsp the site had.
 */
struct frame {
	int32_t view, saved_rsp, size, to_site_rsp;
};

/*
 * The stub that calls the C dispatcher at data-page offset `hdr_off` with
 * the hit at %rsp, then jumps back; emitted first in a slot.  Returns
 * where it starts; *to_back is the jump's displacement, to fill in.
 */
static inline size_t emit_slow_stub(struct emit *e, int hdr_off, size_t *to_back)
{
	size_t at = e->n;
	if ((e->at + e->n + 3 + 6) & 1)
		EMIT(e, "\x48\x8d\x3c\x24"); /* lea (%rsp),%rdi: even return address */
	else
		EMIT(e, "\x48\x89\xe7"); /* mov %rsp,%rdi */
	EMIT(e, "\xff\x15"), rel32(e, (e->at & ~(DJP_TRAMP_CHUNK - 1)) + (uintptr_t)hdr_off); /* call *off(%rip) */
	key_check(e);
	*to_back = jcc32(e, JMP);
	return at;
}

/*
 * An instruction probe's trampoline (r->code): the flags may be live at
 * any instruction, and the trampoline's own code changes them, so its
 * first act is to step over the red zone and keep them, and its last to
 * put them back and come back up; then the instructions the jump
 * displaced run, relocated, and jump back (arch/x86/insn_reloc.c).  The
 * view's %rsp and the alignment count the POINT_PRE bytes.
 *
 * The status flags are kept with lahf and seto and given back with an add
 * that recreates OF and sahf, not with pushfq/popfq: popfq is
 * microcoded, and the pair cost about 4 ns a hit on the machine measured,
 * three times what the rest of a lean trampoline costs.  Nothing here
 * touches DF or the system flags.  Where the flags are dead (a function's
 * entry, where the ABI gives them no value, or code that sets them all
 * before it reads one: djp_insn_flags_dead) they are not kept at all.
 */
#define POINT_PRE (RED_ZONE + 16)
static inline int32_t point_pre(const struct djp_tramp_req *r)
{
	return r->code && r->keep_flags ? POINT_PRE : 0;
}
/* The probe's address: the site's, or past the run's part before it. */
static inline uintptr_t tramp_pc(const struct djp_tramp_req *r)
{
	return r->site + (r->code ? r->pre : 0);
}
/*
 * A run that starts before its site (r->pre): its instructions before the
 * site run first, relocated, with the program's own stack and flags, so
 * that what the trampoline saves next, and the handlers see, is the state
 * at the site; the jump back at the end goes past the whole run.
 */
static inline void point_prologue(struct emit *e, const struct djp_tramp_req *r)
{
	if (r->code && r->pre && !e->overflow && e->n < e->cap) {
		ssize_t k = djp_insn_relocate_on(r->code, r->pre, r->site, e->at + e->n, e->buf + e->n,
						 e->cap - e->n, NULL);
		if (k <= 0)
			e->overflow = 1;
		else
			e->n += (size_t)k;
	}
	if (r->code && r->keep_flags) {
		lea_rsp(e, DJP_REG_RSP, -RED_ZONE);
		b1(e, 0x50);		     /* push %rax */
		b1(e, 0x9f);		     /* lahf: SF ZF AF PF CF in %ah */
		EMIT(e, "\x0f\x90\xc0");     /* seto %al */
		b1(e, 0x50);		     /* push %rax: the flags */
		EMIT(e, "\x48\x8b\x44\x24\x08"); /* mov 8(%rsp),%rax */
	}
}
/* The way back: `jmp site+len`, or the flags and the displaced code. */
static inline void tramp_return(struct emit *e, const struct djp_tramp_req *r)
{
	ssize_t k;
	if (!r->code) {
		b1(e, 0xe9), rel32(e, r->site + r->len); /* jmp site+len */
		return;
	}
	if (r->keep_flags) {
		EMIT(e, "\x48\x89\x44\x24\x08"); /* mov %rax,8(%rsp) */
		b1(e, 0x58);		     /* pop %rax: the flags */
		EMIT(e, "\x04\x7f");	     /* add $0x7f,%al: OF as it was */
		b1(e, 0x9e);		     /* sahf */
		b1(e, 0x58);		     /* pop %rax */
		lea_rsp(e, DJP_REG_RSP, RED_ZONE);
	}
	if (e->overflow || e->n >= e->cap)
		return;
	k = djp_insn_relocate(r->code + r->pre, r->len - r->pre, tramp_pc(r), e->at + e->n, e->buf + e->n,
			      e->cap - e->n, NULL, NULL);
	if (k <= 0)
		e->overflow = 1;
	else
		e->n += (size_t)k;
}

/* tramp_lean.c */
void djp_tramp_save_view(struct emit *e, const struct frame *f, uint32_t save, const struct djp_tramp_req *r);
void djp_tramp_fast_call(struct emit *e, const struct djp_tramp_req *r, size_t slow, int32_t hit, int32_t off);
size_t djp_tramp_gen_lean(struct emit *e, const struct djp_tramp_req *r, uintptr_t *entry, int prefetch);
/* tramp_full.c */
size_t djp_tramp_gen_full(struct emit *e, const struct djp_tramp_req *r, uintptr_t *entry);
/* tramp_args.c: load the site's arguments into %rdx, %rcx, %r8, %r9 */
void djp_tramp_prefetch(struct emit *e, const struct djp_tramp_req *r, const struct frame *f);

#endif
