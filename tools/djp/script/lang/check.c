/*
 * The semantic pass: names, types and the shape of every variable.
 *
 * SystemTap has no declarations for locals and few type annotations, so
 * types are inferred.  Every variable (global, local, parameter, function
 * result, array key and value) starts unknown; the pass walks the whole
 * program, and wherever an expression's context fixes a type (an operand of
 * '+', a '.' concatenation, a printf conversion, an assignment from a known
 * side, a context variable whose marker conversion is %s) the unknown
 * variable takes it.  The walk repeats until nothing changes, which settles
 * chains such as a function whose result feeds an array that a later probe
 * reads.  A last walk then reports what is still wrong: a mismatch between
 * a number and a string, a variable whose type nothing determines, an
 * array used as a scalar, a statistic used as a number.
 *
 * The same walk resolves names: a function's parameters, then globals, then
 * the locals of the probe or function, created on first use.  It gives each
 * local a frame slot and each `$name` an index in its probe's context
 * references, checks it against every marker the probe is attached to
 * (listing the fields that do exist when one does not) and records which
 * globals are read and written, for the end-of-run display of unread ones.
 */
#include <stdlib.h>
#include <regex.h>
#include <string.h>

#include "lang.h"
#include "tools/djp/script/typed.h"
#include "lib/ring.h"
#include "tools/djp/script/run/builtins/builtins.h"
#include "tools/djp/script/run/builtins/dwarfless.h"

struct checker {
	struct script *sc;
	struct probe *probe; /* current scope: a probe ... */
	struct func *fn;     /* ... or a function */
	bool report;	     /* final pass: report errors */
	bool changed;
	int errors;
	int last_line, last_col; /* one error per place */
	bool slice_ok;		 /* `*` indexes allowed: in, delete, foreach */
	struct node *unused;	 /* an expression whose value is dropped */
};

const char *ty_name(int ty)
{
	switch (ty) {
	case TY_LONG: return "long";
	case TY_STR: return "string";
	case TY_STAT: return "stats";
	default: return "unknown";
	}
}

#define ERR(ck, n, ...)                                                                      \
	do {                                                                                 \
		if ((ck)->report && !((n)->line == (ck)->last_line && (n)->col == (ck)->last_col)) { \
			(ck)->last_line = (n)->line;                                         \
			(ck)->last_col = (n)->col;                                           \
			diag((ck)->sc, (n)->line, (n)->col, "semantic error", __VA_ARGS__);   \
			(ck)->errors++;                                                      \
		}                                                                            \
	} while (0)

/* stap tapset functions a script may call that are not built in yet: said
 * as such, not as an unknown name. */
static bool stap_function_missing(const char *name)
{
	static const char *const missing[] = {
		"probemod", "user_long_error", "user_string_warn", "user_string2", "kernel_string", "kernel_long",
		"kernel_int", "backtrace", "print_backtrace", "symname", "symdata", "task_current", "pid2execname",
		"pid2task", "indent", "sprint_backtrace", "execname_pid", "set_kernel_string",
		"is_myproc", "callers",
	};
	for (size_t i = 0; i < sizeof(missing) / sizeof(missing[0]); i++)
		if (!strcmp(name, missing[i]))
			return true;
	return false;
}

static void set_ty(struct checker *ck, uint8_t *slot, int ty)
{
	if (*slot == TY_UNK && ty != TY_UNK) {
		*slot = (uint8_t)ty;
		ck->changed = true;
	}
}

static struct sym *find_in(struct sym *l, const char *name)
{
	for (; l; l = l->next)
		if (!strcmp(l->name, name))
			return l;
	return NULL;
}

static struct sym *lookup(struct checker *ck, struct node *n, const char *name)
{
	struct sym *s, **locals;
	int *nslots;

	if (ck->fn)
		for (int i = 0; i < ck->fn->nparams; i++)
			if (!strcmp(ck->fn->params[i]->name, name))
				return ck->fn->params[i];
	if ((s = find_in(ck->sc->globals, name)))
		return s;
	locals = ck->fn ? &ck->fn->locals : &ck->probe->locals;
	nslots = ck->fn ? &ck->fn->nslots : &ck->probe->nslots;
	if ((s = find_in(*locals, name)))
		return s;
	s = pool_alloc(ck->sc, sizeof(*s));
	s->name = name;
	s->line = n->line;
	s->col = n->col;
	s->nkeys = 0;
	s->slot = (*nslots)++;
	s->next = *locals;
	*locals = s;
	return s;
}

static struct sym *lookup_array(struct checker *ck, struct node *n, const char *name, int nkeys)
{
	struct sym *s = find_in(ck->sc->globals, name);
	if (!s) {
		ERR(ck, n, "unresolved arity-%d global array %s, missing global declaration?", nkeys, name);
		return NULL;
	}
	if (s->nkeys == -1) {
		s->nkeys = nkeys;
		ck->changed = true;
	} else if (s->nkeys == 0) {
		ERR(ck, n, "'%s' is a scalar, used here as an array", name);
		return NULL;
	} else if (nkeys && s->nkeys != nkeys) {
		ERR(ck, n, "inconsistent arity for array '%s': %d indexes here, %d elsewhere", name, nkeys, s->nkeys);
		return NULL;
	}
	return s;
}

static int expr(struct checker *ck, struct node *n, int want);
static void stmt(struct checker *ck, struct node *n);

/* Check that n has type `want` (if both are known), or give it that type. */
static int expect_ty(struct checker *ck, struct node *n, int want)
{
	int t = expr(ck, n, want);
	if (t != TY_UNK && want != TY_UNK && t != want)
		ERR(ck, n, "type mismatch: expected %s, found %s", ty_name(want), ty_name(t));
	return t;
}

