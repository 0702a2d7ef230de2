/* An output stream whose writes reach their file descriptor in whole lines
 * (line_out.c says why). */
#ifndef DJP_LINE_OUT_H
#define DJP_LINE_OUT_H

#include <stdio.h>

/* A fully buffered stream onto the file at `path`, created or emptied and
 * closed on exec (the traced command does not inherit it), or onto
 * standard output when path is NULL (left open by fclose).  NULL with
 * errno set when the file cannot be opened or memory is short. */
FILE *line_out_open(const char *path);

/* fflush(), and then the line begun but not ended, as fflush() promises:
 * a script's printf("...") without a newline shows when flushed.  0, or
 * EOF with errno set to what the first failed write said (then or
 * before). */
int line_out_flush(FILE *f);

/* The descriptor the stream writes to (fileno() of any other stream). */
int line_out_fd(FILE *f);

#endif
