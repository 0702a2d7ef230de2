/*
 * User backtraces: SystemTap's ubacktrace() family, from the stack the hit
 * recorded.
 *
 * Where the stack comes from.  A probe whose body calls one of these
 * functions (check.c marks it, through the functions it calls) has its
 * points connected with DJP_CONNECT_USTACK: the target's recorder walks
 * the call stack at each hit, in the process, with the call-frame tables
 * it read at connect time (kernel/unwind.c), and appends up to
 * DJP_RECORDER_STACK_DEPTH pcs, stap's MAXBACKTRACE of 20, to the event
 * (DJP_EVF_USTACK).  The live source hands them to the script with the
 * event (struct djp_ev's ustack): pcs[0] is the hit's pc, then the return
 * addresses, innermost first, as stap's ustack(0), ustack(1), ...
 *
 * How they are written.  Here, after the fact, in the tool: each address
 * is named from the objects the process had mapped while it was traced
 * and their symbols (usym.c), in the style of stap's _stp_snprint_addr
 * (runtime/sym.c) that each function uses: hex and a space for
 * ubacktrace(), " 0xADDR : name+0xoff/0xsize [/path]\n" for
 * print_ubacktrace(), "name+0xoff [basename]\n" for sprint_ubacktrace(),
 * "name+0xoff\n" for print_ubacktrace_brief().  A return address is named
 * as it is, not as the call before it (as stap does).  An address in an
 * object but in no symbol is written with the offset into the object's
 * mapping, one in no object in hex alone.  Numbers are written as stap's
 * %p and %#lx write them: 0x0 for zero, where C's %#lx writes 0.
 *
 * What the string functions return is bounded as stap bounds it:
 * ubacktrace() and sprint_ubacktrace() are cut at MAXSTRINGLEN - 1 bytes
 * wherever that falls (stap copies its print buffer so), ucallers() and
 * sprint_usyms() end before the first address or line that would not fit.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ubacktrace.h"
#include "tools/djp/script/usym.h"

/* Append what fmt makes (one address's line: never long but for a path). */
static void put(struct strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct strbuf *b, const char *fmt, ...)
{
	char small[512], *big = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(small)) {
		if (!(big = malloc((size_t)n + 1)))
			abort();
		va_start(ap, fmt);
		vsnprintf(big, (size_t)n + 1, fmt, ap);
		va_end(ap);
	}
	sb_put(b, big ? big : small, (size_t)n);
	free(big);
}

void ubt_addr(struct strbuf *b, int32_t pid, uint64_t addr, enum ubt_style style)
{
	struct usym u;
	const char *name = NULL, *mod = NULL;

	if (style != UBT_HEX && usym_lookup(pid, addr, &u)) {
		name = u.name;
		mod = u.module;
		if (name && name[0] == '.') /* as stap: ".foo" is foo */
			name++;
		if (mod && style == UBT_SIMPLE && strrchr(mod, '/'))
			mod = strrchr(mod, '/') + 1;
	}
	switch (style) {
	case UBT_HEX:
		put(b, "0x%" PRIx64 " ", addr);
		return;
	case UBT_BRIEF:
		if (name)
			put(b, "%s+0x%" PRIx64 "\n", name, u.off);
		else
			put(b, "0x%" PRIx64 "\n", addr);
		return;
	case UBT_SIMPLE:
		if (name)
			put(b, "%s+0x%" PRIx64 " [%s]\n", name, u.off, mod);
		else if (mod)
			put(b, "0x%" PRIx64 " [%s+0x%" PRIx64 "]\n", addr, mod, u.map_off);
		else
			put(b, "0x%" PRIx64 "\n", addr);
		return;
	case UBT_DATA:
		if (name)
			put(b, "%s+0x%" PRIx64 "/0x%" PRIx64 " [%s]", name, u.off, u.size, mod);
		else if (mod)
			put(b, "0x%" PRIx64 " [%s+0x%" PRIx64 "/0x%" PRIx64 "]", addr, mod, u.map_off, u.map_size);
		else
			put(b, "0x%" PRIx64, addr);
		return;
	case UBT_FULL:
		if (name)
			put(b, " 0x%" PRIx64 " : %s+0x%" PRIx64 "/0x%" PRIx64 " [%s]\n", addr, name, u.off, u.size, mod);
		else if (mod)
			put(b, " 0x%" PRIx64 " [%s+0x%" PRIx64 "/0x%" PRIx64 "]\n", addr, mod, u.map_off, u.map_size);
		else
			put(b, " 0x%" PRIx64 "\n", addr);
		return;
	}
}

void ubt_stack(struct strbuf *b, int32_t pid, const uint64_t *pcs, unsigned n, enum ubt_style style)
{
	for (unsigned i = 0; i < n; i++)
		ubt_addr(b, pid, pcs[i], style);
}

bool ubt_callers(struct strbuf *b, const uint64_t *pcs, unsigned n, int64_t depth, size_t max)
{
	char one[24];
	for (int64_t i = 0; i <= depth || depth == -1; i++) {
		int len;
		if (i >= (int64_t)n)
			return depth == -1;
		len = snprintf(one, sizeof(one), "%s0x%" PRIx64, i ? " " : "", pcs[i]);
		if (b->len + (size_t)len > max)
			break;
		sb_put(b, one, (size_t)len);
	}
	return true;
}

void ubt_usyms(struct strbuf *b, int32_t pid, const char *callers, size_t max)
{
	const char *p = callers;
	while (*p) {
		size_t tok = strcspn(p, " "), at = b->len;
		if (!tok) {
			p++;
			continue;
		}
		put(b, " %.*s : ", (int)tok, p);
		ubt_addr(b, pid, strtoull(p, NULL, 16), UBT_DATA);
		sb_putc(b, '\n');
		if (max && b->len > max) {
			b->len = at; /* the whole line, or none of it */
			if (b->p)
				b->p[at] = 0;
			break;
		}
		p += tok;
	}
}
