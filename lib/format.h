/*
 * Marker formats: the printf-like string a marker carries ("len=%d skb=%p
 * name=%s") parsed into one field per conversion, and rendered back with the
 * values of one hit as "len=5 skb=0x7f12 name=foo" (or "arg1=..." for a
 * conversion that names no field).  Used by the script engine ($name,
 * $$parms, -L) and by `djp trace` output.
 */
#ifndef DJP_LIB_FORMAT_H
#define DJP_LIB_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define DJP_FMT_MAX_FIELDS 12
#define DJP_FMT_NAME_MAX 32

enum {
	DJP_FMT_LEFT = 1u << 0,	 /* '-' */
	DJP_FMT_ZERO = 1u << 1,	 /* '0' */
	DJP_FMT_PLUS = 1u << 2,	 /* '+' */
	DJP_FMT_SPACE = 1u << 3, /* ' ' */
	DJP_FMT_ALT = 1u << 4,	 /* '#' */
};

enum djp_fmt_length {
	DJP_FMT_LEN_NONE,
	DJP_FMT_LEN_HH,
	DJP_FMT_LEN_H,
	DJP_FMT_LEN_L,
	DJP_FMT_LEN_LL,
	DJP_FMT_LEN_Z,
	DJP_FMT_LEN_J,
	DJP_FMT_LEN_T,
};

/*
 * One conversion, as printf has it after the '%': flags, width, precision,
 * length modifier and the conversion character.  The one parser of a
 * conversion in the project: marker formats (djp_format_parse), scripts'
 * printf (tools/djp/script/run/print.c) and the recorder's string mask
 * (kernel/agent/recorder.c) all step through formats with it.
 */
#define DJP_FMT_STAR (-2) /* width or precision '*': taken from an argument */
#define DJP_FMT_NUM_MAX 32767

struct djp_fmt_spec {
	char conv;	/* the conversion character, 0 at the end of the string */
	uint8_t flags;	/* DJP_FMT_* */
	uint8_t length; /* enum djp_fmt_length */
	int width;	/* -1 when not given, DJP_FMT_STAR, else <= DJP_FMT_NUM_MAX */
	int prec;	/* the same */
};

static inline int djp_format_num_(const char **p)
{
	int v = 0;
	if (**p == '*') {
		(*p)++;
		return DJP_FMT_STAR;
	}
	for (; **p >= '0' && **p <= '9'; (*p)++)
		if ((v = v * 10 + (**p - '0')) > DJP_FMT_NUM_MAX)
			v = DJP_FMT_NUM_MAX;
	return v;
}

/*
 * Parse the conversion at *p (just after its '%') into *s and advance *p
 * past it.  Which conversion characters are allowed is the caller's
 * question: s->conv is whatever character came, 0 at the end of the string
 * (*p is then left on the NUL).  Inline and free of library calls, so that
 * the recorder compiles it for general registers only, as its hit path
 * must be (kernel/agent/recorder.c).
 */
static inline void djp_format_spec(const char **p, struct djp_fmt_spec *s)
{
	const char *q = *p;

	s->flags = 0;
	s->length = DJP_FMT_LEN_NONE;
	s->width = s->prec = -1;
	for (;; q++) {
		if (*q == '-')
			s->flags |= DJP_FMT_LEFT;
		else if (*q == '0')
			s->flags |= DJP_FMT_ZERO;
		else if (*q == '+')
			s->flags |= DJP_FMT_PLUS;
		else if (*q == ' ')
			s->flags |= DJP_FMT_SPACE;
		else if (*q == '#')
			s->flags |= DJP_FMT_ALT;
		else
			break;
	}
	if (*q == '*' || (*q >= '0' && *q <= '9'))
		s->width = djp_format_num_(&q);
	if (*q == '.') {
		q++;
		s->prec = djp_format_num_(&q);
	}
	switch (*q) {
	case 'h':
		s->length = q[1] == 'h' ? DJP_FMT_LEN_HH : DJP_FMT_LEN_H;
		q += q[1] == 'h' ? 2 : 1;
		break;
	case 'l':
		s->length = q[1] == 'l' ? DJP_FMT_LEN_LL : DJP_FMT_LEN_L;
		q += q[1] == 'l' ? 2 : 1;
		break;
	case 'L': /* glibc: long long for the integer conversions */
	case 'q': /* BSD's long long */
		s->length = DJP_FMT_LEN_LL;
		q++;
		break;
	case 'z':
		s->length = DJP_FMT_LEN_Z;
		q++;
		break;
	case 'j':
		s->length = DJP_FMT_LEN_J;
		q++;
		break;
	case 't':
		s->length = DJP_FMT_LEN_T;
		q++;
		break;
	}
	s->conv = *q;
	if (*q)
		q++;
	*p = q;
}

struct djp_fmt_field {
	char name[DJP_FMT_NAME_MAX]; /* "len" for "len=%d"; "" when none */
	char conv;		     /* one of d i u x X o c s p */
	uint8_t flags;		     /* DJP_FMT_* */
	uint8_t length;		     /* enum djp_fmt_length */
	int16_t width;		     /* -1 when not given */
	int16_t prec;		     /* -1 when not given */
};

struct djp_fmt {
	unsigned nfields;
	struct djp_fmt_field field[DJP_FMT_MAX_FIELDS];
};

/* Which of the first nargs arguments (up to 31) the format's %s
 * conversions take, as a bit mask: the arguments a recorder copies as
 * strings.  Inline, for the recorders of the library and of djprobe.ko. */
static inline uint32_t djp_format_str_mask(const char *f, unsigned nargs)
{
	uint32_t mask = 0;
	unsigned k = 0;

	if (!f)
		return 0;
	while (*f && k < nargs && k < 31) {
		struct djp_fmt_spec s;
		if (*f++ != '%')
			continue;
		if (*f == '%') {
			f++;
			continue;
		}
		djp_format_spec(&f, &s);
		if (!s.conv)
			break;
		if (s.conv == 's')
			mask |= 1u << k;
		k++;
	}
	return mask;
}

/* The conversions a marker argument or a script value can take: integers,
 * pointers, characters, strings (0, the end of a format, is none). */
static inline int djp_format_conv_known(char c)
{
	return c && strchr("diuxXocsp", c);
}

/*
 * Parse `fmt` into *out.  Returns the number of fields (conversions; "%%"
 * is not one), or -EINVAL for a malformed or unsupported conversion (or '*'
 * widths) and -E2BIG for more than DJP_FMT_MAX_FIELDS; *why then names the
 * problem (static string).
 */
int djp_format_parse(const char *fmt, struct djp_fmt *out, const char **why);

/* Index of the field named `name` (length len), or -1. */
int djp_format_field_index(const struct djp_fmt *f, const char *name, size_t len);

/*
 * Render `nargs` values as "name=value" pairs separated by one space; a
 * field without a name, or an argument beyond the format's fields (fmt may be
 * NULL), prints as "argN=".  Numbers follow their conversion (%d signed, %u
 * unsigned, %x %p as 0x..., %o as 0..., %c a character; no conversion: hex);
 * %s values come from strs[i] (NULL prints as "(null)").  Like snprintf:
 * returns the length the full text needs and writes at most sz-1 bytes plus
 * a NUL.
 */
size_t djp_format_render(char *buf, size_t sz, const struct djp_fmt *fmt, unsigned nargs, const int64_t *args,
			 const char *const *strs);

#endif