/* Two operands of one type (comparison, ternary branches, '='). */
static int unify2(struct checker *ck, struct node *a, struct node *b, int want, struct node *at)
{
	int ta = expr(ck, a, want), tb = expr(ck, b, want != TY_UNK ? want : ta);
	if (ta == TY_UNK && tb != TY_UNK)
		ta = expr(ck, a, tb);
	if (ta != TY_UNK && tb != TY_UNK && ta != tb) {
		ERR(ck, at, "type mismatch: %s and %s", ty_name(ta), ty_name(tb));
		return TY_UNK;
	}
	return ta != TY_UNK ? ta : tb;
}

static void keys(struct checker *ck, struct sym *s, struct node *n)
{
	bool slice_ok = ck->slice_ok;

	ck->slice_ok = false; /* not inside the indexes themselves */
	for (int i = 0; i < n->nargs; i++) {
		int t;
		if (n->args[i]->kind == N_WILD) {
			if (!slice_ok)
				ERR(ck, n->args[i], "'*' is a slice: only in foreach, 'in' and delete");
			continue;
		}
		t = expr(ck, n->args[i], s ? s->kty[i] : TY_UNK);
		if (!s)
			continue;
		if (t == TY_STAT)
			ERR(ck, n->args[i], "statistics cannot be array indexes");
		else if (t != TY_UNK && s->kty[i] != TY_UNK && t != s->kty[i])
			ERR(ck, n->args[i], "type mismatch for index %d of '%s': expected %s, found %s", i + 1, s->name,
			    ty_name(s->kty[i]), ty_name(t));
		else
			set_ty(ck, &s->kty[i], t);
	}
}

/* A variable or element as an lvalue or rvalue; returns its type. */
static int var_ref(struct checker *ck, struct node *n, int want, bool write, bool read)
{
	struct sym *s;
	if (n->kind == N_VAR) {
		s = n->sym ? n->sym : (n->sym = lookup(ck, n, n->str));
		if (s->nkeys == -1) {
			s->nkeys = 0;
			ck->changed = true;
		} else if (s->nkeys > 0) {
			ERR(ck, n, "'%s' is an array, used here as a scalar", s->name);
			return TY_UNK;
		}
	} else {
		s = n->sym ? n->sym : (n->sym = lookup_array(ck, n, n->str, n->nargs));
		if (!s)
			return TY_UNK;
		keys(ck, s, n);
	}
	s->written |= write;
	s->read |= read;
	if (want != TY_STAT && want != TY_UNK)
		set_ty(ck, &s->ty, want);
	return s->ty;
}

/* @defined(e): a context variable every marker of the probe has, or any
 * expression that is no context variable; decided here, as stap decides it
 * at elaboration, so that the branch it guards may name what is missing. */
static bool is_defined(struct checker *ck, const struct node *e)
{
	struct probe *p = ck->probe;
	bool mark = p && !p->has_nonmark && p->nbinds;
	if (e->kind == N_CTXNAME || e->kind == N_CTXPARMS || e->kind == N_CTXFORMAT)
		return mark;
	if (e->kind == N_TYPED) /* compiled at every function of the probe */
		return e->tr->resolved && e->tr->ok;
	if (e->kind != N_CTX)
		return true;
	if (!mark)
		return false;
	for (int i = 0; i < p->nbinds; i++)
		if (ctx_field(p->binds[i]->desc, e->str) < 0)
			return false;
	return true;
}

static int stat_ref(struct checker *ck, struct node *n, bool write)
{
	if (n->kind != N_VAR && n->kind != N_INDEX) {
		ERR(ck, n, "expected a statistics variable or array element");
		return TY_UNK;
	}
	int t = var_ref(ck, n, TY_UNK, write, !write);
	if (n->sym) {
		if (!n->sym->global) {
			ERR(ck, n, "statistics must be global: '%s'", n->sym->name);
			return TY_UNK;
		}
		set_ty(ck, &n->sym->ty, TY_STAT);
		t = n->sym->ty;
		if (t != TY_STAT)
			ERR(ck, n, "'%s' is a %s, used here as statistics", n->sym->name, ty_name(t));
	}
	return TY_STAT;
}

/* A probe on function and statement points only: their sites are made
 * when the points are connected, so nothing is bound yet. */
static bool points_only(const struct probe *p)
{
	for (const struct probe_point *pp = p->points; pp; pp = pp->next)
		if (pp->kind != PP_MARK || !pp->point)
			return false;
	return p->points != NULL;
}

