/*
 * Trampolines: where a jump-armed site goes.
 *
 * Each site gets its own trampoline per flavour, generated at run time into a
 * pool mapped within a rel32 (+-2 GiB) of the site, so that the site's
 * `jmp rel32` reaches it and its `jmp rel32` back reaches site+6.  A pool
 * chunk is one RW data page followed by RX code: the data page holds the two
 * dispatcher pointers, the vector save and restore routines, and one slot
 * per trampoline (the kernel's struct djp_site), reached RIP-relative, so the code never changes once written and
 * is reused whenever its site is armed again.  Code is written through the
 * text writer (text.c) before any site jumps to it; chunks are never
 * unmapped, because a preempted thread may sit inside a trampoline at any
 * time (uprobes never unmaps its XOL page for the same reason).
 *
 * The lean flavour, for handlers that touch only general registers:
 *
 *   lea  -128(%rsp),%rsp        step over the SysV red zone of the code
 *                               that was interrupted (a leaf may keep
 *                               live data below %rsp)
 *   sub  $136,%rsp              struct djp_regs on the stack
 *   mov  %reg,off(%rsp)         the nine caller-saved registers, %rbx,
 *                               and the callee-saved ones that the
 *                               site's arguments live in (the others are
 *                               never read: the view is per site)
 *   lea  264(%rsp),%rax         the original %rsp, if an argument is
 *   mov  %rax,56(%rsp)          %rsp-relative
 *   mov  %rsp,%rdi              arg 1: the register view
 *   mov  slot(%rip),%rsi        arg 2: the site (data page)
 *   mov  %rsp,%rbx ; and $-16,%rsp
 *   call *lean(%rip)            the dispatcher
 *   mov  %rbx,%rsp
 *   mov  off(%rsp),%reg  x10    the caller-saved ones and %rbx (the
 *                               callee-saved ones survived the call)
 *   lea  264(%rsp),%rsp
 *   jmp  site+6
 *
 * The flags need no saving: an asm statement clobbers them on x86, so the
 * compiler holds nothing in them across a marker.
 *
 * The full flavour, for any C handler, also saves the vector state: libc's
 * memcpy and printf use vector registers, and the interrupted code may have
 * live values in every one of them.  XSAVE/XRSTOR would do it all, but on
 * the machines this runs on a pair costs well over 100 ns, so the usual
 * path moves the registers out and back (vector_save.S: xmm, ymm or zmm
 * and opmask registers as XCR0 enables them, and MXCSR) into a 64-byte
 * aligned area below the register view.  The x87 register stack is empty at
 * every point where the compiler could call a function, and so in nearly
 * all code around a marker; `fnstsw` tells (TOP != 0) when it is not, and
 * then the trampoline takes the XSAVEC (or XSAVE) path for the whole
 * extended state instead.
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

#define TRAMP_CODE_SIZE 512
#define DATA_PAGE 4096
#define DATA_HDR 4 /* lean and full dispatchers, vector save and restore */
#define SLOTS_PER_CHUNK (DATA_PAGE / 8 - DATA_HDR)
#define CHUNK_SIZE (DATA_PAGE + SLOTS_PER_CHUNK * TRAMP_CODE_SIZE)
#define CHUNK_MAP ((CHUNK_SIZE + 4095) & ~(size_t)4095)
#define REGS_FRAME 136 /* sizeof(struct djp_regs) rounded to 8 */
#define RED_ZONE 128

struct chunk {
	uintptr_t base; /* data page; code starts at base + DATA_PAGE */
	unsigned used;
	struct chunk *next;
};

static struct chunk *chunks;
static djp_dispatch_fn dispatch_lean, dispatch_full;
static size_t xsave_size;
static int use_xsavec;
/* The explicit vector save (vector_save.S) chosen by XCR0, and its area. */
void djp_vsave_sse(void), djp_vrestore_sse(void), djp_vsave_avx(void), djp_vrestore_avx(void);
void djp_vsave_avx512(void), djp_vrestore_avx512(void);
static void (*vsave)(void), (*vrestore)(void);
static uint32_t vsave_size;
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

