/*
 * C escapes for text output.
 *
 * Traced strings and marker names come from the target and from files
 * anyone can write: a newline in a %s value would forge a trace line, and
 * ESC or OSC sequences would reach the user's terminal.  Text output escapes
 * them as C does (JSON output has its own escapes).  Bytes of 0x80 and up
 * are copied, so UTF-8 text stays readable, except the two-byte UTF-8 forms
 * of the C1 controls (U+0080 to U+009F: CSI is U+009B), which some terminals
 * obey like ESC [.
 */
#include <stdio.h>

#include "lib/escape.h"

char *djp_escape_c(char *dst, size_t dsz, const char *src, bool quote)
{
	size_t n = 0;

	if (!dsz)
		return dst;
	for (const unsigned char *s = (const unsigned char *)src; *s; s++) {
		char tmp[16];
		const char *rep = tmp;
		unsigned char c = *s;

		if (c == '\\' || (quote && c == '"'))
			snprintf(tmp, sizeof(tmp), "\\%c", c);
		else if (c == '\n')
			rep = "\\n";
		else if (c == '\t')
			rep = "\\t";
		else if (c == '\r')
			rep = "\\r";
		else if (c < 0x20 || c == 0x7f)
			snprintf(tmp, sizeof(tmp), "\\x%02x", c);
		else if (c == 0xc2 && s[1] >= 0x80 && s[1] <= 0x9f)
			snprintf(tmp, sizeof(tmp), "\\xc2\\x%02x", *++s);
		else
			tmp[0] = (char)c, tmp[1] = 0;
		for (; *rep; rep++) {
			if (n + 1 >= dsz)
				goto out;
			dst[n++] = *rep;
		}
	}
out:
	dst[n] = 0;
	return dst;
}
