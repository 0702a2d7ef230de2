/*
 * Load programs: how a script's typed access ($p->a->b, $p->arr[2],
 * &$p->x, $return->f) is read in the target when the probe fires.
 *
 * How it works.  The tool reads the DWARF of the function a probe names
 * and turns each access into a program of this one shape (the tool's
 * compiler is lib/typed_compile.c):
 *
 *   v = the value at `base` (a struct djp_argloc: the register or stack
 *       slot the argument is in at that address, as any argument's);
 *   (with an index that is a variable, `$p->arr[$i]`: v += the value at
 *   `idx`, a location as base's, times idx_scale, before step idx_step)
 *   for each of the `nderef` steps: v = the 8 bytes at v + off[i]
 *       (a pointer the chain goes through: the `->` of a member that is
 *       itself a pointer, or an index into a pointer);
 *   v += last;
 *   then, unless the program asks for the address (&, an array, which
 *   C gives as its address), v = the `size` bytes at v, sign- or
 *   zero-extended, and of a bitfield the bits [bit_off, bit_off +
 *   bit_size) of them.
 *
 * Every load goes through a reader the caller gives, which must be
 * fault-safe: in the agent, the copy the %s strings use (kernel/agent/
 * loads.c), in tests and the fuzz target, a buffer.  A load the reader
 * refuses ends the program with the address it could not read, which the
 * tool reports as stap does (`user memory copy fault at 0xADDR near
 * operator '->'`).  Nothing else can go wrong: a program has at most
 * DJP_LOAD_MAX_DEREF steps, no loop and no branch, so its cost is bounded
 * by construction, and djp_load_check refuses whatever the interpreter
 * could not run.
 *
 * On the wire (LOADS, lib/proto.h) a program is its fields in order, the
 * base as kind, size, sign, reg, index, scale, reg_shift and disp.
 *
 * Results, per event (DJP_EVF_LOADS, lib/ring.h): a word per program (its
 * value, or the address that faulted), a word whose bit i says program i
 * faulted, and the count.
 */
#ifndef DJP_LIB_LOAD_PROG_H
#define DJP_LIB_LOAD_PROG_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/argloc.h"

#define DJP_LOAD_MAX_DEREF 8  /* pointers a chain goes through */
#define DJP_LOAD_MAX_PROGS 64 /* programs a site runs per hit */

struct djp_load_prog {
	struct djp_argloc base; /* the value the chain starts from (sym unused) */
	uint8_t nderef;		/* steps that load a pointer */
	uint8_t size;		/* 1, 2, 4 or 8: the final load; 0: the address */
	bool is_signed;
	uint8_t bit_off, bit_size; /* a bitfield's bits of the loaded value (bit_size 0: all) */
	int64_t off[DJP_LOAD_MAX_DEREF];
	int64_t last;		/* added after the last step */
	/* the result is the address of a string the event carries, copied
	 * at the hit (user_string($p->name)): at most this many bytes, NUL
	 * included; 0: a number */
	uint16_t str_bound;
	/* an index that is a context variable ($p->arr[$i]): its value,
	 * where idx says, times idx_scale, added after the first idx_step
	 * steps (idx.kind DJP_LOC_NONE: none) */
	struct djp_argloc idx;
	uint8_t idx_step;
	int64_t idx_scale;
	/* a return site's program that reads at the call's entry, with the
	 * entry's registers (a parameter's member at a .return, as stap
	 * reads it; kernel/retprobes.c, "Values read at the entry") */
	bool at_entry;
};

/* The programs of the sites named provider:name, as the tool sends them
 * (LOADS): a site's results are in this order in its events.  site: the
 * link-time address of the one site they were compiled for (a function's
 * entry or return, a statement), since functions of one name (static
 * ones of two files, or of two objects) lay their data out each its own
 * way; 0 for every site of the name (a marker's, whose argument the
 * agent reads from the site's own record). */
struct djp_load_site {
	const char *provider, *name;
	uint64_t site;
	unsigned n;
	const struct djp_load_prog *prog;
};

/* A fault-safe load of size bytes (1, 2, 4 or 8) at addr into *out (zero-
 * extended); false when the memory cannot be read. */
typedef bool (*djp_load_read_fn)(void *ctx, uint64_t addr, unsigned size, uint64_t *out);

/* 0 when p can be run; -EINVAL otherwise. */
int djp_load_check(const struct djp_load_prog *p);

/* A loaded value as p's type wants it: sign-extended, or a bitfield's
 * bits, where it asks (the loads zero-extend). */
static inline uint64_t djp_load_finish(const struct djp_load_prog *p, uint64_t v)
{
	unsigned sh;

	if (p->bit_size) {
		v >>= p->bit_off;
		sh = (64 - p->bit_size) & 63;
	} else {
		sh = (64 - 8 * (p->size & 15)) & 63;
	}
	return p->is_signed ? (uint64_t)((int64_t)(v << sh) >> sh) : (v << sh) >> sh;
}

/* Run p from the base value v (and the index's value idx, when p has
 * one): the result in *out and true, or false with the address that
 * could not be read in *out. */
static inline bool djp_load_run_idx(const struct djp_load_prog *p, uint64_t v, uint64_t idx, djp_load_read_fn rd,
				    void *ctx, uint64_t *out)
{
	unsigned n = p->nderef < DJP_LOAD_MAX_DEREF ? p->nderef : DJP_LOAD_MAX_DEREF;

	for (unsigned i = 0; i < n; i++) {
		uint64_t a;
		if (p->idx.kind != DJP_LOC_NONE && i == p->idx_step)
			v += idx * (uint64_t)p->idx_scale;
		a = v + (uint64_t)p->off[i];
		if (!rd(ctx, a, 8, &v)) {
			*out = a;
			return false;
		}
	}
	if (p->idx.kind != DJP_LOC_NONE && p->idx_step >= n)
		v += idx * (uint64_t)p->idx_scale;
	v += (uint64_t)p->last;
	if (p->size) {
		uint64_t a = v;
		if (!rd(ctx, a, p->size, &v)) {
			*out = a;
			return false;
		}
		v = djp_load_finish(p, v);
	}
	*out = v;
	return true;
}

static inline bool djp_load_run(const struct djp_load_prog *p, uint64_t v, djp_load_read_fn rd, void *ctx,
				uint64_t *out)
{
	return djp_load_run_idx(p, v, 0, rd, ctx, out);
}

#endif
