/*
 * Aggregation in the target: the probes of a script that only count, sum
 * or feed statistics are run where they fire, and the tool merges what
 * they gathered (kernel/agent/agg.c is the target's half).
 *
 * Which probes.  A probe on markers, function, return and statement
 * points (not kernel ones, nor process(PID) ones) whose body is nothing
 * but statements
 *
 *     G++   G--   G += V   G -= V   S <<< V
 *     G[K, ...]++   G[K, ...] += V   S[K, ...] <<< V   (and the like)
 *
 * on global numbers G and statistics S, where every index K is made of
 * what the hit itself says (numeric context variables, tid(), pid(),
 * execname(), pp(), pn(), ppfunc(), probefunc(), uaddr(), cpu(), $$name,
 * constants, one string argument, user_string($argN) or a %s field, and
 * pure functions of those: usymname(), usymdata(), umodname(),
 * arithmetic, concatenation), and every value V is a constant or a
 * numeric context variable, or an expression of those (+ - * & | ^ << >>,
 * comparisons, && || ! ~ and unary -: at most one such value a probe).
 * The whole body may be `if (COND) { ... }`, COND such an expression: the
 * target counts the hits where it holds.  No other statement.  Other code
 * may write those globals too (the merge adds to what they hold: see
 * walk()), except delete a statistic whose @min or @max is read.
 *
 * The plan.  The target cannot run usymname(), but it need not: what an
 * index depends on is a few words of the hit, the marker, its thread, and
 * some arguments.  Those words are the key of the target's table (struct
 * djp_agg_plan: key_args, DJP_AGG_TID; a string argument is copied at
 * the hit and keyed on its text, kept with the entry), the value's count,
 * sum, min, max, sum of squares and histogram buckets (the one histogram
 * layout its statistics print) its entry.  Merging, the tool rebuilds the hit from an
 * entry (marker, pid, tid, arguments) and evaluates the probe's indexes on
 * it with the interpreter (run_agg_target), so usymname($arg1) of two
 * addresses in one function adds up into one element, as it would have
 * event by event; then adds the entry's gains: its count for ++, its sum
 * (or the constant times its count) for +=, the whole statistic for <<<.
 * Counts, sums, min, max and buckets merge exactly.
 *
 * Values and conditions that are expressions are compiled into small
 * stack programs (lib/agg.h) that the target runs on the hit's
 * arguments; no division, whose 0 would be a run-time error.
 *
 * Named plans.  A marker's variable is the same argument in every
 * marker a probe is bound to at the start, and the plan says which.  A
 * function or statement point binds nothing before its sites are made,
 * when it is connected, and `$fd` or `$return` may be a different
 * argument of each function: its plan names the variables instead (the
 * probe's context references, DJP_AGG_NAMED), and the target finds each
 * name at each site (kernel/agent/agg.c).  Merging, the name's plan
 * argument goes back to where the entry's binding has that variable.  A
 * probe that reads no variable has a plain plan wherever it is.
 *
 * When.  The tool reads the tables' gains (tools/djp/session/agg_tables.c) before
 * a timer, end or error probe runs, before an event probe that reads an
 * aggregated global (so that it sees every hit its thread made before
 * its own: the table's count was stored, with release, before the
 * event's), and last after the probes are disconnected at the end,
 * which makes the totals exact.
 *
 * Losses are never silent: a hit a thread's full table had no room for is
 * counted and reported with its probe, as events the rings dropped are
 * reported per probe (agg_report_lost).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "agg.h"
#include "lib/ring.h"
#include "tools/djp/session/agg_tables.h"

/* Entries of a thread's table: an array holds at most MAXMAPENTRIES
 * elements, and its raw keys (addresses whose usymname() is one name) may
 * be more. */
#define AGG_CAPACITY_MIN 4096u
#define AGG_HIST_CAPACITY 1024u

enum { ST_INC, ST_ADD, ST_STAT };

struct agg_stmt {
	int kind;
	struct node *lv;  /* N_VAR or N_INDEX */
	struct node *val; /* ST_ADD, ST_STAT: the value */
	int sign;	  /* ST_INC, ST_ADD: +1 or -1 */
	/* indexes the target computes: bit i, index i is key program kc[i] */
	uint32_t given;
	uint8_t kc[MAXKEYS];
};

struct agg_probe {
	struct probe *p;
	struct agg_stmt st[32];
	int nst;
	struct node *value; /* the one value that is not a constant, or NULL */
	struct node *cond;  /* the body's `if`, whose then-block is the rest */
	uint32_t code_slots; /* context references the target's programs read */
	bool cpu;	     /* cpu() is an index: part of the key */
	/* indexes computed in the target, each a key word (lib/agg.h) */
	struct node *keyexpr[DJP_AGG_MAX_KEY_ARGS];
	unsigned nkeyexpr;
	uint32_t key_slots; /* context references the indexes read */
	int str_slot;	    /* the one reference read as a string, or -1 */
	unsigned str_bound; /* its copy's bytes, NUL included */
	const struct hist_cfg *hist; /* the histogram of the statistic it feeds, or NULL */
	/* a named plan (the essay): plan argument i is context reference
	 * slot_of[i] */
	bool named;
	int8_t slot_of[DJP_AGG_MAX_NAMES];
	unsigned nnamed;
};

