/*
 * The interpreter: runs the checked AST against events.
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
 * Control: break/continue/return travel up as statement results; `next`
 * and run-time errors (division by zero, a full array, MAXACTION) leave the
 * probe by longjmp to its dispatcher, which releases foreach snapshots and
 * the arena.  An error is printed with the probe point, stops the run like
 * exit() does, and the end probes still run, as in stap.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <regex.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tools/djp/script/agg.h"
#include "ctx_vars.h"
#include "tools/djp/script/func_points.h"
#include "run.h"
#include "tools/djp/line_out.h"
#include "builtins/tapset.h"
#include "builtins/tapset_named.h"
#include "builtins/ubacktrace.h"
#include "tools/djp/script/usym.h"

volatile int run_interrupted;

enum { X_NORMAL, X_BREAK, X_CONTINUE, X_RETURN };
#define STACK_CELLS 8192
#define MAX_ITERS 64

struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
};

struct iter {
	struct map *map;
	uint32_t *idx;
};

/* stap's defaults (lang.h); cli.c's -D changes them before anything runs. */
struct script_limits script_limits = { .maxstringlen = 512, .maxmapentries = 2048, .maxnesting = 10,
				       .maxaction = 1000, .maxaction_interruptible = 0, .maxerrors = 0,
				       .hist_elision = 2 };

struct run {
	struct script *sc;
	struct djp_source *src;
	FILE *out;
	union cell stack[STACK_CELLS];
	int sp;
	union cell *fp;
	const struct djp_ev *ev;
	const struct binding *bind;
	struct probe *probe;
	const char *pp;
	jmp_buf *jb;
	struct chunk *arena;
	bool exiting, dirty;
	int errors, depth;
	uint64_t actions;
	union cell ret;
	struct strbuf pb;
	struct strbuf ub; /* the backtrace functions' text */
	struct iter iters[MAX_ITERS];
	int niters;
	struct tapset_tokens tokens; /* tokenize()'s string */
	struct indent { int32_t tid; int64_t depth, t0; } indent[64]; /* thread_indent() */
	int nindent;
	bool aborting; /* abort(): no end probes */
	bool failed;   /* more run-time errors than MAXERRORS: error probes, no end probes */
	/* the groups of the last =~ that matched, for matched(n) */
	char match_text[512];
	regmatch_t match[10];
	int nmatch;
	/* system()'s commands, run when the probe that asked is done */
	char **commands;
	int ncommands;
	struct tapset_named *named; /* stopwatches, queues, speculations */
	uint64_t max_actions;	    /* MAXACTION, or MAXACTION_INTERRUPTIBLE in begin, end and error */
	/* try blocks open, and the message a run-time error leaves for the
	 * innermost one's catch */
	int try_depth;
	char try_msg[600];
};

/* ---- arena -------------------------------------------------------------- */

static char *arena_alloc(struct run *r, size_t n)
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

static void arena_reset(struct run *r)
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

static const char *arena_strn(struct run *r, const char *s, size_t n)
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
	default:
		snprintf(buf, sz, "statement");
	}
	return buf;
}

__attribute__((noreturn, format(printf, 3, 4))) static void rt_error(struct run *r, const struct node *at, const char *fmt, ...)
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

/* ---- values ------------------------------------------------------------- */

static int64_t eval_n(struct run *r, struct node *n);
static const char *eval_s(struct run *r, struct node *n);
static const char *usym_string(struct run *r, int op, uint64_t addr);
static int exec(struct run *r, struct node *n);

static void eval_any(struct run *r, struct node *n, union cell *c)
{
	if (n->ty == TY_STR)
		c->s = eval_s(r, n);
	else
		c->n = eval_n(r, n);
}

static uint64_t eval_keys(struct run *r, struct node *n, const struct map *m, union cell *key)
{
	uint64_t h = 0;
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
			key[i].n = eval_n(r, k);
			hi = num_hash((uint64_t)key[i].n);
		}
		h = h * 31 + hi;
	}
	return h;
}

static struct map_ent *element(struct run *r, struct node *n, bool create)
{
	union cell key[MAXKEYS];
	struct map *m = n->sym->map;
	uint64_t h = eval_keys(r, n, m, key);
	struct map_ent *e = create ? map_get(m, key, h) : map_find(m, key, h);
	if (!e && create)
		rt_error(r, n, "Array overflow, check MAXMAPENTRIES");
	return e;
}

/* where an lvalue lives */
struct lval {
	union cell *c;	    /* long or local string */
	struct sym *g;	    /* global scalar string: g->strbuf */
	struct map_ent *e;  /* array element */
	uint8_t ty;
};

static void lvalue(struct run *r, struct node *n, struct lval *lv)
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

static void store_s(struct run *r, struct lval *lv, const char *v)
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

static uint64_t now_ns(struct run *r)
{
	if (r->ev)
		return r->ev->ts_ns;
	return r->src && r->src->ops->now_ns ? r->src->ops->now_ns(r->src) : 0;
}

/* execname(): the event's process's command name. */
static const char *builtin_s_execname(struct run *r)
{
	if (r->ev) {
		const char *o, *b;
		if (r->ev->comm)
			return r->ev->comm;
		o = r->ev->desc->object ? r->ev->desc->object : "";
		b = strrchr(o, '/');
		return b ? b + 1 : o;
	}
	return "djp";
}

/* The process the probe speaks of: the event's, or the target's. */
static int32_t ctx_pid(struct run *r)
{
	return r->ev ? r->ev->pid : r->src ? r->src->target_pid : 0;
}

/* ... and its thread: the event's, or the target's main thread. */
static int32_t ctx_tid(struct run *r)
{
	return r->ev ? r->ev->tid : ctx_pid(r);
}

/* stap's thread_indent(delta): microseconds since the thread's first call,
 * "execname(tid):", and an indentation that grows before and shrinks after
 * (tapset/indent.stp). */
