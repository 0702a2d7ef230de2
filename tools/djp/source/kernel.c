/*
 * The kernel event source: the markers of loaded kernel modules through
 * /dev/djprobe (kdev_client.c), for probe scripts (kernel.mark("GLOB"),
 * module("MODGLOB").mark("GLOB")) and `djp trace -k` alike.
 *
 * open:  open the device (djprobe.ko loaded, root), which maps this
 *        reader's own per-CPU rings and lists the markers: each becomes a
 *        descriptor, kernel = true, object = its module, label
 *        "MODULE:NAME", ids 0..N-1.
 * arm:   connect the recorder once per distinct pattern ("GLOB" or
 *        "MODGLOB:GLOB"), so that markers of modules loaded later are
 *        armed as they come; a pattern that matches no marker now is left
 *        out (the script's check said so already unless the point is
 *        optional; `djp trace -k` asks with `now` and fails).  Events of
 *        descriptors of open that are not among the ids armed are dropped:
 *        another probe of the reader's may have matched them.
 * next:  hand out the last drain's events in time order; when they are used
 *        up drain again, and when nothing came, poll the device (woken as
 *        events come) until the deadline of the consumer's next timer.  A
 *        marker id the descriptors do not know is a module loaded after
 *        open: the drain names it (kdev_marker_of lists again) and it gets
 *        a descriptor of its own, kept in the device's table (kmarker.user)
 *        so that the next event of it finds it without a search.  An id the
 *        device cannot name either (a module gone) is dropped, or, with
 *        want_unknown, delivered under a descriptor named "marker#ID".
 * stop:  disconnect every probe: next() hands out what the rings hold,
 *        then says the end.
 * close: close the device, which disconnects every probe of the reader.
 *
 * The rings are per CPU, so a drain is copied out and sorted by time (the
 * drain's own order breaks ties; order.c) before it is handed out, as a
 * process's threads are.  The kernel never ends a trace: exit(), a timer, --duration
 * or ^C do.  Each event carries the task the hit ran in (0 in interrupt
 * context) and its CPU; execname() is the task's comm, read from /proc as
 * tasks first show up ("swapper" for 0, as the idle task is called; ""
 * for a task that has exited by the time its event is read: the event does
 * not carry it).  Timestamps are CLOCK_MONOTONIC in the rings, shifted by
 * the offset to CLOCK_REALTIME taken at open unless want_monotonic.  A %s
 * argument is a string the kernel copied at the hit (at most 63 bytes) and
 * says whether it went on; str_bound cuts it shorter.  Its pointer is the
 * argument's number.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <djprobe/djprobe.h>

#include "order.h"
#include "source.h"
#include "tools/djp/grow.h"
#include "tools/djp/kdev_client.h"

#define KSRC_POLL_MS 100
#define COMM_CACHE 256

/* An event of the last drain, as order.c keeps it: its strings follow it
 * in the same record. */
struct kq {
	const struct djp_ev_desc *desc;
	uint64_t ns;
	int32_t pid, tid, cpu;
	unsigned nargs;
	int64_t args[DJP_EV_MAX_ARGS];
	int32_t str[DJP_EV_MAX_ARGS]; /* the text's offset after the kq, -1: none */
	bool str_fault[DJP_EV_MAX_ARGS];
	bool str_cut[DJP_EV_MAX_ARGS];
};

struct comm_entry {
	int32_t tid;
	char comm[24];
};

struct ksrc {
	struct djp_source src;
	struct kdev k;
	struct djp_ev_desc *descs;
	bool *bound;		   /* per descriptor of open: a probe wants it */
	struct djp_ev_desc **late; /* of modules loaded later, ids ndescs.. */
	size_t nlate;
	char **strings;		   /* what the descriptors point to */
	size_t nstrings;
	int ids[64];
	int nids;
	int64_t mono_to_real;
	bool stopped;		 /* every probe disconnected (stop) */
	bool drained_after_stop; /* and the rings drained since: the end */
	uint64_t events;   /* handed out */
	uint64_t lost_told; /* lost_new: the drops said so far */
	uint64_t *counts;  /* handed out, by descriptor id */
	size_t ncounts;	   /* room in counts */
	struct djp_order q; /* the last drain (struct kq records) */
	size_t next;
	struct comm_entry comms[COMM_CACHE];
};

