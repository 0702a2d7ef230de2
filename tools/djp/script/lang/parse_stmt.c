/*
 * Statements and expressions of the parser (parser.c has the essay):
 * stap's precedence ladder, from assignment (right associative, with
 * `<<<`) through ?:, || && | ^ & `in`, comparisons, shifts, `.`
 * concatenation, + -, * / %, unary and ++/--; then the statements, foreach
 * with its sort marks, limit and slices, try/catch.  Each nested rule
 * counts one level against MAX_NESTING (enter/leave).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "tools/djp/script/typed.h"

static void call_args(struct parser *ps, struct node *n)
{
	struct nlist l = { .n = 0 };
	expect(ps, "(");
	if (!is_op(peek(ps, 0), ")")) {
		do {
			if (l.n >= 32)
				fail_at(ps, peek(ps, 0), "too many arguments");
			nl_add(ps, &l, parse_expr(ps));
		} while (accept(ps, ","));
	}
	expect(ps, ")");
	nl_done(ps, &l, n);
}

static void key_list(struct parser *ps, struct node *n, const char *close)
{
	struct nlist l = { .n = 0 };
	do {
		struct tok *t = peek(ps, 0);
		if (l.n >= MAXKEYS)
			fail_at(ps, t, "more than %d array indexes", MAXKEYS);
		/* `*` alone is a slice's wildcard; check.c allows it where a
		 * slice means something */
		if (is_op(t, "*") && (is_op(peek(ps, 1), ",") || is_op(peek(ps, 1), close))) {
			take(ps);
			nl_add(ps, &l, mk(ps, N_WILD, t));
			n->post = 1;
			continue;
		}
		nl_add(ps, &l, parse_expr(ps));
	} while (accept(ps, ","));
	expect(ps, close);
	nl_done(ps, &l, n);
}

static const struct {
	const char *name;
	int kind;
} print_fns[] = {
	{ "printf", P_PRINTF }, { "sprintf", P_SPRINTF }, { "print", P_PRINT },
	{ "println", P_PRINTLN }, { "sprint", P_SPRINT }, { "sprintln", P_SPRINTLN },
	{ "printd", P_PRINTD }, { "printdln", P_PRINTDLN }, { "sprintd", P_SPRINTD },
	{ "print_folded", P_FOLDED },
};

/* "a" "b": adjacent literals join, as in C */
static struct node *string_literal(struct parser *ps, struct tok *t)
{
	struct node *n = mk(ps, N_STR, t);
	n->str = t->text;
	while (peek(ps, 0)->kind == T_STR) {
		struct tok *u = take(ps);
		size_t a = strlen(n->str);
		char *s = pool_alloc(ps->sc, a + u->len + 1);
		memcpy(s, n->str, a);
		memcpy(s + a, u->text, u->len + 1);
		n->str = s;
	}
	return n;
}

static struct node *typed_access(struct parser *ps, struct node *var);

/* $$name, $$parms, $$vars, $$locals, $$return, $$format; $$parms$ and the
 * like pretty-printed (tools/djp/script/typed.c) */
static struct node *dollar2(struct parser *ps, struct tok *t)
{
	struct node *n;
	size_t len = strlen(t->text);
	if (len && t->text[len - 1] == '$') {
		static const char *const all[] = { "parms", "vars", "locals", "return" };
		struct node *var = mk(ps, N_CTX, t);
		var->str = t->text;
		for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			if (!strncmp(t->text, all[i], strlen(all[i])) && t->text[strlen(all[i])] == '$') {
				n = typed_access(ps, var);
				n->tr->all = t->text[0];
				n->tr->text = t->text[len - 2] == '$' ? (i == 0 ? "$$parms$$" : i == 1 ? "$$vars$$" : i == 2 ? "$$locals$$" : "$$return$$")
								     : (i == 0 ? "$$parms$" : i == 1 ? "$$vars$" : i == 2 ? "$$locals$" : "$$return$");
				return n;
			}
	}
	if (!strcmp(t->text, "name"))
		return mk(ps, N_CTXNAME, t);
	if (!strcmp(t->text, "parms") || !strcmp(t->text, "vars") || !strcmp(t->text, "locals") ||
	    !strcmp(t->text, "return")) {
		n = mk(ps, N_CTXPARMS, t); /* which ones: n->str (ctx_vars.c) */
		n->str = t->text;
		return n;
	}
	if (!strcmp(t->text, "format"))
		return mk(ps, N_CTXFORMAT, t);
	ps->pos--;
	fail_at(ps, t, "unsupported context variable (only $$name, $$parms, $$vars, $$locals, $$return and $$format)");
}

/* @hist_log(s), @hist_linear(s, start, stop, interval) */
static struct node *at_hist(struct parser *ps, struct tok *t)
{
	struct node *n = mk(ps, N_HIST, t);
	n->op = t->text[5] == 'l' && t->text[6] == 'o' ? 1 : 2;
	call_args(ps, n);
	if (n->nargs != (n->op == 1 ? 1 : 4)) {
		ps->pos--;
		fail_at(ps, t, n->op == 1 ? "@hist_log takes one statistic"
					  : "@hist_linear takes a statistic, start, stop and interval");
	}
	return n;
}

