/*
 * Statements: blocks, loops, foreach over a snapshot of an array, delete,
 * try/catch; each returns X_NORMAL or the break, continue or return that
 * ends it, which the loops and call_fn (interp.c) consume.
 *
 * foreach walks a snapshot of the array's entry indexes, sorted as asked
 * (stably: ties keep insertion order), while the array counts it as an
 * iteration in progress so that map.c does not compact it: the body may
 * delete or add elements, and a deleted one is skipped when its turn comes.
 */
#include <stdlib.h>
#include <string.h>

#include "interp.h"

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

uint32_t *snapshot(struct map *m, int col, int dir, int agg, uint32_t *count)
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

int exec(struct run *r, struct node *n)
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
