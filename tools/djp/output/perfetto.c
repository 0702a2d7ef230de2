/*
 * The Perfetto output: Chrome's trace-event JSON (the JSON Object Format),
 * which ui.perfetto.dev and chrome://tracing open,
 *
 *   {"displayTimeUnit":"ns","traceEvents":[
 *   {"name":"process_name","ph":"M","pid":P,"tid":P,"args":{"name":"prog"}}
 *   ,{"name":"req_start","ph":"i","ts":2144009.416302,"pid":P,"tid":T,"s":"t","args":{"id":1}}
 *   ...
 *   ]}
 *
 * one event a line, whole (the comma that joins it to the one before
 * leads it): what a flush writes of the file is whole events.  Every thread is a track: its process and itself are
 * named by metadata events ("M") the first time one of its events comes
 * (the process by its program, the thread by its comm, read from /proc
 * then).  A marker is an instant event of its thread with its fields as
 * args; a function's entry and return, and a --slice pair, are a slice:
 * "B" and "E" on the thread's track, each with its own event's args, or
 * for a pair matched by KEY an async slice ("b" and "e", id the key's
 * value) of the process (pairs.c matches them).  Timestamps are
 * CLOCK_MONOTONIC in microseconds, to the nanosecond ("ts":2144009.416302).
 * Lost events are an instant event of the process ("lost events", args
 * the marker and how many) where the drain found them, and a counter
 * track of the process ("lost events", their running total) from 0.
 *
 * The trailer comes from end(), which `djp trace` reaches on ^C too: the
 * file is whole JSON however the trace stops, short of the tool being
 * killed.
 */
#include <inttypes.h>
#include <search.h>
#include <stdlib.h>
#include <string.h>

#include "output.h"
#include "pairs.h"
#include "tools/djp/json.h"

struct track {
	int32_t pid, tid;
	uint64_t lost; /* the process's (tid 0 entry): its running total */
};

struct perfetto {
	struct djp_pairs *pairs;
	uint64_t nevents, last_ns;
	void *tracks; /* struct track by (pid, tid), a tree (tsearch) */
};

static struct perfetto *pf_of(struct djp_output *o)
{
	return o->priv;
}

/* The opening of an event up to its ts, pid and tid; the caller ends it. */
static void head(struct djp_output *o, const char *ph, const char *name, uint64_t ts, int32_t pid, int32_t tid)
{
	struct perfetto *pf = pf_of(o);

	fputs(pf->nevents++ ? ",{\"name\":" : "{\"name\":", o->out);
	djp_json_string(o->out, name);
	fprintf(o->out, ",\"ph\":\"%s\",\"ts\":%" PRIu64 ".%03u,\"pid\":%d,\"tid\":%d", ph, ts / 1000,
		(unsigned)(ts % 1000), (int)pid, (int)tid);
	if (ts > pf->last_ns)
		pf->last_ns = ts;
}

