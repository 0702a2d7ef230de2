/*
 * The token pass between the lexer and the parser: what stap does to a
 * script before it parses it.
 *
 *  - Script arguments: `$1`..`$N` become the argument's own token (a number
 *    or a name: `probe $1 { }` with `begin`), `@1`..`@N` a string literal,
 *    `$#` and `@#` how many there are (a number, a string).  A missing one is
 *    stap's error, at the reference.
 *  - Conditionals: `%( CONDITION %? TOKENS %: TOKENS %)`, the `%:` part
 *    optional, nested freely.  A condition compares, with `== != < <= >
 *    >=`, one of `kernel_v` and `kernel_vr` (this kernel's release, compared
 *    as dotted versions), `systemtap_v` (the stap version this tool speaks:
 *    4.9), `arch` ("x86_64"), `runtime` ("dyninst": probes run in user
 *    space, as stap's dyninst runtime's do), `systemtap_privilege`
 *    ("stapusr"), `guru_mode` (0), `CONFIG_NAME` ("": no kernel
 *    configuration here), a script argument, a number or a string, with a
 *    value; conditions combine with `&&` and `||`.
 *  - Macros: `@define NAME %( TOKENS %)` and `@define NAME(a, b) %( ...
 *    @a ... %)`, used as `@NAME` or `@NAME(x, y)`; a body may use other
 *    macros, never itself.
 *
 * The output is a new token array; positions stay those of the text the
 * tokens came from (an argument's tokens take the reference's).
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "lang.h"

#define MACRO_MAX 256
#define MACRO_PARAMS 16
#define EXPAND_DEPTH 64	       /* macros within macros */
#define EXPAND_TOKENS (1u << 17) /* tokens a script may grow by expansion: 30x
				  * the largest real script, and a bound a fuzzer
				  * gets through in milliseconds */

struct macro {
	const char *name;
	const char *param[MACRO_PARAMS];
	int nparams;
	const struct tok *body;
	size_t nbody;
};

struct pp {
	struct script *sc;
	struct tok *out;
	size_t nout, cap;
	size_t limit; /* the input's tokens and EXPAND_TOKENS more */
	struct macro macro[MACRO_MAX];
	int nmacros;
	int errors;
	bool stop; /* an error after which going on would only repeat it */
};

static bool is_op(const struct tok *t, const char *op)
{
	return t->kind == T_OP && !strcmp(t->text, op);
}

__attribute__((format(printf, 3, 4))) static void error_at(struct pp *p, const struct tok *t, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	diag(p->sc, t->line, t->col, "parse error", "%s", msg);
	p->errors++;
}

static void emit(struct pp *p, const struct tok *t)
{
	if (p->nout >= p->limit) {
		if (!p->stop)
			error_at(p, t, "the script expands to too many tokens");
		p->stop = true;
		return;
	}
	if (p->nout == p->cap) {
		struct tok *n = realloc(p->out, sizeof(*n) * (p->cap = p->cap ? 2 * p->cap : 256));
		if (!n)
			abort();
		p->out = n;
	}
	p->out[p->nout++] = *t;
}