/* @defined(e), @choose_defined(a, b) */
static struct node *at_defined(struct parser *ps, struct tok *t)
{
	struct node *n = mk(ps, N_DEFINED, t);
	n->op = t->text[0] == 'c';
	expect(ps, "(");
	n->a = parse_expr(ps);
	if (n->op) {
		expect(ps, ",");
		n->b = parse_expr(ps);
	}
	expect(ps, ")");
	return n;
}

/* An expression of context variables and numbers only: its value at the
 * return is its value at the entry. */
static bool of_parameters(const struct node *n)
{
	if (!n)
		return true;
	switch (n->kind) {
	case N_NUM:
		return true;
	case N_CTX: /* not $x$ (a string of members read at the return) */
		return !n->a && !(n->str[0] && n->str[strlen(n->str) - 1] == '$');
	case N_TYPED: /* $p->len: read at the entry at a return (typed.c) */
		return strcmp(n->tr->acc.var, "return") != 0;
	case N_BINOP:
	case N_CMP:
	case N_LOGAND:
	case N_LOGOR:
	case N_NOT:
	case N_NEG:
	case N_BITNOT:
	case N_TERNARY:
		return of_parameters(n->a) && of_parameters(n->b) && of_parameters(n->c);
	default:
		return false;
	}
}

/* Tokens for what @entry adds to the script: one token, the text's (at
 * the position of `at`, where an error in them would be said), or copies
 * of the script's own. */
static void synth_push(struct parser *ps, const struct tok *t)
{
	if (ps->nsynth == ps->capsynth &&
	    !(ps->synth = realloc(ps->synth, sizeof(*t) * (ps->capsynth = ps->capsynth * 2 + 64))))
		abort();
	ps->synth[ps->nsynth++] = *t;
}

static void synth_text(struct parser *ps, const char *text, const struct tok *at)
{
	struct src_file f = { "<@entry>", text };
	struct lexer lx;
	struct tok t;

	lex_init(&lx, &f, ps->sc);
	while (lex_next(&lx, &t) && t.kind != T_EOF) {
		t.line = at->line;
		t.col = at->col;
		synth_push(ps, &t);
	}
}

static void synth_toks(struct parser *ps, size_t from, size_t to, bool drop_return)
{
	for (size_t i = from; i < to; i++) {
		if (drop_return && is_op(&ps->toks[i], ".") && i + 1 < to && is_kw(&ps->toks[i + 1], "return"))
			i++;
		else
			synth_push(ps, &ps->toks[i]);
	}
}

/* @entry(EXPR) in a return probe: the value EXPR had at the entry.  The
 * engine keeps the entry's arguments for the return, so a return site's
 * $x is what $x was at the entry, and an expression of them and numbers
 * ($count * 2, $a + $b > 0) is the same there; a member of one ($p->len)
 * at a return is read at the entry (kernel/retprobes.c).  Any other
 * expression (@entry(gettimeofday_us()), the latency idiom) is evaluated
 * where stap evaluates it, at the entry: the script gets a probe of the
 * same functions' entries that keeps its value, keyed by the thread and
 * the stack pointer at the entry, and the return takes it back by its
 * own (the call's slot: 8 bytes below the return's stack pointer).  The
 * key names the call exactly: a recursive call, or a call whose return
 * was diverted before the entry probe was armed, never takes another's
 * value.  What it adds:
 *
 *   global __djp_entry_N
 *   function __djp_entry_take_N(t, s) { ... the value at [t, s - 8], deleted }
 *   probe POINTS-without-.return { __djp_entry_N[tid(), register("rsp")] = EXPR }
 */
static struct node *at_entry(struct parser *ps)
{
	struct tok *in, *at = &ps->toks[ps->pos - 1];
	struct node *n, *call;
	size_t from, to;
	char text[512];
	int id;

	expect(ps, "(");
	in = peek(ps, 0);
	from = ps->pos;
	n = parse_expr(ps);
	to = ps->pos;
	expect(ps, ")");
	if (of_parameters(n))
		return n;
	if (!ps->in_probe || !ps->probe_all_return) {
		diag(ps->sc, in->line, in->col, "semantic error",
		     "@entry of an expression is only in a probe whose points are all function returns");
		longjmp(ps->fail, 1);
	}
	id = ps->nentry++;
	snprintf(text, sizeof(text),
		 "global __djp_entry_%d\n"
		 "function __djp_entry_take_%d(t, s) { v = __djp_entry_%d[t, s - 8] delete __djp_entry_%d[t, s - 8] "
		 "return v }\n"
		 "probe ",
		 id, id, id, id);
	synth_text(ps, text, at);
	synth_toks(ps, ps->probe_from, ps->probe_points_to, true);
	snprintf(text, sizeof(text), " { __djp_entry_%d[tid(), register(\"rsp\")] = ", id);
	synth_text(ps, text, at);
	synth_toks(ps, from, to, false);
	synth_text(ps, " }\n", at);
	/* the return's: __djp_entry_take_N(tid(), register("rsp")) */
	snprintf(text, sizeof(text), "__djp_entry_take_%d", id);
	call = mk(ps, N_CALL, at);
	call->str = pool_strndup(ps->sc, text, strlen(text));
	call->nargs = 2;
	call->args = pool_alloc(ps->sc, 2 * sizeof(*call->args));
	call->args[0] = mk(ps, N_CALL, at);
	call->args[0]->str = "tid";
	call->args[1] = mk(ps, N_CALL, at);
	call->args[1]->str = "register";
	call->args[1]->nargs = 1;
	call->args[1]->args = pool_alloc(ps->sc, sizeof(*call->args));
	call->args[1]->args[0] = mk(ps, N_STR, at);
	call->args[1]->args[0]->str = "rsp";
	return call;
}

