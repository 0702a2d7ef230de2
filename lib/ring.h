/*
 * Per-thread ring buffers in one shared-memory region (lib/ring.c has the
 * essay).  The producer side (the traced process) creates a region and
 * records events with djp_ring_record(), whose fast path is inline here; the
 * consumer side (the djp tool, another process) maps the region from its fd
 * and drains it.
 *
 * Region layout (all little-endian, all offsets in bytes):
 *
 *   [0, 4096)            struct djp_region_hdr
 *   [4096 + i*stride)    slot i: struct djp_slot_hdr, padded to slot_hdr_size,
 *                        then ring_size bytes of ring data
 *
 * A ring is cut into nsubbufs sub-buffers; an event never straddles two.
 * Positions (head, tail) count bytes since the slot was claimed and never
 * wrap; the byte at position p lives at data[p & (ring_size - 1)].
 *
 * Event layout (8-aligned, at most 65528 bytes, never crossing a sub-buffer):
 *
 *   u64 timestamp    raw clock value (djp_clock_to_ns() with the header's
 *                    clock parameters gives CLOCK_MONOTONIC ns)
 *   u32 marker_id
 *   u16 size         total bytes including this header, a multiple of 8
 *   u8  nargs        argument words that follow
 *   u8  flags        DJP_EVF_*
 *   u64 args[nargs]
 *   inline strings   for %s arguments: the pointer (u64), then the text,
 *                    NUL-terminated, 8-aligned
 *   u64 regs[n]      with DJP_EVF_REGS only: words of the hit's registers
 *   u64 n            (the recorder's layout: kernel/agent/recorder.h),
 *                    n <= DJP_RING_MAX_REGS, then their number
 *   u64 pcs[n]       with DJP_EVF_USTACK only: the user stack at the hit,
 *   u64 n            innermost first (pcs[0] the hit's pc, then return
 *                    addresses), n <= DJP_RING_MAX_STACK, then its depth
 *   u64 vals[k]      with DJP_EVF_LOADS only: the results of the site's
 *                    load programs (lib/load_prog.h), then the strings
 *                    of those that are (as a %s argument's: the pointer,
 *                    the text; vals[i] their descriptors)
 *   u64 faulted      only when one of the two is not 0: bit i set when
 *   u64 strs         program i faulted (vals[i] is then the address it
 *                    could not read), and when vals[i] is a string
 *   u64 k_bytes      k (bits 0-7), the block's bytes from vals on (8-23),
 *                    whether the two masks are there (24)
 *   u64 task         with DJP_EVF_TASK only (kernel rings, whose slots are
 *                    CPUs): tgid << 32 | tid of the hit's task, 0 when it
 *                    interrupted something
 *   u64 cpu          with DJP_EVF_CPU only: the CPU the hit ran on, the
 *                    event's last word
 *
 * A %s argument's word is not the pointer but a string descriptor:
 *   bits  0..15  offset from the start of the event of the string: of its
 *                pointer word when DJP_STR_ADDR is set, else of its text
 *   bits 16..31  length in bytes, not counting the NUL
 *   bit  32      DJP_STR_TRUNCATED: the source was longer than the bound
 *   bit  33      DJP_STR_FAULT: the source was not (fully) readable; the text
 *                is the readable prefix, or "<bad>" when nothing was
 *   bit  34      DJP_STR_NULL: the pointer was NULL; the text is "(null)"
 *   bit  35      DJP_STR_ADDR: the pointer precedes the text (producers
 *                always set it; the bit says so to readers of older data)
 * A %p argument is recorded as a plain word and never dereferenced.
 *
 * Padding: when an event does not fit in what is left of a sub-buffer, the
 * producer writes a header with DJP_EVF_PAD there (if at least 16 bytes are
 * left) and starts the event at the next sub-buffer; a reader skips to the
 * next sub-buffer on a pad, or when fewer than 16 bytes are left.
 *
 * The thread id is recorded once per slot (the owner word), not per event.
 */
#ifndef DJP_LIB_RING_H
#define DJP_LIB_RING_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "ring_write.h" /* the event's flags, header word and strings */

#define DJP_RING_MAGIC 0x31474e4952504a44ull /* "DJPRING1" */
#define DJP_RING_VERSION 2u

enum djp_ring_mode {
	DJP_RING_DISCARD = 0,	/* full ring: drop the new event, count it */
	DJP_RING_OVERWRITE = 1, /* full ring: overwrite the oldest sub-buffer */
};

#define DJP_RING_MAX_ARGS 16
/* Results of load programs an event may carry (DJP_EVF_LOADS): as many
 * as lib/load_prog.h's DJP_LOAD_MAX_PROGS. */
#define DJP_RING_MAX_LOADS 64
/* Return addresses an event may carry (DJP_EVF_USTACK). */
#define DJP_RING_MAX_STACK 64
/* Register words an event may carry (DJP_EVF_REGS). */
#define DJP_RING_MAX_REGS 64
#define DJP_RING_STR_BOUND 64	   /* default bound for %s, NUL included */
#define DJP_RING_STR_BOUND_MAX 1024
#define DJP_EV_MAX_SIZE 65528u
#define DJP_REGION_HDR_SIZE 4096u
#define DJP_RING_MIN_SIZE 4096u
#define DJP_RING_MAX_SIZE (1ull << 30)
#define DJP_SUBBUF_MIN_SIZE 1024u
/* The smallest ring the default 16 sub-buffers allow: what a tool may ask
 * an agent for (RING with nsubbufs 0). */
