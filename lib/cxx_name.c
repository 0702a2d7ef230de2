/*
 * The name of a C++ function from its mangled symbol, as a probe names it.
 *
 * stap's process("P").function("total") and function("shop::Cart::total")
 * match a C++ function by the name its DWARF gives it; the symbol table,
 * which the engine arms from, spells it _ZN4shop4Cart5totalEv.  This reads
 * the name part of an Itanium ABI mangled symbol (what gcc and clang emit
 * on Linux) back into the scopes and the function's own name, and leaves
 * the rest (the parameter types, template arguments, the return type)
 * alone: a probe's pattern names the function, not its overload.
 *
 * How it works.  After _Z comes the name: an unscoped one (a length and
 * an identifier, or St for std::) or a nested one, N [qualifiers]
 * component... E, where each component is a source name (length then
 * identifier), St, a constructor (C1, C2, C3: the class's name) or a
 * destructor (D0, D1, D2: ~ and the class's name), a template's argument
 * list I...E (skipped, balanced over the nested lists and literals that
 * end in E too), or an ABI tag B<source-name> (skipped).  Anything else
 * (operators, conversion functions, local names, lambdas, substitutions
 * in the name itself) is not read: the function is then matched by its
 * symbol only, as before.  One pass, bounded by the symbol's length.
 */
#include <ctype.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/cxx_name.h"

struct out {
	char *buf;
	size_t sz, len;
	size_t last; /* where the last component begins */
	bool bad;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n + 1 > o->sz) {
		o->bad = true;
		return;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = 0;
}

static void component(struct out *o, const char *s, size_t n)
{
	if (o->len)
		put(o, "::", 2);
	o->last = o->len;
	put(o, s, n);
}

/* A source name at *p: <length><identifier>; false if there is none. */
static bool source_name(const char **p, const char **id, size_t *n)
{
	char *end;
	unsigned long len;

	if (!isdigit((unsigned char)**p))
		return false;
	len = strtoul(*p, &end, 10);
	if (!len || strlen(end) < len)
		return false;
	*id = end;
	*n = len;
	*p = end + len;
	return true;
}

/* Past a template's argument list (at its I) or a literal (at its L),
 * both ending in an E that closes what they opened. */
static bool skip_balanced(const char **p)
{
	int depth = 0;

	do {
		char c = **p;
		if (!c)
			return false;
		if (isdigit((unsigned char)c)) { /* a source name: its letters are not openers */
			const char *id;
			size_t n;
			if (!source_name(p, &id, &n))
				return false;
			continue;
		}
		if (c == 'I' || c == 'N' || c == 'L' || c == 'X' || c == 'J')
			depth++;
		else if (c == 'E')
			depth--;
		(*p)++;
	} while (depth > 0);
	return true;
}

bool djp_cxx_name(const char *sym, char *buf, size_t sz, const char **base)
{
	struct out o = { buf, sz, 0, 0, false };
	const char *p = sym, *id, *cls = NULL;
	size_t n, cls_n = 0;
	bool nested;

	if (!sz || strncmp(p, "_Z", 2))
		return false;
	buf[0] = 0;
	p += 2;
	if ((nested = *p == 'N')) {
		p++;
		while (*p == 'r' || *p == 'V' || *p == 'K' || *p == 'R' || *p == 'O')
			p++;
	}
	for (;;) {
		if (p[0] == 'S' && p[1] == 't') {
			component(&o, "std", 3);
			p += 2;
		} else if (source_name(&p, &id, &n)) {
			component(&o, id, n);
			cls = id;
			cls_n = n;
		} else if (nested && p[0] == 'C' && p[1] >= '1' && p[1] <= '3' && cls) {
			component(&o, cls, cls_n);
			p += 2;
		} else if (nested && p[0] == 'D' && p[1] >= '0' && p[1] <= '2' && cls) {
			component(&o, "~", 1);
			put(&o, cls, cls_n);
			p += 2;
		} else {
			return false;
		}
		while (*p == 'B') { /* an ABI tag: [abi:cxx11] */
			p++;
			if (!source_name(&p, &id, &n))
				return false;
		}
		if (*p == 'I' && !skip_balanced(&p))
			return false;
		if (!nested || *p == 'E')
			break;
	}
	if (o.bad || !o.len)
		return false;
	if (base)
		*base = buf + o.last;
	return true;
}

bool djp_cxx_glob_match(const char *glob, const char *sym, int (*match)(const char *glob, const char *name))
{
	char name[512];
	const char *base;

	if (!strncmp(glob, "_Z", 2) || !djp_cxx_name(sym, name, sizeof(name), &base))
		return false;
	/* "Cart::total": the scopes as written; "total": the function's own
	 * name, whatever class or namespace it is in, as stap matches */
	return match(glob, strstr(glob, "::") ? name : base) == 0;
}
