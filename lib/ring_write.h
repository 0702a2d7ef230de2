/*
 * What the two ring writers write alike: the user-space recorder
 * (lib/ring.h, a ring per thread) and djprobe.ko's (kmod/kring.c, a ring
 * per CPU) fill rings of one layout (lib/ring.h has it), which the tool
 * drains with one reader.  Here are the pure parts of writing an event,
 * compiled in both (the module through kmod/compat/'s <stdint.h>): the
 * event's flags and its header word, where in the ring it goes and the pad
 * that skips the rest of a sub-buffer, and how a %s argument is laid out.
 * How each one reserves, copies a string and commits is its own: a thread
 * and a signal handler, or a CPU and an interrupt, in one ring.
 */
#ifndef DJP_LIB_RING_WRITE_H
#define DJP_LIB_RING_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#define DJP_EV_HDR_SIZE 16u

/* Event flags. */
#define DJP_EVF_PAD 0x01     /* padding: skip to the next sub-buffer */
#define DJP_EVF_STRINGS 0x02 /* some argument words are string descriptors */
#define DJP_EVF_CPU 0x04     /* the last word is the CPU of the hit */
#define DJP_EVF_USTACK 0x08  /* the user stack of the hit, before the CPU */
#define DJP_EVF_TASK 0x10    /* the hit's task, before the CPU (kernel rings) */
#define DJP_EVF_REGS 0x20    /* the hit's registers, before the user stack */
#define DJP_EVF_LOADS 0x40   /* the results of load programs, after the stack */
/* An owner record (discard mode): the slot passed from a thread gone to a
 * live one; words: the old tid, the new, and the slot's nevents, lost_full
 * and lost_nested before it (lib/ring.c, "Slots handed on").  Read by the
 * consumer, never delivered. */
#define DJP_EVF_OWNER 0x80
#define DJP_MARKER_PAD 0xffffffffu
#define DJP_MARKER_OWNER 0xfffffffeu
#define DJP_OWNER_NARGS 5

/* String descriptor fields (lib/ring.h). */
#define DJP_STR_OFFSET(w) ((uint32_t)((w) & 0xffff))
#define DJP_STR_LEN(w) ((uint32_t)(((w) >> 16) & 0xffff))
#define DJP_STR_TRUNCATED (1ull << 32)
#define DJP_STR_FAULT (1ull << 33)
#define DJP_STR_NULL (1ull << 34)
#define DJP_STR_ADDR (1ull << 35)
/* The text of a NULL string, and of one of which nothing could be read. */
#define DJP_STR_NULL_TEXT "(null)"
#define DJP_STR_BAD_TEXT "<bad>"

/* The header's second word, laid out as struct djp_event says (little
 * endian): the producers write it with one store. */
static inline uint64_t djp_ev_word(uint32_t marker_id, uint32_t size, unsigned nargs, unsigned flags)
{
	return marker_id | (uint64_t)size << 32 | (uint64_t)nargs << 48 | (uint64_t)flags << 56;
}

/* Where an event of at most `max` bytes goes, the last one having ended at
 * position pos: there, or at the start of the next sub-buffer (of sb_size
 * bytes, a power of two) when it does not fit in what is left of this one,
 * so that it never straddles two.  False when it is larger than a
 * sub-buffer. */
static inline __attribute__((always_inline)) bool djp_ring_place(uint64_t pos, uint64_t max, uint64_t sb_size,
								 uint64_t *at)
{
	uint64_t off = pos & (sb_size - 1);

	*at = pos;
	if (__builtin_expect(off + max > sb_size, 0)) {
		if (max > sb_size)
			return false;
		*at = pos - off + sb_size;
	}
	return true;
}

/* An event placed at `at` skips the rest of pos's sub-buffer: the header
 * of a pad there, where it has room for one (a reader skips fewer bytes by
 * itself).  `data` is the ring of ring_size bytes. */
static inline __attribute__((always_inline)) void djp_ring_pad(uint8_t *data, uint64_t ring_size, uint64_t sb_size,
							       uint64_t pos, uint64_t at, uint64_t ts)
{
	if (__builtin_expect(at != pos, 0) && sb_size - (pos & (sb_size - 1)) >= DJP_EV_HDR_SIZE) {
		uint64_t *e = (uint64_t *)(data + (pos & (ring_size - 1)));

		e[0] = ts;
		e[1] = djp_ev_word(DJP_MARKER_PAD, 0, 0, DJP_EVF_PAD);
	}
}

/*
 * A %s argument i of the event at ev, laid out at byte `off` of it: the
 * pointer word, then the text (its length and a NUL, 8-aligned).  _text
 * writes the pointer and says where the caller copies the text to; _put,
 * given what the copy was (its length, and DJP_STR_* bits above bit 31),
 * makes argument i's word its descriptor and says where the next goes.
 */
static inline char *djp_ring_str_text(uint64_t *ev, uint32_t off, uint64_t ptr)
{
	ev[off / 8] = ptr;
	return (char *)ev + off + 8;
}

static inline uint32_t djp_ring_str_put(uint64_t *ev, unsigned i, uint32_t off, uint64_t copied)
{
	uint32_t len = (uint32_t)(copied & 0xffff);

	ev[2 + i] = off | (uint64_t)len << 16 | (copied & ~0xffffffffull) | DJP_STR_ADDR;
	return off + 8 + ((len + 1 + 7) & ~7u);
}

#endif
