/*
 * printf for scripts, with SystemTap's semantics.
 *
 * The format of printf/sprintf must be a literal, so it is parsed once, at
 * check time (lang/format.c), into literal runs and conversions (each conversion by
 * lib/format.h's djp_format_spec, the parser marker formats use too); the
 * interpreter only walks that list.  Numbers are 64-bit whatever the length modifier (which is
 * accepted and ignored, as stap does); %p is %#x (stap since 1.3); %c prints
 * the low byte; the '#' flag on %s and %c escapes unprintable characters;
 * %b writes the value's bytes (width 1, 2, 4 or 8; 8 by default), %m the
 * bytes at an address of the target (the precision is how many, 1 by
 * default) and %M the same bytes in hex.
 * The number layout (sign, 0x prefix, zero or space padding, precision)
 * follows the runtime's number() routine so that widths line up as in stap.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "run.h"

void sb_put(struct strbuf *b, const char *s, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			abort();
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, s, n);
	b->len += n;
	b->p[b->len] = 0;
}

void sb_putc(struct strbuf *b, char c)
{
	sb_put(b, &c, 1);
}

static void pad(struct strbuf *b, char c, int n)
{
	while (n-- > 0)
		sb_putc(b, c);
}

void print_number(struct strbuf *b, uint64_t num, int base, int size, int precision, unsigned type)
{
	static const char small[] = "0123456789abcdefx", large[] = "0123456789ABCDEFX";
	const char *digits = (type & PRINT_LARGE) ? large : small;
	char tmp[66], sign = 0, c;
	int i = 0;

	if (type & PRINT_LEFT)
		type &= ~(unsigned)PRINT_ZERO;
	c = (type & PRINT_ZERO) ? '0' : ' ';
	if (type & PRINT_SIGN) {
		if ((int64_t)num < 0) {
			sign = '-';
			num = (uint64_t)0 - num;
			size--;
		} else if (type & PRINT_PLUS) {
			sign = '+';
			size--;
		} else if (type & PRINT_SPACE) {
			sign = ' ';
			size--;
		}
	}
	if (type & PRINT_ALT)
		size -= base == 16 ? 2 : base == 8 ? 1 : 0;
	if (num == 0)
		tmp[i++] = '0';
	while (num) {
		tmp[i++] = digits[num % (unsigned)base];
		num /= (unsigned)base;
	}
	if (i > precision)
		precision = i;
	size -= precision;
	if (!(type & (PRINT_ZERO | PRINT_LEFT)))
		pad(b, ' ', size), size = 0;
	if (sign)
		sb_putc(b, sign);
	if (type & PRINT_ALT) {
		if (base == 8)
			sb_putc(b, '0');
		else if (base == 16)
			sb_putc(b, '0'), sb_putc(b, digits[16]);
	}
	if (!(type & PRINT_LEFT))
		pad(b, c, size), size = 0;
	pad(b, '0', precision - i);
	while (i-- > 0)
		sb_putc(b, tmp[i]);
	pad(b, ' ', size);
}

size_t char_escaped(char c, char *out)
{
	static const char esc_from[] = "\a\b\f\n\r\t\v'\\", esc_to[] = "abfnrtv'\\";
	const char *e;
	if (isprint((unsigned char)c) && isascii((unsigned char)c) && c != '\'' && c != '\\' && c != '"') {
		out[0] = c;
		return 1;
	}
	if (c == '"') {
		out[0] = '\\';
		out[1] = '"';
		return 2;
	}
	if (c && (e = strchr(esc_from, c))) {
		out[0] = '\\';
		out[1] = esc_to[e - esc_from];
		return 2;
	}
	out[0] = '\\';
	out[1] = (char)('0' + (((unsigned char)c >> 6) & 3));
	out[2] = (char)('0' + (((unsigned char)c >> 3) & 7));
	out[3] = (char)('0' + ((unsigned char)c & 7));
	return 4;
}

void print_escaped(struct strbuf *b, const char *s)
{
	char tmp[4];
	for (; *s; s++)
		sb_put(b, tmp, char_escaped(*s, tmp));
}

static void print_memory(struct strbuf *b, const struct print_spec *s, unsigned flags, const uint8_t *mem, size_t n)
{
	static const char hex[] = "0123456789abcdef";
	size_t len = s->conv == 'M' ? 2 * n : n;
	if (!(flags & PRINT_LEFT))
		pad(b, ' ', s->width - (int)len);
	if (s->conv == 'M') {
		for (size_t i = 0; i < n; i++) {
			sb_putc(b, hex[mem[i] >> 4]);
			sb_putc(b, hex[mem[i] & 15]);
		}
	} else {
		sb_put(b, (const char *)mem, n);
	}
	if (flags & PRINT_LEFT)
		pad(b, ' ', s->width - (int)len);
}

/* %*d, %.*s: the spec with its width and precision from the arguments,
 * which *a steps over; as C's printf, a negative width left-justifies
 * (*flags), a negative precision is none */
