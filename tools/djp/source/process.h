/*
 * The process source of `djp trace` (process.c) and its summary
 * (process_summary.c): what the two files share.
 */
#ifndef DJP_SOURCE_PROCESS_H
#define DJP_SOURCE_PROCESS_H

#include <stdio.h>

#include "source.h"
#include "tools/djp/session/session.h"

/* The descriptors of one process's markers, by the agent's id, made as
 * their first events come (session.c names the marker). */
struct proc_descs {
	struct session *s;
	struct djp_ev_desc **v;
	uint32_t n;
	/* lost_new: the drops of each marker said so far, by id */
	uint64_t *lost_told;
	uint32_t nlost_told;
};

struct proc {
	struct djp_source src;
	/* the patterns armed (arm's globs): their strings are the caller's */
	const char **patterns;
	char **formats;	    /* PATTERN=FORMAT: the format, else NULL */
	char *const *fmt_of; /* the formats open was given, by glob */
	uint32_t *str_args; /* the %s arguments of formats[i] */
	bool *matched;	    /* patterns[i] matched a site in some process */
	int npatterns;
	bool int3;
	bool started; /* -c: START sent, the command runs its main */
	/* -a: every process of the PATHs (none: with a matching marker),
	 * each a session among the kids; the main session is unused */
	bool all;
	const char *const *all_paths;
	unsigned nall_paths;

	struct session s;
	/* children of fork and a -c wrapper's program, each a session of
	 * its own */
	struct session_kids kids;
	/* the summaries of children released once they had exited and been
	 * drained (their descriptors and rings let go), in that order */
	FILE *released;
	char *released_text;
	size_t released_len;
	/* and their losses by thread (pid, tid -1 for no one thread) */
	struct proc_lost {
		int32_t pid, tid;
		uint64_t n;
	} *released_lost;
	size_t nreleased_lost, cap_released_lost;
	bool main_exec_traced; /* -x: the process exec'd and is traced again */
	bool dialled;	       /* a process is dialling in: accept it */
	volatile int *snapshot_asked; /* --snapshot: SIGUSR1 came */
	int64_t mono_to_real; /* the rings' CLOCK_MONOTONIC to CLOCK_REALTIME, ns */

	/* next()'s place in a round: one drain of every process in turn */
	bool in_round, after_round, stopped, last_round_done;
	bool counting;	    /* the round's events pace the next wait (not --snapshot) */
	size_t cur;	    /* 0: the main session, k + 1: kid k */
	size_t bi;	    /* the next event of cur's batch */
	bool drain_due;	    /* cur is not drained yet this round */
	bool cur_gone;	    /* cur's agent was gone before its drain */
	long cur_total, round_total;
	int idle_ms;
	struct proc_descs *tabs, *tab; /* per process; tab: cur's */
	size_t ntabs;
	struct djp_ev_desc unknown; /* an event's marker nobody can name */
	char unknown_name[32];
};

/* process_summary.c */
/* Everything the summary says of one process, or of a child, on f. */
void proc_summary_of(FILE *f, struct session *s);
void proc_kid_summary(FILE *f, struct session *k);
/* A child that has exited and whose rings are read to the end: its
 * summary kept as text, everything else let go.  false (kept as it is)
 * when there is no memory for the text. */
bool proc_release_kid(struct proc *p, struct session *k);
/* The summary of every process, the released ones in their place. */
void proc_report(struct djp_source *src, FILE *f);
/* After proc_report: every process's losses by thread. */
void proc_lost_threads(struct djp_source *src, djp_src_lost_thread_fn fn, void *ctx);

#endif