static int ctx_ref(struct checker *ck, struct node *n)
{
	struct probe *p = ck->probe;
	bool points;
	int r;

	if (!p) {
		ERR(ck, n, "context variable '$%s' outside a probe", n->str);
		return TY_UNK;
	}
	/* Function and statement points bind nothing before their sites are
	 * made: a function's parameters and return value are numbers (a
	 * char * too: user_string($p) reads it), and each site is bound
	 * when it is made if it has them all (bind_late). */
	/* So are those of a probe waiting for the program a -c wrapper
	 * execs: a marker there binds if its fields are numbers. */
	points = !p->nbinds && !p->has_nonmark && (points_only(p) || p->waits_exec);
	if (!points && (p->has_nonmark || !p->nbinds)) {
		ERR(ck, n, "context variable '$%s' is only available in process.mark probes", n->str);
		return TY_UNK;
	}
	for (r = 0; r < p->nrefs; r++)
		if (!strcmp(p->refs[r], n->str))
			break;
	if (r == p->nrefs) {
		uint8_t ty = points ? TY_LONG : TY_UNK;
		if (r == 32) {
			ERR(ck, n, "too many context variables in one probe");
			return TY_UNK;
		}
		for (int i = 0; i < p->nbinds; i++) {
			const struct djp_ev_desc *d = p->binds[i]->desc;
			int f = ctx_field(d, n->str);
			uint8_t t;
			if (f < 0) {
				char list[512];
				size_t len = 0;
				list[0] = 0;
				for (unsigned a = 0; a < d->nargs && len < sizeof(list); a++) {
					const char *nm = a < d->fmt.nfields ? d->fmt.field[a].name : "";
					if (nm[0])
						len += (size_t)snprintf(list + len, sizeof(list) - len, " $%s", nm);
					else
						len += (size_t)snprintf(list + len, sizeof(list) - len, " $arg%u", a + 1);
				}
				/* always report: this is not a matter of inference */
				diag(ck->sc, n->line, n->col, "semantic error",
				     "unknown context variable '$%s' in marker \"%s\" (%s); available:%s", n->str, d->name,
				     d->object ? d->object : "?", d->nargs ? list : " none");
				ck->errors++;
				n->slot = -2;
				return TY_UNK;
			}
			t = ctx_type(d, f);
			if (ty != TY_UNK && t != ty) {
				diag(ck->sc, n->line, n->col, "semantic error",
				     "context variable '$%s' is a string in one marker and a number in another", n->str);
				ck->errors++;
				n->slot = -2;
				return TY_UNK;
			}
			ty = t;
		}
		p->refs[r] = n->str;
		p->ref_ty[r] = ty;
		p->nrefs++;
	}
	n->slot = r;
	return p->ref_ty[r];
}

/* user_string($argN): the probe asks for argument N to be copied as a
 * string when the marker is hit (in the target, where the memory is), as
 * many bytes as the call can use. */
static void user_string_ref(struct checker *ck, struct node *n)
{
	struct node *a = n->nargs ? n->args[0] : NULL;
	unsigned flags = builtins[n->op].flags;
	/* the agent copies at most DJP_RING_STR_BOUND_MAX bytes a string */
	unsigned bound = MAXSTRINGLEN < DJP_RING_STR_BOUND_MAX ? (unsigned)MAXSTRINGLEN : DJP_RING_STR_BOUND_MAX;

	if (!(flags & BF_USTR))
		return;
	if (a && a->kind == N_BUILTIN && (builtins[a->op].flags & BF_REGS)) { /* user_string(@var(...)) */
		if ((flags & BF_USTR_N) && n->args[1]->kind == N_NUM && n->args[1]->num >= 0 &&
		    n->args[1]->num < (int64_t)bound)
			bound = (unsigned)n->args[1]->num + 1;
		dwarfless_string_ref(ck->sc, a, bound);
		return;
	}
	if (!ck->probe || !a || ((a->kind != N_CTX || a->slot < 0 || a->slot >= ck->probe->nrefs) &&
				 (a->kind != N_TYPED || a->tr->idx < 0)))
		return;
	if ((flags & BF_USTR_N) && n->args[1]->kind == N_NUM && n->args[1]->num >= 0 &&
	    n->args[1]->num < (int64_t)bound)
		bound = (unsigned)n->args[1]->num + 1;
	if (a->kind == N_TYPED) { /* copied by its load program */
		if (a->tr->str_bound < bound)
			a->tr->str_bound = bound;
		return;
	}
	if (ck->probe->ref_strbound[a->slot] < bound)
		ck->probe->ref_strbound[a->slot] = (uint16_t)bound;
}

static int call(struct checker *ck, struct node *n)
{
	struct func *f = n->fn;
	if (!f && n->kind == N_CALL) {
		for (f = ck->sc->funcs; f && strcmp(f->name, n->str); f = f->next)
			;
		if (!f) {
			const struct builtin_def *named;
			int id = builtin_find(n->str, n->nargs, &named);
			if (id >= 0) {
				n->kind = N_BUILTIN;
				n->op = id;
				if (builtins[id].flags & BF_CPU)
					ck->sc->uses_cpu = true;
				if (builtins[id].flags & BF_REGS)
					ck->errors += dwarfless_check_call(ck->sc, n);
			}
			if (n->kind != N_BUILTIN && named) {
				diag(ck->sc, n->line, n->col, "semantic error", "%s() takes %d argument%s, %d given",
				     n->str, named->max_args, named->max_args == 1 ? "" : "s", n->nargs);
				ck->errors++;
				n->kind = N_NUM;
				return TY_UNK;
			}
			if (n->kind != N_BUILTIN && stap_function_missing(n->str)) {
				diag(ck->sc, n->line, n->col, "semantic error", "not supported yet: tapset function %s()", n->str);
				ck->errors++;
				n->kind = N_NUM;
				return TY_UNK;
			}
			if (n->kind != N_BUILTIN) {
				diag(ck->sc, n->line, n->col, "semantic error", "unresolved function call to '%s'", n->str);
				ck->errors++;
				n->kind = N_NUM;
				return TY_UNK;
			}
		} else {
			n->fn = f;
		}
	}
	if (n->kind == N_BUILTIN) {
		const struct builtin_def *b = &builtins[n->op];
		for (int a = 0; a < n->nargs; a++)
			expect_ty(ck, n->args[a], b->arg[a]);
		user_string_ref(ck, n);
		return b->ret;
	}
	if (n->nargs != f->nparams) {
		ERR(ck, n, "%s() takes %d argument%s, %d given", f->name, f->nparams, f->nparams == 1 ? "" : "s",
		    n->nargs);
		return f->ret;
	}
	for (int a = 0; a < n->nargs; a++) {
		int t = expr(ck, n->args[a], f->params[a]->ty);
		if (t == TY_STAT)
			ERR(ck, n->args[a], "statistics cannot be passed to a function");
		else if (t != TY_UNK && f->params[a]->ty != TY_UNK && t != f->params[a]->ty)
			ERR(ck, n->args[a], "type mismatch for argument %d of %s(): expected %s, found %s", a + 1,
			    f->name, ty_name(f->params[a]->ty), ty_name(t));
		else
			set_ty(ck, &f->params[a]->ty, t);
	}
	return f->ret;
}

