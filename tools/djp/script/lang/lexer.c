/*
 * The lexer: script text to tokens, one at a time, on demand of the parser.
 *
 * SystemTap's lexical rules: newlines are plain white space (statements may
 * end with ';' or nothing), comments are '#', '//' and C-style block comments, numbers
 * are 64-bit decimal, octal (leading 0) or hex (0x), strings are double
 * quoted with C escapes.  Context variables keep their sigil in the token
 * kind ($name, $$name), and '@' names (@count, @hist_log) are single tokens.
 * Operators are matched longest first so that "<<<" is not "<<" then "<".
 * Every token carries its line and column for error messages.
 */
#include <ctype.h>
#include <string.h>

#include "lib/escape.h"
#include "lang.h"

static const char *const ops[] = {
	"%(",  "%?",  "%:",  "%)", /* the preprocessor's (preproc.c) */
	"=~",  "!~",		   /* regular expression match */
	"<<<", "<<=", ">>=", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "++", "--", "+=", "-=", "->", "*=",
	"/=",  "%=",  ".=",  "&=", "|=", "^=", "+",  "-",  "*",  "/",  "%",  "<",  ">",  "=",  "!",  "~",
	"&",   "|",   "^",   "?",  ":",  ";",  ",",  ".",  "(",  ")",  "[",  "]",  "{",  "}",
};

void lex_init(struct lexer *lx, const struct src_file *f, struct script *sc)
{
	lx->file = f;
	lx->p = f->text;
	lx->line = 1;
	lx->col = 1;
	lx->sc = sc;
}

static void adv(struct lexer *lx, size_t n)
{
	while (n-- && *lx->p) {
		if (*lx->p == '\n') {
			lx->line++;
			lx->col = 1;
		} else {
			lx->col++;
		}
		lx->p++;
	}
}

static bool skip_space(struct lexer *lx)
{
	for (;;) {
		const char *p = lx->p;
		if (isspace((unsigned char)*p)) {
			adv(lx, 1);
		} else if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
			while (*lx->p && *lx->p != '\n')
				adv(lx, 1);
		} else if (p[0] == '/' && p[1] == '*') {
			int line = lx->line, col = lx->col;
			adv(lx, 2);
			while (*lx->p && !(lx->p[0] == '*' && lx->p[1] == '/'))
				adv(lx, 1);
			if (!*lx->p) {
				diag(lx->sc, line, col, "parse error", "unterminated comment");
				return false;
			}
			adv(lx, 2);
		} else {
			return true;
		}
	}
}

static int hexval(int c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

static bool lex_string(struct lexer *lx, struct tok *t)
{
	char *buf, *o;
	const char *p = lx->p + 1;
	size_t n = 0;

	while (p[n] && p[n] != '"' && p[n] != '\n')
		n += p[n] == '\\' && p[n + 1] ? 2 : 1;
	if (p[n] != '"') {
		diag(lx->sc, t->line, t->col, "parse error", "unterminated string");
		return false;
	}
	o = buf = pool_alloc(lx->sc, n + 1);
	for (size_t i = 0; i < n; i++) {
		char c = p[i];
		if (c != '\\') {
			*o++ = c;
			continue;
		}
		c = p[++i];
		switch (c) {
		case 'n': *o++ = '\n'; break;
		case 't': *o++ = '\t'; break;
		case 'r': *o++ = '\r'; break;
		case 'a': *o++ = '\a'; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'v': *o++ = '\v'; break;
		case 'x': {
			int v = 0, k = 0;
			while (k < 2 && i + 1 < n && isxdigit((unsigned char)p[i + 1]))
				v = v * 16 + hexval(p[++i]), k++;
			*o++ = (char)v;
			break;
		}
		default:
			if (c >= '0' && c <= '7') {
				int v = c - '0', k = 1;
				while (k < 3 && i + 1 < n && p[i + 1] >= '0' && p[i + 1] <= '7')
					v = v * 8 + (p[++i] - '0'), k++;
				*o++ = (char)v;
			} else {
				*o++ = c; /* \\ \" \' and anything else: itself */
			}
		}
	}
	*o = 0;
	t->kind = T_STR;
	t->text = buf;
	t->len = (size_t)(o - buf);
	adv(lx, n + 2);
	return true;
}

static bool lex_number(struct lexer *lx, struct tok *t)
{
	const char *p = lx->p;
	uint64_t v = 0;
	size_t n = 0;
	bool overflow = false;

	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		n = 2;
		if (!isxdigit((unsigned char)p[n]))
			goto bad;
		while (isxdigit((unsigned char)p[n])) {
			overflow |= v >> 60 != 0;
			v = v * 16 + (uint64_t)hexval(p[n++]);
		}
	} else if (p[0] == '0') {
		n = 1;
		while (p[n] >= '0' && p[n] <= '7') {
			overflow |= v >> 61 != 0;
			v = v * 8 + (uint64_t)(p[n++] - '0');
		}
	} else {
		while (isdigit((unsigned char)p[n])) {
			uint64_t d = (uint64_t)(p[n++] - '0');
			overflow |= v > (UINT64_MAX - d) / 10;
			v = v * 10 + d;
		}
	}
	if (isalnum((unsigned char)p[n]) || p[n] == '_')
		goto bad;
	if (overflow) {
		diag(lx->sc, t->line, t->col, "parse error", "number too large: %.*s", (int)n, p);
		return false;
	}
	t->kind = T_NUM;
	t->num = (int64_t)v;
	t->text = p;
	t->len = n;
	adv(lx, n);
	return true;
bad:
	diag(lx->sc, t->line, t->col, "parse error", "malformed number");
	return false;
}

