/*
 * `djp trace`: the pieces of the command and what they share.
 *
 *   trace.c         options, the main loop, the end
 *   trace_output.c  event lines (text or JSON), the summary
 *
 * The session with the agent (launch or attach, requests, rings, the
 * marker table, the drain) is session.h's, shared with the live source of
 * probe scripts.
 */
#ifndef DJP_TOOLS_TRACE_H
#define DJP_TOOLS_TRACE_H

#include <stdbool.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>

#include "session.h"

struct trace {
	/* options (the session's own are in s) */
	bool json;
	bool int3; /* --int3: breakpoints only, never jumps */
	const char *outfile;
	double duration;
	char **patterns;
	int npatterns;
	char **formats;	   /* PATTERN=FORMAT: the format, else NULL */
	uint32_t *str_args; /* the %s arguments of formats[i] */
	bool *matched;	    /* patterns[i] matched a site in some process */

	FILE *out; /* where events go */
	struct session s;
	/* children of fork and a -c wrapper's program, each a session of
	 * its own */
	struct session_kids kids;
	/* the summaries of children released once they had exited and been
	 * drained (their descriptors and rings let go), in that order */
	FILE *released;
	char *released_text;
	size_t released_len;
	bool main_exec_traced; /* -x: the process exec'd and is traced again */
	bool dialled;		/* a process is dialling in: accept it */
};

/* trace_output.c */
/* One event line (text, or JSON when json), as djp trace prints it; cpu < 0:
 * not known (JSON leaves it out).  djp trace -k prints kernel events so. */
void trace_print_event(FILE *out, bool json, uint64_t ns, int pid, uint32_t tid, int cpu, const char *name,
		       const struct djp_fmt *fmt, unsigned n, const int64_t *args, const char *const *strs);
/* Drain the rings and print what came; returns the number of events.  A
 * child that had exited before a drain that found nothing is released:
 * its summary kept as text, the rest freed. */
long trace_drain(struct trace *t); /* every process's */
long trace_drain_session(struct trace *t, struct session *s);
/* Final counts from the rings, then the summary on stderr. */
void trace_summary(struct trace *t, const char *why);

#endif