/* print_folded(ARRAY): a global array of numbers or statistics, of any
 * number of indexes (run/folded.c prints it). */
static int folded(struct checker *ck, struct node *n)
{
	struct node *a = n->nargs == 1 ? n->args[0] : NULL;
	struct sym *s;

	if (!a || a->kind != N_VAR) {
		ERR(ck, n, "print_folded takes one global array, as print_folded(s)");
		return TY_LONG;
	}
	if (!(s = a->sym ? a->sym : (a->sym = find_in(ck->sc->globals, a->str)))) {
		ERR(ck, a, "print_folded: '%s' is not a global array", a->str);
		return TY_LONG;
	}
	s->read = true;
	if (s->nkeys == 0)
		ERR(ck, a, "print_folded: '%s' is a scalar, not an array", s->name);
	else if (s->nkeys == -1)
		ERR(ck, a, "print_folded: '%s' is never indexed", s->name);
	else if (s->ty == TY_STR)
		ERR(ck, a, "print_folded: '%s' holds strings, not numbers or statistics", s->name);
	return TY_LONG;
}

static int print(struct checker *ck, struct node *n)
{
	bool is_f = n->op == P_PRINTF || n->op == P_SPRINTF;
	int first = 0;

	if (n->op == P_FOLDED)
		return folded(ck, n);

	if (is_f) {
		const char *why;
		if (n->nargs < 1 || n->args[0]->kind != N_STR) {
			diag(ck->sc, n->line, n->col, "semantic error", "the format of printf must be a literal string");
			ck->errors++;
			return TY_UNK;
		}
		if (!n->pf) {
			n->pf = print_fmt_parse(ck->sc, n->args[0]->str, &why);
			if (!n->pf) {
				diag(ck->sc, n->args[0]->line, n->args[0]->col, "semantic error", "bad printf format: %s", why);
				ck->errors++;
				return TY_UNK;
			}
			if (n->pf->nargs != n->nargs - 1) {
				diag(ck->sc, n->line, n->col, "semantic error",
				     "printf format wants %d argument%s, %d given", n->pf->nargs, n->pf->nargs == 1 ? "" : "s",
				     n->nargs - 1);
				ck->errors++;
				n->pf = NULL;
				return TY_UNK;
			}
		}
		first = 1;
		for (int i = 0, a = 1; i < n->pf->nspecs; i++) {
			char c = n->pf->spec[i].conv;
			if (!c || c == '%')
				continue;
			if (n->pf->spec[i].star_width) /* %*d: the width first */
				expect_ty(ck, n->args[a++], TY_LONG);
			if (n->pf->spec[i].star_prec)
				expect_ty(ck, n->args[a++], TY_LONG);
			expect_ty(ck, n->args[a++], c == 's' ? TY_STR : TY_LONG);
		}
	} else {
		if ((n->op == P_PRINT || n->op == P_PRINTLN) && n->nargs == 1 && n->args[0]->kind == N_HIST) {
			struct node *h = n->args[0];
			stat_ref(ck, h->args[0], false);
			return TY_LONG;
		}
		if (n->nargs < 1 && n->op != P_PRINTLN && n->op != P_SPRINTLN) {
			ERR(ck, n, "print needs at least one argument");
			return TY_UNK;
		}
		if ((n->op == P_PRINTD || n->op == P_PRINTDLN || n->op == P_SPRINTD) &&
		    (n->nargs < 2 || expr(ck, n->args[0], TY_STR) != TY_STR)) {
			ERR(ck, n, "printd needs a delimiter string and at least one value");
			return TY_UNK;
		}
		for (int a = 0; a < n->nargs; a++) {
			int t = expr(ck, n->args[a], TY_UNK);
			if (t == TY_STAT)
				ERR(ck, n->args[a], "statistics cannot be printed directly (use @count, @hist_log, ...)");
			else if (t == TY_UNK && ck->report && n->args[a]->kind != N_HIST)
				ERR(ck, n->args[a], "unresolved type");
		}
	}
	(void)first;
	return n->op == P_SPRINTF || n->op == P_SPRINT || n->op == P_SPRINTLN || n->op == P_SPRINTD ? TY_STR : TY_LONG;
}

/* STRING =~ "REGEX": POSIX extended, compiled once here; the regex must be
 * a literal, as stap's. */
static int regex_match(struct checker *ck, struct node *n)
{
	expect_ty(ck, n->a, TY_STR);
	if (n->b->kind != N_STR) {
		ERR(ck, n->b, "the regular expression of '%s' must be a string literal", n->op == ('=' | '~' << 8) ? "=~" : "!~");
		return TY_LONG;
	}
	n->b->ty = TY_STR;
	if (!n->re) {
		regex_t *re = pool_alloc(ck->sc, sizeof(*re));
		int rc = regcomp(re, n->b->str, REG_EXTENDED);
		if (rc) {
			char why[256];
			regerror(rc, re, why, sizeof(why));
			ERR(ck, n->b, "bad regular expression \"%s\": %s", n->b->str, why);
			return TY_LONG;
		}
		{
			void **v = realloc(ck->sc->regexes, sizeof(*v) * (size_t)(ck->sc->nregexes + 1));
			if (!v) {
				regfree(re);
				return TY_LONG;
			}
			ck->sc->regexes = v;
			v[ck->sc->nregexes++] = re; /* regfree'd by script_release */
		}
		n->re = re;
	}
	return TY_LONG;
}

