/*
 * The CTF output's trace description (ctf_metadata.c): the event classes
 * made as markers come, and the TSDL metadata that says them, with a
 * comment per class that lets djp read its own traces back (source/ctf.c).
 */
#ifndef DJP_OUTPUT_CTF_H
#define DJP_OUTPUT_CTF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/format.h"

struct ctf_class {
	char *label; /* the event's name, as text and JSON print it */
	struct djp_fmt fmt;
	unsigned nargs;
	bool wide; /* every integer 64 bits (ctf_layout.h) */
	uint64_t hash;
};

struct ctf_trace {
	uint8_t uuid[16];
	/* CLOCK_REALTIME - CLOCK_MONOTONIC when the trace began */
	int64_t offset_s, offset_ns;
	struct ctf_class *classes;
	unsigned nclasses, cap_classes;
};

/* A new trace: its uuid and clock offset.  0, or -1 with a line in err. */
int ctf_trace_init(struct ctf_trace *t, char *err, size_t errsz);
void ctf_trace_free(struct ctf_trace *t);

/* The class of events named `label` with `nargs` arguments converted as
 * fmt says (wide: every integer 64 bits): an existing one that is the
 * same, or a new one.  Its id, or -1 out of memory. */
int ctf_trace_class(struct ctf_trace *t, const char *label, const struct djp_fmt *fmt, unsigned nargs, bool wide);

/* The metadata file in dirfd, whole (written aside, then renamed).  0, or
 * -1 with errno. */
int ctf_metadata_write(const struct ctf_trace *t, int dirfd);

/* Does the directory hold nothing? */
bool ctf_dir_empty(int dirfd);

/* The class comment's fields in hex (names may hold anything, even a
 * comment's end): ctf_hex writes s as 2 hex digits a byte, ctf_unhex
 * reads them back into a malloc'd string (NULL when malformed). */
void ctf_hex(FILE *f, const char *s);
char *ctf_unhex(const char *h, size_t n);

#endif
