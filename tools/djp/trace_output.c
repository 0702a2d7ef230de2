/*
 * `djp trace`: turning ring events into lines, and the summary.
 *
 * An event carries a marker id, not a name.  The tool keeps the agent's
 * marker table (LIST) in an array indexed by id, with each marker's format
 * parsed once (lib/format.h) into named fields.  Ids are handed out by the
 * engine in increasing order as objects are loaded, so an id the table does
 * not know belongs to an object loaded since (dlopen): the tool reads it
 * from the marker log (lib/marker_log.c), which the agent wrote before it
 * armed the object and which outlives the process; failing that it asks the
 * agent for the ids above the highest it knows, once per drain, and prints
 * "marker#ID" for an id that is still unknown.
 *
 * A drain delivers one thread's events after another.  They are copied into
 * an arena, sorted by timestamp and then printed, so the lines of one drain
 * are in time order across threads.  Timestamps are CLOCK_MONOTONIC, printed
 * as seconds.nanoseconds (the epoch is the boot, as for perf and ftrace).
 *
 * Text: "SECONDS.NANOS TID NAME field=value ...", the fields as the marker's
 * format names and converts them (argN= where it names none).  JSON: one
 * object per line, {"ts_ns":N,"tid":N,"name":"...","args":{...}}, with the
 * decimal conversions as numbers and everything else as strings.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "lib/escape.h"
#include "trace.h"

int trace_marker_add(struct trace *t, uint32_t id, uint64_t addr, uint8_t nargs, const char *name,
		     const char *format, const char *object)
{
	struct trace_marker *m;
	const char *why;

	if (id >= (1u << 20))
		return 0; /* not an id the engine would give; ignore it */
	if (id >= t->nmarkers) {
		uint32_t n = t->nmarkers ? t->nmarkers : 64;
		void *v;
		while (n <= id)
			n *= 2;
		v = realloc(t->markers, n * sizeof(*t->markers));
		if (!v)
			return -ENOMEM;
		t->markers = v;
		memset(t->markers + t->nmarkers, 0, (n - t->nmarkers) * sizeof(*t->markers));
		t->nmarkers = n;
	}
	if (id >= t->next_id)
		t->next_id = id + 1;
	m = &t->markers[id];
	if (m->known)
		return 0;
	m->name = strdup(name);
	m->format = strdup(format);
	m->object = strdup(object);
	if (!m->name || !m->format || !m->object)
		return -ENOMEM;
	m->addr = addr;
	m->nargs = nargs;
	m->fmt = malloc(sizeof(*m->fmt));
	if (m->fmt && djp_format_parse(format, m->fmt, &why) < 0) {
		free(m->fmt);
		m->fmt = NULL;
	}
	m->known = true;
	return 0;
}

struct trace_marker *trace_marker_of(struct trace *t, uint32_t id)
{
	if (id >= t->nmarkers || !t->markers[id].known)
		trace_marker_log_read(t);
	if ((id >= t->nmarkers || !t->markers[id].known) && !t->listed_this_drain && t->alive) {
		t->listed_this_drain = true;
		trace_list(t);
	}
	return id < t->nmarkers && t->markers[id].known ? &t->markers[id] : NULL;
}

static struct trace_thread *thread_of(struct trace *t, uint32_t tid)
{
	for (size_t i = 0; i < t->nthreads; i++)
		if (t->threads[i].tid == tid)
			return &t->threads[i];
	if (t->nthreads == t->cap_threads) {
		size_t n = t->cap_threads ? 2 * t->cap_threads : 16;
		void *v = realloc(t->threads, n * sizeof(*t->threads));
		if (!v)
			return NULL;
		t->threads = v;
		t->cap_threads = n;
	}
	t->threads[t->nthreads] = (struct trace_thread){ .tid = tid };
	return &t->threads[t->nthreads++];
}

/* ---- one event ------------------------------------------------------------- */

