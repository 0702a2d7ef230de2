/*
 * An object's call-frame information as a table the stack walker can use
 * at a probe hit (lib/unwind_table.c builds it; kernel/unwind.c walks).
 *
 * Row i says how to find the caller's frame for the link-time addresses
 * [base + start[i], base + start[i + 1]): where the canonical frame
 * address (CFA: the caller's %rsp) is, and where the caller's %rbp is.
 * The return address is always at CFA - 8 (x86-64); a row whose CFI says
 * otherwise is DJP_UW_UNKNOWN.  The last row ends the table (unknown).
 * Looking a row up is arithmetic on memory the table owns: no lock, no
 * allocation, no system call.
 */
#ifndef DJP_LIB_UNWIND_TABLE_H
#define DJP_LIB_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

/* Where the caller's frame is. */
enum djp_uw_cfa {
	DJP_UW_CFA_RSP, /* CFA = %rsp + cfa_off */
	DJP_UW_CFA_RBP, /* CFA = %rbp + cfa_off */
	DJP_UW_UNKNOWN, /* no CFI here, or a rule the walker does not follow: stop */
	DJP_UW_END,	/* the return address is undefined: the outermost frame */
	DJP_UW_SIGNAL,	/* a signal trampoline's CFI (the CIE says 'S') */
};

/* Where the caller's %rbp is. */
enum djp_uw_rbp {
	DJP_UW_RBP_SAME,  /* unchanged: this frame's %rbp */
	DJP_UW_RBP_SAVED, /* at [CFA + rbp_off] */
	DJP_UW_RBP_LOST,  /* undefined, or kept where the walker does not look */
};

struct djp_uw_row {
	int32_t cfa_off;
	int16_t rbp_off;
	uint8_t cfa; /* enum djp_uw_cfa */
	uint8_t rbp; /* enum djp_uw_rbp */
};

/* The lookup index's granularity: one entry per 256 bytes of code (as
 * the kernel's ORC lookup table), so that a search looks at a handful of
 * rows instead of halving the whole table, each step a likely branch miss. */
#define DJP_UW_BLOCK_SHIFT 8

struct djp_unwind_table {
	uint64_t base;		/* link-time address the starts count from */
	uint32_t n;		/* rows, the closing unknown one included */
	uint32_t nfdes;		/* FDEs read (the tests count readelf's) */
	const uint32_t *start;	/* n offsets from base, increasing; start[0] = 0 */
	const struct djp_uw_row *row;
	/* block[b]: the row that holds offset b << DJP_UW_BLOCK_SHIFT */
	const uint32_t *block;
	uint32_t nblocks;
};

/*
 * The table of the ELF object at `path`, from its .eh_frame and its
 * .debug_frame, or, with neither, its separate debug file's .debug_frame:
 * 0 and *out, or -errno with one line in err (-ENOEXEC: not an x86-64 ELF
 * file; -ENODATA: no call-frame information).  One allocation, freed with
 * djp_unwind_table_free.
 */
int djp_unwind_table_build(const char *path, struct djp_unwind_table **out, char *err, size_t errsz);
void djp_unwind_table_free(struct djp_unwind_table *t);

/* The row for link-time address `addr`, or NULL when the table does not
 * cover it.  Async-signal-safe: a binary search over the table. */
static inline const struct djp_uw_row *djp_unwind_table_find(const struct djp_unwind_table *t, uint64_t addr)
{
	uint64_t off = addr - t->base;
	uint32_t b, lo, hi;

	if (addr < t->base || t->n < 2 || off >= t->start[t->n - 1])
		return NULL;
	b = (uint32_t)(off >> DJP_UW_BLOCK_SHIFT);
	lo = t->block[b];
	hi = b + 1 < t->nblocks ? t->block[b + 1] : t->n - 2;
	while (lo < hi) { /* the last row in [lo, hi] that starts at or below off */
		uint32_t mid = lo + (hi - lo + 1) / 2;
		if (t->start[mid] <= off)
			lo = mid;
		else
			hi = mid - 1;
	}
	return &t->row[lo];
}

#endif
