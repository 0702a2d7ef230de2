/*
 * Marker formats.
 *
 * A marker's format is written for humans and checked by the compiler as a
 * printf format against the marker's arguments, so it already says two
 * things a tracer wants: how each argument should print, and, by the usual
 * "name=%d" convention, what it is called.  We parse it once, when the
 * marker is read, into an array of fields (one per conversion, in argument
 * order).  A field takes its name from the identifier that ends right before
 * an '=' adjacent to the '%': "len=%d" names "len", "x: len=%d" too, while
 * "%d" or "len %d" names nothing and the argument stays reachable as argN.
 *
 * Only the conversions a marker argument can have (integers, pointers,
 * characters and strings) are accepted; '*' widths are refused because a
 * marker has no argument to spend on them.  Rendering is allocation free and
 * snprintf-like, so the trace printer can call it per event.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "format.h"

static int is_ident(int c)
{
	return isalnum(c) || c == '_';
}

/* The name before "=%" ending at fmt[pct]: writes it to out or leaves "". */
static void field_name(const char *fmt, size_t pct, char *out)
{
	size_t end, start;

	out[0] = 0;
	if (pct == 0 || fmt[pct - 1] != '=')
		return;
	end = pct - 1;
	start = end;
	while (start > 0 && is_ident((unsigned char)fmt[start - 1]))
		start--;
	if (start == end || isdigit((unsigned char)fmt[start]) || end - start >= DJP_FMT_NAME_MAX)
		return;
	memcpy(out, fmt + start, end - start);
	out[end - start] = 0;
}

int djp_format_parse(const char *fmt, struct djp_fmt *out, const char **why)
{
	const char *p = fmt;
	const char *dummy;

	if (!why)
		why = &dummy;
	memset(out, 0, sizeof(*out));
	while (*p) {
		struct djp_fmt_field f;
		struct djp_fmt_spec spec;
		size_t pct;

		if (*p != '%') {
			p++;
			continue;
		}
		pct = (size_t)(p - fmt);
		p++;
		if (*p == '%') {
			p++;
			continue;
		}
		djp_format_spec(&p, &spec);
		if (spec.width == DJP_FMT_STAR || spec.prec == DJP_FMT_STAR) {
			*why = spec.width == DJP_FMT_STAR ? "'*' width is not supported" : "'*' precision is not supported";
			return -EINVAL;
		}
		if (!djp_format_conv_known(spec.conv)) {
			*why = spec.conv ? "unsupported conversion" : "incomplete conversion at end of format";
			return -EINVAL;
		}
		memset(&f, 0, sizeof(f));
		f.conv = spec.conv;
		f.flags = spec.flags;
		f.length = spec.length;
		f.width = (int16_t)spec.width;
		f.prec = (int16_t)spec.prec;
		if (out->nfields == DJP_FMT_MAX_FIELDS) {
			*why = "more than 12 conversions";
			return -E2BIG;
		}
		field_name(fmt, pct, f.name);
		out->field[out->nfields++] = f;
	}
	return (int)out->nfields;
}

int djp_format_field_index(const struct djp_fmt *f, const char *name, size_t len)
{
	for (unsigned i = 0; f && i < f->nfields; i++)
		if (strlen(f->field[i].name) == len && !memcmp(f->field[i].name, name, len))
			return (int)i;
	return -1;
}

/* Append with snprintf semantics: *pos counts the full length. */
static void put(char *buf, size_t sz, size_t *pos, const char *s, size_t n)
{
	if (*pos < sz) {
		size_t room = sz - 1 - *pos;
		memcpy(buf + *pos, s, n < room ? n : room);
	}
	*pos += n;
}

static void render_value(char *tmp, size_t tsz, const struct djp_fmt_field *f, int64_t v, const char *s,
			 const char **outp)
{
	*outp = tmp;
	switch (f ? f->conv : 0) {
	case 'd':
	case 'i':
		snprintf(tmp, tsz, "%" PRId64, v);
		break;
	case 'u':
		snprintf(tmp, tsz, "%" PRIu64, (uint64_t)v);
		break;
	case 'o':
		snprintf(tmp, tsz, "0%" PRIo64, (uint64_t)v);
		break;
	case 'c':
		if (isprint((int)(v & 0xff)))
			snprintf(tmp, tsz, "%c", (int)(v & 0xff));
		else
			snprintf(tmp, tsz, "\\%03o", (unsigned)(v & 0xff));
		break;
	case 's':
		*outp = s ? s : "(null)";
		break;
	case 'X':
		snprintf(tmp, tsz, "0x%" PRIX64, (uint64_t)v);
		break;
	default: /* x, p, or no format */
		snprintf(tmp, tsz, "0x%" PRIx64, (uint64_t)v);
		break;
	}
}

size_t djp_format_render(char *buf, size_t sz, const struct djp_fmt *fmt, unsigned nargs, const int64_t *args,
			 const char *const *strs)
{
	size_t pos = 0;
	char tmp[48], name[DJP_FMT_NAME_MAX + 8];

	for (unsigned i = 0; i < nargs; i++) {
		const struct djp_fmt_field *f = fmt && i < fmt->nfields ? &fmt->field[i] : NULL;
		const char *val;
		int n;

		if (f && f->name[0])
			n = snprintf(name, sizeof(name), "%s%s=", i ? " " : "", f->name);
		else
			n = snprintf(name, sizeof(name), "%sarg%u=", i ? " " : "", i + 1);
		put(buf, sz, &pos, name, (size_t)n);
		render_value(tmp, sizeof(tmp), f, args[i], strs ? strs[i] : NULL, &val);
		put(buf, sz, &pos, val, strlen(val));
	}
	if (sz)
		buf[pos < sz ? pos : sz - 1] = 0;
	return pos;
}