int arch_tramp_init(djp_dispatch_fn lean, djp_dispatch_fn full)
{
	unsigned a, b, c, d;
	dispatch_lean = lean;
	dispatch_full = full;
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
			vsave = djp_vsave_avx512, vrestore = djp_vrestore_avx512, vsave_size = 2176;
		else if ((xcr0_lo & 0x6) == 0x6)
			vsave = djp_vsave_avx, vrestore = djp_vrestore_avx, vsave_size = 576;
		else
			vsave = djp_vsave_sse, vrestore = djp_vrestore_sse, vsave_size = 320;
	}
	return 0;
}

/* ---- a tiny emitter ---- */
struct emit {
	uint8_t *buf;
	size_t n;
	uintptr_t at; /* runtime address of buf[0] */
};

static void b1(struct emit *e, uint8_t v)
{
	e->buf[e->n++] = v;
}
static void b4(struct emit *e, uint32_t v)
{
	memcpy(e->buf + e->n, &v, 4);
	e->n += 4;
}
static void rel32(struct emit *e, uintptr_t target)
{
	/* a rel32 that ends the instruction: relative to the next byte */
	b4(e, (uint32_t)(int32_t)(target - (e->at + e->n + 4)));
}

/* Hardware register numbers, indexed by enum djp_reg. */
static const uint8_t hw[16] = { 0, 3, 1, 2, 6, 7, 5, 4, 8, 9, 10, 11, 12, 13, 14, 15 };

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

static void lea_rsp(struct emit *e, int32_t disp, int to_rax)
{
	/* lea disp32(%rsp),%rax  or  lea disp32(%rsp),%rsp */
	b1(e, 0x48);
	b1(e, 0x8d);
	b1(e, to_rax ? 0x84 : 0xa4);
	b1(e, 0x24);
	b4(e, (uint32_t)disp);
}

static void mov_all_ones(struct emit *e)
{
	b1(e, 0xb8);
	b4(e, 0xffffffff); /* mov $-1,%eax */
	b1(e, 0xba);
	b4(e, 0xffffffff); /* mov $-1,%edx */
}

/* Registers every trampoline saves: what a C call clobbers, and %rbx. */
#define SAVED_ALWAYS                                                                                 \
	((1u << DJP_REG_RAX) | (1u << DJP_REG_RCX) | (1u << DJP_REG_RDX) | (1u << DJP_REG_RSI) |          \
	 (1u << DJP_REG_RDI) | (1u << DJP_REG_R8) | (1u << DJP_REG_R9) | (1u << DJP_REG_R10) |            \
	 (1u << DJP_REG_R11) | (1u << DJP_REG_RBX))

