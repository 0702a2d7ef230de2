/*
 * One-line errors (errline.h).  The readers return -errno and fill a
 * buffer with one line naming the thing and the problem; the tool prints
 * it as it is.  The text may carry names read from a file, so any control
 * character in it is replaced: a hostile file cannot break the line or
 * write escape sequences to a terminal.
 */
#include <stdarg.h>
#include <stdio.h>

#include "lib/errline.h"

int djp_errline(char *err, size_t errsz, int ret, const char *what, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!err || !errsz)
		return ret;
	n = snprintf(err, errsz, "%s: ", what ? what : "(memory)");
	if (n >= 0 && (size_t)n < errsz) {
		va_start(ap, fmt);
		vsnprintf(err + n, errsz - (size_t)n, fmt, ap);
		va_end(ap);
	}
	for (char *c = err; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return ret;
}