#define DJP_RING_MIN_DEFAULT_SIZE (16u * DJP_SUBBUF_MIN_SIZE)
#define DJP_RING_MAX_SLOTS 65536u
/* How far ahead of its writes a producer asks for the ring's lines
 * (djp_ring_prefetch). */
#define DJP_RING_PREFETCH_AHEAD 512u

struct djp_event {
	uint64_t timestamp;
	uint32_t marker_id;
	uint16_t size;
	uint8_t nargs;
	uint8_t flags;
	uint64_t args[];
};
_Static_assert(sizeof(struct djp_event) == DJP_EV_HDR_SIZE, "event header is 16 bytes");


/* Slot owner word: (tid << 32) | state. */
enum djp_slot_state {
	DJP_SLOT_FREE = 0,
	DJP_SLOT_ACTIVE = 1,  /* owned by a live thread */
	DJP_SLOT_RETIRED = 2, /* its thread exited; recycled once drained */
	/* its thread is on its way out (glibc's thread-exit destructors):
	 * still written, read as an active one, retired once the thread is
	 * gone (lib/ring.c, "Threads coming and going") */
	DJP_SLOT_EXITING = 3,
	/* a thread is taking the retired slot over, its ring included: it
	 * writes an owner record (DJP_EVF_OWNER) and then makes it ACTIVE
	 * (lib/ring.c, "Slots handed on") */
	DJP_SLOT_TAKING = 4,
	/* the consumer is recycling it; FREE after */
	DJP_SLOT_RECYCLING = 5,
};

/* Shared header.  Written once by the creator, except lost_noslot. */
struct djp_region_hdr {
	uint64_t magic;
	uint32_t version;
	uint32_t hdr_size;	/* sizeof(struct djp_region_hdr) */
	uint32_t slot_hdr_size; /* bytes from a slot's start to its ring data */
	uint32_t nslots;
	uint64_t ring_size;	/* bytes of data per slot, a power of two */
	uint64_t subbuf_size;	/* ring_size / nsubbufs */
	uint32_t nsubbufs;	/* a power of two */
	uint32_t mode;		/* enum djp_ring_mode */
	uint64_t slot_stride;	/* slot_hdr_size + ring_size */
	uint64_t slots_offset;	/* DJP_REGION_HDR_SIZE */
	uint64_t total_size;	/* slots_offset + nslots * slot_stride */
	uint32_t str_bound;	/* default %s bound */
	uint32_t producer_pid;
	struct djp_clock_params clock;
	/* Events lost because no slot was free (or on recursion before a
	 * thread had one).  Producers add to it atomically, rarely. */
	_Alignas(128) uint64_t lost_noslot;
	/* 1 + the highest slot index ever claimed: producers claim the lowest
	 * free slot and raise it (atomic max); readers look no further, so a
	 * process with a few threads costs a few slots to scan, not nslots. */
	uint32_t slots_used;
};

/* Per sub-buffer record, written by the producer as it enters one. */
struct djp_subbuf_rec {
	uint64_t seq;	/* k + 1 while sub-buffer k occupies this place */
	uint64_t count; /* events recorded in the slot before sub-buffer k */
};

/* Slot header: three groups on cache-line pairs of their own, so the
 * producer, the consumer and slot claims never share a line. */
struct djp_slot_hdr {
	/* ownership: claim and retire (producer), recycle (consumer) */
	_Alignas(128) uint64_t owner; /* (tid << 32) | enum djp_slot_state */
	uint64_t generation;	      /* bumped at each recycle */
	uint64_t serial;	      /* the owner's djp_ring_tls.serial */
	uint32_t pid;		      /* the owner's process (getpid()) */
	/* written by the producer only */
	_Alignas(128) uint64_t head;  /* end of the last committed event */
	uint64_t nevents;	      /* events recorded */
	uint64_t lost_full;	      /* discard mode: no room (or too large) */
	uint64_t lost_nested;	      /* recursion: a record inside a record */
	uint64_t tail_cache;	      /* the producer's copy of tail */
	/* written by the consumer only */
	_Alignas(128) uint64_t tail;  /* everything before it has been read */
	_Alignas(128) struct djp_subbuf_rec sb[]; /* nsubbufs records */
};

/* Producer-side handle (process-local). */
struct djp_region {
	uint64_t id; /* unique in the process, never reused */
	uint8_t *base;
	struct djp_region_hdr *hdr;
	size_t size;
	int fd;
	uint32_t nslots, nsubbufs, mode, str_bound;
	uint64_t ring_size, subbuf_size, slot_stride, slot_hdr_size;
	struct djp_region *next; /* live-region list (ring.c) */
	uint64_t noslot_tries;	 /* claims that found no slot free */
};

struct djp_ring_opts {
	size_t sz;	    /* sizeof(struct djp_ring_opts) */
	unsigned nslots;    /* threads that can record at once; default 256 */
	size_t ring_size;   /* bytes per thread, a power of two; default 1 MiB */
	unsigned nsubbufs;  /* a power of two; default 16 */
	unsigned mode;	    /* DJP_RING_DISCARD (default) or DJP_RING_OVERWRITE */
	unsigned str_bound; /* default %s bound, NUL included; default 64 */
};