struct script_agg {
	struct agg_probe v[DJP_AGG_MAX_PLANS];
	struct djp_agg_plan plans[DJP_AGG_MAX_PLANS];
	unsigned n;
	uint64_t unbound; /* merged hits of markers no probe could take */
};

/* ---- which probes ----------------------------------------------------------- */

static bool is_global_lv(const struct node *n, uint8_t ty)
{
	return (n->kind == N_VAR || n->kind == N_INDEX) && n->sym && n->sym->global && n->sym->ty == ty &&
	       (n->kind == N_INDEX) == (n->sym->nkeys > 0);
}

/* A named plan's argument for context reference slot: the one it has, or
 * a new one; -1 when all are taken. */
static int named_arg(struct agg_probe *ap, int slot)
{
	for (unsigned i = 0; i < ap->nnamed; i++)
		if (ap->slot_of[i] == slot)
			return (int)i;
	if (ap->nnamed == DJP_AGG_MAX_NAMES || strlen(ap->p->refs[slot]) >= DJP_AGG_NAME_MAX)
		return -1;
	ap->slot_of[ap->nnamed] = (int8_t)slot;
	return (int)ap->nnamed++;
}

/* Context reference slot of probe p, numeric, that every binding reads
 * from an argument: its argument index in each, through *mask (a named
 * plan's argument). */
static bool ctx_ok(struct agg_probe *ap, const struct node *n, uint32_t *mask)
{
	const struct probe *p = ap->p;
	if (n->ty != TY_LONG || n->slot < 0 || n->slot >= 32 || p->ref_strbound[n->slot])
		return false;
	if (ap->named) {
		int i = named_arg(ap, n->slot);
		*mask |= i >= 0 ? 1u << i : 0;
		return i >= 0;
	}
	for (int b = 0; b < p->nbinds; b++) {
		int f = p->binds[b]->field[n->slot];
		if (f < 0 || f >= 16)
			return false;
		*mask |= 1u << f;
	}
	return true;
}

/* A context reference read as a string: the target copies it and keys
 * on its text (one such reference a probe, at one argument in every
 * marker). */
static bool str_ok(struct agg_probe *ap, const struct node *n, unsigned bound, uint32_t *mask)
{
	const struct probe *p = ap->p;
	int f = -1;

	if (n->slot < 0 || n->slot >= 32 || !bound || (ap->str_slot >= 0 && ap->str_slot != n->slot))
		return false;
	if (ap->named)
		f = named_arg(ap, n->slot);
	for (int b = 0; !ap->named && b < p->nbinds; b++) {
		int bf = p->binds[b]->field[n->slot];
		if (bf < 0 || bf >= 16 || (f >= 0 && bf != f))
			return false;
		f = bf;
	}
	bound = (bound + 7) & ~7u;
	if (f < 0 || bound > DJP_AGG_MAX_STR)
		return false;
	if (bound > ap->str_bound)
		ap->str_bound = bound;
	ap->str_slot = n->slot;
	*mask |= 1u << f;
	return true;
}

/* An index made of what the hit says (see the essay). */
static bool key_ok(struct agg_probe *ap, const struct node *n, uint32_t *mask, bool *tid)
{
	const struct probe *p = ap->p;

	switch (n->kind) {
	case N_NUM:
	case N_STR:
	case N_CTXNAME:
		return true;
	case N_CTX:
		if (n->ty == TY_STR) /* a %s field: copied as the recorder does */
			return str_ok(ap, n, DJP_RING_STR_BOUND, mask);
		ap->key_slots |= 1u << (n->slot & 31);
		return ctx_ok(ap, n, mask);
	case N_NEG:
	case N_BITNOT:
	case N_NOT:
		return key_ok(ap, n->a, mask, tid);
	case N_CONCAT:
		return key_ok(ap, n->a, mask, tid) && key_ok(ap, n->b, mask, tid);
	case N_BINOP:
		return n->op > 0 && n->op < 128 && strchr("+-*&|^", n->op) && key_ok(ap, n->a, mask, tid) &&
		       key_ok(ap, n->b, mask, tid);
	case N_BUILTIN:
		switch (n->op) {
		case B_TID:
			*tid = true;
			return true;
		case B_CPU: /* the hit's, a word of the key after the arguments */
			ap->cpu = true;
			return true;
		case B_USTR: /* user_string($argN), user_string($argN, "error") */
			if (n->args[0]->kind != N_CTX || n->args[0]->ty != TY_LONG || (n->nargs == 2 && n->args[1]->kind != N_STR))
				return false;
			return str_ok(ap, n->args[0], p->ref_strbound[n->args[0]->slot & 31], mask);
		case B_PID:
		case B_EXECNAME:
		case B_PP:
		case B_PN:
		case B_PROBEFUNC:
		case B_UADDR:
		case B_TARGET:
		case B_USYMNAME:
		case B_USYMDATA:
		case B_UMODNAME:
		case B_STRLEN:
		case B_NTOHL:
		case B_NTOHS:
		case B_HTONL:
		case B_HTONS:
			for (int i = 0; i < n->nargs; i++)
				if (!key_ok(ap, n->args[i], mask, tid))
					return false;
			return true;
		default:
			return false;
		}
	default:
		return false;
	}
}

