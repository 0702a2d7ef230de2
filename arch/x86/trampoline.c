/*
 * Trampolines: where a jump-armed site goes.
 *
 * Each site gets its own trampoline per flavour, generated at run time into a
 * pool mapped within a rel32 (+-2 GiB) of the site, so that the site's
 * `jmp rel32` reaches it and its `jmp rel32` back reaches site+6.  A pool
 * chunk (DJP_TRAMP_CHUNK bytes, aligned to its size) is one RW data page
 * followed by RX code slots: the data page holds what every trampoline of
 * the chunk reaches RIP-relative (the dispatchers, the vector save and
 * restore routines) and, at its end, the site of each slot, so that any
 * address inside a trampoline names its site (arch_hit_site).  What is
 * particular to a site (the word its handler list is published in, its
 * key) is in the code as 64-bit constants.  Code never changes once
 * written and is reused whenever its site is armed again.  It is written
 * through the text writer (text.c) before any site jumps to it; chunks are
 * never unmapped, because a preempted thread may sit inside a trampoline
 * at any time (uprobes never unmaps its XOL page for the same reason).
 *
 * What a hit costs is, to first order, what it stores: the nine
 * caller-saved registers and the return address, as in any hand-written
 * patch, and the lean flavour adds only the two stores of the RCU read
 * side.  So the lean trampoline builds nothing it does not need:
 *
 *   lea  -(128+F)(%rsp),%rsp    step over the SysV red zone (a leaf may
 *                               keep live data below %rsp) and make room
 *                               for the register view (136 bytes)
 *   mov  %reg,off(%rsp)         the nine caller-saved registers, and the
 *                               callee-saved ones (and %rsp, %rip) only
 *                               where the site's arguments live in them
 *   mov  %fs:reader,%rcx        the RCU fast path (kernel/rcu.h): a
 *   cmpl $0,(%rcx) ; jne slow   registered thread outside every read-
 *                               side section enters by storing the
 *   movabs gp_ctr,%rax          grace-period counter (plus our nesting
 *   add  $ours,%rax             count) in its reader word
 *   mov  %rax,(%rcx)
 *   movabs handlers,%rax        the site's list, NULL when it has none
 *   test %rax,%rax ; jz leave
 *   mov  %rsp,%rdi              fn(hit, data): the only handler, or the
 *   mov  8(%rax),%rsi           function that runs a longer list; the
 *   call *(%rax)                return address is the hit's key
 * leave:
 *   mov  %fs:reader,%rcx ; movq $0,(%rcx)
 * back:
 *   mov  off(%rsp),%reg  x9
 *   lea  (128+F)(%rsp),%rsp
 *   jmp  site+6
 * slow:
 *   mov  %rsp,%rdi ; call *lean_slow(%rip) ; jmp back
 *
 * No register is spent on aligning the stack: the site's unwind
 * information (lib/markers_elf.c) says what %rsp is modulo 16 there, and F
 * (136 or 144) is chosen so that the call finds it 16-byte aligned.  Where
 * it does not say, the trampoline aligns at run time and keeps the old
 * %rsp in the frame (two more stores).  The word below the view is the
 * return address of the call, which names the site (regs.h): the code is
 * laid out so that it is even, the key's tag bit clear.
 *
 * The flags need no saving: an asm statement clobbers them on x86, so the
 * compiler holds nothing in them across a marker.
 *
 * The full flavour, for any C handler, also saves the vector state: libc's
 * memcpy and printf use vector registers, and the interrupted code may have
 * live values in every one of them.  It builds the same view plus the key
 * (the site with its tag bit), then saves the vector registers below it
 * with the routines of vector_save.S, calls the C dispatcher (which does
 * the read side itself: the vector save costs far more), and restores.
 * The x87 register stack is empty at every point where the compiler could
 * call a function, and so in nearly all code around a marker; `fnstsw`
 * tells (TOP != 0) when it is not, and then the trampoline takes the
 * XSAVEC (or XSAVE) path for the whole extended state instead.
 */
#include <cpuid.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch/x86/arch.h"
#include "arch/x86/common.h"
#include "lib/sysops.h"
#include "lib/vector_use.h"

/* The data page: dispatchers and vector routines at these offsets, the
 * slot sites from DJP_TRAMP_SITES_AT. */
#define HDR_LEAN 0
#define HDR_FULL 8
#define HDR_X87_SAVE 16
#define HDR_X87_RESTORE 24
#define RED_ZONE 128
/* Slots a full trampoline takes: its vector moves are inline (AVX-512:
 * about 1.1 KiB of code). */
#define FULL_SLOTS 3
#define MAX_SIZE (FULL_SLOTS * DJP_TRAMP_SLOT)
#define REGION (1UL << 20) /* where a jump's target had best be (see the top) */
#define VIEW DJP_REGS_SIZE /* struct djp_regs: 17 words */

_Static_assert(DJP_TRAMP_SITES_AT >= HDR_X87_RESTORE + 8, "the data page holds header and slot table");
_Static_assert(DJP_TRAMP_DATA + DJP_TRAMP_SLOTS * DJP_TRAMP_SLOT == DJP_TRAMP_CHUNK, "slots fill the chunk");

struct chunk {
	uintptr_t base; /* data page; code starts at base + DJP_TRAMP_DATA */
	unsigned used;
	struct chunk *next;
};