static size_t gen(uint8_t *buf, uintptr_t at, uintptr_t site, unsigned len, int flavour, uintptr_t slot,
		  uintptr_t fnptr, uint32_t regs_used)
{
	struct emit e = { buf, 0, at };
	const int frame = REGS_FRAME + RED_ZONE;
	uint32_t save = SAVED_ALWAYS | regs_used;

	lea_rsp(&e, -RED_ZONE, 0);
	b1(&e, 0x48), b1(&e, 0x81), b1(&e, 0xec), b4(&e, REGS_FRAME); /* sub $136,%rsp */
	for (int r = 0; r < 16; r++)
		if (r != DJP_REG_RSP && (save & (1u << r)))
			mov_rsp(&e, r, 8 * r, 1);
	if (regs_used & (1u << DJP_REG_RSP)) {
		lea_rsp(&e, frame, 1);
		mov_rsp(&e, DJP_REG_RAX, 8 * DJP_REG_RSP, 1);
	}
	if (regs_used & (1u << DJP_REG_RIP)) {
		b1(&e, 0x48), b1(&e, 0x8d), b1(&e, 0x05), rel32(&e, site); /* lea site(%rip),%rax */
		mov_rsp(&e, DJP_REG_RAX, 8 * DJP_REG_RIP, 1);
	}
	b1(&e, 0x48), b1(&e, 0x89), b1(&e, 0xe3); /* mov %rsp,%rbx */
	if (flavour == DJP_LEAN) {
		b1(&e, 0x48), b1(&e, 0x83), b1(&e, 0xe4), b1(&e, 0xf0); /* and $-16,%rsp */
		b1(&e, 0x48), b1(&e, 0x89), b1(&e, 0xdf);		  /* mov %rbx,%rdi */
		b1(&e, 0x48), b1(&e, 0x8b), b1(&e, 0x35), rel32(&e, slot); /* mov slot(%rip),%rsi */
		b1(&e, 0xff), b1(&e, 0x15), rel32(&e, fnptr);		  /* call *fn(%rip) */
	} else {
		size_t jnz_at, jmp_at;
		/* x87 stack not empty (TOP != 0): only XSAVE saves it. */
		b1(&e, 0xdf), b1(&e, 0xe0);			 /* fnstsw %ax */
		b1(&e, 0x66), b1(&e, 0xa9), b1(&e, 0x00), b1(&e, 0x38); /* test $0x3800,%ax */
		b1(&e, 0x0f), b1(&e, 0x85), jnz_at = e.n, b4(&e, 0);	 /* jnz .Lxsave */
		b1(&e, 0x48), b1(&e, 0x83), b1(&e, 0xe4), b1(&e, 0xc0); /* and $-64,%rsp */
		b1(&e, 0x48), b1(&e, 0x81), b1(&e, 0xec), b4(&e, vsave_size);
		b1(&e, 0x48), b1(&e, 0x89), b1(&e, 0xe7);		   /* mov %rsp,%rdi */
		b1(&e, 0xff), b1(&e, 0x15), rel32(&e, fnptr - 8 + 16);	   /* call *vsave(%rip) */
		b1(&e, 0x48), b1(&e, 0x89), b1(&e, 0xdf);		   /* mov %rbx,%rdi */
		b1(&e, 0x48), b1(&e, 0x8b), b1(&e, 0x35), rel32(&e, slot); /* mov slot(%rip),%rsi */
		b1(&e, 0xff), b1(&e, 0x15), rel32(&e, fnptr);		   /* call *full(%rip) */
		b1(&e, 0x48), b1(&e, 0x89), b1(&e, 0xe7);		   /* mov %rsp,%rdi */
		b1(&e, 0xff), b1(&e, 0x15), rel32(&e, fnptr - 8 + 24);	   /* call *vrestore(%rip) */
		b1(&e, 0xe9), jmp_at = e.n, b4(&e, 0);			   /* jmp .Ldone */
		{ /* .Lxsave: */
			int32_t d = (int32_t)(e.n - (jnz_at + 4));
			memcpy(e.buf + jnz_at, &d, 4);
		}
		b1(&e, 0x48), b1(&e, 0x83), b1(&e, 0xe4), b1(&e, 0xc0); /* and $-64,%rsp */
		b1(&e, 0x48), b1(&e, 0x81), b1(&e, 0xec), b4(&e, (uint32_t)xsave_size);
		/* XRSTOR faults unless header bytes 8..63 are zero: clear all 64. */
		b1(&e, 0x31), b1(&e, 0xc0); /* xor %eax,%eax */
		for (int i = 0; i < 8; i++)
			mov_rsp(&e, DJP_REG_RAX, 512 + 8 * i, 1);
		mov_all_ones(&e);
		if (use_xsavec) /* xsavec64 (%rsp) */
			b1(&e, 0x48), b1(&e, 0x0f), b1(&e, 0xc7), b1(&e, 0x24), b1(&e, 0x24);
		else /* xsave64 (%rsp) */
			b1(&e, 0x48), b1(&e, 0x0f), b1(&e, 0xae), b1(&e, 0x24), b1(&e, 0x24);
		b1(&e, 0x48), b1(&e, 0x89), b1(&e, 0xdf);		  /* mov %rbx,%rdi */
		b1(&e, 0x48), b1(&e, 0x8b), b1(&e, 0x35), rel32(&e, slot); /* mov slot(%rip),%rsi */
		b1(&e, 0xff), b1(&e, 0x15), rel32(&e, fnptr);		  /* call *full(%rip) */
		mov_all_ones(&e);
		b1(&e, 0x48), b1(&e, 0x0f), b1(&e, 0xae), b1(&e, 0x2c), b1(&e, 0x24); /* xrstor64 (%rsp) */
		{ /* .Ldone: */
			int32_t d = (int32_t)(e.n - (jmp_at + 4));
			memcpy(e.buf + jmp_at, &d, 4);
		}
	}
	b1(&e, 0x48), b1(&e, 0x89), b1(&e, 0xdc); /* mov %rbx,%rsp */
	{
		static const int restore[] = { DJP_REG_RAX, DJP_REG_RBX, DJP_REG_RCX, DJP_REG_RDX, DJP_REG_RSI,
					       DJP_REG_RDI, DJP_REG_R8,	 DJP_REG_R9,  DJP_REG_R10, DJP_REG_R11 };
		for (unsigned i = 0; i < sizeof(restore) / sizeof(restore[0]); i++)
			mov_rsp(&e, restore[i], 8 * restore[i], 0);
	}
	lea_rsp(&e, frame, 0);
	b1(&e, 0xe9), rel32(&e, site + len); /* jmp site+len */
	return e.n;
}