static struct node *typed_access(struct parser *ps, struct node *var);
static _Noreturn void not_yet(struct parser *ps, const struct tok *t, const char *what);

/* pointer_arg(N) and the calls that read a whole argument register,
 * with a literal: @cast's address without DWARF (run/builtins/
 * dwarfless.c says which register each reads). */
static bool is_address_call(const struct node *n)
{
	static const char *const by_n[] = { "pointer_arg", "ulong_arg", "long_arg", "u64_arg", "s64_arg" };

	if (n->nargs != 1)
		return false;
	for (size_t i = 0; i < sizeof(by_n) / sizeof(by_n[0]); i++)
		if (!strcmp(n->str, by_n[i]))
			return n->args[0]->kind == N_NUM;
	return (!strcmp(n->str, "register") || !strcmp(n->str, "u_register")) && n->args[0]->kind == N_STR;
}

/* @cast($var, "struct T"[, "PATH"])->member...: a typed access whose
 * variable's value is the address of a T (tools/djp/script/typed.c); the
 * variable may be pointer_arg(N) or register("NAME") and their kin. */
static struct node *at_cast(struct parser *ps, struct tok *at)
{
	struct node *var, *n, *value = NULL;
	struct tok *ty, *path = NULL, *in;
	char *text;
	size_t len;

	expect(ps, "(");
	in = peek(ps, 0);
	var = parse_expr(ps);
	if (var->kind == N_CALL && is_address_call(var)) {
		/* the address an argument register holds, by the ABI: a
		 * context variable named as written (typed.c resolves it) */
		struct node *call = var;
		char *name = malloc(strlen(call->str) + 64);

		if (!name)
			abort();
		if (call->args[0]->kind == N_NUM)
			sprintf(name, "%s(%lld)", call->str, (long long)call->args[0]->num);
		else
			sprintf(name, "%s(\"%.40s\")", call->str, call->args[0]->str);
		var = mk(ps, N_CTX, in);
		var->str = name;
		var->a = call;
	} else if (var->kind != N_CTX) {
		/* a value the script computes: a local that holds a context
		 * variable is read as it (typed.c, "Script values") */
		value = var;
		var = mk(ps, N_CTX, in);
		var->str = value->kind == N_VAR ? value->str : "(expression)";
	}
	expect(ps, ",");
	ty = take(ps);
	if (ty->kind != T_STR) {
		ps->pos--;
		fail_at(ps, ty, "expected a type name string (\"struct T\")");
	}
	if (is_op(peek(ps, 0), ",")) {
		take(ps);
		path = take(ps);
		if (path->kind != T_STR) {
			ps->pos--;
			fail_at(ps, path, "expected the path of an object");
		}
	}
	expect(ps, ")");
	if (!is_op(peek(ps, 0), "->") && !is_op(peek(ps, 0), "["))
		not_yet(ps, peek(ps, 0), "@cast without a member after it (only @cast(...)->member)");
	n = typed_access(ps, var);
	n->tr->acc.cast_type = ty->text;
	n->tr->acc.cast_path = path ? path->text : NULL;
	n->tr->base_call = var->a;
	if (value) {
		if (n->tr->pretty)
			not_yet(ps, in, "a pretty-printed @cast of a value the script computes (only of a context "
					"variable or an argument register)");
		n->tr->base_value = value;
		n->a = value; /* checked, resolved and run as any expression */
	}
	/* said as written */
	len = strlen(n->tr->text) + strlen(ty->text) + (path ? strlen(path->text) : 0) + 32;
	text = pool_alloc(ps->sc, len);
	snprintf(text, len, "@cast(%s%s, \"%s\"%s%s%s)%s", var->a || value ? "" : "$", n->tr->acc.var, ty->text,
		 path ? ", \"" : "", path ? path->text : "", path ? "\"" : "",
		 n->tr->text + 1 + strlen(n->tr->acc.var));
	n->tr->text = text;
	(void)at;
	return n;
}

