/*
 * The live event source: a probe script against a launched (-c) or running
 * (-x) process, through the same agent session as `djp trace`.
 *
 * open:  launch the command with the agent preloaded, or attach to the
 *        process's agent; HELLO, RING (the rings' memfd), LIST (the marker
 *        table).  Each site the agent lists becomes one descriptor, with
 *        ids 0..N-1.  Markers of objects loaded later (dlopen) get
 *        descriptors of their own when their first event is drained: the
 *        marker log (or LIST while the agent lives) names them, and the
 *        script engine binds them to its probes then (bind_late).
 * arm:   CONNECT the recorder once per distinct glob of the script's mark
 *        points, so that the engine in the target arms the matching
 *        markers of objects loaded later as well; events of descriptors
 *        the script did not bind are dropped.
 * start: START, which lets a -c command run its main.
 * next:  hand out the events of the last drain in time order; when they are
 *        used up, drain the rings again, and when nothing came, wait a few
 *        milliseconds (never past the deadline of the engine's next timer).
 *        The end is the command's exit (-c), the process's death or the
 *        session's end (-x); what was recorded until then is still drained.
 * close: STATS and BYE (the agent disarms before it answers), then end a
 *        command that is still running, as `djp trace -c` does.
 *
 * Listing (-l, -L) with only process("PATH") points and no process: the
 * markers are read from the files themselves, as stap lists the probe
 * points of a binary without running it; that source has no events.
 *
 * Timestamps are CLOCK_MONOTONIC in the rings; the script engine's clock is
 * CLOCK_REALTIME (gettimeofday_ns()), so events are shifted by the offset
 * between the two taken at open.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "engine.h"
#include "script.h"
#include "source.h"
#include "lib/markers.h"
#include "tools/djp/trace.h"

#define LIVE_POLL_MS 5

struct live_ev {
	uint64_t ts;
	size_t off;
	uint32_t tid;
};

struct live {
	struct djp_source src;
	struct trace t;
	struct djp_ev_desc *descs;	 /* those known at open */
	struct djp_ev_desc **desc_of_id; /* agent marker id -> descriptor, or NULL */
	uint32_t nids;
	bool *armed;			 /* per descriptor known at open */
	struct djp_ev_desc **late;	 /* descriptors of markers loaded later */
	size_t nlate, caplate;
	int64_t mono_to_real; /* realtime - monotonic, ns */
	char comm[64];
	uint8_t *arena;
	size_t arena_len, arena_cap;
	struct live_ev *q;
	size_t nq, capq, next;
	bool ended;
};

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Descriptor `id` of the agent's marker m. */
static void desc_from_marker(struct djp_ev_desc *d, uint32_t id, const struct trace_marker *m)
{
	const char *why;
	d->id = id;
	d->name = m->name;
	d->format = m->format;
	d->object = m->object;
	d->nargs = m->nargs;
	if (djp_format_parse(m->format, &d->fmt, &why) < 0)
		memset(&d->fmt, 0, sizeof(d->fmt));
}

/* A descriptor for a marker id first seen in an event: one of an object
 * loaded after open.  NULL when nobody can name it. */
static const struct djp_ev_desc *learn(struct live *l, uint32_t id)
{
	const struct trace_marker *m = trace_marker_of(&l->t, id);
	struct djp_ev_desc *d;

	if (!m)
		return NULL;
	if (id >= l->nids) {
		uint32_t n = l->nids ? l->nids : 64;
		void *v;
		while (n <= id)
			n *= 2;
		if (!(v = realloc(l->desc_of_id, n * sizeof(*l->desc_of_id))))
			return NULL;
		l->desc_of_id = v;
		memset(l->desc_of_id + l->nids, 0, (n - l->nids) * sizeof(*l->desc_of_id));
		l->nids = n;
	}
	if (l->nlate == l->caplate) {
		size_t n = l->caplate ? 2 * l->caplate : 16;
		void *v = realloc(l->late, n * sizeof(*l->late));
		if (!v)
			return NULL;
		l->late = v;
		l->caplate = n;
	}
	if (!(d = calloc(1, sizeof(*d))))
		return NULL;
	/* ids go on after those of open, in the order they are met */
	desc_from_marker(d, l->src.ndescs + (uint32_t)l->nlate, m);
	l->late[l->nlate++] = d;
	l->desc_of_id[id] = d;
	return d;
}

