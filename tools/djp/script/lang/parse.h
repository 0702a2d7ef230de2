/*
 * The parser's state and the small readers its two files share: parser.c
 * reads the top level (globals, probes and their points, functions,
 * aliases), parse_stmt.c statements and expressions.  The readers are
 * static inline, so that their short names (accept, expect, take) name no
 * symbol of the program.
 */
#ifndef DJP_SCRIPT_PARSE_H
#define DJP_SCRIPT_PARSE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "lang.h"

struct parser {
	struct script *sc;
	struct tok *toks;
	size_t ntoks, pos;
	jmp_buf fail;
	int loop_depth;
	int depth; /* nesting levels open (see "Nesting" in parser.c) */
	/* the probe being parsed: its points' tokens [probe_from,
	 * probe_points_to), all of them function returns or not */
	size_t probe_from, probe_points_to;
	bool in_probe, probe_all_return;
	/* @entry of an expression (parse_stmt.c): the tokens of what it
	 * adds to the script, parsed after the script's own */
	struct tok *synth;
	size_t nsynth, capsynth;
	int nentry;
};

/* Deep enough for any script a person writes; shallow enough that every
 * recursive pass fits in a default 8 MiB stack many times over. */
#define MAX_NESTING 1000

static inline struct tok *peek(struct parser *ps, size_t ahead)
{
	size_t i = ps->pos + ahead;
	return &ps->toks[i < ps->ntoks ? i : ps->ntoks - 1];
}

static inline struct tok *take(struct parser *ps)
{
	struct tok *t = peek(ps, 0);
	if (ps->pos < ps->ntoks - 1)
		ps->pos++;
	return t;
}

static inline const char *tok_desc(const struct tok *t, char *buf, size_t sz)
{
	switch (t->kind) {
	case T_EOF: return "end of input";
	case T_NUM: snprintf(buf, sz, "number '%.*s'", (int)t->len, t->text); break;
	case T_STR: snprintf(buf, sz, "string \"%.40s\"", t->text); break;
	case T_IDENT: snprintf(buf, sz, "identifier '%s'", t->text); break;
	case T_DOLLAR: snprintf(buf, sz, "'$%s'", t->text); break;
	case T_DOLLAR2: snprintf(buf, sz, "'$$%s'", t->text); break;
	case T_AT: snprintf(buf, sz, "'@%s'", t->text); break;
	case T_OP: snprintf(buf, sz, "'%s'", t->text); break;
	}
	return buf;
}

__attribute__((noreturn, format(printf, 3, 4))) static inline void fail_at(struct parser *ps, struct tok *t, const char *fmt, ...)
{
	char msg[256], what[96];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag(ps->sc, t->line, t->col, "parse error", "%s, found %s", msg, tok_desc(t, what, sizeof(what)));
	longjmp(ps->fail, 1);
}

static inline void enter(struct parser *ps)
{
	if (++ps->depth > MAX_NESTING)
		fail_at(ps, peek(ps, 0), "nesting too deep (more than %d levels)", MAX_NESTING);
}

static inline void leave(struct parser *ps, int levels)
{
	ps->depth -= levels;
}

static inline bool is_op(const struct tok *t, const char *op)
{
	return t->kind == T_OP && !strcmp(t->text, op);
}

static inline bool is_kw(const struct tok *t, const char *kw)
{
	return t->kind == T_IDENT && !strcmp(t->text, kw);
}

static inline bool accept(struct parser *ps, const char *op)
{
	if (is_op(peek(ps, 0), op)) {
		take(ps);
		return true;
	}
	return false;
}

static inline struct tok *expect(struct parser *ps, const char *op)
{
	if (!is_op(peek(ps, 0), op))
		fail_at(ps, peek(ps, 0), "expected '%s'", op);
	return take(ps);
}

static inline struct tok *expect_ident(struct parser *ps, const char *what)
{
	if (peek(ps, 0)->kind != T_IDENT)
		fail_at(ps, peek(ps, 0), "expected %s", what);
	return take(ps);
}

static inline struct node *mk(struct parser *ps, int kind, struct tok *at)
{
	struct node *n = pool_alloc(ps->sc, sizeof(*n));
	n->kind = (uint8_t)kind;
	n->line = at->line;
	n->col = at->col;
	n->slot = -1;
	return n;
}

/* A growable list of nodes, copied into the pool when done. */
struct nlist {
	struct node *v[64];
	struct node **heap;
	int n, cap;
};

/* Past 64 entries the list grows in the script's pool, not on the heap: a
 * parse error unwinds by longjmp, and would leak a heap buffer. */
static inline void nl_add(struct parser *ps, struct nlist *l, struct node *x)
{
	if (l->n < 64) {
		l->v[l->n++] = x;
		return;
	}
	if (!l->heap || l->n == l->cap) {
		struct node **bigger;
		l->cap = l->cap ? l->cap * 2 : 256;
		bigger = pool_alloc(ps->sc, sizeof(*bigger) * (size_t)l->cap);
		memcpy(bigger, l->heap ? l->heap : l->v, sizeof(*bigger) * (size_t)l->n);
		l->heap = bigger;
	}
	l->heap[l->n++] = x;
}

static inline void nl_done(struct parser *ps, struct nlist *l, struct node *into)
{
	into->nargs = l->n;
	into->args = pool_alloc(ps->sc, sizeof(struct node *) * (size_t)(l->n + 1));
	memcpy(into->args, l->heap ? l->heap : l->v, sizeof(struct node *) * (size_t)l->n);
}

/* parse_stmt.c */
struct node *parse_expr(struct parser *ps);
struct node *parse_unary(struct parser *ps);
struct node *parse_statement(struct parser *ps);
/* { statements } */
struct node *parse_block(struct parser *ps);

#endif