/* Argument n (1-based) of `$n`/`@n`, or NULL after stap's error. */
static const char *script_arg(struct pp *p, const struct tok *t, const char *digits)
{
	long n = strtol(digits, NULL, 10);
	if (n < 1 || n > p->sc->nargs) {
		error_at(p, t, "command line argument index %ld out of range [1-%d]", n, p->sc->nargs);
		return NULL;
	}
	return p->sc->args[n - 1];
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

/* `$n`, `@n`, `$#`, `@#` as the tokens they stand for; false when t is
 * none of them. */
static bool arg_token(struct pp *p, const struct tok *t, struct tok *out)
{
	const char *v;
	char count[16];
	if ((t->kind != T_DOLLAR && t->kind != T_AT) || (strcmp(t->text, "#") && !all_digits(t->text)))
		return false;
	*out = *t;
	if (!strcmp(t->text, "#")) {
		snprintf(count, sizeof(count), "%d", p->sc->nargs);
		v = count;
	} else if (!(v = script_arg(p, t, t->text))) {
		out->kind = T_NUM; /* the error is said; go on to find others */
		out->num = 0;
		return true;
	}
	if (t->kind == T_AT) {
		out->kind = T_STR;
		out->text = pool_strndup(p->sc, v, strlen(v));
		out->len = strlen(v);
		return true;
	}
	/* $n: the argument's own token, a number or a name */
	{
		char *end;
		long long n = strtoll(v, &end, 0);
		if (*v && !*end) {
			out->kind = T_NUM;
			out->num = n;
			out->text = pool_strndup(p->sc, v, strlen(v));
			return true;
		}
	}
	if (*v && (isalpha((unsigned char)*v) || *v == '_')) {
		const char *c = v;
		while (isalnum((unsigned char)*c) || *c == '_')
			c++;
		if (!*c) {
			out->kind = T_IDENT;
			out->text = pool_strndup(p->sc, v, strlen(v));
			out->len = strlen(v);
			return true;
		}
	}
	error_at(p, t, "command line argument $%s ('%s') is neither a number nor a name", t->text, v);
	out->kind = T_NUM;
	out->num = 0;
	return true;
}

/* `$n` whose argument is more than one number or name ('5+5', 'a.b'):
 * stap pastes its text into the input, lexed as the script is.  True when
 * t is such a reference (its tokens emitted, placed at t). */
static bool paste_arg(struct pp *p, const struct tok *t)
{
	struct src_file f = { p->sc->file.name, NULL };
	struct lexer lx;
	struct tok a;
	const char *v;

	if (t->kind != T_DOLLAR || !all_digits(t->text) || atoi(t->text) < 1 || atoi(t->text) > p->sc->nargs)
		return false;
	v = p->sc->args[atoi(t->text) - 1];
	{
		char *end;
		const char *c = v;
		(void)strtoll(v, &end, 0);
		if (*v && !*end)
			return false; /* a number */
		while (isalnum((unsigned char)*c) || *c == '_')
			c++;
		if (*v && (isalpha((unsigned char)*v) || *v == '_') && !*c)
			return false; /* a name */
	}
	f.text = v;
	lex_init(&lx, &f, p->sc);
	for (;;) {
		if (!lex_next(&lx, &a)) {
			error_at(p, t, "command line argument $%s ('%s') is not script text", t->text, v);
			return true;
		}
		if (a.kind == T_EOF)
			return true;
		a.line = t->line;
		a.col = t->col;
		emit(p, &a);
	}
}

/* ---- conditions ------------------------------------------------------- */

/* Dotted versions compared field by field: -1, 0, 1. */
static int version_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		long x = strtol(a, (char **)&a, 10), y = strtol(b, (char **)&b, 10);
		if (x != y)
			return x < y ? -1 : 1;
		while (*a && !isdigit((unsigned char)*a))
			a++;
		while (*b && !isdigit((unsigned char)*b))
			b++;
	}
	return 0;
}

struct value {
	bool is_str, is_version;
	long long n;
	const char *s;
};

static bool operand(struct pp *p, const struct tok *t, struct value *v)
{
	static struct utsname u;
	struct tok a;
	memset(v, 0, sizeof(*v));
	if (arg_token(p, t, &a))
		t = &a;
	switch (t->kind) {
	case T_NUM: v->n = t->num; return true;
	case T_STR: v->is_str = true; v->s = t->text; return true;
	case T_IDENT:
		v->is_str = true;
		if (!strcmp(t->text, "kernel_v") || !strcmp(t->text, "kernel_vr")) {
			if (!u.release[0])
				uname(&u);
			v->s = u.release;
			v->is_version = true;
		} else if (!strcmp(t->text, "systemtap_v")) {
			v->s = "4.9";
			v->is_version = true;
		} else if (!strcmp(t->text, "arch")) {
			v->s = "x86_64";
		} else if (!strcmp(t->text, "runtime")) {
			v->s = "dyninst";
		} else if (!strcmp(t->text, "systemtap_privilege")) {
			v->s = "stapusr";
		} else if (!strcmp(t->text, "guru_mode")) {
			v->is_str = false;
			v->n = 0;
		} else if (!strncmp(t->text, "CONFIG_", 7)) {
			v->s = "";
		} else {
			return false;
		}
		return true;
	default: return false;
	}
}

static bool compare(const struct value *a, const char *op, const struct value *b, bool *ok)
{
	int c;
	*ok = true;
	if (a->is_str != b->is_str) {
		*ok = false;
		return false;
	}
	if (a->is_str)
		c = a->is_version || b->is_version ? version_cmp(a->s, b->s) : strcmp(a->s, b->s);
	else
		c = a->n < b->n ? -1 : a->n > b->n;
	if (!strcmp(op, "=="))
		return c == 0;
	if (!strcmp(op, "!="))
		return c != 0;
	if (!strcmp(op, "<"))
		return c < 0;
	if (!strcmp(op, "<="))
		return c <= 0;
	if (!strcmp(op, ">"))
		return c > 0;
	if (!strcmp(op, ">="))
		return c >= 0;
	*ok = false;
	return false;
}

