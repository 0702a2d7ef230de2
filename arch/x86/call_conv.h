/*
 * The calling convention, for a function probe's parameters at the entry
 * (call_conv.c: the System V x86-64 psABI's): what a type is for passing
 * and for reading, and where each argument of a call is.  Declared here,
 * through arch.h, for lib/func_params.c and lib/param_locs.c; their
 * types are libdw's.
 */
#ifndef DJP_ARCH_X86_CALL_CONV_H
#define DJP_ARCH_X86_CALL_CONV_H

#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>

/* What a (peeled) type is, for passing and for reading. */
enum djp_tkind {
	DJP_TK_UNKNOWN,
	DJP_TK_INT,     /* INTEGER, 1-8 bytes: readable */
	DJP_TK_INT2,    /* INTEGER INTEGER: __int128, a pointer to member function */
	DJP_TK_SSE,     /* SSE: float, double, _Float16, _Complex float, 8-byte vectors */
	DJP_TK_SSE_UP,  /* SSE SSEUP: __float128, _Decimal128, 16-byte vectors */
	DJP_TK_SSE_SSE, /* SSE SSE: _Complex double */
	DJP_TK_X87,     /* X87 X87UP: long double */
	DJP_TK_CX87,    /* COMPLEX_X87: _Complex long double */
	DJP_TK_AGG,     /* structure, union, class */
};

struct djp_tinfo {
	enum djp_tkind kind;
	uint64_t size, align;
	bool is_signed;
	Dwarf_Die die; /* the peeled type */
};

/* Classify type `raw` (typedefs and qualifiers are peeled here). */
void arch_type_info(Dwarf_Die *raw, struct djp_tinfo *ti);

/* Why a value of type ti that is not a readable integer (DJP_TK_INT) is
 * unavailable; in_vector: its location is a vector register. */
const char *arch_why_not_int(const struct djp_tinfo *ti, bool in_vector);

/* Where a structure or union passed by value is at the entry, or one
 * returned is at the return: its eightbytes in general registers
 * (ARCH_AGG_REGS: reg[i] the ith eightbyte's, DJP_REG_NONE for one that
 * is not in a general register), or in memory at the address register
 * reg[0] holds plus disp (ARCH_AGG_AT: the stack above the return
 * address, the space a caller gave for a value returned in memory, or
 * C++'s object passed by invisible reference).  Generic code reads the
 * members from there (lib/typed_compile.c). */
enum { ARCH_AGG_NONE, ARCH_AGG_REGS, ARCH_AGG_AT };
struct arch_agg_loc {
	uint8_t how;
	int8_t reg[2];
	int64_t disp;
};

/* One argument of a call at the function's entry. */
struct arch_param_slot {
	struct djp_tinfo *ti; /* in: its type (arch_type_info), NULL: none known */
	/* out: DJP_LOC_REG (reg), DJP_LOC_MEM (disp(reg), above the return
	 * address) for a readable integer, else DJP_LOC_NONE with why (and
	 * reg, when one general register holds the whole value: a structure
	 * of one INTEGER eightbyte; else DJP_REG_NONE) */
	uint8_t kind;
	int8_t reg;
	int64_t disp;
	const char *why;
	struct arch_agg_loc agg; /* out: a structure or union's, else ARCH_AGG_NONE */
};

/*
 * Where the caller of a function whose return type is `ret` (NULL: void)
 * put each of its n arguments, in declaration order: the argument classes
 * given registers while they last, the rest on the stack.  Where the
 * convention cannot be followed past an argument (a type it cannot
 * classify), that argument and every later one are DJP_LOC_NONE with the
 * reason.  cxx: C++'s classes say how they are passed; clang: code clang
 * compiled, which passes a 128-bit integer against the psABI before LLVM
 * 18.
 */
void arch_entry_slots(struct arch_param_slot *s, unsigned n, Dwarf_Die *ret, bool cxx, bool clang);

/* Where a function whose return type is `ret` returns a structure or
 * union, at its return (out->how ARCH_AGG_NONE for any other type). */
void arch_ret_agg(Dwarf_Die *ret, bool cxx, struct arch_agg_loc *out);

/* The position of register reg among those that carry integer arguments,
 * in order (0 for the first), or -1: what kmod/kfunc.c records at a
 * kernel function's entry is those registers, in that order. */
int arch_int_arg_index(int reg);

#endif