static int chunk_in_range(const struct chunk *c, uintptr_t site, unsigned len)
{
	uintptr_t lo = c->base, hi = c->base + CHUNK_MAP;
	return x86_rel32_fits(site, len, lo) && x86_rel32_fits(site, len, hi) && x86_rel32_fits(lo, 5, site) &&
	       x86_rel32_fits(hi, 5, site + len);
}

/* Map a new chunk in the free gap nearest to the site, within reach. */
static struct chunk *chunk_new(uintptr_t site, unsigned len, int *err)
{
	struct djp_maps ms;
	uintptr_t best = 0, bestdist = UINTPTR_MAX;
	const uintptr_t span = (uintptr_t)1 << 31, minaddr = 1 << 16;
	struct chunk *c;
	void *p;

	if ((*err = djp_maps_read(&ms)))
		return NULL;
	for (size_t i = 0; i <= ms.n; i++) {
		uintptr_t gap_lo = i ? ms.m[i - 1].hi : minaddr;
		uintptr_t gap_hi = i < ms.n ? ms.m[i].lo : (uintptr_t)0x7ffffffff000;
		uintptr_t cand;
		/* Leave a page of guard on either side of others' mappings. */
		gap_lo += 4096;
		if (gap_hi < CHUNK_MAP + 4096 || gap_hi - 4096 - CHUNK_MAP < gap_lo)
			continue;
		gap_hi -= 4096;
		/* The candidate nearest to the site inside this gap. */
		if (site < gap_lo)
			cand = gap_lo;
		else if (site > gap_hi - CHUNK_MAP)
			cand = gap_hi - CHUNK_MAP;
		else
			cand = (site - CHUNK_MAP) & ~(uintptr_t)4095;
		if (cand < gap_lo)
			cand = gap_lo;
		uintptr_t dist = cand > site ? cand - site : site - cand;
		if (dist < span - CHUNK_MAP && dist < bestdist) {
			best = cand;
			bestdist = dist;
		}
	}
	free(ms.m);
	if (!best) {
		*err = -ERANGE;
		return NULL;
	}
	p = djp_sys_mmap((void *)best, CHUNK_MAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			 -1, 0);
	if (p == MAP_FAILED) {
		*err = errno == EEXIST ? -ERANGE : -errno;
		return NULL;
	}
	if (p != (void *)best) { /* a kernel without MAP_FIXED_NOREPLACE */
		munmap(p, CHUNK_MAP);
		*err = -ERANGE;
		return NULL;
	}
	/* Code pages are RX from the start; only the text writer writes them. */
	if (djp_sys_mprotect((uint8_t *)p + DATA_PAGE, CHUNK_MAP - DATA_PAGE, PROT_READ | PROT_EXEC)) {
		*err = -errno;
		munmap(p, CHUNK_MAP);
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		munmap(p, CHUNK_MAP);
		*err = -ENOMEM;
		return NULL;
	}
	c->base = (uintptr_t)p;
	((uintptr_t *)p)[0] = (uintptr_t)dispatch_lean;
	((uintptr_t *)p)[1] = (uintptr_t)dispatch_full;
	((uintptr_t *)p)[2] = (uintptr_t)vsave;
	((uintptr_t *)p)[3] = (uintptr_t)vrestore;
	if (!chunk_in_range(c, site, len)) {
		munmap(p, CHUNK_MAP);
		free(c);
		*err = -ERANGE;
		return NULL;
	}
	c->next = chunks;
	chunks = c;
	return c;
}