bool lex_next(struct lexer *lx, struct tok *t)
{
	const char *p;

	memset(t, 0, sizeof(*t));
	if (!skip_space(lx))
		return false;
	p = lx->p;
	t->line = lx->line;
	t->col = lx->col;
	if (!*p) {
		t->kind = T_EOF;
		t->text = "end of input";
		return true;
	}
	if (*p == '"')
		return lex_string(lx, t);
	if (isdigit((unsigned char)*p))
		return lex_number(lx, t);
	if (isalpha((unsigned char)*p) || *p == '_' || *p == '$' || *p == '@') {
		size_t n = 0, skip = 0;
		t->kind = T_IDENT;
		if (p[0] == '$' && p[1] == '$') {
			t->kind = T_DOLLAR2;
			skip = 2;
		} else if (p[0] == '$') {
			t->kind = T_DOLLAR;
			skip = 1;
		} else if (p[0] == '@') {
			t->kind = T_AT;
			skip = 1;
		}
		if (skip == 1 && p[1] == '#') /* $# and @#: how many script arguments */
			n = 1;
		while (p[skip] != '#' && (isalnum((unsigned char)p[skip + n]) || p[skip + n] == '_'))
			n++;
		/* stap's pretty printing: $var$, $var$$, $var->member$ */
		for (int d = 0; n && d < 2 && t->kind != T_AT && p[skip + n] == '$'; d++)
			n++;
		/* ... and $var[1]$: a '$' or '$$' right after a ']' */
		if (n == 0 && (t->kind == T_DOLLAR || t->kind == T_DOLLAR2) && p > lx->file->text && p[-1] == ']') {
			t->kind = T_OP;
			t->text = skip == 2 ? "$$" : "$";
			t->len = skip;
			adv(lx, skip);
			return true;
		}
		if (n == 0 || (t->kind == T_DOLLAR2 && isdigit((unsigned char)p[skip]))) {
			diag(lx->sc, t->line, t->col, "parse error", "expected a name after '%.*s'", (int)skip, p);
			return false;
		}
		t->text = pool_strndup(lx->sc, p + skip, n);
		t->len = n;
		adv(lx, skip + n);
		return true;
	}
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		size_t n = strlen(ops[i]);
		if (!strncmp(p, ops[i], n)) {
			t->kind = T_OP;
			t->text = ops[i];
			t->len = n;
			adv(lx, n);
			return true;
		}
	}
	{
		char one[2] = { *p, 0 }, esc[16];
		diag(lx->sc, t->line, t->col, "parse error", "unexpected character '%s'",
		     djp_escape_c(esc, sizeof(esc), one, false));
	}
	return false;
}