/* Slot geometry, shared by both sides. */
static inline uint64_t djp_slot_hdr_size(uint32_t nsubbufs)
{
	uint64_t n = offsetof(struct djp_slot_hdr, sb) + (uint64_t)nsubbufs * sizeof(struct djp_subbuf_rec);
	return (n + 4095) & ~4095ull;
}

/* ---- producer ---------------------------------------------------------- */

/* Create a region in a new memfd (sealed against shrinking and growing).
 * NULL with errno set: EINVAL for bad options, or what memfd/mmap said. */
struct djp_region *djp_region_create(const struct djp_ring_opts *opts);
/* Unmap and close.  No thread may be recording into it any more. */
void djp_region_destroy(struct djp_region *r);
/* The memfd, to pass to a consumer (SCM_RIGHTS). */
int djp_region_fd(const struct djp_region *r);

/* Retire the calling thread's slots in every region now: it records no
 * more into them (a record after this claims a new slot). */
void djp_ring_thread_retire(void);
/* Retire the slots, in every region, of this process's threads that have
 * exited (a thread's exit marks its slots EXITING and does this for the
 * threads gone before it; the agent does it every 100 ms while it has
 * probes).  How many were retired. */
unsigned djp_ring_reap_exited(void);

/* Per-thread producer state: the slot of the region last recorded into.
 * What the fast path reads (region_id, head, slot, data, ring_size,
 * fast_end) sits together at its start. */
struct djp_ring_tls {
	uint64_t region_id;
	/* The slot's head as this thread last committed it.  The shared head
	 * is only written: the consumer maps the region read-write, so a
	 * position read back from it could be anything (see ring.c). */
	uint64_t head;
	/* Up to where the next events may go without a check of anything
	 * else: the end of the current sub-buffer, or of the free room in a
	 * discard-mode ring, whichever comes first; 0 (nothing) until the
	 * first event, and where the TSC is not the clock.  Kept by
	 * djp_ring_record, used by djp_ring_try_words. */
	uint64_t fast_end;
	struct djp_slot_hdr *slot;
	uint8_t *data;
	uint64_t ring_size;
	uint64_t sb_mask;    /* subbuf_size - 1 */
	uint32_t sb_shift;   /* log2(subbuf_size) */
	uint32_t nsb_mask;   /* nsubbufs - 1 */
	uint32_t mode;
	uint32_t str_bound;
	uint32_t tid;
	volatile uint32_t nesting;
	/* This thread's number, unique in the process (0 until its first
	 * slot): a slot is taken back by the thread whose number it holds,
	 * never by a later one that got the same tid. */
	uint64_t serial;
	/* Its exit has begun (the ring's key destructor ran): slots it
	 * claims from now on are EXITING ones. */
	uint32_t exiting;
};
extern __thread struct djp_ring_tls djp_ring_tls __attribute__((tls_model("initial-exec")));

/*
 * Ask for the line DJP_RING_PREFETCH_AHEAD bytes past position pos, to be
 * written.  The consumer, on another core, has read the lines the producer
 * is about to overwrite, so each one is shared there, and a store to it
 * waits for the other core to give it up: one such wait every 64 bytes,
 * two events of two arguments, cost 11-12 ns an event on AMD EPYC (21 ns
 * against 9.5 with the prefetch, bench/trace_record, a consumer on the
 * other core).  PREFETCHW takes the line for writing early, and is a NOP
 * where it does nothing.  Two lines ahead were 15 ns, four 10.8, eight
 * and more 9.3-9.7.
 */
static inline __attribute__((always_inline)) void djp_ring_prefetch(const struct djp_ring_tls *t, uint64_t pos)
{
	__asm__ volatile("prefetchw %0" ::"m"(t->data[(pos + DJP_RING_PREFETCH_AHEAD) & (t->ring_size - 1)]));
}

/* Slow paths of djp_ring_record (ring.c). */
int djp__ring_attach(struct djp_region *r);
int djp__ring_nested(struct djp_region *r);
/* The string copy djp_ring_record uses: NULL (the default) for
 * process_vm_readv, or a faster fault-safe one (kernel/safe_copy.c) with
 * djp_arch_copy_str's contract (arch/x86/copy_str.S), which may also
 * answer DJP_RING_COPY_DECLINED: not now, in this thread (nothing copied;
 * the ring uses process_vm_readv for this string). */
typedef uint64_t (*djp_ring_copy_fn)(char *dst, const char *src, uint64_t max);
#define DJP_RING_COPY_DECLINED (1ull << 62)
void djp_ring_set_fast_copy(djp_ring_copy_fn fn);
uint32_t djp__ring_put_strings(uint64_t *ev, uint32_t size, const uint64_t *args, unsigned nargs,
			       uint32_t str_mask, uint32_t bound);
/* The copy of a %s argument, for another recorder of the thread's (after
 * its first event, or djp__ring_attach): at most bound - 1 bytes of src
 * and a NUL into dst, fault-safe; the length and DJP_STR_* bits of a
 * string descriptor. */
uint64_t djp_ring_copy_string(char *dst, const char *src, uint32_t bound);

