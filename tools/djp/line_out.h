/* An output stream whose writes reach their file descriptor in whole lines
 * (line_out.c says why). */
#ifndef DJP_LINE_OUT_H
#define DJP_LINE_OUT_H

#include <stdio.h>

/* A fully buffered stream onto fd; closing it closes fd only when own_fd.
 * NULL (errno set) when out of memory. */
FILE *line_out_open(int fd, int own_fd);

/* fflush(), and then the line begun but not ended, as fflush() promises:
 * a script's printf("...") without a newline shows when flushed.  0, or
 * EOF with errno set and the stream's error flag. */
int line_out_flush(FILE *f);

/* The descriptor the stream writes to (fileno() of any other stream). */
int line_out_fd(FILE *f);

#endif