static struct chunk *chunks;
static struct djp_tramp_ops ops;
static size_t xsave_size;
static int use_xsavec;
/*
 * The vector save the full flavour emits inline: as wide as XCR0 enables
 * and the site's object uses (lib/vector_use.h), and the layout of its
 * area (vector_save.S has the table, and the x87 slow paths the code
 * calls).
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
void djp_x87_save(void), djp_x87_restore(void);
static pthread_mutex_t tramp_lock = PTHREAD_MUTEX_INITIALIZER;

size_t arch_xsave_size(void)
{
	return xsave_size;
}

void arch_vector_save(void *area)
{
	if (use_xsavec)
		__asm__ volatile("xsavec64 (%0)" ::"r"(area), "a"(-1), "d"(-1) : "memory");
	else
		__asm__ volatile("xsave64 (%0)" ::"r"(area), "a"(-1), "d"(-1) : "memory");
}

void arch_vector_restore(void *area)
{
	__asm__ volatile("xrstor64 (%0)" ::"r"(area), "a"(-1), "d"(-1) : "memory");
}

int arch_tramp_init(const struct djp_tramp_ops *o)
{
	unsigned a, b, c, d;
	ops = *o;
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_XSAVE) || !(c & bit_OSXSAVE))
		return -ENOTSUP; /* no XSAVE: only the lean flavour and int3 serve */
	__cpuid_count(0xd, 1, a, b, c, d);
	use_xsavec = !!(a & (1u << 1));
	if (use_xsavec) {
		xsave_size = b;
	} else {
		__cpuid_count(0xd, 0, a, b, c, d);
		xsave_size = b;
	}
	xsave_size = (xsave_size + 63) & ~(size_t)63;
	{
		uint32_t xcr0_lo, xcr0_hi;
		__asm__ volatile("xgetbv" : "=a"(xcr0_lo), "=d"(xcr0_hi) : "c"(0));
		__cpuid_count(7, 0, a, b, c, d);
		if ((xcr0_lo & 0xe6) == 0xe6 && (b & bit_AVX512F) && (b & bit_AVX512BW))
			vclass = V_AVX512;
		else if ((xcr0_lo & 0x6) == 0x6)
			vclass = V_AVX;
		else
			vclass = V_SSE;
	}
	return 0;
}

/* ---- a tiny emitter ---- */
struct emit {
	uint8_t *buf;
	size_t n, cap; /* bytes emitted; room in buf (more is dropped) */
	uintptr_t at;  /* runtime address of buf[0] */
	int overflow;  /* something was dropped (or is wrong): not usable */
};

static int room(struct emit *e, size_t k)
{
	if (e->n + k <= e->cap)
		return 1;
	e->overflow = 1;
	return 0;
}
static void b1(struct emit *e, uint8_t v)
{
	if (room(e, 1))
		e->buf[e->n++] = v;
}
static void bytes(struct emit *e, const char *s, size_t n)
{
	if (room(e, n))
		memcpy(e->buf + e->n, s, n), e->n += n;
}
#define EMIT(e, lit) bytes(e, lit, sizeof(lit) - 1)
static void b4(struct emit *e, uint32_t v)
{
	if (room(e, 4))
		memcpy(e->buf + e->n, &v, 4), e->n += 4;
}
static void b8(struct emit *e, uint64_t v)
{
	if (room(e, 8))
		memcpy(e->buf + e->n, &v, 8), e->n += 8;
}
static void rel32(struct emit *e, uintptr_t target)
{
	/* a rel32 that ends the instruction: relative to the next byte */
	b4(e, (uint32_t)(int32_t)(target - (e->at + e->n + 4)));
}
/* After a call whose return address is a hit's key: that it is even (its
 * tag bit clear), or the code is not to be used. */
static void key_check(struct emit *e)
{
	if ((e->at + e->n) & DJP_HIT_KEY_SITE)
		e->overflow = 1;
}

/* A forward rel32 branch (0f 8x / e9), its displacement filled in later. */
static size_t jcc32(struct emit *e, uint8_t cc)
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
static const uint8_t hw[16] = { 0, 1, 2, 6, 7, 8, 9, 10, 11, 3, 5, 12, 13, 14, 15, 4 };

/* mov %reg,disp(%rsp) (store=1) or mov disp(%rsp),%reg; disp8 where it
 * fits (5-byte instructions instead of 8: the front end decodes fewer). */
static void mov_rsp(struct emit *e, int reg, int32_t disp, int store)
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
static void lea_rsp(struct emit *e, int reg, int32_t disp)
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

/* mov %fs:reader,%rsi: the thread's RCU reader pointer (in %rsi, which
 * carries the handler's data only later, so that the prefetched arguments
 * can stay in %rdx, %rcx, %r8 and %r9). */
static void load_reader(struct emit *e)
{
	EMIT(e, "\x64\x48\x8b\x34\x25"), b4(e, (uint32_t)(int32_t)ops.reader_tls);
}

/* Registers every trampoline saves: what a C call clobbers. */
#define CALLER_SAVED                                                                                         \
	((1u << DJP_REG_RAX) | (1u << DJP_REG_RCX) | (1u << DJP_REG_RDX) | (1u << DJP_REG_RSI) |          \
	 (1u << DJP_REG_RDI) | (1u << DJP_REG_R8) | (1u << DJP_REG_R9) | (1u << DJP_REG_R10) |            \
	 (1u << DJP_REG_R11))

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

