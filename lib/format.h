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