/* ---- values and conditions the target computes (lib/agg.h's programs) ---- */

struct emit {
	struct djp_agg_code *c;
	unsigned pc, nimm, sp;
	uint32_t *args; /* the plan arguments read */
};

static bool emit_op(struct emit *e, unsigned op)
{
	if (e->pc + 1 >= DJP_AGG_MAX_CODE) /* and the END after it */
		return false;
	e->c->op[e->pc++] = (uint8_t)op;
	return true;
}

static bool emit_push(struct emit *e, unsigned op, unsigned i)
{
	if (++e->sp > DJP_AGG_MAX_STACK || !emit_op(e, op))
		return false;
	return emit_op(e, i);
}

/* The program's op for a binary node, 0 for none. */
static unsigned binop_code(const struct node *n)
{
	static const struct {
		int op;
		uint8_t code;
	} arith[] = { { '+', DJP_AGG_OP_ADD },	{ '-', DJP_AGG_OP_SUB },	   { '*', DJP_AGG_OP_MUL },
		      { '&', DJP_AGG_OP_AND },	{ '|', DJP_AGG_OP_OR },		   { '^', DJP_AGG_OP_XOR },
		      { '<' | '<' << 8, DJP_AGG_OP_SHL }, { '>' | '>' << 8, DJP_AGG_OP_SHR } },
	  cmp[] = { { '<', DJP_AGG_OP_LT },	    { '>', DJP_AGG_OP_GT },	       { '<' | '=' << 8, DJP_AGG_OP_LE },
		    { '>' | '=' << 8, DJP_AGG_OP_GE }, { '=' | '=' << 8, DJP_AGG_OP_EQ }, { '!' | '=' << 8, DJP_AGG_OP_NE } };

	if (n->kind == N_LOGAND || n->kind == N_LOGOR)
		return n->kind == N_LOGAND ? DJP_AGG_OP_LAND : DJP_AGG_OP_LOR;
	for (size_t i = 0; n->kind == N_BINOP && i < sizeof(arith) / sizeof(arith[0]); i++)
		if (arith[i].op == n->op)
			return arith[i].code;
	/* numbers only: a string comparison or a regex runs in the tool */
	for (size_t i = 0; n->kind == N_CMP && !n->re && n->a->ty == TY_LONG && i < sizeof(cmp) / sizeof(cmp[0]); i++)
		if (cmp[i].op == n->op)
			return cmp[i].code;
	return 0;
}

/* Emit n: an expression of numeric context variables and constants the
 * target can compute (no division, whose 0 is a run-time error). */
static bool emit(struct agg_probe *ap, struct emit *e, const struct node *n, int depth)
{
	uint32_t mask = 0;
	unsigned code;

	if (depth > 32)
		return false;
	switch (n->kind) {
	case N_NUM: {
		unsigned i = 0;
		while (i < e->nimm && e->c->imm[i] != n->num)
			i++;
		if (i == DJP_AGG_MAX_IMM)
			return false;
		if (i == e->nimm)
			e->c->imm[e->nimm++] = n->num;
		return emit_push(e, DJP_AGG_OP_IMM, i);
	}
	case N_CTX:
		/* one argument: a named plan's, or where every binding has it */
		if (!ctx_ok(ap, n, &mask) || __builtin_popcount(mask) != 1)
			return false;
		ap->code_slots |= 1u << n->slot;
		*e->args |= mask;
		return emit_push(e, DJP_AGG_OP_ARG, (unsigned)__builtin_ctz(mask));
	case N_NEG:
	case N_BITNOT:
	case N_NOT:
		code = n->kind == N_NEG ? DJP_AGG_OP_NEG : n->kind == N_BITNOT ? DJP_AGG_OP_BITNOT : DJP_AGG_OP_NOT;
		return emit(ap, e, n->a, depth + 1) && emit_op(e, code);
	default:
		if (!(code = binop_code(n)) || !emit(ap, e, n->a, depth + 1) || !emit(ap, e, n->b, depth + 1))
			return false;
		e->sp--;
		return emit_op(e, code);
	}
}

