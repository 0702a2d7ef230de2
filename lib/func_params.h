/*
 * A function's parameters from DWARF, as argument locations at a probe
 * address (lib/func_params.c): what a function probe fetches, with the
 * engine's djp_arg_fetch, exactly as it fetches the arguments of an SDT
 * marker, and what `djp -L` prints beside each function.
 *
 * How it works.  The function is found by its entry address among the
 * DW_TAG_subprogram entries of the unit that covers it (the object's own
 * DWARF, else its separate debug file's, found as lib/elf_debug.c finds
 * it).  Its formal parameters, in declaration order, give the names and
 * the types; for an out-of-line copy of an inlined or cloned function they
 * come from its abstract origin, and the locations from the copy's own
 * parameter entries; an unnamed parameter is called argN (N from 1).
 * Each type is spelled as SystemTap's -L spells it ("char const*",
 * "long unsigned int", "struct foo*").
 *
 * Where each value is depends on the address.  At the function's entry,
 * before its first instruction has run, the System V x86-64 calling
 * convention says where the caller put each argument, whatever the
 * optimisation level: the parameters are classified in order as the ABI
 * does (integers and pointers in %rdi %rsi %rdx %rcx %r8 %r9, then in the
 * caller's 8-byte stack slots above the return address; floating point in
 * vector registers; small structures split over registers; the rest, and
 * what no longer fits, in memory; a hidden first pointer for a returned
 * structure that is returned in memory).  The DWARF location is not used
 * there because unoptimised code describes the frame slots its prologue
 * has yet to fill.  A clone whose signature the compiler changed (GCC's
 * .constprop, .isra and .part copies) does not follow the declaration, so
 * for it the DWARF location at the entry is used instead; and where the
 * DWARF says a caller does not pass a parameter at all (a constant for the
 * whole function, or no location anywhere in it), that holds at the entry
 * too.  Anywhere else in the function the DWARF location at that address
 * is used, location lists included: a register, a memory word at a
 * register plus an offset (a frame-base offset is folded with the frame
 * base, and a frame base of DW_OP_call_frame_cfa with the call-frame
 * information's rule for the CFA at that address), a global's link-time
 * address, or a constant.
 *
 * A value that cannot be one struct djp_argloc is reported unavailable,
 * kind DJP_LOC_NONE, with the reason in `why`: a floating-point value, a
 * structure, a value wider than 8 bytes, a location the compiler describes
 * with an expression (an entry value, several pieces), or none at all.
 * When the calling convention cannot be followed past a parameter, that
 * parameter and the ones it could displace are unavailable too: a wrong
 * register would be read without complaint, an unavailable one is said.
 *
 * For listing many functions of one object (djp -L), djp_params_open keeps
 * the file, its DWARF and an index of each unit's functions by entry
 * address, built the first time a function of that unit is asked for;
 * djp_params_read is open, get and close for one function.
 */
#ifndef DJP_LIB_FUNC_PARAMS_H
#define DJP_LIB_FUNC_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "lib/argloc.h"

#define DJP_PARAMS_MAX 32

struct djp_param {
	const char *name;      /* DW_AT_name ("a"); owned by the set */
	const char *type;      /* C spelling of the type, as SystemTap -L prints it: "int", "long unsigned int", "char const*", "struct foo*", "enum color", "double" */
	struct djp_argloc loc; /* where its value is at the probe address; kind DJP_LOC_NONE when unavailable */
	bool is_local;         /* djp_params_get_vars: a variable in scope, not a parameter */
	char conv;             /* how its value prints, as its C type says: 'p' a pointer (hex), 'd' a signed integer, 'u' an unsigned one (bool too) */
	const char *why;       /* when unavailable: "optimized out", "no location at this address", "location too complex", "passed in a vector register", "struct passed by value", "after a parameter passed by value in memory" ... (static strings) */
	/* a structure or union passed by value, at a function's entry: where
	 * its bytes are (arch/x86/call_conv.h), for its members; how
	 * ARCH_AGG_NONE otherwise */
	struct arch_agg_loc agg;
};

struct djp_param_set {
	unsigned n;            /* parameters, in declaration order (formal parameters only; no variadic '...') */
	struct djp_param v[DJP_PARAMS_MAX];
	/* the return value, in %rax: its size (1, 2, 4 or 8) and sign, and
	 * conv as a parameter's; size 0 when it is not one integer or
	 * pointer there (void, a structure, a floating-point value) */
	struct {
		uint8_t size;
		bool is_signed;
		char conv;
		struct arch_agg_loc agg; /* a structure or union: where, at the return */
	} ret;
	void *priv;            /* string storage */
};

/* The formal parameters of the function whose entry is at link-time address
 * `func_addr` in the object at `path`, with their locations at link-time
 * address `pc` (func_addr itself for an entry probe, or any address inside
 * the function).  0 and *out; -ENODATA with "PATH: no debug information" when
 * neither the file nor its debug file has DWARF for that function; -ENOENT
 * "PATH: no DWARF entry for the function at 0x..."; other -errno with one line
 * in err. */
int djp_params_read(const char *path, uint64_t func_addr, uint64_t pc, struct djp_param_set *out, char *err, size_t errsz);
void djp_params_free(struct djp_param_set *s);

/*
 * The same for many functions of one object, with the file and its DWARF
 * opened once.  djp_params_open: 0 and *out, or -errno with one line in err
 * (-ENODATA "PATH: no debug information" when neither the file nor a
 * separate debug file has DWARF).  djp_params_get: as djp_params_read;
 * -EINVAL when pc is not inside the function.  A set stays valid after
 * djp_params_close and is freed with djp_params_free.  A handle is for one
 * thread at a time.
 */
struct djp_params_file;
int djp_params_open(const char *path, struct djp_params_file **out, char *err, size_t errsz);
int djp_params_get(struct djp_params_file *pf, uint64_t func_addr, uint64_t pc, struct djp_param_set *out, char *err,
		   size_t errsz);
void djp_params_close(struct djp_params_file *pf);

/* djp_params_get, then (away from the entry) the named variables in scope
 * at pc, stap's $$locals: those of the function's body and of each lexical
 * block around pc, is_local set, placed by their DWARF locations as
 * parameters are; up to DJP_PARAMS_MAX in all. */
int djp_params_get_vars(struct djp_params_file *pf, uint64_t func_addr, uint64_t pc, struct djp_param_set *out,
			char *err, size_t errsz);
/* Where the function whose entry is at link-time address func_addr comes
 * from in the source: the file it is declared in (with the unit's
 * directory when DWARF gives it relative), its declaration line, and, with
 * with_lines (a walk of the unit's line table: ask only when a line is
 * wanted), the lowest and highest line of that file its code has
 * line-table rows for (0 when none or not asked).  What stap's
 * function("NAME@FILE:LINE") matches and its -l prints.  0, or -errno
 * with one line in err as djp_params_get. */
struct djp_func_source {
	char file[1024];
	unsigned decl_line, lo_line, hi_line;
};
int djp_params_source(struct djp_params_file *pf, uint64_t func_addr, bool with_lines, struct djp_func_source *out,
		      char *err, size_t errsz);

#endif
