/*
 * A script's typed access ($p->hdr->len, $p->arr[2], &$p->x, $return->f)
 * compiled from the function's DWARF into a load program (lib/
 * load_prog.h) that the agent runs when the probe fires.
 *
 * How it works.  The variable is one of the function's formal parameters
 * (its location at the entry is the one the probe's own argument has,
 * lib/func_params.c), or at a return the return value in %rax, with the
 * function's return type.  The walk then keeps two things: the type of
 * what the access names so far, and whether the program holds its address
 * (an object in memory) or its value (the variable itself, in a register
 * or a stack slot).  Each step:
 *
 *  - `->m` on a pointer to a structure or union: the pointer is loaded
 *    if it is in memory (a deref step of the program, at the offset
 *    gathered so far), and m's offset is where the walk now is;
 *  - `->m` on a structure (stap writes `->` for `.` too): m's offset is
 *    added, no load;
 *  - `[i]` on an array: i times the element's size is added; on a
 *    pointer, the pointer is loaded first, as for `->`.
 *
 * A member is looked for in anonymous structures and unions too, as C
 * does; typedefs, const and volatile are looked through everywhere.  At
 * the end, a scalar (an integer of any size, bool, an enum, a pointer, a
 * bitfield) is loaded with its own size and sign; an array gives its
 * address, as C does; `&` gives the address of what it names; a whole
 * structure is refused (its members are what a script reads).
 *
 * At a statement (a->pc), the variable is a parameter or a local of a
 * block around pc, at the location its DWARF gives there.  @cast replaces
 * the variable's type: its value is the address of the type named, found
 * among the top-level types of the object's units (or another object's).
 *
 * Pretty printing ($p$, djp_typed_pretty) walks the type the access names
 * and makes one program per value printed, each from the same start: a
 * member's offset added, a bitfield's bits, a pointer to a structure
 * loaded once at the top; the text around the values is kept beside them,
 * and the tool joins both (tools/djp/script/typed.c).
 *
 * Errors name the thing: the parameters when there is no such variable,
 * the type and its members when there is no such member, the object
 * searched when @cast names no type of it.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/dwarf_globals.h"
#include "lib/func_params_int.h"
#include "lib/typed_compile.h"

static int fail(char *err, size_t errsz, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errsz, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
	return code;
}

/* The formal parameter `name` of sub (or of its abstract origin). */
static bool find_param(Dwarf_Die *sub, const char *name, Dwarf_Die *out)
{
	Dwarf_Die origin, *fn = sub;

	for (int pass = 0; pass < 2; pass++) {
		Dwarf_Die c;
		if (dwarf_child(fn, &c) == 0) {
			do {
				const char *n = dwarf_diename(&c);
				if (dwarf_tag(&c) == DW_TAG_formal_parameter && n && !strcmp(n, name)) {
					*out = c;
					return true;
				}
			} while (dwarf_siblingof(&c, &c) == 0);
		}
		if (!djp_dwarf_ref_attr(sub, DW_AT_abstract_origin, &origin))
			break;
		fn = &origin;
	}
	return false;
}

/* The variable `name` of a block of sub (or of sub itself) whose code
 * holds pc, the innermost last. */
