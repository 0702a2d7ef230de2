/*
 * `djp trace`: its options (trace.c).  Events come from a source
 * (source/source.h: source/process.c for -c and -x, source/kernel.c for
 * -k) and go to an output (output/output.h: text, JSON, Perfetto's JSON),
 * and with --html to the summary page too.
 */
#ifndef DJP_TOOLS_TRACE_H
#define DJP_TOOLS_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "output/output.h"
#include "source/source.h"

struct trace {
	/* options */
	bool kernel; /* -k: the kernel's markers (source/kernel.c) */
	bool kprobe; /* --kprobe: with -k, arm with register_kprobe() */
	const char *format; /* -f, --format, --json: an output's name; NULL: text */
	const char *html;   /* --html FILE: the summary page, besides the events */
	struct djp_slice_pair *slices; /* --slice START,END[,KEY] */
	unsigned nslices;
	bool int3; /* --int3: breakpoints only, never jumps */
	const char *outfile;
	double duration;
	char **patterns;
	int npatterns;
	char **formats;	    /* PATTERN=FORMAT: the format, else NULL */
	uint32_t *str_args; /* the %s arguments of formats[i] */
	struct djp_source_opts o; /* -c, -x, -a, --snapshot, --buffer-size, --max-string-len */
	const char **paths;	  /* -a's PATHs */

	struct djp_source *src;	  /* where events come from: -k chooses */
	FILE *out;		  /* where they go */
	struct djp_output output; /* how: text or JSON, onto out */
	FILE *html_out;		  /* --html's file, or NULL */
	struct djp_output html_output;
};

#endif
