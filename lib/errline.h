/*
 * One-line errors: "WHAT: problem" into a caller's buffer, which is how
 * every reader of the library (markers, functions, parameters, call-frame
 * tables) says what went wrong (errline.c).
 */
#ifndef DJP_LIB_ERRLINE_H
#define DJP_LIB_ERRLINE_H

#include <stddef.h>

/* Write "WHAT: " and the formatted problem into err (errsz bytes, when
 * err is not NULL; "(memory)" for a NULL what), with any control
 * character made '?' (names come from files), and return ret. */
int djp_errline(char *err, size_t errsz, int ret, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

#endif