static bool find_local(Dwarf_Die *die, const char *name, uint64_t pc, Dwarf_Die *out, unsigned depth)
{
	Dwarf_Die c;
	bool found = false;

	if (depth > DJP_DWARF_DEPTH_MAX || dwarf_child(die, &c) != 0)
		return false;
	do {
		const char *n = dwarf_diename(&c);
		int tag = dwarf_tag(&c);
		if (tag == DW_TAG_variable && n && !strcmp(n, name)) {
			*out = c;
			found = true;
		} else if (tag == DW_TAG_lexical_block && dwarf_haspc(&c, pc) > 0 &&
			   find_local(&c, name, pc, out, depth + 1)) {
			found = true;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return found;
}

/* The parameters' names of sub, for a message. */
static void param_names(Dwarf_Die *sub, char *out, size_t sz)
{
	Dwarf_Die c;
	size_t len = 0;

	out[0] = 0;
	if (dwarf_child(sub, &c) != 0)
		return;
	do {
		const char *n = dwarf_diename(&c);
		if (dwarf_tag(&c) == DW_TAG_formal_parameter && n && len < sz)
			len += (size_t)snprintf(out + len, sz - len, "%s$%s", len ? " " : "", n);
	} while (dwarf_siblingof(&c, &c) == 0);
}

/* The members' names of a structure or union (anonymous ones' own), for a
 * message. */
static void member_names(Dwarf_Die *t, char *out, size_t sz, size_t *len, unsigned depth)
{
	Dwarf_Die c, mt;

	if (depth > DJP_DWARF_DEPTH_MAX || dwarf_child(t, &c) != 0)
		return;
	do {
		const char *n = dwarf_diename(&c);
		if (dwarf_tag(&c) != DW_TAG_member || *len >= sz)
			continue;
		if (n)
			*len += (size_t)snprintf(out + *len, sz - *len, "%s%s", *len ? ", " : "", n);
		else if (djp_dwarf_ref_attr(&c, DW_AT_type, &mt) && djp_dwarf_peel(&mt, &mt))
			member_names(&mt, out, sz, len, depth + 1);
	} while (dwarf_siblingof(&c, &c) == 0);
}

/* The bit offset of member m from its structure's start. */
static bool member_bit_offset(Dwarf_Die *m, uint64_t *bits)
{
	Dwarf_Word v, bsz, bo, byte_size;
	Dwarf_Die t;
	Dwarf_Attribute a;

	if (djp_dwarf_udata_attr(m, DW_AT_data_bit_offset, &v)) {
		*bits = v;
		return true;
	}
	v = 0;
	if (dwarf_attr(m, DW_AT_data_member_location, &a) && dwarf_formudata(&a, &v) != 0) {
		/* a location expression (DWARF 2): DW_OP_plus_uconst N */
		Dwarf_Op *ops;
		size_t n;
		if (dwarf_getlocation(&a, &ops, &n) != 0 || n != 1 || ops[0].atom != DW_OP_plus_uconst)
			return false;
		v = ops[0].number;
	}
	*bits = 8 * v;
	if (djp_dwarf_udata_attr(m, DW_AT_bit_size, &bsz) && djp_dwarf_udata_attr(m, DW_AT_bit_offset, &bo)) {
		/* DWARF 2/3: bo counts from the storage unit's most
		 * significant bit */
		if (!djp_dwarf_udata_attr(m, DW_AT_byte_size, &byte_size)) {
			if (!djp_dwarf_ref_attr(m, DW_AT_type, &t) || dwarf_aggregate_size(&t, &byte_size) != 0)
				return false;
		}
		*bits += 8 * byte_size - bo - bsz;
	}
	return true;
}

/* Member `name` of structure or union t, looking into anonymous ones: its
 * DIE and its bit offset from t's start. */
static bool find_member(Dwarf_Die *t, const char *name, Dwarf_Die *out, uint64_t *bits, unsigned depth)
{
	Dwarf_Die c, mt;
	uint64_t b;

	if (depth > DJP_DWARF_DEPTH_MAX || dwarf_child(t, &c) != 0)
		return false;
	do {
		const char *n;
		if (dwarf_tag(&c) != DW_TAG_member && dwarf_tag(&c) != DW_TAG_inheritance)
			continue;
		n = dwarf_diename(&c);
		if (n && !strcmp(n, name) && dwarf_tag(&c) == DW_TAG_member) {
			if (!member_bit_offset(&c, bits))
				return false;
			*out = c;
			return true;
		}
		if (!n && djp_dwarf_ref_attr(&c, DW_AT_type, &mt) && djp_dwarf_peel(&mt, &mt) &&
		    (dwarf_tag(&mt) == DW_TAG_structure_type || dwarf_tag(&mt) == DW_TAG_union_type ||
		     dwarf_tag(&mt) == DW_TAG_class_type) &&
		    member_bit_offset(&c, &b) && find_member(&mt, name, out, bits, depth + 1)) {
			*bits += b;
			return true;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return false;
}

static bool is_aggregate(Dwarf_Die *t)
{
	int tag = dwarf_tag(t);
	return tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_class_type;
}

/* The pointee of pointer type p, peeled; false for void *. */
static bool pointee(Dwarf_Die *p, Dwarf_Die *out)
{
	return djp_dwarf_ref_attr(p, DW_AT_type, out) && djp_dwarf_peel(out, out);
}

/* A pointer, or a C++ reference (an address the compiler follows, as
 * stap's `->` does: `$c->count` of a `Cart &c`). */
static bool is_pointer(Dwarf_Die *t)
{
	int tag = dwarf_tag(t);
	return tag == DW_TAG_pointer_type || tag == DW_TAG_reference_type || tag == DW_TAG_rvalue_reference_type;
}

/* The walk's state: the type of what is named so far (raw, for its
 * spelling, and peeled), and whether the program holds its address. */
struct walk {
	Dwarf_Die raw, t;
	bool in_memory;
	/* a structure passed or returned by value in registers: regs[i]
	 * holds its ith eightbyte, and p->last is the byte offset the walk
	 * has reached in it (regs_value makes the register the base once the
	 * walk names a scalar or a pointer there) */
	bool in_regs;
	int8_t regs[2];
	struct djp_load_prog *p;
	struct djp_load_prog own; /* what p points to, in a copy of a walk */
};

/* The walk, in registers, names a scalar or pointer of size bytes at byte
 * p->last of the structure: that register, shifted and cut to it, is the
 * base (the value, with no load). */
static int regs_value(struct walk *w, unsigned size, bool is_signed, char *err, size_t errsz)
{
	uint64_t off = (uint64_t)w->p->last;
	int reg;

	if (off >= 16 || off % 8 + size > 8)
		return fail(err, errsz, -ENOTSUP, "not supported yet: a member across two registers");
	reg = w->regs[off / 8];
	if (reg == DJP_REG_NONE)
		return fail(err, errsz, -ENOTSUP, "a member passed in a vector register");
	w->p->base = (struct djp_argloc){ .kind = DJP_LOC_REG,
					  .size = (uint8_t)size,
					  .is_signed = is_signed,
					  .reg = (int8_t)reg,
					  .index = DJP_REG_NONE,
					  .scale = 1,
					  .reg_shift = (uint8_t)(8 * (off % 8)) };
	w->p->last = 0;
	w->in_regs = false;
	return 0;
}

/* A structure the walk starts from, where the calling convention put it
 * (arch/x86/call_conv.h): in registers, or in memory at a register plus
 * a displacement. */
static void start_agg(struct walk *w, const struct arch_agg_loc *agg)
{
	if (agg->how == ARCH_AGG_AT) {
		w->p->base = (struct djp_argloc){ .kind = DJP_LOC_REG, .size = 8, .reg = agg->reg[0],
						  .index = DJP_REG_NONE, .scale = 1 };
		w->p->last = agg->disp;
		w->in_memory = true;
		return;
	}
	w->p->base = (struct djp_argloc){ .kind = DJP_LOC_IMM, .size = 8, .reg = DJP_REG_NONE, .index = DJP_REG_NONE,
					  .scale = 1 };
	w->p->last = 0;
	w->in_regs = true;
	w->regs[0] = agg->reg[0];
	w->regs[1] = agg->reg[1];
}

/* Load the pointer the walk names, when it is in memory. */
static int load_pointer(struct walk *w, char *err, size_t errsz)
{
	if (!w->in_memory)
		return 0; /* the variable itself: its value is the pointer */
	if (w->p->nderef == DJP_LOAD_MAX_DEREF)
		return fail(err, errsz, -E2BIG, "more than %d pointers in one access", DJP_LOAD_MAX_DEREF);
	w->p->off[w->p->nderef++] = w->p->last;
	w->p->last = 0;
	return 0;
}

static void spell(Dwarf_Die *t, char *out, size_t sz)
{
	djp_type_spell(t, out, sz);
}

static int step_member(struct walk *w, const char *name, char *err, size_t errsz)
{
	char ty[DJP_TYPE_MAX], list[1024];
	Dwarf_Die m;
	uint64_t bits;
	Dwarf_Word bsz;
	size_t len = 0;

	if (is_pointer(&w->t)) {
		Dwarf_Die s;
		int ret;
		if (!pointee(&w->t, &s) || !is_aggregate(&s)) {
			spell(&w->raw, ty, sizeof(ty));
			return fail(err, errsz, -EINVAL, "'->%s' on a %s, which points to no struct or union", name,
				    ty);
		}
		if (w->in_regs && (ret = regs_value(w, 8, false, err, errsz)))
			return ret;
		if (load_pointer(w, err, errsz))
			return -E2BIG;
		w->t = s;
		w->in_memory = true;
	} else if (!is_aggregate(&w->t)) {
		spell(&w->raw, ty, sizeof(ty));
		return fail(err, errsz, -EINVAL, "'->%s' on a %s, which is no struct, union or pointer to one", name,
			    ty);
	} else if (!w->in_memory && !w->in_regs) {
		return fail(err, errsz, -EINVAL, "'->%s': a struct passed by value is not readable", name);
	}
	if (!find_member(&w->t, name, &m, &bits, 0)) {
		spell(&w->t, ty, sizeof(ty));
		member_names(&w->t, list, sizeof(list), &len, 0);
		return fail(err, errsz, -ENOENT, "unknown member '%s' of %s (members: %s)", name, ty,
			    len ? list : "none");
	}
	if (!djp_dwarf_ref_attr(&m, DW_AT_type, &w->raw) || !djp_dwarf_peel(&w->raw, &w->t))
		return fail(err, errsz, -EINVAL, "member '%s' has no type", name);
	if (djp_dwarf_udata_attr(&m, DW_AT_bit_size, &bsz)) {
		/* a bitfield: load the smallest unit holding its bits */
		uint64_t byte = bits / 8, shift = bits % 8;
		if (w->in_regs)
			return fail(err, errsz, -ENOTSUP, "not supported yet: bitfield '%s' of a structure in registers",
				    name);
		unsigned size = 1;
		while (size < 8 && shift + bsz > 8u * size)
			size *= 2;
		if (shift + bsz > 8u * size)
			return fail(err, errsz, -EINVAL, "bitfield '%s' straddles 8 bytes", name);
		w->p->last += (int64_t)byte;
		w->p->size = (uint8_t)size;
		w->p->bit_off = (uint8_t)shift;
		w->p->bit_size = (uint8_t)bsz;
		return 1; /* nothing may follow a bitfield */
	}
	w->p->last += (int64_t)(bits / 8);
	return 0;
}

static int step_index(struct walk *w, int64_t i, bool by_var, char *err, size_t errsz)
{
	char ty[DJP_TYPE_MAX];
	Dwarf_Die e;
	Dwarf_Word esz;

	if (dwarf_tag(&w->t) == DW_TAG_array_type) {
		if (!w->in_memory && !(w->in_regs && !by_var))
			return fail(err, errsz, -EINVAL, "'[%lld]': an array not in memory", (long long)i);
	} else if (is_pointer(&w->t)) {
		int ret;
		if (w->in_regs && (ret = regs_value(w, 8, false, err, errsz)))
			return ret;
		if (load_pointer(w, err, errsz))
			return -E2BIG;
		w->in_memory = true;
	} else {
		spell(&w->raw, ty, sizeof(ty));
		return fail(err, errsz, -EINVAL, "'[%lld]' on a %s, which is no array or pointer", (long long)i, ty);
	}
	if (!djp_dwarf_ref_attr(&w->t, DW_AT_type, &w->raw) || !djp_dwarf_peel(&w->raw, &e) ||
	    dwarf_aggregate_size(&e, &esz) != 0) {
		spell(&w->t, ty, sizeof(ty));
		return fail(err, errsz, -EINVAL, "'[%lld]' on a %s, whose elements have no size", (long long)i, ty);
	}
	/* an array of arrays: the first dimension's element is the rest */
	if (dwarf_tag(&w->t) == DW_TAG_array_type) {
		uint64_t count;
		Dwarf_Word whole;
		if (djp_dwarf_array_count(&w->t, &count) && dwarf_aggregate_size(&w->t, &whole) == 0 && count &&
		    whole / count != esz)
			return fail(err, errsz, -ENOTSUP, "'[%lld]' on a multi-dimensional array", (long long)i);
	}
	w->t = e;
	if (by_var) { /* the variable's value times the size, at this step */
		w->p->idx_step = w->p->nderef;
		w->p->idx_scale = (int64_t)esz;
	} else {
		int64_t off;
		/* an index so large that its offset does not fit in 64 bits
		 * names no byte anywhere (the fuzz target found one) */
		if (esz > INT64_MAX || __builtin_mul_overflow(i, (int64_t)esz, &off) ||
		    __builtin_add_overflow(w->p->last, off, &w->p->last))
			return fail(err, errsz, -ERANGE, "'[%lld]': an index out of any range", (long long)i);
	}
	return 0;
}

/* The final value: a scalar's size and sign, or an address. */
static int finish(struct walk *w, bool addr_of, struct djp_typed_result *out, char *err, size_t errsz)
{
	struct djp_load_prog *p = w->p;
	Dwarf_Word sz = 0, enc = 0;
	Dwarf_Die u;
	char ty[DJP_TYPE_MAX];

	spell(&w->raw, out->type, sizeof(out->type));
	if (addr_of) {
		if (!w->in_memory)
			return fail(err, errsz, -EINVAL, "'&' of a value that is not in memory");
		p->size = 0;
		p->bit_size = 0;
		out->conv = 'p';
		snprintf(ty, sizeof(ty), "%.*s*", DJP_TYPE_MAX - 2, out->type);
		snprintf(out->type, sizeof(out->type), "%s", ty);
		return p->bit_size ? fail(err, errsz, -EINVAL, "'&' of a bitfield") : 0;
	}
	if (p->bit_size) {
		u = w->t;
		if (dwarf_tag(&u) == DW_TAG_enumeration_type && djp_dwarf_ref_attr(&u, DW_AT_type, &u))
			djp_dwarf_peel(&u, &u);
		p->is_signed = djp_dwarf_udata_attr(&u, DW_AT_encoding, &enc) &&
			       (enc == DW_ATE_signed || enc == DW_ATE_signed_char);
		out->conv = p->is_signed ? 'd' : 'u';
		return 0;
	}
	switch (dwarf_tag(&w->t)) {
	case DW_TAG_array_type:
		if (w->in_regs)
			return fail(err, errsz, -EINVAL, "'%s' is an array in registers, with no address", out->type);
		p->size = 0;
		out->conv = 'p';
		return 0;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		p->size = 8;
		p->is_signed = false;
		out->conv = 'p';
		if (w->in_regs) { /* the register is the pointer */
			p->size = 0;
			return regs_value(w, 8, false, err, errsz);
		}
		return 0;
	case DW_TAG_enumeration_type:
		u = w->t;
		if (djp_dwarf_ref_attr(&w->t, DW_AT_type, &u))
			djp_dwarf_peel(&u, &u);
		else
			enc = DW_ATE_signed;
		djp_dwarf_udata_attr(&u, DW_AT_encoding, &enc);
		if (!djp_dwarf_udata_attr(&w->t, DW_AT_byte_size, &sz))
			sz = 4;
		break;
	case DW_TAG_base_type:
		if (!djp_dwarf_udata_attr(&w->t, DW_AT_byte_size, &sz) ||
		    !djp_dwarf_udata_attr(&w->t, DW_AT_encoding, &enc))
			sz = 0;
		if (enc == DW_ATE_float || enc == DW_ATE_complex_float)
			return fail(err, errsz, -ENOTSUP, "'%s' is a floating-point value", out->type);
		break;
	default:
		if (is_aggregate(&w->t))
			return fail(err, errsz, -EINVAL, "'%s' is a whole %s: read its members",
				    out->type, dwarf_tag(&w->t) == DW_TAG_union_type ? "union" : "struct");
		return fail(err, errsz, -ENOTSUP, "'%s' is a type djp cannot read", out->type);
	}
	if (sz != 1 && sz != 2 && sz != 4 && sz != 8)
		return fail(err, errsz, -ENOTSUP, "'%s' is %u bytes wide", out->type, (unsigned)sz);
	p->size = (uint8_t)sz;
	p->is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
	out->conv = p->is_signed ? 'd' : 'u';
	if (w->in_regs) { /* the register, cut to the member, is the value */
		p->size = 0;
		return regs_value(w, (unsigned)sz, p->is_signed, err, errsz);
	}
	return 0;
}

/* The type `name` (of kind tag, -1: a typedef, base type, struct, union or
 * class) among the children of scope, or, for "ns::rest", among those of
 * its namespace, class or struct `ns`; an unqualified name is looked for
 * in nested namespaces too (C++'s `shop::Item` as @cast(p, "Item")). */
static bool find_in_scope(Dwarf_Die *scope, const char *name, int tag, unsigned depth, Dwarf_Die *out)
{
	const char *sep = strstr(name, "::");
	size_t head = sep ? (size_t)(sep - name) : 0;
	Dwarf_Die c;
	Dwarf_Attribute a;

	if (depth > 8 || dwarf_child(scope, &c) != 0)
		return false;
	do {
		int t = dwarf_tag(&c);
		const char *n = dwarf_diename(&c);
		bool is_scope = t == DW_TAG_namespace || t == DW_TAG_structure_type || t == DW_TAG_class_type;
		if (sep) {
			if (is_scope && n && strlen(n) == head && !strncmp(n, name, head) &&
			    find_in_scope(&c, sep + 2, tag, depth + 1, out))
				return true;
			continue;
		}
		bool kind_ok = tag >= 0 ? t == tag
					 : t == DW_TAG_typedef || t == DW_TAG_base_type || t == DW_TAG_structure_type ||
						   t == DW_TAG_union_type || t == DW_TAG_class_type;
		if (kind_ok && n && !strcmp(n, name) && !dwarf_attr(&c, DW_AT_declaration, &a)) {
			*out = c;
			return true;
		}
		if (t == DW_TAG_namespace && find_in_scope(&c, name, tag, depth + 1, out))
			return true;
	} while (dwarf_siblingof(&c, &c) == 0);
	return false;
}

/* The type named `spelled` ("struct T", "union U", "enum E", "class C" or
 * a typedef or base type's name, C++ scopes as "ns::T") in dw: a
 * definition, not a declaration. */
static bool find_type(Dwarf *dw, const char *spelled, Dwarf_Die *out)
{
	static const struct {
		const char *prefix;
		int tag;
	} kinds[] = { { "struct ", DW_TAG_structure_type },
		      { "union ", DW_TAG_union_type },
		      { "enum ", DW_TAG_enumeration_type },
		      { "class ", DW_TAG_class_type } };
	const char *name = spelled;
	int tag = -1;
	Dwarf_Off off = 0, next;
	size_t hsz;

	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strncmp(spelled, kinds[i].prefix, strlen(kinds[i].prefix))) {
			name = spelled + strlen(kinds[i].prefix);
			tag = kinds[i].tag;
		}
	while (dw && dwarf_nextcu(dw, off, &next, &hsz, NULL, NULL, NULL) == 0) {
		Dwarf_Die cu;
		if (dwarf_offdie(dw, off + hsz, &cu) && find_in_scope(&cu, name, tag, 0, out))
			return true;
		off = next;
	}
	return false;
}

/* @cast: the walk's value becomes the address of a->cast_type. */
static int cast_to(struct djp_params_file *pf, struct dwarf_src *src, const struct djp_typed_access *a,
		   struct walk *w, char *err, size_t errsz)
{
	struct djp_params_file *other = NULL;
	/* the function's DWARF; for a register's address, the object's */
	Dwarf *dw = src ? src->dw : pf && pf->own.dw ? pf->own.dw : pf ? pf->dbg.dw : NULL;
	Dwarf_Die t;
	bool found;
	int ret;

	if (!dw && !a->cast_path)
		return fail(err, errsz, -ENOENT,
			    "@cast: no type '%s': %s has no debug information (give @cast the path of an object "
			    "whose DWARF has it)", a->cast_type, pf ? pf->path : "the function's object");
	if (a->cast_path) {
		if ((ret = djp_params_open(a->cast_path, &other, err, errsz)))
			return ret;
		/* its DWARF: the file's own, else its debug file's (open
		 * found one of them) */
		dw = other->own.dw ? other->own.dw : other->dbg.dw;
	}
	found = find_type(dw, a->cast_type, &t);
	if (!found && !a->cast_path && pf && pf->dbg.dw && pf->dbg.dw != dw)
		found = find_type(pf->dbg.dw, a->cast_type, &t);
	if (!found) {
		ret = fail(err, errsz, -ENOENT, "@cast: no type '%s' in the DWARF of %s", a->cast_type,
			   a->cast_path ? a->cast_path : pf ? pf->path : "the function's object");
		if (other)
			djp_params_close(other);
		return ret;
	}
	w->raw = t;
	if (!djp_dwarf_peel(&w->raw, &w->t)) {
		if (other)
			djp_params_close(other);
		return fail(err, errsz, -EINVAL, "@cast: '%s' is void", a->cast_type);
	}
	/* the DIEs stay valid while `other` is open: kept for the tool's life */
	w->in_memory = true; /* the variable's value is the T's address */
	return 0;
}

/* a's steps (->member, [index]) from what *w names. */
static int walk_steps(struct walk *w, const struct djp_typed_access *a, char *err, size_t errsz)
{
	for (unsigned i = 0; i < a->nsteps; i++) {
		const struct djp_typed_step *s = &a->step[i];
		int ret = s->is_index ? step_index(w, s->index, s->index_var != NULL, err, errsz)
				      : step_member(w, s->member, err, errsz);
		if (ret < 0)
			return ret;
		if (ret > 0 && i + 1 < a->nsteps)
			return fail(err, errsz, -EINVAL, "a bitfield has no members");
	}
	return 0;
}

/* The variable a's index names ([$i]), or NULL; -ENOTSUP after an error
 * for more than one. */
static int index_var(const struct djp_typed_access *a, const char **name, char *err, size_t errsz)
{
	*name = NULL;
	for (unsigned i = 0; i < a->nsteps; i++) {
		if (!a->step[i].index_var)
			continue;
		if (*name)
			return fail(err, errsz, -ENOTSUP, "not supported yet: two indexes that are variables in one access");
		*name = a->step[i].index_var;
	}
	return 0;
}

/* The walk of a's variable and steps, in the function at func_addr: *w
 * names what the access names (w->p, the caller's, holds the program so
 * far). */
static int walk_access(struct djp_params_file *pf, uint64_t func_addr, const struct djp_typed_access *a,
		       struct walk *w, char *err, size_t errsz)
{
	struct djp_param_set ps;
	struct dwarf_src *src;
	Dwarf_Die sub, var;
	const char *fname, *ivar;
	char names[512];
	int ret;

	if ((ret = index_var(a, &ivar, err, errsz)))
		return ret;
	if (ivar && (a->has_base_loc || a->global_name || a->at_return))
		return fail(err, errsz, -ENOTSUP,
			    "not supported yet: an index that is a variable ([$%s]) in an access that does not start "
			    "from a parameter or a local", ivar);

	if (a->has_base_loc) {
		/* an address in a register (or a marker's argument): only
		 * @cast gives it a type, and the function's DWARF is not
		 * needed (pf may be NULL when @cast names the object that
		 * has the type) */
		if (!a->cast_type)
			return fail(err, errsz, -EINVAL, "%s has no type: @cast it", a->var);
		w->p->base = a->base_loc;
		if ((ret = cast_to(pf, NULL, a, w, err, errsz)))
			return ret;
		return walk_steps(w, a, err, errsz);
	}
	if (a->global_name) {
		/* a global: a pointer or a scalar read where it is, a
		 * structure, union or array from its address */
		uint64_t addr = 0;
		Dwarf_Die gv;
		bool found = pf && (djp_global_die(pf->own.dw, a->global_name, a->global_file, &gv, &addr) ||
				    djp_global_die(pf->dbg.dw, a->global_name, a->global_file, &gv, &addr));
		int tag;

		if (!found)
			return fail(err, errsz, -ENOENT, "%s: no variable '%s' at the top of %s%s", pf ? pf->path : "?",
				    a->global_name, a->global_file ? "a unit named " : "any unit",
				    a->global_file ? a->global_file : "");
		if (!djp_dwarf_ref_attr(&gv, DW_AT_type, &w->raw) || !djp_dwarf_peel(&w->raw, &w->t))
			return fail(err, errsz, -EINVAL, "%s is void", a->var);
		tag = dwarf_tag(&w->t);
		if (tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_class_type ||
		    tag == DW_TAG_array_type || (a->addr_of && !a->nsteps)) {
			w->p->base = (struct djp_argloc){ .kind = DJP_LOC_ADDR, .size = 8, .reg = DJP_REG_NONE,
							  .index = DJP_REG_NONE, .scale = 1, .disp = (int64_t)addr };
			w->in_memory = true;
		} else {
			w->p->base = (struct djp_argloc){ .kind = DJP_LOC_ABS, .size = 8, .reg = DJP_REG_NONE,
							  .index = DJP_REG_NONE, .scale = 1, .disp = (int64_t)addr };
		}
		if (a->cast_type && (ret = cast_to(pf, NULL, a, w, err, errsz)))
			return ret;
		return walk_steps(w, a, err, errsz);
	}
	if ((ret = djp_params_find(pf, func_addr, &sub, &src, err, errsz)))
		return ret;
	fname = dwarf_diename(&sub) ? dwarf_diename(&sub) : "?";
	if (a->at_return) {
		if (!djp_dwarf_ref_attr(&sub, DW_AT_type, &w->raw))
			return fail(err, errsz, -ENOENT, "%s returns nothing: no $return", fname);
		w->p->base = (struct djp_argloc){ .kind = DJP_LOC_REG, .size = 8, .reg = DJP_REG_RET,
						  .index = DJP_REG_NONE, .scale = 1 };
		/* a structure returned by value: in registers, or in the
		 * caller's space whose address the return register holds */
		if (!djp_params_get(pf, func_addr, func_addr, &ps, NULL, 0)) {
			if (ps.ret.agg.how != ARCH_AGG_NONE)
				start_agg(w, &ps.ret.agg);
			djp_params_free(&ps);
		}
	} else {
		bool found = false;
		uint64_t pc = a->pc ? a->pc : func_addr;
		if (!find_param(&sub, a->var, &var) && !(a->pc && find_local(&sub, a->var, a->pc, &var, 0))) {
			param_names(&sub, names, sizeof(names));
			return fail(err, errsz, -ENOENT, "no %s $%s in %s (parameters: %s)",
				    a->pc ? "parameter or local" : "parameter", a->var, fname, names[0] ? names : "none");
		}
		if (!djp_dwarf_ref_attr(&var, DW_AT_type, &w->raw))
			return fail(err, errsz, -EINVAL, "$%s has no type", a->var);
		if ((ret = a->pc ? djp_params_get_vars(pf, func_addr, pc, &ps, err, errsz)
				 : djp_params_get(pf, func_addr, func_addr, &ps, err, errsz)))
			return ret;
		for (unsigned i = 0; i < ps.n && !found; i++) {
			if (strcmp(ps.v[i].name, a->var))
				continue;
			found = true;
			w->p->base = ps.v[i].loc;
			w->p->base.sym = NULL;
			if (ps.v[i].loc.kind == DJP_LOC_NONE && ps.v[i].agg.how != ARCH_AGG_NONE)
				start_agg(w, &ps.v[i].agg); /* a structure passed by value */
			else if (ps.v[i].loc.kind == DJP_LOC_NONE)
				snprintf(names, sizeof(names), "%s", ps.v[i].why ? ps.v[i].why : "unavailable");
		}
		for (unsigned i = 0; ivar && i < ps.n && w->p->idx.kind == DJP_LOC_NONE; i++) {
			if (strcmp(ps.v[i].name, ivar))
				continue;
			if (ps.v[i].loc.kind == DJP_LOC_NONE || ps.v[i].conv == 'p') {
				ret = fail(err, errsz, -ENODATA, "the index $%s of %s cannot be read %s: %s", ivar, fname,
					   a->pc ? "there" : "at its entry",
					   ps.v[i].conv == 'p' ? "a pointer" : ps.v[i].why ? ps.v[i].why : "unavailable");
				djp_params_free(&ps);
				return ret;
			}
			w->p->idx = ps.v[i].loc;
			w->p->idx.sym = NULL;
		}
		djp_params_free(&ps);
		if (ivar && w->p->idx.kind == DJP_LOC_NONE)
			return fail(err, errsz, -ENOENT, "no %s $%s for the index in %s", a->pc ? "parameter or local" : "parameter",
				    ivar, fname);
		if (!found || (w->p->base.kind == DJP_LOC_NONE && !w->in_memory && !w->in_regs))
			return fail(err, errsz, -ENODATA, "$%s of %s cannot be read %s: %s", a->var, fname,
				    a->pc ? "there" : "at its entry", found ? names : "unavailable");
	}
	if (!djp_dwarf_peel(&w->raw, &w->t))
		return fail(err, errsz, -EINVAL, "$%s is void", a->var);
	if (a->cast_type && (ret = cast_to(pf, src, a, w, err, errsz)))
		return ret;
	return walk_steps(w, a, err, errsz);
}

int djp_typed_compile(struct djp_params_file *pf, uint64_t func_addr, const struct djp_typed_access *a,
		      struct djp_typed_result *out, char *err, size_t errsz)
{
	struct walk w = { .p = &out->prog };
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = walk_access(pf, func_addr, a, &w, err, errsz)))
		return ret;
	if (!a->nsteps && a->addr_of && !a->global_name && !a->has_base_loc && !a->cast_type) {
		/* &$var: a variable in a stack slot (a local at a statement,
		 * an argument passed on the stack) is at its base register
		 * plus the slot's offset; one in a register has no address */
		struct djp_argloc *b = &out->prog.base;
		if (b->kind != DJP_LOC_MEM || b->reg == DJP_REG_NONE || b->index != DJP_REG_NONE)
			return fail(err, errsz, -EINVAL, "'&$%s': $%s is not in memory %s (a register holds it)", a->var,
				    a->var, a->pc ? "there" : "at the entry");
		out->prog.last += b->disp;
		*b = (struct djp_argloc){ .kind = DJP_LOC_REG, .size = 8, .reg = b->reg, .index = DJP_REG_NONE,
					  .scale = 1 };
		out->prog.size = 0;
		spell(&w.raw, out->type, sizeof(out->type));
		strncat(out->type, "*", sizeof(out->type) - strlen(out->type) - 1);
		out->conv = 'p';
		return djp_load_check(&out->prog) ? fail(err, errsz, -EINVAL, "internal error: a bad load program") : 0;
	}
	if ((ret = finish(&w, a->addr_of, out, err, errsz)))
		return ret;
	return djp_load_check(&out->prog) ? fail(err, errsz, -EINVAL, "internal error: a bad load program") : 0;
}

/* ---- pretty printing ($var$, $var$$) ----------------------------------------- */

#define PRETTY_ARRAY_MAX 8  /* elements of a non-char array printed */
#define PRETTY_STR_BOUND 256 /* bytes of a char * member copied, NUL included */

struct pbuild {
	struct djp_pretty *out;
	char text[2048];
	size_t tlen;
	unsigned level;
	char *err;
	size_t errsz;
};

static void ptext(struct pbuild *b, const char *t)
{
	size_t n = strlen(t);
	if (b->tlen + n < sizeof(b->text)) {
		memcpy(b->text + b->tlen, t, n + 1);
		b->tlen += n;
	}
}

/* *c, a copy of w whose program is its own. */
static void wcopy(struct walk *c, const struct walk *w)
{
	*c = *w;
	c->own = *w->p;
	c->p = &c->own;
}

/* A piece of a structure in registers: its register, cut to the size
 * the piece has, is the value (no load). */
static int regs_piece(struct pbuild *b, const struct walk *w, struct djp_pretty_piece *pc)
{
	struct walk c;
	int ret;

	wcopy(&c, w);
	if ((ret = regs_value(&c, pc->prog.size, pc->prog.is_signed, b->err, b->errsz)))
		return ret;
	pc->prog.base = c.p->base;
	pc->prog.last = 0;
	pc->prog.size = 0;
	return 0;
}

static int piece(struct pbuild *b, struct walk *w, char kind, uint16_t str_bound)
{
	struct djp_pretty *o = b->out;
	struct djp_pretty_piece *pc;
	Dwarf_Word sz = 8, enc = 0;
	Dwarf_Die u;

	if (o->n == DJP_LOAD_MAX_PROGS)
		return fail(b->err, b->errsz, -E2BIG, "more than %d values to print", DJP_LOAD_MAX_PROGS);
	if (!(o->v = realloc(o->v, sizeof(*o->v) * (o->n + 1))) || !(o->v[o->n].text = strdup(b->text)))
		return fail(b->err, b->errsz, -ENOMEM, "out of memory");
	pc = &o->v[o->n++];
	pc->kind = kind;
	pc->prog = *w->p;
	pc->nenum = 0;
	pc->enum_val = NULL;
	pc->enum_name = NULL;
	pc->group = pc->close_len = pc->prefix_len = 0;
	b->tlen = 0;
	b->text[0] = 0;
	if (pc->prog.bit_size) /* a bitfield: step_member set its load */
		return 0;
	if (!w->in_memory && !w->in_regs) { /* the variable itself: its value */
		pc->prog.size = 0;
		return 0;
	}
	if (kind == 's' && dwarf_tag(&w->t) == DW_TAG_array_type) {
		if (w->in_regs)
			return fail(b->err, b->errsz, -ENOTSUP, "not supported yet: a char array in registers");
		pc->prog.size = 0; /* the array's address */
		pc->prog.str_bound = str_bound;
		return 0;
	}
	if (kind == 'x' || kind == 's') {
		pc->prog.size = 8;
		pc->prog.str_bound = str_bound;
		return w->in_regs ? regs_piece(b, w, pc) : 0;
	}
	u = w->t;
	if (dwarf_tag(&u) == DW_TAG_enumeration_type) {
		Dwarf_Die c;
		djp_dwarf_udata_attr(&u, DW_AT_byte_size, &sz);
		if (dwarf_child(&u, &c) == 0) {
			do {
				Dwarf_Attribute a;
				Dwarf_Sword v;
				if (dwarf_tag(&c) != DW_TAG_enumerator || !dwarf_attr(&c, DW_AT_const_value, &a) ||
				    dwarf_formsdata(&a, &v) != 0 || !dwarf_diename(&c))
					continue;
				pc->enum_val = realloc(pc->enum_val, sizeof(*pc->enum_val) * (pc->nenum + 1));
				pc->enum_name = realloc(pc->enum_name, sizeof(*pc->enum_name) * (pc->nenum + 1));
				if (!pc->enum_val || !pc->enum_name)
					return fail(b->err, b->errsz, -ENOMEM, "out of memory");
				pc->enum_val[pc->nenum] = v;
				pc->enum_name[pc->nenum++] = strdup(dwarf_diename(&c));
			} while (dwarf_siblingof(&c, &c) == 0);
		}
		if (djp_dwarf_ref_attr(&u, DW_AT_type, &u))
			djp_dwarf_peel(&u, &u);
		enc = DW_ATE_signed;
	} else {
		djp_dwarf_udata_attr(&u, DW_AT_byte_size, &sz);
	}
	djp_dwarf_udata_attr(&u, DW_AT_encoding, &enc);
	if (sz != 1 && sz != 2 && sz != 4 && sz != 8)
		return fail(b->err, b->errsz, -ENOTSUP, "a member %u bytes wide", (unsigned)sz);
	pc->prog.size = (uint8_t)sz;
	pc->prog.is_signed = enc == DW_ATE_signed || enc == DW_ATE_signed_char;
	return w->in_regs ? regs_piece(b, w, pc) : 0;
}

/* A char, signed or unsigned: what a string is made of. */
static bool is_char(Dwarf_Die *t)
{
	Dwarf_Word enc, sz;
	return dwarf_tag(t) == DW_TAG_base_type && djp_dwarf_udata_attr(t, DW_AT_encoding, &enc) &&
	       djp_dwarf_udata_attr(t, DW_AT_byte_size, &sz) && sz == 1 &&
	       (enc == DW_ATE_signed_char || enc == DW_ATE_unsigned_char);
}

static int pretty_walk(struct pbuild *b, struct walk *w, unsigned depth, bool top);

static int pretty_members(struct pbuild *b, struct walk *w, unsigned depth, bool *first)
{
	Dwarf_Die c;
	int ret;

	if (dwarf_child(&w->t, &c) != 0)
		return 0;
	do {
		const char *name = dwarf_diename(&c);
		struct walk m;
		Dwarf_Word bsz, enc;
		uint64_t bits;
		if (dwarf_tag(&c) != DW_TAG_member)
			continue;
		wcopy(&m, w);
		if (!member_bit_offset(&c, &bits) || !djp_dwarf_ref_attr(&c, DW_AT_type, &m.raw) ||
		    !djp_dwarf_peel(&m.raw, &m.t))
			continue;
		if (dwarf_tag(&m.t) == DW_TAG_base_type && djp_dwarf_udata_attr(&m.t, DW_AT_encoding, &enc) &&
		    (enc == DW_ATE_float || enc == DW_ATE_complex_float))
			continue; /* not read: floating point */
		ptext(b, *first ? "" : ", ");
		*first = false;
		if (name) {
			ptext(b, ".");
			ptext(b, name);
			ptext(b, "=");
		}
		if (djp_dwarf_udata_attr(&c, DW_AT_bit_size, &bsz)) {
			uint64_t shift = bits % 8;
			unsigned size = 1;
			if (m.in_regs)
				return fail(b->err, b->errsz, -ENOTSUP,
					    "not supported yet: a bitfield of a structure in registers");
			while (size < 8 && shift + bsz > 8u * size)
				size *= 2;
			m.p->last += (int64_t)(bits / 8);
			m.p->size = (uint8_t)size;
			m.p->bit_off = (uint8_t)shift;
			m.p->bit_size = (uint8_t)bsz;
			m.p->is_signed = djp_dwarf_udata_attr(&m.t, DW_AT_encoding, &enc) &&
					 (enc == DW_ATE_signed || enc == DW_ATE_signed_char);
			if ((ret = piece(b, &m, m.p->is_signed ? 'd' : 'u', 0)))
				return ret;
			continue;
		}
		m.p->last += (int64_t)(bits / 8);
		if ((ret = pretty_walk(b, &m, depth + 1, false)))
			return ret;
	} while (dwarf_siblingof(&c, &c) == 0);
	return 0;
}

static int pretty_walk(struct pbuild *b, struct walk *w, unsigned depth, bool top)
{
	Dwarf_Die pt, e;
	Dwarf_Word enc;
	int ret;

	if (depth > DJP_DWARF_DEPTH_MAX)
		return fail(b->err, b->errsz, -ELOOP, "types nested too deep");
	switch (dwarf_tag(&w->t)) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		if (!pointee(&w->t, &pt))
			return piece(b, w, 'x', 0);
		if (is_char(&pt))
			return piece(b, w, 's', PRETTY_STR_BOUND);
		if (top && is_aggregate(&pt)) {
			if ((ret = load_pointer(w, b->err, b->errsz)))
				return ret;
			w->t = pt;
			w->in_memory = true;
			return pretty_walk(b, w, depth, false);
		}
		return piece(b, w, 'x', 0);
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
	case DW_TAG_class_type: {
		bool first = true;
		if (!w->in_memory && !w->in_regs)
			return fail(b->err, b->errsz, -EINVAL, "a struct passed by value is not readable");
		if (depth > 0 && b->level < 2) {
			ptext(b, "{...}");
			return 0;
		}
		ptext(b, "{");
		if ((ret = pretty_members(b, w, depth, &first)))
			return ret;
		ptext(b, "}");
		return 0;
	}
	case DW_TAG_array_type: {
		uint64_t count = 0;
		Dwarf_Word esz;
		if (!w->in_memory && !w->in_regs)
			return fail(b->err, b->errsz, -EINVAL, "an array not in memory");
		if (!djp_dwarf_ref_attr(&w->t, DW_AT_type, &e) || !djp_dwarf_peel(&e, &e) ||
		    dwarf_aggregate_size(&e, &esz) != 0)
			return fail(b->err, b->errsz, -EINVAL, "an array whose elements have no size");
		djp_dwarf_array_count(&w->t, &count);
		if (is_char(&e))
			return piece(b, w, 's', (uint16_t)(count && count < PRETTY_STR_BOUND ? count : PRETTY_STR_BOUND));
		ptext(b, "[");
		for (uint64_t i = 0; i < count && i < PRETTY_ARRAY_MAX; i++) {
			struct walk el;
			wcopy(&el, w);
			el.raw = e;
			el.t = e;
			el.p->last += (int64_t)(i * esz);
			ptext(b, i ? ", " : "");
			if ((ret = pretty_walk(b, &el, depth + 1, false)))
				return ret;
		}
		ptext(b, count > PRETTY_ARRAY_MAX ? ", ...]" : "]");
		return 0;
	}
	case DW_TAG_enumeration_type:
		return piece(b, w, 'e', 0);
	case DW_TAG_base_type:
		if (!djp_dwarf_udata_attr(&w->t, DW_AT_encoding, &enc) || enc == DW_ATE_float ||
		    enc == DW_ATE_complex_float)
			return fail(b->err, b->errsz, -ENOTSUP, "a floating-point value");
		return piece(b, w, enc == DW_ATE_signed || enc == DW_ATE_signed_char ? 'd' : 'u', 0);
	default:
		return fail(b->err, b->errsz, -ENOTSUP, "a type djp cannot print");
	}
}