/* Save the registers into the view; %rax is free afterwards. */
static void save_view(struct emit *e, const struct frame *f, uint32_t save, const struct djp_tramp_req *r)
{
	for (int i = 0; i < 16; i++)
		if (i != DJP_REG_RSP && (save & (1u << i)))
			mov_rsp(e, i, f->view + 8 * i, 1);
	if (r->regs_used & (1u << DJP_REG_RSP)) {
		if (f->saved_rsp < 0) {
			lea_rsp(e, DJP_REG_RAX, f->to_site_rsp);
		} else {
			mov_rsp(e, DJP_REG_RAX, f->saved_rsp, 0);
			EMIT(e, "\x48\x05"), b4(e, (uint32_t)f->to_site_rsp); /* add $n,%rax */
		}
		mov_rsp(e, DJP_REG_RAX, f->view + 8 * DJP_REG_RSP, 1);
	}
	if (r->regs_used & (1u << DJP_REG_RIP)) {
		EMIT(e, "\x48\x8d\x05"), rel32(e, r->site); /* lea site(%rip),%rax */
		mov_rsp(e, DJP_REG_RAX, f->view + 8 * DJP_REG_RIP, 1);
	}
}

/* ---- the argument prefetch ---- */

/* An instruction's register or memory operand, by hardware numbers. */
struct operand {
	int is_mem;
	int reg;	 /* !is_mem */
	int base, index; /* is_mem: -1 for none */
	int scale;	 /* 1, 2, 4, 8 */
	int32_t disp;
};

/* REX, opcode, ModRM (+ SIB, displacement) for `op regf, operand`. */
static void emit_rm(struct emit *e, int w, const char *op, size_t oplen, int regf, const struct operand *o)
{
	uint8_t rex = (uint8_t)(0x40 | (w ? 8 : 0) | ((regf & 8) ? 4 : 0));
	if (!o->is_mem) {
		/* always a REX: the byte registers are then %sil, %dil, ... */
		b1(e, (uint8_t)(rex | ((o->reg & 8) ? 1 : 0)));
		bytes(e, op, oplen);
		b1(e, (uint8_t)(0xc0 | (regf & 7) << 3 | (o->reg & 7)));
		return;
	}
	int ss = o->scale == 8 ? 3 : o->scale == 4 ? 2 : o->scale == 2 ? 1 : 0;
	int idx = o->index >= 0 ? (o->index & 7) : 4; /* 100: no index */
	rex |= (uint8_t)((o->index >= 0 && (o->index & 8)) ? 2 : 0);
	rex |= (uint8_t)((o->base >= 0 && (o->base & 8)) ? 1 : 0);
	b1(e, rex);
	bytes(e, op, oplen);
	if (o->base < 0) { /* disp32 with no base: SIB base=101, mod=00 */
		b1(e, (uint8_t)(0x04 | (regf & 7) << 3));
		b1(e, (uint8_t)(ss << 6 | idx << 3 | 5));
		b4(e, (uint32_t)o->disp);
		return;
	}
	int mod = (o->disp == 0 && (o->base & 7) != 5) ? 0 : (o->disp >= -128 && o->disp <= 127) ? 1 : 2;
	if (o->index >= 0 || (o->base & 7) == 4) {
		b1(e, (uint8_t)(mod << 6 | (regf & 7) << 3 | 4));
		b1(e, (uint8_t)(ss << 6 | idx << 3 | (o->base & 7)));
	} else {
		b1(e, (uint8_t)(mod << 6 | (regf & 7) << 3 | (o->base & 7)));
	}
	if (mod == 1)
		b1(e, (uint8_t)(int8_t)o->disp);
	else if (mod == 2)
		b4(e, (uint32_t)o->disp);
}

/* dst = the low `size` bytes of the operand, sign- or zero-extended. */
static void load_extended(struct emit *e, int dst, unsigned size, int is_signed, const struct operand *o)
{
	switch (size) {
	case 1:
		emit_rm(e, is_signed, is_signed ? "\x0f\xbe" : "\x0f\xb6", 2, dst, o); /* movsbq / movzbl */
		break;
	case 2:
		emit_rm(e, is_signed, is_signed ? "\x0f\xbf" : "\x0f\xb7", 2, dst, o); /* movswq / movzwl */
		break;
	case 4:
		emit_rm(e, is_signed, is_signed ? "\x63" : "\x8b", 1, dst, o); /* movslq / movl */
		break;
	default:
		emit_rm(e, 1, "\x8b", 1, dst, o); /* movq */
		break;
	}
}

/* The handler's third to sixth argument registers: %rdx %rcx %r8 %r9. */
static const uint8_t prefetch_reg[DJP_TRAMP_PREFETCH] = { 2, 1, 8, 9 };

