/*
 * The System V x86-64 calling convention (the psABI, 3.2.3), for a
 * function probe's parameters at the entry (lib/func_params.c asks,
 * through arch_entry_slots): which register or stack slot the caller put
 * each argument in.  It is this arch's: another passes its arguments
 * elsewhere, by rules of its own.
 *
 * How.  The psABI's rules are followed: each parameter's type
 * is classified (INTEGER, SSE, X87, MEMORY per eightbyte; a structure or
 * union of at most 16 bytes by its members, with the ABI's merge and
 * post-merge rules, misaligned members making it MEMORY), then given
 * registers in order while they last, %rdi %rsi %rdx %rcx %r8 %r9 for
 * INTEGER eightbytes and eight vector registers for SSE ones; an argument
 * whose eightbytes do not all fit goes whole to the stack, without taking
 * the registers that were left, at the next multiple of its alignment (at
 * least 8) above the return address, in 8-byte slots.  A return type that
 * is returned in memory takes %rdi first, for the hidden pointer.  A C++
 * class is passed by invisible reference (a pointer in the next register)
 * when it is not trivial for calls; clang says which by
 * DW_AT_calling_convention, GCC does not, and a class without the
 * attribute is taken as passed by value only when nothing could make it
 * otherwise (no destructor, copy or move constructor declared other than
 * "= default" in the class, nothing virtual, the same of its members and
 * bases); any other is not guessed at.  Where classification fails
 * (a vector wider than 16 bytes, a class of unknown convention, a type
 * libdw cannot resolve), that parameter and every later one are
 * unavailable, since the registers they would take are unknown.  An
 * aggregate with an alignment above 8 passed in memory may be packed,
 * which DWARF does not say, so the stack parameters after it are
 * unavailable too (registers are not affected).  Clang before LLVM 18
 * passes a 128-bit integer that does not fit in registers against the
 * ABI (split between %r9 and the stack, or aligned to 8 on the stack); in
 * its code such a parameter ends the parameters that can be followed.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "arch/x86/arch.h"
#include "lib/argloc.h"
#include "lib/dwarf_types.h"

/* Is a 16-byte float x87's extended precision (long double), not IEEE
 * binary128?  Only the names tell. */
static bool is_x87_name(const char *name)
{
	return name && (strstr(name, "long double") || strstr(name, "_Float64x"));
}

/* A base type by its encoding and size (ti->size already set). */
static void base_info(Dwarf_Die *t, struct djp_tinfo *ti)
{
	Dwarf_Word enc = 0;
	const char *name = dwarf_diename(t);
	uint64_t z = ti->size;

	djp_dwarf_udata_attr(t, DW_AT_encoding, &enc);
	ti->align = z;
	switch (enc) {
	case DW_ATE_boolean:
	case DW_ATE_signed:
	case DW_ATE_unsigned:
	case DW_ATE_signed_char:
	case DW_ATE_unsigned_char:
	case DW_ATE_UTF:
		ti->is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
		if (z == 1 || z == 2 || z == 4 || z == 8)
			ti->kind = DJP_TK_INT;
		else if (z == 16)
			ti->kind = DJP_TK_INT2;
		break;
	case DW_ATE_float:
	case DW_ATE_decimal_float:
		if (z == 2 || z == 4 || z == 8)
			ti->kind = DJP_TK_SSE;
		else if (z == 16)
			ti->kind = enc == DW_ATE_float && is_x87_name(name) ? DJP_TK_X87 : DJP_TK_SSE_UP;
		break;
	case DW_ATE_complex_float:
		ti->align = z / 2;
		if (z == 4 || z == 8)
			ti->kind = DJP_TK_SSE;
		else if (z == 16)
			ti->kind = DJP_TK_SSE_SSE;
		else if (z == 32 && is_x87_name(name))
			ti->kind = DJP_TK_CX87;
		break;
	}
}

