/*
 * A function's parameters from DWARF, as argument locations at a probe
 * address.  lib/func_index.c finds the function, lib/dwarf_types.c reads
 * and spells the types, the arch's calling convention says where each
 * argument is at the entry (arch_entry_slots: arch/x86/call_conv.c), and
 * lib/param_locs.c reads the DWARF location anywhere else.
 *
 * The parameters.  A subprogram with DW_AT_abstract_origin is the concrete,
 * out-of-line copy of an inlined function or a clone: the declaration's
 * formal parameters, names and types are its abstract origin's, and each
 * parameter's location is the concrete copy's child that refers to it
 * (none: optimized out).  Names and types go through
 * dwarf_attr_integrate(), which follows abstract origins and C++
 * specifications.  DW_TAG_unspecified_parameters (the '...') is not a
 * parameter.  An unnamed parameter is called argN (N from 1).
 *
 * The calling convention is what the caller of the declared function
 * does; GCC's clones (.constprop, .isra, .part) have a signature of their
 * own, and LLVM marks a function it no longer calls by the convention with
 * DW_AT_calling_convention DW_CC_nocall.  A concrete copy is trusted to
 * keep its declaration's signature only when its parameter children are
 * the abstract origin's, in order, each with a location that does not
 * name a removed parameter (DW_OP_GNU_parameter_ref) and none replaced by
 * a constant (DW_AT_const_value).  Otherwise, and for DW_CC_nocall, the
 * DWARF location at the entry is used, which is exact for optimized code;
 * unoptimized code, whose DWARF names frame slots, is never a clone.
 * Two things the DWARF says overrule the calling convention at the entry
 * too, since clang does not mark the functions it does them to: a
 * parameter that is a constant for the whole function (DW_AT_const_value;
 * its callers no longer pass it) is that constant, and one with no
 * location anywhere in the function is optimized out (LLVM's
 * dead-argument elimination leaves an unused argument unset by the
 * callers it can see).  The register or slot stays the parameter's for
 * those after it.  GCC does neither outside its clones: it describes
 * every parameter it is passed, with an entry value at worst.
 *
 * Values.  Only integer-class scalars of 1, 2, 4 or 8 bytes can be
 * fetched: base integer, character and boolean types, enumerations (signed
 * when their underlying type is), pointers and references.  Floating-point
 * values, structures and unions, and values wider than 8 bytes are
 * reported unavailable with the reason, since a djp_argloc is one integer.
 *
 * Errors are one line, "PATH: problem", and -errno; nothing is returned
 * with an error.
 */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/errline.h"
#include "lib/func_params_int.h"

/*
 * A readable integer where the calling convention puts it, unless the
 * DWARF says the caller passes nothing there: a constant for the whole
 * function (clang folds an argument every caller passes the same into
 * its function and stops passing it), or no location anywhere in the
 * function (LLVM's dead-argument elimination leaves an unused argument
 * unset at the calls it can see).  GCC does neither outside its clones.
 */
static void abi_slot(struct pwork *w, unsigned kind, int reg, int64_t disp)
{
	Dwarf_Attribute a;

	if (w->has_conc && dwarf_attr(&w->conc, DW_AT_const_value, &a))
		djp_param_const_value(w, &a);
	else if (!w->has_conc || !dwarf_hasattr(&w->conc, DW_AT_location))
		djp_param_none(w, DJP_WHY_OPTIMIZED);
	else
		djp_param_loc(w, kind, reg, disp);
}

/* The locations at the entry, by the calling convention, where the
 * DWARF does not say the caller passes nothing (abi_slot).  `ret` is the
 * function's return type, or NULL for void; `clang` for code clang
 * compiled (see clang_unit()). */
static void entry_locations(struct pwork *w, unsigned n, Dwarf_Die *ret, bool cxx, bool clang)
{
	struct arch_param_slot s[DJP_PARAMS_MAX];

	for (unsigned i = 0; i < n; i++)
		s[i] = (struct arch_param_slot){ .ti = w[i].has_type ? &w[i].ti : NULL };
	arch_entry_slots(s, n, ret, cxx, clang);
	for (unsigned i = 0; i < n; i++) {
		if (s[i].kind == DJP_LOC_NONE)
			djp_param_none(&w[i], s[i].why);
		else
			abi_slot(&w[i], s[i].kind, s[i].reg, s[i].disp);
		w[i].agg = s[i].agg;
	}
}