/* The program of n into c (zeroed here), the arguments it reads added to
 * *args; false when the target cannot compute n. */
static bool compile(struct agg_probe *ap, struct djp_agg_code *c, const struct node *n, uint32_t *args)
{
	struct emit e = { c, 0, 0, 0, args };
	memset(c, 0, sizeof(*c));
	return emit(ap, &e, n, 0); /* c->op[e.pc] is the END */
}

static bool same_expr(const struct node *a, const struct node *b)
{
	if (a->kind != b->kind || a->op != b->op)
		return false;
	switch (a->kind) {
	case N_NUM: return a->num == b->num;
	case N_CTX: return a->slot == b->slot;
	case N_NEG:
	case N_BITNOT:
	case N_NOT: return same_expr(a->a, b->a);
	case N_BINOP:
	case N_CMP:
	case N_LOGAND:
	case N_LOGOR: return !a->re && !b->re && same_expr(a->a, b->a) && same_expr(a->b, b->b);
	default: return false;
	}
}

/* An index the target computes (an expression of the hit's variables,
 * not one alone): its key program, an existing one for the same
 * expression; -1 when the index is keyed on what it reads instead. */
static int key_code_of(struct agg_probe *ap, struct node *n)
{
	struct djp_agg_code scratch;
	uint32_t args = 0;

	if (n->ty != TY_LONG || n->kind == N_CTX || n->kind == N_NUM || !compile(ap, &scratch, n, &args) || !args)
		return -1;
	for (unsigned j = 0; j < ap->nkeyexpr; j++)
		if (same_expr(ap->keyexpr[j], n))
			return (int)j;
	if (ap->nkeyexpr == DJP_AGG_MAX_KEY_ARGS)
		return -1;
	ap->keyexpr[ap->nkeyexpr] = n;
	return (int)ap->nkeyexpr++;
}

/* A value the target computes: a constant, or one numeric context
 * variable at the same argument in every marker of the probe, or one
 * expression of those (the same throughout the probe). */
static bool value_ok(struct agg_probe *ap, struct node *n)
{
	struct djp_agg_code scratch;
	uint32_t mask = 0;

	if (n->kind == N_NUM)
		return true;
	if (ap->value)
		return same_expr(ap->value, n);
	if (n->kind == N_CTX ? !ctx_ok(ap, n, &mask) || __builtin_popcount(mask) > 1 : !compile(ap, &scratch, n, &mask))
		return false;
	ap->value = n;
	return true;
}

static bool stmt_ok(struct agg_probe *ap, struct node *s, uint32_t *mask, bool *tid)
{
	struct node *e = s->a, *lv;
	struct agg_stmt st = { 0 };

	if (s->kind == S_NOP)
		return true;
	if (s->kind == S_BLOCK) {
		for (int i = 0; i < s->nargs; i++)
			if (!stmt_ok(ap, s->args[i], mask, tid))
				return false;
		return true;
	}
	if (s->kind != S_EXPR || ap->nst == (int)(sizeof(ap->st) / sizeof(ap->st[0])))
		return false;
	if (e->kind == N_INCDEC && is_global_lv(e->a, TY_LONG)) {
		st = (struct agg_stmt){ .kind = ST_INC, .lv = e->a, .sign = e->op == '+' ? 1 : -1 };
	} else if (e->kind == N_ASSIGN && (e->op == '+' || e->op == '-') && is_global_lv(e->a, TY_LONG) &&
		   value_ok(ap, e->b)) {
		st = (struct agg_stmt){ .kind = ST_ADD, .lv = e->a, .val = e->b, .sign = e->op == '+' ? 1 : -1 };
	} else if (e->kind == N_STATADD && is_global_lv(e->a, TY_STAT) && value_ok(ap, e->b)) {
		st = (struct agg_stmt){ .kind = ST_STAT, .lv = e->a, .val = e->b, .sign = 1 };
		/* the target keeps one histogram: of the value it tracks */
		if (e->a->sym->hist.kind && e->b->kind != N_NUM) {
			if (ap->hist && memcmp(ap->hist, &e->a->sym->hist, sizeof(*ap->hist)))
				return false;
			ap->hist = &e->a->sym->hist;
		}
	} else {
		return false;
	}
	lv = st.lv;
	for (int i = 0; lv->kind == N_INDEX && i < lv->nargs && i < MAXKEYS; i++) {
		int j = key_code_of(ap, lv->args[i]);
		if (j >= 0) { /* c[$fd & 7]: one entry per index, not per $fd */
			st.given |= 1u << i;
			st.kc[i] = (uint8_t)j;
		} else if (!key_ok(ap, lv->args[i], mask, tid)) {
			return false;
		}
	}
	ap->st[ap->nst++] = st;
	return true;
}

