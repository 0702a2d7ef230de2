/*
 * Types from DWARF, as the parameter reader (lib/func_params.c) and the
 * arch's calling convention (arch/x86/call_conv.c) read them: the DIE an
 * attribute refers to through abstract origins and specifications, the
 * type under typedefs and qualifiers, an array's element count, and the
 * spelling of a type.
 *
 * Types are spelled as SystemTap's -L spells them: qualifiers after what
 * they qualify ("char const*", "char* const"), typedefs by their names,
 * "struct foo", "struct {...}" for an anonymous one, base types as the
 * compiler names them ("long unsigned int"), and C declarator syntax where
 * it cannot be avoided ("int (*)(int, char const*)", "int (*)[4]").
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "lib/dwarf_types.h"

/* The DIE an attribute refers to (DW_AT_type, say), through abstract
 * origins and specifications. */
bool djp_dwarf_ref_attr(Dwarf_Die *die, unsigned name, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(die, name, &a) && dwarf_formref_die(&a, out);
}

/* An unsigned constant attribute (sizes, encodings, bounds), through
 * abstract origins. */
bool djp_dwarf_udata_attr(Dwarf_Die *die, unsigned name, Dwarf_Word *v)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(die, name, &a) && dwarf_formudata(&a, v) == 0;
}

/* The type under typedefs and qualifiers, which change neither how a
 * value is passed nor how it reads. */
bool djp_dwarf_peel(Dwarf_Die *type, Dwarf_Die *out)
{
	*out = *type;
	for (unsigned i = 0; i < 4 * DJP_DWARF_DEPTH_MAX; i++) {
		switch (dwarf_tag(out)) {
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_restrict_type:
		case DW_TAG_atomic_type:
			if (!djp_dwarf_ref_attr(out, DW_AT_type, out))
				return false; /* a qualified void: not a value */
			break;
		default:
			return true;
		}
	}
	return false;
}

/* The element count of an array type, over all its dimensions; false
 * when a dimension has no bound (a flexible array member). */
bool djp_dwarf_array_count(Dwarf_Die *arr, uint64_t *count)
{
	Dwarf_Die d;
	Dwarf_Word n, lower = 0;
	bool any = false;

	*count = 1;
	if (dwarf_child(arr, &d) != 0)
		return false;
	do {
		if (dwarf_tag(&d) != DW_TAG_subrange_type)
			continue;
		if (djp_dwarf_udata_attr(&d, DW_AT_count, &n)) {
		} else if (djp_dwarf_udata_attr(&d, DW_AT_upper_bound, &n)) {
			djp_dwarf_udata_attr(&d, DW_AT_lower_bound, &lower);
			if (n + 1 < lower)
				return false;
			n = n + 1 - lower;
		} else {
			return false;
		}
		*count *= n;
		any = true;
	} while (dwarf_siblingof(&d, &d) == 0);
	return any;
}

static void spell(Dwarf_Die *t, const char *decl, char *out, size_t sz, unsigned depth);