/* ---- the parameters ---- */

/* The offset of the DIE a DIE's DW_AT_abstract_origin names, or 0. */
static Dwarf_Off origin_of(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Die o;
	if (!dwarf_attr(die, DW_AT_abstract_origin, &a) || !dwarf_formref_die(&a, &o))
		return 0;
	return dwarf_dieoffset(&o);
}

/* Does a location name a removed parameter anywhere in its range? */
static bool uses_parameter_ref(Dwarf_Attribute *a)
{
	Dwarf_Addr base, start, end;
	Dwarf_Op *ops;
	size_t n;
	ptrdiff_t off = 0;

	while ((off = dwarf_getlocations(a, off, &base, &start, &end, &ops, &n)) > 0)
		for (size_t i = 0; i < n; i++)
			if (ops[i].atom == DW_OP_GNU_parameter_ref)
				return true;
	return false;
}

/*
 * Does the caller pass this function's arguments as its declaration
 * says?  Not for DW_CC_nocall, nor for a concrete copy whose parameters
 * are not its abstract origin's, in order, each with a location of its
 * own (see the top of the file).
 */
static bool declared_convention(Dwarf_Die *sub, Dwarf_Die *origin, struct pwork *w, unsigned n)
{
	Dwarf_Attribute a;
	Dwarf_Word cc;
	Dwarf_Die d;
	unsigned k = 0;

	if (djp_dwarf_udata_attr(sub, DW_AT_calling_convention, &cc) && cc == DW_CC_nocall)
		return false;
	if (dwarf_dieoffset(sub) == dwarf_dieoffset(origin))
		return true;
	if (dwarf_child(sub, &d) == 0) {
		do {
			if (dwarf_tag(&d) != DW_TAG_formal_parameter)
				continue;
			if (k >= n || origin_of(&d) != dwarf_dieoffset(&w[k].decl) ||
			    dwarf_hasattr(&d, DW_AT_const_value) || !dwarf_attr(&d, DW_AT_location, &a) ||
			    uses_parameter_ref(&a))
				return false;
			k++;
		} while (dwarf_siblingof(&d, &d) == 0);
	}
	return k == n;
}

/* The declared parameters of the function (its abstract origin's, when
 * it has one that lists them), with their concrete counterparts. */
static unsigned collect(Dwarf_Die *sub, Dwarf_Die *origin, struct pwork *w)
{
	bool own = dwarf_dieoffset(sub) == dwarf_dieoffset(origin);
	unsigned n = 0;
	Dwarf_Die d;

	if (dwarf_child(origin, &d) == 0) {
		do {
			if (dwarf_tag(&d) == DW_TAG_formal_parameter && n < DJP_PARAMS_MAX) {
				memset(&w[n], 0, sizeof(w[n]));
				w[n].decl = d;
				if (own) {
					w[n].conc = d;
					w[n].has_conc = true;
				}
				n++;
			}
		} while (dwarf_siblingof(&d, &d) == 0);
	}
	if (own || dwarf_child(sub, &d) != 0)
		return n;
	do {
		Dwarf_Off o;
		if (dwarf_tag(&d) != DW_TAG_formal_parameter || !(o = origin_of(&d)))
			continue;
		for (unsigned i = 0; i < n; i++)
			if (dwarf_dieoffset(&w[i].decl) == o) {
				w[i].conc = d;
				w[i].has_conc = true;
			}
	} while (dwarf_siblingof(&d, &d) == 0);
	return n;
}

/* The named variables of scope (the function, then each lexical block
 * around pc, innermost last) after the n parameters: what stap calls the
 * locals.  A variable of an inlined callee is the callee's, not these. */
static unsigned collect_locals(Dwarf_Die *scope, uint64_t pc, struct pwork *w, unsigned n, unsigned depth)
{
	Dwarf_Die d, o;
	Dwarf_Attribute a;

	if (depth > DJP_DWARF_DEPTH_MAX || dwarf_child(scope, &d) != 0)
		return n;
	do {
		int tag = dwarf_tag(&d);
		if (tag == DW_TAG_variable && n < DJP_PARAMS_MAX) {
			bool art = false;
			const char *name;
			memset(&w[n], 0, sizeof(w[n]));
			w[n].decl = d;
			if (dwarf_attr(&d, DW_AT_abstract_origin, &a) && dwarf_formref_die(&a, &o))
				w[n].decl = o;
			if (dwarf_attr_integrate(&d, DW_AT_artificial, &a))
				dwarf_formflag(&a, &art);
			name = dwarf_diename(&w[n].decl);
			if (!name || !*name || art)
				continue;
			w[n].conc = d;
			w[n].has_conc = w[n].is_local = true;
			n++;
		} else if (tag == DW_TAG_lexical_block && dwarf_haspc(&d, pc) > 0) {
			n = collect_locals(&d, pc, w, n, depth + 1);
		}
	} while (dwarf_siblingof(&d, &d) == 0);
	return n;
}