/* The merge adds what the tables gained to whatever the global holds, so
 * other code may write it as it likes (a timer's n = 0, delete c): the
 * hits after that add up from there.  Not so a statistic's minimum and
 * maximum, which a table keeps over every hit: one the script deletes
 * and reads the @min or @max of (or leaves unread, which prints them) is
 * fed event by event.  walk() marks the statistics deleted (agg_other)
 * and those whose extremes are read (agg_minmax). */
static void walk(struct node *n, int depth)
{
	if (!n || depth > 200)
		return;
	if (n->kind == S_DELETE && n->a && n->a->sym && n->a->sym->global)
		n->a->sym->agg_other = true;
	if (n->kind == N_AGG && (n->op == A_MIN || n->op == A_MAX) && n->a && n->a->sym)
		n->a->sym->agg_minmax = true;
	if (n->kind == S_FOREACH && n->sym && (n->fe_sort_agg == A_MIN || n->fe_sort_agg == A_MAX))
		n->sym->agg_minmax = true;
	walk(n->a, depth + 1);
	walk(n->b, depth + 1);
	walk(n->c, depth + 1);
	walk(n->d, depth + 1);
	walk(n->fe_limit, depth + 1);
	for (int i = 0; i < n->nargs; i++)
		walk(n->args[i], depth + 1);
}

/* Does n (or a function it calls) read an aggregated global? */
static bool reads_agg(struct node *n, int depth)
{
	if (!n || depth > 200)
		return false;
	if (n->sym && n->sym->global && n->sym->agg)
		return true;
	if (n->kind == N_CALL && n->fn && !n->fn->checking) {
		bool r;
		n->fn->checking = true; /* no loop through recursive functions */
		r = reads_agg(n->fn->body, depth + 1);
		n->fn->checking = false;
		if (r)
			return true;
	}
	if (reads_agg(n->a, depth + 1) || reads_agg(n->b, depth + 1) || reads_agg(n->c, depth + 1) ||
	    reads_agg(n->d, depth + 1) || reads_agg(n->fe_limit, depth + 1) || reads_agg(n->fe_slice, depth + 1))
		return true;
	for (int i = 0; i < n->nargs; i++)
		if (reads_agg(n->args[i], depth + 1))
			return true;
	return false;
}

/* A probe the target may run: false when not.  *named: its plan names
 * its variables (the essay). */
static bool candidate(struct probe *p, bool *named)
{
	*named = !p->nbinds; /* its markers come later: a -c wrapper's program */
	if (p->cond || p->has_nonmark || p->uses_ustack)
		return false;
	for (struct probe_point *pp = p->points; pp; pp = pp->next) {
		if (pp->kind != PP_MARK || pp->kernel || pp->pid)
			return false;
		*named |= pp->point;
	}
	return true;
}

