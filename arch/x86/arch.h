/*
 * The arch interface: everything kernel/ may ask of arch/x86/, and nothing
 * more (after include/linux/kprobes.h's arch_* functions).  A missing arch
 * function fails at link time.  arch/ knows bytes, registers, traps and
 * trampolines; it never knows marker names, probes or patterns.
 */
#ifndef DJP_ARCH_H
#define DJP_ARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arch/x86/abi.h"
#include "arch/x86/branch_targets.h"
#include "arch/x86/call_conv.h"
#include "arch/x86/insn.h"
#include "arch/x86/insn_reloc.h"
#include "arch/x86/regs.h"
#include "arch/x86/vector_use.h"

struct djp_site;   /* kernel/'s; arch only carries the pointer */
struct djp_argloc; /* lib/argloc.h's, which includes this */

/* ---- the address space (text.c) ---- */
struct djp_maps {
	size_t n;
	struct djp_map {
		uintptr_t lo, hi;
		int prot;
	} *m;
};
/* Snapshot of /proc/self/maps (sorted); free(ms->m) when done. */
int djp_maps_read(struct djp_maps *ms);
/* The mapping of a snapshot that holds `addr`, or NULL (no system call,
 * no allocation: signal handlers use it). */
const struct djp_map *djp_maps_find(const struct djp_maps *ms, uintptr_t addr);

/* ---- text writes (text.c) ---- */
struct djp_text_range {
	uintptr_t start;
	size_t len;
	int prot, done;
};
struct djp_text_session {
	struct djp_text_range *ranges;
	size_t nranges;
};
int arch_text_init(void);
/* arch_text_open/write/close and the int3 bootstrap (text_poke.c) */
#include "arch/x86/text_poke.h"

/* ---- traps (trap.c) ---- */
enum djp_trap_kind {
	DJP_TRAP_JUMP,	/* emulate a jump to `target` (site being armed) */
	/* for these two, `target` is 0 at a marker (resume at addr + len) or,
	 * at an instruction, the displaced instruction's out-of-line copy */
	DJP_TRAP_SKIP,	/* emulate the NOP or the instruction */
	DJP_TRAP_PROBE, /* an int3 probe: run handlers, then resume */
};
struct djp_trap_entry {
	uintptr_t addr; /* first: lib/addr_sorted.h */
	uintptr_t target;
	struct djp_site *site;
	uint8_t kind, len;
};
struct djp_trap_table {
	size_t n;
	struct djp_trap_entry e[]; /* sorted by addr */
};
typedef void (*djp_trap_probe_fn)(struct djp_hit *hit);
int arch_trap_init(djp_trap_probe_fn fn);
/* Install `t` (sorted, may be NULL), wait until no trap handler can still
 * read the previous table, and free it. */
void arch_trap_publish(struct djp_trap_table *t);
/* Serialise this core (cpuid). */
void arch_serialize(void);

/* ---- trampolines (tramp_pool.c, tramp_lean.c, tramp_full.c, tramp_args.c) ---- */
/* DJP_LEAN_PREFETCH: the lean flavour that also loads the site's
 * arguments for a handler that takes them (arch_tramp_prefetches). */
enum djp_flavour { DJP_LEAN, DJP_FULL, DJP_LEAN_PREFETCH, DJP_FLAVOURS };
/* Not a trampoline but made like one, in the same slots: the out-of-line
 * copy an int3 probe at an instruction resumes at (its `code`, relocated,
 * then a jump back to site + len). */
#define DJP_OOL DJP_FLAVOURS
typedef void (*djp_dispatch_fn)(struct djp_hit *hit);
/* What a trampoline calls directly, read from the kernel's handler list:
 * its only handler, or a function that runs them all, as fn(hit, data). */
