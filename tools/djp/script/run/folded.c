/*
 * print_folded(ARRAY): an array of stacks as folded stacks, the text
 * flamegraph.pl, speedscope and `djp flame` draw.
 *
 * A folded line is one stack, root first, its frames joined by ';', then
 * a space and its count:
 *
 *     main;ut_a;ut_b;ut_c 5
 *
 * What a line is made of.  Each element of the array is a line.  Its
 * indexes, in order, are its frames: an index that is a stack as
 * ubacktrace() writes it ("0x4005d2 0x40061a ", innermost first) gives a
 * frame per address, outermost first, named as the unwinder's symbols
 * name it (usym.c: the function around the address; a return address is
 * named as it is, as print_ubacktrace() names it), or "[OBJECT]" where
 * no symbol holds it, "[unknown]" where no object does; any other index
 * is one frame of its own, its text or its number, so that
 * `s[execname(), ubacktrace()]` roots each program's stacks under its
 * name.  The count is the element's value for an array of numbers
 * (`s[ubacktrace()]++`, or a weight: `+= $bytes`), its @count for a
 * statistic (`s[ubacktrace()] <<< 1`).
 *
 * Two stacks that differ in their return addresses only (two calls of
 * the same function from one caller) are one line: lines of one text are
 * added up, and printed sorted by their text, as stackcollapse does, so
 * that the output of a run does not depend on the order of its hits.  A
 * line whose count is not positive, or that has no frame, is left out:
 * a flame graph has no room for it, and so is an empty index (a
 * ubacktrace() where there was no stack).  ';' and control characters in
 * a name would break the line and are written '_'.
 *
 * The addresses are named in the process of the probe that prints (the
 * target, in an end probe), or where no object of it holds them, in any
 * traced process that had one there (a child of fork, an exec'd program).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tools/djp/script/run/interp.h"
#include "tools/djp/script/usym.h"

struct folded_line {
	char *text; /* the frames, malloc'd */
	int64_t count;
};

/* A frame's name, appended as a flame graph can read it; an empty one
 * (ubacktrace() where there is no stack) is no frame. */
static void put_name(struct strbuf *b, const char *s, size_t n)
{
	if (!n)
		return;
	if (b->len)
		sb_putc(b, ';');
	for (size_t i = 0; i < n; i++)
		sb_putc(b, s[i] == ';' || (unsigned char)s[i] < ' ' || s[i] == 0x7f ? '_' : s[i]);
}

static void put_addr(struct strbuf *b, int32_t pid, uint64_t addr)
{
	struct usym u;
	char buf[64];
	const char *name = NULL, *mod = NULL;

	if (usym_lookup(pid, addr, &u) || usym_lookup_any(addr, &u)) {
		name = u.name;
		mod = u.module;
	}
	if (name) {
		name += name[0] == '.'; /* as stap: ".foo" is foo */
		put_name(b, name, strlen(name));
		return;
	}
	if (mod) {
		const char *base = strrchr(mod, '/') ? strrchr(mod, '/') + 1 : mod;
		snprintf(buf, sizeof(buf), "[%.*s]", (int)(sizeof(buf) - 3), base);
	} else {
		snprintf(buf, sizeof(buf), "[unknown]");
	}
	put_name(b, buf, strlen(buf));
}

/* s is a stack as ubacktrace() writes it: hex addresses, each followed by
 * a space, and at least one. */
static bool is_stack(const char *s)
{
	const char *p = s;
	if (!*s)
		return false;
	while (*p) {
		if (p[0] != '0' || p[1] != 'x' || !strchr("0123456789abcdef", p[2]) || !p[2])
			return false;
		p += 2;
		while (*p && strchr("0123456789abcdef", *p))
			p++;
		if (*p != ' ')
			return false;
		p++;
	}
	return true;
}

static void put_stack(struct strbuf *b, int32_t pid, const char *s)
{
	uint64_t pcs[64];
	unsigned n = 0;

	for (const char *p = s; *p && n < sizeof(pcs) / sizeof(pcs[0]);) {
		char *end;
		pcs[n++] = strtoull(p, &end, 16);
		p = end + (*end == ' ');
	}
	while (n)
		put_addr(b, pid, pcs[--n]);
}

static void put_key(struct strbuf *b, int32_t pid, uint8_t ty, const union cell *k)
{
	char num[24];

	if (ty == TY_STR && is_stack(k->s))
		put_stack(b, pid, k->s);
	else if (ty == TY_STR)
		put_name(b, k->s, strlen(k->s));
	else
		put_name(b, num, (size_t)snprintf(num, sizeof(num), "%" PRId64, k->n));
}

static int by_text(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text, ((const struct folded_line *)b)->text);
}

void print_folded(struct run *r, const struct sym *s)
{
	struct map *m = s->map;
	struct folded_line *v;
	struct strbuf b = { 0 };
	size_t n = 0;

	if (!m || !m->nlive)
		return;
	if (!(v = calloc(m->nlive, sizeof(*v))))
		abort();
	for (uint32_t i = 0; i < m->nent; i++) {
		const struct map_ent *e = &m->ent[i];
		int64_t count = s->ty == TY_STAT ? (e->st ? e->st->count : 0) : e->val.n;

		if (!e->live || count <= 0)
			continue;
		b.len = 0;
		for (int k = 0; k < m->nkeys; k++)
			put_key(&b, ctx_pid(r), m->kty[k], &e->key[k]);
		if (!b.len)
			continue;
		if (!(v[n].text = strdup(b.p)))
			abort();
		v[n++].count = count;
	}
	qsort(v, n, sizeof(*v), by_text);
	for (size_t i = 0; i < n;) {
		const char *text = v[i].text;
		int64_t count = 0;
		char num[24];
		for (; i < n && !strcmp(v[i].text, text); i++)
			count += v[i].count;
		emit(r, text, strlen(text));
		emit(r, num, (size_t)snprintf(num, sizeof(num), " %" PRId64 "\n", count));
	}
	for (size_t i = 0; i < n; i++)
		free(v[i].text);
	free(v);
	free(b.p);
}