/*
 * Record one event into the calling thread's ring of region r.
 *
 * args[0..nargs-1] are the argument words (nargs <= DJP_RING_MAX_ARGS).  Bit i
 * of str_mask marks args[i] as a pointer to a NUL-terminated string, copied
 * inline (fault-safe) up to str_bound bytes including the NUL (0: the
 * region's default; at most DJP_RING_STR_BOUND_MAX).
 *
 * Returns 0; -ENOBUFS when the event was dropped because the ring is full or
 * the event larger than a sub-buffer (counted in lost_full), -EAGAIN on
 * recursion (counted in lost_nested), -ENOSPC when no slot was free (counted
 * in the header's lost_noslot), -EINVAL for too many arguments (lost_full).
 *
 * Lock-free, allocation-free and async-signal-safe; no system call except the
 * first event of a thread in a region (slot claim) and one per %s argument.
 * General registers only: no vector or x87 state is touched, except by the
 * %s copy (a system call).
 */
/* An event going at `at`: when it is the first of sub-buffer k, announce
 * the sub-buffer before writing into it (the seqlock write side; see the
 * snapshot in ring.c). */
static inline __attribute__((always_inline)) void djp__ring_enter(const struct djp_ring_tls *t,
								 struct djp_slot_hdr *s, uint64_t at)
{
	if ((at & t->sb_mask) == 0) {
		uint64_t k = at >> t->sb_shift;
		struct djp_subbuf_rec *rec = &s->sb[k & t->nsb_mask];
		__atomic_store_n(&rec->seq, k + 1, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_RELEASE);
		__atomic_store_n(&rec->count, s->nevents, __ATOMIC_RELAXED);
	}
}

/* djp_ring_record, and what a reader may ask of each hit besides: the CPU
 * of the hit as the event's last word when cpu is not negative
 * (DJP_EVF_CPU: a script's cpu()), and the npcs words of pcs, the user
 * stack, when pcs is not NULL (DJP_EVF_USTACK: a script's ubacktrace();
 * at most DJP_RING_MAX_STACK, more are dropped), and before it the nregs
 * words of regs, when regs is not NULL (DJP_EVF_REGS: a script's
 * register(); at most DJP_RING_MAX_REGS).  With a constant -1 and NULLs
 * the compiler leaves no trace of them. */
/* And the results of load programs (DJP_EVF_LOADS): the nloads words of
 * loads, when loads is not NULL (at most DJP_RING_MAX_LOADS), with the
 * mask of those that faulted; those of lstr_mask (and not faulted) are
 * addresses of strings to copy, at most lstr_bound bytes each, NUL
 * included.  NULL: none, and no trace in the code. */