/*
 * Make the trampolines of a batch of sites: pick a chunk in reach of each
 * (or map one), generate the code, then write it all in one text session
 * (one maps read and one mprotect pair per run of pages, not per site).
 */
int arch_tramp_create(struct djp_tramp_req *r, size_t n)
{
	uintptr_t *ends;
	uint8_t *lens, *code;
	size_t *sizes, nreq = 0;
	struct djp_text_session s;
	int err = 0;

	if (!n)
		return 0;
	ends = malloc(n * 2 * sizeof(*ends) + n * 2 + n * TRAMP_CODE_SIZE + n * sizeof(*sizes));
	if (!ends)
		return -ENOMEM;
	lens = (uint8_t *)(ends + 2 * n);
	code = lens + 2 * n;
	sizes = (size_t *)(void *)(((uintptr_t)(code + n * TRAMP_CODE_SIZE) + 7) & ~(uintptr_t)7);
	pthread_mutex_lock(&tramp_lock);
	for (size_t i = 0; i < n; i++) {
		struct chunk *c;
		r[i].entry = 0;
		r[i].err = 0;
		if (r[i].flavour == DJP_FULL && !xsave_size) {
			r[i].err = -ENOTSUP;
			continue;
		}
		for (c = chunks; c; c = c->next)
			if (c->used < SLOTS_PER_CHUNK && chunk_in_range(c, r[i].site, r[i].len))
				break;
		if (!c && !(c = chunk_new(r[i].site, r[i].len, &r[i].err)))
			continue;
		r[i].entry = c->base + DATA_PAGE + (uintptr_t)c->used * TRAMP_CODE_SIZE;
		r[i].slot = c->base + 8 * (DATA_HDR + c->used);
		sizes[i] = gen(code + i * TRAMP_CODE_SIZE, r[i].entry, r[i].site, r[i].len, r[i].flavour, r[i].slot,
			       c->base + (r[i].flavour == DJP_FULL ? 8 : 0), r[i].regs_used);
		if (sizes[i] > TRAMP_CODE_SIZE)
			abort(); /* the generator outgrew its slot: a bug, not a condition */
		c->used++;
		ends[2 * nreq] = r[i].entry;
		ends[2 * nreq + 1] = r[i].entry + sizes[i] - 1;
		lens[2 * nreq] = lens[2 * nreq + 1] = 1;
		nreq++;
	}
	if (nreq && !(err = arch_text_open(&s, ends, lens, 2 * nreq))) {
		for (size_t i = 0; i < n && !err; i++)
			if (r[i].entry)
				err = arch_text_write(&s, r[i].entry, code + i * TRAMP_CODE_SIZE, sizes[i]);
		int cerr = arch_text_close(&s);
		err = err ? err : cerr;
	}
	for (size_t i = 0; i < n; i++) {
		if (!r[i].entry)
			continue;
		if (err) {
			/* The slot stays used (never reissued half-written). */
			r[i].entry = 0;
			r[i].err = err;
			continue;
		}
		__atomic_store_n((struct djp_site **)r[i].slot, r[i].ds, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&tramp_lock);
	free(ends);
	return err;
}