static const char *thread_indent(struct run *r, int64_t delta)
{
	int32_t tid = ctx_tid(r);
	int64_t us = (int64_t)(now_ns(r) / 1000), x;
	struct indent *in = NULL;
	char *buf = arena_alloc(r, MAXSTRINGLEN);
	for (int i = 0; i < r->nindent && !in; i++)
		if (r->indent[i].tid == tid)
			in = &r->indent[i];
	if (!in) {
		in = &r->indent[r->nindent < 64 ? r->nindent++ : (tid & 63)];
		*in = (struct indent){ tid, 0, us };
	}
	if (!in->depth)
		in->t0 = us;
	x = in->depth + (delta > 0 ? delta : 0);
	in->depth += delta;
	snprintf(buf, MAXSTRINGLEN, "%6lld %s(%d):%*s", (long long)(us - in->t0), builtin_s_execname(r), (int)tid,
		 (int)(x > 0 ? x - 1 : 0), "");
	return buf;
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

static const char *matched(struct run *r, struct node *n)
{
	int64_t k = eval_n(r, n->args[0]);
	if (!r->nmatch)
		rt_error(r, n, "matched(%lld): no regular expression has matched", (long long)k);
	if (k < 0 || k >= r->nmatch)
		rt_error(r, n, "matched(%lld): no such group (the last match has %d)", (long long)k, r->nmatch);
	if (r->match[k].rm_so < 0 || (size_t)r->match[k].rm_eo > strlen(r->match_text))
		return "";
	return arena_strn(r, r->match_text + r->match[k].rm_so, (size_t)(r->match[k].rm_eo - r->match[k].rm_so));
}

static bool read_target(void *ctx, uint64_t addr, void *buf, size_t n);

static void emit(struct run *r, const char *s, size_t len)
{
	fwrite(s, 1, len, r->out);
	r->dirty = true;
}

static void emitf(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emitf(struct run *r, const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int len;
	va_start(ap, fmt);
	len = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	emit(r, buf, (size_t)len < sizeof(buf) ? (size_t)len : sizeof(buf) - 1);
}

/* An integer of the target's memory, size bytes, sign-extended or not. */
static int64_t user_integer(struct run *r, struct node *n, unsigned size, bool sign)
{
	static const char *const what[] = { [1] = "char", [2] = "short", [4] = "int", [8] = "long" };
	uint64_t addr = (uint64_t)eval_n(r, n->args[0]);
	union {
		int8_t i8;
		int16_t i16;
		int32_t i32;
		int64_t i64;
	} v = { .i64 = 0 };
	if (!read_target(r, addr, &v, size))
		rt_error(r, n, "user %s copy fault -14 at 0x%llx", what[size], (unsigned long long)addr);
	if (!sign)
		return size == 8 ? v.i64 : (int64_t)((uint64_t)v.i64 & ((1ull << (8 * size)) - 1));
	return size == 1 ? v.i8 : size == 2 ? v.i16 : size == 4 ? v.i32 : v.i64;
}

/* The state of stopwatches, queues and speculations (tapset_named.c). */
static struct tapset_named *named(struct run *r)
{
	if (!r->named)
		r->named = tapset_named_new();
	return r->named;
}

/* ---- user backtraces (ubacktrace.c) ------------------------------------ */

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

/* ustack(n): pcs[n] (a negative n is 0, as stap's fallback reads it). */
static int64_t ustack_at(struct run *r, struct node *n)
{
	const uint64_t *pcs;
	unsigned k = hit_ustack(r, &pcs);
	int64_t i = eval_n(r, n->args[0]);
	if (!k || i >= (int64_t)k)
		rt_error(r, n, "reached end of stack before unwinding to level %lld", (long long)i);
	return (int64_t)pcs[i < 0 ? 0 : i];
}

static const char *ucallers(struct run *r, struct node *n)
{
	const uint64_t *pcs;
	unsigned k = hit_ustack(r, &pcs);
	int64_t depth = eval_n(r, n->args[0]);
	struct strbuf *b = ub_reset(r);
	if (!ubt_callers(b, pcs, k, depth, MAXSTRINGLEN - 1))
		rt_error(r, n, "reached end of stack before unwinding to level %lld", (long long)depth);
	return arena_strn(r, b->p ? b->p : "", b->len);
}

static int64_t builtin_named(struct run *r, struct node *n)
{
	static const char *const ansi[] = {
		[B_ANSI_CLEAR_SCREEN - B_ANSI_CLEAR_SCREEN] = "\033[1;1H\033[J",
		[B_ANSI_RESET_COLOR - B_ANSI_CLEAR_SCREEN] = "\033[0;0m",
		[B_ANSI_NEW_LINE - B_ANSI_CLEAR_SCREEN] = "\n",
		[B_ANSI_CURSOR_HIDE - B_ANSI_CLEAR_SCREEN] = "\033[>5I",
		[B_ANSI_CURSOR_SHOW - B_ANSI_CLEAR_SCREEN] = "\033[>5h",
		[B_ANSI_CURSOR_SAVE - B_ANSI_CLEAR_SCREEN] = "\033[s",
		[B_ANSI_CURSOR_RESTORE - B_ANSI_CLEAR_SCREEN] = "\033[u",
	};
	int64_t v = 0;
	int op = n->op;

	switch (op) {
	case B_SW_START:
	case B_SW_STOP:
	case B_SW_DELETE:
	case B_SW_READ_S:
	case B_SW_READ_MS:
	case B_SW_READ_US:
	case B_SW_READ_NS: {
		static const int64_t unit[] = { 1000000000, 1000000, 1000, 1 };
		enum stopwatch_op sw = op == B_SW_START ? SW_START : op == B_SW_STOP ? SW_STOP
				     : op == B_SW_DELETE ? SW_DELETE : SW_READ;
		if (!tapset_stopwatch(named(r), sw, eval_s(r, n->args[0]), (int64_t)now_ns(r), &v))
			rt_error(r, n, "Array overflow, check MAXMAPENTRIES");
		return sw == SW_READ ? v / unit[op - B_SW_READ_S] : 0;
	}
	case B_QS_WAIT:
	case B_QS_RUN:
	case B_QS_DONE:
	case B_QSQ_START:
		if (!tapset_queue(named(r), (enum queue_op)(op - B_QS_WAIT), eval_s(r, n->args[0]),
				  (int64_t)(now_ns(r) / 1000)))
			rt_error(r, n, "Array overflow, check MAXMAPENTRIES");
		return 0;
	case B_QSQ_PRINT: { /* queue_stats.stp's line, from the same averages */
		const char *q = eval_s(r, n->args[0]);
		static const struct {
			enum queue_avg avg;
			int64_t scale;
		} col[] = { { QA_THROUGHPUT, 1000000000 }, { QA_WAIT_QUEUE_LENGTH, 1000 }, { QA_WAIT_TIME, 1 },
			    { QA_SERVICE_TIME, 1 }, { QA_BLOCKED, 100 }, { QA_UTILIZATION, 100 } };
		int64_t x[6], now = (int64_t)(now_ns(r) / 1000);
		for (int i = 0; i < 6; i++) {
			int rc = tapset_queue_avg(named(r), col[i].avg, q, col[i].scale, now, &x[i]);
			if (rc < 0)
				rt_error(r, n, "Array overflow, check MAXMAPENTRIES");
			if (rc == 0)
				rt_error(r, n, "division by 0");
		}
		emitf(r, "%s: %lld.%03lld ops/s, %lld.%03lld qlen, %lld await, %lld svctm, %lld%% wait, %lld%% util\n", q,
		      (long long)(x[0] / 1000), (long long)(x[0] % 1000), (long long)(x[1] / 1000),
		      (long long)(x[1] % 1000), (long long)x[2], (long long)x[3], (long long)x[4], (long long)x[5]);
		return 0;
	}
	case B_QSQ_UTILIZATION:
	case B_QSQ_BLOCKED:
	case B_QSQ_WAIT_QUEUE_LENGTH:
	case B_QSQ_SERVICE_TIME:
	case B_QSQ_WAIT_TIME:
	case B_QSQ_THROUGHPUT: {
		const char *q = eval_s(r, n->args[0]);
		int rc = tapset_queue_avg(named(r), (enum queue_avg)(op - B_QSQ_UTILIZATION), q, eval_n(r, n->args[1]),
					  (int64_t)(now_ns(r) / 1000), &v);
		if (rc < 0)
			rt_error(r, n, "Array overflow, check MAXMAPENTRIES");
		if (rc == 0)
			rt_error(r, n, "division by 0");
		return v;
	}
	case B_SPECULATION:
		if ((v = tapset_speculation(named(r))) < 0)
			rt_error(r, n, "too many speculations (MAXMAPENTRIES)");
		return v;
	case B_SPECULATE: {
		int64_t id = eval_n(r, n->args[0]);
		tapset_speculate(named(r), id, eval_s(r, n->args[1]));
		return 0;
	}
	case B_COMMIT:
	case B_DISCARD: {
		char *text = tapset_spec_end(named(r), eval_n(r, n->args[0]), op == B_COMMIT);
		if (text)
			emit(r, text, strlen(text));
		free(text);
		return 0;
	}
	case B_ANSI_SET_COLOR: {
		int64_t a[3];
		for (int i = 0; i < n->nargs; i++)
			a[i] = eval_n(r, n->args[i]);
		if (n->nargs == 1)
			emitf(r, "\033[%lldm", (long long)a[0]);
		else if (n->nargs == 2 || !a[2])
			emitf(r, "\033[%lld;%lldm", (long long)a[1], (long long)a[0]);
		else
			emitf(r, "\033[%lld;%lld;%lldm", (long long)a[1], (long long)a[0], (long long)a[2]);
		return 0;
	}
	case B_ANSI_CURSOR_MOVE: {
		int64_t x = eval_n(r, n->args[0]), y = eval_n(r, n->args[1]);
		emitf(r, "\033[%lld;%lldH", (long long)y, (long long)x);
		return 0;
	}
	case B_ANSI_CLEAR_SCREEN:
	case B_ANSI_RESET_COLOR:
	case B_ANSI_NEW_LINE:
	case B_ANSI_CURSOR_HIDE:
	case B_ANSI_CURSOR_SHOW:
	case B_ANSI_CURSOR_SAVE:
	case B_ANSI_CURSOR_RESTORE:
		emit(r, ansi[op - B_ANSI_CLEAR_SCREEN], strlen(ansi[op - B_ANSI_CLEAR_SCREEN]));
		return 0;
	case B_LOCAL_CLOCK_US: return (int64_t)(now_ns(r) / 1000);
	case B_LOCAL_CLOCK_MS: return (int64_t)(now_ns(r) / 1000000);
	case B_LOCAL_CLOCK_S: return (int64_t)(now_ns(r) / 1000000000);
	case B_CPU_CLOCK_US: eval_n(r, n->args[0]); return (int64_t)(now_ns(r) / 1000);
	case B_CPU_CLOCK_MS: eval_n(r, n->args[0]); return (int64_t)(now_ns(r) / 1000000);
	case B_CPU_CLOCK_S: eval_n(r, n->args[0]); return (int64_t)(now_ns(r) / 1000000000);
	case B_NTOHL:
	case B_HTONL: return (int64_t)__builtin_bswap32((uint32_t)eval_n(r, n->args[0]));
	case B_NTOHS:
	case B_HTONS: return (int64_t)__builtin_bswap16((uint16_t)eval_n(r, n->args[0]));
	case B_RANDINT: {
		int64_t range = eval_n(r, n->args[0]);
		if (range <= 0 || range > 0xffffffffll)
			rt_error(r, n, "invalid range for randint(%lld)", (long long)range);
		return (int64_t)(((uint64_t)random() << 31 ^ (uint64_t)random()) % (uint64_t)range);
	}
	case B_NUM_ONLINE_CPUS: return sysconf(_SC_NPROCESSORS_ONLN);
	case B_UADDR: /* the site's address where the agent said it; a return
		       * probe's is its function's entry */
		return r->bind && r->ev && r->bind->desc->site_runtime ? (int64_t)r->bind->desc->site : 0;
	case B_CPU: /* the hit's; begin, end and timers run in the tool */
		return r->ev ? (r->ev->cpu >= 0 ? r->ev->cpu : 0) : sched_getcpu();
	case B_PRINT_UBACKTRACE: ub_emit(r, ub_stack(r, UBT_FULL)); return 0;
	case B_PRINT_UBACKTRACE_BRIEF: ub_emit(r, ub_stack(r, UBT_BRIEF)); return 0;
	case B_USTACK: return ustack_at(r, n);
	case B_PRINT_USTACK:
	case B_PRINT_USYMS: {
		const char *s = eval_s(r, n->args[0]);
		ubt_usyms(ub_reset(r), ctx_pid(r), s, 0);
		ub_emit(r, &r->ub);
		return 0;
	}
	case B_USER_I8: return user_integer(r, n, 1, true);
	case B_USER_I16: return user_integer(r, n, 2, true);
	case B_USER_I32: return user_integer(r, n, 4, true);
	case B_USER_I64: return user_integer(r, n, 8, true);
	case B_USER_U8: return user_integer(r, n, 1, false);
	case B_USER_U16: return user_integer(r, n, 2, false);
	case B_USER_U32: return user_integer(r, n, 4, false);
	case B_USER_U64: return user_integer(r, n, 8, false);
	}
	return 0;
}

static int64_t builtin_n(struct run *r, struct node *n)
{
	if (n->op >= B_SW_START)
		return builtin_named(r, n);
	switch (n->op) {
	case B_PID: return ctx_pid(r);
	case B_TID: return ctx_tid(r);
	case B_TOD_NS: return (int64_t)now_ns(r);
	case B_TOD_US: return (int64_t)(now_ns(r) / 1000);
	case B_TOD_MS: return (int64_t)(now_ns(r) / 1000000);
	case B_TOD_S: return (int64_t)(now_ns(r) / 1000000000);
	case B_EXIT: r->exiting = true; return 0;
	case B_STRLEN: return (int64_t)strlen(eval_s(r, n->args[0]));
	case B_ISINSTR: {
		const char *a = eval_s(r, n->args[0]);
		return strstr(a, eval_s(r, n->args[1])) != NULL;
	}
	case B_STRTOL: {
		const char *s = eval_s(r, n->args[0]);
		int64_t base = eval_n(r, n->args[1]);
		if (base < 2 || base > 36)
			rt_error(r, n, "strtol: base %lld out of range", (long long)base);
		return strtoll(s, NULL, (int)base);
	}
	case B_STRINGAT: {
		const char *s = eval_s(r, n->args[0]);
		int64_t i = eval_n(r, n->args[1]);
		if (i < 0 || (size_t)i >= strlen(s))
			rt_error(r, n, "Position %lld out of range", (long long)i);
		return (unsigned char)s[i];
	}
	case B_ERROR: rt_error(r, n, "%s", eval_s(r, n->args[0]));
	case B_TARGET: return r->src ? r->src->target_pid : 0;
	case B_PPID: return tapset_proc_field(ctx_pid(r), TF_PPID);
	case B_UID: return tapset_proc_field(ctx_pid(r), TF_UID);
	case B_EUID: return tapset_proc_field(ctx_pid(r), TF_EUID);
	case B_GID: return tapset_proc_field(ctx_pid(r), TF_GID);
	case B_EGID: return tapset_proc_field(ctx_pid(r), TF_EGID);
	case B_STP_PID: return getpid();
	case B_IS_RETURN: /* a function return's site is "NAME%return" */
		return r->bind && strstr(r->bind->desc->name, "%return") != NULL;
	case B_LOCAL_CLOCK_NS:
	case B_CPU_CLOCK_NS: return (int64_t)now_ns(r);
	case B_GET_CYCLES: return (int64_t)__builtin_ia32_rdtsc();
	case B_JIFFIES: return (int64_t)(now_ns(r) / (1000000000u / (uint64_t)sysconf(_SC_CLK_TCK)));
	case B_HZ: return sysconf(_SC_CLK_TCK);
	case B_NGROUPS: return r->nmatch;
	case B_SYSTEM: {
		/* as stap: the command runs after the probe handler, not in it */
		const char *cmd = eval_s(r, n->args[0]);
		char **v = realloc(r->commands, sizeof(*v) * (size_t)(r->ncommands + 1));
		if (!v || !(v[r->ncommands] = strdup(cmd)))
			abort();
		r->commands = v;
		r->ncommands++;
		return 0;
	}
	case B_TARGET_SET_PID: {
		/* the target, or a process descended from it (a child of fork) */
		int32_t pid = (int32_t)eval_n(r, n->args[0]), t = r->src ? r->src->target_pid : 0;
		for (int hops = 0; pid > 1 && t > 0 && hops < 64; hops++) {
			if (pid == t)
				return 1;
			pid = (int32_t)tapset_proc_field(pid, TF_PPID);
		}
		return 0;
	}
	case B_STRPOS: return tapset_strpos(eval_s(r, n->args[0]), eval_s(r, n->args[1]));
	case B_ISDIGIT: return isdigit((unsigned char)eval_s(r, n->args[0])[0]) != 0;
	case B_LOG: {
		const char *m = eval_s(r, n->args[0]);
		fprintf(r->out, "%s\n", m);
		r->dirty = true;
		return 0;
	}
	case B_WARN:
		line_out_flush(r->out);
		if (!script_no_warnings)
			fprintf(stderr, "WARNING: %s\n", eval_s(r, n->args[0]));
		return 0;
	case B_ABORT: /* out of the probe at once, and no end probes */
		r->exiting = r->aborting = true;
		longjmp(*r->jb, 3);
	}
	return 0;
}

/* ---- strings of the target ----------------------------------------------- */

/*
 * The string at the address argument a evaluates to, at most max bytes:
 * the copy the target made at the hit when a is a context variable whose
 * string the probe asked for (user_string($arg2): check.c), else read now
 * through the source.  NULL on a fault, with *addr the address.
 */
static const char *target_string(struct run *r, struct node *a, size_t max, uint64_t *addr, bool *cut)
{
	char *buf;
	*cut = false;
	if (a->kind == N_CTX && r->ev && r->bind) {
		int f = r->bind->field[a->slot];
		*addr = (uint64_t)r->ev->args[f];
		if (r->ev->strs[f]) {
			const char *t = r->ev->strs[f];
			if (!*addr || r->ev->str_fault[f])
				return NULL;
			if (strlen(t) > max)
				return *cut = true, arena_strn(r, t, max);
			return t;
		}
	} else {
		*addr = (uint64_t)eval_n(r, a);
	}
	if (!r->src || !r->src->ops->read_str || !r->ev || !*addr)
		return NULL;
	if (max > MAXSTRINGLEN - 1)
		max = MAXSTRINGLEN - 1;
	buf = arena_alloc(r, max + 1);
	if (r->src->ops->read_str(r->src, r->ev->pid, *addr, buf, max + 1) < 0)
		return NULL;
	*cut = strlen(buf) == max;
	return buf;
}

static const char *user_string(struct run *r, struct node *n)
{
	bool quoted = n->op == B_USTR_QUOTED || n->op == B_USTR_N_QUOTED;
	bool has_n = n->op == B_USTR_N || n->op == B_USTR_N_QUOTED;
	int64_t want = has_n ? eval_n(r, n->args[1]) : (int64_t)MAXSTRINGLEN - 1;
	size_t max = want < 0 ? 0 : (size_t)want > MAXSTRINGLEN - 1 ? MAXSTRINGLEN - 1 : (size_t)want;
	uint64_t addr = 0;
	bool cut;
	const char *t = target_string(r, n->args[0], max, &addr, &cut);
	int err_arg = has_n ? 2 : 1;

	if (quoted) {
		if (!addr)
			return "NULL";
		if (t) {
			char *q = arena_alloc(r, MAXSTRINGLEN);
			tapset_text_str(t, max, true, cut, q, MAXSTRINGLEN);
			return q;
		}
		char *hex = arena_alloc(r, 24);
		snprintf(hex, 24, "0x%llx", (unsigned long long)addr);
		return hex;
	}
	if (t)
		return t;
	if (n->nargs > err_arg)
		return eval_s(r, n->args[err_arg]);
	rt_error(r, n, "user string copy fault -14 at 0x%llx", (unsigned long long)addr);
}

static const char *builtin_s(struct run *r, struct node *n)
{
	switch (n->op) {
	case B_EXECNAME: return builtin_s_execname(r);
	case B_SUBSTR: {
		const char *s = eval_s(r, n->args[0]);
		int64_t start = eval_n(r, n->args[1]), len = eval_n(r, n->args[2]);
		size_t sl = strlen(s);
		if (start < 0 || len < 0 || (size_t)start >= sl)
			return "";
		if ((uint64_t)len > sl - (size_t)start)
			len = (int64_t)(sl - (size_t)start);
		return arena_strn(r, s + start, (size_t)len);
	}
	case B_PP: return r->pp ? r->pp : "";
	case B_USTR:
	case B_USTR_N:
	case B_USTR_QUOTED:
	case B_USTR_N_QUOTED: return user_string(r, n);
	case B_PEXECNAME: return arena_strn(r, tapset_comm((int32_t)tapset_proc_field(ctx_pid(r), TF_PPID)), 63);
	case B_CMDLINE_STR:
	case B_CMDLINE_ARG: {
		char *buf = arena_alloc(r, MAXSTRINGLEN);
		tapset_cmdline(ctx_pid(r), n->op == B_CMDLINE_ARG ? (long)eval_n(r, n->args[0]) : -1, buf, MAXSTRINGLEN);
		return buf;
	}
	case B_PN: return r->bind ? r->bind->pn : r->pp;
	case B_THREAD_INDENT: return thread_indent(r, eval_n(r, n->args[0]));
	case B_CTIME:
	case B_TZ_CTIME: {
		char *buf = arena_alloc(r, 64);
		int64_t secs = n->nargs ? eval_n(r, n->args[0]) : (int64_t)(now_ns(r) / 1000000000u);
		tapset_ctime(secs, n->op == B_TZ_CTIME, buf, 64);
		return buf;
	}
	case B_STR_REPLACE: {
		char *buf = arena_alloc(r, MAXSTRINGLEN);
		const char *a = eval_s(r, n->args[0]), *b = eval_s(r, n->args[1]);
		tapset_str_replace(a, b, eval_s(r, n->args[2]), buf, MAXSTRINGLEN);
		return buf;
	}
	case B_TOKENIZE: {
		char *buf = arena_alloc(r, MAXSTRINGLEN);
		const char *in = eval_s(r, n->args[0]);
		tapset_tokenize(&r->tokens, in, eval_s(r, n->args[1]), buf, MAXSTRINGLEN);
		return buf;
	}
	case B_TEXT_STR:
	case B_STRING_QUOTED:
	case B_TEXT_STRN: {
		char *buf = arena_alloc(r, MAXSTRINGLEN);
		const char *in = eval_s(r, n->args[0]);
		int64_t len = n->op == B_TEXT_STRN ? eval_n(r, n->args[1]) : 0;
		bool quoted = n->op == B_STRING_QUOTED || (n->op == B_TEXT_STRN && eval_n(r, n->args[2]));
		tapset_text_str(in, len > 0 ? (size_t)len : MAXSTRINGLEN, quoted, false, buf, MAXSTRINGLEN);
		return buf;
	}
	case B_ERRNO_STR: return tapset_errno_str(eval_n(r, n->args[0]));
	case B_ENV_VAR: {
		const char *v = tapset_env(ctx_pid(r), eval_s(r, n->args[0]));
		return arena_strn(r, v, strlen(v));
	}
	case B_PROBEFUNC: {
		const struct djp_ev_desc *d = r->bind ? r->bind->desc : NULL;
		if (!d || !r->ev)
			return "";
		if (d->provider_len == 4 && !memcmp(d->provider, "func", 4)) {
			/* an instruction probe's site is named for its function:
			 * "NAME" at the entry, "NAME+0x1c" inside, "NAME%return" */
			static char fn[256];
			snprintf(fn, sizeof(fn), "%.*s", (int)strcspn(d->name, "+%"), d->name);
			return fn;
		}
		if (r->src && r->src->ops->function_of)
			return r->src->ops->function_of(r->src, r->ev->pid, d);
		return d->function ? d->function : "";
	}
	case B_USYMNAME:
	case B_USYMDATA:
	case B_UMODNAME: return usym_string(r, n->op, (uint64_t)eval_n(r, n->args[0]));
	case B_MATCHED: return matched(r, n);
	case B_UBACKTRACE: {
		const uint64_t *pcs;
		unsigned k = hit_ustack(r, &pcs);
		struct strbuf *b = ub_reset(r);
		ubt_stack(b, ctx_pid(r), pcs, k, UBT_HEX);
		return arena_strn(r, b->p ? b->p : "", b->len); /* cut at MAXSTRINGLEN - 1, as stap */
	}
	case B_SPRINT_UBACKTRACE: {
		struct strbuf *b = ub_stack(r, UBT_SIMPLE);
		return arena_strn(r, b->p, b->len);
	}
	case B_UCALLERS: return ucallers(r, n);
	case B_SPRINT_USTACK:
	case B_SPRINT_USYMS: {
		const char *s = eval_s(r, n->args[0]);
		struct strbuf *b = ub_reset(r);
		ubt_usyms(b, ctx_pid(r), s, MAXSTRINGLEN - 1);
		return arena_strn(r, b->p ? b->p : "", b->len);
	}
	}
	return "";
}

/* %m and %M: the hit's process memory, read now from outside */
static bool read_target(void *ctx, uint64_t addr, void *buf, size_t n)
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

static int cmp_cell(uint8_t ty, const union cell *a, const union cell *b)
{
	if (ty == TY_STR)
		return strcmp(a->s, b->s);
	return a->n < b->n ? -1 : a->n > b->n;
}

/* A slice (a[*, k]): its fixed indexes, evaluated once. */
struct slice {
	union cell key[MAXKEYS];
	bool fixed[MAXKEYS];
	int nkeys;
};

static void slice_eval(struct run *r, struct node *n, const struct map *m, struct slice *sl)
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

static bool slice_has(const struct map *m, const struct slice *sl, const struct map_ent *e)
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

static int64_t eval_n(struct run *r, struct node *n)
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
	case N_CALL:
		call_fn(r, n);
		return r->ret.n;
	case N_BUILTIN:
		return builtin_n(r, n);
	case N_BINOP:
		a = eval_n(r, n->a);
		b = eval_n(r, n->b);
		return arith(r, n, n->op, a, b);
	case N_CMP: {
		int c;
		if (n->re)
			return regex_match(r, n) == (n->op == ('=' | '~' << 8));
		if (n->a->ty == TY_STR) {
			const char *x = eval_s(r, n->a);
			c = strcmp(x, eval_s(r, n->b));
		} else {
			a = eval_n(r, n->a);
			b = eval_n(r, n->b);
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
	case N_IN: {
		union cell key[MAXKEYS];
		struct map *m = n->sym->map;
		if (n->post) { /* [*, k] in a: any element of the slice */
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
	default:
		eval_s(r, n);
		return 0;
	}
}

/* usymname(), usymdata(), umodname() of an address of the hit's process,
 * as stap spells them: the name, "name+0xoff/0xsize [module]" (ubacktrace.c
 * writes it), the object's path; the address in hex, or "<unknown>", where
 * nothing is known. */
static const char *usym_string(struct run *r, int op, uint64_t addr)
{
	struct usym u;
	char buf[PATH_MAX + 600];
	bool known = usym_lookup(ctx_pid(r), addr, &u);
	int len;

	if (op == B_USYMDATA) {
		struct strbuf *b = ub_reset(r);
		ubt_addr(b, ctx_pid(r), addr, UBT_DATA);
		return arena_strn(r, b->p, b->len);
	}
	if (op == B_UMODNAME)
		len = snprintf(buf, sizeof(buf), "%s", known && u.module ? u.module : "<unknown>");
	else if (!known || !u.name)
		len = snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
	else
		len = snprintf(buf, sizeof(buf), "%s", u.name + (u.name[0] == '.'));
	return arena_strn(r, buf, len > 0 && (size_t)len < sizeof(buf) ? (size_t)len : strlen(buf));
}

static const char *eval_s(struct run *r, struct node *n)
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
	case N_BUILTIN:
		return builtin_s(r, n);
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

/* ---- statements --------------------------------------------------------- */

struct sort_ctx {
	struct map *m;
	int col, dir, agg;
};

/* The aggregate a statistics array's elements sort by (@count default). */
static int64_t stat_key(const struct script_stat *st, int agg)
{
	switch (agg) {
	case A_SUM: return st->sum;
	case A_MIN: return st->count ? st->min : 0;
	case A_MAX: return st->count ? st->max : 0;
	case A_AVG: return st->count ? st->sum / st->count : 0;
	default: return st->count;
	}
}

static int sort_cmp(const void *x, const void *y, void *arg)
{
	const struct sort_ctx *sc = arg;
	uint32_t i = *(const uint32_t *)x, j = *(const uint32_t *)y;
	const struct map_ent *a = &sc->m->ent[i], *b = &sc->m->ent[j];
	int c;

	if (sc->col == 0) {
		if (sc->m->vty == TY_STAT) {
			int64_t x = stat_key(a->st, sc->agg), y = stat_key(b->st, sc->agg);
			c = x < y ? -1 : x > y;
		} else
			c = cmp_cell(sc->m->vty, &a->val, &b->val);
	} else {
		c = cmp_cell(sc->m->kty[sc->col - 1], &a->key[sc->col - 1], &b->key[sc->col - 1]);
	}
	c *= sc->dir;
	return c ? c : (i < j ? -1 : i > j); /* stable: insertion order */
}

static uint32_t *snapshot(struct map *m, int col, int dir, int agg, uint32_t *count)
{
	uint32_t *idx = malloc(sizeof(*idx) * (m->nlive + 1)), n = 0;
	if (!idx)
		abort();
	for (uint32_t e = 0; e < m->nent; e++)
		if (m->ent[e].live)
			idx[n++] = e;
	if (dir) {
		struct sort_ctx sc = { m, col, dir, agg };
		qsort_r(idx, n, sizeof(*idx), sort_cmp, &sc);
	}
	*count = n;
	return idx;
}

static int foreach_stmt(struct run *r, struct node *n)
{
	struct map *m = n->sym->map;
	uint32_t count, *idx;
	int64_t limit = -1, done = 0;
	int x = X_NORMAL;
	struct slice sl;

	if (n->fe_limit)
		limit = eval_n(r, n->fe_limit);
	if (n->fe_slice)
		slice_eval(r, n->fe_slice, m, &sl);
	if (r->niters == MAX_ITERS)
		rt_error(r, n, "foreach nested too deeply");
	idx = snapshot(m, n->fe_sort_col, n->fe_sort_dir, n->fe_sort_agg, &count);
	r->iters[r->niters++] = (struct iter){ m, idx };
	m->iterating++;
	for (uint32_t k = 0; k < count && (limit < 0 || done < limit); k++) {
		struct map_ent *e = &m->ent[idx[k]];
		if (!e->live || (n->fe_slice && !slice_has(m, &sl, e)))
			continue;
		done++;
		for (int i = 0; i < n->fe_nkeys; i++) {
			union cell *c = &r->fp[n->fe_keys[i]->slot];
			if (m->kty[i] == TY_STR)
				c->s = arena_strn(r, e->key[i].s, strlen(e->key[i].s));
			else
				c->n = e->key[i].n;
		}
		if (n->fe_val) {
			union cell *c = &r->fp[n->fe_val->slot];
			if (m->vty == TY_STR)
				c->s = arena_strn(r, e->val.s, strlen(e->val.s));
			else
				c->n = e->val.n;
		}
		x = exec(r, n->a);
		if (x == X_BREAK || x == X_RETURN)
			break;
		x = X_NORMAL;
	}
	m->iterating--;
	r->niters--;
	free(idx);
	return x == X_RETURN ? X_RETURN : X_NORMAL;
}

static void delete_stmt(struct run *r, struct node *n)
{
	struct node *v = n->a;
	struct sym *s = v->sym;

	if (v->kind == N_INDEX && v->post) { /* delete a[*, k]: every match */
		struct map *m = s->map;
		struct slice sl;
		slice_eval(r, v, m, &sl);
		for (uint32_t i = 0; i < m->nent; i++)
			if (slice_has(m, &sl, &m->ent[i]))
				map_delete(m, &m->ent[i]);
		return;
	}
	if (v->kind == N_INDEX) {
		struct map_ent *e = element(r, v, false);
		if (e)
			map_delete(s->map, e);
		return;
	}
	if (!s->global) {
		if (s->ty == TY_STR)
			r->fp[s->slot].s = "";
		else
			r->fp[s->slot].n = 0;
	} else if (s->nkeys > 0) {
		map_clear(s->map);
	} else if (s->ty == TY_STAT) {
		free(s->stat);
		s->stat = stat_new(&s->hist);
	} else if (s->ty == TY_STR) {
		s->strbuf[0] = 0;
	} else {
		s->cell->n = 0;
	}
}

/*
 * try { A } catch (msg) { B }: a run-time error in A (its functions
 * included) ends A, and B runs with the error's message; nothing is
 * printed or counted.  What A had open is closed as the probe's end would
 * close it: the iterations it began, the function frames it entered.  A
 * `next` or an abort() in A is no error: it goes on to the probe's handler.
 */
static int try_stmt(struct run *r, struct node *n)
{
	jmp_buf jb, *saved = r->jb;
	int niters = r->niters, depth = r->depth, sp = r->sp, code, x;
	union cell *fp = r->fp;

	r->jb = &jb;
	r->try_depth++;
	code = setjmp(jb);
	if (code == 0) {
		x = exec(r, n->a);
		r->try_depth--;
		r->jb = saved;
		return x;
	}
	r->try_depth--;
	r->jb = saved;
	while (r->niters > niters) {
		struct iter *it = &r->iters[--r->niters];
		it->map->iterating--;
		free(it->idx);
	}
	r->depth = depth;
	r->fp = fp;
	r->sp = sp;
	if (code != 1)
		longjmp(*saved, code);
	if (n->sym) {
		struct lval lv = { 0 };
		if (n->sym->global)
			lv.g = n->sym;
		else
			lv.c = &r->fp[n->sym->slot];
		store_s(r, &lv, arena_strn(r, r->try_msg, strlen(r->try_msg)));
	}
	return exec(r, n->b);
}

static int exec(struct run *r, struct node *n)
{
	int x;

	if (!n)
		return X_NORMAL;
	if (++r->actions > r->max_actions)
		rt_error(r, n, "MAXACTION exceeded");
	switch (n->kind) {
	case S_BLOCK:
		for (int i = 0; i < n->nargs; i++)
			if ((x = exec(r, n->args[i])) != X_NORMAL)
				return x;
		return X_NORMAL;
	case S_EXPR:
		if (n->a->ty == TY_STR)
			eval_s(r, n->a);
		else
			eval_n(r, n->a);
		return X_NORMAL;
	case S_IF:
		return eval_n(r, n->a) ? exec(r, n->b) : exec(r, n->c);
	case S_WHILE:
		while (eval_n(r, n->a)) {
			x = exec(r, n->b);
			if (x == X_BREAK)
				break;
			if (x == X_RETURN)
				return x;
			if (++r->actions > r->max_actions)
				rt_error(r, n, "MAXACTION exceeded");
		}
		return X_NORMAL;
	case S_FOR:
		if (n->a)
			eval_any(r, n->a, &(union cell){ 0 });
		while (!n->b || eval_n(r, n->b)) {
			x = exec(r, n->d);
			if (x == X_BREAK)
				break;
			if (x == X_RETURN)
				return x;
			if (n->c)
				eval_any(r, n->c, &(union cell){ 0 });
			if (++r->actions > r->max_actions)
				rt_error(r, n, "MAXACTION exceeded");
		}
		return X_NORMAL;
	case S_FOREACH:
		return foreach_stmt(r, n);
	case S_BREAK:
		return X_BREAK;
	case S_CONTINUE:
		return X_CONTINUE;
	case S_NEXT:
		longjmp(*r->jb, 2);
	case S_TRY:
		return try_stmt(r, n);
	case S_RETURN:
		if (n->a)
			eval_any(r, n->a, &r->ret);
		return X_RETURN;
	case S_DELETE:
		delete_stmt(r, n);
		return X_NORMAL;
	default:
		return X_NORMAL;
	}
}

/* ---- probes ------------------------------------------------------------- */

/* system(): the commands a probe asked for, through /bin/sh, after the
 * script's output so far, each waited for. */
static void run_commands(struct run *r)
{
	int fd = line_out_fd(r->out);
	line_out_flush(r->out);
	for (int i = 0; i < r->ncommands; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			if (fd != STDOUT_FILENO && dup2(fd, STDOUT_FILENO) < 0)
				_exit(127);
			execl("/bin/sh", "sh", "-c", r->commands[i], (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
		free(r->commands[i]);
	}
	r->ncommands = 0;
}

static void run_probe(struct run *r, struct probe *p, const struct binding *b, const struct djp_ev *ev, const char *pp,
		      bool interruptible)
{
	jmp_buf jb, *saved = r->jb;
	int code;

	/* the target's aggregates, for a probe that may read them */
	if (r->sc->agg && (!b || p->reads_agg))
		agg_sync(r, r->sc, r->src);
	r->ev = ev;
	r->bind = b;
	r->probe = p;
	r->pp = pp;
	r->jb = &jb;
	r->fp = r->stack;
	r->sp = p->nslots;
	r->depth = 0;
	r->actions = 0;
	/* stap runs begin, end and error probes where they may be interrupted,
	 * with ten times the statements */
	r->max_actions = interruptible ? MAXACTION_INTERRUPTIBLE : MAXACTION;
	r->niters = 0;
	code = setjmp(jb);
	if (code == 0) {
		for (struct sym *s = p->locals; s; s = s->next) {
			if (s->ty == TY_STR)
				r->fp[s->slot].s = "";
			else
				r->fp[s->slot].n = 0;
		}
		if (!p->cond || eval_n(r, p->cond))
			exec(r, p->body);
	} else {
		while (r->niters > 0) {
			struct iter *it = &r->iters[--r->niters];
			it->map->iterating--;
			free(it->idx);
		}
		if (code == 1 && ++r->errors > MAXERRORS) {
			r->exiting = true; /* stap's MAXERRORS: the session fails */
			r->failed = true;
		}
	}
	r->jb = saved;
	r->ev = NULL;
	arena_reset(r);
	if (r->ncommands)
		run_commands(r);
}

bool run_agg_target(struct run *r, struct node *lv, const struct binding *b, const struct djp_ev *ev,
		    struct map_ent **e)
{
	jmp_buf jb, *saved = r->jb;
	int code, try_depth = r->try_depth;
	volatile bool ok = false;

	r->ev = ev;
	r->bind = b;
	r->probe = b->probe;
	r->pp = b->pp;
	r->jb = &jb;
	r->try_depth = 0; /* an error is the merge's, never a catch block's */
	*e = NULL;
	code = setjmp(jb);
	if (code == 0) {
		if (lv->kind == N_INDEX)
			*e = element(r, lv, true);
		ok = true;
	} else if (code == 1 && ++r->errors > MAXERRORS) {
		r->exiting = true;
		r->failed = true;
	}
	r->jb = saved;
	r->try_depth = try_depth;
	r->ev = NULL;
	arena_reset(r);
	return ok;
}

static void init_globals(struct script *sc)
{
	for (struct sym *g = sc->globals; g; g = g->next) {
		g->cell = calloc(1, sizeof(*g->cell));
		if (!g->cell)
			abort();
		if (g->nkeys > 0) {
			uint32_t max = g->maxentries > 0 ? (uint32_t)g->maxentries : MAXMAPENTRIES;
			g->map = map_new(g->nkeys, g->kty, g->ty, &g->hist, max);
			g->map->wrap = g->wrap;
		} else if (g->ty == TY_STAT) {
			g->stat = stat_new(&g->hist);
		} else if (g->ty == TY_STR) {
			g->strbuf = calloc(1, MAXSTRINGLEN);
			if (!g->strbuf)
				abort();
			if (g->init)
				snprintf(g->strbuf, MAXSTRINGLEN, "%s", g->init->str);
		} else if (g->init) {
			g->cell->n = g->init->num;
		}
	}
}

static void free_globals(struct script *sc)
{
	for (struct sym *g = sc->globals; g; g = g->next) {
		free(g->cell);
		map_free(g->map);
		free(g->stat);
		free(g->strbuf);
		g->cell = NULL;
		g->map = NULL;
		g->stat = NULL;
		g->strbuf = NULL;
	}
}

/* stap's display of a global the script wrote but never read */
static void display_global(struct run *r, struct sym *g)
{
	struct strbuf b = { 0 };
	FILE *out = r->out;

	if (g->nkeys <= 0) {
		if (g->ty == TY_STAT) {
			struct script_stat *st = g->stat;
			if (!st->count)
				fprintf(out, "%s @count=0x0\n", g->name);
			else
				fprintf(out, "%s @count=%lld @min=%lld @max=%lld @sum=%lld @avg=%lld\n", g->name,
					(long long)st->count, (long long)st->min, (long long)st->max, (long long)st->sum,
					(long long)(st->sum / st->count));
		} else if (g->ty == TY_STR) {
			print_escaped(&b, g->strbuf);
			fprintf(out, "%s=\"%s\"\n", g->name, b.p ? b.p : "");
		} else {
			/* stap's %#x: "0x0" for zero, unlike C's */
			print_number(&b, (uint64_t)g->cell->n, 16, -1, -1, PRINT_ALT);
			fprintf(out, "%s=%s\n", g->name, b.p);
		}
		free(b.p);
		return;
	}
	uint32_t count, *idx = snapshot(g->map, 0, -1, A_COUNT, &count);
	for (uint32_t k = 0; k < count; k++) {
		struct map_ent *e = &g->map->ent[idx[k]];
		b.len = 0;
		sb_put(&b, g->name, strlen(g->name));
		sb_putc(&b, '[');
		for (int i = 0; i < g->nkeys; i++) {
			if (i)
				sb_putc(&b, ',');
			if (g->kty[i] == TY_STR) {
				sb_putc(&b, '"');
				print_escaped(&b, e->key[i].s);
				sb_putc(&b, '"');
			} else {
				print_number(&b, (uint64_t)e->key[i].n, 10, -1, -1, PRINT_SIGN);
			}
		}
		sb_putc(&b, ']');
		if (g->ty == TY_STAT) {
			char tmp[200];
			struct script_stat *st = e->st;
			snprintf(tmp, sizeof(tmp), " @count=%lld @min=%lld @max=%lld @sum=%lld @avg=%lld",
				 (long long)st->count, (long long)st->min, (long long)st->max, (long long)st->sum,
				 (long long)(st->count ? st->sum / st->count : 0));
			sb_put(&b, tmp, strlen(tmp));
		} else if (g->ty == TY_STR) {
			sb_put(&b, "=\"", 2);
			print_escaped(&b, e->val.s);
			sb_putc(&b, '"');
		} else {
			sb_putc(&b, '=');
			print_number(&b, (uint64_t)e->val.n, 16, -1, -1, PRINT_ALT);
		}
		sb_putc(&b, '\n');
		fwrite(b.p, 1, b.len, out);
	}
	free(idx);
	free(b.p);
}

static void display_unread(struct run *r)
{
	for (struct sym *g = r->sc->globals; g; g = g->next) {
		if (!g->written || g->read)
			continue;
		display_global(r, g);
	}
}

static void dispatch(struct run *r, const struct djp_ev *ev)
{
	uint32_t id = ev->desc->id;
	struct binding **v;
	int n;

	if (id >= r->sc->nby || r->sc->nby_desc[id] < 0)
		bind_late(r->sc, ev->desc);
	v = r->sc->by_desc[id];
	n = r->sc->nby_desc[id];
	for (int i = 0; i < n && !r->exiting; i++)
		if ((!v[i]->pid || v[i]->pid == ev->pid) && !v[i]->probe->agg) /* agg: run in the target */
			run_probe(r, v[i]->probe, v[i], ev, v[i]->pp, false);
}

static const char *point_text(struct probe *p, int kind)
{
	for (struct probe_point *pp = p->points; pp; pp = pp->next)
		if (pp->kind == kind)
			return pp->text;
	return p->points->text;
}

/* The arguments a probe reads with user_string() (check.c), for its glob:
 * $argN is argument N - 1 of any marker; a named field, its index in the
 * markers the probe is bound to now. */
static void probe_strings(const struct probe *p, struct djp_arm_glob *g)
{
	for (int k = 0; k < p->nrefs; k++) {
		const char *ref = p->refs[k];
		char *end;
		if (!p->ref_strbound[k])
			continue;
		if (p->ref_strbound[k] > g->str_bound)
			g->str_bound = p->ref_strbound[k];
		if (!strncmp(ref, "arg", 3)) {
			long a = strtol(ref + 3, &end, 10);
			if (!*end && a >= 1 && a <= 32) {
				g->str_args |= 1u << (a - 1);
				continue;
			}
		}
		for (int b = 0; b < p->nbinds; b++)
			if (p->binds[b]->field[k] >= 0 && p->binds[b]->field[k] < 32)
				g->str_args |= 1u << p->binds[b]->field[k];
	}
}

/* The time to a timer's next firing: its period, give or take up to its
 * .randomize(M), uniformly. */
static uint64_t timer_period(const struct timer *t)
{
	int64_t p = t->period_ns;
	if (t->random_ns)
		p += (int64_t)(random() % (2 * t->random_ns + 1)) - t->random_ns;
	return (uint64_t)p;
}

struct src_names {
	char **v;
	unsigned n, cap;
	bool ret;
};

static int add_src_name(void *ctx, const struct djp_func *f, const struct djp_func_source *fs,
			struct djp_params_file *pf)
{
	struct src_names *sn = ctx;
	size_t len = strlen(f->name) + 8;
	if (sn->n + 1 >= sn->cap && !(sn->v = realloc(sn->v, sizeof(*sn->v) * (sn->cap = sn->cap * 2 + 8))))
		abort();
	if (!(sn->v[sn->n] = malloc(len)))
		abort();
	snprintf(sn->v[sn->n++], len, "%s%s", f->name, sn->ret ? "%return" : "");
	sn->v[sn->n] = NULL;
	return 0;
}

/* A function point with a source qualifier, function("GLOB@FILE:LINE"):
 * the names of the functions it resolves to in its object's file
 * (func_points.c), by which its events are bound.  Non-zero after an
 * error line. */
static int resolve_src_funcs(struct probe_point *pp, struct djp_source *src)
{
	struct src_names sn = { .ret = pp->ret };
	char spec[600], err[512], *path;
	int n;

	if (!(path = func_point_object(pp, src->target_pid))) {
		fprintf(stderr, "ERROR: probe point %s: %s: %s\n", pp->text, pp->path ? pp->path : "the target",
			strerror(errno));
		return 1;
	}
	func_point_spec(pp, spec, sizeof(spec));
	n = func_points_each(path, spec, add_src_name, &sn, err, sizeof(err));
	free(path);
	if (n < 0 || (!sn.n && !pp->optional)) {
		fprintf(stderr, "ERROR: probe point %s: %s\n", pp->text, n < 0 ? err : "no function matches");
		return 1;
	}
	pp->names = sn.v ? sn.v : calloc(1, sizeof(*pp->names));
	pp->nnames = sn.n;
	return pp->names ? 0 : (abort(), 1);
}

/* Statement points: their lines as the names of their sites (the source
 * reads the target's line tables), before anything is armed; function
 * points with a source qualifier, their functions.  Non-zero after an
 * error line. */
static int resolve_lines(struct script *sc, struct djp_source *src)
{
	char *names[64], err[512];
	for (struct probe *p = sc->probes; p; p = p->next)
		for (struct probe_point *pp = p->points; pp; pp = pp->next) {
			int n;
			if (pp->kind == PP_MARK && pp->point && !pp->names && !strncmp(pp->glob, "func:", 5) &&
			    strchr(pp->glob, '@')) {
				if (resolve_src_funcs(pp, src))
					return 1;
				continue;
			}
			if (pp->kind != PP_MARK || !pp->point || strncmp(pp->glob, "line:", 5) || pp->names)
				continue;
			if (!src->ops->resolve_line) {
				pp->names = calloc(1, sizeof(*pp->names)); /* matches nothing */
				continue;
			}
			n = src->ops->resolve_line(src, pp->path, pp->glob + 5, names, 64, err, sizeof(err));
			if (n < 0 && !(pp->optional && n == -ENOENT)) {
				fprintf(stderr, "ERROR: probe point %s: %s\n", pp->text, err);
				return 1;
			}
			if (!(pp->names = calloc((size_t)(n > 0 ? n : 0) + 1, sizeof(*pp->names))))
				abort();
			for (int i = 0; i < n; i++)
				pp->names[i] = names[i];
			pp->nnames = (unsigned)(n > 0 ? n : 0);
		}
	return 0;
}

/* One arm glob per site of a statement point: "func:NAME+0xOFF", with the
 * object when the point names one. */
static void add_line_globs(struct djp_arm_glob **globs, unsigned *nglobs, const struct probe_point *pp,
			   struct probe *p)
{
	const char *at = pp->connect ? strrchr(pp->connect, '@') : NULL;
	for (unsigned i = 0; i < pp->nnames; i++) {
		size_t n = strlen(pp->names[i]) + (at ? strlen(at) : 0) + 8;
		char *g = malloc(n);
		if (!g || !(*globs = realloc(*globs, sizeof(**globs) * (*nglobs + 1))))
			abort();
		snprintf(g, n, "func:%s%s", pp->names[i], at ? at : "");
		(*globs)[(*nglobs)++] = (struct djp_arm_glob){ g, 0, 0, !pp->optional, p->uses_ustack, 0 };
		probe_strings(p, &(*globs)[*nglobs - 1]);
	}
}

int run_script(struct script *sc, struct djp_source *src, const struct run_opts *opts, uint64_t *nevents)
{
	struct run *r = calloc(1, sizeof(*r));
	uint64_t events = 0;
	int errors;

	if (!r)
		abort();
	r->sc = sc;
	r->src = src;
	r->out = opts->out;
	init_globals(sc);

	/* step 1: arm the markers some probe is bound to */
	if (src && src->ops->arm) {
		uint32_t *ids = malloc(sizeof(*ids) * (src->ndescs + 1));
		unsigned n = 0;
		if (!ids)
			abort();
		struct djp_arm_glob *globs = NULL;
		unsigned nglobs = 0;
		for (unsigned i = 0; i < src->ndescs; i++)
			if (sc->nby_desc[i])
				ids[n++] = i;
		if (resolve_lines(sc, src)) {
			free(ids);
			r->errors++;
			goto out;
		}
		agg_prepare(sc, src);
		for (struct probe *p = sc->probes; p; p = p->next)
			for (struct probe_point *pp = p->points; pp; pp = pp->next) {
				unsigned k = 0;
				const char *g = pp->connect ? pp->connect : pp->glob;
				if (pp->kind != PP_MARK)
					continue;
				if (pp->names && !strncmp(pp->glob, "line:", 5)) { /* a statement point: its sites by name */
					add_line_globs(&globs, &nglobs, pp, p);
					continue;
				}
				/* a probe the target runs has globs of its own */
				while (k < nglobs && (strcmp(globs[k].glob, g) || globs[k].plan1 != (unsigned)p->agg))
					k++;
				if (k == nglobs) {
					if (!(globs = realloc(globs, sizeof(*globs) * (nglobs + 1))))
						abort();
					globs[nglobs++] = (struct djp_arm_glob){ g, 0, 0, false, false, (unsigned)p->agg };
				}
				globs[k].now |= pp->point && !pp->optional;
				globs[k].ustack |= p->uses_ustack;
				probe_strings(p, &globs[k]);
			}
		int rc;
		src->want_cpu = sc->uses_cpu;
		rc = src->ops->arm(src, ids, n, globs, nglobs);
		free(globs);
		free(ids);
		if (rc < 0) {
			fprintf(stderr, "ERROR: cannot arm the probes: %s\n", strerror(-rc));
			r->errors++;
			goto out;
		}
	}
	/* step 2: begin probes, then let the target run */
	for (int i = 0; i < sc->nbegins && !r->exiting; i++) {
		run_probe(r, sc->begins[i], NULL, NULL, point_text(sc->begins[i], PP_BEGIN), true);
		for (struct probe_point *pp = sc->begins[i]->points; pp; pp = pp->next)
			if (pp->oneshot)
				r->exiting = true; /* oneshot: once, then the end */
	}
	if (src && src->ops->start && !r->exiting) {
		int rc = src->ops->start(src);
		if (rc < 0) {
			fprintf(stderr, "ERROR: cannot start the target: %s\n", strerror(-rc));
			r->errors++;
			r->exiting = true;
		}
	}
	/* step 3: events and timers until exit(), an error or the end */
	if (src) {
		uint64_t t0 = src->ops->now_ns(src), flush_at = UINT64_MAX;
		struct djp_ev ev;
		bool stopping = false;
		for (int i = 0; i < sc->ntimers; i++)
			sc->timers[i].due = t0 + timer_period(&sc->timers[i]);
		while (!r->exiting) {
			uint64_t deadline = flush_at;
			int rc;
			/* ^C: the events recorded before it, then the end
			 * probes, and no timer meanwhile */
			if (run_interrupted && !stopping) {
				stopping = true;
				if (!src->ops->stop || src->ops->stop(src) < 0)
					break;
			}
			for (int i = 0; i < sc->ntimers && !stopping; i++)
				if (sc->timers[i].due < deadline)
					deadline = sc->timers[i].due;
			rc = src->ops->next(src, &ev, deadline);
			if (rc == DJP_SRC_EVENT) {
				events++;
				dispatch(r, &ev);
				if (r->dirty && flush_at == UINT64_MAX && !opts->bench)
					flush_at = ev.ts_ns + 100000000ull;
				continue;
			}
			if (rc == DJP_SRC_END)
				break;
			if (rc < DJP_SRC_END) {
				fprintf(stderr, "ERROR: event source: %s\n", strerror(-rc));
				r->errors++;
				break;
			}
			uint64_t now = src->ops->now_ns(src);
			for (int i = 0; i < sc->ntimers && !r->exiting && !stopping; i++) {
				struct timer *t = &sc->timers[i];
				if (t->due > now)
					continue;
				run_probe(r, t->probe, NULL, NULL, point_text(t->probe, PP_TIMER), false);
				t->due += timer_period(t);
				if (t->due <= now)
					t->due = now + timer_period(t);
			}
			if (now >= flush_at || r->dirty) {
				line_out_flush(r->out);
				r->dirty = false;
				flush_at = UINT64_MAX;
			}
		}
	}
	/* step 4: the probes stop, the target's aggregates are merged for
	 * good and the losses said, before the end probes' output; then end
	 * probes, then unread globals; after more errors than MAXERRORS, the
	 * error probes instead (stap); after abort(), none */
	if (src) {
		if (src->ops->finish)
			src->ops->finish(src);
		line_out_flush(r->out);
		agg_sync(r, sc, src);
		agg_report_lost(sc, src);
	}
	if (r->aborting)
		goto out;
	r->exiting = false;
	if (r->failed) {
		for (int i = 0; i < sc->nerrs && !r->exiting; i++)
			run_probe(r, sc->errs[i], NULL, NULL, point_text(sc->errs[i], PP_ERROR), true);
		goto out;
	}
	for (int i = 0; i < sc->nends && !r->exiting; i++)
		run_probe(r, sc->ends[i], NULL, NULL, point_text(sc->ends[i], PP_END), true);
	display_unread(r);
out:
	line_out_flush(r->out);
	if (r->errors && !script_no_warnings)
		fprintf(stderr, "WARNING: Number of errors: %d, skipped probes: 0\n", r->errors);
	errors = r->errors;
	agg_free(sc);
	free_globals(sc);
	arena_reset(r);
	free(r->arena);
	free(r->pb.p);
	free(r->ub.p);
	free(r->commands);
	tapset_named_free(r->named);
	free(r);
	if (nevents)
		*nevents = events;
	return errors;
}