/* The plan of a probe the target can run: false when it cannot. */
static bool plan_probe(struct agg_probe *ap, struct djp_agg_plan *pl, bool named)
{
	uint32_t mask = 0, code_args = 0;
	struct node *body = ap->p->body;
	struct djp_agg_code scratch;
	bool tid = false;

	ap->named = named;
	ap->nnamed = 0;
	ap->nst = 0;
	ap->key_slots = 0;
	ap->str_slot = -1;
	ap->str_bound = 0;
	ap->value = NULL;
	ap->cond = NULL;
	ap->code_slots = 0;
	ap->cpu = false;
	ap->nkeyexpr = 0;
	ap->hist = NULL;
	/* `if (COND) { ... }` as the whole body, COND of the hit: the
	 * target counts the hits where it holds */
	if (body->kind == S_BLOCK && body->nargs == 1)
		body = body->args[0];
	if (body->kind == S_IF && !body->c && compile(ap, &scratch, body->a, &code_args)) {
		ap->cond = body->a;
		body = body->b;
	}
	if (!stmt_ok(ap, body, &mask, &tid) || !ap->nst)
		return false;
	if (__builtin_popcount(mask) + (int)ap->nkeyexpr + ap->cpu > (int)DJP_AGG_MAX_KEY_ARGS)
		return false;
	memset(pl, 0, sizeof(*pl));
	pl->key_args = mask;
	pl->flags = (tid ? DJP_AGG_TID : 0) | (ap->cpu ? DJP_AGG_CPU : 0);
	if (ap->nnamed) {
		pl->flags |= DJP_AGG_NAMED;
		for (unsigned i = 0; i < ap->nnamed; i++)
			snprintf(pl->names[i], sizeof(pl->names[i]), "%s", ap->p->refs[ap->slot_of[i]]);
	} else {
		ap->named = false; /* no variable: a plain plan, wherever it is */
	}
	for (unsigned j = 0; j < ap->nkeyexpr; j++)
		compile(ap, &pl->key_code[j], ap->keyexpr[j], &pl->code_args);
	pl->nkeycode = ap->nkeyexpr;
	pl->flags |= ap->nkeyexpr ? DJP_AGG_KEY_CODE : 0;
	if (ap->cond) {
		pl->flags |= DJP_AGG_COND;
		compile(ap, &pl->cond_code, ap->cond, &pl->code_args);
	}
	if (ap->value && ap->value->kind != N_CTX) {
		pl->flags |= DJP_AGG_VALUE_CODE;
		compile(ap, &pl->value_code, ap->value, &pl->code_args);
	} else if (ap->value) {
		pl->flags |= DJP_AGG_VALUE_ARG;
		pl->value_arg = (uint32_t)(ap->named ? named_arg(ap, ap->value->slot)
						     : ap->p->binds[0]->field[ap->value->slot]);
	}
	if (ap->str_slot >= 0) {
		int f = ap->named ? named_arg(ap, ap->str_slot) : ap->p->binds[0]->field[ap->str_slot];
		/* read as a string and as a number: the key holds the text */
		if ((ap->key_slots >> ap->str_slot & 1) || (ap->code_slots >> ap->str_slot & 1) ||
		    (ap->value && ap->value->kind == N_CTX && ap->value->slot == ap->str_slot))
			return false;
		pl->str_arg = (uint32_t)f + 1;
		pl->str_bound = ap->str_bound;
	}
	if (ap->hist) {
		pl->hist_kind = ap->hist->kind == 1 ? DJP_AGG_HIST_LOG : DJP_AGG_HIST_LINEAR;
		pl->nbuckets = (uint32_t)ap->hist->buckets;
		pl->hist_start = ap->hist->start;
		pl->hist_interval = ap->hist->interval;
		if (pl->nbuckets > DJP_AGG_MAX_BUCKETS || (pl->hist_kind == DJP_AGG_HIST_LOG && pl->nbuckets != 128))
			return false;
	}
	return true;
}

void agg_prepare(struct script *sc, struct djp_source *src)
{
	struct script_agg *a;

	if (!src || !src->ops->agg_read || getenv("DJP_NO_AGG"))
		return;
	if (!(a = calloc(1, sizeof(*a))))
		abort();
	for (struct probe *p = sc->probes; p && a->n < DJP_AGG_MAX_PLANS; p = p->next) {
		bool named;
		a->v[a->n].p = p;
		if (candidate(p, &named) && plan_probe(&a->v[a->n], &a->plans[a->n], named))
			a->n++;
	}
	/* a statistic deleted and read for its extremes rules out every
	 * probe that feeds it */
	for (struct probe *p = sc->probes; p; p = p->next) {
		walk(p->cond, 0);
		walk(p->body, 0);
	}
	for (struct func *f = sc->funcs; f; f = f->next)
		walk(f->body, 0);
	for (unsigned i = 0; i < a->n; i++) {
		bool bad = false;
		for (int k = 0; k < a->v[i].nst; k++) {
			struct sym *g = a->v[i].st[k].lv->sym;
			bad |= g->ty == TY_STAT && g->agg_other && (g->agg_minmax || !g->read);
		}
		if (!bad)
			continue;
		memmove(&a->v[i], &a->v[i + 1], (a->n - i - 1) * sizeof(a->v[0]));
		memmove(&a->plans[i], &a->plans[i + 1], (a->n - i - 1) * sizeof(a->plans[0]));
		a->n--;
		i--;
	}
	if (!a->n) {
		free(a);
		return;
	}
	for (unsigned i = 0; i < a->n; i++) {
		a->v[i].p->agg = (int)i + 1;
		for (int k = 0; k < a->v[i].nst; k++)
			a->v[i].st[k].lv->sym->agg = true;
	}
	for (struct probe *p = sc->probes; p; p = p->next)
		p->reads_agg = !p->agg && (reads_agg(p->cond, 0) || reads_agg(p->body, 0));
	sc->agg = a;
	src->agg_plans = a->plans;
	src->nagg_plans = a->n;
	src->agg_capacity = AGG_CAPACITY_MIN;
	while (src->agg_capacity < 2 * MAXMAPENTRIES && src->agg_capacity < DJP_AGG_MAX_CAPACITY)
		src->agg_capacity *= 2;
	for (unsigned i = 0; i < a->n; i++)
		if (a->plans[i].nbuckets) /* a histogram's entry is a kilobyte */
			src->agg_capacity = AGG_HIST_CAPACITY;
}

/* ---- merging ------------------------------------------------------------------ */

struct merge {
	struct run *r;
	struct script *sc;
};