/* An @ operator stap has and djp does not, said as such; else unknown. */
static _Noreturn void at_unknown(struct parser *ps, struct tok *t)
{
	static const char *const later[] = { "var",   "this1", "this2",     "this3",     "this4",
					     "this5", "this6", "this7", "this8",     "this9",     "kregister",
					     "uregister", "probewrite", "const" };
	ps->pos--;
	for (size_t i = 0; i < sizeof(later) / sizeof(later[0]); i++)
		if (!strcmp(t->text, later[i])) {
			diag(ps->sc, t->line, t->col, "parse error", "not supported yet: @%s", t->text);
			longjmp(ps->fail, 1);
		}
	fail_at(ps, t, "unknown operator (expected @count @sum @min @max @avg @variance @hist_log @hist_linear)");
}

static struct node *at_operator(struct parser *ps, struct tok *t)
{
	static const char *const aggs[] = { "count", "sum", "min", "max", "avg", "variance" };
	for (int i = 0; i < 6; i++) {
		if (!strcmp(t->text, aggs[i])) {
			struct node *n = mk(ps, N_AGG, t);
			n->op = i;
			expect(ps, "(");
			n->a = parse_expr(ps);
			expect(ps, ")");
			return n;
		}
	}
	if (!strcmp(t->text, "hist_log") || !strcmp(t->text, "hist_linear"))
		return at_hist(ps, t);
	if (!strcmp(t->text, "defined") || !strcmp(t->text, "choose_defined"))
		return at_defined(ps, t);
	if (!strcmp(t->text, "entry"))
		return at_entry(ps);
	if (!strcmp(t->text, "var")) { /* @var("name@file.c"[, "PATH"]): a call of the built-in "@var" */
		struct node *n = mk(ps, N_CALL, t);
		n->str = "@var";
		call_args(ps, n);
		return n;
	}
	if (!strcmp(t->text, "cast"))
		return at_cast(ps, t);
	at_unknown(ps, t);
}

/* A name: a call (print and its kin have nodes of their own), an array
 * element, or a variable. */
static struct node *identifier(struct parser *ps, struct tok *t)
{
	struct node *n;
	if (is_op(peek(ps, 0), "(")) {
		for (size_t i = 0; i < sizeof(print_fns) / sizeof(print_fns[0]); i++) {
			if (!strcmp(t->text, print_fns[i].name)) {
				n = mk(ps, N_PRINT, t);
				n->op = print_fns[i].kind;
				call_args(ps, n);
				return n;
			}
		}
		n = mk(ps, N_CALL, t);
		n->str = t->text;
		call_args(ps, n);
		return n;
	}
	if (is_op(peek(ps, 0), "[")) {
		take(ps);
		n = mk(ps, N_INDEX, t);
		n->str = t->text;
		key_list(ps, n, "]");
		return n;
	}
	n = mk(ps, N_VAR, t);
	n->str = t->text;
	return n;
}

/* [k, ...] in array */
static struct node *keys_in(struct parser *ps, struct tok *t)
{
	struct node *n = mk(ps, N_IN, t);
	struct tok *arr;
	key_list(ps, n, "]");
	if (!is_kw(peek(ps, 0), "in"))
		fail_at(ps, peek(ps, 0), "expected 'in'");
	take(ps);
	arr = expect_ident(ps, "an array name");
	n->str = arr->text;
	return n;
}

static struct node *primary(struct parser *ps)
{
	struct tok *t = take(ps);
	struct node *n;

	switch (t->kind) {
	case T_NUM:
		n = mk(ps, N_NUM, t);
		n->num = t->num;
		return n;
	case T_STR: return string_literal(ps, t);
	case T_DOLLAR:
		n = mk(ps, N_CTX, t);
		n->str = t->text;
		return n;
	case T_DOLLAR2: return dollar2(ps, t);
	case T_AT: return at_operator(ps, t);
	case T_IDENT: return identifier(ps, t);
	case T_OP:
		if (is_op(t, "(")) {
			n = parse_expr(ps);
			expect(ps, ")");
			return n;
		}
		if (is_op(t, "["))
			return keys_in(ps, t);
		break;
	default:
		break;
	}
	ps->pos--;
	fail_at(ps, t, "expected an expression");
}

/* stap constructs the parser knows but djp does not run yet: said as such,
 * at their place, rather than as a syntax error after them */
static _Noreturn void not_yet(struct parser *ps, const struct tok *t, const char *what)
{
	diag(ps->sc, t->line, t->col, "parse error", "not supported yet: %s", what);
	longjmp(ps->fail, 1);
}

/* name without its pretty-printing suffix ($ or $$, counted in *pretty),
 * in the script's storage */
static const char *strip_pretty(struct parser *ps, const char *name, unsigned *pretty)
{
	size_t n = strlen(name);
	unsigned d = 0;
	char *s;
	while (n && name[n - 1] == '$' && d < 2)
		n--, d++;
	if (!d)
		return name;
	*pretty = d;
	s = pool_alloc(ps->sc, n + 1);
	memcpy(s, name, n);
	s[n] = 0;
	return s;
}

/* $var->m->n[i]...: a typed access (tools/djp/script/typed.c), at the
 * first operator, whose position a fault names */
