/*
 * The interpreter: evaluates the checked AST's expressions (exec.c runs
 * its statements, run.c its probes on a source's events).
 *
 * check.c has already resolved every name to a slot and every expression to
 * a type, so evaluation is two small recursive functions, one for numbers
 * (eval_n) and one for strings (eval_s), that switch on the node kind and
 * never test a type or look a name up.  A hit on a marker indexes the
 * marker's list of bindings; each binding carries the argument index of
 * every context variable its probe reads and the precomputed hash of the
 * marker's name, so `c[$$name]++` is: fetch a pointer, find the entry by
 * cached hash, add one.
 *
 * Memory: locals live in a frame on a preallocated stack; strings made while
 * a probe runs (concatenation, sprintf, copies of globals) come from an arena
 * that is reset when the probe returns, so nothing in the common path calls
 * malloc.  Only storing a string into a global copies it to storage the
 * global owns.
 *
 * A built-in function is a row of builtins/builtins.def: its node calls
 * the row's function, which evaluates its own arguments.
 *
 * Control: break/continue/return travel up as statement results; `next`
 * and run-time errors (division by zero, a full array, MAXACTION) leave the
 * probe by longjmp to its dispatcher, which releases foreach snapshots and
 * the arena.  An error is printed with the probe point, stops the run like
 * exit() does, and the end probes still run, as in stap.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctx_vars.h"
#include "interp.h"
#include "tools/djp/line_out.h"
#include "tools/djp/script/typed.h"

/* ---- arena -------------------------------------------------------------- */

char *arena_alloc(struct run *r, size_t n)
{
	struct chunk *c = r->arena;
	if (!c || c->used + n > c->cap) {
		size_t cap = n > 65536 ? n : 65536;
		c = malloc(sizeof(*c) + cap);
		if (!c)
			abort();
		c->used = 0;
		c->cap = cap;
		c->next = r->arena;
		r->arena = c;
	}
	c->used += n;
	return c->data + c->used - n;
}

void arena_reset(struct run *r)
{
	struct chunk *c = r->arena;
	if (!c)
		return;
	while (c->next) {
		struct chunk *n = c->next;
		c->next = n->next;
		free(n);
	}
	c->used = 0;
}