static inline __attribute__((always_inline)) int djp_ring_record_loads(struct djp_region *r, uint32_t marker_id,
									 const uint64_t *args, unsigned nargs,
									 uint32_t str_mask, unsigned str_bound, int cpu,
									 const uint64_t *regs, unsigned nregs,
									 const uint64_t *pcs, unsigned npcs,
									 const uint64_t *loads, unsigned nloads,
									 uint64_t faulted, uint64_t lstr_mask,
									 unsigned lstr_bound)
{
	struct djp_ring_tls *t = &djp_ring_tls;
	struct djp_slot_hdr *s;
	uint64_t ts, pos, at, max, sb_size, *e;
	uint32_t size, flags = 0;
	int ret = 0;

	if (__builtin_expect(t->nesting != 0, 0))
		return djp__ring_nested(r);
	t->nesting = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);

	if (__builtin_expect(t->region_id != r->id, 0) && (ret = djp__ring_attach(r)) < 0)
		goto out;
	s = t->slot;
	if (__builtin_expect(nargs > DJP_RING_MAX_ARGS, 0)) {
		ret = -EINVAL;
		goto lost;
	}
	if (pcs && npcs > DJP_RING_MAX_STACK)
		npcs = DJP_RING_MAX_STACK;
	if (regs && nregs > DJP_RING_MAX_REGS)
		nregs = DJP_RING_MAX_REGS;
	if (loads && nloads > DJP_RING_MAX_LOADS)
		nloads = DJP_RING_MAX_LOADS;
	max = DJP_EV_HDR_SIZE + 8 * nargs + (cpu >= 0 ? 8 : 0) + (pcs ? 8 * (npcs + 1) : 0) +
	      (regs ? 8 * (nregs + 1) : 0) + (loads ? 8 * (nloads + 3) : 0);
	if (loads && lstr_mask) {
		lstr_mask &= ~faulted;
		if (nloads < 64)
			lstr_mask &= (1ull << nloads) - 1;
		if (lstr_bound > DJP_RING_STR_BOUND_MAX)
			lstr_bound = DJP_RING_STR_BOUND_MAX;
		if (lstr_bound < 8)
			lstr_bound = 8;
		lstr_bound = (lstr_bound + 7) & ~7u;
		max += (uint64_t)__builtin_popcountll(lstr_mask) * (8 + lstr_bound);
	}
	if (__builtin_expect(str_mask != 0, 0)) {
		str_mask &= (1u << nargs) - 1;
		if (!str_bound)
			str_bound = t->str_bound;
		if (str_bound > DJP_RING_STR_BOUND_MAX)
			str_bound = DJP_RING_STR_BOUND_MAX;
		if (str_bound < 8)
			str_bound = 8;
		str_bound = (str_bound + 7) & ~7u;
		max += (uint64_t)__builtin_popcount(str_mask) * (8 + str_bound);
	}

	/* Reserve: the event goes at `at`, in the current sub-buffer or at
	 * the start of the next one.  Whatever pos is, at + max ends inside
	 * one sub-buffer. */
	pos = t->head;
	sb_size = t->sb_mask + 1;
	if (!djp_ring_place(pos, max, sb_size, &at)) {
		ret = -ENOBUFS;
		goto lost;
	}
	if (t->mode == DJP_RING_DISCARD && __builtin_expect(at + max - s->tail_cache > t->ring_size, 0)) {
		s->tail_cache = __atomic_load_n(&s->tail, __ATOMIC_ACQUIRE);
		if (at + max - s->tail_cache > t->ring_size) {
			ret = -ENOBUFS;
			goto lost;
		}
	}
	/* The clock once the event is known to fit: a lost one does not pay
	 * for it. */
	ts = djp_clock_raw();
	djp_ring_pad(t->data, t->ring_size, sb_size, pos, at, ts);
	djp__ring_enter(t, s, at);

	/* Write and commit. */
	e = (uint64_t *)(t->data + (at & (t->ring_size - 1)));
	djp_ring_prefetch(t, at);
	e[0] = ts;
	for (unsigned i = 0; i < nargs; i++) {
		e[2 + i] = args[i];
		__asm__("" ::: "memory"); /* keep it a general-register loop */
	}
	size = DJP_EV_HDR_SIZE + 8 * nargs;
	if (__builtin_expect(str_mask != 0, 0)) {
		size = djp__ring_put_strings(e, size, args, nargs, str_mask, str_bound);
		flags |= DJP_EVF_STRINGS;
	}
	if (regs) {
		for (unsigned i = 0; i < nregs; i++) {
			e[size / 8 + i] = regs[i];
			__asm__("" ::: "memory"); /* as above */
		}
		size += 8 * nregs;
		e[size / 8] = nregs;
		size += 8;
		flags |= DJP_EVF_REGS;
	}
	if (pcs) {
		for (unsigned i = 0; i < npcs; i++) {
			e[size / 8 + i] = pcs[i];
			__asm__("" ::: "memory"); /* as above */
		}
		size += 8 * npcs;
		e[size / 8] = npcs;
		size += 8;
		flags |= DJP_EVF_USTACK;
	}
	if (loads) {
		uint32_t start = size;
		for (unsigned i = 0; i < nloads; i++) {
			e[size / 8 + i] = loads[i];
			__asm__("" ::: "memory"); /* as above */
		}
		size += 8 * nloads;
		for (unsigned i = 0; lstr_mask && i < nloads; i++) {
			uint64_t d, len;
			if (!(lstr_mask & (1ull << i)))
				continue;
			/* the pointer, then its text; the word becomes the
			 * string's descriptor, as a %s argument's */
			d = djp_ring_copy_string(djp_ring_str_text(e, size, loads[i]),
						 (const char *)(uintptr_t)loads[i], lstr_bound);
			len = d & 0xffff;
			e[start / 8 + i] = size | len << 16 | (d & ~0xffffffffull) | DJP_STR_ADDR;
			size += 8 + (((uint32_t)len + 1 + 7) & ~7u);
		}
		/* the two masks only when one is not 0: most events carry
		 * numbers that did not fault */
		if (faulted | lstr_mask) {
			e[size / 8] = faulted;
			e[size / 8 + 1] = lstr_mask;
			size += 16;
		}
		e[size / 8] = nloads | (uint64_t)(size + 8 - start) << 8 | (uint64_t)!!(faulted | lstr_mask) << 24;
		size += 8;
		flags |= DJP_EVF_LOADS;
	}
	if (cpu >= 0) {
		e[size / 8] = (uint64_t)cpu;
		size += 8;
		flags |= DJP_EVF_CPU;
	}
	e[1] = djp_ev_word(marker_id, size, nargs, flags);
	__atomic_store_n(&s->nevents, s->nevents + 1, __ATOMIC_RELAXED);
	t->head = at + size;
	__atomic_store_n(&s->head, at + size, __ATOMIC_RELEASE);
	{
		uint64_t end = (at | t->sb_mask) + 1; /* of this sub-buffer */
		if (t->mode == DJP_RING_DISCARD && s->tail_cache + t->ring_size < end)
			end = s->tail_cache + t->ring_size;
		t->fast_end = djp_clock_use_tsc ? end : 0;
	}
	goto out;
lost:
	__atomic_store_n(&s->lost_full, s->lost_full + 1, __ATOMIC_RELAXED);
out:
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->nesting = 0;
	return ret;
}

static inline __attribute__((always_inline)) int djp_ring_record_ext(struct djp_region *r, uint32_t marker_id,
								       const uint64_t *args, unsigned nargs,
								       uint32_t str_mask, unsigned str_bound, int cpu,
								       const uint64_t *regs, unsigned nregs,
								       const uint64_t *pcs, unsigned npcs)
{
	return djp_ring_record_loads(r, marker_id, args, nargs, str_mask, str_bound, cpu, regs, nregs, pcs, npcs,
				     NULL, 0, 0, 0, 0);
}