static const char *keep(struct ksrc *l, const char *s)
{
	char *c = strdup(s), **v = realloc(l->strings, (l->nstrings + 1) * sizeof(*v));
	if (!c || !v)
		abort();
	l->strings = v;
	return l->strings[l->nstrings++] = c;
}

static void desc_from_kmarker(struct ksrc *l, struct djp_ev_desc *d, uint32_t id, const struct kmarker *m)
{
	memset(d, 0, sizeof(*d));
	d->id = id;
	d->kernel = true;
	d->name = keep(l, m->m.name);
	d->label = keep(l, m->full);
	d->object = keep(l, m->m.module);
	d->format = keep(l, m->m.format);
	d->nargs = m->m.nargs;
	d->fmt = m->fmt;
	d->site = m->m.site;
	d->site_runtime = true;
}

/* A descriptor after open: of a module loaded later (m), or of a marker
 * nobody can name (m NULL, its id in the events). */
static struct djp_ev_desc *late_desc(struct ksrc *l, const struct kmarker *m, uint32_t marker_id)
{
	struct djp_ev_desc *d = malloc(sizeof(*d)), **v = realloc(l->late, (l->nlate + 1) * sizeof(*v));
	uint32_t id = l->src.ndescs + (uint32_t)l->nlate;
	char name[32];

	if (!d || !v)
		abort();
	l->late = v;
	if (m) {
		desc_from_kmarker(l, d, id, m);
	} else {
		memset(d, 0, sizeof(*d));
		snprintf(name, sizeof(name), "marker#%u", marker_id);
		d->id = id;
		d->kernel = d->unknown = true;
		d->name = d->label = keep(l, name);
		d->object = d->format = "";
		d->site = marker_id;
	}
	return l->late[l->nlate++] = d;
}

/* The descriptor of a kernel marker: the one kept with it (those of open,
 * and those made since), else a new late one; NULL when no probe wants
 * it. */
static const struct djp_ev_desc *desc_of(struct ksrc *l, struct kmarker *m)
{
	struct djp_ev_desc *d = m->user;

	if (!d)
		m->user = d = late_desc(l, m, 0);
	return d->id < l->src.ndescs && !l->bound[d->id] ? NULL : d;
}

/* The descriptor of an id nobody can name (want_unknown): one per id. */
static const struct djp_ev_desc *unknown_desc(struct ksrc *l, uint32_t marker_id)
{
	for (size_t i = 0; i < l->nlate; i++)
		if (l->late[i]->unknown && l->late[i]->site == marker_id)
			return l->late[i];
	return late_desc(l, NULL, marker_id);
}