static int prefetchable(const struct djp_argloc *a)
{
	if (a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
		return 0;
	switch (a->kind) {
	case DJP_LOC_REG:
		return a->reg >= 0 && a->reg < DJP_REG_RIP && !a->reg_shift && (a->reg != DJP_REG_RSP || a->size == 8);
	case DJP_LOC_MEM:
		return a->reg < DJP_REG_RIP && (a->index == DJP_REG_NONE || (a->index >= 0 && a->index < DJP_REG_RSP)) &&
		       a->disp >= INT32_MIN / 2 && a->disp <= INT32_MAX / 2;
	case DJP_LOC_IMM:
	case DJP_LOC_ABS:
	case DJP_LOC_NONE:
		return 1;
	default:
		return 0;
	}
}

int arch_tramp_prefetches(const struct djp_argloc *args, unsigned nargs)
{
	if (nargs > DJP_TRAMP_PREFETCH)
		return 0;
	for (unsigned i = 0; i < nargs; i++)
		if (!prefetchable(&args[i]))
			return 0;
	return 1;
}

/*
 * Where the value of register `reg` (enum djp_reg) is now, for a read: in
 * the register itself, unless an earlier prefetch overwrote it (`dirty`,
 * hardware numbers), then in its slot of the view.  %rsp is the site's,
 * which `f` says how to get.
 */
static struct operand reg_source(int reg, uint32_t dirty, const struct frame *f)
{
	struct operand o = { 0, hw[reg], -1, -1, 1, 0 };
	if (dirty & (1u << hw[reg]))
		o = (struct operand){ 1, 0, 4, -1, 1, f->view + 8 * reg };
	return o;
}

/* A base register for an address: the register, or `scratch` loaded with
 * its value; %rsp becomes the site's %rsp by adjusting *disp. */
static int base_reg(struct emit *e, int reg, uint32_t dirty, const struct frame *f, int scratch, int32_t *disp)
{
	struct operand o;
	if (reg == DJP_REG_RSP) {
		if (f->saved_rsp < 0) {
			*disp += f->to_site_rsp;
			return 4;
		}
		o = (struct operand){ 1, 0, 4, -1, 1, f->saved_rsp };
		emit_rm(e, 1, "\x8b", 1, scratch, &o);
		*disp += f->to_site_rsp;
		return scratch;
	}
	if (!(dirty & (1u << hw[reg])))
		return hw[reg];
	o = reg_source(reg, dirty, f);
	emit_rm(e, 1, "\x8b", 1, scratch, &o);
	return scratch;
}

/* Load each argument into its prefetch register (scratch: %r10, %r11,
 * which the trampoline saved). */
static void emit_prefetch(struct emit *e, const struct djp_tramp_req *r, const struct frame *f)
{
	uint32_t dirty = 0;
	for (unsigned i = 0; i < r->nargs; i++) {
		const struct djp_argloc *a = &r->args[i];
		int d = prefetch_reg[i];
		struct operand o;
		int32_t disp = (int32_t)a->disp;
		switch (a->kind) {
		case DJP_LOC_REG:
			if (a->reg == DJP_REG_RSP) {
				if (f->saved_rsp < 0) {
					o = (struct operand){ 1, 0, 4, -1, 1, f->to_site_rsp };
				} else {
					o = (struct operand){ 1, 0, 4, -1, 1, f->saved_rsp };
					emit_rm(e, 1, "\x8b", 1, d, &o);
					o = (struct operand){ 1, 0, d, -1, 1, f->to_site_rsp };
				}
				emit_rm(e, 1, "\x8d", 1, d, &o); /* lea */
				break;
			}
			o = reg_source(a->reg, dirty, f);
			load_extended(e, d, a->size, a->is_signed, &o);
			break;
		case DJP_LOC_MEM: {
			int base = a->reg == DJP_REG_NONE ? -1 : base_reg(e, a->reg, dirty, f, 10, &disp);
			int index = a->index == DJP_REG_NONE ? -1 : base_reg(e, a->index, dirty, f, 11, &(int32_t){ 0 });
			o = (struct operand){ 1, 0, base, index, a->scale ? a->scale : 1, disp };
			load_extended(e, d, a->size, a->is_signed, &o);
			break;
		}
		case DJP_LOC_IMM:
			if (a->disp >= INT32_MIN && a->disp <= INT32_MAX) {
				o = (struct operand){ 0, d, -1, -1, 1, 0 };
				emit_rm(e, 1, "\xc7", 1, 0, &o); /* mov $imm32,%d */
				b4(e, (uint32_t)(int32_t)a->disp);
			} else {
				b1(e, (uint8_t)(0x48 | ((d & 8) ? 1 : 0))), b1(e, (uint8_t)(0xb8 | (d & 7)));
				b8(e, (uint64_t)a->disp); /* movabs $imm64,%d */
			}
			break;
		case DJP_LOC_ABS:
			b1(e, (uint8_t)(0x48 | ((d & 8) ? 1 : 0))), b1(e, (uint8_t)(0xb8 | (d & 7)));
			b8(e, (uint64_t)(r->bias + (uintptr_t)a->disp)); /* movabs $addr,%d */
			o = (struct operand){ 1, 0, d, -1, 1, 0 };
			load_extended(e, d, a->size, a->is_signed, &o);
			break;
		default: /* unknown: reads as 0 */
			o = (struct operand){ 0, d, -1, -1, 1, 0 };
			emit_rm(e, 0, "\x31", 1, d, &o); /* xor %d,%d */
			break;
		}
		dirty |= 1u << d;
	}
}

/* push %reg / pop %reg */
static void push_pop(struct emit *e, int reg, int pop)
{
	uint8_t r = hw[reg];
	if (r >= 8)
		b1(e, 0x41);
	b1(e, (uint8_t)((pop ? 0x58 : 0x50) | (r & 7)));
}

/* A branch back to `to` (already emitted): short where it reaches. */
static void jcc_back(struct emit *e, uint8_t cc8, size_t to)
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

/*
 * The RCU fast path and the call of the fast handler found `off` bytes
 * into the site's published list, with the hit at hit(%rsp); a thread the
 * fast path does not serve goes to the stub at `slow`.
 */
static void emit_fast_call(struct emit *e, const struct djp_tramp_req *r, size_t slow, int32_t hit, int32_t off)
{
	size_t to_leave;
	load_reader(e);
	EMIT(e, "\x83\x3e\x00"); /* cmpl $0,(%rsi) */
	jcc_back(e, JNE8, slow);
	EMIT(e, "\x48\xa1"), b8(e, (uintptr_t)ops.gp_ctr);  /* movabs gp_ctr,%rax */
	EMIT(e, "\x48\x05"), b4(e, (uint32_t)ops.enter_add); /* add $n,%rax */
	EMIT(e, "\x48\x89\x06");			     /* mov %rax,(%rsi) */
	if (ops.need_mb)
		EMIT(e, "\x0f\xae\xf0"); /* mfence */
	EMIT(e, "\x48\xa1"), b8(e, (uintptr_t)r->list); /* movabs handlers,%rax */
	EMIT(e, "\x48\x85\xc0");			/* test %rax,%rax */
	b1(e, JZ8), b1(e, 0), to_leave = e->n - 1;
	if (hit) {
		lea_rsp(e, DJP_REG_RDI, hit);
	} else if ((e->at + e->n + 3 + 4 + (off ? 3 : 2)) & 1) {
		/* mov %rsp,%rdi or lea (%rsp),%rdi: whichever leaves the
		 * call's return address (the lean hit's key) even */
		EMIT(e, "\x48\x8d\x3c\x24");
	} else {
		EMIT(e, "\x48\x89\xe7");
	}
	EMIT(e, "\x48\x8b\x70"), b1(e, (uint8_t)(off + 8)); /* mov off+8(%rax),%rsi */
	if (off)
		EMIT(e, "\xff\x50"), b1(e, (uint8_t)off); /* call *off(%rax) */
	else
		EMIT(e, "\xff\x10"); /* call *(%rax) */
	if (!hit)
		key_check(e);
	e->buf[to_leave] = (uint8_t)(e->n - (to_leave + 1));
	if (ops.need_mb)
		EMIT(e, "\x0f\xae\xf0");
	load_reader(e);
	EMIT(e, "\x48\xc7\x06\x00\x00\x00\x00"); /* movq $0,(%rsi) */
}

/*
 * The lean flavour.  The slow stub comes first, so that the fast path's
 * branches to it are short; the view is built by nine pushes (the caller-
 * saved registers lead struct djp_regs) below the room for the rest.
 */
static size_t gen_lean(struct emit *e, const struct djp_tramp_req *r, uintptr_t *entry, int prefetch)
{
	struct frame f = { 0, -1, 0, 0 };
	const int32_t upper = VIEW - 8 * (DJP_REG_R11 + 1); /* the view above the pushes */
	size_t slow, to_back, back;
	uintptr_t hdr = (e->at & ~(DJP_TRAMP_CHUNK - 1));

	/* slow: the C dispatcher decides (%rsp is the hit) */
	slow = e->n;
	if ((e->at + e->n + 3 + 6) & 1)
		EMIT(e, "\x48\x8d\x3c\x24"); /* lea (%rsp),%rdi: even return address */
	else
		EMIT(e, "\x48\x89\xe7"); /* mov %rsp,%rdi */
	EMIT(e, "\xff\x15"), rel32(e, hdr + HDR_LEAN); /* call *lean_slow(%rip) */
	key_check(e);
	to_back = jcc32(e, JMP);

	/* The entry on a 64-byte boundary: the front end fetches the hot
	 * path in the fewest windows (measured: up to 0.3 ns a hit). */
	while (e->n < 64)
		b1(e, 0xcc);
	*entry = e->at + e->n;
	if (r->sp_align == 0 || r->sp_align == 8) {
		/* Static alignment: the view at %rsp, 16-byte aligned after the
		 * pushes.  Slots above the pushes that no argument reads need no
		 * room: nothing ever reads them. */
		int32_t above = (r->regs_used & ~CALLER_SAVED) ? upper : 0;
		int32_t pad = (r->sp_align - RED_ZONE - above - 8 * (DJP_REG_R11 + 1)) & 15;
		f.size = RED_ZONE + pad + above;
		f.to_site_rsp = f.size + 8 * (DJP_REG_R11 + 1);
		lea_rsp(e, DJP_REG_RSP, -f.size);
	} else {
		/* Step over the red zone, align, keep the old %rsp above the
		 * view (as frame_dynamic does, the pushes still to come). */
		lea_rsp(e, DJP_REG_RSP, -RED_ZONE);
		b1(e, 0x50);
		lea_rsp(e, DJP_REG_RAX, 8);
		EMIT(e, "\x48\x83\xe4\xf0"); /* and $-16,%rsp */
		lea_rsp(e, DJP_REG_RSP, -(upper + 8));
		mov_rsp(e, DJP_REG_RAX, upper, 1);
		EMIT(e, "\x48\x8b\x40\xf8"); /* mov -8(%rax),%rax */
		f.saved_rsp = VIEW;
		f.to_site_rsp = RED_ZONE;
	}
	for (int i = DJP_REG_R11; i >= DJP_REG_RAX; i--)
		push_pop(e, i, 0);
	save_view(e, &f, r->regs_used & ~(CALLER_SAVED | 1u << DJP_REG_RSP | 1u << DJP_REG_RIP), r);
	if (prefetch && !arch_tramp_prefetches(r->args, r->nargs))
		e->overflow = 1; /* cannot: this flavour is not to be made */
	else if (prefetch)
		emit_prefetch(e, r, &f);

	emit_fast_call(e, r, slow, 0, prefetch ? (int32_t)ops.prefetch_call : 0);
	back = e->n;
	for (int i = DJP_REG_RAX; i <= DJP_REG_R11; i++)
		push_pop(e, i, 1);
	if (f.saved_rsp < 0) {
		lea_rsp(e, DJP_REG_RSP, f.size);
	} else {
		mov_rsp(e, DJP_REG_RSP, upper, 0);
		lea_rsp(e, DJP_REG_RSP, RED_ZONE);
	}
	b1(e, 0xe9), rel32(e, r->site + r->len); /* jmp site+len */
	/* the slow stub's jmp back */
	memcpy(e->buf + to_back, &(int32_t){ (int32_t)(back - (to_back + 4)) }, 4);
	return e->n;
}

/* ---- the vector save, inline ---- */

/* ModRM (mod 01/10, r/m = SIB) + SIB (base %rsp) + displacement. */
static void rsp_operand(struct emit *e, int regf, int32_t disp, int scale8)
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

/* Save every vector register, the opmask registers, MXCSR and the x87
 * status word into the area at area(%rsp); then, when the x87 stack is in
 * use (TOP != 0) or an exception is pending, go to the stub at x87 (which
 * comes back to just after). */
static void emit_vsave(struct emit *e, enum vclass vc, int32_t area, size_t x87, size_t *resume)
{
	const struct vlayout *l = &vlayouts[vc];
	int nregs = vc == V_AVX512 ? 32 : 16, width = vc == V_SSE ? 16 : vc == V_AVX ? 32 : 64;
	EMIT(e, "\x0f\xae"), rsp_operand(e, 3, area + (int32_t)l->mxcsr, 0); /* stmxcsr */
	EMIT(e, "\xdf\xe0");						      /* fnstsw %ax */
	EMIT(e, "\x66\x89"), rsp_operand(e, 0, area + (int32_t)l->fsw, 0);    /* mov %ax,fsw */
	for (int n = 0; n < nregs; n++)
		vmove(e, vc, n, area + width * n, 1);
	if (vc == V_AVX512)
		for (int n = 0; n < 8; n++)
			kmove(e, n, area + 2048 + 8 * n, 1);
	EMIT(e, "\xa9\x80\x38\x00\x00"); /* test $0x3880,%eax */
	jcc_back(e, JNE8, x87);
	*resume = e->n;
}

/* The way back: the x87 state first (a stub, when it was saved or the
 * handler changed the status word), MXCSR when the handler changed it,
 * then the registers. */
static void emit_vrestore(struct emit *e, enum vclass vc, int32_t area, size_t x87, size_t *resume)
{
	const struct vlayout *l = &vlayouts[vc];
	int nregs = vc == V_AVX512 ? 32 : 16, width = vc == V_SSE ? 16 : vc == V_AVX ? 32 : 64;
	size_t je;
	for (int n = 0; n < nregs; n++)
		vmove(e, vc, n, area + width * n, 0);
	if (vc == V_AVX512)
		for (int n = 0; n < 8; n++)
			kmove(e, n, area + 2048 + 8 * n, 0);
	EMIT(e, "\x0f\xae\x5c\x24\xfc");				  /* stmxcsr -4(%rsp) */
	EMIT(e, "\x8b\x44\x24\xfc");					  /* mov -4(%rsp),%eax */
	EMIT(e, "\x3b"), rsp_operand(e, 0, area + (int32_t)l->mxcsr, 0); /* cmp mxcsr,%eax */
	b1(e, 0x74), b1(e, 0), je = e->n - 1;
	EMIT(e, "\x0f\xae"), rsp_operand(e, 2, area + (int32_t)l->mxcsr, 0); /* ldmxcsr */
	e->buf[je] = (uint8_t)(e->n - (je + 1));
	EMIT(e, "\x0f\xb7"), rsp_operand(e, 2, area + (int32_t)l->fsw, 0); /* movzwl fsw,%edx */
	EMIT(e, "\xf7\xc2\x80\x38\x00\x00");			   /* test $0x3880,%edx */
	jcc_back(e, JNE8, x87);
	EMIT(e, "\xdf\xe0");	 /* fnstsw %ax */
	EMIT(e, "\x66\x39\xd0"); /* cmp %dx,%ax */
	jcc_back(e, JNE8, x87);
	*resume = e->n;
}

/*
 * The full flavour: the same view as the lean one (the return address of
 * the call to the handler names the site), built below a 64-byte aligned
 * vector area: from %rsp up (64-byte aligned), the view, the old %rsp,
 * padding, the area.  The
 * stubs that call the C dispatcher and the x87 slow paths come first.
 */
static size_t gen_full(struct emit *e, const struct djp_tramp_req *r, uintptr_t *entry)
{
	/* the area 64 bytes-aligned from %rsp too, for EVEX's scaled disp8 */
	const int32_t upper = VIEW - 8 * (DJP_REG_R11 + 1), area = (VIEW + 8 + 63) & ~63;
	const enum vclass vc = r->vec_use >= 0 && r->vec_use < (int)vclass ? (enum vclass)r->vec_use : vclass;
	const struct vlayout *l = &vlayouts[vc];
	struct frame f = { 0, VIEW, 0, RED_ZONE };
	uintptr_t hdr = (e->at & ~(DJP_TRAMP_CHUNK - 1));
	size_t slow, to_back, x87s, to_x87s, x87r, to_x87r, resume_s, resume_r, back;

	/* slow: the C dispatcher does the read side itself */
	slow = e->n;
	if ((e->at + e->n + 3 + 6) & 1)
		EMIT(e, "\x48\x8d\x3c\x24"); /* lea (%rsp),%rdi: even return address */
	else
		EMIT(e, "\x48\x89\xe7"); /* mov %rsp,%rdi */
	EMIT(e, "\xff\x15"), rel32(e, hdr + HDR_FULL); /* call *full_slow(%rip) */
	key_check(e);
	to_back = jcc32(e, JMP);
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

	lea_rsp(e, DJP_REG_RSP, -RED_ZONE);
	b1(e, 0x50);			 /* push %rax */
	lea_rsp(e, DJP_REG_RAX, 8);	 /* the old %rsp */
	EMIT(e, "\x48\x83\xe4\xc0");	 /* and $-64,%rsp */
	lea_rsp(e, DJP_REG_RSP, -(int32_t)(l->size + area - 8 * (DJP_REG_R11 + 1)));
	mov_rsp(e, DJP_REG_RAX, upper, 1);
	EMIT(e, "\x48\x8b\x40\xf8"); /* mov -8(%rax),%rax */
	for (int i = DJP_REG_R11; i >= DJP_REG_RAX; i--)
		push_pop(e, i, 0);
	save_view(e, &f, r->regs_used & ~(CALLER_SAVED | 1u << DJP_REG_RSP | 1u << DJP_REG_RIP), r);
	emit_vsave(e, vc, area, x87s, &resume_s);
	emit_fast_call(e, r, slow, 0, (int32_t)ops.full_call);
	back = e->n;
	emit_vrestore(e, vc, area, x87r, &resume_r);
	for (int i = DJP_REG_RAX; i <= DJP_REG_R11; i++)
		push_pop(e, i, 1);
	mov_rsp(e, DJP_REG_RSP, upper, 0);
	lea_rsp(e, DJP_REG_RSP, RED_ZONE);
	b1(e, 0xe9), rel32(e, r->site + r->len); /* jmp site+len */
	memcpy(e->buf + to_back, &(int32_t){ (int32_t)(back - (to_back + 4)) }, 4);
	memcpy(e->buf + to_x87s, &(int32_t){ (int32_t)(resume_s - (to_x87s + 4)) }, 4);
	memcpy(e->buf + to_x87r, &(int32_t){ (int32_t)(resume_r - (to_x87r + 4)) }, 4);
	return e->n;
}

static int chunk_in_range(const struct chunk *c, uintptr_t site, unsigned len)
{
	uintptr_t lo = c->base, hi = c->base + DJP_TRAMP_CHUNK;
	return x86_rel32_fits(site, len, lo) && x86_rel32_fits(site, len, hi) && x86_rel32_fits(lo, 5, site) &&
	       x86_rel32_fits(hi, 5, site + len);
}

/*
 * Map a new chunk, aligned to its size, in reach of the site: in the site's
 * own 1 MiB region if any room is free there (see the top of the file),
 * else (unless `region_only`) in the free gap nearest to the site.
 */
static struct chunk *chunk_new(uintptr_t site, unsigned len, int region_only, int *err)
{
	struct djp_maps ms;
	const uintptr_t size = DJP_TRAMP_CHUNK, span = (uintptr_t)1 << 31, minaddr = 1 << 16;
	const uintptr_t region_lo = site & ~(REGION - 1), region_hi = region_lo + REGION;
	uintptr_t best = 0, bestdist = UINTPTR_MAX;
	int best_in_region = 0;
	struct chunk *c;
	void *p;

	if ((*err = djp_maps_read(&ms)))
		return NULL;
	for (size_t i = 0; i <= ms.n; i++) {
		/* Leave a page of guard on either side of others' mappings. */
		uintptr_t gap_lo = (i ? ms.m[i - 1].hi : minaddr) + 4096;
		uintptr_t gap_hi = (i < ms.n ? ms.m[i].lo : (uintptr_t)0x7ffffffff000) - 4096;
		uintptr_t lo = (gap_lo + size - 1) & ~(size - 1), hi, cand, dist;
		int in_region;
		if (gap_hi < size || lo > gap_hi - size)
			continue;
		hi = (gap_hi - size) & ~(size - 1);
		/* The aligned candidate nearest to the site inside this gap. */
		cand = (site - size / 2) & ~(size - 1);
		cand = cand < lo ? lo : cand > hi ? hi : cand;
		dist = cand > site ? cand - site : site - cand;
		in_region = cand >= region_lo && cand + size <= region_hi;
		if (dist < span - size && (in_region > best_in_region || (in_region == best_in_region && dist < bestdist))) {
			best = cand;
			bestdist = dist;
			best_in_region = in_region;
		}
	}
	free(ms.m);
	if (!best || (region_only && !best_in_region)) {
		*err = -ERANGE;
		return NULL;
	}
	p = djp_sys_mmap((void *)best, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			 -1, 0);
	if (p == MAP_FAILED) {
		*err = errno == EEXIST ? -ERANGE : -errno;
		return NULL;
	}
	if (p != (void *)best) { /* a kernel without MAP_FIXED_NOREPLACE */
		munmap(p, size);
		*err = -ERANGE;
		return NULL;
	}
	/* Code pages are RX from the start; only the text writer writes them. */
	if (djp_sys_mprotect((uint8_t *)p + DJP_TRAMP_DATA, size - DJP_TRAMP_DATA, PROT_READ | PROT_EXEC)) {
		*err = -errno;
		munmap(p, size);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		munmap(p, size);
		*err = -ENOMEM;
		return NULL;
	}
	c->base = (uintptr_t)p;
	*(uintptr_t *)((uint8_t *)p + HDR_LEAN) = (uintptr_t)ops.lean_slow;
	*(uintptr_t *)((uint8_t *)p + HDR_FULL) = (uintptr_t)ops.full_slow;
	*(uintptr_t *)((uint8_t *)p + HDR_X87_SAVE) = (uintptr_t)djp_x87_save;
	*(uintptr_t *)((uint8_t *)p + HDR_X87_RESTORE) = (uintptr_t)djp_x87_restore;
	if (!chunk_in_range(c, site, len)) {
		munmap(p, size);
		free(c);
		*err = -ERANGE;
		return NULL;
	}
	c->next = chunks;
	chunks = c;
	return c;
}

/* A chunk with `slots` free slots for the site: one in its 1 MiB region,
 * a new one there, one in reach, or a new one in reach, in that order. */
static struct chunk *chunk_for(uintptr_t site, unsigned len, unsigned slots, int *err)
{
	struct chunk *c, *any = NULL;
	for (c = chunks; c; c = c->next)
		if (c->used + slots <= DJP_TRAMP_SLOTS && chunk_in_range(c, site, len)) {
			if ((c->base & ~(REGION - 1)) == (site & ~(REGION - 1)))
				return c;
			any = any ? any : c;
		}
	if ((c = chunk_new(site, len, 1, err)) || any)
		return c ? c : any;
	return chunk_new(site, len, 0, err);
}

/*
 * Make the trampolines of a batch of sites: pick a chunk in reach of each
 * (or map one), generate the code, then write it all in one text session
 * (one maps read and one mprotect pair per run of pages, not per site).
 */
int arch_tramp_create(struct djp_tramp_req *r, size_t n)
{
	uintptr_t *ends, *slot_start;
	uint8_t *lens, *code;
	size_t *sizes, nreq = 0;
	struct djp_text_session s;
	int err = 0;
	unsigned slots;

	if (!n)
		return 0;
	ends = malloc(n * 2 * sizeof(*ends) + n * 2 + n * MAX_SIZE + n * sizeof(*sizes) + 8);
	slot_start = malloc(n * sizeof(*slot_start));
	if (!ends || !slot_start) {
		free(ends);
		free(slot_start);
		return -ENOMEM;
	}
	lens = (uint8_t *)(ends + 2 * n);
	code = lens + 2 * n;
	sizes = (size_t *)(void *)(((uintptr_t)(code + n * MAX_SIZE) + 7) & ~(uintptr_t)7);
	pthread_mutex_lock(&tramp_lock);
	for (size_t i = 0; i < n; i++) {
		struct chunk *c;
		struct emit e;
		r[i].entry = 0;
		r[i].err = 0;
		if (r[i].flavour == DJP_FULL && !xsave_size) {
			r[i].err = -ENOTSUP;
			continue;
		}
		slots = r[i].flavour == DJP_FULL ? FULL_SLOTS : 1;
		if (!(c = chunk_for(r[i].site, r[i].len, slots, &r[i].err)))
			continue;
		r[i].entry = c->base + DJP_TRAMP_DATA + (uintptr_t)c->used * DJP_TRAMP_SLOT;
		/* A trampoline that would not fit its slots fails alone (the
		 * site is then an int3 probe); none does. */
		e = (struct emit){ code + i * MAX_SIZE, 0, slots * DJP_TRAMP_SLOT, r[i].entry, 0 };
		slot_start[i] = r[i].entry;
		if (r[i].flavour != DJP_FULL) {
			sizes[i] = gen_lean(&e, &r[i], &r[i].entry, r[i].flavour == DJP_LEAN_PREFETCH);
		} else {
			sizes[i] = gen_full(&e, &r[i], &r[i].entry);
		}
		if (e.overflow) {
			r[i].entry = 0;
			r[i].err = -E2BIG;
			continue;
		}
		/* The slots name their site before any code can run there. */
		for (unsigned k = 0; k < slots; k++)
			((struct djp_site **)(c->base + DJP_TRAMP_SITES_AT))[c->used + k] = r[i].ds;
		c->used += slots;
		ends[2 * nreq] = slot_start[i];
		ends[2 * nreq + 1] = slot_start[i] + sizes[i] - 1;
		lens[2 * nreq] = lens[2 * nreq + 1] = 1;
		nreq++;
	}
	if (nreq && !(err = arch_text_open(&s, ends, lens, 2 * nreq))) {
		for (size_t i = 0; i < n && !err; i++)
			if (r[i].entry)
				err = arch_text_write(&s, slot_start[i], code + i * MAX_SIZE, sizes[i]);
		int cerr = arch_text_close(&s);
		err = err ? err : cerr;
	}
	for (size_t i = 0; i < n && err; i++) {
		/* The slot stays used (never reissued half-written). */
		if (r[i].entry) {
			r[i].entry = 0;
			r[i].err = err;
		}
	}
	pthread_mutex_unlock(&tramp_lock);
	free(ends);
	free(slot_start);
	return err;
}
