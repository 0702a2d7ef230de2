/*
 * Error messages and the program's string storage.
 *
 * Every compile-time error names its place as "file:line:col: kind: message",
 * then repeats the source line with a caret under the column, the shape
 * compilers use and editors can jump to.  Strings of the program (names,
 * literals, probe point text) live in one pool freed with the script, so the
 * passes can keep pointers into it without owning anything.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "lang.h"

bool script_no_warnings;

struct strpool {
	struct strpool *next;
	size_t used, cap;
	char data[];
};

void *pool_alloc(struct script *sc, size_t n)
{
	struct strpool *p = sc->pool;

	n = (n + 15) & ~(size_t)15;
	if (!p || p->used + n > p->cap) {
		size_t cap = n > 65536 ? n : 65536;
		p = malloc(sizeof(*p) + cap);
		if (!p) {
			fprintf(stderr, "djp: out of memory\n");
			exit(1);
		}
		p->used = 0;
		p->cap = cap;
		p->next = sc->pool;
		sc->pool = p;
	}
	p->used += n;
	return memset(p->data + p->used - n, 0, n);
}

char *pool_strndup(struct script *sc, const char *s, size_t n)
{
	char *d = pool_alloc(sc, n + 1);
	memcpy(d, s, n);
	d[n] = 0;
	return d;
}

void pool_free_all(struct script *sc)
{
	while (sc->pool) {
		struct strpool *n = sc->pool->next;
		free(sc->pool);
		sc->pool = n;
	}
}

void diag(struct script *sc, int line, int col, const char *kind, const char *fmt, ...)
{
	FILE *f = sc->err ? sc->err : stderr;
	const char *p = sc->file.text, *e;
	va_list ap;

	sc->nerrors++;
	if (line > 0)
		fprintf(f, "%s:%d:%d: %s: ", sc->file.name, line, col, kind);
	else
		fprintf(f, "%s: %s: ", sc->file.name, kind);
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	if (!p || line <= 0)
		return;
	for (int l = 1; l < line && *p; p++)
		if (*p == '\n')
			l++;
	e = strchr(p, '\n');
	if (!e)
		e = p + strlen(p);
	/* The line with its control bytes as C escapes (a garbage file's
	 * must not reach the terminal; a backslash stays itself, as the
	 * script has it), the caret under the escaped column. */
	fputs("    ", f);
	for (const char *q = p; q < e; q++) {
		char one[2] = { *q, 0 }, esc[16];
		fputs(*q == '\t' || *q == '\\' ? one : djp_escape_c(esc, sizeof(esc), one, false), f);
	}
	fputs("\n    ", f);
	for (int i = 1; i < col && p + i - 1 < e; i++) {
		char one[2] = { p[i - 1], 0 }, esc[16];
		if (p[i - 1] == '\t' || p[i - 1] == '\\') {
			fputc(p[i - 1] == '\t' ? '\t' : ' ', f);
			continue;
		}
		for (size_t k = strlen(djp_escape_c(esc, sizeof(esc), one, false)); k; k--)
			fputc(' ', f);
	}
	fputs("^\n", f);
}