static void print_event(struct trace *t, const struct djp_event *ev, uint32_t tid)
{
	const struct djp_clock_params *cp = djp_consumer_clock(t->cons);
	uint64_t ns = djp_clock_to_ns(cp, ev->timestamp);
	struct trace_marker *m = trace_marker_of(t, ev->marker_id);
	const struct djp_fmt *fmt = m ? m->fmt : NULL;
	const char *strs[DJP_RING_MAX_ARGS];
	int64_t args[DJP_RING_MAX_ARGS];
	char name[32], text[4096], safe[4 * sizeof(text)], safe_name[512];
	unsigned n = ev->nargs < DJP_RING_MAX_ARGS ? ev->nargs : DJP_RING_MAX_ARGS;

	if (ev->marker_id < t->nmarkers)
		t->markers[ev->marker_id].events++; /* unknown ones as marker#ID */
	if (!m)
		snprintf(name, sizeof(name), "marker#%u", ev->marker_id);
	for (unsigned i = 0; i < n; i++) {
		args[i] = (int64_t)ev->args[i];
		strs[i] = djp_event_str(ev, i, NULL, NULL);
	}
	if (!t->json) {
		/* One line per event, whatever the strings hold. */
		djp_format_render(text, sizeof(text), fmt, n, args, strs);
		djp_escape_c(safe, sizeof(safe), text, false);
		djp_escape_c(safe_name, sizeof(safe_name), m ? m->name : name, false);
		fprintf(t->out, "%" PRIu64 ".%09" PRIu64 " %u %s%s%s\n", ns / 1000000000u, ns % 1000000000u, tid,
			safe_name, safe[0] ? " " : "", safe);
		return;
	}
	fprintf(t->out, "{\"ts_ns\":%" PRIu64 ",\"tid\":%u,\"name\":", ns, tid);
	djp_json_string(t->out, m ? m->name : name);
	fputs(",\"args\":{", t->out);
	for (unsigned i = 0; i < n; i++) {
		struct djp_fmt one = { .nfields = 1 };
		const struct djp_fmt_field *f = fmt && i < fmt->nfields ? &fmt->field[i] : NULL;
		char key[48];
		const char *val;
		if (f)
			one.field[0] = *f;
		else
			one.field[0].conv = 'x', one.field[0].width = one.field[0].prec = -1;
		one.field[0].name[0] = 0;
		djp_format_render(text, sizeof(text), &one, 1, &args[i], &strs[i]);
		val = strchr(text, '=');
		val = val ? val + 1 : text;
		if (f && f->name[0])
			snprintf(key, sizeof(key), "%s", f->name);
		else
			snprintf(key, sizeof(key), "arg%u", i + 1);
		fputs(i ? "," : "", t->out);
		djp_json_string(t->out, key);
		fputc(':', t->out);
		if (f && (f->conv == 'd' || f->conv == 'i' || f->conv == 'u') && !(f->flags & DJP_FMT_ZERO) && f->width < 0)
			fputs(val, t->out);
		else
			djp_json_string(t->out, val);
	}
	fputs("}}\n", t->out);
}

/* ---- a drain --------------------------------------------------------------- */

static int collect(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	struct trace *t = arg;
	struct trace_thread *th;

	(void)slot;
	t->events++;
	if ((th = thread_of(t, tid)))
		th->events++;
	if (t->arena_len + ev->size > t->arena_cap) {
		size_t n = t->arena_cap ? t->arena_cap : 1 << 20;
		void *v;
		while (n < t->arena_len + ev->size)
			n *= 2;
		if (!(v = realloc(t->arena, n)))
			return 0;
		t->arena = v;
		t->arena_cap = n;
	}
	if (t->nbatch == t->cap_batch) {
		size_t n = t->cap_batch ? 2 * t->cap_batch : 4096;
		void *v = realloc(t->batch, n * sizeof(*t->batch));
		if (!v)
			return 0;
		t->batch = v;
		t->cap_batch = n;
	}
	memcpy(t->arena + t->arena_len, ev, ev->size);
	t->batch[t->nbatch].ts = ev->timestamp;
	t->batch[t->nbatch].off = t->arena_len;
	t->batch[t->nbatch].tid = tid;
	t->nbatch++;
	t->arena_len += (ev->size + 7) & ~7u;
	/* Print in bounded batches. */
	return t->arena_len > (64u << 20);
}