/* Classify type (raw: typedefs and qualifiers are peeled here). */
void arch_type_info(Dwarf_Die *raw, struct djp_tinfo *ti)
{
	Dwarf_Word z = 0;
	Dwarf_Die t, sub, peeled;
	uint64_t n;

	memset(ti, 0, sizeof(*ti));
	if (!djp_dwarf_peel(raw, &t))
		return;
	ti->die = t;
	if (djp_dwarf_udata_attr(&t, DW_AT_byte_size, &z))
		ti->size = z;
	switch (dwarf_tag(&t)) {
	case DW_TAG_base_type:
		base_info(&t, ti);
		break;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		ti->size = ti->align = 8;
		ti->kind = DJP_TK_INT;
		break;
	case DW_TAG_ptr_to_member_type:
		/* to a member function: {function, adjustment} */
		if (djp_dwarf_ref_attr(&t, DW_AT_type, &sub) && djp_dwarf_peel(&sub, &peeled) &&
		    dwarf_tag(&peeled) == DW_TAG_subroutine_type) {
			ti->size = 16;
			ti->kind = DJP_TK_INT2;
		} else {
			ti->size = 8;
			ti->kind = DJP_TK_INT;
		}
		ti->align = 8;
		break;
	case DW_TAG_enumeration_type:
		if (z == 1 || z == 2 || z == 4 || z == 8) {
			ti->kind = DJP_TK_INT;
			ti->align = z;
			if (djp_dwarf_ref_attr(&t, DW_AT_type, &sub) && djp_dwarf_peel(&sub, &peeled) &&
			    dwarf_tag(&peeled) == DW_TAG_base_type) {
				struct djp_tinfo u = { .size = z };
				base_info(&peeled, &u);
				ti->is_signed = u.is_signed;
			}
		}
		break;
	case DW_TAG_unspecified_type: /* C++'s decltype(nullptr) */
		if (dwarf_diename(&t) && !strcmp(dwarf_diename(&t), "decltype(nullptr)")) {
			ti->size = ti->align = 8;
			ti->kind = DJP_TK_INT;
		}
		break;
	case DW_TAG_array_type:
		/* only a vector is passed as a value */
		if (!dwarf_hasattr(&t, DW_AT_GNU_vector))
			break;
		if (!z && djp_dwarf_ref_attr(&t, DW_AT_type, &sub) && djp_dwarf_udata_attr(&sub, DW_AT_byte_size, &z) &&
		    djp_dwarf_array_count(&t, &n))
			ti->size = z * n;
		ti->align = ti->size;
		if (ti->size == 8)
			ti->kind = DJP_TK_SSE;
		else if (ti->size == 16)
			ti->kind = DJP_TK_SSE_UP;
		break;
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type:
		if (z && !dwarf_hasattr(&t, DW_AT_declaration))
			ti->kind = DJP_TK_AGG;
		break;
	}
}

enum abi_class { CL_NONE, CL_INTEGER, CL_SSE, CL_SSEUP, CL_X87, CL_X87UP, CL_COMPLEX_X87, CL_MEMORY };

/* An aggregate's eightbytes (the first two: larger ones are in memory
 * anyway) and alignment, as its members make them. */
struct agg {
	enum abi_class cls[2];
	uint64_t align;
	bool memory, unknown;
};

/* The ABI's merge of two classes of one eightbyte. */
static enum abi_class merge(enum abi_class a, enum abi_class b)
{
	if (a == b || b == CL_NONE)
		return a;
	if (a == CL_NONE)
		return b;
	if (a == CL_MEMORY || b == CL_MEMORY)
		return CL_MEMORY;
	if (a == CL_INTEGER || b == CL_INTEGER)
		return CL_INTEGER;
	if (a == CL_X87 || a == CL_X87UP || a == CL_COMPLEX_X87 || b == CL_X87 || b == CL_X87UP ||
	    b == CL_COMPLEX_X87)
		return CL_MEMORY;
	return CL_SSE;
}

/* Merge class c into the eightbyte holding `byte`, when it is one of the
 * two that are classified. */
static void put_class(struct agg *g, uint64_t byte, enum abi_class c)
{
	if (byte / 8 < 2)
		g->cls[byte / 8] = merge(g->cls[byte / 8], c);
}

static void agg_walk(Dwarf_Die *t, uint64_t base, struct agg *g, unsigned depth);