static int collect(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	struct live *l = arg;
	size_t need = (ev->size + 7u) & ~7u;
	const struct djp_ev_desc *d = ev->marker_id < l->nids && l->desc_of_id[ev->marker_id]
					      ? l->desc_of_id[ev->marker_id]
					      : learn(l, ev->marker_id);
	(void)slot;
	if (!d || (d->id < l->src.ndescs && !l->armed[d->id]))
		return 0;
	if (l->arena_len + need > l->arena_cap) {
		size_t n = l->arena_cap ? l->arena_cap : 1 << 20;
		void *v;
		while (n < l->arena_len + need)
			n *= 2;
		if (!(v = realloc(l->arena, n)))
			return 1;
		l->arena = v;
		l->arena_cap = n;
	}
	if (l->nq == l->capq) {
		size_t n = l->capq ? 2 * l->capq : 4096;
		void *v = realloc(l->q, n * sizeof(*l->q));
		if (!v)
			return 1;
		l->q = v;
		l->capq = n;
	}
	memcpy(l->arena + l->arena_len, ev, ev->size);
	l->q[l->nq++] = (struct live_ev){ ev->timestamp, l->arena_len, tid };
	l->arena_len += need;
	return l->arena_len > (64u << 20); /* hand out big drains in parts */
}

static void slot_done(void *arg, const struct djp_slot_stats *st)
{
	(void)arg;
	(void)st;
}

static int by_time(const void *a, const void *b)
{
	const struct live_ev *x = a, *y = b;
	return x->ts < y->ts ? -1 : x->ts > y->ts;
}

static long drain(struct live *l)
{
	static const struct djp_drain_ops ops = { collect, slot_done };
	long n;
	l->nq = l->next = l->arena_len = 0;
	l->t.listed_this_drain = false;
	n = djp_consumer_drain(l->t.cons, &ops, l);
	if (l->nq > 1)
		qsort(l->q, l->nq, sizeof(*l->q), by_time);
	return n;
}

static bool target_gone(struct live *l)
{
	struct trace *t = &l->t;
	if (t->cmd)
		return trace_reap(t, 0);
	if (kill(t->pid, 0) < 0 && errno == ESRCH)
		return true;
	if (t->alive) {
		struct pollfd p = { t->fd, POLLIN, 0 };
		if (poll(&p, 1, 0) > 0 && p.revents)
			t->alive = false;
	}
	return !t->alive;
}

static int live_next(struct djp_source *src, struct djp_ev *ev, uint64_t deadline)
{
	struct live *l = (struct live *)src;
	for (;;) {
		if (l->next < l->nq) {
			const struct live_ev *q = &l->q[l->next++];
			const struct djp_event *e = (const struct djp_event *)(l->arena + q->off);
			const struct djp_ev_desc *d = l->desc_of_id[e->marker_id];
			unsigned n = e->nargs < DJP_EV_MAX_ARGS ? e->nargs : DJP_EV_MAX_ARGS;
			ev->desc = d;
			ev->ts_ns = djp_clock_to_ns(djp_consumer_clock(l->t.cons), e->timestamp) + (uint64_t)l->mono_to_real;
			ev->pid = l->t.pid;
			ev->tid = (int32_t)q->tid;
			ev->comm = l->comm[0] ? l->comm : NULL;
			ev->nargs = n;
			for (unsigned i = 0; i < n; i++) {
				ev->args[i] = (int64_t)e->args[i];
				ev->strs[i] = djp_event_str(e, i, NULL, NULL);
			}
			return DJP_SRC_EVENT;
		}
		if (run_interrupted)
			return DJP_SRC_TIMEOUT;
		if (drain(l) > 0)
			continue;
		if (l->ended)
			return DJP_SRC_END;
		if (target_gone(l)) {
			/* One more drain for what was recorded before the end. */
			l->ended = true;
			continue;
		}
		uint64_t now = clock_ns(CLOCK_REALTIME);
		if (deadline != UINT64_MAX && now >= deadline)
			return DJP_SRC_TIMEOUT;
		uint64_t wait = (uint64_t)LIVE_POLL_MS * 1000000u;
		if (deadline != UINT64_MAX && deadline - now < wait)
			wait = deadline - now;
		usleep((useconds_t)(wait / 1000));
	}
}