static void slot_done(void *arg, const struct djp_slot_stats *st)
{
	struct trace *t = arg;
	struct trace_thread *th = thread_of(t, st->tid);
	if (th)
		th->lost += st->lost_full + st->lost_nested + st->overwritten;
}

static int by_time(const void *a, const void *b)
{
	const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

long trace_drain(struct trace *t)
{
	static const struct djp_drain_ops ops = { collect, slot_done };
	long total = 0, n;

	t->listed_this_drain = false;
	do {
		t->nbatch = 0;
		t->arena_len = 0;
		n = djp_consumer_drain(t->cons, &ops, t);
		if (n <= 0)
			break;
		total += n;
		qsort(t->batch, t->nbatch, sizeof(*t->batch), by_time);
		for (size_t i = 0; i < t->nbatch; i++) {
			const struct djp_event *ev = (const struct djp_event *)(t->arena + t->batch[i].off);
			print_event(t, ev, t->batch[i].tid);
		}
	} while (t->arena_len > (64u << 20));
	fflush(t->out);
	return total;
}

/* ---- the summary ------------------------------------------------------------ */

void trace_summary(struct trace *t, const char *why)
{
	uint64_t lost = 0, lost_threads = 0;
	unsigned nslots = djp_consumer_nslots(t->cons);

	/* Live slots: their counts so far (retired ones came by slot_done). */
	for (unsigned i = 0; i < nslots; i++) {
		struct djp_slot_stats st;
		struct trace_thread *th;
		if (djp_consumer_slot_stats(t->cons, i, &st) || st.state == DJP_SLOT_FREE)
			continue;
		if ((th = thread_of(t, st.tid)))
			th->lost += st.lost_full + st.lost_nested + st.overwritten;
	}
	for (size_t i = 0; i < t->nthreads; i++)
		lost_threads += t->threads[i].lost;
	t->lost_noslot = djp_consumer_lost_noslot(t->cons);
	lost = lost_threads + t->lost_noslot;

	fprintf(stderr, "djp trace: %s\n", why);
	fprintf(stderr, "djp trace: process %d (%s): %" PRIu64 " events, %" PRIu64 " lost", (int)t->pid,
		t->program[0] ? t->program : "?", t->events, lost);
	if (t->stats_ok)
		fprintf(stderr, ", %" PRIu64 " missed (hit inside a handler)", t->misses);
	fputc('\n', stderr);
	if (t->lost_noslot)
		fprintf(stderr, "djp trace: %" PRIu64 " lost because no ring slot was free\n", t->lost_noslot);
	fprintf(stderr, "  %-32s %12s %12s\n", "MARKER", "EVENTS", "LOST");
	for (uint32_t id = 0; id < t->nmarkers; id++) {
		const struct trace_marker *m = &t->markers[id];
		char name[48];
		if (!m->events && !m->lost)
			continue;
		if (!m->known)
			snprintf(name, sizeof(name), "marker#%u", id);
		fprintf(stderr, "  %-32s %12" PRIu64 " %12" PRIu64 "\n", m->known ? m->name : name, m->events, m->lost);
	}
	if (t->lost_unattributed)
		fprintf(stderr, "  %-32s %12s %12" PRIu64 "\n", "(other)", "-", t->lost_unattributed);
	fprintf(stderr, "  %-32s %12s %12s\n", "THREAD", "EVENTS", "LOST");
	for (size_t i = 0; i < t->nthreads; i++)
		fprintf(stderr, "  %-32u %12" PRIu64 " %12" PRIu64 "\n", t->threads[i].tid, t->threads[i].events,
			t->threads[i].lost);
	if (!t->stats_ok && lost)
		fprintf(stderr, "djp trace: lost events per marker unknown (the agent was gone before the end)\n");
}

void trace_output_free(struct trace *t)
{
	for (uint32_t i = 0; i < t->nmarkers; i++) {
		free(t->markers[i].name);
		free(t->markers[i].format);
		free(t->markers[i].object);
		free(t->markers[i].fmt);
	}
	free(t->markers);
	free(t->threads);
	free(t->arena);
	free(t->batch);
}
