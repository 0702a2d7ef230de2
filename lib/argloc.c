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
 * target checks that parse(format(parse(s))) is parse(s).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "argloc.h"

static const char *const reg64[DJP_REG_COUNT] = {
	"rax", "rcx", "rdx", "rsi", "rdi", "r8",  "r9",	 "r10", "r11",
	"rbx", "rbp", "r12", "r13", "r14", "r15", "rsp", "rip",
};

/* %r8 .. %r15 by their number less 8. */
static const int8_t numbered[8] = { DJP_REG_R8,	 DJP_REG_R9,  DJP_REG_R10, DJP_REG_R11,
				    DJP_REG_R12, DJP_REG_R13, DJP_REG_R14, DJP_REG_R15 };

/* Legacy names of the first eight registers, by width. */
static const struct {
	const char *name;
	int8_t reg;
	uint8_t width, shift;
} legacy[] = {
	{ "eax", DJP_REG_RAX, 4, 0 }, { "ebx", DJP_REG_RBX, 4, 0 }, { "ecx", DJP_REG_RCX, 4, 0 },
	{ "edx", DJP_REG_RDX, 4, 0 }, { "esi", DJP_REG_RSI, 4, 0 }, { "edi", DJP_REG_RDI, 4, 0 },
	{ "ebp", DJP_REG_RBP, 4, 0 }, { "esp", DJP_REG_RSP, 4, 0 }, { "eip", DJP_REG_RIP, 4, 0 },
	{ "ax", DJP_REG_RAX, 2, 0 },  { "bx", DJP_REG_RBX, 2, 0 },  { "cx", DJP_REG_RCX, 2, 0 },
	{ "dx", DJP_REG_RDX, 2, 0 },  { "si", DJP_REG_RSI, 2, 0 },  { "di", DJP_REG_RDI, 2, 0 },
	{ "bp", DJP_REG_RBP, 2, 0 },  { "sp", DJP_REG_RSP, 2, 0 },  { "al", DJP_REG_RAX, 1, 0 },
	{ "bl", DJP_REG_RBX, 1, 0 },  { "cl", DJP_REG_RCX, 1, 0 },  { "dl", DJP_REG_RDX, 1, 0 },
	{ "sil", DJP_REG_RSI, 1, 0 }, { "dil", DJP_REG_RDI, 1, 0 }, { "bpl", DJP_REG_RBP, 1, 0 },
	{ "spl", DJP_REG_RSP, 1, 0 }, { "ah", DJP_REG_RAX, 1, 8 },  { "bh", DJP_REG_RBX, 1, 8 },
	{ "ch", DJP_REG_RCX, 1, 8 },  { "dh", DJP_REG_RDX, 1, 8 },
};

static bool span_is(const char *s, size_t len, const char *word)
{
	return strlen(word) == len && memcmp(s, word, len) == 0;
}

int djp_reg_from_name(const char *name, size_t len, uint8_t *shift, uint8_t *width)
{
	uint8_t sh = 0, w = 8;
	int reg = -1;

	if (len && name[0] == '%') {
		name++;
		len--;
	}
	for (int i = 0; i < DJP_REG_COUNT && reg < 0; i++)
		if (span_is(name, len, reg64[i]))
			reg = i;
	for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]) && reg < 0; i++)
		if (span_is(name, len, legacy[i].name)) {
			reg = legacy[i].reg;
			w = legacy[i].width;
			sh = legacy[i].shift;
		}
	/* %r8 .. %r15 with an optional d/w/b suffix. */
	if (reg < 0 && len >= 2 && name[0] == 'r' && name[1] >= '0' && name[1] <= '9') {
		size_t i = 1;
		unsigned n = 0;
		while (i < len && name[i] >= '0' && name[i] <= '9' && n < 100)
			n = n * 10 + (unsigned)(name[i++] - '0');
		if (n >= 8 && n <= 15 && i >= len - 1) {
			if (i == len)
				reg = numbered[n - 8];
			else if (name[i] == 'd' || name[i] == 'w' || name[i] == 'b') {
				reg = numbered[n - 8];
				w = name[i] == 'd' ? 4 : name[i] == 'w' ? 2 : 1;
			}
		}
	}
	if (reg < 0)
		return -1;
	if (shift)
		*shift = sh;
	if (width)
		*width = w;
	return reg;
}

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
	default:
		return "unknown";
	}
}

const char *djp_reg_name(int reg)
{
	return reg >= 0 && reg < DJP_REG_COUNT ? reg64[reg] : NULL;
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
		if (reg < 0 || reg == DJP_REG_RIP || p != end)
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
				if (index < 0 || index == DJP_REG_RIP || index == DJP_REG_RSP || width != 8)
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
		if (base == DJP_REG_RIP) {
			if (index != DJP_REG_NONE)
				return fail(why, "index with %rip");
			if (!sym)
				return fail(why, "%rip operand without a symbol");
		}
		if (sym && (base == DJP_REG_RIP || base == DJP_REG_NONE) && index == DJP_REG_NONE) {
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

/* The name of `reg` at `width` bytes, so that a formatted location reads as
 * the compiler would have printed it ("%edi" for a 4-byte argument). */
static const char *reg_name_sized(int reg, unsigned width, unsigned shift)
{
	static const char *const r8[8][3] = {
		{ "r8d", "r8w", "r8b" },     { "r9d", "r9w", "r9b" },	  { "r10d", "r10w", "r10b" },
		{ "r11d", "r11w", "r11b" },  { "r12d", "r12w", "r12b" }, { "r13d", "r13w", "r13b" },
		{ "r14d", "r14w", "r14b" },  { "r15d", "r15w", "r15b" },
	};
	if (shift)
		width = 1; /* %ah and friends exist only at one byte */
	if (width == 8)
		return reg64[reg];
	for (int n = 0; n < 8; n++)
		if (numbered[n] == reg)
			return r8[n][width == 4 ? 0 : width == 2 ? 1 : 2];
	for (size_t i = 0; i < sizeof(legacy) / sizeof(legacy[0]); i++)
		if (legacy[i].reg == reg && legacy[i].width == width && legacy[i].shift == shift)
			return legacy[i].name;
	return reg64[reg];
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
		if (loc->reg < 0 || loc->reg >= DJP_REG_RIP)
			break;
		return snprintf(buf, sz, "%s%u@%%%s", sign, loc->size, reg_name_sized(loc->reg, loc->size, loc->reg_shift));
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
				     loc->reg >= 0 ? reg64[loc->reg] : "", reg64[loc->index], loc->scale);
		else
			m = snprintf(buf + used, sz - used, "%%%s)", loc->reg >= 0 ? reg64[loc->reg] : "?");
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