static int take(void *arg, const struct kevent *e)
{
	struct ksrc *l = arg;
	const struct djp_ev_desc *d = e->marker ? desc_of(l, (struct kmarker *)e->marker)
				      : l->src.want_unknown ? unknown_desc(l, e->ev->marker_id)
							    : NULL;
	unsigned bound = l->src.str_bound, nargs;
	const char *str[DJP_EV_MAX_ARGS];
	uint32_t len[DJP_EV_MAX_ARGS];
	uint64_t flags[DJP_EV_MAX_ARGS];
	size_t need = sizeof(struct kq);
	struct kq *q;
	char *text;

	if (!d)
		return 0;
	nargs = e->ev->nargs < DJP_EV_MAX_ARGS ? e->ev->nargs : DJP_EV_MAX_ARGS;
	if (e->marker && nargs > e->marker->m.nargs) /* a function's: its parameters' registers */
		nargs = e->marker->m.nargs;
	/* the strings first: their bytes go in the record, after the kq */
	for (unsigned i = 0; i < nargs; i++) {
		flags[i] = 0;
		len[i] = 0;
		str[i] = djp_event_str(e->ev, i, &len[i], &flags[i]);
		if (str[i] && bound && len[i] >= bound) { /* MAXSTRINGLEN: the NUL counts */
			len[i] = bound - 1;
			flags[i] |= DJP_STR_TRUNCATED;
		}
		if (str[i])
			need += len[i] + 1;
	}
	if (!(q = djp_order_push(&l->q, e->ns, 0, need)))
		abort();
	text = (char *)(q + 1);
	q->desc = d;
	q->ns = e->ns;
	q->pid = e->pid;
	q->tid = e->tid;
	q->cpu = e->cpu;
	q->nargs = nargs;
	for (unsigned i = 0; i < nargs; i++) {
		q->str[i] = -1;
		q->str_fault[i] = flags[i] & DJP_STR_FAULT;
		q->str_cut[i] = flags[i] & DJP_STR_TRUNCATED;
		/* a string argument is still its pointer to the script */
		q->args[i] = str[i] ? (int64_t)djp_event_str_addr(e->ev, i) : kdev_arg_value(e->marker, i, e->ev->args[i]);
		if (!str[i])
			continue;
		memcpy(text, str[i], len[i]);
		text[len[i]] = 0;
		q->str[i] = (int32_t)(text - (char *)(q + 1));
		text += len[i] + 1;
	}
	return 0;
}

/* execname() of a task: its comm, cached by tid. */
static const char *comm_of(struct ksrc *l, int32_t tid)
{
	struct comm_entry *c = &l->comms[(uint32_t)tid % COMM_CACHE];
	char path[64];
	FILE *f;

	if (tid == 0)
		return "swapper";
	if (c->tid == tid) /* known, or known to be gone */
		return c->comm;
	c->tid = tid;
	c->comm[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)tid);
	if ((f = fopen(path, "r"))) {
		if (fgets(c->comm, sizeof(c->comm), f))
			c->comm[strcspn(c->comm, "\n")] = 0;
		fclose(f);
	}
	return c->comm; /* "" when the task is gone: not the module's name */
}

static void fill(struct ksrc *l, const struct kq *q, struct djp_ev *ev)
{
	size_t had = l->ncounts;

	if (!djp_grow((void **)&l->counts, &l->ncounts, q->desc->id + 1, 256, sizeof(*l->counts)))
		abort();
	memset(l->counts + had, 0, (l->ncounts - had) * sizeof(*l->counts));
	l->counts[q->desc->id]++;
	l->events++;
	memset(ev, 0, sizeof(*ev));
	ev->desc = q->desc;
	ev->ts_ns = q->ns + (l->src.want_monotonic ? 0 : (uint64_t)l->mono_to_real);
	ev->pid = q->pid;
	ev->tid = q->tid;
	ev->comm = comm_of(l, q->tid);
	ev->cpu = q->cpu;
	ev->nargs = q->nargs;
	memcpy(ev->args, q->args, sizeof(q->args[0]) * q->nargs);
	for (unsigned i = 0; i < q->nargs; i++) {
		ev->strs[i] = q->str[i] >= 0 ? (const char *)(q + 1) + q->str[i] : NULL;
		ev->str_fault[i] = q->str_fault[i];
		ev->str_cut[i] = q->str_cut[i];
	}
}