static inline __attribute__((always_inline)) int djp_ring_record_cpu(struct djp_region *r, uint32_t marker_id,
								       const uint64_t *args, unsigned nargs,
								       uint32_t str_mask, unsigned str_bound, int cpu)
{
	return djp_ring_record_ext(r, marker_id, args, nargs, str_mask, str_bound, cpu, NULL, 0, NULL, 0);
}

static inline __attribute__((always_inline)) int djp_ring_record(struct djp_region *r, uint32_t marker_id,
								   const uint64_t *args, unsigned nargs, uint32_t str_mask,
								   unsigned str_bound)
{
	return djp_ring_record_ext(r, marker_id, args, nargs, str_mask, str_bound, -1, NULL, 0, NULL, 0);
}

/* Up to four argument words as an event's words 2 on. */
static inline __attribute__((always_inline)) void djp_ring_put_words(uint64_t *e, unsigned nargs, uint64_t a0,
								      uint64_t a1, uint64_t a2, uint64_t a3)
{
	if (nargs > 0)
		e[2] = a0;
	if (nargs > 1)
		e[3] = a1;
	if (nargs > 2)
		e[4] = a2;
	if (nargs > 3)
		e[5] = a3;
}

/*
 * The recorder's fast path into region `region_id` (struct djp_region's
 * id): up to four argument words, no %s, for a caller
 * that is never re-entered on its thread (the engine's recursion guard sees
 * to that, so the nesting word is left alone).  It does the common case, an
 * event that ends before the thread's fast_end (so: in the current
 * sub-buffer, with room in the ring, the TSC for a clock), and returns
 * false for everything else (the first event, a sub-buffer boundary, a full
 * ring), which the caller hands to djp_ring_record.  Nothing here calls
 * anything, so the caller stays a leaf that saves no register.
 */
static inline __attribute__((always_inline)) bool djp_ring_try_words(uint64_t region_id, uint32_t marker_id,
								    unsigned nargs, uint64_t a0, uint64_t a1,
								    uint64_t a2, uint64_t a3)
{
	struct djp_ring_tls *t = &djp_ring_tls;
	struct djp_slot_hdr *s = t->slot;
	uint32_t size = DJP_EV_HDR_SIZE + 8 * nargs;
	uint64_t pos, *e;

	if (__builtin_expect(t->region_id != region_id, 0))
		return false;
	/* pos and fast_end are this thread's own: the slow path set fast_end
	 * to the end of the sub-buffer pos is in, so the event cannot leave
	 * it. */
	pos = t->head;
	if (__builtin_expect(pos + size > t->fast_end, 0))
		return false;
	e = (uint64_t *)(t->data + (pos & (t->ring_size - 1)));
	djp_ring_prefetch(t, pos);
	djp_ring_put_words(e, nargs, a0, a1, a2, a3);
	/* The clock last, once the arguments are out of %rdx and %rcx: the
	 * compiler barrier keeps the stores before the rdtsc, and so no
	 * register needs saving around it. */
	__asm__ volatile("" ::: "memory");
	e[0] = djp_clock_tsc();
	e[1] = djp_ev_word(marker_id, size, nargs, 0);
	__atomic_store_n(&s->nevents, s->nevents + 1, __ATOMIC_RELAXED);
	t->head = pos + size;
	__atomic_store_n(&s->head, pos + size, __ATOMIC_RELEASE);
	return true;
}

/*
 * djp_ring_try_words in two halves, for an event whose words the caller
 * writes itself and whose size it knows only at the end (the results of
 * load programs, kernel/agent/loads.h): room for at most max bytes at the
 * thread's head, under the same conditions and for the same callers, or
 * NULL; then the commit of the event written there, size <= max.  The
 * caller writes words 2 on (the header's two are the commit's).
 */
static inline __attribute__((always_inline)) uint64_t *djp_ring_try_reserve(uint64_t region_id, uint32_t max)
{
	struct djp_ring_tls *t = &djp_ring_tls;
	uint64_t pos;

	if (__builtin_expect(t->region_id != region_id, 0))
		return NULL;
	pos = t->head;
	if (__builtin_expect(pos + max > t->fast_end, 0))
		return NULL;
	djp_ring_prefetch(t, pos);
	return (uint64_t *)(t->data + (pos & (t->ring_size - 1)));
}

static inline __attribute__((always_inline)) void djp_ring_try_commit(uint64_t *e, uint32_t marker_id, uint32_t size,
								       unsigned nargs, uint32_t flags)
{
	struct djp_ring_tls *t = &djp_ring_tls;
	struct djp_slot_hdr *s = t->slot;
	uint64_t pos = t->head;

	__asm__ volatile("" ::: "memory"); /* the words before the clock */
	e[0] = djp_clock_tsc();
	e[1] = djp_ev_word(marker_id, size, nargs, flags);
	__atomic_store_n(&s->nevents, s->nevents + 1, __ATOMIC_RELAXED);
	t->head = pos + size;
	__atomic_store_n(&s->head, pos + size, __ATOMIC_RELEASE);
}

/* ---- consumer ---------------------------------------------------------- */

struct djp_consumer;

/* Final and running counts of one slot. */
struct djp_slot_stats {
	unsigned slot;
	uint32_t tid;
	uint32_t state;	      /* enum djp_slot_state */
	uint64_t generation;
	uint64_t produced;    /* events the producer recorded (its count) */
	uint64_t delivered;   /* events this consumer delivered */
	uint64_t lost_full;   /* dropped by the producer: ring full */
	uint64_t lost_nested; /* dropped by the producer: recursion */
	uint64_t overwritten; /* overwrite mode: gone before they were read */
	uint64_t corrupt;     /* bytes skipped because they did not parse */
};

