/*
 * `djp trace`: its options (trace.c).  Events come from a source
 * (source/source.h: source/process.c for -c and -x, source/kernel.c for
 * -k; source/ctf.c for --from) and go to outputs (output/output.h: text,
 * JSON, Perfetto's JSON, CTF), and with --html to the summary page too.
 */
#ifndef DJP_TOOLS_TRACE_H
#define DJP_TOOLS_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "output/output.h"
#include "source/source.h"

#define TRACE_MAX_OUTS 5 /* four -f with their -o, and --html */

struct trace {
	/* options */
	bool kernel; /* -k: the kernel's markers (source/kernel.c) */
	bool kprobe; /* --kprobe: with -k, arm with register_kprobe() */
	struct djp_slice_pair *slices; /* --slice START,END[,KEY] */
	unsigned nslices;
	bool int3; /* --int3: breakpoints only, never jumps */
	const char *from; /* --from DIR: a CTF trace djp wrote, not a target */
	double duration;
	char **patterns;
	int npatterns;
	char **formats;	    /* PATTERN=FORMAT: the format, else NULL */
	uint32_t *str_args; /* the %s arguments of formats[i] */
	struct djp_source_opts o; /* -c, -x, -a, --snapshot, --buffer-size, --max-string-len */
	const char **paths;	  /* -a's PATHs */

	struct djp_source *src; /* where events come from: -k, --from choose */
	/* where they go: each -f FORMAT with the -o after it (none: text on
	 * standard output), and --html FILE's page */
	struct trace_out {
		const char *format; /* NULL: text */
		const char *path;   /* -o; NULL: standard output */
		FILE *out;	    /* a stream format's */
		struct djp_output output;
	} outs[TRACE_MAX_OUTS];
	unsigned nouts;
	const char *html; /* --html FILE: the summary page, besides the events */
};

#endif