static struct node *typed_access(struct parser *ps, struct node *var)
{
	struct tok *t = peek(ps, 0);
	struct node *n = mk(ps, N_TYPED, t);
	/* the script's own storage: a parse error below leaves the access
	 * behind, freed with the script */
	struct typed_ref *tr = memset(pool_alloc(ps->sc, sizeof(*tr)), 0, sizeof(*tr));
	size_t len;
	char *text;

	n->tr = tr;
	tr->idx = -1;
	tr->acc.var = strip_pretty(ps, var->str, &tr->pretty);
	len = strlen(var->str) + 4;
	for (;;) {
		struct djp_typed_step *st = &tr->acc.step[tr->acc.nsteps];
		t = peek(ps, 0);
		if (!is_op(t, "->") && !is_op(t, "["))
			break;
		if (tr->pretty)
			fail_at(ps, t, "nothing may follow a pretty-printed value ($var$)");
		if (tr->acc.nsteps == DJP_TYPED_MAX_STEPS)
			fail_at(ps, t, "too many steps in one access");
		take(ps);
		if (is_op(t, "->")) {
			st->member = strip_pretty(ps, expect_ident(ps, "a member name")->text, &tr->pretty);
			len += strlen(st->member) + 4;
		} else {
			struct tok *i = take(ps);
			if (i->kind == T_DOLLAR && i->text[0] && !isdigit((unsigned char)i->text[0]) &&
			    i->text[strlen(i->text) - 1] != '$') {
				st->index_var = i->text; /* [$i]: read at the hit */
				len += strlen(i->text) + 4;
			} else if (i->kind != T_NUM) {
				ps->pos--;
				not_yet(ps, i, "an index into a target variable that is neither a number literal nor a "
					       "context variable ($i)");
			}
			st->is_index = true;
			st->index = i->kind == T_NUM ? i->num : 0;
			len += 24;
			expect(ps, "]");
			if (is_op(peek(ps, 0), "$") || is_op(peek(ps, 0), "$$")) /* $var[1]$ */
				tr->pretty = take(ps)->len;
		}
		tr->acc.nsteps++;
	}
	if (!tr->acc.nsteps) { /* $var$: at the variable */
		n->line = var->line;
		n->col = var->col;
	}
	text = pool_alloc(ps->sc, len + 1);
	len = (size_t)sprintf(text, "$%s", tr->acc.var);
	for (unsigned i = 0; i < tr->acc.nsteps; i++)
		len += (size_t)(tr->acc.step[i].index_var ? sprintf(text + len, "[$%s]", tr->acc.step[i].index_var)
				: tr->acc.step[i].is_index ? sprintf(text + len, "[%lld]", (long long)tr->acc.step[i].index)
							   : sprintf(text + len, "->%s", tr->acc.step[i].member));
	sprintf(text + len, "%s", tr->pretty == 2 ? "$$" : tr->pretty ? "$" : "");
	tr->text = text;
	return n;
}

/* @var("name@file.c")->member (and &@var(...)): a typed access from the
 * global (lib/typed_compile.c), at t, its steps parsed here */
static struct node *var_access(struct parser *ps, struct node *call, struct tok *t)
{
	struct node *var = mk(ps, N_CTX, t), *n;
	const char *spec = call->nargs >= 1 && call->args[0]->kind == N_STR ? call->args[0]->str : NULL;
	char *text;

	if (!spec || call->nargs != 1)
		not_yet(ps, t, "a typed access from @var of another object, or of a name that is not a literal");
	if (!(text = malloc(strlen(spec) + 16)))
		abort();
	sprintf(text, "@var(\"%s\")", spec);
	var->str = text;
	n = typed_access(ps, var);
	typed_set_global(&n->tr->acc, spec);
	n->tr->text++; /* as written: no '$' */
	return n;
}

static struct node *postfix(struct parser *ps)
{
	struct node *n = primary(ps);
	struct tok *t = peek(ps, 0);

	if (n->kind == N_CTX && (is_op(t, "->") || is_op(t, "[") || (n->str[0] && n->str[strlen(n->str) - 1] == '$'))) {
		n = typed_access(ps, n);
		t = peek(ps, 0);
	} else if (n->kind == N_CALL && n->str && !strcmp(n->str, "@var") && (is_op(t, "->") || is_op(t, "["))) {
		n = var_access(ps, n, t);
		t = peek(ps, 0);
	} else if (n->kind == N_VAR && is_op(t, "->")) {
		/* p->member on a local: the access of the context variable p
		 * holds, where typed.c ("Script values") can prove it */
		struct node *var = mk(ps, N_CTX, t), *value = n;
		var->str = value->str;
		n = typed_access(ps, var);
		n->tr->base_value = value;
		n->a = value;
		n->tr->text++; /* as written: no '$' */
		t = peek(ps, 0);
	}
	if (is_op(t, "->"))
		not_yet(ps, t, "'->' on anything but a target variable");
	if (is_op(t, "++") || is_op(t, "--")) {
		struct node *u = mk(ps, N_INCDEC, t);
		take(ps);
		u->op = t->text[0];
		u->post = 1;
		u->a = n;
		return u;
	}
	return n;
}

struct node *parse_unary(struct parser *ps)
{
	struct tok *t = peek(ps, 0);
	struct node *n;

