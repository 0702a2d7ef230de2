/*
 * Argument locations: parsing the SDT-style strings that MARK records.
 *
 * A marker does not copy its arguments anywhere.  The asm statement names
 * each argument as an operand with the "nor" constraint and lets the
 * compiler print where the value already is, in AT&T syntax, prefixed with
 * its size ("-4@" for a signed int, "8@" for a pointer).  <sys/sdt.h> does
 * the same, so one parser serves our `.markers` records and the SDT notes of
 * foreign binaries.  The forms a compiler prints are few:
 *
 *   %reg                   register (any width: %rax %eax %ax %al %ah %r8d ...)
 *   $imm                   immediate, decimal or 0x hex, possibly negative
 *   disp(%base,%idx,scale) memory; every part but one is optional
 *   sym+off(%rip)          a global or static: an absolute link-time address
 *                          once the symbol is resolved through the symbol table
 *   sym(%base,%idx,scale)  an array at a symbol's absolute address, in code
 *                          that is not position independent (a kernel
 *                          module's): memory, the symbol's address as disp
 *
 * The parser is strict about syntax (a location it cannot express is an
 * error, never a guess) and allocation-free, since the engine also calls it.
 * The size prefix may be missing in old notes; the operand width then
 * decides, as in SystemTap.  A sym(%rip) whose symbol cannot be resolved,
 * because the binary is stripped say, parses to DJP_LOC_NONE with the
 * symbol name kept: listing still works, fetching reads 0.
 *
 * djp_argloc_format() prints a location back in the same syntax; the fuzz
 * target checks that parse(format(parse(s))) is parse(s).  The register
 * names, and which register may be an index, are the arch's (arch/x86/
 * reg_names.c); this file knows the operands' syntax around them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "arch/x86/arch.h"
#include "argloc.h"

const char *djp_loc_kind_name(unsigned kind)
{
	switch (kind) {
	case DJP_LOC_REG:
		return "register";
	case DJP_LOC_MEM:
		return "memory";
	case DJP_LOC_IMM:
		return "immediate";
	case DJP_LOC_ABS:
		return "absolute";
	case DJP_LOC_SAVED:
		return "saved at entry";
	case DJP_LOC_ARG:
		return "the site's argument";
	case DJP_LOC_ADDR:
		return "address";
	default:
		return "unknown";
	}
}

/* A signed decimal or 0x-hex number at [*p, end); advances *p.  Values that
 * do not fit in 64 bits are refused. */
static int parse_num(const char **p, const char *end, int64_t *out)
{
	const char *s = *p;
	bool neg = false;
	uint64_t v = 0;
	unsigned base = 10;

	if (s < end && (*s == '-' || *s == '+'))
		neg = *s++ == '-';
	if (end - s >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		base = 16;
		s += 2;
	}
	const char *digits = s;
	while (s < end) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (base == 16 && *s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (base == 16 && *s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (v > (UINT64_MAX - d) / base)
			return -1;
		v = v * base + d;
		s++;
	}
	if (s == digits)
		return -1;
	/* Immediates may be printed as large unsigned values; keep the bits. */
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	*p = s;
	return 0;
}

/*
 * An immediate as the argument's type sees it.  A compiler prints a constant
 * operand as the signed value of its machine mode whatever the C type, so an
 * `unsigned` 3000000000 arrives as "4@$-1294967296" and a uint8_t 200 as
 * "1@$-56"; other notes may carry "1@$255" or even "1@$-1" for the same
 * byte.  The size prefix says what is meant: keep the low `size` bytes and
 * extend them as the prefix's sign says, as for registers and memory.
 */
static int64_t imm_extend(int64_t v, unsigned size, bool is_signed)
{
	unsigned sh = 64 - 8 * size;
	if (sh == 0 || sh >= 64)
		return v;
	if (is_signed)
		return (int64_t)((uint64_t)v << sh) >> sh;
	return (int64_t)(((uint64_t)v << sh) >> sh);
}

static bool is_sym_char(char c, bool first)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == '.' || c == '$' ||
	       (!first && c >= '0' && c <= '9');
}