/* A scalar member of type ti at byte `at`. */
static void agg_scalar(const struct djp_tinfo *ti, uint64_t at, struct agg *g)
{
	if (ti->align > g->align)
		g->align = ti->align;
	if (ti->align && at % ti->align) {
		g->memory = true; /* a misaligned member */
		return;
	}
	switch (ti->kind) {
	case DJP_TK_INT:
		put_class(g, at, CL_INTEGER);
		break;
	case DJP_TK_INT2:
		put_class(g, at, CL_INTEGER);
		put_class(g, at + 8, CL_INTEGER);
		break;
	case DJP_TK_SSE:
		put_class(g, at, CL_SSE);
		break;
	case DJP_TK_SSE_UP:
		put_class(g, at, CL_SSE);
		put_class(g, at + 8, CL_SSEUP);
		break;
	case DJP_TK_SSE_SSE:
		put_class(g, at, CL_SSE);
		put_class(g, at + 8, CL_SSE);
		break;
	case DJP_TK_X87:
		put_class(g, at, CL_X87);
		put_class(g, at + 8, CL_X87UP);
		break;
	case DJP_TK_CX87:
		g->memory = true;
		break;
	default:
		g->unknown = true;
	}
}

/* A member of type ti (an aggregate, an array or a scalar) at byte `at`. */
static void agg_member(Dwarf_Die *type, uint64_t at, struct agg *g, unsigned depth)
{
	struct djp_tinfo ti;
	Dwarf_Die t, elem;
	uint64_t count;

	if (!djp_dwarf_peel(type, &t)) {
		g->unknown = true;
		return;
	}
	if (dwarf_tag(&t) == DW_TAG_array_type && !dwarf_hasattr(&t, DW_AT_GNU_vector)) {
		/* a flexible array member takes no room and is not passed */
		if (!djp_dwarf_array_count(&t, &count) || !count)
			return;
		if (!djp_dwarf_ref_attr(&t, DW_AT_type, &elem)) {
			g->unknown = true;
			return;
		}
		arch_type_info(&elem, &ti);
		if (!ti.size) {
			g->unknown = true;
			return;
		}
		/* the first element for the alignment, the rest while in the
		 * two eightbytes that are classified */
		for (uint64_t i = 0; i < count && !g->unknown && (!i || at + i * ti.size < 16); i++)
			agg_member(&elem, at + i * ti.size, g, depth + 1);
		return;
	}
	arch_type_info(&t, &ti);
	if (ti.kind == DJP_TK_AGG)
		agg_walk(&ti.die, at, g, depth + 1);
	else
		agg_scalar(&ti, at, g);
}

/* A bit-field of `bits` bits at bit `bit`: INTEGER where it lies. */
static void agg_bitfield(Dwarf_Die *type, uint64_t bit, uint64_t bits, struct agg *g)
{
	struct djp_tinfo ti;

	arch_type_info(type, &ti);
	if (ti.kind != DJP_TK_INT) {
		g->unknown = true;
		return;
	}
	if (!bits)
		return;
	for (uint64_t b = bit / 64; b <= (bit + bits - 1) / 64; b++)
		put_class(g, b * 8, CL_INTEGER);
}

/* The byte offset of a member (0 in a union), or false when it is not a
 * constant (a virtual base). */
static bool member_offset(Dwarf_Die *m, uint64_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Word v;

	*off = 0;
	if (!dwarf_attr(m, DW_AT_data_member_location, &a))
		return true;
	switch (dwarf_whatform(&a)) {
	case DW_FORM_data1:
	case DW_FORM_data2:
	case DW_FORM_data4:
	case DW_FORM_data8:
	case DW_FORM_udata:
	case DW_FORM_sdata:
	case DW_FORM_implicit_const:
		if (dwarf_formudata(&a, &v))
			return false;
		*off = v;
		return true;
	default:
		return false;
	}
}