/* $$name, $$parms (and its kin), $$format: a marker's, so in mark probes
 * only */
static int ctx_name(struct checker *ck, struct node *n)
{
	if (!ck->probe || ck->probe->has_nonmark) {
		ERR(ck, n, "'$$%s' is only available in process.mark probes",
		    n->kind == N_CTXNAME ? "name" : n->kind == N_CTXPARMS ? n->str : "format");
		return TY_UNK;
	}
	return n->ty = TY_STR;
}

/* a = b, or a op= b */
static int assign(struct checker *ck, struct node *n)
{
	int t, want_ty;

	if (n->op == 0) {
		int tb = expr(ck, n->b, TY_UNK);
		int ta = var_ref(ck, n->a, tb, true, false);
		if (ta == TY_STAT || tb == TY_STAT)
			ERR(ck, n, "statistics can only be added to with '<<<'");
		else if (ta != TY_UNK && tb != TY_UNK && ta != tb)
			ERR(ck, n, "type mismatch: assigning a %s to a %s", ty_name(tb), ty_name(ta));
		else if (ta != TY_UNK)
			expr(ck, n->b, ta);
		n->a->ty = (uint8_t)ta;
		return n->ty = (uint8_t)(ta != TY_UNK ? ta : tb);
	}
	want_ty = n->op == '.' ? TY_STR : TY_LONG;
	t = var_ref(ck, n->a, want_ty, true, false);
	if (t != TY_UNK && t != want_ty)
		ERR(ck, n, "type mismatch: '%s=' needs a %s, found %s", n->op == '.' ? "." : "arith", ty_name(want_ty),
		    ty_name(t));
	expect_ty(ck, n->b, want_ty);
	n->a->ty = (uint8_t)want_ty;
	return n->ty = (uint8_t)want_ty;
}

/* x++, --x */
static int incdec(struct checker *ck, struct node *n)
{
	int t;
	if (n->a->kind != N_VAR && n->a->kind != N_INDEX) {
		ERR(ck, n, "'%c%c' needs a variable or array element", n->op, n->op);
		return TY_LONG;
	}
	/* x++ as a statement only writes; its value used reads x, as stap
	 * counts it for the display of unread globals */
	t = var_ref(ck, n->a, TY_LONG, true, n != ck->unused);
	if (t != TY_UNK && t != TY_LONG)
		ERR(ck, n, "type mismatch: '%c%c' on a %s", n->op, n->op, ty_name(t));
	n->a->ty = TY_LONG;
	return n->ty = TY_LONG;
}

/* [k, ...] in a: `*` keys allowed, the array read */
static int in_array(struct checker *ck, struct node *n)
{
	struct sym *s = n->sym ? n->sym : (n->sym = lookup_array(ck, n, n->str, n->nargs));
	if (s) {
		ck->slice_ok = true;
		keys(ck, s, n);
		ck->slice_ok = false;
		s->read = true;
	}
	return n->ty = TY_LONG;
}