int djp_typed_pretty(struct djp_params_file *pf, uint64_t func_addr, const struct djp_typed_access *a, unsigned level,
		     struct djp_pretty *out, char *err, size_t errsz)
{
	struct djp_load_prog prog = { 0 };
	struct walk w = { .p = &prog };
	struct pbuild b = { .out = out, .level = level, .err = err, .errsz = errsz };
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = walk_access(pf, func_addr, a, &w, err, errsz)))
		return ret;
	if (w.p->bit_size) {
		ret = piece(&b, &w, w.p->is_signed ? 'd' : 'u', 0);
	} else {
		struct walk c;
		wcopy(&c, &w);
		ret = pretty_walk(&b, &c, 0, true);
	}
	if (!ret && !(out->tail = strdup(b.text)))
		ret = fail(err, errsz, -ENOMEM, "out of memory");
	if (!ret)
		out->tail_close = strlen(out->tail);
	for (unsigned i = 0; !ret && i < out->n; i++)
		if (djp_load_check(&out->v[i].prog))
			ret = fail(err, errsz, -EINVAL, "internal error: a bad load program");
	if (ret)
		djp_pretty_free(out);
	return ret;
}

void djp_pretty_free(struct djp_pretty *p)
{
	for (unsigned i = 0; i < p->n; i++) {
		for (unsigned k = 0; k < p->v[i].nenum; k++)
			free(p->v[i].enum_name[k]);
		free(p->v[i].enum_name);
		free(p->v[i].enum_val);
		free(p->v[i].text);
	}
	free(p->v);
	free(p->tail);
	memset(p, 0, sizeof(*p));
}