struct djp_fast_call {
	void (*fn)(const struct djp_hit *hit, void *data);
	void *data;
};
/*
 * The read-side protocol a lean trampoline inlines (kernel/rcu.h): at
 * %fs:reader_tls a pointer to the thread's reader word (one whose count is
 * never zero until the thread registers); the fast path requires the
 * word's low 32 bits to be zero, enters by storing *gp_ctr there (the
 * grace period's phase and a count of one) and leaves by storing zero, with an
 * mfence after entering and before leaving when need_mb says so.  Before
 * it enters it stores %rsp at %fs:entry_sp_tls and, below %rsp, the
 * return address its call of the handler is about to push: a section's
 * frame is then recognisable from the moment the section begins (kernel/
 * rcu.c: a section left by a jump).
 */
struct djp_tramp_ops {
	djp_dispatch_fn lean_slow; /* lean: when the fast path does not apply */
	djp_dispatch_fn full_slow; /* full: the same */
	/* where the list keeps the full flavour's fast call, and the one for
	 * a lean trampoline that prefetched the arguments (the plain lean
	 * one is at its start) */
	unsigned full_call, prefetch_call;
	intptr_t reader_tls;
	intptr_t entry_sp_tls;
	const unsigned long *gp_ctr;
	int need_mb;
};
int arch_tramp_init(const struct djp_tramp_ops *ops);
struct djp_tramp_req {
	uintptr_t site;	     /* in: the site address */
	unsigned len;	     /* in: site length */
	int flavour;	     /* in: enum djp_flavour */
	int sp_align;	     /* in: %rsp mod 16 at the site, or -1: unknown */
	struct djp_site *ds; /* in: the site a hit's key names */
	/* in: the word where the site's list is published (RCU): a pointer
	 * to a struct djp_fast_call, or NULL for no handlers */
	const void *list;
	uint32_t regs_used; /* in: the registers the view holds (1 << enum djp_reg): the
			       caller-saved ones, which every trampoline saves, and
			       those its handlers read (kernel/arm.c, view_regs) */
	/* in: the site's arguments and its object's load bias, for the
	 * prefetch (arch_tramp_prefetches) */
	const struct djp_argloc *args;
	unsigned nargs;
	uintptr_t bias;
	/* in, full flavour: what the site's object keeps in vector registers
	 * (enum djp_vec_use, and DJP_VEC_X87 when its x87 stack can be in
	 * use): what its trampoline saves */
	int vec_use;
	/* in, DJP_OOL: the instruction(s) to copy, `len` bytes that ran at
	 * `site` (the site's shadow, never the text, which may hold an int3) */
	const uint8_t *code;
	bool keep_flags; /* with code: the status flags are live at the site */
	/* in, with code: bytes of it before the probe's instruction, at
	 * site + pre (a run that starts before its site): a trampoline runs
	 * them relocated first, then the handlers with the registers as they
	 * are at site + pre, which is the view's pc, then the rest */
	unsigned pre;
	uintptr_t entry;    /* out: entry address (0 on failure) */
	int err;	    /* out: -ERANGE when no memory is in reach, -errno */
};
/*
 * Trampolines live in chunks of DJP_TRAMP_CHUNK bytes, aligned to their
 * size: a data page, then DJP_TRAMP_SLOTS code slots of DJP_TRAMP_SLOT
 * bytes.  The data page ends with the site of each slot, so any address
 * inside a trampoline names its site.
 */
#define DJP_TRAMP_CHUNK (1UL << 16)
#define DJP_TRAMP_DATA 4096UL
#define DJP_TRAMP_SLOT 512UL
#define DJP_TRAMP_SLOTS ((DJP_TRAMP_CHUNK - DJP_TRAMP_DATA) / DJP_TRAMP_SLOT)
#define DJP_TRAMP_SITES_AT (DJP_TRAMP_DATA - 8 * DJP_TRAMP_SLOTS) /* offset of the table */