static int ksrc_next(struct djp_source *src, struct djp_ev *ev, uint64_t deadline)
{
	struct ksrc *l = (struct ksrc *)src;
	for (;;) {
		if (l->next < l->q.n) {
			fill(l, djp_order_at(&l->q, l->next++), ev);
			return DJP_SRC_EVENT;
		}
		if (l->stopped && l->drained_after_stop)
			return DJP_SRC_END;
		if (!l->stopped && src->interrupted && *src->interrupted)
			return DJP_SRC_TIMEOUT;
		if (!l->stopped && deadline != UINT64_MAX && src->ops->now_ns(src) >= deadline)
			return DJP_SRC_TIMEOUT;
		djp_order_reset(&l->q);
		l->next = 0;
		l->drained_after_stop = l->stopped;
		long n = kdev_drain(&l->k, take, l);
		if (n < 0)
			return (int)n;
		if (l->q.n) {
			djp_order_sort(&l->q);
			continue;
		}
		if (l->stopped)
			continue;
		uint64_t now = src->ops->now_ns(src), wait = (uint64_t)KSRC_POLL_MS * 1000000u;
		if (deadline != UINT64_MAX && now >= deadline)
			return DJP_SRC_TIMEOUT;
		if (deadline != UINT64_MAX && deadline - now < wait)
			wait = deadline - now;
		kdev_wait(&l->k, (int)((wait + 999999) / 1000000u));
	}
}

static int ksrc_arm(struct djp_source *src, const uint32_t *ids, unsigned n, const struct djp_arm_glob *globs,
		    unsigned nglobs)
{
	struct ksrc *l = (struct ksrc *)src;
	char err[512];

	for (unsigned i = 0; i < n; i++) {
		if (ids[i] >= l->src.ndescs)
			return -EINVAL;
		l->bound[ids[i]] = true;
	}
	for (unsigned i = 0; i < nglobs; i++) {
		int id;
		if (l->nids == (int)(sizeof(l->ids) / sizeof(l->ids[0]))) {
			fprintf(stderr, "djp: more than 64 distinct kernel probe points\n");
			return -ENOSPC;
		}
		id = kdev_connect(&l->k, globs[i].glob, src->want_int3 ? DJP_FORCE_KPROBE : 0, err, sizeof(err));
		if (id == -ENOENT && !globs[i].now) /* an optional point that matches nothing now */
			continue;
		if (id < 0) {
			fprintf(stderr, "djp: %s%s%s\n", src->who ? src->who : "", src->who ? ": " : "", err);
			src->arm_said = true;
			return id;
		}
		l->ids[l->nids++] = id;
		/* a function point is listed from now on: its name before
		 * its first event, which may come after the disconnect */
		if (!strncmp(globs[i].glob, DJP_KFUNC_PREFIX, strlen(DJP_KFUNC_PREFIX)) &&
		    (id = kdev_list(&l->k, err, sizeof(err))) < 0) {
			fprintf(stderr, "djp: %s%s%s\n", src->who ? src->who : "", src->who ? ": " : "", err);
			src->arm_said = true;
			return id;
		}
	}
	return 0;
}

/* Every probe disconnected: the rings hold all there will be, and next()
 * hands it out. */
static int ksrc_stop(struct djp_source *src)
{
	struct ksrc *l = (struct ksrc *)src;
	for (int i = 0; i < l->nids; i++)
		kdev_disconnect(&l->k, l->ids[i]);
	l->nids = 0;
	l->stopped = true;
	return 0;
}

/* The device counts drops per ring, not per marker: of no marker known. */
static void ksrc_lost_new(struct djp_source *src, djp_src_lost_new_fn fn, void *ctx)
{
	struct ksrc *l = (struct ksrc *)src;
	uint64_t lost = kdev_lost(&l->k);

	if (lost > l->lost_told) {
		fn(ctx, NULL, 0, lost - l->lost_told);
		l->lost_told = lost;
	}
}

static uint64_t ksrc_lost(struct djp_source *src, djp_src_lost_fn fn, void *ctx)
{
	(void)fn, (void)ctx; /* the kernel counts per CPU, not per marker */
	return kdev_lost(&((struct ksrc *)src)->k);
}