static const struct binding *binding_of(struct script *sc, const struct djp_ev_desc *d, const struct probe *p)
{
	if (d->id >= sc->nby || sc->nby_desc[d->id] < 0)
		bind_late(sc, d);
	for (int i = 0; i < sc->nby_desc[d->id]; i++)
		if (sc->by_desc[d->id][i]->probe == p)
			return sc->by_desc[d->id][i];
	return NULL;
}

static void stat_merge(struct script_stat *st, const struct hist_cfg *h, const struct node *val,
		       const struct djp_agg_delta *dl)
{
	int64_t count = (int64_t)dl->count, sum = dl->sum, min = dl->min, max = dl->max;
	__int128 sumsq = dl->sumsq;

	if (val->kind == N_NUM) { /* a constant: count copies of it */
		int64_t c = val->num;
		sum = (int64_t)((uint64_t)c * (uint64_t)count);
		min = max = c;
		sumsq = (__int128)c * c * count;
		if (h && h->kind) {
			struct script_stat *one = stat_new(h);
			stat_add(one, h, c);
			for (int b = 0; b < h->buckets; b++)
				st->hist[b] += one->hist[b] * count;
			free(one);
		}
	} else if (h && h->kind && dl->hist) {
		for (int b = 0; b < h->buckets && b < (int)dl->nbuckets; b++)
			st->hist[b] += dl->hist[b];
	}
	if (st->count == 0) {
		st->min = min;
		st->max = max;
	} else {
		if (min < st->min)
			st->min = min;
		if (max > st->max)
			st->max = max;
	}
	st->count += count;
	st->sum = (int64_t)((uint64_t)st->sum + (uint64_t)sum);
	st->sumsq += sumsq;
}

/* The plan was made from the markers bound at the start: one loaded
 * later must have the key's and the value's variables where they were. */
static bool fits(const struct agg_probe *ap, const struct djp_agg_plan *pl, const struct binding *b)
{
	/* named: wherever this marker has them (bind_late bound it only if
	 * it has every variable the probe reads) */
	for (unsigned i = 0; ap->named && i < ap->nnamed; i++)
		if (b->field[ap->slot_of[i]] < 0 || b->field[ap->slot_of[i]] >= DJP_EV_MAX_ARGS)
			return false;
	if (ap->named)
		return true;
	for (uint32_t bits = ap->key_slots; bits; bits &= bits - 1) {
		int f = b->field[__builtin_ctz(bits)];
		if (f < 0 || f >= 16 || !(pl->key_args & 1u << f))
			return false;
	}
	if (ap->str_slot >= 0 && (uint32_t)b->field[ap->str_slot] + 1 != pl->str_arg)
		return false;
	/* the programs read each variable where the first marker has it */
	for (uint32_t bits = ap->code_slots; bits; bits &= bits - 1)
		if (b->field[__builtin_ctz(bits)] != ap->p->binds[0]->field[__builtin_ctz(bits)])
			return false;
	return !ap->value || ap->value->kind != N_CTX || (uint32_t)b->field[ap->value->slot] == pl->value_arg;
}

/* Plan argument i as binding b's argument. */
static unsigned arg_of(const struct agg_probe *ap, const struct binding *b, unsigned i)
{
	if (!ap->named)
		return i;
	return i < ap->nnamed ? (unsigned)b->field[ap->slot_of[i]] : ~0u;
}