static int expr(struct checker *ck, struct node *n, int want)
{
	int t;

	switch (n->kind) {
	case N_NUM:
		return n->ty = TY_LONG;
	case N_STR:
		return n->ty = TY_STR;
	case N_VAR:
	case N_INDEX:
		t = var_ref(ck, n, want, false, true);
		if (t == TY_STAT)
			ERR(ck, n, "statistics '%s' used as a value (use @count, @sum, ...)", n->sym->name);
		return n->ty = (uint8_t)t;
	case N_CTX:
		if (n->slot == -2)
			return TY_UNK;
		return n->ty = (uint8_t)ctx_ref(ck, n);
	case N_CTXNAME:
	case N_CTXPARMS:
	case N_CTXFORMAT:
		return ctx_name(ck, n);
	case N_TYPED:
		if (!ck->probe) {
			ERR(ck, n, "%s: not supported yet: a typed access outside a probe body", n->tr->text);
			return TY_UNK;
		}
		if (n->tr->base_value && expr(ck, n->tr->base_value, TY_LONG) != TY_LONG && n->tr->base_value->ty != TY_UNK)
			ERR(ck, n->tr->base_value, "@cast of a string (it takes an address)");
		if (!typed_check(ck->sc, n))
			ck->errors++;
		return n->ty = n->tr->pretty ? TY_STR : TY_LONG;
	case N_CALL:
	case N_BUILTIN:
		return n->ty = (uint8_t)call(ck, n);
	case N_BINOP:
		expect_ty(ck, n->a, TY_LONG);
		expect_ty(ck, n->b, TY_LONG);
		return n->ty = TY_LONG;
	case N_CONCAT:
		expect_ty(ck, n->a, TY_STR);
		expect_ty(ck, n->b, TY_STR);
		return n->ty = TY_STR;
	case N_CMP:
		if (n->op == ('=' | '~' << 8) || n->op == ('!' | '~' << 8))
			return n->ty = (uint8_t)regex_match(ck, n);
		t = unify2(ck, n->a, n->b, TY_UNK, n);
		if (t == TY_STAT)
			ERR(ck, n, "statistics cannot be compared");
		n->a->ty = n->b->ty = (uint8_t)t;
		return n->ty = TY_LONG;
	case N_LOGAND:
	case N_LOGOR:
		expect_ty(ck, n->a, TY_LONG);
		expect_ty(ck, n->b, TY_LONG);
		return n->ty = TY_LONG;
	case N_NOT:
	case N_NEG:
	case N_BITNOT:
		expect_ty(ck, n->a, TY_LONG);
		if (n->kind == N_NOT && n->a->kind == N_NUM && n->a->op == 1) { /* !@defined(...) */
			n->num = !n->a->num;
			n->kind = N_NUM;
			n->op = 1;
		}
		return n->ty = TY_LONG;
	case N_DEFINED: {
		bool def = is_defined(ck, n->a);
		if (n->op == 0) {
			n->kind = N_NUM;
			n->num = def;
			n->op = 1; /* marks the fold for if and ?: */
			return n->ty = TY_LONG;
		}
		*n = *(def ? n->a : n->b); /* @choose_defined: becomes the one chosen */
		return expr(ck, n, want);
	}
	case N_TERNARY:
		expect_ty(ck, n->a, TY_LONG);
		if (n->a->kind == N_NUM && n->a->op == 1) {
			/* a folded @defined: only the branch taken is checked */
			*n = *(n->a->num ? n->b : n->c);
			return expr(ck, n, want);
		}
		return n->ty = (uint8_t)unify2(ck, n->b, n->c, want, n);
	case N_ASSIGN:
		return assign(ck, n);
	case N_INCDEC:
		return incdec(ck, n);
	case N_IN:
		return in_array(ck, n);
	case N_AGG:
		stat_ref(ck, n->a, false);
		return n->ty = TY_LONG;
	case N_HIST:
		ERR(ck, n, "a histogram can only be printed, with print() or println()");
		return TY_UNK;
	case N_STATADD:
		stat_ref(ck, n->a, true);
		expect_ty(ck, n->b, TY_LONG);
		return n->ty = TY_LONG;
	case N_PRINT:
		return n->ty = (uint8_t)print(ck, n);
	default:
		ERR(ck, n, "internal error: unexpected node %d", n->kind);
		return TY_UNK;
	}
}

static void hist_cfg(struct checker *ck, struct node *h)
{
	struct sym *s = h->args[0]->sym;
	struct hist_cfg c = { .kind = h->op };

	if (!s || s->ty != TY_STAT)
		return;
	if (h->op == 1) {
		if (h->nargs != 1) {
			ERR(ck, h, "@hist_log takes one argument");
			return;
		}
		c.buckets = HIST_LOG_BUCKETS;
	} else {
		if (h->nargs != 4) {
			ERR(ck, h, "@hist_linear takes four arguments (stats, start, stop, interval)");
			return;
		}
		for (int i = 1; i < 4; i++) {
			if (h->args[i]->kind != N_NUM) {
				ERR(ck, h->args[i], "@hist_linear bounds must be literal numbers");
				return;
			}
		}
		c.start = h->args[1]->num;
		c.stop = h->args[2]->num;
		c.interval = h->args[3]->num;
		if (c.interval <= 0 || c.stop <= c.start) {
			ERR(ck, h, "@hist_linear: the interval must be positive and stop above start");
			return;
		}
		/* The span in unsigned arithmetic: stop - start may not fit
		 * in int64.  The printed rows go up to stop + interval, which
		 * must fit. */
		uint64_t span = (uint64_t)c.stop - (uint64_t)c.start, nb = span / (uint64_t)c.interval;
		int64_t top;
		if (nb > HIST_MAX_LINEAR - 2) {
			ERR(ck, h, "@hist_linear: number of buckets must be between 1 and %d", HIST_MAX_LINEAR - 2);
			return;
		}
		if (__builtin_add_overflow(c.stop, c.interval, &top)) {
			ERR(ck, h, "@hist_linear: stop + interval is beyond the 64-bit range");
			return;
		}
		c.buckets = (int)nb + 3;
	}
	if (s->hist.kind && memcmp(&s->hist, &c, sizeof(c)))
		ERR(ck, h, "inconsistent histogram parameters for '%s'", s->name);
	else
		s->hist = c;
}

static void walk_hists(struct checker *ck, struct node *n)
{
	if (!n)
		return;
	if (n->kind == N_HIST)
		hist_cfg(ck, n);
	walk_hists(ck, n->a);
	walk_hists(ck, n->b);
	walk_hists(ck, n->c);
	if (n->kind != S_FOREACH)
		walk_hists(ck, n->d);
	for (int i = 0; i < n->nargs; i++)
		walk_hists(ck, n->args[i]);
}

