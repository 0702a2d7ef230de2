/*
 * `djp trace` of processes: their events to the output, and the summary.
 *
 * The session (session.h) drains the rings, in time order per drain, and
 * names each event's marker; this file hands the events to the output
 * (output/output.h: text or JSON).  Timestamps are CLOCK_MONOTONIC (the
 * epoch is the boot, as for perf and ftrace).  An event whose marker
 * nobody can name goes out as "marker#ID".
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/escape.h"
#include "trace.h"

/* ---- one event ------------------------------------------------------------- */

/* The event decoded as the sources deliver them (source/source.h), for
 * the output: named here, where the session's marker table is, so that
 * the output does no I/O. */
static void print_event(struct trace *t, struct session *s, const struct djp_event *e, uint32_t tid)
{
	const struct djp_clock_params *cp = djp_consumer_clock(s->cons);
	const struct session_marker *m = session_marker_of(s, e->marker_id);
	struct djp_ev ev;
	char name[32];

	if (!m)
		snprintf(name, sizeof(name), "marker#%u", e->marker_id);
	ev.ts_ns = djp_clock_to_ns(cp, e->timestamp);
	ev.pid = (int32_t)s->pid;
	ev.tid = (int32_t)tid;
	ev.cpu = -1;
	ev.nargs = e->nargs < DJP_EV_MAX_ARGS ? e->nargs : DJP_EV_MAX_ARGS;
	for (unsigned i = 0; i < ev.nargs; i++) {
		uint64_t flags = 0;
		ev.args[i] = (int64_t)e->args[i];
		ev.strs[i] = djp_event_str(e, i, NULL, &flags);
		ev.str_cut[i] = flags & DJP_STR_TRUNCATED;
	}
	t->output.ops->event(&t->output, &ev, m ? m->name : name, m ? m->fmt : NULL);
}

/* ---- a drain --------------------------------------------------------------- */

long trace_drain_session(struct trace *t, struct session *s)
{
	long total = 0, n;

	do {
		n = session_drain(s);
		if (n <= 0)
			break;
		total += n;
		for (size_t i = 0; i < s->nbatch; i++)
			print_event(t, s, session_event(s, i), s->batch[i].tid);
	} while (s->more);
	return total;
}

static void summary_of(FILE *f, struct session *s);
static void kid_summary(FILE *f, struct session *k);

/* A child that has exited and whose rings are read to the end: its
 * summary as text, and everything else (socket, ring and marker log
 * memfds and mappings, tables) let go, so that a fork storm costs the tool
 * a line of summary per child, not two descriptors and 100 KB.  false
 * (kept as it is) when there is no memory for the text. */
static bool release_kid(struct trace *t, struct session *k)
{
	if (!t->released && !(t->released = open_memstream(&t->released_text, &t->released_len)))
		return false;
	kid_summary(t->released, k);
	if (fflush(t->released))
		return false;
	session_discard(k);
	return true;
}

long trace_drain(struct trace *t)
{
	long total = trace_drain_session(t, &t->s);
	for (size_t i = 0; i < t->kids.n;) {
		struct session *k = t->kids.v[i];
		/* gone before this drain: the drain saw all it wrote */
		bool gone = !k->alive;
		long n = trace_drain_session(t, k);
		total += n;
		if (gone && !n && session_process_exited(k->pid) && release_kid(t, k))
			session_kids_remove(&t->kids, i);
		else
			i++;
	}
	if (total)
		fflush(t->out); /* once a round, not once a process */
	return total;
}

/* ---- the summary ------------------------------------------------------------ */

static void summary_of(FILE *f, struct session *s)
{
	uint64_t lost = session_count_lost(s);
	char prog[4 * sizeof(s->program)];

	/* the program's path and the markers' names come from the target:
	 * escaped, as on the event lines */
	fprintf(f, "djp trace: process %d (%s): %" PRIu64 " events, %" PRIu64 " lost", (int)s->pid,
		djp_escape_c(prog, sizeof(prog), s->program[0] ? s->program : "?", false), s->events, lost);
	if (s->stats_ok)
		fprintf(f, ", %" PRIu64 " missed (hit inside a handler, or while its site changed trampolines)",
			s->misses);
	if (s->end_note)
		fprintf(f, "; %s", s->end_note);
	fputc('\n', f);
	if (s->lost_noslot)
		fprintf(f, "djp trace: %" PRIu64 " lost because no ring slot was free\n", s->lost_noslot);
	session_report_arm_errors(s, "djp trace");
	/* the header says what the columns count */
	fprintf(f, "  %-32s %12s %12s  %s\n", "MARKER", "EVENTS", "LOST",
		"(EVENTS recorded and read; LOST dropped: a full ring, overwritten, or a probe in a probe)");
	for (uint32_t id = 0; id < s->nmarkers; id++) {
		const struct session_marker *m = &s->markers[id];
		char name[2048];
		if (!m->events && !m->lost)
			continue;
		if (!m->known)
			snprintf(name, sizeof(name), "marker#%u", id);
		else
			djp_escape_c(name, sizeof(name), m->name, false);
		fprintf(f, "  %-32s %12" PRIu64 " %12" PRIu64 "\n", name, m->events, m->lost);
	}
	if (s->lost_unattributed)
		fprintf(f, "  %-32s %12s %12" PRIu64 "\n", "(other)", "-", s->lost_unattributed);
	fprintf(f, "  %-32s %12s %12s  %s\n", "THREAD", "EVENTS", "LOST", "(the same, by thread id)");
	for (size_t i = 0; i < s->nthreads; i++)
		fprintf(f, "  %-32u %12" PRIu64 " %12" PRIu64 "\n", s->threads[i].tid, s->threads[i].events,
			s->threads[i].lost);
	if (!s->stats_ok && !s->tables && lost)
		fprintf(f, "djp trace: lost events per marker unknown (the agent was gone before the end)\n");
}

/* A child's block.  One whose process was gone before the tool's last
 * request to it noticed (killed between a poll and the end's counts) lost
 * that request, not its end: it ended during the trace all the same. */
static void kid_summary(FILE *f, struct session *k)
{
	if (!k->end_note && !k->alive && session_process_exited(k->pid))
		k->end_note = "ended during the trace";
	summary_of(f, k);
}

void trace_summary(struct trace *t, const char *why)
{
	fprintf(stderr, "djp trace: %s\n", why);
	summary_of(stderr, &t->s);
	if (t->released_len)
		fwrite(t->released_text, 1, t->released_len, stderr);
	for (size_t i = 0; i < t->kids.n; i++)
		kid_summary(stderr, t->kids.v[i]);
}
