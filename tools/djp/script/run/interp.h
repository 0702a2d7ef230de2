/*
 * The interpreter's state and the helpers its files share: interp.c
 * evaluates expressions, exec.c runs statements, run.c runs probes on a
 * source's events, and the builtins/ files are the functions a script
 * calls, which read the hit, the target and the run through these.
 */
#ifndef DJP_SCRIPT_INTERP_H
#define DJP_SCRIPT_INTERP_H

#include <regex.h>
#include <sched.h>
#include <setjmp.h>
#include <stdio.h>

#include "run.h"
#include "builtins/tapset.h"

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

struct run {
	struct script *sc;
	struct djp_source *src;
	/* run_agg_target's indexes the target computed: bit i, key_vals[i] */
	uint32_t key_given;
	const int64_t *key_vals;
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

/* where an lvalue lives */
struct lval {
	union cell *c;	    /* long or local string */
	struct sym *g;	    /* global scalar string: g->strbuf */
	struct map_ent *e;  /* array element */
	uint8_t ty;
};

/* A slice (a[*, k]): its fixed indexes, evaluated once. */
struct slice {
	union cell key[MAXKEYS];
	bool fixed[MAXKEYS];
	int nkeys;
};

/* ---- interp.c ----------------------------------------------------------- */

/* Strings made while a probe runs, freed all at once when it returns. */
char *arena_alloc(struct run *r, size_t n);
void arena_reset(struct run *r);
/* a copy of at most MAXSTRINGLEN - 1 bytes of s */
const char *arena_strn(struct run *r, const char *s, size_t n);

/* A run-time error at node at: printed (or left for the catch of an open
 * try block) and the probe left by longjmp. */
__attribute__((noreturn, format(printf, 3, 4))) void rt_error(struct run *r, const struct node *at, const char *fmt,
							       ...);

/* A run-time warning, "WARNING: ..." on stderr after the output so far,
 * unless -w; the probe goes on. */
__attribute__((format(printf, 2, 3))) void rt_warn(struct run *r, const char *fmt, ...);

int64_t eval_n(struct run *r, struct node *n);
const char *eval_s(struct run *r, struct node *n);
/* either, by n's type */
void eval_any(struct run *r, struct node *n, union cell *c);
/* the element n (N_INDEX) names, made if new when create */
struct map_ent *element(struct run *r, struct node *n, bool create);
void lvalue(struct run *r, struct node *n, struct lval *lv);
void store_s(struct run *r, struct lval *lv, const char *v);

int cmp_cell(uint8_t ty, const union cell *a, const union cell *b);
void slice_eval(struct run *r, struct node *n, const struct map *m, struct slice *sl);
bool slice_has(const struct map *m, const struct slice *sl, const struct map_ent *e);

/* The script's output, written where a probe's printf goes. */
void emitf(struct run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* %m, %M and user_int(): n bytes of the hit's process memory at addr,
 * read now from outside; true when all were */
bool read_target(void *ctx, uint64_t addr, void *buf, size_t n);

/* print_folded(ARRAY): s as folded stacks (folded.c) */
void print_folded(struct run *r, const struct sym *s);

/* ---- exec.c ------------------------------------------------------------- */

/* A statement: X_NORMAL, or the break, continue or return it ends with. */
int exec(struct run *r, struct node *n);
/* The live entries of m in the order col (0 the value, k key k) and dir
 * (+1 up, -1 down, 0 insertion) say; agg: a statistic's value's sort. */
uint32_t *snapshot(struct map *m, int col, int dir, int agg, uint32_t *count);

/* ---- what builtins read of the hit -------------------------------------- */

static inline uint64_t now_ns(struct run *r)
{
	if (r->ev)
		return r->ev->ts_ns;
	return r->src && r->src->ops->now_ns ? r->src->ops->now_ns(r->src) : 0;
}

/* The process the probe speaks of: the event's, or the target's. */
static inline int32_t ctx_pid(struct run *r)
{
	return r->ev ? r->ev->pid : r->src ? r->src->target_pid : 0;
}

/* ... and its thread: the event's, or the target's main thread. */
static inline int32_t ctx_tid(struct run *r)
{
	return r->ev ? r->ev->tid : ctx_pid(r);
}

static inline void emit(struct run *r, const char *s, size_t len)
{
	fwrite(s, 1, len, r->out);
	r->dirty = true;
}

#endif