/* snprintf for spellings, which are cut at DJP_TYPE_MAX on purpose. */
static void put(char *out, size_t sz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void put(char *out, size_t sz, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(out, sz, fmt, ap);
	va_end(ap);
}

/* "(int, char const*)": a function type's parameter list. */
static void spell_params(Dwarf_Die *fn, char *out, size_t sz, unsigned depth)
{
	char one[DJP_TYPE_MAX];
	size_t k = (size_t)snprintf(out, sz, "(");
	bool any = false;
	Dwarf_Die d, t;

	if (dwarf_child(fn, &d) == 0) {
		do {
			int tag = dwarf_tag(&d);
			if (tag == DW_TAG_formal_parameter)
				spell(djp_dwarf_ref_attr(&d, DW_AT_type, &t) ? &t : NULL, "", one, sizeof(one), depth + 1);
			else if (tag == DW_TAG_unspecified_parameters)
				snprintf(one, sizeof(one), "...");
			else
				continue;
			if (k < sz)
				k += (size_t)snprintf(out + k, sz - k, "%s%s", any ? ", " : "", one);
			any = true;
		} while (dwarf_siblingof(&d, &d) == 0);
	}
	if (!any && dwarf_hasattr(fn, DW_AT_prototyped) && k < sz)
		k += (size_t)snprintf(out + k, sz - k, "void");
	if (k < sz)
		snprintf(out + k, sz - k, ")");
}

/*
 * The spelling of type t (NULL: void) around the declarator `decl` (what
 * the pointers, qualifiers and arrays above it have made so far), as a C
 * declaration without a name.  Qualifiers follow what they qualify, as
 * SystemTap writes them: const char * is "char const*".
 */
static void spell(Dwarf_Die *t, const char *decl, char *out, size_t sz, unsigned depth)
{
	char d2[DJP_TYPE_MAX], params[DJP_TYPE_MAX];
	const char *name, *kw = NULL, *suffix = NULL;
	Dwarf_Die sub, cls, *next;
	uint64_t n;

	if (!t) {
		put(out, sz, "void%s", decl);
		return;
	}
	if (depth > DJP_DWARF_DEPTH_MAX) {
		put(out, sz, "?%s", decl);
		return;
	}
	next = djp_dwarf_ref_attr(t, DW_AT_type, &sub) ? &sub : NULL;
	name = dwarf_diename(t);
	switch (dwarf_tag(t)) {
	case DW_TAG_pointer_type:
		suffix = "*";
		break;
	case DW_TAG_reference_type:
		suffix = "&";
		break;
	case DW_TAG_rvalue_reference_type:
		suffix = "&&";
		break;
	case DW_TAG_const_type:
		suffix = " const";
		break;
	case DW_TAG_volatile_type:
		suffix = " volatile";
		break;
	case DW_TAG_restrict_type:
		suffix = " restrict";
		break;
	case DW_TAG_atomic_type:
		suffix = " _Atomic";
		break;
	case DW_TAG_ptr_to_member_type:
		name = djp_dwarf_ref_attr(t, DW_AT_containing_type, &cls) ? dwarf_diename(&cls) : NULL;
		put(d2, sizeof(d2), " %s::*%s", name ? name : "?", decl);
		spell(next, d2, out, sz, depth + 1);
		return;
	case DW_TAG_structure_type:
		kw = "struct";
		break;
	case DW_TAG_class_type:
		kw = "class";
		break;
	case DW_TAG_union_type:
		kw = "union";
		break;
	case DW_TAG_enumeration_type:
		kw = "enum";
		break;
	case DW_TAG_array_type:
		if (djp_dwarf_array_count(t, &n))
			put(params, sizeof(params), "[%" PRIu64 "]", n);
		else
			put(params, sizeof(params), "[]");
		if (*decl)
			put(d2, sizeof(d2), "(%s)%s", decl, params);
		else
			put(d2, sizeof(d2), "%s", params);
		spell(next, d2, out, sz, depth + 1);
		return;
	case DW_TAG_subroutine_type:
		spell_params(t, params, sizeof(params), depth);
		if (*decl)
			put(d2, sizeof(d2), " (%s)%s", decl, params);
		else
			put(d2, sizeof(d2), " %s", params);
		spell(next, d2, out, sz, depth + 1);
		return;
	default: /* base types, typedefs: their names */
		put(out, sz, "%s%s", name ? name : "?", decl);
		return;
	}
	if (kw) {
		put(out, sz, "%s %s%s", kw, name ? name : "{...}", decl);
		return;
	}
	put(d2, sizeof(d2), "%s%s", suffix, decl);
	spell(next, d2, out, sz, depth + 1);
}

void djp_type_spell(Dwarf_Die *t, char *out, size_t sz)
{
	spell(t, "", out, sz, 0);
}
