/*
 * A function's parameters from DWARF, as argument locations at a probe
 * address.
 *
 * Finding the function.  The unit that covers the entry address is found
 * with dwarf_addrdie() (.debug_aranges), else by asking each unit for its
 * ranges (clang emits no aranges by default).  The first time a unit is
 * asked for, its DW_TAG_subprogram entries that have code are indexed by
 * entry address (DW_AT_entry_pc or DW_AT_low_pc, else the first of
 * DW_AT_ranges), walking into namespaces, lexical blocks and functions
 * (GNU C nested functions) but not into inlined instances, which are not
 * functions one can call; the index is kept with the open file, so that
 * listing every function of a program walks each unit once.  The object's
 * own DWARF is asked first, then its separate debug file's, found by
 * lib/elf_debug.c, which checks its build-id.
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
 * Types are spelled as SystemTap's -L spells them: qualifiers after what
 * they qualify ("char const*", "char* const"), typedefs by their names,
 * "struct foo", "struct {...}" for an anonymous one, base types as the
 * compiler names them ("long unsigned int"), and C declarator syntax where
 * it cannot be avoided ("int (*)(int, char const*)", "int (*)[4]").
 *
 * At the entry.  The calling convention is followed: each parameter's type
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
 * Elsewhere.  The DWARF location at pc (dwarf_getlocation_addr, so that
 * location lists count), of which these forms are one struct djp_argloc:
 * DW_OP_regN/regx (register), DW_OP_bregN/bregx (memory at a register
 * plus offset), DW_OP_fbreg (the same, once the frame base is: a register,
 * a register plus offset, or DW_OP_call_frame_cfa, whose rule at pc the
 * call-frame information gives, .eh_frame first, then .debug_frame; a
 * rule other than register plus offset is too complex), DW_OP_addr
 * (memory at a link-time address), a constant with DW_OP_stack_value, or
 * DW_OP_bregN 0 with DW_OP_stack_value (the register's value), each
 * optionally followed by one DW_OP_piece that covers the whole value.  At
 * the entry itself DW_OP_entry_value of a register is that register.
 * DW_AT_const_value is a constant.  The rest is "location too complex".
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
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/errline.h"
#include "lib/elf_debug.h"
#include "lib/func_params.h"

/* Reasons for an unavailable value (struct djp_param's why). */
#define WHY_OPTIMIZED "optimized out"
#define WHY_NOLOC "no location at this address"
#define WHY_COMPLEX "location too complex"
#define WHY_VECTOR "passed in a vector register"
#define WHY_FLOAT "floating-point value"
#define WHY_WIDE "wider than 8 bytes"
#define WHY_STRUCT "struct passed by value"
#define WHY_AFTER_STRUCT "after a struct passed by value"
#define WHY_AFTER_MEM "after a parameter passed by value in memory"
#define WHY_TYPE "type not supported"
#define WHY_AFTER_TYPE "after a parameter of an unsupported type"
#define WHY_RET "return type of unknown convention"
#define WHY_NOTYPE "no type information"
#define WHY_AFTER_INT128 "after a 128-bit integer the compiler passes against the ABI"

#define TYPE_MAX 256	/* longest type spelling kept; longer ones are cut */
#define DEPTH_MAX 16	/* nesting of types and scopes followed */

/* A function of a unit: its entry address and its DIE's offset. */
struct fn_entry {
	uint64_t addr;
	Dwarf_Off off;
};

/* The functions of one unit, sorted by address. */
struct cu_index {
	Dwarf_Off cu;
	struct fn_entry *v;
	size_t n;
};

/* One DWARF: the object's own or its separate debug file's, with the
 * index of every unit asked for so far, sorted by unit offset. */
struct dwarf_src {
	Dwarf *dw;
	struct cu_index *cus;
	size_t ncus, cap;
};

/* An open object: its file, its DWARF and its debug file's, their
 * indexes, and its .eh_frame, each opened when first needed. */
struct djp_params_file {
	char *path;
	int fd, dbg_fd;
	Elf *elf, *dbg_elf;
	struct dwarf_src own, dbg;
	bool dbg_looked, eh_looked;
	Dwarf_CFI *eh_frame; /* the object's .eh_frame */
};


/* ---- the files ---- */

/* Open the object and check that it is a 64-bit x86-64 ELF file: the
 * registers and the calling convention here are that machine's. */
static int open_object(struct djp_params_file *pf, char *err, size_t errsz)
{
	return djp_elf_open(pf->path, &pf->fd, &pf->elf, NULL, err, errsz);
}

/* Keep `cand` as the debug file when it is a regular ELF file with the
 * object's build-id (id, n) and DWARF (lib/elf_debug.c's callback). */
static bool try_debug_file(void *ctx, const char *cand, const void *id, size_t n)
{
	struct djp_params_file *pf = ctx;
	const void *id2;
	Elf *elf;
	Dwarf *dw;
	int fd;

	if (djp_elf_open(cand, &fd, &elf, NULL, NULL, 0))
		return false;
	if (djp_elf_build_id(elf, &id2) == n && !memcmp(id, id2, n) && (dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL))) {
		pf->dbg_fd = fd;
		pf->dbg_elf = elf;
		pf->dbg.dw = dw;
		return true;
	}
	elf_end(elf);
	close(fd);
	return false;
}

/* The separate debug file's DWARF, looked for once, when first needed. */
static Dwarf *debug_dwarf(struct djp_params_file *pf)
{
	size_t shstrndx;

	if (!pf->dbg_looked) {
		pf->dbg_looked = true;
		if (!elf_getshdrstrndx(pf->elf, &shstrndx))
			djp_elf_debug_file(pf->elf, shstrndx, pf->path, try_debug_file, pf);
	}
	return pf->dbg.dw;
}