/* "%reg" at [*p, end) up to a ',' or ')'; advances *p. */
static int parse_reg(const char **p, const char *end, uint8_t *shift, uint8_t *width)
{
	const char *s = *p, *e = s;
	if (s >= end || *s != '%')
		return -1;
	while (e < end && *e != ',' && *e != ')')
		e++;
	int reg = djp_reg_from_name(s, (size_t)(e - s), shift, width);
	if (reg >= 0)
		*p = e;
	return reg;
}

static int fail(const char **why, const char *reason)
{
	if (why)
		*why = reason;
	return -EINVAL;
}

int djp_argloc_parse(const char *s, size_t len, struct djp_argloc *loc, djp_sym_lookup_fn sym_lookup, void *ctx,
		     const char **why)
{
	const char *p = s, *end = s + len;
	int64_t size = 0;
	uint8_t shift = 0, width = 8;

	memset(loc, 0, sizeof(*loc));
	loc->reg = DJP_REG_NONE;
	loc->index = DJP_REG_NONE;

	/* The optional "[-]N@" size prefix. */
	const char *at = memchr(s, '@', len);
	if (at) {
		const char *q = s;
		if (parse_num(&q, at, &size) || q != at)
			return fail(why, "bad size prefix");
		if (size != 1 && size != 2 && size != 4 && size != 8 && size != -1 && size != -2 &&
		    size != -4 && size != -8)
			return fail(why, "size is not 1, 2, 4 or 8");
		p = at + 1;
	}
	if (p >= end)
		return fail(why, "empty location");

	if (*p == '%') {
		int reg = parse_reg(&p, end, &shift, &width);
		if (reg < 0 || reg == DJP_REG_PC || p != end)
			return fail(why, "unknown register");
		loc->kind = DJP_LOC_REG;
		loc->reg = (int8_t)reg;
		loc->reg_shift = shift;
	} else if (*p == '$') {
		p++;
		if (parse_num(&p, end, &loc->disp) || p != end)
			return fail(why, "bad immediate");
		loc->kind = DJP_LOC_IMM;
	} else {
		/* [sym][+-off] or [disp], then an optional (%base[,%index[,scale]]). */
		const char *sym = NULL;
		size_t symlen = 0;
		int64_t disp = 0;

		if (is_sym_char(*p, true)) {
			sym = p;
			while (p < end && is_sym_char(*p, false))
				p++;
			symlen = (size_t)(p - sym);
			if (p < end && (*p == '+' || *p == '-') && parse_num(&p, end, &disp))
				return fail(why, "bad symbol offset");
		} else if (*p != '(' && parse_num(&p, end, &disp)) {
			return fail(why, "bad displacement");
		}
		int base = DJP_REG_NONE, index = DJP_REG_NONE;
		int64_t scale = 1;
		if (p < end && *p == '(') {
			p++;
			if (p < end && *p == '%') {
				base = parse_reg(&p, end, NULL, &width);
				if (base < 0 || width != 8)
					return fail(why, "bad base register");
			}
			if (p < end && *p == ',') {
				p++;
				index = parse_reg(&p, end, NULL, &width);
				if (index < 0 || !djp_reg_can_index(index) || width != 8)
					return fail(why, "bad index register");
				if (p < end && *p == ',') {
					p++;
					if (parse_num(&p, end, &scale) ||
					    (scale != 1 && scale != 2 && scale != 4 && scale != 8))
						return fail(why, "bad scale");
				}
			}
			if (p >= end || *p != ')')
				return fail(why, "missing ')'");
			p++;
			if (base == DJP_REG_NONE && index == DJP_REG_NONE)
				return fail(why, "empty memory operand");
		}
		if (p != end)
			return fail(why, "trailing characters");
		width = 8;
		if (base == DJP_REG_PC) {
			if (index != DJP_REG_NONE)
				return fail(why, "index with %rip");
			if (!sym)
				return fail(why, "%rip operand without a symbol");
		}
		if (sym && (base == DJP_REG_PC || base == DJP_REG_NONE) && index == DJP_REG_NONE) {
			uint64_t addr;
			loc->sym = sym;
			if (sym_lookup && sym_lookup(ctx, sym, symlen, &addr) == 0) {
				loc->kind = DJP_LOC_ABS;
				loc->disp = (int64_t)(addr + (uint64_t)disp);
			} else {
				loc->kind = DJP_LOC_NONE;
				loc->disp = disp;
			}
		} else if (sym) {
			/* sym(%base,%index,scale): code that is not position
			 * independent (the kernel's, a non-PIE program's)
			 * indexes an array at the symbol's absolute address,
			 * which becomes the displacement */
			uint64_t addr;
			loc->sym = sym;
			if (sym_lookup && sym_lookup(ctx, sym, symlen, &addr) == 0) {
				loc->kind = DJP_LOC_MEM;
				loc->reg = (int8_t)base;
				loc->index = (int8_t)index;
				loc->scale = (uint8_t)scale;
				loc->disp = (int64_t)(addr + (uint64_t)disp);
			} else {
				loc->kind = DJP_LOC_NONE;
				loc->disp = disp;
			}
		} else if (base == DJP_REG_NONE && index == DJP_REG_NONE) {
			loc->kind = DJP_LOC_ABS; /* a bare absolute address */
			loc->disp = disp;
		} else {
			loc->kind = DJP_LOC_MEM;
			loc->reg = (int8_t)base;
			loc->index = (int8_t)index;
			loc->scale = (uint8_t)scale;
			loc->disp = disp;
		}
	}
	if (size < 0) {
		loc->is_signed = true;
		size = -size;
	}
	loc->size = size ? (uint8_t)size : width;
	if (loc->kind == DJP_LOC_IMM)
		loc->disp = imm_extend(loc->disp, loc->size, loc->is_signed);
	return 0;
}