static int live_arm(struct djp_source *src, const uint32_t *ids, unsigned n, const char *const *globs,
		    unsigned nglobs)
{
	struct live *l = (struct live *)src;
	for (unsigned i = 0; i < n; i++) {
		if (ids[i] >= l->src.ndescs)
			return -EINVAL;
		l->armed[ids[i]] = true;
	}
	for (unsigned i = 0; i < nglobs; i++) {
		unsigned nsites;
		/* pending: an optional point ('?') may match nothing yet */
		if (!trace_connect(&l->t, globs[i], DJP_CONNECT_PENDING, &nsites))
			continue;
		fprintf(stderr, "djp: %s: %s\n", globs[i], l->t.errmsg);
		return l->t.errcode ? l->t.errcode : -EIO;
	}
	return 0;
}

static int live_start(struct djp_source *src)
{
	struct live *l = (struct live *)src;
	if (l->t.cmd && trace_start(&l->t)) {
		fprintf(stderr, "djp: %s: %s\n", l->t.cmd, l->t.errmsg);
		return l->t.errcode ? l->t.errcode : -EIO;
	}
	return 0;
}

static uint64_t live_now(struct djp_source *src)
{
	(void)src;
	return clock_ns(CLOCK_REALTIME);
}

static void live_close(struct djp_source *src)
{
	struct live *l = (struct live *)src;
	struct trace *t = &l->t;
	if (t->alive) {
		trace_stats(t);
		trace_bye(t);
	}
	if (t->cmd && t->child > 0 && !t->child_done)
		trace_stop_child(t);
	if (t->fd >= 0)
		close(t->fd);
	if (t->cons)
		djp_consumer_close(t->cons);
	djp_mlog_close(&t->mlog);
	if (t->ring_fd >= 0)
		close(t->ring_fd);
	trace_output_free(t);
	free(t->buf);
	free(l->descs);
	for (size_t i = 0; i < l->nlate; i++)
		free(l->late[i]);
	free(l->late);
	free(l->desc_of_id);
	free(l->armed);
	free(l->arena);
	free(l->q);
	free(l);
}

static const struct djp_source_ops live_ops = { live_arm, live_start, live_next, live_now, live_close };

/* ---- the files of process("PATH") points, for listing ---- */

struct files {
	struct djp_source src;
	struct djp_ev_desc *descs;
	struct djp_marker_list **lists;
	char **objects;
	unsigned nlists;
};

static int files_arm(struct djp_source *src, const uint32_t *ids, unsigned n, const char *const *globs,
		     unsigned nglobs)
{
	(void)src, (void)ids, (void)n, (void)globs, (void)nglobs;
	return 0;
}

static int files_next(struct djp_source *src, struct djp_ev *ev, uint64_t deadline)
{
	(void)src, (void)ev, (void)deadline;
	return DJP_SRC_END;
}

static void files_close(struct djp_source *src)
{
	struct files *f = (struct files *)src;
	for (unsigned i = 0; i < f->nlists; i++) {
		djp_marker_list_free(f->lists[i]);
		free(f->objects[i]);
	}
	free(f->lists);
	free(f->objects);
	free(f->descs);
	free(f);
}

static const struct djp_source_ops files_ops = { files_arm, NULL, files_next, live_now, files_close };