	if (is_op(t, "++") || is_op(t, "--")) {
		take(ps);
		n = mk(ps, N_INCDEC, t);
		n->op = t->text[0];
		enter(ps);
		n->a = parse_unary(ps);
		leave(ps, 1);
		return n;
	}
	if (is_op(t, "&") && peek(ps, 1)->kind == T_DOLLAR) {
		take(ps);
		n = postfix(ps);
		if (n->kind == N_CTX && !n->a) /* &$var: where it is, if in memory (typed_compile.c) */
			n = typed_access(ps, n);
		if (n->kind != N_TYPED)
			not_yet(ps, t, "'&' of this target variable");
		n->tr->acc.addr_of = true;
		return n;
	}
	if (is_op(t, "&") && peek(ps, 1)->kind == T_AT) {
		/* &@var("g"), &@var("g")->m, &@cast(p, "T")->m: an address */
		take(ps);
		n = postfix(ps);
		if (n->kind == N_CALL && n->str && !strcmp(n->str, "@var"))
			n = var_access(ps, n, t);
		if (n->kind != N_TYPED)
			not_yet(ps, t, "'&' of an @ operator other than @var and @cast");
		n->tr->acc.addr_of = true;
		return n;
	}
	if (is_op(t, "-") || is_op(t, "!") || is_op(t, "~") || is_op(t, "+")) {
		take(ps);
		enter(ps);
		if (is_op(t, "+")) {
			n = parse_unary(ps);
			leave(ps, 1);
			return n;
		}
		n = mk(ps, is_op(t, "-") ? N_NEG : is_op(t, "!") ? N_NOT : N_BITNOT, t);
		n->a = parse_unary(ps);
		leave(ps, 1);
		if (n->kind == N_NEG && n->a->kind == N_NUM) {
			n->a->num = (int64_t)(0 - (uint64_t)n->a->num);
			n->a->line = n->line;
			n->a->col = n->col;
			return n->a;
		}
		return n;
	}
	return postfix(ps);
}

/* One left-associative binary level: ops is a NULL-terminated list. */
static struct node *binary(struct parser *ps, struct node *(*sub)(struct parser *), const char *const *ops, int kind)
{
	struct node *l = sub(ps);
	int links = 0;
	for (;;) {
		struct tok *t = peek(ps, 0);
		const char *const *o;
		struct node *n;
		for (o = ops; *o && !is_op(t, *o); o++)
			;
		if (!*o) {
			leave(ps, links);
			return l;
		}
		take(ps);
		enter(ps); /* the tree is one level deeper for each link */
		links++;
		n = mk(ps, kind, t);
		n->op = t->text[0] | (t->text[1] << 8);
		n->a = l;
		n->b = sub(ps);
		l = n;
	}
}

#define LEVEL(fn, sub, kind, ...)                                                            \
	static struct node *fn(struct parser *ps)                                            \
	{                                                                                    \
		static const char *const ops[] = { __VA_ARGS__, NULL };                      \
		return binary(ps, sub, ops, kind);                                           \
	}

LEVEL(multiplicative, parse_unary, N_BINOP, "*", "/", "%")
LEVEL(additive, multiplicative, N_BINOP, "+", "-")
LEVEL(concatenation, additive, N_CONCAT, ".")
LEVEL(shift, concatenation, N_BINOP, "<<", ">>")
LEVEL(comparison, shift, N_CMP, "<", ">", "<=", ">=", "==", "!=", "=~", "!~")

static struct node *array_in(struct parser *ps)
{
	struct node *l = comparison(ps);
	int links = 0;
	while (is_kw(peek(ps, 0), "in")) {
		struct tok *t = take(ps), *arr = expect_ident(ps, "an array name");
		enter(ps);
		links++;
		struct node *n = mk(ps, N_IN, t);
		n->nargs = 1;
		n->args = pool_alloc(ps->sc, sizeof(struct node *));
		n->args[0] = l;
		n->str = arr->text;
		l = n;
	}
	leave(ps, links);
	return l;
}

LEVEL(bit_and, array_in, N_BINOP, "&")
LEVEL(bit_xor, bit_and, N_BINOP, "^")
LEVEL(bit_or, bit_xor, N_BINOP, "|")
LEVEL(logical_and, bit_or, N_LOGAND, "&&")
LEVEL(logical_or, logical_and, N_LOGOR, "||")

static struct node *ternary(struct parser *ps)
{
	struct node *c = logical_or(ps);
	struct tok *t = peek(ps, 0);
	if (is_op(t, "?")) {
		struct node *n = mk(ps, N_TERNARY, t);
		take(ps);
		n->a = c;
		n->b = parse_expr(ps);
		expect(ps, ":");
		enter(ps);
		n->c = ternary(ps);
		leave(ps, 1);
		return n;
	}
	return c;
}

static struct node *assignment(struct parser *ps);

struct node *parse_expr(struct parser *ps)
{
	struct node *n;

	enter(ps);
	n = assignment(ps);
	leave(ps, 1);
	return n;
}

