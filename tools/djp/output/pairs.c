/*
 * Slices from pairs of events.
 *
 * Two kinds of pair make a slice.  A function's entry, func:NAME, and its
 * return, func:NAME%return, when a pattern of the trace asks for the
 * return of NAME (an entry whose return nobody traces is an event like
 * any other); and the marker pairs of --slice START,END[:KEY].
 *
 * Without a KEY a slice belongs to its thread: each thread has a stack of
 * the slices it opened, as it has of its calls, and an END (a return)
 * closes the innermost open slice of its pair (of its function).  Slices
 * above that one on the stack, whose ends never came (a longjmp past a
 * return, an END the ring dropped), are closed at the same moment,
 * innermost first, so that what a thread's track shows is always properly
 * nested.  An END with no slice of its pair open on its thread (its START
 * came before the trace, or was dropped) stays an event of its own.
 *
 * With a KEY, a START opens the slice of its process named by the value of
 * its field KEY, and the END of the same pair with the same value there
 * closes it, on whichever thread: requests that overlap, or are handed
 * from thread to thread.  A START whose key is already open closes the
 * older slice first.  An event without the field KEY is no part of a pair.
 *
 * At the end of the trace every slice still open is closed at its last
 * event's time.  Names are copied: a descriptor may go before its slice
 * does (a child of fork released).
 */
#include <fnmatch.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "pairs.h"

#define KEYED_BUCKETS 1024

struct open_slice {
	char *name;
	int pair; /* index in slices, -1: a function */
	uint64_t start_ns;
};

struct thread_stack {
	int32_t pid, tid;
	struct open_slice *v;
	size_t n, cap;
};

struct keyed {
	struct keyed *next;
	int pair;
	int32_t pid, tid;
	uint64_t start_ns;
	char *name, *key;
};

struct djp_pairs {
	const struct djp_output *o;
	const struct djp_pairs_ops *ops;
	void *ctx;
	/* every thread met, by (pid, tid) in a tree (tsearch) and in order */
	void *by_tid;
	struct thread_stack **threads, *last;
	size_t nthreads;
	struct keyed *keyed[KEYED_BUCKETS];
};

struct djp_pairs *djp_pairs_new(const struct djp_output *o, const struct djp_pairs_ops *ops, void *ctx)
{
	struct djp_pairs *p = calloc(1, sizeof(*p));
	if (p)
		*p = (struct djp_pairs){ .o = o, .ops = ops, .ctx = ctx };
	return p;
}

