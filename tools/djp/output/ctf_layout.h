/*
 * The binary layout of the CTF traces djp writes (output/ctf.c) and reads
 * back (source/ctf.c): one place, so that the two cannot disagree.
 *
 * Everything is little-endian and byte-packed (every field's alignment is
 * 8 bits).  A packet is
 *   header:  u32 magic 0xC1FC1FC1, u8 uuid[16], u32 stream_id (0)
 *   context: u64 timestamp_begin, timestamp_end, content_size (bits),
 *            packet_size (bits), events_discarded; i32 vpid, vtid
 * then its events, each
 *   header:  u32 id (the event class), u64 timestamp (CLOCK_MONOTONIC ns)
 *   context: i32 vpid, vtid, cpu_id (-1: not recorded), u64 seq (the
 *            event's place in the trace, from 0)
 *   payload: the marker's arguments, one field each (ctf_field_of).
 *
 * An argument's field follows its conversion in the marker's format: %d and
 * %i signed integers, %u %o %x %X %c %p unsigned ones, of the size the
 * length modifier gives (hh 8 bits, h 16, none 32, l ll z j t and %p 64),
 * %s a string; an argument the format has no conversion for is a 64-bit
 * hexadecimal one.  A value that does not fit its field's size (a user's
 * FORMAT can say %d of a long) goes to the marker's wide class, where every
 * integer is 64 bits: no value is ever cut.
 */
#ifndef DJP_OUTPUT_CTF_LAYOUT_H
#define DJP_OUTPUT_CTF_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/format.h"

#define CTF_MAGIC 0xC1FC1FC1u
#define CTF_PACKET_HEADER_BYTES 24
#define CTF_PACKET_CONTEXT_BYTES 48
#define CTF_PACKET_BYTES (CTF_PACKET_HEADER_BYTES + CTF_PACKET_CONTEXT_BYTES)
#define CTF_EVENT_FIXED_BYTES 32 /* header 12, context 20 */
/* the metadata's first line, which the reader looks for */
#define CTF_DJP_SIGNATURE "/* CTF 1.8, written by djp trace: djp-ctf 1 */"

struct ctf_field {
	bool str;
	bool sign;
	uint8_t bits; /* 8, 16, 32, 64 */
	uint8_t base; /* 8, 10, 16 */
};

static inline struct ctf_field ctf_field_of(const struct djp_fmt *fmt, unsigned i, bool wide)
{
	const struct djp_fmt_field *f = fmt && i < fmt->nfields ? &fmt->field[i] : NULL;
	struct ctf_field c = { .bits = 64, .base = 16 };

	if (!f)
		return c;
	switch (f->conv) {
	case 's':
		c.str = true;
		return c;
	case 'd':
	case 'i':
		c.sign = true;
		c.base = 10;
		break;
	case 'u':
	case 'c':
		c.base = 10;
		break;
	case 'o':
		c.base = 8;
		break;
	}
	if (f->conv == 'p' || wide)
		return c;
	c.bits = f->length == DJP_FMT_LEN_HH ? 8 : f->length == DJP_FMT_LEN_H ? 16 : f->length == DJP_FMT_LEN_NONE ? 32 : 64;
	return c;
}

/* Does v fit the integer field c? */
static inline bool ctf_fits(struct ctf_field c, int64_t v)
{
	if (c.bits == 64)
		return true;
	if (c.sign)
		return v >= -(INT64_C(1) << (c.bits - 1)) && v < (INT64_C(1) << (c.bits - 1));
	return !((uint64_t)v >> c.bits);
}

#endif