static const struct print_spec *star_spec(const struct print_spec *s, struct print_spec *star, const union cell *args,
					   int *a, unsigned *flags)
{
	*star = *s;
	if (s->star_width) {
		int64_t w = args[(*a)++].n;
		if (w < 0) {
			*flags |= PRINT_LEFT;
			w = -w;
		}
		star->width = w > (int64_t)MAXSTRINGLEN ? (int)MAXSTRINGLEN : (int)w;
	}
	if (s->star_prec) {
		int64_t pr = args[(*a)++].n;
		star->prec = pr < 0 ? -1 : pr > (int64_t)MAXSTRINGLEN ? (int)MAXSTRINGLEN : (int)pr;
	}
	return star;
}

/* len bytes of p (none when p is NULL, an escape of nothing), padded to
 * the spec's width */
static void put_padded(struct strbuf *b, const struct print_spec *s, unsigned flags, const char *p, size_t len)
{
	if (!(flags & PRINT_LEFT))
		pad(b, ' ', s->width - (int)len);
	if (p)
		sb_put(b, p, len);
	if (flags & PRINT_LEFT)
		pad(b, ' ', s->width - (int)len);
}

/* %s, at most the precision's bytes; %#s escaped */
static void print_str(struct strbuf *b, const struct print_spec *s, unsigned flags, const char *str)
{
	size_t len = strlen(str);
	if (s->prec >= 0 && (size_t)s->prec < len)
		len = (size_t)s->prec;
	if (flags & PRINT_ALT) {
		struct strbuf t = { 0 };
		char *cp = strndup(str, len);
		if (!cp)
			abort();
		print_escaped(&t, cp);
		free(cp);
		put_padded(b, s, flags, t.p, t.len);
		free(t.p);
		return;
	}
	put_padded(b, s, flags, str, len);
}

/* %m, %M: the precision's bytes (1 by default) at addr; false when they
 * could not be read (mem->fault) */
static bool print_mem_at(struct strbuf *b, const struct print_spec *s, unsigned flags, uint64_t addr,
			 struct print_mem *mem)
{
	size_t n = s->prec > 0 ? (size_t)s->prec : 1;
	uint8_t *buf = malloc(n);
	if (!buf)
		abort();
	if (!mem || !mem->read(mem->ctx, addr, buf, n)) {
		free(buf);
		if (mem)
			mem->fault = addr;
		return false;
	}
	print_memory(b, s, flags, buf, n);
	free(buf);
	return true;
}

bool print_format(struct strbuf *b, const struct print_fmt *pf, const union cell *args, struct print_mem *mem)
{
	int a = 0;

	for (int i = 0; i < pf->nspecs; i++) {
		const struct print_spec *s = &pf->spec[i];
		struct print_spec star;
		unsigned flags = s->flags;

		if (s->star_width || s->star_prec)
			s = star_spec(s, &star, args, &a, &flags);
		if (!s->conv) {
			sb_put(b, s->lit, s->litlen);
			continue;
		}
		switch (s->conv) {
		case 's':
			print_str(b, s, flags, args[a++].s);
			break;
		case 'c': {
			char tmp[4], c = (char)args[a++].n;
			size_t n = (flags & PRINT_ALT) ? char_escaped(c, tmp) : (tmp[0] = c, 1);
			put_padded(b, s, flags, tmp, n);
			break;
		}
		case 'X':
			flags |= PRINT_LARGE;
			/* fall through */
		case 'x':
			print_number(b, (uint64_t)args[a++].n, 16, s->width, s->prec, flags);
			break;
		case 'p':
			print_number(b, (uint64_t)args[a++].n, 16, s->width, s->prec, flags | PRINT_ALT);
			break;
		case 'b': { /* the value's bytes, in the machine's order */
			uint64_t v = (uint64_t)args[a++].n;
			sb_put(b, (const char *)&v, s->width > 0 ? (size_t)s->width : sizeof(v));
			break;
		}
		case 'm':
		case 'M':
			if (!print_mem_at(b, s, flags, (uint64_t)args[a++].n, mem))
				return false;
			break;
		case 'o':
			print_number(b, (uint64_t)args[a++].n, 8, s->width, s->prec, flags);
			break;
		case 'd':
		case 'i':
			flags |= PRINT_SIGN;
			/* fall through */
		default: /* u */
			print_number(b, (uint64_t)args[a++].n, 10, s->width, s->prec, flags);
			break;
		}
	}
	return true;
}