struct djp_drain_ops {
	/* One event: ev is a private copy, valid during the call.  Return
	 * nonzero to stop the drain after this event. */
	int (*event)(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot);
	/* A retired slot has been drained and is about to be recycled: its
	 * final counts.  May be NULL. */
	void (*slot_done)(void *arg, const struct djp_slot_stats *st);
};

/* Map a region from its fd (which stays the caller's).  Validates the header
 * and refuses with EINVAL anything inconsistent, and with EPERM a memfd that
 * is not sealed against shrinking.  NULL with errno set. */
struct djp_consumer *djp_consumer_open(int fd);
/* A consumer of a region someone else maps, read-only (/dev/djprobe's
 * rings, discard mode only): nothing is ever stored into it, and how far
 * each slot is read stays here (djp_consumer_tail), for the caller to
 * pass on.  Takes the mapping (unmapped at close).  NULL with errno. */
struct djp_consumer *djp_consumer_open_mapped(void *base, size_t size);
uint64_t djp_consumer_tail(const struct djp_consumer *c, unsigned slot);
void djp_consumer_close(struct djp_consumer *c);

unsigned djp_consumer_nslots(const struct djp_consumer *c);
/* The slots ever claimed are below this (the region's high-water mark). */
unsigned djp_consumer_slots_used(const struct djp_consumer *c);
unsigned djp_consumer_mode(const struct djp_consumer *c);
const struct djp_clock_params *djp_consumer_clock(const struct djp_consumer *c);
/* Events lost because no slot was free (the header's counter). */
uint64_t djp_consumer_lost_noslot(const struct djp_consumer *c);

/*
 * Deliver every event not delivered yet, slot by slot, in order within a
 * slot.  Discard mode reads the committed events in place (copying each);
 * overwrite mode takes a consistent snapshot of each ring first.  Retired
 * slots that are fully read are reported (slot_done) and recycled.
 * Returns the number of events delivered, or -errno.  One consumer at a time.
 */
long djp_consumer_drain(struct djp_consumer *c, const struct djp_drain_ops *ops, void *arg);

/* Counts of one slot (shared counters are read as they are). */
int djp_consumer_slot_stats(const struct djp_consumer *c, unsigned slot, struct djp_slot_stats *st);

/* Argument i of a validated event as a string: NULL unless it is a well
 * formed string descriptor inside the event.  *flags gets its DJP_STR_* bits. */
static inline const char *djp_event_str(const struct djp_event *ev, unsigned i, uint32_t *len, uint64_t *flags)
{
	uint64_t w;
	uint32_t o, l;

	if (!(ev->flags & DJP_EVF_STRINGS) || i >= ev->nargs)
		return NULL;
	w = ev->args[i];
	o = DJP_STR_OFFSET(w);
	l = DJP_STR_LEN(w);
	if (o < DJP_EV_HDR_SIZE + 8u * ev->nargs || (o & 7))
		return NULL;
	o += w & DJP_STR_ADDR ? 8 : 0;
	if ((uint64_t)o + l + 1 > ev->size ||
	    ((const char *)ev)[o + l] != 0)
		return NULL;
	if (len)
		*len = l;
	if (flags)
		*flags = w & (DJP_STR_TRUNCATED | DJP_STR_FAULT | DJP_STR_NULL);
	return (const char *)ev + o;
}

/* The CPU a validated event's hit ran on, or -1 when it was not recorded. */
static inline int djp_event_cpu(const struct djp_event *ev)
{
	if (!(ev->flags & DJP_EVF_CPU) || ev->size < DJP_EV_HDR_SIZE + 8u * ev->nargs + 8u)
		return -1;
	return (int)*(const uint64_t *)((const char *)ev + ev->size - 8);
}

/* The task word of a validated event (DJP_EVF_TASK): tgid << 32 | tid;
 * false when it carries none. */
static inline bool djp_event_task(const struct djp_event *ev, uint64_t *task)
{
	uint32_t end = ev->size - (ev->flags & DJP_EVF_CPU ? 8u : 0u);

	if (!(ev->flags & DJP_EVF_TASK) || end < DJP_EV_HDR_SIZE + 8u * ev->nargs + 8u)
		return false;
	__builtin_memcpy(task, (const char *)ev + end - 8, 8);
	return true;
}

/* The bytes of a validated event's DJP_EVF_LOADS block (0: none), which
 * lies between its stack and its task and CPU words; its count of
 * results in *k. */
static inline uint32_t djp__event_loads_bytes(const struct djp_event *ev, uint32_t end, unsigned *k)
{
	uint64_t w, bytes, trailer;
	uint32_t args = DJP_EV_HDR_SIZE + 8u * ev->nargs;

	if (!(ev->flags & DJP_EVF_LOADS) || end < args + 8u)
		return 0;
	__builtin_memcpy(&w, (const char *)ev + end - 8, 8);
	bytes = (w >> 8) & 0xffff;
	trailer = w >> 24 & 1 ? 24 : 8;
	*k = (unsigned)(w & 0xff);
	if ((w >> 25) || *k > DJP_RING_MAX_LOADS || bytes < trailer + 8ull * *k || bytes > end - args || (bytes & 7))
		return 0;
	return (uint32_t)bytes;
}

