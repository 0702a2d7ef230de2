/*
 * The trampoline pool: where each jump-armed site's trampolines live.
 *
 * Each site gets its own trampoline per flavour (tramp_lean.c,
 * tramp_full.c), generated at run time into memory within a rel32 (+-2
 * GiB) of the site, so that the site's `jmp rel32` reaches it and its
 * `jmp rel32` back reaches site+6.  The memory comes in chunks of
 * DJP_TRAMP_CHUNK bytes, aligned to their size: one RW data page, then RX
 * code slots.  The data page holds what every trampoline of the chunk
 * reaches RIP-relative (the C dispatchers, the x87 slow paths) and, at its
 * end, the site of each slot, so that any address inside a trampoline
 * names its site (arch_hit_site): that is how a hit's key, the return
 * address of the trampoline's call to the handler, costs no store.  What
 * is particular to a site (the word its handler list is published in) is
 * in the code as 64-bit constants.
 *
 * Where a chunk goes.  In the site's own 1 MiB region when there is room
 * there, else in the free gap nearest to the site.  Measured on this
 * machine class, a jump whose target leaves its 1 MiB region costs about a
 * quarter of a nanosecond a hit more (1.54 against 1.79 ns over the NOP,
 * reproducible with fixed load addresses): the branch predictors keep far
 * targets apart.  Chunks are small (64 KiB) so that a region has room for
 * one more often.
 *
 * Code never changes once written, and is reused whenever its site is
 * armed again.  It is written through the text writer (text.c) before any
 * site jumps to it, and the whole batch in one text session.  Chunks are
 * never unmapped, because a preempted thread may sit inside a trampoline
 * at any time (uprobes never unmaps its XOL page for the same reason).
 * The generator is bounded: code that would not fit its slots, or a key
 * whose tag bit would be set, fails that one trampoline, and the site is
 * then an int3 probe.
 */
#include <cpuid.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "arch/x86/tramp.h"
#include "lib/sysops.h"

#define REGION (1UL << 20) /* where a jump's target had best be (see the top) */

struct chunk {
	uintptr_t base; /* data page; code starts at base + DJP_TRAMP_DATA */
	unsigned used;
	struct chunk *next;
};

struct djp_tramp_ops djp_tramp_ops;
static struct chunk *chunks;
static size_t xsave_size;
static int use_xsavec;
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
	djp_tramp_ops = *o;
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
	djp_tramp_vector_init();
	return 0;
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
/* A new mapping [lo, hi) in the batch's copy of the address space, where
 * it sorts. */
static int maps_insert(struct djp_maps *ms, uintptr_t lo, uintptr_t hi)
{
	struct djp_map *m = realloc(ms->m, (ms->n + 1) * sizeof(*m));
	size_t i = ms->n;
	if (!m)
		return -ENOMEM;
	ms->m = m;
	for (; i > 0 && m[i - 1].lo > lo; i--)
		m[i] = m[i - 1];
	m[i] = (struct djp_map){ lo, hi, PROT_READ };
	ms->n++;
	return 0;
}

/* A new chunk in reach of the site.  `ms` is the batch's copy of the
 * address space, read once and kept up to date with the chunks the batch
 * maps: reading /proc/self/maps for each of the 85 chunks of 5,000
 * functions was a tenth of arming them.  Another thread may have mapped
 * something since: MAP_FIXED_NOREPLACE says so, and the copy is read again. */
