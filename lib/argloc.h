/*
 * Argument locations: the parsed form of an SDT-style argument string such as
 * "-4@%edi 8@-16(%rbp) -4@$5 -4@g(%rip)".  Shared by the ELF reader (which
 * parses), the engine (which fetches values from a register view) and the
 * tool (which prints them).
 */
#ifndef DJP_LIB_ARGLOC_H
#define DJP_LIB_ARGLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Registers are numbered as the register view has them (enum djp_reg),
 * and named as the arch's assembler names them (djp_reg_from_name,
 * djp_reg_name): an argument string is in the target's assembler syntax. */
#include "arch/x86/arch.h"

enum djp_loc_kind {
	DJP_LOC_NONE,	/* unknown: an unresolvable symbol, say; reads as 0 */
	DJP_LOC_REG,	/* value in register `reg` (byte `reg_shift` for %ah..%dh) */
	DJP_LOC_MEM,	/* at disp + base + index*scale (base/index may be NONE) */
	DJP_LOC_IMM,	/* the constant `disp` */
	DJP_LOC_ABS,	/* at link-time address `disp` (+ load bias): a sym(%rip) */
	DJP_LOC_SAVED,	/* a return probe's: the value argument `disp` had at the
			   function's entry, kept for the return (kernel/retprobes.c) */
	DJP_LOC_ARG,	/* the site's own argument `disp` (0-based), where its
			   marker's record places it: a load program's start at a
			   marker, whose sites of one name may place it apart */
	DJP_LOC_ADDR,	/* the address link-time `disp` is loaded at (+ the load
			   bias of the site's object): a global's, as a typed
			   access's start (@var("g")->member) */
};

struct djp_argloc {
	uint8_t kind;	   /* enum djp_loc_kind */
	uint8_t size;	   /* 1, 2, 4 or 8 bytes */
	bool is_signed;	   /* sign- (true) or zero-extend (false) to 64 bits */
	int8_t reg;	   /* REG: the register; MEM: the base register or NONE */
	int8_t index;	   /* MEM: index register or NONE */
	uint8_t scale;	   /* MEM: 1, 2, 4 or 8 */
	uint8_t reg_shift; /* REG: 8 for %ah %bh %ch %dh, else 0 */
	int64_t disp;	   /* MEM displacement, IMM value, ABS link-time address */
	const char *sym;   /* ABS/NONE: the symbol named, if any (points into
			      the owner's string storage) */
};

/*
 * Fetching a value as a location says, the part both engines' fetches
 * share (kernel/hit_args.h from a register view, kmod/khit.c from a
 * pt_regs): the address of a memory operand, given the values of its base
 * and index registers (0 for one it has none of), and the value, the low
 * `size` bytes of what was read, sign- or zero-extended, without a branch
 * on the size (1, 2, 4 or 8).
 */
static inline uintptr_t djp_argloc_mem_addr(const struct djp_argloc *a, uint64_t base, uint64_t index)
{
	return (uintptr_t)a->disp + (uintptr_t)base + (uintptr_t)index * a->scale;
}

static inline uint64_t djp_argloc_extend(uint64_t v, const struct djp_argloc *a)
{
	unsigned sh = (64 - 8 * (a->size & 15)) & 63;

	if (a->is_signed)
		return (uint64_t)((int64_t)(v << sh) >> sh);
	return (v << sh) >> sh;
}

/*
 * Parse one argument ("-4@%edi") into *loc.  `sym_lookup`, if not NULL, turns
 * a symbol of a sym(%rip) operand into a link-time address (returns 0 on
 * success); without it, or when it fails, the location is DJP_LOC_NONE.
 * Returns 0, or -EINVAL with a static reason in *why.
 */
typedef int (*djp_sym_lookup_fn)(void *ctx, const char *name, size_t len, uint64_t *addr);
int djp_argloc_parse(const char *s, size_t len, struct djp_argloc *loc, djp_sym_lookup_fn sym_lookup,
		     void *ctx, const char **why);

/* Split an argument string on spaces and parse each; returns the count
 * (at most `max`) or -EINVAL with *why set. */
int djp_argloc_parse_all(const char *args, struct djp_argloc *locs, unsigned max, djp_sym_lookup_fn sym_lookup,
			 void *ctx, const char **why);

/* "register", "memory", "immediate", "absolute" or "unknown". */
const char *djp_loc_kind_name(unsigned kind);

/* Print *loc back in SDT syntax ("-4@%edi", "8@-16(%rbp)", "8@0x4010" for a
 * resolved sym(%rip)); snprintf's return convention.  Parsing the result
 * gives the same kind, size, signedness, registers and displacement. */
int djp_argloc_format(const struct djp_argloc *loc, char *buf, size_t sz);

#endif