/* The abstract origin of a concrete copy that lists the parameters (the
 * first such along a chain of origins); else sub itself. */
static void find_origin(Dwarf_Die *sub, Dwarf_Die *origin)
{
	Dwarf_Attribute a;
	Dwarf_Die cur = *sub, next, d;

	*origin = *sub;
	for (unsigned i = 0; i < DJP_DWARF_DEPTH_MAX && dwarf_attr(&cur, DW_AT_abstract_origin, &a) &&
			     dwarf_formref_die(&a, &next);
	     i++) {
		cur = next;
		if (dwarf_child(&cur, &d) != 0)
			continue;
		do {
			if (dwarf_tag(&d) == DW_TAG_formal_parameter) {
				*origin = cur;
				return;
			}
		} while (dwarf_siblingof(&d, &d) == 0);
	}
}

/* Names and types of the parameters collected. */
static void describe(struct pwork *w, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		w[i].name = dwarf_diename(&w[i].decl);
		if (!w[i].name || !*w[i].name) {
			snprintf(w[i].unnamed, sizeof(w[i].unnamed), "arg%u", i + 1);
			w[i].name = w[i].unnamed;
		}
		w[i].has_type = djp_dwarf_ref_attr(&w[i].decl, DW_AT_type, &w[i].type);
		djp_type_spell(w[i].has_type ? &w[i].type : NULL, w[i].type_name, sizeof(w[i].type_name));
		if (w[i].has_type)
			arch_type_info(&w[i].type, &w[i].ti);
	}
}

/* Did clang compile the unit?  Before LLVM 18 it passes a 128-bit integer
 * that does not fit in registers against the ABI: half in %r9 and half on
 * the stack when one register is left (the ABI puts it whole on the stack
 * and leaves %r9 to the next argument), and on the stack aligned to 8,
 * not 16.  What follows such an argument is not followed. */
static bool clang_unit(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Die cu;
	const char *s;
	return dwarf_diecu(die, &cu, NULL, NULL) && dwarf_attr(&cu, DW_AT_producer, &a) &&
	       (s = dwarf_formstring(&a)) && strstr(s, "clang");
}

/* Is the unit C++ (whose classes say how they are passed)? */
static bool is_cxx(Dwarf_Die *die)
{
	Dwarf_Die cu;
	int lang;
	if (!dwarf_diecu(die, &cu, NULL, NULL))
		return false;
	lang = dwarf_srclang(&cu);
	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 || lang == DW_LANG_C_plus_plus_11 ||
	       lang == DW_LANG_C_plus_plus_14 || lang == DW_LANG_ObjC_plus_plus;
}

/* How an integer or pointer of type ti prints: as C says (lib/format.h). */
static char type_conv(const struct djp_tinfo *ti)
{
	if (ti->kind != DJP_TK_INT)
		return 'x';
	switch (dwarf_tag((Dwarf_Die *)&ti->die)) {
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
	case DW_TAG_ptr_to_member_type:
	case DW_TAG_unspecified_type: /* decltype(nullptr) */
		return 'p';
	default:
		return ti->is_signed ? 'd' : 'u';
	}
}

/* The return value of sub, where the ABI puts it: one integer or pointer
 * in %rax. */
static void ret_info(Dwarf_Die *sub, bool cxx, struct djp_param_set *out)
{
	Dwarf_Die t;
	struct djp_tinfo ti;

	if (!djp_dwarf_ref_attr(sub, DW_AT_type, &t))
		return; /* void */
	arch_ret_agg(&t, cxx, &out->ret.agg);
	arch_type_info(&t, &ti);
	if (ti.kind != DJP_TK_INT || !ti.size || ti.size > 8)
		return;
	out->ret.size = (uint8_t)ti.size;
	out->ret.is_signed = ti.is_signed;
	out->ret.conv = type_conv(&ti);
}