static int track_cmp(const void *a, const void *b)
{
	const struct track *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* The track of pid and tid (tid 0: the process's own entry), made the
 * first time (*made); NULL when memory is short. */
static struct track *track_of(struct perfetto *pf, int32_t pid, int32_t tid, bool *made)
{
	struct track key = { .pid = pid, .tid = tid }, *t;
	void *found = tfind(&key, &pf->tracks, track_cmp);

	*made = false;
	if (found)
		return *(struct track **)found;
	if (!(t = malloc(sizeof(*t))))
		return NULL;
	*t = key;
	if (!tsearch(t, &pf->tracks, track_cmp)) {
		free(t);
		return NULL;
	}
	*made = true;
	return t;
}

/* /proc/PID/comm or /proc/PID/task/TID/comm into buf; false when gone. */
static bool comm_of(char *buf, size_t sz, int32_t pid, int32_t tid)
{
	char path[64];
	FILE *f;
	bool ok;

	if (tid)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	ok = fgets(buf, (int)sz, f) != NULL;
	fclose(f);
	buf[strcspn(buf, "\n")] = 0;
	return ok && buf[0];
}

static void metadata(struct djp_output *o, const char *what, int32_t pid, int32_t tid, const char *name)
{
	fprintf(o->out, "%s{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":",
		pf_of(o)->nevents++ ? "," : "", what, (int)pid, (int)tid);
	djp_json_string(o->out, name);
	fputs("}}\n", o->out);
}

/* A process's name: its execname (comm, from the source), else its comm
 * in /proc; "interrupts" for -k's hits outside any task. */
static const char *process_name(char *buf, size_t sz, int32_t pid, const char *comm)
{
	if (comm && comm[0])
		return comm;
	if (pid && comm_of(buf, sz, pid, 0))
		return buf;
	return pid ? "process" : "interrupts";
}

/* pid's own entry, its name and its lost counter (from 0) written the
 * first time. */
static struct track *process_track(struct djp_output *o, int32_t pid, const char *comm, uint64_t ts_ns)
{
	char buf[64];
	bool made;
	struct track *t = track_of(pf_of(o), pid, 0, &made);

	if (made) {
		metadata(o, "process_name", pid, pid, process_name(buf, sizeof(buf), pid, comm));
		head(o, "C", "lost events", ts_ns, pid, pid);
		fputs(",\"args\":{\"lost\":0}}\n", o->out);
	}
	return t;
}

/* The tracks of ev's process and thread named, the first time. */
static void name_tracks(struct djp_output *o, const struct djp_ev *ev)
{
	char thread[64];
	bool made;

	process_track(o, ev->pid, ev->comm, ev->ts_ns);
	if (!track_of(pf_of(o), ev->pid, ev->tid ? ev->tid : -1, &made) || !made)
		return;
	if (!ev->tid || !comm_of(thread, sizeof(thread), ev->pid, ev->tid)) { /* gone: its process's */
		char buf[64];
		snprintf(thread, sizeof(thread), "%s", process_name(buf, sizeof(buf), ev->pid, ev->comm));
	}
	metadata(o, "thread_name", ev->pid, ev->tid, thread);
}

static void args(struct djp_output *o, const struct djp_ev *ev, const struct djp_fmt *fmt)
{
	fputs(",\"args\":", o->out);
	if (ev)
		djp_output_json_args(o->out, ev, fmt);
	else /* forced: pairs.h */
		fputs("{\"djp\":\"closed without its end\"}", o->out);
	fputs("}\n", o->out);
}

static void id(struct djp_output *o, const char *key)
{
	fputs(",\"cat\":\"djp\",\"id\":", o->out);
	djp_json_string(o->out, key);
}

static void on_open(void *ctx, const struct djp_ev *ev, const char *slice, const struct djp_fmt *fmt, const char *key)
{
	struct djp_output *o = ctx;

	head(o, key ? "b" : "B", slice, ev->ts_ns, ev->pid, ev->tid);
	if (key)
		id(o, key);
	args(o, ev, fmt);
}

static void on_close(void *ctx, const struct djp_ev *ev, const struct djp_fmt *fmt, uint64_t ts_ns, int32_t pid,
		     int32_t tid, const char *slice, const char *key, uint64_t start_ns)
{
	struct djp_output *o = ctx;

	(void)start_ns;
	head(o, key ? "e" : "E", slice, ts_ns, pid, tid);
	if (key)
		id(o, key);
	args(o, ev, fmt);
}

static void on_alone(void *ctx, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt)
{
	struct djp_output *o = ctx;

	head(o, "i", name, ev->ts_ns, ev->pid, ev->tid);
	fputs(",\"s\":\"t\"", o->out);
	args(o, ev, fmt);
}

static const struct djp_pairs_ops pf_pairs = { on_open, on_close, on_alone };

static void pf_begin(struct djp_output *o)
{
	struct perfetto *pf = calloc(1, sizeof(*pf));

	if (!pf || !(pf->pairs = djp_pairs_new(o, &pf_pairs, o))) {
		fputs("djp: out of memory\n", stderr);
		exit(1);
	}
	o->priv = pf;
	fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", o->out);
}

static void pf_event(struct djp_output *o, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt)
{
	name_tracks(o, ev);
	djp_pairs_event(pf_of(o)->pairs, ev, name, fmt);
}

static void pf_lost(struct djp_output *o, uint64_t ts_ns, int32_t pid, const char *name, uint64_t n)
{
	struct track *t = process_track(o, pid, NULL, ts_ns);

	head(o, "i", "lost events", ts_ns, pid, pid);
	fputs(",\"s\":\"p\",\"args\":{\"marker\":", o->out);
	djp_json_string(o->out, name ? name : "(other)");
	fprintf(o->out, ",\"lost\":%" PRIu64 "}}\n", n);
	if (!t)
		return;
	t->lost += n;
	head(o, "C", "lost events", ts_ns, pid, pid);
	fprintf(o->out, ",\"args\":{\"lost\":%" PRIu64 "}}\n", t->lost);
}

static void pf_end(struct djp_output *o)
{
	struct perfetto *pf = pf_of(o);

	djp_pairs_end(pf->pairs, pf->last_ns);
	fputs("]}\n", o->out);
	tdestroy(pf->tracks, free);
	free(pf);
	o->priv = NULL;
}

const struct djp_output_ops djp_output_perfetto = {
	.name = "perfetto",
	.begin = pf_begin,
	.event = pf_event,
	.lost = pf_lost,
	.end = pf_end,
};