/* Walk the members (and base classes) of aggregate t at byte `base`. */
static void agg_walk(Dwarf_Die *t, uint64_t base, struct agg *g, unsigned depth)
{
	Dwarf_Word align, bits, bitoff, storage;
	Dwarf_Die m, type;
	uint64_t off;

	if (depth > DJP_DWARF_DEPTH_MAX) {
		g->unknown = true;
		return;
	}
	if (djp_dwarf_udata_attr(t, DW_AT_alignment, &align) && align > g->align)
		g->align = align;
	if (dwarf_child(t, &m) != 0)
		return;
	do {
		int tag = dwarf_tag(&m);
		if (tag == DW_TAG_variant_part) {
			g->unknown = true;
			return;
		}
		if ((tag != DW_TAG_member && tag != DW_TAG_inheritance) || dwarf_hasattr(&m, DW_AT_declaration) ||
		    dwarf_hasattr(&m, DW_AT_external))
			continue;
		if (!djp_dwarf_ref_attr(&m, DW_AT_type, &type) || !member_offset(&m, &off)) {
			g->unknown = true;
			return;
		}
		if (djp_dwarf_udata_attr(&m, DW_AT_bit_size, &bits)) {
			if (djp_dwarf_udata_attr(&m, DW_AT_data_bit_offset, &bitoff)) {
			} else if (djp_dwarf_udata_attr(&m, DW_AT_bit_offset, &bitoff) && djp_dwarf_udata_attr(&m, DW_AT_byte_size, &storage) &&
				   storage * 8 >= bitoff + bits) {
				/* DWARF 2's big-endian numbering, from the storage unit's top */
				bitoff = off * 8 + storage * 8 - bitoff - bits;
			} else {
				bitoff = off * 8;
			}
			agg_bitfield(&type, base * 8 + bitoff, bits, g);
		} else {
			agg_member(&type, base + off, g, depth);
		}
	} while (!g->unknown && dwarf_siblingof(&m, &m) == 0);
}

/* How an argument (or a return value) goes: in registers (how many of
 * each), in memory, by invisible reference, or unknown. */
enum pass_how { PASS_UNKNOWN, PASS_REGS, PASS_MEM };

struct pass {
	enum pass_how how;
	unsigned ngpr, nsse;
	uint64_t size, align;
	bool align_sure; /* false: the alignment in memory may be less (packing) */
	/* an aggregate in registers: its eightbytes' classes (CL_INTEGER or
	 * CL_SSE); by_ref: C++'s invisible reference, its address in a
	 * register (ngpr 1) */
	uint8_t cls[2];
	bool by_ref;
};

static bool cxx_trivial(Dwarf_Die *cls, unsigned depth);

/* Is a member or base of this type trivial for calls (a class checked as
 * its own, anything else trivially)? */
static bool cxx_trivial_type(Dwarf_Die *type, unsigned depth)
{
	Dwarf_Die t;

	if (!djp_dwarf_peel(type, &t))
		return false;
	while (dwarf_tag(&t) == DW_TAG_array_type) {
		Dwarf_Die elem;
		if (!djp_dwarf_ref_attr(&t, DW_AT_type, &elem) || !djp_dwarf_peel(&elem, &t))
			return false;
	}
	switch (dwarf_tag(&t)) {
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type:
		return cxx_trivial(&t, depth + 1);
	default:
		return true;
	}
}

/* Is a constructor of class `cls` its copy or move constructor: one
 * parameter besides `this`, a reference to the class? */
static bool copy_or_move_ctor(Dwarf_Die *ctor, Dwarf_Die *cls)
{
	Dwarf_Die d, t, u;
	unsigned n = 0;
	bool self = false;

	if (dwarf_child(ctor, &d) != 0)
		return false;
	do {
		if (dwarf_tag(&d) == DW_TAG_unspecified_parameters)
			n++;
		if (dwarf_tag(&d) != DW_TAG_formal_parameter || dwarf_hasattr(&d, DW_AT_artificial))
			continue;
		if (++n == 1 && djp_dwarf_ref_attr(&d, DW_AT_type, &t) && djp_dwarf_peel(&t, &t) &&
		    (dwarf_tag(&t) == DW_TAG_reference_type || dwarf_tag(&t) == DW_TAG_rvalue_reference_type) &&
		    djp_dwarf_ref_attr(&t, DW_AT_type, &u) && djp_dwarf_peel(&u, &u))
			self = dwarf_dieoffset(&u) == dwarf_dieoffset(cls) ||
			       (dwarf_diename(&u) && dwarf_diename(cls) && !strcmp(dwarf_diename(&u), dwarf_diename(cls)));
	} while (dwarf_siblingof(&d, &d) == 0);
	return n == 1 && self;
}