static int tid_cmp(const void *a, const void *b)
{
	const struct thread_stack *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

static struct thread_stack *stack_of(struct djp_pairs *p, int32_t pid, int32_t tid)
{
	struct thread_stack key = { .pid = pid, .tid = tid }, *t, **v;
	void *found;

	if (p->last && p->last->pid == pid && p->last->tid == tid)
		return p->last;
	if ((found = tfind(&key, &p->by_tid, tid_cmp)))
		return p->last = *(struct thread_stack **)found;
	if (!(v = realloc(p->threads, (p->nthreads + 1) * sizeof(*v))))
		return NULL;
	p->threads = v;
	if (!(t = calloc(1, sizeof(*t))))
		return NULL;
	*t = key;
	if (!tsearch(t, &p->by_tid, tid_cmp)) {
		free(t);
		return NULL;
	}
	return p->last = v[p->nthreads++] = t;
}

/* name without a kernel trace's "kernel:" (its patterns do not say it) */
static const char *point_name(const char *name)
{
	return strncmp(name, "kernel:func:", 12) ? name : name + 7;
}

/* Is name (func:NAME) the entry of a function whose return a pattern
 * asks for (func:GLOB%return, func:GLOB%return@OBJECT,
 * func:GLOB@FILE:LINE%return@OBJECT: kernel/point_spec.c)? */
static bool traced_return(const struct djp_output *o, const char *name)
{
	name = point_name(name);
	if (strncmp(name, "func:", 5) || strpbrk(name + 5, "+%"))
		return false;
	for (unsigned i = 0; i < o->npatterns; i++) {
		const char *pat = o->patterns[i], *ret = strstr(pat, "%return");
		char glob[512], *at;
		if (strncmp(pat, "func:", 5) || !ret || (ret[7] && ret[7] != '@') ||
		    (size_t)(ret - pat) >= sizeof(glob))
			continue;
		memcpy(glob, pat, (size_t)(ret - pat));
		glob[ret - pat] = 0;
		if ((at = strchr(glob + 5, '@'))) /* a source file's functions: any */
			*at = 0;
		if (!fnmatch(glob, name, 0))
			return true;
	}
	return false;
}

/* The index of the field named `key` in fmt, or -1. */
static int field_of(const struct djp_fmt *fmt, unsigned nargs, const char *key)
{
	for (unsigned i = 0; fmt && i < fmt->nfields && i < nargs; i++)
		if (!strcmp(fmt->field[i].name, key))
			return (int)i;
	return -1;
}

static unsigned hash(int pair, int32_t pid, const char *key)
{
	unsigned h = (unsigned)pair * 31u + (unsigned)pid;
	for (; *key; key++)
		h = h * 131u + (unsigned char)*key;
	return h % KEYED_BUCKETS;
}

static void keyed_close(struct djp_pairs *p, struct keyed **at, const struct djp_ev *ev, const struct djp_fmt *fmt,
			uint64_t ts_ns, int32_t tid)
{
	struct keyed *k = *at;
	p->ops->close(p->ctx, ev, fmt, ts_ns, k->pid, ev ? tid : k->tid, k->name, k->key, k->start_ns);
	*at = k->next;
	free(k->name);
	free(k->key);
	free(k);
}

static void keyed_event(struct djp_pairs *p, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt,
			int pair, bool start)
{
	char buf[1100], keybuf[DJP_FMT_NAME_MAX + 8];
	char cut[DJP_EV_MAX_ARGS][DJP_RING_STR_BOUND_MAX + 4];
	const char *strs[DJP_EV_MAX_ARGS], *key;
	int f = field_of(fmt, ev->nargs, p->o->slices[pair].key);
	struct keyed **at, *k;
	bool number;

	if (f < 0) {
		p->ops->alone(p->ctx, ev, name, fmt);
		return;
	}
	djp_output_strs(ev, strs, cut);
	key = djp_output_arg(buf, sizeof(buf), ev, fmt, (unsigned)f, strs, keybuf, &number);
	for (at = &p->keyed[hash(pair, ev->pid, key)]; *at; at = &(*at)->next)
		if ((*at)->pair == pair && (*at)->pid == ev->pid && !strcmp((*at)->key, key))
			break;
	if (!start) {
		if (*at)
			keyed_close(p, at, ev, fmt, ev->ts_ns, ev->tid);
		else
			p->ops->alone(p->ctx, ev, name, fmt);
		return;
	}
	if (*at) /* the same key again: the older slice ends here */
		keyed_close(p, at, NULL, NULL, ev->ts_ns, ev->tid);
	if (!(k = calloc(1, sizeof(*k))) || !(k->name = strdup(name)) || !(k->key = strdup(key))) {
		if (k)
			free(k->name);
		free(k);
		p->ops->alone(p->ctx, ev, name, fmt);
		return;
	}
	k->pair = pair;
	k->pid = ev->pid;
	k->tid = ev->tid;
	k->start_ns = ev->ts_ns;
	at = &p->keyed[hash(pair, ev->pid, key)];
	k->next = *at;
	*at = k;
	p->ops->open(p->ctx, ev, name, fmt, k->key);
}

static void pop(struct djp_pairs *p, struct thread_stack *t, const struct djp_ev *ev, const struct djp_fmt *fmt,
		uint64_t ts_ns)
{
	struct open_slice *s = &t->v[--t->n];
	p->ops->close(p->ctx, ev, fmt, ts_ns, t->pid, t->tid, s->name, NULL, s->start_ns);
	free(s->name);
}

static void thread_open(struct djp_pairs *p, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt,
			int pair)
{
	struct thread_stack *t = stack_of(p, ev->pid, ev->tid);
	char *copy = strdup(name);

	if (t && t->n == t->cap) {
		struct open_slice *v = realloc(t->v, (t->cap * 2 + 8) * sizeof(*v));
		if (v) {
			t->v = v;
			t->cap = t->cap * 2 + 8;
		}
	}
	if (!t || !copy || t->n == t->cap) { /* out of memory: an event of its own */
		free(copy);
		p->ops->alone(p->ctx, ev, name, fmt);
		return;
	}
	t->v[t->n++] = (struct open_slice){ .name = copy, .pair = pair, .start_ns = ev->ts_ns };
	p->ops->open(p->ctx, ev, name, fmt, NULL);
}

/* entry: the name of the function's entry (pair -1), else NULL */
static void thread_close(struct djp_pairs *p, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt,
			 int pair, const char *entry, size_t entry_len)
{
	struct thread_stack *t = stack_of(p, ev->pid, ev->tid);
	size_t i = t ? t->n : 0;

	while (i-- > 0)
		if (t->v[i].pair == pair &&
		    (pair >= 0 || (!strncmp(t->v[i].name, entry, entry_len) && !t->v[i].name[entry_len])))
			break;
	if (!t || i == (size_t)-1) {
		p->ops->alone(p->ctx, ev, name, fmt);
		return;
	}
	while (t->n > i + 1)
		pop(p, t, NULL, NULL, ev->ts_ns);
	pop(p, t, ev, fmt, ev->ts_ns);
}

void djp_pairs_event(struct djp_pairs *p, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt)
{
	const struct djp_output *o = p->o;
	size_t n = strlen(name);

	for (unsigned i = 0; i < o->nslices; i++) {
		bool start = !fnmatch(o->slices[i].start, name, 0);
		if (!start && fnmatch(o->slices[i].end, name, 0))
			continue;
		if (o->slices[i].key)
			keyed_event(p, ev, name, fmt, (int)i, start);
		else if (start)
			thread_open(p, ev, name, fmt, (int)i);
		else
			thread_close(p, ev, name, fmt, (int)i, NULL, 0);
		return;
	}
	if (n > 7 && !strcmp(name + n - 7, "%return"))
		thread_close(p, ev, name, fmt, -1, name, n - 7);
	else if (traced_return(o, name))
		thread_open(p, ev, name, fmt, -1);
	else
		p->ops->alone(p->ctx, ev, name, fmt);
}

void djp_pairs_end(struct djp_pairs *p, uint64_t ts_ns)
{
	for (size_t i = 0; i < p->nthreads; i++) {
		while (p->threads[i]->n)
			pop(p, p->threads[i], NULL, NULL, ts_ns);
		free(p->threads[i]->v);
	}
	tdestroy(p->by_tid, free);
	for (unsigned b = 0; b < KEYED_BUCKETS; b++)
		while (p->keyed[b])
			keyed_close(p, &p->keyed[b], NULL, NULL, ts_ns, 0);
	free(p->threads);
	free(p);
}
