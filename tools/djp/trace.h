/*
 * `djp trace`: the pieces of the command and what they share.
 *
 *   trace.c         options, the main loop, the end
 *   trace_output.c  events to the output (output/), the summary
 *   ktrace.c        -k: the kernel's markers (source/kernel.c)
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

#include "output/output.h"
#include "session.h"

struct trace {
	/* options (the session's own are in s) */
	bool kernel; /* -k: the kernel's markers (ktrace.c) */
	bool kprobe; /* --kprobe: with -k, arm with register_kprobe() */
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
	struct djp_output output; /* how: text or JSON, onto out */
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

/* ktrace.c: -k, the options parsed; the exit status. */
int ktrace_run(struct trace *t);

/* trace_output.c */
/* Drain the rings and print what came; returns the number of events.  A
 * child that had exited before a drain that found nothing is released:
 * its summary kept as text, the rest freed. */
long trace_drain(struct trace *t); /* every process's */
long trace_drain_session(struct trace *t, struct session *s);
/* Final counts from the rings, then the summary on stderr. */
void trace_summary(struct trace *t, const char *why);

#endif