static void merge_one(void *ctx, const struct djp_ev_desc *d, int32_t pid, const struct djp_agg_delta *dl)
{
	struct merge *m = ctx;
	struct script_agg *a = m->sc->agg;
	struct agg_probe *ap;
	const struct binding *b;
	struct djp_ev ev;
	unsigned k = 0;

	if (dl->plan >= a->n || !d || !(b = binding_of(m->sc, d, (ap = &a->v[dl->plan])->p)) ||
	    !fits(ap, &a->plans[dl->plan], b)) {
		a->unbound += dl->count;
		return;
	}
	memset(&ev, 0, sizeof(ev));
	ev.desc = d;
	ev.pid = pid;
	ev.tid = dl->tid ? (int32_t)dl->tid : pid;
	ev.cpu = ap->cpu && dl->nkey ? (int32_t)dl->key[dl->nkey - 1] : -1;
	ev.nargs = d->nargs < DJP_EV_MAX_ARGS ? d->nargs : DJP_EV_MAX_ARGS;
	for (uint32_t bits = a->plans[dl->plan].key_args; bits && k < dl->nkey; bits &= bits - 1, k++) {
		unsigned i = arg_of(ap, b, (unsigned)__builtin_ctz(bits));
		if (i < DJP_EV_MAX_ARGS)
			ev.args[i] = (int64_t)dl->key[k];
	}
	if (dl->str && arg_of(ap, b, a->plans[dl->plan].str_arg - 1) < DJP_EV_MAX_ARGS) {
		/* as an event carries a copied string: its text, its pointer */
		unsigned i = arg_of(ap, b, a->plans[dl->plan].str_arg - 1);
		ev.strs[i] = dl->str;
		ev.args[i] = (int64_t)dl->str_ptr;
		ev.str_fault[i] = dl->str_bits & DJP_STR_FAULT;
	}
	for (int i = 0; i < ap->nst; i++) {
		const struct agg_stmt *st = &ap->st[i];
		struct sym *g = st->lv->sym;
		struct map_ent *e = NULL;
		int64_t vals[MAXKEYS];
		unsigned nraw = (unsigned)__builtin_popcount(a->plans[dl->plan].key_args);
		for (uint32_t bits = st->given; bits; bits &= bits - 1) {
			unsigned k = (unsigned)__builtin_ctz(bits);
			vals[k] = nraw + st->kc[k] < dl->nkey ? (int64_t)dl->key[nraw + st->kc[k]] : 0;
		}
		if (!run_agg_target(m->r, st->lv, b, &ev, st->given, vals, &e))
			return;
		switch (st->kind) {
		case ST_INC:
		case ST_ADD: {
			int64_t add = st->kind == ST_INC ? (int64_t)dl->count
				      : st->val->kind == N_NUM ? (int64_t)((uint64_t)st->val->num * dl->count)
							       : dl->sum;
			union cell *c = e ? &e->val : g->cell;
			c->n = (int64_t)((uint64_t)c->n + (uint64_t)(st->sign > 0 ? add : -add));
			break;
		}
		case ST_STAT:
			stat_merge(e ? e->st : g->stat, &g->hist, st->val, dl);
			break;
		}
	}
}

void agg_sync(struct run *r, struct script *sc, struct djp_source *src)
{
	struct merge m = { r, sc };

	if (!sc->agg || !src || !src->ops->agg_read)
		return;
	/* every time: a probe that reads a global sees at least the hits
	 * its thread made before its own (an entry that did not change
	 * costs one load) */
	src->ops->agg_read(src, merge_one, &m);
}

/* ---- losses ------------------------------------------------------------------- */

struct lost_ctx {
	struct script *sc;
	uint64_t *by_probe; /* per probe index */
};

static void lost_of_desc(void *ctx, const struct djp_ev_desc *d, uint64_t n)
{
	struct lost_ctx *l = ctx;
	if (d->id >= l->sc->nby || l->sc->nby_desc[d->id] < 0)
		bind_late(l->sc, d);
	for (int i = 0; i < l->sc->nby_desc[d->id]; i++)
		if (!l->sc->by_desc[d->id][i]->probe->agg) /* its hits are not events */
			l->by_probe[l->sc->by_desc[d->id][i]->probe->index] += n;
}

static void probe_line(struct script *sc, struct probe *p, uint64_t n, const char *what)
{
	fprintf(stderr, "djp: WARNING: probe %s (%s:%d:%d): %" PRIu64 " %s\n", p->points->text, sc->file.name, p->line,
		p->col, n, what);
}

void agg_report_lost(struct script *sc, struct djp_source *src)
{
	struct lost_ctx l = { sc, NULL };
	uint64_t total, agg_lost = 0;
	int nprobes = 0;

	if (!src || script_no_warnings)
		return;
	for (struct probe *p = sc->probes; p; p = p->next)
		if (p->index >= nprobes)
			nprobes = p->index + 1;
	if (!(l.by_probe = calloc((size_t)nprobes + 1, sizeof(*l.by_probe))))
		abort();
	total = src->ops->lost ? src->ops->lost(src, lost_of_desc, &l) : 0;
	if (total) {
		/* as stap warns of skipped probes: a count the script printed
		 * is short by these */
		fprintf(stderr,
			"djp: WARNING: %" PRIu64 " events lost (a ring was full: the script fell behind the target, "
			"or no ring slot was free)\n",
			total);
		for (struct probe *p = sc->probes; p; p = p->next)
			if (l.by_probe[p->index])
				probe_line(sc, p, l.by_probe[p->index], "events lost");
	}
	for (unsigned i = 0; sc->agg && src->ops->agg_lost && i < sc->agg->n; i++) {
		uint64_t n = src->ops->agg_lost(src, i);
		if (!n)
			continue;
		if (!agg_lost++)
			fprintf(stderr, "djp: WARNING: hits not counted: a thread's aggregation table was full "
					"(more keys than it holds)\n");
		probe_line(sc, sc->agg->v[i].p, n, "hits not counted");
	}
	if (sc->agg && sc->agg->unbound)
		fprintf(stderr, "djp: WARNING: %" PRIu64 " aggregated hits of markers no probe takes\n", sc->agg->unbound);
	free(l.by_probe);
}

void agg_free(struct script *sc)
{
	free(sc->agg);
	sc->agg = NULL;
}