static void foreach_stmt(struct checker *ck, struct node *n)
{
	struct sym *arr = n->sym ? n->sym : (n->sym = lookup_array(ck, n, n->str, n->fe_nkeys));
	if (arr)
		arr->read = true;
	if (n->fe_slice && arr) {
		if (n->fe_slice->nargs != n->fe_nkeys)
			ERR(ck, n->fe_slice, "the slice of '%s' has %d indexes, the loop %d", arr->name,
			    n->fe_slice->nargs, n->fe_nkeys);
		else {
			ck->slice_ok = true;
			keys(ck, arr, n->fe_slice);
			ck->slice_ok = false;
		}
	}
	if (n->fe_sort_agg && arr && arr->ty != TY_STAT && arr->ty != TY_UNK)
		ERR(ck, n, "sorting '%s' by an aggregate: it is not a statistics array", arr->name);
	for (int i = 0; i < n->fe_nkeys; i++) {
		struct node *k = n->args[i];
		struct sym *s = k->sym ? k->sym : (k->sym = lookup(ck, k, k->str));
		n->fe_keys[i] = s;
		if (s->global) {
			ERR(ck, k, "foreach key '%s' must be a local variable", s->name);
			continue;
		}
		if (arr) {
			if (s->ty != TY_UNK && arr->kty[i] != TY_UNK && s->ty != arr->kty[i])
				ERR(ck, k, "type mismatch for key '%s': %s and %s", s->name, ty_name(s->ty), ty_name(arr->kty[i]));
			set_ty(ck, &s->ty, arr->kty[i]);
			set_ty(ck, &arr->kty[i], s->ty);
		}
		s->written = true;
	}
	if (n->d) {
		struct sym *s = n->d->sym ? n->d->sym : (n->d->sym = lookup(ck, n->d, n->d->str));
		n->fe_val = s;
		if (s->global)
			ERR(ck, n->d, "foreach value '%s' must be a local variable", s->name);
		else if (arr && arr->ty == TY_STAT)
			ERR(ck, n->d, "foreach value of a statistics array (use @count(%s[...]) etc.)", arr->name);
		else if (arr) {
			if (s->ty != TY_UNK && arr->ty != TY_UNK && s->ty != arr->ty)
				ERR(ck, n->d, "type mismatch for '%s': %s and %s", s->name, ty_name(s->ty), ty_name(arr->ty));
			set_ty(ck, &s->ty, arr->ty);
			set_ty(ck, &arr->ty, s->ty);
		}
	}
	if (n->fe_limit)
		expect_ty(ck, n->fe_limit, TY_LONG);
	stmt(ck, n->a);
}

/* try { } catch (msg) { }: msg a string local */
static void try_stmt(struct checker *ck, struct node *n)
{
	stmt(ck, n->a);
	if (n->str) {
		if (!n->sym)
			n->sym = lookup(ck, n, n->str);
		if (n->sym)
			set_ty(ck, &n->sym->ty, TY_STR);
		if (n->sym && n->sym->ty != TY_STR)
			ERR(ck, n, "the message of 'catch' is a string, '%s' is not", n->str);
	}
	stmt(ck, n->b);
}

/* return [e]: in a function, of its result's type */
static void return_stmt(struct checker *ck, struct node *n)
{
	int t;
	if (!ck->fn) {
		ERR(ck, n, "'return' outside a function");
		return;
	}
	if (!n->a)
		return;
	t = expr(ck, n->a, ck->fn->ret);
	if (t == TY_STAT)
		ERR(ck, n->a, "statistics cannot be returned");
	else if (t != TY_UNK && ck->fn->ret != TY_UNK && t != ck->fn->ret)
		ERR(ck, n->a, "type mismatch: %s() returns %s, found %s", ck->fn->name, ty_name(ck->fn->ret), ty_name(t));
	else
		set_ty(ck, &ck->fn->ret, t);
}

/* stap counts delete as a read too: a global only deleted is not
 * displayed at the end */
static void delete_stmt(struct checker *ck, struct node *n)
{
	if (n->a->kind == N_VAR) {
		struct sym *s = n->a->sym ? n->a->sym : (n->a->sym = lookup(ck, n->a, n->a->str));
		s->written = true;
		s->read = true;
	} else {
		ck->slice_ok = true;
		var_ref(ck, n->a, TY_UNK, true, true);
		ck->slice_ok = false;
	}
}

static void stmt(struct checker *ck, struct node *n)
{
	if (!n)
		return;
	switch (n->kind) {
	case S_BLOCK:
		for (int i = 0; i < n->nargs; i++)
			stmt(ck, n->args[i]);
		break;
	case S_EXPR:
		ck->unused = n->a;
		expr(ck, n->a, TY_UNK);
		break;
	case S_IF:
		expect_ty(ck, n->a, TY_LONG);
		if (n->a->kind == N_NUM && n->a->op == 1) { /* a folded @defined */
			if (n->a->num)
				n->c = NULL;
			else
				n->b = NULL;
		}
		stmt(ck, n->b);
		stmt(ck, n->c);
		break;
	case S_WHILE:
		expect_ty(ck, n->a, TY_LONG);
		stmt(ck, n->b);
		break;
	case S_FOR:
		if (n->a)
			expr(ck, n->a, TY_UNK);
		if (n->b)
			expect_ty(ck, n->b, TY_LONG);
		if (n->c) {
			ck->unused = n->c;
			expr(ck, n->c, TY_UNK);
		}
		stmt(ck, n->d);
		break;
	case S_FOREACH:
		foreach_stmt(ck, n);
		break;
	case S_TRY:
		try_stmt(ck, n);
		break;
	case S_RETURN:
		return_stmt(ck, n);
		break;
	case S_DELETE:
		delete_stmt(ck, n);
		break;
	default:
		break;
	}
}

static void check_unresolved(struct checker *ck, struct sym *l, const char *where)
{
	for (; l; l = l->next) {
		if (l->nkeys == -1 && l->global) {
			/* declared, never used: a long scalar, as stap */
			l->nkeys = 0;
		}
		if (l->ty == TY_UNK) {
			if (l->global && !l->read && !l->written && !l->init) {
				l->ty = TY_LONG;
				continue;
			}
			if (l->init)
				continue;
			diag(ck->sc, l->line, l->col, "semantic error", "unresolved type for %s '%s'%s", where, l->name,
			     l->nkeys > 0 ? " (array value)" : "");
			ck->errors++;
		}
		for (int i = 0; i < l->nkeys; i++) {
			if (l->kty[i] == TY_UNK) {
				diag(ck->sc, l->line, l->col, "semantic error", "unresolved type for index %d of '%s'", i + 1,
				     l->name);
				ck->errors++;
			}
		}
	}
}