/* "= default" on its first declaration, and not deleted: as trivial as
 * the members and bases make it (DWARF 5 says so; older DWARF does not,
 * and such a class is then not classified). */
static bool defaulted_in_class(Dwarf_Die *fn)
{
	Dwarf_Word v;
	return djp_dwarf_udata_attr(fn, DW_AT_defaulted, &v) && v == DW_DEFAULTED_in_class && !dwarf_hasattr(fn, DW_AT_deleted);
}

/*
 * A C++ class GCC does not mark: trivial for calls, and so passed by
 * value, only when nothing could make it otherwise: no destructor, copy or
 * move constructor declared other than "= default" in the class, nothing
 * virtual, and the same of its bases and members.  A class that fails is
 * not guessed at either way (it may be passed by invisible reference).
 */
static bool cxx_trivial(Dwarf_Die *cls, unsigned depth)
{
	const char *name = dwarf_diename(cls), *m;
	size_t base = name ? strcspn(name, "<") : 0;
	Dwarf_Die d, t;

	if (depth > DJP_DWARF_DEPTH_MAX)
		return false;
	if (dwarf_child(cls, &d) != 0)
		return true;
	do {
		switch (dwarf_tag(&d)) {
		case DW_TAG_subprogram:
			if (dwarf_hasattr(&d, DW_AT_virtuality))
				return false;
			if (dwarf_hasattr(&d, DW_AT_artificial) || !(m = dwarf_diename(&d)))
				break;
			if ((m[0] == '~' || (name && !strncmp(m, name, base) && !m[base] && copy_or_move_ctor(&d, cls))) &&
			    !defaulted_in_class(&d))
				return false;
			break;
		case DW_TAG_inheritance:
			if (dwarf_hasattr(&d, DW_AT_virtuality))
				return false;
			/* fall through */
		case DW_TAG_member:
			if (dwarf_hasattr(&d, DW_AT_external) || dwarf_hasattr(&d, DW_AT_declaration))
				break;
			if (!djp_dwarf_ref_attr(&d, DW_AT_type, &t) || !cxx_trivial_type(&t, depth))
				return false;
			break;
		case DW_TAG_variant_part:
			return false;
		}
	} while (dwarf_siblingof(&d, &d) == 0);
	return true;
}

/* C++ says how a class is passed: DW_CC_pass_by_reference (a non-trivial
 * copy or destructor) or DW_CC_pass_by_value, where the compiler writes
 * it (clang; not GCC 12), else as cxx_trivial() finds; C has no such
 * classes.  -1: not known. */
static int cxx_convention(Dwarf_Die *t, bool cxx)
{
	Dwarf_Word cc;
	if (djp_dwarf_udata_attr(t, DW_AT_calling_convention, &cc))
		return (int)cc;
	if (!cxx || cxx_trivial(t, 0))
		return DW_CC_pass_by_value;
	return -1;
}

/* An aggregate's passing: the post-merge rules; `ret` for a return value,
 * where X87 classes stay in x87 registers. */
static void classify_agg(struct djp_tinfo *ti, bool cxx, bool ret, struct pass *p)
{
	struct agg g = { .align = 1 };
	unsigned n = (unsigned)((ti->size + 7) / 8);
	int cc = cxx_convention(&ti->die, cxx);

	if (cc == DW_CC_pass_by_reference) {
		*p = (struct pass){ ret ? PASS_MEM : PASS_REGS, 1, 0, 8, 8, true, { 0, 0 }, !ret };
		return;
	}
	if (cc != DW_CC_pass_by_value)
		return;
	agg_walk(&ti->die, 0, &g, 0);
	if (g.unknown)
		return;
	*p = (struct pass){ PASS_MEM, 0, 0, ti->size, g.align, g.align <= 8, { 0, 0 }, false };
	if (ti->size > 16 || g.memory)
		return;
	for (unsigned i = 0; i < n; i++) {
		enum abi_class c = g.cls[i];
		if (c == CL_NONE) {
			p->how = PASS_UNKNOWN; /* an eightbyte of padding: not followed */
			return;
		}
		if (c == CL_MEMORY || (c == CL_X87UP && (!i || g.cls[i - 1] != CL_X87)))
			return;
		if (!ret && (c == CL_X87 || c == CL_X87UP || c == CL_COMPLEX_X87))
			return;
		if (c == CL_SSEUP && (!i || (g.cls[i - 1] != CL_SSE && g.cls[i - 1] != CL_SSEUP)))
			g.cls[i] = c = CL_SSE;
		p->ngpr += c == CL_INTEGER;
		p->nsse += c == CL_SSE;
		if (i < 2)
			p->cls[i] = (uint8_t)c;
	}
	p->how = PASS_REGS;
}