/* The site a hit is at, from its key (regs.h). */
static inline struct djp_site *arch_hit_site(const struct djp_hit *hit)
{
	uintptr_t k = ((const uintptr_t *)hit)[-1], base;
	if (k & DJP_HIT_KEY_SITE)
		return (struct djp_site *)(k - DJP_HIT_KEY_SITE);
	base = k & ~(DJP_TRAMP_CHUNK - 1);
	return ((struct djp_site *const *)(base + DJP_TRAMP_SITES_AT))[(k - base - DJP_TRAMP_DATA) / DJP_TRAMP_SLOT];
}
/* The frame of the trampoline's call, as an unwinder sees it from the
 * handler's (kernel/callee_saved.c): its pc is the hit's key, the return
 * address that call pushed just below the view, so its CFA is the view. */
static inline void arch_hit_call_frame(const struct djp_hit *hit, uintptr_t *pc, uintptr_t *cfa)
{
	*pc = ((const uintptr_t *)hit)[-1];
	*cfa = (uintptr_t)hit;
}
/* Is the hit's key a return address inside the trampoline at `entry`
 * (the same slot)? */
static inline bool arch_hit_from_tramp(const struct djp_hit *hit, uintptr_t entry)
{
	uintptr_t k = ((const uintptr_t *)hit)[-1];
	return entry && !(k & DJP_HIT_KEY_SITE) && (k & ~(DJP_TRAMP_SLOT - 1)) == (entry & ~(DJP_TRAMP_SLOT - 1));
}
/* Is the hit's key the return address of a lean trampoline's call (its
 * view holds the caller-saved registers and those its arguments read), not
 * a site pointer (a full trampoline or a SIGTRAP: every register)? */
static inline bool arch_hit_from_call(const struct djp_hit *hit)
{
	return !(((const uintptr_t *)hit)[-1] & DJP_HIT_KEY_SITE);
}
/*
 * A DJP_LEAN_PREFETCH trampoline loads its site's arguments, sign- or
 * zero-extended as djp_hit_arg would give them, into the third to sixth
 * argument registers of its call to the fast handler; it can when there
 * are at most DJP_TRAMP_PREFETCH and each is a location it can load (true
 * here).  A handler that knows, as the recorder's fast entry does, takes
 * them as its arguments.
 */
#define DJP_TRAMP_PREFETCH 4
int arch_tramp_prefetches(const struct djp_argloc *args, unsigned nargs);
/* Make the trampolines of a batch of sites (one text session for all).
 * Each request succeeds or fails on its own; returns the first write error. */
int arch_tramp_create(struct djp_tramp_req *r, size_t n);
/* True when `addr` is inside the trampoline pool; async-signal-safe. */
bool arch_tramp_owns(uintptr_t addr);
/* The site whose trampoline or out-of-line copy holds `addr` (NULL: none),
 * the one a thread there goes back to; async-signal-safe. */
const struct djp_site *arch_tramp_site_of(uintptr_t addr);
/* Bytes of the XSAVE area the full flavour uses (0 until init or without
 * XSAVE), and saving/restoring the extended state into such an area
 * (64-byte aligned, header zeroed by the caller). */
size_t arch_xsave_size(void);
void arch_vector_save(void *area);
void arch_vector_restore(void *area);
/* Such an area on the caller's stack (alloca: it lasts until the caller
 * returns, so this is a macro), or NULL without XSAVE.  The header is
 * zeroed with volatile stores, which the compiler cannot make a memset or
 * a vector store of: the vector state is not saved yet. */
#define arch_vector_area_on_stack()                                                                \
	({                                                                                         \
		size_t sz_ = arch_xsave_size();                                                    \
		uint8_t *area_ = NULL;                                                             \
		if (sz_) {                                                                         \
			uint8_t *raw_ = __builtin_alloca(sz_ + 64);                                \
			area_ = (uint8_t *)(((uintptr_t)raw_ + 63) & ~(uintptr_t)63);              \
			for (size_t k_ = 512; k_ < 576; k_ += 8)                                   \
				*(volatile uint64_t *)(area_ + k_) = 0; /* the XSAVE header */      \
		}                                                                                  \
		area_;                                                                             \
	})

