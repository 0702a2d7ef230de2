/*
 * Built-in functions of user stacks and symbols, as stap's
 * ucontext-unwind.stp and ucontext-symbols.stp: of the stack the hit
 * recorded (a probe that calls one has its sites connected so that each
 * hit records it: check.c's BF_USTACK), and of addresses in a string.
 * ubacktrace.c writes the text, usym.c knows the target's symbols; the
 * text is built in r->ub, one function's at a time.
 */
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "lib/addr_line.h"
#include "tools/djp/script/run/interp.h"
#include "tools/djp/script/usym.h"
#include "ubacktrace.h"

/* The user stack the hit recorded: its pcs in *pcs, how many (0 in a
 * probe without one: begin, end, a timer, a source that records none). */
static unsigned hit_ustack(struct run *r, const uint64_t **pcs)
{
	*pcs = r->ev ? r->ev->ustack : NULL;
	return *pcs ? r->ev->nustack : 0;
}

/* r->ub emptied, for one function's text. */
static struct strbuf *ub_reset(struct run *r)
{
	r->ub.len = 0;
	if (r->ub.p)
		r->ub.p[0] = 0;
	return &r->ub;
}

/* The stack in `style`, into r->ub; where there is none, what stap's
 * runtime prints for a symbolic backtrace that has no user registers. */
static struct strbuf *ub_stack(struct run *r, enum ubt_style style)
{
	struct strbuf *b = ub_reset(r);
	const uint64_t *pcs;
	unsigned n = hit_ustack(r, &pcs);
	char msg[600];

	if (!n) {
		snprintf(msg, sizeof(msg), "<no user backtrace at %s>\n", r->pp ? r->pp : "");
		sb_put(b, msg, strlen(msg));
		return b;
	}
	/* print_ubacktrace() in a return probe says what returned where to */
	if (style == UBT_FULL && r->bind && r->bind->desc->site_runtime && strstr(r->bind->desc->name, "%return")) {
		sb_put(b, "Returning from: ", 16);
		ubt_addr(b, ctx_pid(r), r->bind->desc->site, UBT_FULL);
		sb_put(b, "Returning to  : ", 16);
	}
	ubt_stack(b, ctx_pid(r), pcs, n, style);
	return b;
}

static void ub_emit(struct run *r, const struct strbuf *b)
{
	if (b->len)
		emit(r, b->p, b->len);
}

/* r->ub as a string of the probe, cut at MAXSTRINGLEN - 1 as stap's */
static const char *ub_string(struct run *r)
{
	return arena_strn(r, r->ub.p ? r->ub.p : "", r->ub.len);
}

const char *bi_ubacktrace(struct run *r, struct node *n)
{
	const uint64_t *pcs;
	unsigned k = hit_ustack(r, &pcs);
	ubt_stack(ub_reset(r), ctx_pid(r), pcs, k, UBT_HEX);
	return ub_string(r);
}

const char *bi_sprint_ubacktrace(struct run *r, struct node *n)
{
	struct strbuf *b = ub_stack(r, UBT_SIMPLE);
	return arena_strn(r, b->p, b->len);
}

int64_t bi_print_ubacktrace(struct run *r, struct node *n)
{
	ub_emit(r, ub_stack(r, UBT_FULL));
	return 0;
}

int64_t bi_print_ubacktrace_brief(struct run *r, struct node *n)
{
	ub_emit(r, ub_stack(r, UBT_BRIEF));
	return 0;
}

/* ucallers(depth): the callers' addresses, depth of them (-1 all) */
const char *bi_ucallers(struct run *r, struct node *n)
{
	const uint64_t *pcs;
	unsigned k = hit_ustack(r, &pcs);
	int64_t depth = eval_n(r, n->args[0]);
	if (!ubt_callers(ub_reset(r), pcs, k, depth, MAXSTRINGLEN - 1))
		rt_error(r, n, "reached end of stack before unwinding to level %lld", (long long)depth);
	return ub_string(r);
}

/* ustack(n): pcs[n] (a negative n is 0, as stap's fallback reads it). */
int64_t bi_ustack(struct run *r, struct node *n)
{
	const uint64_t *pcs;
	unsigned k = hit_ustack(r, &pcs);
	int64_t i = eval_n(r, n->args[0]);
	if (!k || i >= (int64_t)k)
		rt_error(r, n, "reached end of stack before unwinding to level %lld", (long long)i);
	return (int64_t)pcs[i < 0 ? 0 : i];
}

