/*
 * Slices from pairs of events, for the outputs that draw time (perfetto.c,
 * html.c): a function's entry and its return (func:NAME and
 * func:NAME%return), and the marker pairs of --slice (output.h).
 * pairs.c says how they are matched.
 */
#ifndef DJP_OUTPUT_PAIRS_H
#define DJP_OUTPUT_PAIRS_H

#include "output.h"

struct djp_pairs;

struct djp_pairs_ops {
	/* ev opens a slice named `slice` (ev's own name); key: the value of
	 * its pair's KEY field, NULL for a slice of its thread. */
	void (*open)(void *ctx, const struct djp_ev *ev, const char *slice, const struct djp_fmt *fmt,
		     const char *key);
	/* The slice `slice` of pid/tid (key: of pid, opened on tid) that
	 * began at start_ns ends at ts_ns: by ev, its END (or return), or
	 * (ev NULL) forced: an END further down its thread's stack came
	 * first, a KEY came again, or the trace ended. */
	void (*close)(void *ctx, const struct djp_ev *ev, const struct djp_fmt *fmt, uint64_t ts_ns, int32_t pid,
		      int32_t tid, const char *slice, const char *key, uint64_t start_ns);
	/* ev is no part of a slice: a marker, an entry nobody pairs, an END
	 * whose START was not seen. */
	void (*alone)(void *ctx, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt);
};

/* The pairs of o (o->slices, and every function's entry and return); NULL
 * when memory is short. */
struct djp_pairs *djp_pairs_new(const struct djp_output *o, const struct djp_pairs_ops *ops, void *ctx);
/* ev, named `name`: open, close or alone, through the ops. */
void djp_pairs_event(struct djp_pairs *p, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt);
/* The trace ends at ts_ns: every slice still open is closed there
 * (forced), innermost first; then p is freed. */
void djp_pairs_end(struct djp_pairs *p, uint64_t ts_ns);

#endif