/* djp trace -k's summary: events and losses, per marker. */
static void ksrc_report(struct djp_source *src, FILE *f)
{
	struct ksrc *l = (struct ksrc *)src;
	uint64_t unknown = 0;

	fprintf(f, "djp trace: kernel: %" PRIu64 " events, %" PRIu64 " lost\n", l->events, kdev_lost(&l->k));
	fprintf(f, "  %-40s %12s  %s\n", "MODULE:MARKER", "EVENTS", "(EVENTS recorded and read)");
	for (uint32_t id = 0; id < l->src.ndescs + l->nlate && id < l->ncounts; id++) {
		const struct djp_ev_desc *d = id < l->src.ndescs ? &l->descs[id] : l->late[id - l->src.ndescs];
		if (l->counts[id] && d->unknown)
			unknown += l->counts[id];
		else if (l->counts[id])
			fprintf(f, "  %-40s %12" PRIu64 "\n", d->label, l->counts[id]);
	}
	if (unknown)
		fprintf(f, "  %-40s %12" PRIu64 "\n", "(unknown: a module gone)", unknown);
}

/* The kernel counts its losses per CPU: none is a thread's. */
static void ksrc_lost_threads(struct djp_source *src, djp_src_lost_thread_fn fn, void *ctx)
{
	uint64_t lost = kdev_lost(&((struct ksrc *)src)->k);
	if (lost)
		fn(ctx, 0, -1, lost);
}

static uint64_t ksrc_now(struct djp_source *src)
{
	return djp_clock_ns(src->want_monotonic ? CLOCK_MONOTONIC : CLOCK_REALTIME);
}

static void ksrc_close(struct djp_source *src)
{
	struct ksrc *l = (struct ksrc *)src;
	uint64_t lost = kdev_lost(&l->k);

	if (lost && !src->quiet)
		fprintf(stderr, "djp: WARNING: %" PRIu64 " kernel events lost (a ring was full: the script fell "
				"behind, or a hit interrupted a hit)\n", lost);
	kdev_close(&l->k); /* disconnects this reader's probes */
	for (size_t i = 0; i < l->nlate; i++)
		free(l->late[i]);
	for (size_t i = 0; i < l->nstrings; i++)
		free(l->strings[i]);
	free(l->late);
	free(l->strings);
	free(l->descs);
	free(l->bound);
	djp_order_free(&l->q);
	free(l->counts);
	free(l);
}

static const struct djp_source_ops ksrc_ops = {
	.arm = ksrc_arm,
	.next = ksrc_next,
	.stop = ksrc_stop,
	.lost = ksrc_lost,
	.lost_new = ksrc_lost_new,
	.report = ksrc_report,
	.lost_threads = ksrc_lost_threads,
	.now_ns = ksrc_now,
	.close = ksrc_close,
};

int djp_kernel_source_open(struct djp_source **out, char *err, size_t errsz)
{
	struct ksrc *l = calloc(1, sizeof(*l));
	int rc;

	if (!l) {
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	if ((rc = kdev_open(&l->k, err, errsz))) {
		free(l);
		return rc;
	}
	l->descs = calloc(l->k.n + 1, sizeof(*l->descs));
	l->bound = calloc(l->k.n + 1, sizeof(*l->bound));
	if (!l->descs || !l->bound)
		abort();
	for (size_t i = 0; i < l->k.n; i++) {
		desc_from_kmarker(l, &l->descs[i], (uint32_t)i, &l->k.v[i]);
		l->k.v[i].user = &l->descs[i];
	}
	l->mono_to_real = (int64_t)(djp_clock_ns(CLOCK_REALTIME) - djp_clock_ns(CLOCK_MONOTONIC));
	l->src.ops = &ksrc_ops;
	l->src.descs = l->descs;
	l->src.ndescs = (unsigned)l->k.n;
	*out = &l->src;
	return 0;
}
