/*
 * `djp trace`: the pieces of the command and what they share.
 *
 *   trace.c         options, the main loop, the end
 *   trace_target.c  getting a session: launch a command (-c) or attach (-x)
 *   trace_client.c  requests to the agent (lib/proto.h)
 *   trace_output.c  the marker table, event lines, the summary
 */
#ifndef DJP_TOOLS_TRACE_H
#define DJP_TOOLS_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <sys/types.h>

#include "lib/format.h"
#include "lib/marker_log.h"
#include "lib/proto.h"
#include "lib/ring.h"

#define TRACE_REPLY_TIMEOUT_MS 5000

struct trace_marker {
	bool known;
	uint8_t nargs;
	uint64_t addr;
	char *name, *format, *object;
	struct djp_fmt *fmt; /* NULL when the format does not parse */
	uint64_t events, lost;
};

struct trace_thread {
	uint32_t tid;
	uint64_t events, lost;
};

struct trace {
	/* options */
	const char *cmd;
	pid_t attach_pid;
	bool json, snapshot;
	const char *outfile;
	double duration;
	size_t buffer_size;
	char **patterns;
	int npatterns;

	/* the session */
	int fd;
	bool alive;	  /* the agent is still there */
	pid_t pid;	  /* the traced process */
	char program[1024];
	pid_t child;	  /* -c: the command we started, until reaped */
	int child_status; /* its wait status once reaped */
	bool child_done;
	char errmsg[600]; /* the agent's last ERROR text */
	int errcode;
	uint8_t *buf;	  /* one payload */

	/* events */
	FILE *out;
	struct djp_consumer *cons;
	int ring_fd;
	struct trace_marker *markers; /* indexed by marker id */
	uint32_t nmarkers;	      /* ids below this have a slot */
	uint32_t next_id;	      /* LIST from here for new ids */
	struct djp_mlog_reader mlog;  /* markers of objects loaded later */
	bool mlog_bad_said;
	bool listed_this_drain;
	struct trace_thread *threads;
	size_t nthreads, cap_threads;
	uint64_t events, lost_noslot, misses, lost_unattributed;
	bool stats_ok;
	uint8_t *arena;
	size_t arena_len, arena_cap;
	struct { uint64_t ts; size_t off; uint32_t tid; } *batch;
	size_t nbatch, cap_batch;
};

/* trace.c: the signal that asked the trace to stop, or 0 */
extern volatile sig_atomic_t djp_trace_stop_signal;

/* trace_target.c */
int trace_launch(struct trace *t);
int trace_attach(struct trace *t);
/* Reap the command if it has exited (wait: block up to timeout_ms, -1
 * without limit).  True once it is reaped. */
bool trace_reap(struct trace *t, int timeout_ms);
/* End the command: SIGTERM, then SIGKILL after two seconds. */
void trace_stop_child(struct trace *t);
const char *trace_preload_path(void);

/* trace_client.c: each returns 0 or -errno; an ERROR reply's text is in
 * t->errmsg. */
int trace_hello(struct trace *t);
/* The rings (RING), then the marker log (MARKER_LOG). */
int trace_ring(struct trace *t);
int trace_list(struct trace *t);
/* Add what the marker log holds that the table does not: works after the
 * process is gone.  0 or -EPROTO (said once on stderr). */
int trace_marker_log_read(struct trace *t);
/* flags: DJP_CONNECT_* (lib/proto.h) */
int trace_connect(struct trace *t, const char *pattern, unsigned flags, unsigned *nsites);
int trace_start(struct trace *t);
int trace_stats(struct trace *t);
int trace_bye(struct trace *t);

/* trace_output.c */
int trace_marker_add(struct trace *t, uint32_t id, uint64_t addr, uint8_t nargs, const char *name,
		     const char *format, const char *object);
/* Marker `id`, learnt from the marker log or, once per drain while the
 * agent lives, from LIST if it is new; NULL when nobody can name it. */
struct trace_marker *trace_marker_of(struct trace *t, uint32_t id);
/* Drain the ring and print what came; returns the number of events. */
long trace_drain(struct trace *t);
/* Final counts from the ring, then the summary on stderr. */
void trace_summary(struct trace *t, const char *why);
void trace_output_free(struct trace *t);

#endif
