/*
 * Where `djp trace` puts its events: one small interface, an
 * implementation a file (text.c, json.c, ctf.c), chosen by name (-f FORMAT).
 *
 * A consumer opens an output over a stream, calls begin() once, event()
 * for each event in the order the source delivered it, and end() once;
 * the events are the source's own (source/source.h), decoded and named,
 * so an output never asks anything of the target: it formats and writes.
 * A new format is a new file and a line in output.c's table; no consumer
 * changes.  Formats that draw time (perfetto.c, html.c) also want the
 * losses as they are found (lost()), and the pairs of events that make a
 * slice (pairs.h).
 */
#ifndef DJP_OUTPUT_OUTPUT_H
#define DJP_OUTPUT_OUTPUT_H

#include <stdbool.h>
#include <stdio.h>

#include "lib/ring.h"
#include "tools/djp/source/source.h"

struct djp_output;

/* --slice START,END[:KEY]: a slice from each START marker to its END, on
 * the same thread (nested as calls are), or with KEY by the value of the
 * field KEY (any thread, overlapping). */
struct djp_slice_pair {
	const char *start, *end, *key; /* key NULL: by thread */
};

struct djp_output_ops {
	const char *name; /* as -f names it: "text", "json" */
	/* Before the first event; may be NULL. */
	void (*begin)(struct djp_output *o);
	/* One event under `name`, its arguments rendered with fmt (NULL or
	 * no fields: argN=, in hex); ev->ts_ns on CLOCK_MONOTONIC, ev->cpu < 0
	 * when not known.  ev->desc is not read (djp_output_event passes
	 * its label and format). */
	void (*event)(struct djp_output *o, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt);
	/* n events of marker `name` (NULL: of none known) that process pid's
	 * rings dropped, found at ts_ns (the drain after they were dropped);
	 * may be NULL: the summary says them. */
	void (*lost)(struct djp_output *o, uint64_t ts_ns, int32_t pid, const char *name, uint64_t n);
	/* After the last event (a file format's trailer); may be NULL. */
	void (*end)(struct djp_output *o);
	/* A format that writes a directory, not a stream (CTF): -o names it,
	 * and open_dir makes it before the target is touched; 0, or -1 with
	 * one line in err.  NULL: the format writes onto `out`. */
	int (*open_dir)(struct djp_output *o, const char *path, char *err, size_t errsz);
	/* After the last event, before end(): n events of thread tid of
	 * process pid were lost (tid -1: of no one thread), as the summary
	 * counted them; may be NULL. */
	void (*lost_thread)(struct djp_output *o, int32_t pid, int32_t tid, uint64_t n);
	/* Free what open_dir made; may be NULL. */
	void (*close)(struct djp_output *o);
};

struct djp_output {
	const struct djp_output_ops *ops;
	FILE *out; /* NULL for a directory format */
	/* set before begin(): the marker pairs that make slices, and the
	 * trace's patterns (a function whose return one asks for makes a
	 * slice of each call) */
	const struct djp_slice_pair *slices;
	unsigned nslices;
	char *const *patterns;
	unsigned npatterns;
	void *priv;  /* the implementation's own, from begin() (or open_dir()) on */
	bool failed; /* a directory format could not write (said on stderr) */
};

/* The output named `name` over out; false when there is none of that name. */
bool djp_output_init(struct djp_output *o, const char *name, FILE *out);

static inline void djp_output_begin(struct djp_output *o)
{
	if (o->ops->begin)
		o->ops->begin(o);
}

static inline void djp_output_end(struct djp_output *o)
{
	if (o->ops->end)
		o->ops->end(o);
}

/* An event under its descriptor's label (or name) and format. */
void djp_output_event(struct djp_output *o, const struct djp_ev *ev);

/* For implementations: the event's strings, with "..." after those that
 * were cut (cut[i] is the room for strs[i]). */
void djp_output_strs(const struct djp_ev *ev, const char *strs[DJP_EV_MAX_ARGS],
		     char cut[][DJP_RING_STR_BOUND_MAX + 4]);

/* For implementations: argument i of ev as the JSON output has it, into
 * buf; its key (the format's field name, or argN) into key, and whether
 * the value is a JSON number (a plain decimal conversion). */
const char *djp_output_arg(char *buf, size_t sz, const struct djp_ev *ev, const struct djp_fmt *fmt, unsigned i,
			   const char *const strs[DJP_EV_MAX_ARGS], char key[DJP_FMT_NAME_MAX + 8], bool *number);
/* ev's arguments as a JSON object, {"key":value,...}. */
void djp_output_json_args(FILE *out, const struct djp_ev *ev, const struct djp_fmt *fmt);

static inline void djp_output_lost(struct djp_output *o, uint64_t ts_ns, int32_t pid, const char *name, uint64_t n)
{
	if (o->ops->lost)
		o->ops->lost(o, ts_ns, pid, name, n);
}

extern const struct djp_output_ops djp_output_text, djp_output_json, djp_output_perfetto, djp_output_html,
	djp_output_ctf;

#endif
