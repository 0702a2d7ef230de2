/*
 * C escapes for text output: one event, one line, and nothing a terminal
 * would act on.
 */
#ifndef DJP_LIB_ESCAPE_H
#define DJP_LIB_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>

/* Copy src into dst (dsz bytes, always terminated, cut short if need be)
 * with C escapes for backslash, control characters (\n, \t, \r, \xHH),
 * DEL and the C1 controls in UTF-8 (\xc2\xHH); with quote, for '"' too.
 * Other bytes, UTF-8 text included, are copied.  Returns dst. */
char *djp_escape_c(char *dst, size_t dsz, const char *src, bool quote);

#endif