static void pass(struct checker *ck)
{
	for (struct sym *g = ck->sc->globals; g; g = g->next) {
		if (g->init) {
			int t = g->init->kind == N_STR ? TY_STR : TY_LONG;
			if (g->ty != TY_UNK && g->ty != t)
				ERR(ck, g->init, "type mismatch: '%s' is initialised with a %s, used as a %s", g->name,
				    ty_name(t), ty_name(g->ty));
			set_ty(ck, &g->ty, t);
			if (g->nkeys == -1) {
				g->nkeys = 0;
				ck->changed = true;
			}
		}
	}
	for (struct func *f = ck->sc->funcs; f; f = f->next) {
		ck->fn = f;
		ck->probe = NULL;
		stmt(ck, f->body);
	}
	ck->fn = NULL;
	for (struct probe *p = ck->sc->probes; p; p = p->next) {
		ck->probe = p;
		if (p->cond)
			expect_ty(ck, p->cond, TY_LONG);
		stmt(ck, p->body);
	}
	ck->probe = NULL;
}

/* Does n read the user stack, itself or through a function that is known
 * to (uses_ustack so far)? */
static bool calls_ustack(const struct node *n)
{
	if (!n)
		return false;
	if ((n->kind == N_BUILTIN && (builtins[n->op].flags & BF_USTACK)) || (n->kind == N_CALL && n->fn && n->fn->uses_ustack))
		return true;
	if (calls_ustack(n->a) || calls_ustack(n->b) || calls_ustack(n->c) || calls_ustack(n->d) ||
	    calls_ustack(n->fe_limit) || calls_ustack(n->fe_slice))
		return true;
	for (int i = 0; i < n->nargs; i++)
		if (calls_ustack(n->args[i]))
			return true;
	return false;
}

/* Which functions and probes read the hit's user stack: the functions to
 * a fixed point (calls may go round), then each probe.  A probe that does
 * has its sites connected so that each hit records the stack, the work of
 * a stack walk in the target, which the others do not pay. */
static void mark_ustack(struct script *sc)
{
	bool changed = true;
	while (changed) {
		changed = false;
		for (struct func *f = sc->funcs; f; f = f->next)
			if (!f->uses_ustack && calls_ustack(f->body))
				f->uses_ustack = changed = true;
	}
	for (struct probe *p = sc->probes; p; p = p->next)
		p->uses_ustack = calls_ustack(p->cond) || calls_ustack(p->body);
}

int check_script(struct script *sc)
{
	struct checker ck = { .sc = sc };
	int rounds = 0;

	/* function locals: parameters take the first slots */
	for (struct func *f = sc->funcs; f; f = f->next)
		f->nslots = f->nparams;
	do {
		ck.changed = false;
		pass(&ck);
	} while (ck.changed && ++rounds < 64 && !ck.errors);
	if (ck.errors)
		return ck.errors;
	ck.report = true;
	pass(&ck);
	if (!ck.errors) {
		ck.report = true;
		for (struct probe *p = sc->probes; p; p = p->next) {
			walk_hists(&ck, p->body);
			check_unresolved(&ck, p->locals, "local");
		}
		for (struct func *f = sc->funcs; f; f = f->next) {
			walk_hists(&ck, f->body);
			check_unresolved(&ck, f->locals, "local");
			for (int i = 0; i < f->nparams; i++) {
				if (f->params[i]->ty == TY_UNK) {
					diag(sc, f->params[i]->line, f->params[i]->col, "semantic error",
					     "unresolved type for parameter '%s' of %s()", f->params[i]->name, f->name);
					ck.errors++;
				}
			}
			if (f->ret == TY_UNK)
				f->ret = TY_LONG; /* a function that returns nothing */
		}
		check_unresolved(&ck, sc->globals, "global");
		mark_ustack(sc);
	}
	return ck.errors;
}

static const char *decl_type(int ty)
{
	return ty == TY_STR ? "string" : ty == TY_STAT ? "stat" : ty == TY_LONG ? "long" : "unknown";
}

void print_elaborated(const struct script *sc, FILE *out)
{
	fputs("# global variables\n", out);
	for (const struct sym *g = sc->globals; g; g = g->next) {
		fprintf(out, "%s:%s", g->name, decl_type(g->ty));
		for (int k = 0; k < g->nkeys; k++)
			fprintf(out, "%s%s", k ? ", " : " [", decl_type(g->kty[k]));
		fputs(g->nkeys > 0 ? "]\n" : "\n", out);
	}
	fputs("# functions\n", out);
	for (const struct func *f = sc->funcs; f; f = f->next) {
		fprintf(out, "%s:%s (", f->name, decl_type(f->ret));
		for (int a = 0; a < f->nparams; a++)
			fprintf(out, "%s%s:%s", a ? ", " : "", f->params[a]->name, decl_type(f->params[a]->ty));
		fputs(")\n", out);
	}
	fputs("# probes\n", out);
	for (const struct probe *p = sc->probes; p; p = p->next) {
		if (p->synthetic)
			continue;
		for (const struct probe_point *pp = p->points; pp; pp = pp->next)
			if (pp->kind != PP_MARK && pp->kind != PP_LIFE)
				fprintf(out, "%s\n", pp->text);
		for (int b = 0; b < p->nbinds; b++)
			fprintf(out, "%s /* <- %s */\n", p->binds[b]->pp, p->points->text);
	}
}