/* A DWARF and the unit indexes built on it. */
static void free_src(struct dwarf_src *s)
{
	for (size_t i = 0; i < s->ncus; i++)
		free(s->cus[i].v);
	free(s->cus);
	if (s->dw)
		dwarf_end(s->dw);
}

/* Everything the handle holds, in the reverse order of opening. */
void djp_params_close(struct djp_params_file *pf)
{
	if (!pf)
		return;
	if (pf->eh_frame)
		dwarf_cfi_end(pf->eh_frame);
	free_src(&pf->own);
	free_src(&pf->dbg);
	if (pf->dbg_elf)
		elf_end(pf->dbg_elf);
	if (pf->dbg_fd >= 0)
		close(pf->dbg_fd);
	if (pf->elf)
		elf_end(pf->elf);
	if (pf->fd >= 0)
		close(pf->fd);
	free(pf->path);
	free(pf);
}

/* The object and its DWARF; the debug file only when the object has
 * none, else later, when a function is not in the object's own. */
int djp_params_open(const char *path, struct djp_params_file **out, char *err, size_t errsz)
{
	struct djp_params_file *pf;
	int ret;

	*out = NULL;
	if (err && errsz)
		err[0] = 0;
	if (!(pf = calloc(1, sizeof(*pf))) || !(pf->path = strdup(path))) {
		free(pf);
		return djp_errline(err, errsz, -ENOMEM, path, "out of memory");
	}
	pf->fd = pf->dbg_fd = -1;
	if ((ret = open_object(pf, err, errsz)))
		goto fail;
	pf->own.dw = dwarf_begin_elf(pf->elf, DWARF_C_READ, NULL);
	if (!pf->own.dw && !debug_dwarf(pf)) {
		ret = djp_errline(err, errsz, -ENODATA, path, "no debug information");
		goto fail;
	}
	*out = pf;
	return 0;
fail:
	djp_params_close(pf);
	return ret;
}

/* ---- finding the function ---- */


/* The entry address of a subprogram that has code: its entry_pc or
 * low_pc, else the start of its first range (GCC lists a function split
 * into hot and cold parts hot part first). */
static bool entry_of(Dwarf_Die *sub, uint64_t *addr)
{
	Dwarf_Addr a, base, end;

	if (dwarf_hasattr(sub, DW_AT_declaration))
		return false;
	if (dwarf_entrypc(sub, &a) == 0) {
		*addr = a;
		return true;
	}
	if (dwarf_ranges(sub, 0, &base, &a, &end) > 0) {
		*addr = a;
		return true;
	}
	return false;
}

/* Append one function to a unit's index, growing it by doubling. */
static int add_fn(struct cu_index *ci, size_t *cap, uint64_t addr, Dwarf_Off off)
{
	if (ci->n == *cap) {
		size_t c = *cap ? 2 * *cap : 64;
		struct fn_entry *v = realloc(ci->v, c * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ci->v = v;
		*cap = c;
	}
	ci->v[ci->n++] = (struct fn_entry){ addr, off };
	return 0;
}

/* Every subprogram with code under parent (see the top of the file). */
static int index_dies(Dwarf_Die *parent, struct cu_index *ci, size_t *cap, unsigned depth)
{
	Dwarf_Die d;
	uint64_t a;

	if (depth > 4 * DEPTH_MAX || dwarf_child(parent, &d) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&d);
		if (tag == DW_TAG_subprogram && entry_of(&d, &a) && add_fn(ci, cap, a, dwarf_dieoffset(&d)))
			return -ENOMEM;
		if ((tag == DW_TAG_subprogram || tag == DW_TAG_namespace || tag == DW_TAG_module ||
		     tag == DW_TAG_lexical_block) &&
		    index_dies(&d, ci, cap, depth + 1))
			return -ENOMEM;
	} while (dwarf_siblingof(&d, &d) == 0);
	return 0;
}

/* By address, then by DIE offset, so that a lookup finds the first of
 * several entries at one address (the earlier DIE) every time. */
static int fn_cmp(const void *a, const void *b)
{
	const struct fn_entry *x = a, *y = b;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* The index of the unit cudie, built the first time; NULL: no memory. */
static struct cu_index *unit_index(struct dwarf_src *s, Dwarf_Die *cudie)
{
	Dwarf_Off cu = dwarf_dieoffset(cudie);
	size_t lo = 0, hi = s->ncus, cap = 0;
	struct cu_index ci = { .cu = cu };

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->cus[mid].cu == cu)
			return &s->cus[mid];
		if (s->cus[mid].cu < cu)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (s->ncus == s->cap) {
		size_t c = s->cap ? 2 * s->cap : 16;
		struct cu_index *v = realloc(s->cus, c * sizeof(*v));
		if (!v)
			return NULL;
		s->cus = v;
		s->cap = c;
	}
	if (index_dies(cudie, &ci, &cap, 0)) {
		free(ci.v);
		return NULL;
	}
	qsort(ci.v, ci.n, sizeof(*ci.v), fn_cmp);
	memmove(&s->cus[lo + 1], &s->cus[lo], (s->ncus - lo) * sizeof(*s->cus));
	s->cus[lo] = ci;
	s->ncus++;
	return &s->cus[lo];
}

/* The subprogram whose entry is addr in one DWARF: 0; -ENODATA when no
 * unit covers addr; -ENOENT; -ENOMEM. */