/* print_ustack(s) and print_usyms(s): the addresses in s, a line each */
static int64_t print_usyms(struct run *r, struct node *n)
{
	const char *s = eval_s(r, n->args[0]);
	ubt_usyms(ub_reset(r), ctx_pid(r), s, 0);
	ub_emit(r, &r->ub);
	return 0;
}

int64_t bi_print_ustack(struct run *r, struct node *n)
{
	return print_usyms(r, n);
}

int64_t bi_print_usyms(struct run *r, struct node *n)
{
	return print_usyms(r, n);
}

static const char *sprint_usyms(struct run *r, struct node *n)
{
	const char *s = eval_s(r, n->args[0]);
	ubt_usyms(ub_reset(r), ctx_pid(r), s, MAXSTRINGLEN - 1);
	return ub_string(r);
}

const char *bi_sprint_ustack(struct run *r, struct node *n)
{
	return sprint_usyms(r, n);
}

const char *bi_sprint_usyms(struct run *r, struct node *n)
{
	return sprint_usyms(r, n);
}

/* usymname(), usymdata(), umodname() of an address of the hit's process,
 * as stap spells them: the name, "name+0xoff/0xsize [module]" (ubacktrace.c
 * writes it), the object's path; the address in hex, or "<unknown>", where
 * nothing is known. */
const char *bi_usymname(struct run *r, struct node *n)
{
	uint64_t addr = (uint64_t)eval_n(r, n->args[0]);
	struct usym u;
	char buf[PATH_MAX + 600];
	bool known = usym_lookup(ctx_pid(r), addr, &u);
	int len;

	if (!known || !u.name)
		len = snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
	else
		len = snprintf(buf, sizeof(buf), "%s", u.name + (u.name[0] == '.'));
	return arena_strn(r, buf, len > 0 && (size_t)len < sizeof(buf) ? (size_t)len : strlen(buf));
}

const char *bi_usymdata(struct run *r, struct node *n)
{
	uint64_t addr = (uint64_t)eval_n(r, n->args[0]);
	struct strbuf *b = ub_reset(r);

	ubt_addr(b, ctx_pid(r), addr, UBT_DATA);
	return arena_strn(r, b->p, b->len);
}

const char *bi_umodname(struct run *r, struct node *n)
{
	uint64_t addr = (uint64_t)eval_n(r, n->args[0]);
	struct usym u;
	char buf[PATH_MAX + 600];
	bool known = usym_lookup(ctx_pid(r), addr, &u);
	int len = snprintf(buf, sizeof(buf), "%s", known && u.module ? u.module : "<unknown>");
	return arena_strn(r, buf, len > 0 && (size_t)len < sizeof(buf) ? (size_t)len : strlen(buf));
}

/* usymfileline(addr), usymfile(addr), usymline(addr): the source line of
 * a code address of the process, from its object's DWARF (lib/
 * addr_line.c), as "FILE:LINE", FILE, LINE; the address in hex where
 * the line is not known, as stap says (tapset/ucontext-symbols.stp). */
static const char *usym_line_text(struct run *r, struct node *n, int what)
{
	uint64_t addr = (uint64_t)eval_n(r, n->args[0]);
	struct usym u;
	char file[PATH_MAX], buf[PATH_MAX + 32];
	int line, len;

	if (!usym_lookup(ctx_pid(r), addr, &u) || !u.module || !u.has_link ||
	    djp_addr_line(u.module, u.link, file, sizeof(file), &line))
		len = snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
	else if (what == 0)
		len = snprintf(buf, sizeof(buf), "%s:%d", file, line);
	else if (what == 1)
		len = snprintf(buf, sizeof(buf), "%s", file);
	else
		len = snprintf(buf, sizeof(buf), "%d", line);
	return arena_strn(r, buf, len > 0 && (size_t)len < sizeof(buf) ? (size_t)len : strlen(buf));
}

const char *bi_usymfileline(struct run *r, struct node *n)
{
	return usym_line_text(r, n, 0);
}

const char *bi_usymfile(struct run *r, struct node *n)
{
	return usym_line_text(r, n, 1);
}

const char *bi_usymline(struct run *r, struct node *n)
{
	return usym_line_text(r, n, 2);
}
