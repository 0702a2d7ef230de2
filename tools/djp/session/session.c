/*
 * A session's marker table and its drain.
 *
 * An event carries a marker id, not a name.  The session keeps the agent's
 * marker table (LIST) in an array indexed by id, with each marker's format
 * parsed once (lib/format.h) into named fields.  Ids are handed out by the
 * engine in increasing order as objects are loaded, so an id the table does
 * not know belongs to an object loaded since (dlopen): it is read from the
 * marker log (lib/marker_log.c), which the agent wrote before it armed the
 * object and which outlives the process; failing that the agent is asked
 * for the ids above the highest known, once per drain.  An id still unknown
 * is left to the consumer (djp trace prints "marker#ID").
 *
 * A drain delivers one thread's events after another.  They are copied into
 * an arena and sorted by timestamp (tools/djp/source/order.c), so that a
 * consumer sees the events of one drain in time order across threads.
 * The arena is bounded: a drain
 * that reaches the bound stops there (s->more) and the consumer, having
 * used the batch, drains again.  Counts per thread and per marker are kept
 * here, as the events pass, for whichever summary the consumer prints.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tools/djp/grow.h"

#include "lib/marker_match.h"
#include "tools/djp/session/session.h"

#define DRAIN_ARENA_BOUND (64u << 20)

volatile sig_atomic_t session_stop_signal;

int session_init(struct session *s)
{
	s->fd = s->ring_fd = s->launch_fd = -1;
	s->buf = malloc(DJP_PROTO_MAX_PAYLOAD);
	return s->buf ? 0 : -ENOMEM;
}

/* What a marker of the table holds, let go: unknown again. */
static void marker_forget(struct session_marker *m)
{
	free(m->name);
	free(m->format);
	free(m->object);
	free(m->fmt);
	m->name = m->format = m->object = NULL;
	m->fmt = NULL;
	m->known = false;
}

void session_free(struct session *s)
{
	session_uprobes_forget(s);
	freeze_free(&s->frozen);
	if (s->fd >= 0)
		close(s->fd);
	if (s->cons)
		djp_consumer_close(s->cons);
	djp_tables_close(s->tables);
	djp_mlog_close(&s->mlog);
	if (s->ring_fd >= 0)
		close(s->ring_fd);
	if (s->launch_fd >= 0)
		close(s->launch_fd);
	s->launch_fd = -1;
	for (uint32_t i = 0; i < s->nmarkers; i++)
		marker_forget(&s->markers[i]);
	free(s->markers);
	free(s->threads);
	djp_order_free(&s->batch);
	free(s->buf);
	memset(s, 0, sizeof(*s));
	s->fd = s->ring_fd = -1;
}

/* ---- the marker table ------------------------------------------------------ */

int session_marker_add(struct session *s, uint32_t id, uint64_t addr, uint8_t nargs, const char *name,
		       const char *format, const char *object)
{
	struct session_marker *m;
	const char *why;

	if (id >= (1u << 20))
		return 0; /* not an id the engine would give; ignore it */
	if (id >= s->nmarkers) {
		uint32_t n = s->nmarkers ? s->nmarkers : 64;
		void *v;
		while (n <= id)
			n *= 2;
		v = realloc(s->markers, n * sizeof(*s->markers));
		if (!v)
			return -ENOMEM;
		s->markers = v;
		memset(s->markers + s->nmarkers, 0, (n - s->nmarkers) * sizeof(*s->markers));
		s->nmarkers = n;
	}
	if (id >= s->next_id)
		s->next_id = id + 1;
	m = &s->markers[id];
	/* known: the same again, or a function's site logged again once its
	 * arguments were read (a probe that reads them came after one that
	 * read none: kernel/points.c), which replaces it */
	if (m->known && nargs <= m->nargs)
		return 0;
	if (m->known)
		marker_forget(m);
	for (int i = 0; i < s->nfmt; i++) {
		size_t plen;
		const char *bare = djp_marker_split(name, &plen);
		if (s->fmt_formats[i] && djp_marker_match_n(s->fmt_patterns[i], name, plen, bare)) {
			format = s->fmt_formats[i]; /* the user's, for this marker */
			break;
		}
	}
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

struct session_marker *session_marker_of(struct session *s, uint32_t id)
{
	/* a site without arguments may have been logged again with them */
	if (id >= s->nmarkers || !s->markers[id].known || !s->markers[id].nargs)
		session_marker_log_read(s);
	if ((id >= s->nmarkers || !s->markers[id].known) && !s->listed_this_drain && s->alive) {
		s->listed_this_drain = true;
		session_list(s);
	}
	return id < s->nmarkers && s->markers[id].known ? &s->markers[id] : NULL;
}

/* ---- the drain ------------------------------------------------------------- */

static struct session_thread *thread_of(struct session *s, uint32_t tid)
{
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i].tid == tid)
			return &s->threads[i];
	if (!djp_grow((void **)&s->threads, &s->cap_threads, s->nthreads + 1, 16, sizeof(*s->threads)))
		return NULL;
	s->threads[s->nthreads] = (struct session_thread){ .tid = tid };
	return &s->threads[s->nthreads++];
}