/* How a value of type ti is passed (ret: returned). */
static void classify(struct djp_tinfo *ti, bool cxx, bool ret, struct pass *p)
{
	memset(p, 0, sizeof(*p));
	p->size = ti->size;
	p->align = ti->align;
	p->align_sure = true;
	switch (ti->kind) {
	case DJP_TK_INT:
		p->how = PASS_REGS;
		p->ngpr = 1;
		break;
	case DJP_TK_INT2:
		p->how = PASS_REGS;
		p->ngpr = 2;
		break;
	case DJP_TK_SSE:
	case DJP_TK_SSE_UP:
		p->how = PASS_REGS;
		p->nsse = 1;
		break;
	case DJP_TK_SSE_SSE:
		p->how = PASS_REGS;
		p->nsse = 2;
		break;
	case DJP_TK_X87:
	case DJP_TK_CX87:
		p->how = ret ? PASS_REGS : PASS_MEM; /* returned in %st0 (and %st1) */
		break;
	case DJP_TK_AGG:
		classify_agg(ti, cxx, ret, p);
		break;
	default:
		p->how = PASS_UNKNOWN;
	}
}

/* The registers INTEGER arguments take, in order. */
static const int8_t arg_regs[6] = { DJP_REG_RDI, DJP_REG_RSI, DJP_REG_RDX, DJP_REG_RCX, DJP_REG_R8, DJP_REG_R9 };

/* An aggregate passed as p says, whose first INTEGER eightbyte goes in
 * regs[0] and whose first SSE one in no general register: where it is. */
static void agg_in_regs(const struct pass *p, const int8_t *regs, uint64_t size, struct arch_agg_loc *out)
{
	unsigned k = 0;

	*out = (struct arch_agg_loc){ ARCH_AGG_REGS, { DJP_REG_NONE, DJP_REG_NONE }, 0 };
	if (p->by_ref) {
		*out = (struct arch_agg_loc){ ARCH_AGG_AT, { regs[0], DJP_REG_NONE }, 0 };
		return;
	}
	for (unsigned i = 0; i < 2 && i < (size + 7) / 8; i++)
		if (p->cls[i] == CL_INTEGER)
			out->reg[i] = regs[k++];
}

void arch_ret_agg(Dwarf_Die *ret, bool cxx, struct arch_agg_loc *out)
{
	static const int8_t ret_regs[2] = { DJP_REG_RAX, DJP_REG_RDX };
	struct djp_tinfo ti;
	struct pass p;

	*out = (struct arch_agg_loc){ ARCH_AGG_NONE, { DJP_REG_NONE, DJP_REG_NONE }, 0 };
	if (!ret)
		return;
	arch_type_info(ret, &ti);
	if (ti.kind != DJP_TK_AGG)
		return;
	classify(&ti, cxx, true, &p);
	if (p.how == PASS_REGS)
		agg_in_regs(&p, ret_regs, ti.size, out);
	else if (p.how == PASS_MEM) /* the caller's space, whose address %rax holds at the return */
		*out = (struct arch_agg_loc){ ARCH_AGG_AT, { DJP_REG_RAX, DJP_REG_NONE }, 0 };
}

int arch_int_arg_index(int reg)
{
	for (int i = 0; i < 6; i++)
		if (arg_regs[i] == reg)
			return i;
	return -1;
}