static int find_in(struct dwarf_src *s, uint64_t addr, Dwarf_Die *sub)
{
	struct cu_index *ci;
	Dwarf_Die cudie;
	size_t lo = 0, hi;

	if (!s->dw || !djp_dwarf_cu_at(s->dw, addr, &cudie))
		return -ENODATA;
	if (!(ci = unit_index(s, &cudie)))
		return -ENOMEM;
	hi = ci->n;
	while (lo < hi) { /* the first entry at or above addr */
		size_t mid = lo + (hi - lo) / 2;
		if (ci->v[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ci->n && ci->v[lo].addr == addr && dwarf_offdie(s->dw, ci->v[lo].off, sub))
		return 0;
	return -ENOENT;
}

/* The subprogram at addr, in the object's DWARF, else in its debug
 * file's; *src is the DWARF it was found in. */
static int find_function(struct djp_params_file *pf, uint64_t addr, Dwarf_Die *sub, struct dwarf_src **src,
			 char *err, size_t errsz)
{
	int ret = find_in(&pf->own, addr, sub);

	*src = &pf->own;
	if (ret == -ENODATA && debug_dwarf(pf)) {
		ret = find_in(&pf->dbg, addr, sub);
		*src = &pf->dbg;
	}
	if (ret == -ENODATA)
		return djp_errline(err, errsz, ret, pf->path, "no debug information for the function at 0x%" PRIx64, addr);
	if (ret == -ENOENT)
		return djp_errline(err, errsz, ret, pf->path, "no DWARF entry for the function at 0x%" PRIx64, addr);
	if (ret)
		return djp_errline(err, errsz, ret, pf->path, "out of memory");
	return 0;
}

/* ---- types ---- */

/* The DIE an attribute refers to (DW_AT_type, say), through abstract
 * origins and specifications. */
static bool ref_attr(Dwarf_Die *die, unsigned name, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(die, name, &a) && dwarf_formref_die(&a, out);
}

/* An unsigned constant attribute (sizes, encodings, bounds), through
 * abstract origins. */
static bool udata_attr(Dwarf_Die *die, unsigned name, Dwarf_Word *v)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(die, name, &a) && dwarf_formudata(&a, v) == 0;
}

/* The type under typedefs and qualifiers, which change neither how a
 * value is passed nor how it reads. */
static bool peel(Dwarf_Die *type, Dwarf_Die *out)
{
	*out = *type;
	for (unsigned i = 0; i < 4 * DEPTH_MAX; i++) {
		switch (dwarf_tag(out)) {
		case DW_TAG_typedef:
		case DW_TAG_const_type:
		case DW_TAG_volatile_type:
		case DW_TAG_restrict_type:
		case DW_TAG_atomic_type:
			if (!ref_attr(out, DW_AT_type, out))
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
static bool array_count(Dwarf_Die *arr, uint64_t *count)
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
		if (udata_attr(&d, DW_AT_count, &n)) {
		} else if (udata_attr(&d, DW_AT_upper_bound, &n)) {
			udata_attr(&d, DW_AT_lower_bound, &lower);
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

/* snprintf for spellings, which are cut at TYPE_MAX on purpose. */
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
	char one[TYPE_MAX];
	size_t k = (size_t)snprintf(out, sz, "(");
	bool any = false;
	Dwarf_Die d, t;

	if (dwarf_child(fn, &d) == 0) {
		do {
			int tag = dwarf_tag(&d);
			if (tag == DW_TAG_formal_parameter)
				spell(ref_attr(&d, DW_AT_type, &t) ? &t : NULL, "", one, sizeof(one), depth + 1);
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
	char d2[TYPE_MAX], params[TYPE_MAX];
	const char *name, *kw = NULL, *suffix = NULL;
	Dwarf_Die sub, cls, *next;
	uint64_t n;

	if (!t) {
		put(out, sz, "void%s", decl);
		return;
	}
	if (depth > DEPTH_MAX) {
		put(out, sz, "?%s", decl);
		return;
	}
	next = ref_attr(t, DW_AT_type, &sub) ? &sub : NULL;
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
		name = ref_attr(t, DW_AT_containing_type, &cls) ? dwarf_diename(&cls) : NULL;
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
		if (array_count(t, &n))
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

/* ---- classification (System V x86-64 ABI, 3.2.3) ---- */

/* What a (peeled) type is, for passing and for reading. */
enum tkind {
	TK_UNKNOWN,
	TK_INT,	    /* INTEGER, 1-8 bytes: readable */
	TK_INT2,    /* INTEGER INTEGER: __int128, a pointer to member function */
	TK_SSE,	    /* SSE: float, double, _Float16, _Complex float, 8-byte vectors */
	TK_SSE_UP,  /* SSE SSEUP: __float128, _Decimal128, 16-byte vectors */
	TK_SSE_SSE, /* SSE SSE: _Complex double */
	TK_X87,	    /* X87 X87UP: long double */
	TK_CX87,    /* COMPLEX_X87: _Complex long double */
	TK_AGG,	    /* structure, union, class */
};

struct tinfo {
	enum tkind kind;
	uint64_t size, align;
	bool is_signed;
	Dwarf_Die die; /* the peeled type */
};

/* Is a 16-byte float x87's extended precision (long double), not IEEE
 * binary128?  Only the names tell. */
static bool is_x87_name(const char *name)
{
	return name && (strstr(name, "long double") || strstr(name, "_Float64x"));
}

/* A base type by its encoding and size (ti->size already set). */
static void base_info(Dwarf_Die *t, struct tinfo *ti)
{
	Dwarf_Word enc = 0;
	const char *name = dwarf_diename(t);
	uint64_t z = ti->size;

	udata_attr(t, DW_AT_encoding, &enc);
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
			ti->kind = TK_INT;
		else if (z == 16)
			ti->kind = TK_INT2;
		break;
	case DW_ATE_float:
	case DW_ATE_decimal_float:
		if (z == 2 || z == 4 || z == 8)
			ti->kind = TK_SSE;
		else if (z == 16)
			ti->kind = enc == DW_ATE_float && is_x87_name(name) ? TK_X87 : TK_SSE_UP;
		break;
	case DW_ATE_complex_float:
		ti->align = z / 2;
		if (z == 4 || z == 8)
			ti->kind = TK_SSE;
		else if (z == 16)
			ti->kind = TK_SSE_SSE;
		else if (z == 32 && is_x87_name(name))
			ti->kind = TK_CX87;
		break;
	}
}

/* Classify type (raw: typedefs and qualifiers are peeled here). */
static void type_info(Dwarf_Die *raw, struct tinfo *ti)
{
	Dwarf_Word z = 0;
	Dwarf_Die t, sub, peeled;
	uint64_t n;

	memset(ti, 0, sizeof(*ti));
	if (!peel(raw, &t))
		return;
	ti->die = t;
	if (udata_attr(&t, DW_AT_byte_size, &z))
		ti->size = z;
	switch (dwarf_tag(&t)) {
	case DW_TAG_base_type:
		base_info(&t, ti);
		break;
	case DW_TAG_pointer_type:
	case DW_TAG_reference_type:
	case DW_TAG_rvalue_reference_type:
		ti->size = ti->align = 8;
		ti->kind = TK_INT;
		break;
	case DW_TAG_ptr_to_member_type:
		/* to a member function: {function, adjustment} */
		if (ref_attr(&t, DW_AT_type, &sub) && peel(&sub, &peeled) &&
		    dwarf_tag(&peeled) == DW_TAG_subroutine_type) {
			ti->size = 16;
			ti->kind = TK_INT2;
		} else {
			ti->size = 8;
			ti->kind = TK_INT;
		}
		ti->align = 8;
		break;
	case DW_TAG_enumeration_type:
		if (z == 1 || z == 2 || z == 4 || z == 8) {
			ti->kind = TK_INT;
			ti->align = z;
			if (ref_attr(&t, DW_AT_type, &sub) && peel(&sub, &peeled) &&
			    dwarf_tag(&peeled) == DW_TAG_base_type) {
				struct tinfo u = { .size = z };
				base_info(&peeled, &u);
				ti->is_signed = u.is_signed;
			}
		}
		break;
	case DW_TAG_unspecified_type: /* C++'s decltype(nullptr) */
		if (dwarf_diename(&t) && !strcmp(dwarf_diename(&t), "decltype(nullptr)")) {
			ti->size = ti->align = 8;
			ti->kind = TK_INT;
		}
		break;
	case DW_TAG_array_type:
		/* only a vector is passed as a value */
		if (!dwarf_hasattr(&t, DW_AT_GNU_vector))
			break;
		if (!z && ref_attr(&t, DW_AT_type, &sub) && udata_attr(&sub, DW_AT_byte_size, &z) &&
		    array_count(&t, &n))
			ti->size = z * n;
		ti->align = ti->size;
		if (ti->size == 8)
			ti->kind = TK_SSE;
		else if (ti->size == 16)
			ti->kind = TK_SSE_UP;
		break;
	case DW_TAG_structure_type:
	case DW_TAG_class_type:
	case DW_TAG_union_type:
		if (z && !dwarf_hasattr(&t, DW_AT_declaration))
			ti->kind = TK_AGG;
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
static void agg_scalar(const struct tinfo *ti, uint64_t at, struct agg *g)
{
	if (ti->align > g->align)
		g->align = ti->align;
	if (ti->align && at % ti->align) {
		g->memory = true; /* a misaligned member */
		return;
	}
	switch (ti->kind) {
	case TK_INT:
		put_class(g, at, CL_INTEGER);
		break;
	case TK_INT2:
		put_class(g, at, CL_INTEGER);
		put_class(g, at + 8, CL_INTEGER);
		break;
	case TK_SSE:
		put_class(g, at, CL_SSE);
		break;
	case TK_SSE_UP:
		put_class(g, at, CL_SSE);
		put_class(g, at + 8, CL_SSEUP);
		break;
	case TK_SSE_SSE:
		put_class(g, at, CL_SSE);
		put_class(g, at + 8, CL_SSE);
		break;
	case TK_X87:
		put_class(g, at, CL_X87);
		put_class(g, at + 8, CL_X87UP);
		break;
	case TK_CX87:
		g->memory = true;
		break;
	default:
		g->unknown = true;
	}
}

/* A member of type ti (an aggregate, an array or a scalar) at byte `at`. */
static void agg_member(Dwarf_Die *type, uint64_t at, struct agg *g, unsigned depth)
{
	struct tinfo ti;
	Dwarf_Die t, elem;
	uint64_t count;

	if (!peel(type, &t)) {
		g->unknown = true;
		return;
	}
	if (dwarf_tag(&t) == DW_TAG_array_type && !dwarf_hasattr(&t, DW_AT_GNU_vector)) {
		/* a flexible array member takes no room and is not passed */
		if (!array_count(&t, &count) || !count)
			return;
		if (!ref_attr(&t, DW_AT_type, &elem)) {
			g->unknown = true;
			return;
		}
		type_info(&elem, &ti);
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
	type_info(&t, &ti);
	if (ti.kind == TK_AGG)
		agg_walk(&ti.die, at, g, depth + 1);
	else
		agg_scalar(&ti, at, g);
}

/* A bit-field of `bits` bits at bit `bit`: INTEGER where it lies. */
static void agg_bitfield(Dwarf_Die *type, uint64_t bit, uint64_t bits, struct agg *g)
{
	struct tinfo ti;

	type_info(type, &ti);
	if (ti.kind != TK_INT) {
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

	if (depth > DEPTH_MAX) {
		g->unknown = true;
		return;
	}
	if (udata_attr(t, DW_AT_alignment, &align) && align > g->align)
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
		if (!ref_attr(&m, DW_AT_type, &type) || !member_offset(&m, &off)) {
			g->unknown = true;
			return;
		}
		if (udata_attr(&m, DW_AT_bit_size, &bits)) {
			if (udata_attr(&m, DW_AT_data_bit_offset, &bitoff)) {
			} else if (udata_attr(&m, DW_AT_bit_offset, &bitoff) && udata_attr(&m, DW_AT_byte_size, &storage) &&
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
};

static bool cxx_trivial(Dwarf_Die *cls, unsigned depth);

/* Is a member or base of this type trivial for calls (a class checked as
 * its own, anything else trivially)? */
static bool cxx_trivial_type(Dwarf_Die *type, unsigned depth)
{
	Dwarf_Die t;

	if (!peel(type, &t))
		return false;
	while (dwarf_tag(&t) == DW_TAG_array_type) {
		Dwarf_Die elem;
		if (!ref_attr(&t, DW_AT_type, &elem) || !peel(&elem, &t))
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
		if (++n == 1 && ref_attr(&d, DW_AT_type, &t) && peel(&t, &t) &&
		    (dwarf_tag(&t) == DW_TAG_reference_type || dwarf_tag(&t) == DW_TAG_rvalue_reference_type) &&
		    ref_attr(&t, DW_AT_type, &u) && peel(&u, &u))
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
	return udata_attr(fn, DW_AT_defaulted, &v) && v == DW_DEFAULTED_in_class && !dwarf_hasattr(fn, DW_AT_deleted);
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

	if (depth > DEPTH_MAX)
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
			if (!ref_attr(&d, DW_AT_type, &t) || !cxx_trivial_type(&t, depth))
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
	if (udata_attr(t, DW_AT_calling_convention, &cc))
		return (int)cc;
	if (!cxx || cxx_trivial(t, 0))
		return DW_CC_pass_by_value;
	return -1;
}

/* An aggregate's passing: the post-merge rules; `ret` for a return value,
 * where X87 classes stay in x87 registers. */
static void classify_agg(struct tinfo *ti, bool cxx, bool ret, struct pass *p)
{
	struct agg g = { .align = 1 };
	unsigned n = (unsigned)((ti->size + 7) / 8);
	int cc = cxx_convention(&ti->die, cxx);

	if (cc == DW_CC_pass_by_reference) {
		*p = (struct pass){ ret ? PASS_MEM : PASS_REGS, 1, 0, 8, 8, true };
		return;
	}
	if (cc != DW_CC_pass_by_value)
		return;
	agg_walk(&ti->die, 0, &g, 0);
	if (g.unknown)
		return;
	*p = (struct pass){ PASS_MEM, 0, 0, ti->size, g.align, g.align <= 8 };
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
	}
	p->how = PASS_REGS;
}

/* How a value of type ti is passed (ret: returned). */
static void classify(struct tinfo *ti, bool cxx, bool ret, struct pass *p)
{
	memset(p, 0, sizeof(*p));
	p->size = ti->size;
	p->align = ti->align;
	p->align_sure = true;
	switch (ti->kind) {
	case TK_INT:
		p->how = PASS_REGS;
		p->ngpr = 1;
		break;
	case TK_INT2:
		p->how = PASS_REGS;
		p->ngpr = 2;
		break;
	case TK_SSE:
	case TK_SSE_UP:
		p->how = PASS_REGS;
		p->nsse = 1;
		break;
	case TK_SSE_SSE:
		p->how = PASS_REGS;
		p->nsse = 2;
		break;
	case TK_X87:
	case TK_CX87:
		p->how = ret ? PASS_REGS : PASS_MEM; /* returned in %st0 (and %st1) */
		break;
	case TK_AGG:
		classify_agg(ti, cxx, ret, p);
		break;
	default:
		p->how = PASS_UNKNOWN;
	}
}

/* ---- locations ---- */

/* DWARF's register numbers 0-15, in the register view's order. */
static const int8_t dwarf_regs[16] = {
	DJP_REG_RAX, DJP_REG_RDX, DJP_REG_RCX, DJP_REG_RBX, DJP_REG_RSI, DJP_REG_RDI, DJP_REG_RBP, DJP_REG_RSP,
	DJP_REG_R8,  DJP_REG_R9,  DJP_REG_R10, DJP_REG_R11, DJP_REG_R12, DJP_REG_R13, DJP_REG_R14, DJP_REG_R15,
};

/* The registers INTEGER arguments take, in order. */
static const int8_t arg_regs[6] = { DJP_REG_RDI, DJP_REG_RSI, DJP_REG_RDX, DJP_REG_RCX, DJP_REG_R8, DJP_REG_R9 };

/* A DWARF register number as the register view's, or DJP_REG_NONE. */
static int map_reg(Dwarf_Word dwarf)
{
	return dwarf < 16 ? dwarf_regs[dwarf] : DJP_REG_NONE;
}

/* DWARF's vector registers %xmm0-%xmm15. */
static bool is_xmm(Dwarf_Word dwarf)
{
	return dwarf >= 17 && dwarf <= 32;
}

/* The register of DW_OP_regN or DW_OP_regx (the value is in it), or -1. */
static Dwarf_Word reg_op(const Dwarf_Op *op)
{
	if (op->atom >= DW_OP_reg0 && op->atom <= DW_OP_reg31)
		return op->atom - DW_OP_reg0;
	if (op->atom == DW_OP_regx)
		return op->number;
	return (Dwarf_Word)-1;
}

/* One parameter while it is worked out. */
struct pwork {
	Dwarf_Die decl; /* its formal_parameter in the declaration */
	Dwarf_Die conc; /* the concrete copy's, for the location */
	bool has_conc, has_type;
	bool is_local; /* a variable of a block around the address, not a parameter */
	Dwarf_Die type;
	struct tinfo ti;
	const char *name; /* libdw's, or argN in `unnamed` */
	char unnamed[16];
	char type_name[TYPE_MAX];
	struct djp_argloc loc;
	const char *why;
};

/* Unavailable, for a static reason. */
static void loc_none(struct pwork *w, const char *why)
{
	memset(&w->loc, 0, sizeof(w->loc));
	w->loc.kind = DJP_LOC_NONE;
	w->loc.reg = w->loc.index = DJP_REG_NONE;
	w->why = why;
}

/* A location of kind `kind` with the value's size and signedness. */
static void loc_set(struct pwork *w, unsigned kind, int reg, int64_t disp)
{
	memset(&w->loc, 0, sizeof(w->loc));
	w->loc.kind = (uint8_t)kind;
	w->loc.size = (uint8_t)w->ti.size;
	w->loc.is_signed = w->ti.is_signed;
	w->loc.reg = (int8_t)reg;
	w->loc.index = DJP_REG_NONE;
	w->loc.scale = 1;
	w->loc.disp = disp;
	w->why = NULL;
}

/* A constant as the parameter's type reads it: its low bytes, extended. */
static int64_t as_value(const struct tinfo *ti, uint64_t v)
{
	unsigned sh;
	if (!ti->size || ti->size >= 8)
		return (int64_t)v;
	sh = 64 - 8 * (unsigned)ti->size;
	return ti->is_signed ? (int64_t)(v << sh) >> sh : (int64_t)((v << sh) >> sh);
}

/* Why a value that is not a readable integer is unavailable. */
static const char *why_not_int(const struct tinfo *ti, bool in_vector)
{
	switch (ti->kind) {
	case TK_INT2:
		return WHY_WIDE;
	case TK_SSE:
	case TK_SSE_UP:
	case TK_SSE_SSE:
		return in_vector ? WHY_VECTOR : WHY_FLOAT;
	case TK_X87:
	case TK_CX87:
		return WHY_FLOAT;
	case TK_AGG:
		return WHY_STRUCT;
	default:
		return WHY_TYPE;
	}
}

static void from_const_value(struct pwork *w, Dwarf_Attribute *a);

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
		from_const_value(w, &a);
	else if (!w->has_conc || !dwarf_hasattr(&w->conc, DW_AT_location))
		loc_none(w, WHY_OPTIMIZED);
	else
		loc_set(w, kind, reg, disp);
}

/* The locations at the entry, by the calling convention (see the top of
 * the file).  `ret` is the function's return type, or NULL for void;
 * `clang` for code clang compiled (see clang_unit()). */
static void entry_locations(struct pwork *w, unsigned n, Dwarf_Die *ret, bool cxx, bool clang)
{
	const char *after = NULL; /* every later parameter's reason, once lost */
	bool stack_lost = false;
	unsigned gpr = 0, sse = 0;
	uint64_t stack = 0;
	struct tinfo ti;
	struct pass p;

	if (ret) {
		type_info(ret, &ti);
		classify(&ti, cxx, true, &p);
		if (p.how == PASS_UNKNOWN)
			after = WHY_RET;
		else if (p.how == PASS_MEM)
			gpr = 1; /* the hidden pointer to the caller's space for it */
	}
	for (unsigned i = 0; i < n; i++) {
		if (after) {
			loc_none(&w[i], after);
			continue;
		}
		if (!w[i].has_type) {
			loc_none(&w[i], WHY_NOTYPE);
			after = WHY_AFTER_TYPE;
			continue;
		}
		classify(&w[i].ti, cxx, false, &p);
		if (p.how == PASS_UNKNOWN) {
			bool agg = w[i].ti.kind == TK_AGG;
			loc_none(&w[i], agg ? WHY_STRUCT : WHY_TYPE);
			after = agg ? WHY_AFTER_STRUCT : WHY_AFTER_TYPE;
			continue;
		}
		if (clang && w[i].ti.kind == TK_INT2 && gpr + 2 > 6) {
			loc_none(&w[i], WHY_WIDE);
			after = WHY_AFTER_INT128;
			continue;
		}
		if (p.how == PASS_REGS && gpr + p.ngpr <= 6 && sse + p.nsse <= 8) {
			if (w[i].ti.kind == TK_INT)
				abi_slot(&w[i], DJP_LOC_REG, arg_regs[gpr], 0);
			else
				loc_none(&w[i], why_not_int(&w[i].ti, p.nsse > 0));
			gpr += p.ngpr;
			sse += p.nsse;
			continue;
		}
		/* whole in memory, above the return address at (%rsp) */
		uint64_t align = p.align > 8 ? p.align : 8;
		stack = (stack + align - 1) / align * align;
		if (stack_lost)
			loc_none(&w[i], WHY_AFTER_MEM);
		else if (w[i].ti.kind == TK_INT)
			abi_slot(&w[i], DJP_LOC_MEM, DJP_REG_RSP, (int64_t)(8 + stack));
		else
			loc_none(&w[i], why_not_int(&w[i].ti, false));
		stack += (p.size + 7) / 8 * 8;
		if (!p.align_sure)
			stack_lost = true;
	}
}

/* What a lookup of DWARF locations needs. */
struct loc_ctx {
	struct djp_params_file *pf;
	struct dwarf_src *src;
	Dwarf_Die *sub; /* the concrete subprogram: its frame base */
	uint64_t func_addr, pc;
};

/* The CFA at pc as register + offset, from .eh_frame, else .debug_frame. */
static bool cfa_at(struct loc_ctx *c, int *reg, int64_t *off)
{
	Dwarf_CFI *cfis[2];

	if (!c->pf->eh_looked) {
		c->pf->eh_looked = true;
		c->pf->eh_frame = dwarf_getcfi_elf(c->pf->elf);
	}
	cfis[0] = c->pf->eh_frame;
	cfis[1] = dwarf_getcfi(c->src->dw);
	for (unsigned i = 0; i < 2; i++) {
		Dwarf_Frame *frame = NULL;
		Dwarf_Op *ops;
		size_t nops;
		bool ok;
		if (!cfis[i] || dwarf_cfi_addrframe(cfis[i], c->pc, &frame) != 0)
			continue;
		/* libdw gives a register rule as DW_OP_bregx reg, offset */
		ok = dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1 && ops[0].atom == DW_OP_bregx &&
		     map_reg(ops[0].number) != DJP_REG_NONE;
		if (ok) {
			*reg = map_reg(ops[0].number);
			*off = (int64_t)ops[0].number2;
		}
		free(frame);
		return ok; /* the table that covers pc says, whatever it says */
	}
	return false;
}

/* The frame base at pc as register + offset (DW_OP_fbreg's base). */
static bool frame_base(struct loc_ctx *c, int *reg, int64_t *off)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t n;

	if (!dwarf_attr(c->sub, DW_AT_frame_base, &a) || dwarf_getlocation_addr(&a, c->pc, &ops, &n, 1) != 1 ||
	    n != 1)
		return false;
	if (ops[0].atom == DW_OP_call_frame_cfa)
		return cfa_at(c, reg, off);
	if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg15) {
		*reg = map_reg(ops[0].atom - DW_OP_breg0);
		*off = (int64_t)ops[0].number;
		return true;
	}
	if (ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg15) { /* clang: the register's value */
		*reg = map_reg(ops[0].atom - DW_OP_reg0);
		*off = 0;
		return true;
	}
	return false;
}

/* A constant pushing operation's value. */
static bool const_op(const Dwarf_Op *op, uint64_t *v)
{
	if (op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31) {
		*v = op->atom - DW_OP_lit0;
		return true;
	}
	switch (op->atom) {
	case DW_OP_const1u:
	case DW_OP_const1s:
	case DW_OP_const2u:
	case DW_OP_const2s:
	case DW_OP_const4u:
	case DW_OP_const4s:
	case DW_OP_const8u:
	case DW_OP_const8s:
	case DW_OP_constu:
	case DW_OP_consts:
		*v = op->number; /* libdw sign-extends the signed ones */
		return true;
	default:
		return false;
	}
}

/* DW_OP_entry_value(DW_OP_regN): the register N, else -1. */
static int entry_value_reg(Dwarf_Attribute *attr, Dwarf_Op *op)
{
	Dwarf_Attribute sub;
	Dwarf_Op *ops;
	size_t n;

	if (dwarf_getlocation_attr(attr, op, &sub) != 0 || dwarf_getlocation(&sub, &ops, &n) != 0 || n != 1)
		return -1;
	return reg_op(&ops[0]) == (Dwarf_Word)-1 ? -1 : map_reg(reg_op(&ops[0]));
}

/* One location expression, for a readable integer w, as one argloc. */
static void from_expr(struct loc_ctx *c, struct pwork *w, Dwarf_Attribute *attr, Dwarf_Op *ops, size_t n)
{
	uint64_t v;
	int reg;
	int64_t off;

	/* a single piece that holds the whole value is the value */
	if (n >= 2 && ops[n - 1].atom == DW_OP_piece && ops[n - 1].number >= w->ti.size) {
		n--;
		for (size_t i = 0; i < n; i++)
			if (ops[i].atom == DW_OP_piece || ops[i].atom == DW_OP_bit_piece)
				goto complex;
	}
	if (n == 1) {
		Dwarf_Word r = reg_op(&ops[0]);
		if (r != (Dwarf_Word)-1) {
			if (map_reg(r) == DJP_REG_NONE)
				goto complex;
			loc_set(w, DJP_LOC_REG, map_reg(r), 0);
			return;
		}
		if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg15) {
			loc_set(w, DJP_LOC_MEM, map_reg(ops[0].atom - DW_OP_breg0), (int64_t)ops[0].number);
			return;
		}
		if (ops[0].atom == DW_OP_bregx && map_reg(ops[0].number) != DJP_REG_NONE) {
			loc_set(w, DJP_LOC_MEM, map_reg(ops[0].number), (int64_t)ops[0].number2);
			return;
		}
		if (ops[0].atom == DW_OP_fbreg) {
			if (!frame_base(c, &reg, &off))
				goto complex;
			loc_set(w, DJP_LOC_MEM, reg, off + (int64_t)ops[0].number);
			return;
		}
		if (ops[0].atom == DW_OP_addr) {
			loc_set(w, DJP_LOC_ABS, DJP_REG_NONE, (int64_t)ops[0].number);
			return;
		}
	}
	if (n == 2 && ops[1].atom == DW_OP_stack_value) {
		if (const_op(&ops[0], &v)) {
			loc_set(w, DJP_LOC_IMM, DJP_REG_NONE, as_value(&w->ti, v));
			return;
		}
		if (ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg15 && ops[0].number == 0) {
			loc_set(w, DJP_LOC_REG, map_reg(ops[0].atom - DW_OP_breg0), 0);
			return;
		}
		/* at the entry, the value a register had at the entry is in it */
		if ((ops[0].atom == DW_OP_entry_value || ops[0].atom == DW_OP_GNU_entry_value) &&
		    c->pc == c->func_addr && (reg = entry_value_reg(attr, &ops[0])) >= 0) {
			loc_set(w, DJP_LOC_REG, reg, 0);
			return;
		}
	}
complex:
	loc_none(w, WHY_COMPLEX);
}

/* DW_AT_const_value: the constant, for a readable integer. */
static void from_const_value(struct pwork *w, Dwarf_Attribute *a)
{
	Dwarf_Sword s;
	Dwarf_Word u;

	switch (dwarf_whatform(a)) {
	case DW_FORM_sdata:
	case DW_FORM_implicit_const:
		if (dwarf_formsdata(a, &s) == 0) {
			loc_set(w, DJP_LOC_IMM, DJP_REG_NONE, as_value(&w->ti, (uint64_t)s));
			return;
		}
		break;
	case DW_FORM_udata:
	case DW_FORM_data1:
	case DW_FORM_data2:
	case DW_FORM_data4:
	case DW_FORM_data8:
		if (dwarf_formudata(a, &u) == 0) {
			loc_set(w, DJP_LOC_IMM, DJP_REG_NONE, as_value(&w->ti, u));
			return;
		}
		break;
	}
	loc_none(w, WHY_COMPLEX);
}

/* Is the location at pc one vector register (for the reason given)? */
static bool in_xmm(Dwarf_Attribute *a, uint64_t pc)
{
	Dwarf_Op *ops;
	size_t n;
	return dwarf_getlocation_addr(a, pc, &ops, &n, 1) == 1 && n >= 1 && is_xmm(reg_op(&ops[0]));
}

/* The DWARF location of w at c->pc. */
static void dwarf_location(struct loc_ctx *c, struct pwork *w)
{
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t n;
	int got;

	if (!w->has_type) {
		loc_none(w, WHY_NOTYPE);
		return;
	}
	if (!w->has_conc) {
		loc_none(w, w->ti.kind == TK_INT ? WHY_OPTIMIZED : why_not_int(&w->ti, false));
		return;
	}
	if (w->ti.kind != TK_INT) {
		bool vec = dwarf_attr(&w->conc, DW_AT_location, &a) && in_xmm(&a, c->pc);
		loc_none(w, why_not_int(&w->ti, vec));
		return;
	}
	if (dwarf_attr(&w->conc, DW_AT_const_value, &a)) {
		from_const_value(w, &a);
		return;
	}
	if (!dwarf_attr(&w->conc, DW_AT_location, &a)) {
		loc_none(w, WHY_OPTIMIZED);
		return;
	}
	got = dwarf_getlocation_addr(&a, c->pc, &ops, &n, 1);
	if (got == 0)
		loc_none(w, WHY_NOLOC);
	else if (got < 0 || !n)
		loc_none(w, WHY_COMPLEX);
	else
		from_expr(c, w, &a, ops, n);
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

	if (udata_attr(sub, DW_AT_calling_convention, &cc) && cc == DW_CC_nocall)
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

	if (depth > DEPTH_MAX || dwarf_child(scope, &d) != 0)
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
	for (unsigned i = 0; i < DEPTH_MAX && dwarf_attr(&cur, DW_AT_abstract_origin, &a) &&
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
		w[i].has_type = ref_attr(&w[i].decl, DW_AT_type, &w[i].type);
		spell(w[i].has_type ? &w[i].type : NULL, "", w[i].type_name, sizeof(w[i].type_name), 0);
		if (w[i].has_type)
			type_info(&w[i].type, &w[i].ti);
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
static char type_conv(const struct tinfo *ti)
{
	if (ti->kind != TK_INT)
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
static void ret_info(Dwarf_Die *sub, struct djp_param_set *out)
{
	Dwarf_Die t;
	struct tinfo ti;

	if (!ref_attr(sub, DW_AT_type, &t))
		return; /* void */
	type_info(&t, &ti);
	if (ti.kind != TK_INT || !ti.size || ti.size > 8)
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
	if ((r = find_function(pf, func_addr, &sub, &src, err, errsz)))
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
		entry_locations(w, n, ref_attr(&sub, DW_AT_type, &ret) ? &ret : NULL, cxx, clang_unit(&sub));
	} else {
		struct loc_ctx c = { pf, src, &sub, func_addr, pc };
		for (unsigned i = 0; i < n; i++)
			dwarf_location(&c, &w[i]);
	}
	r = fill(out, w, n);
	if (!r)
		ret_info(&sub, out);
	free(w);
	if (r)
		return djp_errline(err, errsz, r, pf->path, "out of memory");
	return 0;
}

/* The lowest and highest line of the rows of the unit's line table whose
 * address is inside sub and whose file is decl_file: the lines its code
 * spans (an inlined callee's rows name another file). */
static void code_lines(Dwarf_Die *sub, const char *decl_file, unsigned *lo, unsigned *hi)
{
	Dwarf_Die cudie;
	Dwarf_Lines *lines;
	size_t n;

	*lo = *hi = 0;
	if (!dwarf_diecu(sub, &cudie, NULL, NULL) || dwarf_getsrclines(&cudie, &lines, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		Dwarf_Addr a;
		int ln;
		const char *f;
		if (!l || dwarf_lineaddr(l, &a) || dwarf_lineno(l, &ln) || ln <= 0 || dwarf_haspc(sub, a) <= 0 ||
		    !(f = dwarf_linesrc(l, NULL, NULL)) || strcmp(f, decl_file))
			continue;
		if (!*lo || (unsigned)ln < *lo)
			*lo = (unsigned)ln;
		if ((unsigned)ln > *hi)
			*hi = (unsigned)ln;
	}
}

int djp_params_source(struct djp_params_file *pf, uint64_t func_addr, bool with_lines, struct djp_func_source *out,
		      char *err, size_t errsz)
{
	struct dwarf_src *src;
	Dwarf_Die sub, cudie;
	Dwarf_Attribute attr;
	const char *file, *dir;
	int line = 0, r;

	memset(out, 0, sizeof(*out));
	if ((r = find_function(pf, func_addr, &sub, &src, err, errsz)))
		return r;
	if (!(file = dwarf_decl_file(&sub)))
		return djp_errline(err, errsz, -ENOENT, pf->path, "no source file for the function at 0x%" PRIx64,
				   func_addr);
	dwarf_decl_line(&sub, &line);
	/* a relative name is the unit's compilation directory's */
	if (file[0] != '/' && dwarf_diecu(&sub, &cudie, NULL, NULL) &&
	    dwarf_attr_integrate(&cudie, DW_AT_comp_dir, &attr) && (dir = dwarf_formstring(&attr)))
		snprintf(out->file, sizeof(out->file), "%s/%s", dir, file);
	else
		snprintf(out->file, sizeof(out->file), "%s", file);
	out->decl_line = line > 0 ? (unsigned)line : 0;
	if (with_lines)
		code_lines(&sub, file, &out->lo_line, &out->hi_line);
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