/* The results a validated event carries (DJP_EVF_LOADS): the words, their
 * number in *n, the faulted mask in *faulted and the mask of those that
 * are string descriptors (djp_event_load_str) in *strs; NULL (and 0) when
 * it carries none. */
static inline const uint64_t *djp_event_loads(const struct djp_event *ev, unsigned *n, uint64_t *faulted,
					      uint64_t *strs)
{
	uint32_t end = ev->size - (ev->flags & DJP_EVF_CPU ? 8u : 0u) - (ev->flags & DJP_EVF_TASK ? 8u : 0u);
	unsigned k = 0;
	uint32_t bytes = end <= ev->size ? djp__event_loads_bytes(ev, end, &k) : 0;

	*n = 0;
	*faulted = *strs = 0;
	if (!bytes)
		return NULL;
	*n = k;
	if (((const uint8_t *)ev)[end - 5] & 1) { /* bit 24 of the last word: the masks */
		__builtin_memcpy(faulted, (const char *)ev + end - 24, 8);
		__builtin_memcpy(strs, (const char *)ev + end - 16, 8);
	}
	return (const uint64_t *)((const char *)ev + end - bytes);
}

/* The text of a string result (a descriptor djp_event_loads gave, word
 * w), its length and DJP_STR_* flags, and the pointer it was copied from;
 * NULL when the descriptor does not point inside the event. */
static inline const char *djp_event_load_str(const struct djp_event *ev, uint64_t w, uint32_t *len,
					     uint64_t *flags, uint64_t *ptr)
{
	uint32_t o = DJP_STR_OFFSET(w), l = DJP_STR_LEN(w);

	if (o < DJP_EV_HDR_SIZE + 8u * ev->nargs || (o & 7) || (uint64_t)o + 8 + l + 1 > ev->size ||
	    ((const char *)ev)[o + 8 + l] != 0)
		return NULL;
	__builtin_memcpy(ptr, (const char *)ev + o, 8);
	*len = l;
	*flags = w & (DJP_STR_TRUNCATED | DJP_STR_FAULT | DJP_STR_NULL);
	return (const char *)ev + o + 8;
}

/* The user stack a validated event carries (DJP_EVF_USTACK): its pcs,
 * innermost first, and their number in *n; NULL (and 0) when it carries
 * none, or the words do not fit between the arguments and the end. */
static inline const uint64_t *djp_event_ustack(const struct djp_event *ev, unsigned *n)
{
	uint32_t end = ev->size - (ev->flags & DJP_EVF_CPU ? 8u : 0u) - (ev->flags & DJP_EVF_TASK ? 8u : 0u),
		 args = DJP_EV_HDR_SIZE + 8u * ev->nargs;
	uint64_t k;

	*n = 0;
	if (end <= ev->size) {
		unsigned nl;
		end -= djp__event_loads_bytes(ev, end, &nl);
	}
	if (!(ev->flags & DJP_EVF_USTACK) || ev->size < args + 8u || end < args + 8u)
		return NULL;
	__builtin_memcpy(&k, (const char *)ev + end - 8, 8);
	if (k > DJP_RING_MAX_STACK || 8 * k > end - 8 - args)
		return NULL;
	*n = (unsigned)k;
	return (const uint64_t *)((const char *)ev + end - 8 - 8 * k);
}

/* The register words a validated event carries (DJP_EVF_REGS), and their
 * number in *n; NULL (and 0) when it carries none, or they do not fit
 * between the arguments and the user stack. */
static inline const uint64_t *djp_event_regs(const struct djp_event *ev, unsigned *n)
{
	uint32_t end = ev->size - (ev->flags & DJP_EVF_CPU ? 8u : 0u) - (ev->flags & DJP_EVF_TASK ? 8u : 0u),
		 args = DJP_EV_HDR_SIZE + 8u * ev->nargs;
	uint64_t k;
	unsigned npcs;

	*n = 0;
	if (end <= ev->size) { /* the loads' block lies after the stack */
		unsigned nl;
		end -= djp__event_loads_bytes(ev, end, &nl);
	}
	if (ev->flags & DJP_EVF_USTACK) {
		if (!djp_event_ustack(ev, &npcs))
			return NULL;
		end -= 8u * (npcs + 1);
	}
	if (!(ev->flags & DJP_EVF_REGS) || end < args + 8u)
		return NULL;
	__builtin_memcpy(&k, (const char *)ev + end - 8, 8);
	if (k > DJP_RING_MAX_REGS || 8 * k > end - 8 - args)
		return NULL;
	*n = (unsigned)k;
	return (const uint64_t *)((const char *)ev + end - 8 - 8 * k);
}

/* The pointer a string argument of a validated event was copied from (0
 * when argument i is no string, or the data predates DJP_STR_ADDR). */
static inline uint64_t djp_event_str_addr(const struct djp_event *ev, unsigned i)
{
	uint64_t a;
	if (!djp_event_str(ev, i, NULL, NULL) || !(ev->args[i] & DJP_STR_ADDR))
		return 0;
	__builtin_memcpy(&a, (const char *)ev + DJP_STR_OFFSET(ev->args[i]), 8);
	return a;
}

#endif