/*
 * A fault-safe load of size bytes (1, 2, 4 or 8) at addr into *v, zero-
 * extended: false, *v untouched, when the memory cannot be read.  Only
 * while the engine's fault handler serves the copy routine
 * (djp_safe_copy_on).  The load is one instruction in the caller, with an
 * entry in the section djp_extable that names it and its fixup (the
 * kernel's exception table, in user space: offsets from the entry, so the
 * section needs no relocation); the fault handler (kernel/safe_copy.c)
 * looks a faulting %rip up there and resumes at the fixup, out of line,
 * which sets the status and jumps back after the load.  No call: the
 * compiler keeps every other value where it is.  Not an asm goto with
 * outputs, which gcc 12 miscompiles (the output's register dropped on the
 * fall-through edge: the typed tests read 0).
 */
struct arch_extable {
	int32_t insn, fixup; /* each from its own field's address */
};
/* After a load at label 1: its fixup (label 3, out of line: the status
 * %[st] set, back to label 2 after the load) and its table entry. */
#define ARCH_LOAD_FIXUP                                                                                      \
	"\n2:\n\t.pushsection .text.djp_fixup, \"ax\"\n3:\tmovl $1, %k[st]\n\tjmp 2b\n\t.popsection\n\t"        \
	".pushsection djp_extable, \"a\"\n\t.balign 4\n\t.long 1b - ., 3b - .\n\t.popsection"
#define ARCH_LOAD_INLINE(insn, addr, w, st)                                                                  \
	__asm__ volatile("xorl %k[st], %k[st]\n1:\t" insn ARCH_LOAD_FIXUP                                        \
			 : [w] "=r"(w), [st] "=&r"(st)                                                     \
			 : [a] "r"(addr)                                                                    \
			 : "cc")
static inline __attribute__((always_inline)) bool arch_load_safe(uint64_t addr, unsigned size, uint64_t *v)
{
	uint64_t w;
	uint32_t st;

	if (__builtin_expect(size == 8, 1))
		ARCH_LOAD_INLINE("movq (%[a]), %[w]", addr, w, st);
	else if (size == 4)
		ARCH_LOAD_INLINE("movl (%[a]), %k[w]", addr, w, st);
	else if (size == 2)
		ARCH_LOAD_INLINE("movzwl (%[a]), %k[w]", addr, w, st);
	else
		ARCH_LOAD_INLINE("movzbl (%[a]), %k[w]", addr, w, st);
	if (__builtin_expect(st, 0))
		return false;
	*v = w;
	return true;
}

/* An 8-byte load of a chain: the value at addr, and *st set (never
 * cleared) when it faulted, the value then meaningless.  A chain of these
 * tests its status once at its end, and a chain that faulted anywhere is
 * walked again, load by load, for the address that faulted first (a
 * garbage address read on the way faults again or reads what nobody
 * uses: loads have no other effect). */
static inline __attribute__((always_inline)) uint64_t arch_load8_acc(uint64_t addr, uint32_t *st)
{
	uint64_t w;

	__asm__ volatile("1:\tmovq (%[a]), %[w]" ARCH_LOAD_FIXUP
			 : [w] "=r"(w), [st] "+r"(*st)
			 : [a] "r"(addr));
	return w;
}

/* The fixup of the load at %rip, or 0: the section's entries, a
 * fault's lookup (rare: a scan). */
static inline uintptr_t arch_extable_fixup(const struct arch_extable *b, const struct arch_extable *e, uintptr_t rip)
{
	for (; b < e; b++)
		if ((uintptr_t)&b->insn + (intptr_t)b->insn == rip)
			return (uintptr_t)&b->fixup + (intptr_t)b->fixup;
	return 0;
}

#endif