bool session_batch_add(struct session *s, const struct djp_event *ev, uint64_t ts, uint32_t tid)
{
	struct session_thread *th;
	struct djp_event *rec;

	if (!(rec = djp_order_push(&s->batch, ts, tid, ev->size)))
		return false;
	s->events++;
	if ((th = thread_of(s, tid)))
		th->events++;
	session_marker_of(s, ev->marker_id); /* learn it while the agent lives */
	if (ev->marker_id < s->nmarkers)
		s->markers[ev->marker_id].events++; /* unknown ones too: marker#ID */
	memcpy(rec, ev, ev->size);
	rec->timestamp = ts;
	return true;
}

static int collect(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	struct session *s = arg;

	(void)slot;
	/* Out of memory: stop here; the event stays in the ring for later. */
	if (!session_batch_add(s, ev, ev->timestamp, tid))
		return 1;
	return s->batch.len > DRAIN_ARENA_BOUND;
}

static void slot_done(void *arg, const struct djp_slot_stats *st)
{
	struct session *s = arg;
	struct session_thread *th = thread_of(s, st->tid);
	if (th)
		th->lost += st->lost_full + st->lost_nested + st->overwritten;
}

long session_drain(struct session *s)
{
	static const struct djp_drain_ops ops = { collect, slot_done };
	long n;

	djp_order_reset(&s->batch);
	s->listed_this_drain = false;
	/* a busy process may never let the tool sleep in its poll, where
	 * it would hear the agent: every drain listens too */
	if (s->alive)
		session_serve(s);
	n = djp_consumer_drain(s->cons, &ops, s);
	if (n >= 0 && (s->nup_ids || s->len_up_stash)) {
		size_t before = s->batch.n;
		session_uprobes_drain(s);
		n += (long)(s->batch.n - before);
	}
	s->more = s->batch.len > DRAIN_ARENA_BOUND;
	djp_order_sort(&s->batch);
	return n;
}

uint64_t session_count_lost(struct session *s)
{
	uint64_t lost = 0;
	unsigned nslots = djp_consumer_slots_used(s->cons);

	/* Live slots: their counts so far (retired ones came by slot_done). */
	for (unsigned i = 0; i < nslots; i++) {
		struct djp_slot_stats st;
		struct session_thread *th;
		if (djp_consumer_slot_stats(s->cons, i, &st) || st.state == DJP_SLOT_FREE)
			continue;
		if ((th = thread_of(s, st.tid)))
			th->lost += st.lost_full + st.lost_nested + st.overwritten;
	}
	for (size_t i = 0; i < s->nthreads; i++)
		lost += s->threads[i].lost;
	s->lost_noslot = djp_consumer_lost_noslot(s->cons);
	lost += s->lost_noslot;
	/* Per marker: the recorder counts each event the ring drops where we
	 * read it after the process is gone too (TABLES); what no marker
	 * accounts for (snapshot mode's overwritten events) is "other". */
	if (s->tables) {
		uint64_t by_marker = 0;
		for (uint32_t id = 0; id < s->nmarkers; id++)
			by_marker += s->markers[id].lost = djp_tables_lost(s->tables, id);
		s->lost_unattributed = lost > by_marker ? lost - by_marker : 0;
	}
	return lost;
}

void session_report_arm_errors(const struct session *s, const char *who)
{
	if (s->stats_ok && s->arm_errors)
		fprintf(stderr,
			"%s: %" PRIu32 " arming error%s during the session, in objects loaded or unloaded or at "
			"sites another tool's breakpoint (a uprobe) took over (last: %s): some of their markers "
			"were not traced\n",
			who, s->arm_errors, s->arm_errors == 1 ? "" : "s", strerror(-s->arm_error_last));
}

bool session_agent_gone(struct session *s, int timeout_ms)
{
	struct pollfd p = { s->fd, POLLIN, 0 };
	if (!s->alive) {
		if (timeout_ms > 0)
			usleep((useconds_t)timeout_ms * 1000);
		return true;
	}
	if (poll(&p, 1, timeout_ms) > 0 && p.revents && session_serve(s)) {
		s->alive = false;
		return true;
	}
	return false;
}