static int files_open(const struct djp_source_opts *o, struct djp_source **out, char *err, size_t errsz)
{
	struct files *f = calloc(1, sizeof(*f));
	size_t total = 0, k = 0;
	if (!f || !(f->lists = calloc(o->npaths, sizeof(*f->lists))) ||
	    !(f->objects = calloc(o->npaths, sizeof(*f->objects)))) {
		if (f)
			files_close(&f->src);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < o->npaths; i++, f->nlists++) {
		int rc = djp_markers_read_file(o->paths[i], DJP_READ_NO_DWARF, &f->lists[i], err, errsz);
		if (rc < 0) {
			files_close(&f->src);
			return rc;
		}
		f->objects[i] = realpath(o->paths[i], NULL);
		if (!f->objects[i])
			f->objects[i] = strdup(o->paths[i]);
		total += f->lists[i]->count;
	}
	f->descs = calloc(total ? total : 1, sizeof(*f->descs));
	if (!f->descs) {
		files_close(&f->src);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < f->nlists; i++)
		for (size_t j = 0; j < f->lists[i]->count; j++, k++) {
			const struct djp_marker_info *m = &f->lists[i]->v[j];
			const char *why;
			struct djp_ev_desc *d = &f->descs[k];
			d->id = (uint32_t)k;
			d->name = m->name;
			d->format = m->format;
			d->object = f->objects[i];
			d->nargs = m->nargs;
			if (djp_format_parse(m->format, &d->fmt, &why) < 0)
				memset(&d->fmt, 0, sizeof(d->fmt));
		}
	f->src.ops = &files_ops;
	f->src.descs = f->descs;
	f->src.ndescs = (unsigned)total;
	*out = &f->src;
	return 0;
}

int djp_script_live_open(const struct djp_source_opts *o, struct djp_source **out, char *err, size_t errsz)
{
	struct live *l;
	struct trace *t;
	unsigned nd = 0;
	char path[64];
	FILE *f;

	if (!o->cmd && o->pid <= 0 && o->list_only && o->npaths)
		return files_open(o, out, err, errsz);
	if (!o->cmd && o->pid <= 0) {
		/* Without an agent there is no process to read: say what to give. */
		snprintf(err, errsz, "a process(...).mark probe needs the process: give -c CMD or -x PID");
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));

	if (!l || !(l->t.buf = malloc(DJP_PROTO_MAX_PAYLOAD))) {
		free(l);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	t = &l->t;
	t->fd = t->ring_fd = -1;
	t->cmd = o->cmd;
	t->attach_pid = o->pid;
	t->out = stderr;
	if (o->cmd ? trace_launch(t) : trace_attach(t)) {
		/* trace_launch/attach said why on stderr */
		snprintf(err, errsz, "%s: cannot start the trace", o->cmd ? o->cmd : "process");
		goto fail_quiet;
	}
	if (trace_hello(t) || trace_ring(t) || trace_list(t)) {
		snprintf(err, errsz, "%s: %s", o->cmd ? o->cmd : "process", t->errmsg);
		goto fail;
	}
	l->mono_to_real = (int64_t)(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC));
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)t->pid);
	if ((f = fopen(path, "r"))) {
		if (fgets(l->comm, sizeof(l->comm), f))
			l->comm[strcspn(l->comm, "\n")] = 0;
		fclose(f);
	}
	l->nids = t->nmarkers;
	l->desc_of_id = calloc(l->nids ? l->nids : 1, sizeof(*l->desc_of_id));
	l->descs = calloc(l->nids ? l->nids : 1, sizeof(*l->descs));
	l->armed = calloc(l->nids ? l->nids : 1, sizeof(*l->armed));
	if (!l->desc_of_id || !l->descs || !l->armed) {
		snprintf(err, errsz, "out of memory");
		goto fail;
	}
	for (uint32_t id = 0; id < t->nmarkers; id++) {
		if (!t->markers[id].known)
			continue;
		desc_from_marker(&l->descs[nd], nd, &t->markers[id]);
		l->desc_of_id[id] = &l->descs[nd];
		nd++;
	}
	l->src.ops = &live_ops;
	l->src.descs = l->descs;
	l->src.ndescs = nd;
	l->src.target_pid = t->pid;
	*out = &l->src;
	return 0;
fail_quiet:
	err[0] = 0; /* trace_launch and trace_attach said why */
fail:
	if (t->cmd && t->child > 0) {
		if (t->pid > 0 && t->pid != t->child)
			kill(t->pid, SIGKILL); /* started by a shell */
		kill(t->child, SIGKILL);
		trace_reap(t, -1);
		t->alive = false;
	}
	live_close(&l->src);
	return -EIO;
}