/* Copy the names and types into storage the set owns. */
static int fill(struct djp_param_set *out, const struct pwork *w, unsigned n)
{
	size_t bytes = 0;
	char *s;

	for (unsigned i = 0; i < n; i++)
		bytes += strlen(w[i].name) + strlen(w[i].type_name) + 2;
	if (!(s = out->priv = malloc(bytes ? bytes : 1)))
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct djp_param *p = &out->v[i];
		size_t a = strlen(w[i].name) + 1, b = strlen(w[i].type_name) + 1;
		p->name = memcpy(s, w[i].name, a);
		p->type = memcpy(s + a, w[i].type_name, b);
		s += a + b;
		p->loc = w[i].loc;
		p->why = w[i].loc.kind == DJP_LOC_NONE ? w[i].why : NULL;
		p->is_local = w[i].is_local;
		p->conv = w[i].has_type ? type_conv(&w[i].ti) : 'x';
		p->agg = w[i].agg;
	}
	out->n = n;
	return 0;
}

/* Find the function, collect and describe its parameters (and, with
 * locals, the variables in scope at pc), then place them: by the calling
 * convention at a trusted entry, else by DWARF. */
static int params_get(struct djp_params_file *pf, uint64_t func_addr, uint64_t pc, bool locals,
		      struct djp_param_set *out, char *err, size_t errsz)
{
	struct dwarf_src *src;
	struct pwork *w;
	Dwarf_Die sub, origin, ret;
	unsigned n;
	bool cxx;
	int r;

	memset(out, 0, sizeof(*out));
	if (err && errsz)
		err[0] = 0;
	if ((r = djp_params_find(pf, func_addr, &sub, &src, err, errsz)))
		return r;
	if (pc != func_addr && dwarf_haspc(&sub, pc) <= 0)
		return djp_errline(err, errsz, -EINVAL, pf->path, "0x%" PRIx64 " is not inside the function at 0x%" PRIx64,
			       pc, func_addr);
	/* not calloc: 15 KiB zeroed for every function of a glob was a
	 * seventh of arming function("*"); collect() clears what it uses */
	if (!(w = malloc(DJP_PARAMS_MAX * sizeof(*w))))
		return djp_errline(err, errsz, -ENOMEM, pf->path, "out of memory");
	find_origin(&sub, &origin);
	n = collect(&sub, &origin, w);
	if (locals && pc != func_addr) /* at the entry nothing is set yet */
		n = collect_locals(&sub, pc, w, n, 0);
	describe(w, n);
	cxx = is_cxx(&sub);
	if (pc == func_addr && declared_convention(&sub, &origin, w, n)) {
		entry_locations(w, n, djp_dwarf_ref_attr(&sub, DW_AT_type, &ret) ? &ret : NULL, cxx, clang_unit(&sub));
	} else {
		struct djp_loc_ctx c = { pf, src, &sub, func_addr, pc };
		for (unsigned i = 0; i < n; i++)
			djp_param_dwarf_location(&c, &w[i]);
	}
	r = fill(out, w, n);
	if (!r)
		ret_info(&sub, cxx, out);
	free(w);
	if (r)
		return djp_errline(err, errsz, r, pf->path, "out of memory");
	return 0;
}

int djp_params_get(struct djp_params_file *pf, uint64_t func_addr, uint64_t pc, struct djp_param_set *out, char *err,
		   size_t errsz)
{
	return params_get(pf, func_addr, pc, false, out, err, errsz);
}

int djp_params_get_vars(struct djp_params_file *pf, uint64_t func_addr, uint64_t pc, struct djp_param_set *out,
			char *err, size_t errsz)
{
	return params_get(pf, func_addr, pc, true, out, err, errsz);
}

/* The strings; the set is the caller's. */
void djp_params_free(struct djp_param_set *s)
{
	if (!s)
		return;
	free(s->priv);
	s->priv = NULL;
	s->n = 0;
}

/* One function: open, get, close. */
int djp_params_read(const char *path, uint64_t func_addr, uint64_t pc, struct djp_param_set *out, char *err,
		    size_t errsz)
{
	struct djp_params_file *pf;
	int ret;

	memset(out, 0, sizeof(*out));
	if ((ret = djp_params_open(path, &pf, err, errsz)))
		return ret;
	ret = djp_params_get(pf, func_addr, pc, out, err, errsz);
	djp_params_close(pf);
	return ret;
}