static struct node *assignment(struct parser *ps)
{
	static const char *const assign_ops[] = { "=", "+=", "-=", "*=", "/=", "%=", ".=",
						  "<<=", ">>=", "&=", "|=", "^=", "<<<" };
	struct node *l = ternary(ps);
	struct tok *t = peek(ps, 0);

	for (size_t i = 0; i < sizeof(assign_ops) / sizeof(assign_ops[0]); i++) {
		struct node *n;
		if (!is_op(t, assign_ops[i]))
			continue;
		if (l->kind != N_VAR && l->kind != N_INDEX)
			fail_at(ps, t, "left side of '%s' is not a variable or array element", t->text);
		take(ps);
		if (i == 12) {
			n = mk(ps, N_STATADD, t);
		} else {
			n = mk(ps, N_ASSIGN, t);
			n->op = i == 0 ? 0 : (t->text[0] | (t->text[1] == '=' ? 0 : t->text[1] << 8));
		}
		n->a = l;
		n->b = parse_expr(ps);
		return n;
	}
	return l;
}

struct node *parse_block(struct parser *ps)
{
	struct tok *t = expect(ps, "{");
	struct node *n = mk(ps, S_BLOCK, t);
	struct nlist l = { .n = 0 };
	while (!is_op(peek(ps, 0), "}")) {
		if (peek(ps, 0)->kind == T_EOF)
			fail_at(ps, peek(ps, 0), "expected '}'");
		nl_add(ps, &l, parse_statement(ps));
	}
	take(ps);
	nl_done(ps, &l, n);
	return n;
}

static int sort_mark(struct parser *ps)
{
	if (accept(ps, "+"))
		return 1;
	if (accept(ps, "-"))
		return -1;
	return 0;
}

static void set_sort(struct parser *ps, struct node *n, struct tok *at, int col, int dir)
{
	if (!dir)
		return;
	if (n->fe_sort_dir)
		fail_at(ps, at, "multiple sort directives");
	n->fe_sort_col = col;
	n->fe_sort_dir = dir;
}

static struct node *var_decl(struct parser *ps, struct tok *t)
{
	struct node *v = mk(ps, N_VAR, t);
	v->str = t->text;
	return v;
}

static struct node *foreach_stmt(struct parser *ps, struct tok *kw)
{
	struct node *n = mk(ps, S_FOREACH, kw);
	struct tok *t;
	struct node *keys[MAXKEYS];
	int d;

	n->fe_sort_col = -1;
	expect(ps, "(");
	t = peek(ps, 0);
	if (t->kind == T_IDENT && (is_op(peek(ps, 1), "=") ||
				   ((is_op(peek(ps, 1), "+") || is_op(peek(ps, 1), "-")) && is_op(peek(ps, 2), "=")))) {
		take(ps);
		n->d = var_decl(ps, t); /* value variable, resolved in check.c */
		set_sort(ps, n, peek(ps, 0), 0, sort_mark(ps));
		expect(ps, "=");
	}
	if (accept(ps, "[")) {
		do {
			struct tok *k = expect_ident(ps, "a key variable");
			if (n->fe_nkeys == MAXKEYS)
				fail_at(ps, k, "more than %d keys", MAXKEYS);
			keys[n->fe_nkeys++] = var_decl(ps, k);
			set_sort(ps, n, peek(ps, 0), n->fe_nkeys, sort_mark(ps));
		} while (accept(ps, ","));
		expect(ps, "]");
	} else {
		struct tok *k = expect_ident(ps, "a key variable or '['");
		keys[n->fe_nkeys++] = var_decl(ps, k);
		set_sort(ps, n, peek(ps, 0), 1, sort_mark(ps));
	}
	if (!is_kw(peek(ps, 0), "in"))
		fail_at(ps, peek(ps, 0), "expected 'in'");
	take(ps);
	t = expect_ident(ps, "an array name");
	n->str = t->text;
	if (is_op(peek(ps, 0), "[")) {
		/* foreach ([a, b] in x[*, "k"]): only the elements that match */
		n->fe_slice = mk(ps, N_INDEX, take(ps));
		n->fe_slice->str = t->text;
		key_list(ps, n->fe_slice, "]");
	}
	if (peek(ps, 0)->kind == T_AT) {
		/* foreach (k in stats @sum-): sort by that aggregate */
		static const char *const aggs[] = { "count", "sum", "min", "max", "avg" };
		struct tok *a = take(ps);
		size_t i;
		for (i = 0; i < sizeof(aggs) / sizeof(aggs[0]) && strcmp(a->text, aggs[i]); i++)
			;
		if (i == sizeof(aggs) / sizeof(aggs[0]))
			fail_at(ps, a, "expected @count, @sum, @min, @max or @avg to sort by");
		n->fe_sort_agg = (int)i;
	}
	d = sort_mark(ps);
	set_sort(ps, n, t, 0, d);
	if (is_kw(peek(ps, 0), "limit")) {
		take(ps);
		n->fe_limit = parse_expr(ps);
	}
	expect(ps, ")");
	n->nargs = n->fe_nkeys;
	n->args = pool_alloc(ps->sc, sizeof(struct node *) * MAXKEYS);
	memcpy(n->args, keys, sizeof(struct node *) * (size_t)n->fe_nkeys);
	ps->loop_depth++;
	n->a = parse_statement(ps);
	ps->loop_depth--;
	return n;
}

