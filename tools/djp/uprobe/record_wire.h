/*
 * What the BPF program (record.bpf.c) and the tool (uprobes.c) agree on,
 * compiled in both: the spec of an armed site, which the tool writes into
 * the program's map of specs and the program reads at each hit, and the
 * record the program writes into the BPF ring buffer for each hit.
 *
 * A spec says how to read each argument with nothing left to decide at
 * the hit: the tool has already turned an argument location (lib/argloc.h)
 * into one of three kinds, registers into words of the kernel's struct
 * pt_regs, a global's link-time address into its address in the process,
 * and an unknown location into the constant 0.
 *
 * A record is the thread that hit the site, then the event as the rings
 * have it (lib/ring.h: header, argument words, inline strings), whose size
 * is its own; the BPF ring pads the record to 8 bytes, so the event is
 * 8-aligned where the tool reads it.
 */
#ifndef DJP_TOOLS_UPROBE_RECORD_WIRE_H
#define DJP_TOOLS_UPROBE_RECORD_WIRE_H

#include <linux/types.h>

#define DJP_UW_MAX_ARGS 12	 /* DJP_MARKER_MAX_ARGS */
#define DJP_UW_MAX_SITES 4096	 /* specs the map holds: sites armed at once */
#define DJP_UW_STR_MAX 1024	 /* a string's bound at most, NUL included */
#define DJP_UW_RING_BYTES (8u << 20)
/* Words of the kernel's struct pt_regs on x86-64 (r15 ... ss). */
#define DJP_UW_NREGS 21
#define DJP_UW_NOREG 0xff	 /* no base or no index register */

enum djp_uw_kind {
	DJP_UW_CONST, /* the value is `disp`, as it is */
	DJP_UW_REG,   /* pt_regs word `reg`, shifted right by `shift` */
	DJP_UW_MEM,   /* `size` bytes of user memory at disp + base + index * scale */
};

/* One argument: 16 bytes. */
struct djp_uw_arg {
	__s64 disp;
	__u8 kind;	/* enum djp_uw_kind */
	__u8 size;	/* 1, 2, 4 or 8: the value is its low `size` bytes... */
	__u8 is_signed; /* ...sign- or zero-extended (not for CONST) */
	__u8 reg;	/* REG: the word; MEM: the base's, or DJP_UW_NOREG */
	__u8 index;	/* MEM: the index's word, or DJP_UW_NOREG */
	__u8 scale;	/* MEM: 1, 2, 4 or 8 */
	__u8 shift;	/* REG: 8 for %ah %bh %ch %dh, else 0 */
	__u8 pad;
};

struct djp_uw_spec {
	__u32 marker_id;
	__u32 nargs;	 /* at most DJP_UW_MAX_ARGS */
	__u32 str_mask;	 /* bit i: argument i is a string to copy */
	__u32 str_bound; /* 8 to DJP_UW_STR_MAX, a multiple of 8 */
	__u32 tgid;	 /* the process whose hits count */
	__u32 ip_word;	 /* the pt_regs word of %rip */
	/* the site's run-time address: a hit at another (the same file
	 * mapped again, by a program the process exec'd) is not this site's,
	 * whose arguments it would read with another load bias */
	__u64 addr;
	struct djp_uw_arg arg[DJP_UW_MAX_ARGS];
};

/* The record's head; the event follows.  slot: the site's spec, whose
 * owner the tool knows (a process's pid alone may be two programs' when
 * it exec'd). */
struct djp_uw_rec {
	__u32 tgid;
	__u32 tid;
	__u32 slot;
	__u32 pad;
};

/* The largest event: header, arguments, and every argument a string at
 * the largest bound with its pointer word. */
#define DJP_UW_EV_MAX (16 + 8 * DJP_UW_MAX_ARGS + DJP_UW_MAX_ARGS * (8 + DJP_UW_STR_MAX))
#define DJP_UW_REC_MAX (16 + DJP_UW_EV_MAX)

#endif