const char *arena_strn(struct run *r, const char *s, size_t n)
{
	char *d;
	if (n > MAXSTRINGLEN - 1)
		n = MAXSTRINGLEN - 1;
	d = arena_alloc(r, n + 1);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

/* ---- errors ------------------------------------------------------------- */

static const char *near(const struct node *n, char *buf, size_t sz)
{
	static const char *const agg[] = { "@count", "@sum", "@min", "@max", "@avg", "@variance" };
	switch (n->kind) {
	case N_BINOP:
		snprintf(buf, sz, "operator '%c%s'", n->op & 0xff, (n->op >> 8) ? (n->op >> 8) == '<' ? "<" : ">" : "");
		break;
	case N_ASSIGN:
	case N_INCDEC:
	case N_STATADD:
		return near(n->a, buf, sz);
	case N_VAR:
	case N_INDEX:
		snprintf(buf, sz, "identifier '%s'", n->sym ? n->sym->name : n->str);
		break;
	case N_AGG:
		snprintf(buf, sz, "operator '%s'", agg[n->op]);
		break;
	case N_CALL:
	case N_BUILTIN:
		snprintf(buf, sz, "identifier '%s'", n->str);
		break;
	case N_TYPED: /* at its first operator */
		snprintf(buf, sz, "operator '%s'", n->tr->acc.nsteps && n->tr->acc.step[0].is_index ? "[" : "->");
		break;
	default:
		snprintf(buf, sz, "statement");
	}
	return buf;
}

void rt_error(struct run *r, const struct node *at, const char *fmt, ...)
{
	char msg[600], what[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (r->try_depth) { /* caught: the catch block gets the message */
		snprintf(r->try_msg, sizeof(r->try_msg), "%s", msg);
		longjmp(*r->jb, 1);
	}
	line_out_flush(r->out);
	fprintf(stderr, "ERROR: %s near %s at %s:%d:%d in probe %s\n", msg, near(at, what, sizeof(what)), r->sc->file.name,
		at->line, at->col, r->pp ? r->pp : "?");
	longjmp(*r->jb, 1);
}

void rt_warn(struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (script_no_warnings)
		return;
	line_out_flush(r->out);
	fputs("WARNING: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* ---- values ------------------------------------------------------------- */

void eval_any(struct run *r, struct node *n, union cell *c)
{
	if (n->ty == TY_STR)
		c->s = eval_s(r, n);
	else
		c->n = eval_n(r, n);
}

static uint64_t eval_keys(struct run *r, struct node *n, const struct map *m, union cell *key)
{
	uint32_t given = r->key_given; /* this lvalue's only */
	uint64_t h = 0;

	r->key_given = 0;
	for (int i = 0; i < n->nargs; i++) {
		struct node *k = n->args[i];
		uint64_t hi;
		if (m->kty[i] == TY_STR) {
			if (k->kind == N_CTXNAME) {
				key[i].s = r->bind->name;
				hi = r->bind->name_hash;
			} else {
				key[i].s = eval_s(r, k);
				hi = str_hash(key[i].s);
			}
		} else {
			/* an index the target computed (agg.c), or this one */
			key[i].n = given >> i & 1 ? r->key_vals[i] : eval_n(r, k);
			hi = num_hash((uint64_t)key[i].n);
		}
		h = h * 31 + hi;
	}
	return h;
}

struct map_ent *element(struct run *r, struct node *n, bool create)
{
	union cell key[MAXKEYS];
	struct map *m = n->sym->map;
	uint64_t h = eval_keys(r, n, m, key);
	struct map_ent *e = create ? map_get(m, key, h) : map_find(m, key, h);
	if (!e && create)
		rt_error(r, n, "Array overflow, check MAXMAPENTRIES");
	return e;
}

void lvalue(struct run *r, struct node *n, struct lval *lv)
{
	struct sym *s = n->sym;
	lv->g = NULL;
	lv->e = NULL;
	lv->ty = s->ty;
	if (n->kind == N_INDEX) {
		lv->e = element(r, n, true);
		lv->c = &lv->e->val;
	} else if (!s->global) {
		lv->c = &r->fp[s->slot];
	} else {
		lv->c = s->cell;
		if (s->ty == TY_STR)
			lv->g = s;
	}
}

void store_s(struct run *r, struct lval *lv, const char *v)
{
	if (lv->e) {
		map_set_str(lv->e, v);
	} else if (lv->g) {
		size_t n = strnlen(v, MAXSTRINGLEN - 1);
		memmove(lv->g->strbuf, v, n);
		lv->g->strbuf[n] = 0;
	} else {
		lv->c->s = v;
	}
}

static const char *load_s(struct run *r, struct lval *lv)
{
	if (lv->g)
		return arena_strn(r, lv->g->strbuf, strlen(lv->g->strbuf));
	if (lv->e)
		return arena_strn(r, lv->e->val.s, strlen(lv->e->val.s));
	return lv->c->s;
}

static struct script_stat *stat_of(struct run *r, struct node *n, bool create, struct sym **symp)
{
	*symp = n->sym;
	if (n->kind == N_VAR)
		return n->sym->stat;
	struct map_ent *e = element(r, n, create);
	return e ? e->st : NULL;
}

static int64_t arith(struct run *r, struct node *at, int op, int64_t a, int64_t b)
{
	switch (op) {
	case '+': return (int64_t)((uint64_t)a + (uint64_t)b);
	case '-': return (int64_t)((uint64_t)a - (uint64_t)b);
	case '*': return (int64_t)((uint64_t)a * (uint64_t)b);
	case '/':
		if (!b)
			rt_error(r, at, "division by 0");
		return b == -1 ? (int64_t)(0 - (uint64_t)a) : a / b;
	case '%':
		if (!b)
			rt_error(r, at, "division by 0");
		return b == -1 ? 0 : a % b;
	case '&': return a & b;
	case '|': return a | b;
	case '^': return a ^ b;
	case '<' | '<' << 8: return (int64_t)((uint64_t)a << (b & 63));
	case '>' | '>' << 8: return a >> (b & 63);
	}
	return 0;
}

static const char *concat(struct run *r, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *d;
	if (la > MAXSTRINGLEN - 1)
		la = MAXSTRINGLEN - 1;
	if (la + lb > MAXSTRINGLEN - 1)
		lb = MAXSTRINGLEN - 1 - la;
	d = arena_alloc(r, la + lb + 1);
	memcpy(d, a, la);
	memcpy(d + la, b, lb);
	d[la + lb] = 0;
	return d;
}

static void call_fn(struct run *r, struct node *n)
{
	struct func *f = n->fn;
	union cell args[16];
	union cell *saved_fp = r->fp;
	int saved_sp = r->sp;

	for (int i = 0; i < n->nargs; i++)
		eval_any(r, n->args[i], &args[i]);
	if (r->depth >= MAXNESTING)
		rt_error(r, n, "MAXNESTING exceeded");
	if (r->sp + f->nslots > STACK_CELLS)
		rt_error(r, n, "out of stack space for locals");
	r->fp = r->stack + r->sp;
	r->sp += f->nslots;
	for (struct sym *s = f->locals; s; s = s->next) {
		if (s->ty == TY_STR)
			r->fp[s->slot].s = "";
		else
			r->fp[s->slot].n = 0;
	}
	for (int i = 0; i < n->nargs; i++)
		r->fp[i] = args[i];
	r->depth++;
	r->ret.n = 0;
	if (f->ret == TY_STR)
		r->ret.s = "";
	exec(r, f->body);
	r->depth--;
	r->fp = saved_fp;
	r->sp = saved_sp;
}

/* STRING =~ REGEX: true when it matches; the groups are kept for
 * matched(). */
static bool regex_match(struct run *r, struct node *n)
{
	const char *subject = eval_s(r, n->a);
	regmatch_t m[10];
	if (regexec(n->re, subject, 10, m, 0))
		return false;
	snprintf(r->match_text, sizeof(r->match_text), "%s", subject);
	memcpy(r->match, m, sizeof(m));
	r->nmatch = (int)((regex_t *)n->re)->re_nsub + 1;
	if (r->nmatch > 10)
		r->nmatch = 10;
	return true;
}

void emitf(struct run *r, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int len;
	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	emit(r, buf, (size_t)len < sizeof(buf) ? (size_t)len : sizeof(buf) - 1);
}

/* %m and %M: the hit's process memory, read now from outside */
bool read_target(void *ctx, uint64_t addr, void *buf, size_t n)
{
	struct run *r = ctx;
	int32_t pid = r->ev ? r->ev->pid : r->src ? r->src->target_pid : 0;
	if (!r->src || !r->src->ops->read_mem || pid <= 0)
		return false;
	return r->src->ops->read_mem(r->src, pid, addr, buf, n) == 0;
}

static void print_to(struct run *r, struct node *n, struct strbuf *b)
{
	union cell args[32];
	b->len = 0;
	if (b->p)
		b->p[0] = 0;
	if (n->op == P_PRINTF || n->op == P_SPRINTF) {
		struct print_mem mem = { read_target, r, 0 };
		for (int i = 1; i < n->nargs; i++)
			eval_any(r, n->args[i], &args[i - 1]);
		if (!print_format(b, n->pf, args, &mem))
			rt_error(r, n, "user memory copy fault -14 at 0x%llx", (unsigned long long)mem.fault);
		return;
	}
	bool delimited = n->op == P_PRINTD || n->op == P_PRINTDLN || n->op == P_SPRINTD;
	const char *delim = delimited ? eval_s(r, n->args[0]) : "";
	for (int i = delimited; i < n->nargs; i++) {
		struct node *a = n->args[i];
		if (i > delimited)
			sb_put(b, delim, strlen(delim));
		if (a->ty == TY_STR) {
			const char *s = eval_s(r, a);
			sb_put(b, s, strlen(s));
		} else {
			print_number(b, (uint64_t)eval_n(r, a), 10, -1, -1, PRINT_SIGN);
		}
	}
	if (n->op == P_PRINTLN || n->op == P_SPRINTLN || n->op == P_PRINTDLN)
		sb_putc(b, '\n');
}

int cmp_cell(uint8_t ty, const union cell *a, const union cell *b)
{
	if (ty == TY_STR)
		return strcmp(a->s, b->s);
	return a->n < b->n ? -1 : a->n > b->n;
}

void slice_eval(struct run *r, struct node *n, const struct map *m, struct slice *sl)
{
	sl->nkeys = n->nargs;
	for (int i = 0; i < n->nargs; i++) {
		struct node *k = n->args[i];
		sl->fixed[i] = k->kind != N_WILD;
		if (!sl->fixed[i])
			continue;
		if (m->kty[i] == TY_STR)
			sl->key[i].s = k->kind == N_CTXNAME ? r->bind->name : eval_s(r, k);
		else
			sl->key[i].n = eval_n(r, k);
	}
}

bool slice_has(const struct map *m, const struct slice *sl, const struct map_ent *e)
{
	if (!e->live)
		return false;
	for (int i = 0; i < sl->nkeys; i++)
		if (sl->fixed[i] && cmp_cell(m->kty[i], &sl->key[i], &e->key[i]))
			return false;
	return true;
}

static int64_t agg_value(struct run *r, struct node *n)
{
	struct sym *s;
	struct script_stat *st = stat_of(r, n->a, false, &s);
	if (n->op == A_COUNT)
		return st ? st->count : 0;
	if (!st || !st->count) {
		if (n->op == A_SUM)
			return 0;
		rt_error(r, n, "empty aggregate");
	}
	switch (n->op) {
	case A_SUM: return st->sum;
	case A_MIN: return st->min;
	case A_MAX: return st->max;
	case A_VARIANCE: return stat_variance(st);
	default: return st->sum / st->count;
	}
}

/* a < b and the like, of numbers or strings; =~ and !~ */
static int64_t compare(struct run *r, struct node *n)
{
	int c;
	if (n->re)
		return regex_match(r, n) == (n->op == ('=' | '~' << 8));
	if (n->a->ty == TY_STR) {
		const char *x = eval_s(r, n->a);
		c = strcmp(x, eval_s(r, n->b));
	} else {
		int64_t a = eval_n(r, n->a), b = eval_n(r, n->b);
		c = a < b ? -1 : a > b;
	}
	switch (n->op) {
	case '<': return c < 0;
	case '>': return c > 0;
	case '<' | '=' << 8: return c <= 0;
	case '>' | '=' << 8: return c >= 0;
	case '=' | '=' << 8: return c == 0;
	default: return c != 0;
	}
}

/* [k, ...] in a; [*, k] in a: any element of the slice */
static int64_t in_array(struct run *r, struct node *n)
{
	union cell key[MAXKEYS];
	struct map *m = n->sym->map;
	if (n->post) {
		struct slice sl;
		slice_eval(r, n, m, &sl);
		for (uint32_t i = 0; i < m->nent; i++)
			if (slice_has(m, &sl, &m->ent[i]))
				return 1;
		return 0;
	}
	uint64_t h = eval_keys(r, n, m, key);
	return map_find(m, key, h) != NULL;
}

/* print(@hist_log(s)) and the other print functions as statements */
static int64_t print_stmt(struct run *r, struct node *n)
{
	if (n->op == P_FOLDED) {
		print_folded(r, n->args[0]->sym);
		return 0;
	}
	if (n->nargs == 1 && n->args[0]->kind == N_HIST) {
		struct sym *s;
		struct script_stat *st = stat_of(r, n->args[0]->args[0], false, &s);
		if (!st)
			rt_error(r, n, "aggregate element not found");
		hist_print(r->out, &s->hist, st);
		r->dirty = true;
		return 0;
	}
	if (n->ty == TY_STR) {
		eval_s(r, n);
		return 0;
	}
	print_to(r, n, &r->pb);
	if (r->pb.len)
		fwrite(r->pb.p, 1, r->pb.len, r->out);
	r->dirty = true;
	return 0;
}

int64_t eval_n(struct run *r, struct node *n)
{
	struct lval lv;
	int64_t a, b;

	switch (n->kind) {
	case N_NUM:
		return n->num;
	case N_VAR:
		return n->sym->global ? n->sym->cell->n : r->fp[n->sym->slot].n;
	case N_INDEX: {
		struct map_ent *e = element(r, n, false);
		return e ? e->val.n : 0;
	}
	case N_CTX:
		return r->ev->args[r->bind->field[n->slot]];
	case N_TYPED:
		return typed_value(r, n);
	case N_CALL:
		call_fn(r, n);
		return r->ret.n;
	case N_BUILTIN: { /* a string function's node is not evaluated as a number */
		builtin_num *f = builtins[n->op].num;
		return f ? f(r, n) : 0;
	}
	case N_BINOP:
		a = eval_n(r, n->a);
		b = eval_n(r, n->b);
		return arith(r, n, n->op, a, b);
	case N_CMP:
		return compare(r, n);
	case N_LOGAND:
		return eval_n(r, n->a) && eval_n(r, n->b);
	case N_LOGOR:
		return eval_n(r, n->a) || eval_n(r, n->b);
	case N_NOT:
		return !eval_n(r, n->a);
	case N_NEG:
		return (int64_t)(0 - (uint64_t)eval_n(r, n->a));
	case N_BITNOT:
		return ~eval_n(r, n->a);
	case N_TERNARY:
		return eval_n(r, n->a) ? eval_n(r, n->b) : eval_n(r, n->c);
	case N_ASSIGN:
		if (n->ty == TY_STR) {
			eval_s(r, n);
			return 0;
		}
		b = eval_n(r, n->b);
		lvalue(r, n->a, &lv);
		if (n->op)
			b = arith(r, n, n->op & 0xff ? n->op : n->op, lv.c->n, b);
		lv.c->n = b;
		return b;
	case N_INCDEC:
		lvalue(r, n->a, &lv);
		a = lv.c->n;
		lv.c->n = (int64_t)((uint64_t)a + (n->op == '+' ? 1u : (uint64_t)-1));
		return n->post ? a : lv.c->n;
	case N_IN:
		return in_array(r, n);
	case N_AGG:
		return agg_value(r, n);
	case N_STATADD: {
		struct sym *s;
		int64_t v = eval_n(r, n->b);
		struct script_stat *st = stat_of(r, n->a, true, &s);
		stat_add(st, &s->hist, v);
		return v;
	}
	case N_PRINT:
		return print_stmt(r, n);
	default:
		eval_s(r, n);
		return 0;
	}
}

const char *eval_s(struct run *r, struct node *n)
{
	struct lval lv;
	const char *v;

	switch (n->kind) {
	case N_STR:
		return n->str;
	case N_VAR:
		if (n->sym->global)
			return arena_strn(r, n->sym->strbuf, strlen(n->sym->strbuf));
		return r->fp[n->sym->slot].s;
	case N_INDEX: {
		struct map_ent *e = element(r, n, false);
		return e ? arena_strn(r, e->val.s, strlen(e->val.s)) : "";
	}
	case N_CTX: {
		const char *s = r->ev->strs[r->bind->field[n->slot]];
		return s ? s : "";
	}
	case N_TYPED:
		return typed_pretty_text(r, n);
	case N_CTXNAME:
		return r->bind->name;
	case N_CTXFORMAT:
		return r->bind->format;
	case N_CTXPARMS: {
		char *buf = arena_alloc(r, MAXSTRINGLEN);
		ctx_vars_render(buf, MAXSTRINGLEN, r->bind->desc, n->str, r->ev);
		return buf;
	}
	case N_CALL:
		call_fn(r, n);
		return r->ret.s;
	case N_BUILTIN: {
		builtin_str *f = builtins[n->op].str;
		return f ? f(r, n) : "";
	}
	case N_CONCAT: {
		const char *a = eval_s(r, n->a);
		return concat(r, a, eval_s(r, n->b));
	}
	case N_TERNARY:
		return eval_n(r, n->a) ? eval_s(r, n->b) : eval_s(r, n->c);
	case N_ASSIGN:
		v = eval_s(r, n->b);
		lvalue(r, n->a, &lv);
		if (n->op == '.')
			v = concat(r, load_s(r, &lv), v);
		store_s(r, &lv, v);
		return v;
	case N_PRINT: {
		/* a buffer of its own: sprint*() may be an argument of a print
		 * that is filling r->pb */
		struct strbuf b = { 0 };
		const char *v;
		print_to(r, n, &b);
		v = arena_strn(r, b.p ? b.p : "", b.len);
		free(b.p);
		return v;
	}
	default:
		eval_n(r, n);
		return "";
	}
}