static struct node *statement_at(struct parser *ps);

struct node *parse_statement(struct parser *ps)
{
	struct node *n;

	enter(ps);
	n = statement_at(ps);
	leave(ps, 1);
	return n;
}

/* try { } catch [(msg)] { } */
static struct node *try_stmt(struct parser *ps, struct tok *t)
{
	struct node *n = mk(ps, S_TRY, t);
	n->a = parse_block(ps);
	if (!is_kw(peek(ps, 0), "catch"))
		fail_at(ps, peek(ps, 0), "expected 'catch' after the try block");
	take(ps);
	if (accept(ps, "(")) {
		n->str = expect_ident(ps, "the name of the error message's variable")->text;
		expect(ps, ")");
	}
	n->b = parse_block(ps);
	return n;
}

static struct node *if_stmt(struct parser *ps, struct tok *t)
{
	struct node *n = mk(ps, S_IF, t);
	expect(ps, "(");
	n->a = parse_expr(ps);
	expect(ps, ")");
	n->b = parse_statement(ps);
	if (is_kw(peek(ps, 0), "else")) {
		take(ps);
		n->c = parse_statement(ps);
	}
	return n;
}

static struct node *while_stmt(struct parser *ps, struct tok *t)
{
	struct node *n = mk(ps, S_WHILE, t);
	expect(ps, "(");
	n->a = parse_expr(ps);
	expect(ps, ")");
	ps->loop_depth++;
	n->b = parse_statement(ps);
	ps->loop_depth--;
	return n;
}

/* for ([init]; [cond]; [step]) body */
static struct node *for_stmt(struct parser *ps, struct tok *t)
{
	struct node *n = mk(ps, S_FOR, t);
	expect(ps, "(");
	if (!is_op(peek(ps, 0), ";"))
		n->a = parse_expr(ps);
	expect(ps, ";");
	if (!is_op(peek(ps, 0), ";"))
		n->b = parse_expr(ps);
	expect(ps, ";");
	if (!is_op(peek(ps, 0), ")"))
		n->c = parse_expr(ps);
	expect(ps, ")");
	ps->loop_depth++;
	n->d = parse_statement(ps);
	ps->loop_depth--;
	return n;
}

/* break, continue: in a loop only */
static struct node *jump_stmt(struct parser *ps, struct tok *t)
{
	struct node *n;
	if (!ps->loop_depth)
		fail_at(ps, t, "'%s' outside a loop", t->text);
	n = mk(ps, t->text[0] == 'b' ? S_BREAK : S_CONTINUE, t);
	accept(ps, ";");
	return n;
}

static struct node *next_stmt(struct parser *ps, struct tok *t)
{
	struct node *n = mk(ps, S_NEXT, t);
	accept(ps, ";");
	return n;
}

static struct node *return_stmt(struct parser *ps, struct tok *t)
{
	struct node *n = mk(ps, S_RETURN, t);
	if (!is_op(peek(ps, 0), ";") && !is_op(peek(ps, 0), "}"))
		n->a = parse_expr(ps);
	accept(ps, ";");
	return n;
}

static struct node *delete_stmt(struct parser *ps, struct tok *t)
{
	struct node *n = mk(ps, S_DELETE, t);
	n->a = primary(ps);
	if (n->a->kind != N_VAR && n->a->kind != N_INDEX)
		fail_at(ps, t, "delete needs a variable, an array or an array element");
	accept(ps, ";");
	return n;
}

/* The statements a keyword starts, read after it. */
static const struct {
	const char *kw;
	struct node *(*read)(struct parser *ps, struct tok *kw);
} keyword_stmts[] = {
	{ "try", try_stmt },	   { "if", if_stmt },	      { "while", while_stmt },   { "for", for_stmt },
	{ "foreach", foreach_stmt }, { "break", jump_stmt },    { "continue", jump_stmt }, { "next", next_stmt },
	{ "return", return_stmt }, { "delete", delete_stmt },
};

static struct node *statement_at(struct parser *ps)
{
	struct tok *t = peek(ps, 0);
	struct node *n;

	if (is_op(t, "{"))
		return parse_block(ps);
	if (is_op(t, ";")) {
		take(ps);
		return mk(ps, S_NOP, t);
	}
	if (t->kind == T_IDENT) {
		for (size_t i = 0; i < sizeof(keyword_stmts) / sizeof(keyword_stmts[0]); i++)
			if (!strcmp(t->text, keyword_stmts[i].kw)) {
				take(ps);
				return keyword_stmts[i].read(ps, t);
			}
		if (!strcmp(t->text, "global") || !strcmp(t->text, "probe") || !strcmp(t->text, "function"))
			fail_at(ps, t, "expected a statement");
	}
	n = mk(ps, S_EXPR, t);
	n->a = parse_expr(ps);
	accept(ps, ";");
	return n;
}