/* Why a value that is not a readable integer is unavailable. */
const char *arch_why_not_int(const struct djp_tinfo *ti, bool in_vector)
{
	switch (ti->kind) {
	case DJP_TK_INT2:
		return DJP_WHY_WIDE;
	case DJP_TK_SSE:
	case DJP_TK_SSE_UP:
	case DJP_TK_SSE_SSE:
		return in_vector ? DJP_WHY_VECTOR : DJP_WHY_FLOAT;
	case DJP_TK_X87:
	case DJP_TK_CX87:
		return DJP_WHY_FLOAT;
	case DJP_TK_AGG:
		return DJP_WHY_STRUCT;
	default:
		return DJP_WHY_TYPE;
	}
}

/* A slot's location: kind, register, displacement. */
static void slot(struct arch_param_slot *s, unsigned kind, int reg, int64_t disp)
{
	s->kind = (uint8_t)kind;
	s->reg = (int8_t)reg;
	s->disp = disp;
	s->why = NULL;
	s->agg = (struct arch_agg_loc){ ARCH_AGG_NONE, { DJP_REG_NONE, DJP_REG_NONE }, 0 };
}

/* Unavailable, for a static reason. */
static void none(struct arch_param_slot *s, const char *why)
{
	slot(s, DJP_LOC_NONE, DJP_REG_NONE, 0);
	s->why = why;
}

void arch_entry_slots(struct arch_param_slot *s, unsigned n, Dwarf_Die *ret, bool cxx, bool clang)
{
	const char *after = NULL; /* every later parameter's reason, once lost */
	bool stack_lost = false;
	unsigned gpr = 0, sse = 0;
	uint64_t stack = 0;
	struct djp_tinfo ti;
	struct pass p;

	if (ret) {
		arch_type_info(ret, &ti);
		classify(&ti, cxx, true, &p);
		if (p.how == PASS_UNKNOWN)
			after = DJP_WHY_RET;
		else if (p.how == PASS_MEM)
			gpr = 1; /* the hidden pointer to the caller's space for it */
	}
	for (unsigned i = 0; i < n; i++) {
		struct djp_tinfo *t = s[i].ti;
		if (after) {
			none(&s[i], after);
			continue;
		}
		if (!t) {
			none(&s[i], DJP_WHY_NOTYPE);
			after = DJP_WHY_AFTER_TYPE;
			continue;
		}
		classify(t, cxx, false, &p);
		if (p.how == PASS_UNKNOWN) {
			bool agg = t->kind == DJP_TK_AGG;
			none(&s[i], agg ? DJP_WHY_STRUCT : DJP_WHY_TYPE);
			after = agg ? DJP_WHY_AFTER_STRUCT : DJP_WHY_AFTER_TYPE;
			continue;
		}
		if (clang && t->kind == DJP_TK_INT2 && gpr + 2 > 6) {
			none(&s[i], DJP_WHY_WIDE);
			after = DJP_WHY_AFTER_INT128;
			continue;
		}
		if (p.how == PASS_REGS && gpr + p.ngpr <= 6 && sse + p.nsse <= 8) {
			if (t->kind == DJP_TK_INT) {
				slot(&s[i], DJP_LOC_REG, arg_regs[gpr], 0);
			} else {
				none(&s[i], arch_why_not_int(t, p.nsse > 0));
				if (p.ngpr == 1 && !p.nsse) /* a small structure, whole in one */
					s[i].reg = arg_regs[gpr];
				if (t->kind == DJP_TK_AGG)
					agg_in_regs(&p, &arg_regs[gpr], t->size, &s[i].agg);
			}
			gpr += p.ngpr;
			sse += p.nsse;
			continue;
		}
		/* whole in memory, above the return address at (%rsp) */
		uint64_t align = p.align > 8 ? p.align : 8;
		stack = (stack + align - 1) / align * align;
		if (stack_lost) {
			none(&s[i], DJP_WHY_AFTER_MEM);
		} else if (t->kind == DJP_TK_INT) {
			slot(&s[i], DJP_LOC_MEM, DJP_REG_RSP, (int64_t)(8 + stack));
		} else {
			none(&s[i], arch_why_not_int(t, false));
			if (t->kind == DJP_TK_AGG)
				s[i].agg = (struct arch_agg_loc){ ARCH_AGG_AT, { DJP_REG_RSP, DJP_REG_NONE },
								  (int64_t)(8 + stack) };
		}
		stack += (p.size + 7) / 8 * 8;
		if (!p.align_sure)
			stack_lost = true;
	}
}