static struct chunk *chunk_new(uintptr_t site, unsigned len, int region_only, struct djp_maps *ms, int *err)
{
	const uintptr_t size = DJP_TRAMP_CHUNK, span = (uintptr_t)1 << 31, minaddr = 1 << 16;
	const uintptr_t region_lo = site & ~(REGION - 1), region_hi = region_lo + REGION;
	uintptr_t best = 0, bestdist = UINTPTR_MAX;
	int best_in_region = 0, fresh = 0;
	struct chunk *c;
	void *p;

again:
	if (!ms->m || fresh) {
		free(ms->m);
		ms->m = NULL;
		if ((*err = djp_maps_read(ms)))
			return NULL;
		fresh = 1;
	}
	best = 0;
	bestdist = UINTPTR_MAX;
	best_in_region = 0;
	for (size_t i = 0; i <= ms->n; i++) {
		/* Leave a page of guard on either side of others' mappings. */
		uintptr_t gap_lo = (i ? ms->m[i - 1].hi : minaddr) + 4096;
		uintptr_t gap_hi = (i < ms->n ? ms->m[i].lo : (uintptr_t)0x7ffffffff000) - 4096;
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
	if (!best || (region_only && !best_in_region)) {
		*err = -ERANGE;
		return NULL;
	}
	p = djp_sys_mmap((void *)best, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			 -1, 0);
	if (p == MAP_FAILED && errno == EEXIST && !fresh) {
		fresh = 1; /* the copy was old */
		goto again;
	}
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
	*(uintptr_t *)((uint8_t *)p + HDR_LEAN) = (uintptr_t)djp_tramp_ops.lean_slow;
	*(uintptr_t *)((uint8_t *)p + HDR_FULL) = (uintptr_t)djp_tramp_ops.full_slow;
	*(uintptr_t *)((uint8_t *)p + HDR_X87_SAVE) = (uintptr_t)djp_x87_save;
	*(uintptr_t *)((uint8_t *)p + HDR_X87_RESTORE) = (uintptr_t)djp_x87_restore;
	if (!chunk_in_range(c, site, len)) {
		munmap(p, size);
		free(c);
		*err = -ERANGE;
		return NULL;
	}
	if ((*err = maps_insert(ms, c->base, c->base + size))) { /* (kept: it is in the list) */
		free(ms->m); /* read again for the next */
		ms->m = NULL;
		*err = 0;
	}
	c->next = chunks;
	__atomic_store_n(&chunks, c, __ATOMIC_RELEASE); /* arch_tramp_owns reads it lock-free */
	return c;
}

/* Chunks are only ever added, at the head: a walk from a signal handler
 * sees a consistent list. */
bool arch_tramp_owns(uintptr_t addr)
{
	for (const struct chunk *c = __atomic_load_n(&chunks, __ATOMIC_ACQUIRE); c; c = c->next)
		if (addr - c->base < DJP_TRAMP_CHUNK)
			return true;
	return false;
}

const struct djp_site *arch_tramp_site_of(uintptr_t addr)
{
	for (const struct chunk *c = __atomic_load_n(&chunks, __ATOMIC_ACQUIRE); c; c = c->next)
		if (addr - c->base < DJP_TRAMP_CHUNK)
			return addr - c->base < DJP_TRAMP_DATA
				       ? NULL
				       : ((struct djp_site *const *)(c->base + DJP_TRAMP_SITES_AT))[(addr - c->base - DJP_TRAMP_DATA) /
													DJP_TRAMP_SLOT];
	return NULL;
}

/* A chunk with `slots` free slots for the site: one in its 1 MiB region,
 * a new one there, one in reach, or a new one in reach, in that order. */
static struct chunk *chunk_for(uintptr_t site, unsigned len, unsigned slots, uintptr_t *full_region,
			       struct djp_maps *ms, int *err)
{
	struct chunk *c, *any = NULL;
	uintptr_t region = site & ~(REGION - 1);
	for (c = chunks; c; c = c->next)
		if (c->used + slots <= DJP_TRAMP_SLOTS && chunk_in_range(c, site, len)) {
			if ((c->base & ~(REGION - 1)) == region)
				return c;
			any = any ? any : c;
		}
	/* A region found full stays full for the rest of the batch: one
	 * look at the address space for it, not one per site. */
	if (region != *full_region) {
		if ((c = chunk_new(site, len, 1, ms, err)))
			return c;
		*full_region = region;
	}
	return any ? any : chunk_new(site, len, 0, ms, err);
}

/*
 * Make the trampolines of a batch of sites: pick a chunk in reach of each
 * (or map one), generate the code, then write it all in one text session
 * (one maps read and one mprotect pair per run of pages, not per site).
 */
int arch_tramp_create(struct djp_tramp_req *r, size_t n)
{
	uintptr_t *ends, *slot_start;
	uint8_t *lens, *code = NULL;
	size_t *sizes, *at, nreq = 0, code_len = 0, code_cap = 0;
	struct djp_text_session s;
	int err = 0;
	unsigned slots;
	uintptr_t full_region = 1; /* none: a region is aligned */
	struct djp_maps ms = { 0 }; /* read when a chunk is first wanted */

	if (!n)
		return 0;
	ends = malloc(n * (2 * sizeof(*ends) + 2 * sizeof(*sizes)) + n * 2);
	slot_start = malloc(n * sizeof(*slot_start));
	if (!ends || !slot_start) {
		free(ends);
		free(slot_start);
		return -ENOMEM;
	}
	sizes = (size_t *)(ends + 2 * n);
	at = sizes + n;
	lens = (uint8_t *)(at + n);
	pthread_mutex_lock(&tramp_lock);
	for (size_t i = 0; i < n; i++) {
		/* Generated here, then kept end to end in `code` until the
		 * text session: a staging area of the largest size for each
		 * (1.5 KiB, for 150 bytes of a lean trampoline and 30 of an
		 * out-of-line copy) was 15 MiB of fresh pages for 5,000
		 * functions, half the page faults of arming them. */
		uint8_t one[MAX_SIZE];
		struct chunk *c;
		struct emit e;
		r[i].entry = 0;
		r[i].err = 0;
		if (r[i].flavour == DJP_FULL && !xsave_size) {
			r[i].err = -ENOTSUP;
			continue;
		}
		slots = r[i].flavour == DJP_FULL ? FULL_SLOTS : 1;
		if (!(c = chunk_for(r[i].site, r[i].len, slots, &full_region, &ms, &r[i].err)))
			continue;
		r[i].entry = c->base + DJP_TRAMP_DATA + (uintptr_t)c->used * DJP_TRAMP_SLOT;
		/* A trampoline that would not fit its slots fails alone (the
		 * site is then an int3 probe); none does. */
		e = (struct emit){ one, 0, slots * DJP_TRAMP_SLOT, r[i].entry, 0 };
		slot_start[i] = r[i].entry;
		if (r[i].flavour == DJP_OOL) {
			ssize_t k = djp_insn_relocate(r[i].code, r[i].len, r[i].site, e.at, e.buf, e.cap, NULL, NULL);
			sizes[i] = k > 0 ? (size_t)k : 0;
			e.overflow = k <= 0;
		} else if (r[i].flavour != DJP_FULL) {
			sizes[i] = djp_tramp_gen_lean(&e, &r[i], &r[i].entry, r[i].flavour == DJP_LEAN_PREFETCH);
		} else {
			sizes[i] = djp_tramp_gen_full(&e, &r[i], &r[i].entry);
		}
		if (e.overflow) {
			r[i].entry = 0;
			r[i].err = -E2BIG;
			continue;
		}
		if (code_len + sizes[i] > code_cap) {
			size_t cap = code_cap ? 2 * code_cap : 64 * 1024;
			uint8_t *nc;
			while (cap < code_len + sizes[i])
				cap *= 2;
			if (!(nc = realloc(code, cap))) {
				r[i].entry = 0; /* (its slot not taken) */
				r[i].err = -ENOMEM;
				continue;
			}
			code = nc;
			code_cap = cap;
		}
		memcpy(code + code_len, one, sizes[i]);
		at[i] = code_len;
		code_len += sizes[i];
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
				err = arch_text_write(&s, slot_start[i], code + at[i], sizes[i]);
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
	free(ms.m);
	free(code);
	free(ends);
	free(slot_start);
	return err;
}