/* t[0..n): one or more `A OP B` joined by && and || (left to right, &&
 * before ||, as C). */
static bool condition(struct pp *p, const struct tok *t, size_t n)
{
	bool result = false, term = true;
	size_t i = 0;
	while (i < n) {
		struct value a, b;
		bool ok, r;
		if (i + 3 > n || t[i + 1].kind != T_OP || !operand(p, &t[i], &a) || !operand(p, &t[i + 2], &b)) {
			error_at(p, &t[i], "expected a condition such as 'kernel_v >= \"2.6\"' or '$# > 1' in %%( ... %%?");
			return false;
		}
		r = compare(&a, t[i + 1].text, &b, &ok);
		if (!ok) {
			error_at(p, &t[i + 1], "cannot compare these with '%s' in a %%( condition", t[i + 1].text);
			return false;
		}
		term = term && r;
		i += 3;
		if (i < n && is_op(&t[i], "&&")) {
			i++;
		} else if (i < n && is_op(&t[i], "||")) {
			result = result || term;
			term = true;
			i++;
		} else if (i < n) {
			error_at(p, &t[i], "expected '&&', '||' or '%%?' in a %%( condition");
			return false;
		}
	}
	return result || term;
}

/* ---- the pass --------------------------------------------------------- */

static void process(struct pp *p, const struct tok *t, size_t n, int depth);

/* The index of the token that closes the %( at t[start] (its %)), with its
 * %? and %: (0 when absent); n when it is not closed. */
static size_t match_cond(const struct tok *t, size_t start, size_t n, size_t *q, size_t *colon)
{
	int depth = 0;
	*q = *colon = 0;
	for (size_t i = start; i < n; i++) {
		if (is_op(&t[i], "%("))
			depth++;
		else if (is_op(&t[i], "%)") && --depth == 0)
			return i;
		else if (depth == 1 && is_op(&t[i], "%?") && !*q)
			*q = i;
		else if (depth == 1 && is_op(&t[i], "%:") && *q && !*colon)
			*colon = i;
	}
	return n;
}

static struct macro *macro_named(struct pp *p, const char *name)
{
	for (int i = 0; i < p->nmacros; i++)
		if (!strcmp(p->macro[i].name, name))
			return &p->macro[i];
	return NULL;
}

/* @define NAME [(params)] %( body %) at t[i]; returns the index after it. */
static size_t define(struct pp *p, const struct tok *t, size_t i, size_t n)
{
	struct macro m = { 0 };
	size_t end, q, colon;
	if (++i >= n || t[i].kind != T_IDENT) {
		error_at(p, &t[i - 1], "expected a macro name after @define");
		return n;
	}
	m.name = t[i++].text;
	if (i < n && is_op(&t[i], "(")) {
		for (i++; i < n && !is_op(&t[i], ")"); i++) {
			if (t[i].kind == T_IDENT && m.nparams < MACRO_PARAMS)
				m.param[m.nparams++] = t[i].text;
			else if (!is_op(&t[i], ",")) {
				error_at(p, &t[i], "bad parameter list of macro '%s'", m.name);
				return n;
			}
		}
		i++;
	}
	if (i >= n || !is_op(&t[i], "%(") || (end = match_cond(t, i, n, &q, &colon)) == n) {
		error_at(p, &t[i < n ? i : n - 1], "expected '%%( body %%)' for macro '%s'", m.name);
		return n;
	}
	/* a copy: t may be a macro's expansion, freed when it is done */
	m.nbody = end - i - 1;
	m.body = pool_alloc(p->sc, sizeof(*m.body) * (m.nbody + 1));
	memcpy((struct tok *)m.body, &t[i + 1], sizeof(*m.body) * m.nbody);
	if (p->nmacros == MACRO_MAX || macro_named(p, m.name))
		error_at(p, &t[i], "macro '%s' defined twice (or too many macros)", m.name);
	else
		p->macro[p->nmacros++] = m;
	return end + 1;
}

/* @NAME or @NAME(args) at t[i]: the expansion, processed; the index after
 * the use. */
