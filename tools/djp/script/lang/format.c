/*
 * A printf format, parsed once at check time.
 *
 * The format of printf/sprintf must be a literal, so check.c parses it here
 * into literal runs and conversions (each conversion by lib/format.h's
 * djp_format_spec, the parser marker formats use too), checks the arguments
 * against them, and keeps the list on the node; run/print.c only walks it.
 * What is refused here (an unknown conversion, %b of an odd width, a width
 * past MAXSTRINGLEN) is a semantic error, before anything is armed.
 */
#include <string.h>

#include "lang.h"

struct print_fmt *print_fmt_parse(struct script *sc, const char *fmt, const char **why)
{
	struct print_spec specs[256];
	int n = 0, nargs = 0;
	const char *p = fmt;

	while (*p) {
		struct print_spec s = { .width = -1, .prec = -1 };
		struct djp_fmt_spec spec;
		if (n == 256) {
			*why = "format too long";
			return NULL;
		}
		if (*p != '%' || p[1] == '%') {
			const char *start = p;
			if (*p == '%') {
				p += 2;
				s.lit = "%";
				s.litlen = 1;
			} else {
				while (*p && *p != '%')
					p++;
				s.lit = start;
				s.litlen = (size_t)(p - start);
			}
			specs[n++] = s;
			continue;
		}
		p++;
		djp_format_spec(&p, &spec);
		if (spec.width == DJP_FMT_STAR) { /* %*d: the width is an argument */
			s.star_width = true;
			spec.width = -1;
			nargs++;
		}
		if (spec.prec == DJP_FMT_STAR) {
			s.star_prec = true;
			spec.prec = -1;
			nargs++;
		}
		if (spec.width > (int)MAXSTRINGLEN || spec.prec > (int)MAXSTRINGLEN) {
			*why = "field width or precision too large";
			return NULL;
		}
		if (spec.conv == 'b' && spec.width > 0 && spec.width != 1 && spec.width != 2 && spec.width != 4 &&
		    spec.width != 8) {
			*why = "%b writes 1, 2, 4 or 8 bytes: its width must be one of those";
			return NULL;
		}
		if (!djp_format_conv_known(spec.conv) && spec.conv != 'b' && spec.conv != 'm' && spec.conv != 'M') {
			*why = spec.conv ? "unsupported conversion (use %d %i %u %x %X %o %c %s %p %b %m %M %%)"
					 : "incomplete conversion at end";
			return NULL;
		}
		s.flags = spec.flags;
		s.width = spec.width;
		s.prec = spec.prec;
		s.conv = spec.conv;
		specs[n++] = s;
		nargs++;
	}
	struct print_fmt *pf = pool_alloc(sc, sizeof(*pf));
	pf->spec = pool_alloc(sc, sizeof(*pf->spec) * (size_t)(n + 1));
	memcpy(pf->spec, specs, sizeof(*specs) * (size_t)n);
	pf->nspecs = n;
	pf->nargs = nargs;
	return pf;
}