int djp_argloc_parse_all(const char *args, struct djp_argloc *locs, unsigned max, djp_sym_lookup_fn sym_lookup,
			 void *ctx, const char **why)
{
	const char *p = args;
	unsigned n = 0;

	for (;;) {
		while (*p == ' ')
			p++;
		if (!*p)
			return (int)n;
		const char *e = p;
		while (*e && *e != ' ')
			e++;
		if (n == max)
			return fail(why, "too many arguments");
		int r = djp_argloc_parse(p, (size_t)(e - p), &locs[n], sym_lookup, ctx, why);
		if (r)
			return r;
		n++;
		p = e;
	}
}

int djp_argloc_format(const struct djp_argloc *loc, char *buf, size_t sz)
{
	const char *sign = loc->is_signed ? "-" : "";
	int symlen = 0;

	if (loc->sym)
		while (is_sym_char(loc->sym[symlen], symlen == 0))
			symlen++;
	switch (loc->kind) {
	case DJP_LOC_REG:
		if (loc->reg < 0 || loc->reg >= DJP_REG_COUNT || loc->reg == DJP_REG_PC)
			break;
		return snprintf(buf, sz, "%s%u@%%%s", sign, loc->size, djp_reg_name_sized(loc->reg, loc->size, loc->reg_shift));
	case DJP_LOC_IMM:
		/* As the argument's type reads it: 4@$3000000000, -4@$-5. */
		if (!loc->is_signed)
			return snprintf(buf, sz, "%u@$%" PRIu64, loc->size, (uint64_t)loc->disp);
		return snprintf(buf, sz, "-%u@$%" PRId64, loc->size, loc->disp);
	case DJP_LOC_MEM: {
		int n = snprintf(buf, sz, "%s%u@%" PRId64 "(", sign, loc->size, loc->disp);
		if (n < 0)
			return n;
		size_t used = (size_t)n < sz ? (size_t)n : sz;
		int m;
		if (loc->index >= 0)
			m = snprintf(buf + used, sz - used, "%s%s,%%%s,%u)", loc->reg >= 0 ? "%" : "",
				     loc->reg >= 0 ? djp_reg_name(loc->reg) : "", djp_reg_name(loc->index), loc->scale);
		else
			m = snprintf(buf + used, sz - used, "%%%s)", loc->reg >= 0 ? djp_reg_name(loc->reg) : "?");
		return m < 0 ? m : n + m;
	}
	case DJP_LOC_ABS:
		/* The resolved address, as an absolute memory operand. */
		return snprintf(buf, sz, "%s%u@0x%" PRIx64, sign, loc->size, (uint64_t)loc->disp);
	default:
		break;
	}
	if (loc->sym)
		return snprintf(buf, sz, "%s%u@%.*s%+" PRId64 "(%%rip)", sign, loc->size, symlen, loc->sym,
				loc->disp);
	return snprintf(buf, sz, "%s%u@?", sign, loc->size);
}