static size_t expand(struct pp *p, const struct macro *m, const struct tok *t, size_t i, size_t n, int depth)
{
	const struct tok *arg[MACRO_PARAMS];
	size_t argn[MACRO_PARAMS], at = i;
	int nargs = 0;
	struct tok *body;
	size_t nbody = 0, cap = m->nbody + 1;

	i++;
	if (m->nparams) {
		int paren = 0;
		if (i >= n || !is_op(&t[i], "(")) {
			error_at(p, &t[at], "macro '%s' takes %d argument(s)", m->name, m->nparams);
			return i;
		}
		arg[0] = &t[++i];
		argn[0] = 0;
		for (; i < n; i++) {
			if (is_op(&t[i], "(") || is_op(&t[i], "["))
				paren++;
			else if ((is_op(&t[i], ")") || is_op(&t[i], "]")) && paren)
				paren--;
			else if (is_op(&t[i], ")"))
				break;
			else if (is_op(&t[i], ",") && !paren) {
				if (++nargs == MACRO_PARAMS)
					break;
				arg[nargs] = &t[i + 1];
				argn[nargs] = 0;
				continue;
			}
			argn[nargs]++;
		}
		nargs++;
		i++;
		if (nargs != m->nparams) {
			error_at(p, &t[at], "macro '%s' takes %d argument(s), %d given", m->name, m->nparams, nargs);
			return i;
		}
	}
	for (int a = 0; a < nargs; a++)
		cap += argn[a] * m->nbody;
	if (cap > p->limit || p->nout + cap > p->limit) {
		error_at(p, &t[at], "macro '%s' expands to too many tokens", m->name);
		p->stop = true;
		return n;
	}
	body = malloc(sizeof(*body) * cap);
	if (!body)
		abort();
	for (size_t k = 0; k < m->nbody; k++) {
		int a = -1;
		if (m->body[k].kind == T_AT)
			for (int j = 0; j < m->nparams; j++)
				if (!strcmp(m->body[k].text, m->param[j]))
					a = j;
		if (a < 0)
			body[nbody++] = m->body[k];
		else
			for (size_t j = 0; j < argn[a]; j++)
				body[nbody++] = arg[a][j];
	}
	process(p, body, nbody, depth + 1);
	free(body);
	return i;
}

static void process(struct pp *p, const struct tok *t, size_t n, int depth)
{
	if (depth > EXPAND_DEPTH) {
		error_at(p, t, "macros expand too deep (a macro that uses itself?)");
		p->stop = true;
		return;
	}
	for (size_t i = 0; i < n && p->errors < 10 && !p->stop;) {
		struct tok a;
		const struct macro *m;
		if (is_op(&t[i], "%(")) {
			size_t q, colon, end = match_cond(t, i, n, &q, &colon);
			if (end == n || !q) {
				error_at(p, &t[i], "'%%(' without its '%%?' and '%%)'");
				return;
			}
			if (condition(p, &t[i + 1], q - i - 1))
				process(p, &t[q + 1], (colon ? colon : end) - q - 1, depth);
			else if (colon)
				process(p, &t[colon + 1], end - colon - 1, depth);
			i = end + 1;
		} else if (is_op(&t[i], "%?") || is_op(&t[i], "%:") || is_op(&t[i], "%)")) {
			error_at(p, &t[i], "'%s' outside a '%%( ... %%)' conditional", t[i].text);
			i++;
		} else if (t[i].kind == T_AT && !strcmp(t[i].text, "define")) {
			i = define(p, t, i, n);
		} else if (t[i].kind == T_AT && (m = macro_named(p, t[i].text))) {
			i = expand(p, m, t, i, n, depth);
		} else if (paste_arg(p, &t[i])) {
			i++;
		} else if (arg_token(p, &t[i], &a)) {
			emit(p, &a);
			i++;
		} else {
			emit(p, &t[i++]);
		}
	}
}

int preprocess(struct script *sc, struct tok **toks, size_t *ntoks)
{
	struct pp p = { .sc = sc, .limit = *ntoks + EXPAND_TOKENS };
	/* the input ends with T_EOF, which is copied like any token */
	process(&p, *toks, *ntoks, 0);
	if (p.errors) {
		free(p.out);
		return p.errors;
	}
	if (!p.nout || p.out[p.nout - 1].kind != T_EOF)
		emit(&p, &(*toks)[*ntoks - 1]);
	free(*toks);
	*toks = p.out;
	*ntoks = p.nout;
	return 0;
}
