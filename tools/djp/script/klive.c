/*
 * The kernel event source: probe scripts on the markers of loaded kernel
 * modules (kernel.mark("GLOB"), module("MODGLOB").mark("GLOB")), through
 * /dev/djprobe as `djp trace -k` has them (tools/djp/kdev_client.c).
 *
 * open:  open the device (djprobe.ko loaded, root), which maps this
 *        script's own per-CPU rings and lists the markers: each becomes a
 *        descriptor, kernel = true, object = its module, ids 0..N-1.
 * arm:   connect the recorder once per distinct pattern of the script's
 *        points ("GLOB" or "MODGLOB:GLOB"), so that markers of modules
 *        loaded later are armed as they come; a pattern that matches no
 *        marker now is left out (the check said so already unless the
 *        point is optional).  Events of descriptors no probe is bound to
 *        are dropped.
 * next:  hand out the last drain's events in time order; when they are used
 *        up drain again, and when nothing came, poll the device (woken as
 *        events come) until the deadline of the engine's next timer.  A
 *        marker id the descriptors do not know is a module loaded after
 *        open: the device names it (kdev_marker_of lists again) and it
 *        gets a descriptor of its own, bound by the engine as it comes.
 * close: close the device, which disconnects every probe of the script.
 *
 * The kernel never ends a script: exit(), a timer or ^C do.  Each event
 * carries the task the hit ran in (0 in interrupt context) and its CPU;
 * execname() is the task's comm, read from /proc as tasks first show up
 * ("swapper" for 0, as the idle task is called; "" for a task that has
 * exited by the time its event is read: the event does not carry it).  Timestamps are
 * CLOCK_MONOTONIC in the rings, shifted by the offset to the engine's
 * CLOCK_REALTIME taken at open, as the live source does.  A %s argument
 * is a string the kernel copied at the hit (at most 63 bytes), as a
 * process's recorder copies them; its pointer is the argument's number.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "run/run.h"
#include "script.h"
#include "source.h"
#include "tools/djp/grow.h"
#include "tools/djp/kdev_client.h"

#define KLIVE_POLL_MS 100
#define COMM_CACHE 256

struct kq {
	const struct djp_ev_desc *desc;
	uint64_t ns;
	int32_t pid, tid, cpu;
	unsigned nargs;
	int64_t args[DJP_EV_MAX_ARGS];
	int32_t str[DJP_EV_MAX_ARGS]; /* the text's offset in strbuf, -1: none */
	bool str_fault[DJP_EV_MAX_ARGS];
};

struct comm_entry {
	int32_t tid;
	char comm[24];
};

struct klive {
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
	struct kq *q;
	size_t nq, capq, next;
	char *strbuf; /* the strings of the queued events */
	size_t nstr, capstr;
	struct comm_entry comms[COMM_CACHE];
};

static uint64_t clock_ns(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static const char *keep(struct klive *l, const char *s)
{
	char *c = strdup(s), **v = realloc(l->strings, (l->nstrings + 1) * sizeof(*v));
	if (!c || !v)
		abort();
	l->strings = v;
	return l->strings[l->nstrings++] = c;
}

static void desc_from_kmarker(struct klive *l, struct djp_ev_desc *d, uint32_t id, const struct kmarker *m)
{
	memset(d, 0, sizeof(*d));
	d->id = id;
	d->kernel = true;
	d->name = keep(l, m->m.name);
	d->object = keep(l, m->m.module);
	d->format = keep(l, m->m.format);
	d->nargs = m->m.nargs;
	d->fmt = m->fmt;
	d->site = m->m.site;
	d->site_runtime = true;
}

/* The descriptor of a kernel marker: by site among those of open, else a
 * late one (found again by site, or made). */
static const struct djp_ev_desc *desc_of(struct klive *l, const struct kmarker *m)
{
	for (unsigned i = 0; i < l->src.ndescs; i++) /* the usual case: few markers */
		if (l->descs[i].site == m->m.site && !strcmp(l->descs[i].name, m->m.name))
			return l->bound[i] ? &l->descs[i] : NULL;
	for (size_t i = 0; i < l->nlate; i++)
		if (l->late[i]->site == m->m.site && !strcmp(l->late[i]->name, m->m.name))
			return l->late[i];
	struct djp_ev_desc *d = malloc(sizeof(*d)), **v = realloc(l->late, (l->nlate + 1) * sizeof(*v));
	if (!d || !v)
		abort();
	l->late = v;
	desc_from_kmarker(l, d, l->src.ndescs + (uint32_t)l->nlate, m);
	return l->late[l->nlate++] = d;
}

static int take(void *arg, const struct kevent *e)
{
	struct klive *l = arg;
	const struct djp_ev_desc *d = e->marker ? desc_of(l, e->marker) : NULL;
	struct kq *q;

	if (!d)
		return 0;
	if (!djp_grow((void **)&l->q, &l->capq, l->nq + 1, 1024, sizeof(*l->q)))
		abort();
	q = &l->q[l->nq++];
	q->desc = d;
	q->ns = e->ns;
	q->pid = e->pid;
	q->tid = e->tid;
	q->cpu = e->cpu;
	q->nargs = e->ev->nargs < DJP_EV_MAX_ARGS ? e->ev->nargs : DJP_EV_MAX_ARGS;
	for (unsigned i = 0; i < q->nargs; i++) {
		uint64_t flags = 0;
		uint32_t len = 0;
		const char *s = djp_event_str(e->ev, i, &len, &flags);
		q->str[i] = -1;
		q->str_fault[i] = flags & DJP_STR_FAULT;
		/* a string argument is still its pointer to the script */
		q->args[i] = (int64_t)(s ? djp_event_str_addr(e->ev, i) : e->ev->args[i]);
		if (!s)
			continue;
		if (!djp_grow((void **)&l->strbuf, &l->capstr, l->nstr + len + 1, 65536, 1))
			abort();
		memcpy(l->strbuf + l->nstr, s, len + 1);
		q->str[i] = (int32_t)l->nstr;
		l->nstr += len + 1;
	}
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct kq *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return x < y ? -1 : x > y; /* the order of the drain, CPU by CPU */
}

/* execname() of a task: its comm, cached by tid. */
static const char *comm_of(struct klive *l, int32_t tid)
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

static int klive_next(struct djp_source *src, struct djp_ev *ev, uint64_t deadline)
{
	struct klive *l = (struct klive *)src;
	for (;;) {
		if (l->next < l->nq) {
			const struct kq *q = &l->q[l->next++];
			memset(ev, 0, sizeof(*ev));
			ev->desc = q->desc;
			ev->ts_ns = q->ns + (uint64_t)l->mono_to_real;
			ev->pid = q->pid;
			ev->tid = q->tid;
			ev->comm = comm_of(l, q->tid);
			ev->cpu = q->cpu;
			ev->nargs = q->nargs;
			memcpy(ev->args, q->args, sizeof(q->args[0]) * q->nargs);
			for (unsigned i = 0; i < q->nargs; i++) {
				ev->strs[i] = q->str[i] >= 0 ? l->strbuf + q->str[i] : NULL;
				ev->str_fault[i] = q->str_fault[i];
			}
			return DJP_SRC_EVENT;
		}
		if (run_interrupted)
			return DJP_SRC_TIMEOUT;
		if (deadline != UINT64_MAX && clock_ns(CLOCK_REALTIME) >= deadline)
			return DJP_SRC_TIMEOUT;
		l->nq = l->next = l->nstr = 0;
		long n = kdev_drain(&l->k, take, l);
		if (n < 0)
			return (int)n;
		if (l->nq) {
			qsort(l->q, l->nq, sizeof(*l->q), by_time);
			continue;
		}
		uint64_t now = clock_ns(CLOCK_REALTIME), wait = (uint64_t)KLIVE_POLL_MS * 1000000u;
		if (deadline != UINT64_MAX && now >= deadline)
			return DJP_SRC_TIMEOUT;
		if (deadline != UINT64_MAX && deadline - now < wait)
			wait = deadline - now;
		kdev_wait(&l->k, (int)((wait + 999999) / 1000000u));
	}
}

static int klive_arm(struct djp_source *src, const uint32_t *ids, unsigned n, const struct djp_arm_glob *globs,
		     unsigned nglobs)
{
	struct klive *l = (struct klive *)src;
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
		id = kdev_connect(&l->k, globs[i].glob, 0, err, sizeof(err));
		if (id == -ENOENT) /* an optional point that matches nothing now */
			continue;
		if (id < 0) {
			fprintf(stderr, "djp: %s\n", err);
			return id;
		}
		l->ids[l->nids++] = id;
	}
	return 0;
}

static uint64_t klive_now(struct djp_source *src)
{
	(void)src;
	return clock_ns(CLOCK_REALTIME);
}

static void klive_close(struct djp_source *src)
{
	struct klive *l = (struct klive *)src;
	uint64_t lost = kdev_lost(&l->k);

	if (lost && !script_no_warnings)
		fprintf(stderr, "djp: WARNING: %" PRIu64 " kernel events lost (a ring was full: the script fell "
				"behind, or a hit interrupted a hit)\n", lost);
	kdev_close(&l->k); /* disconnects this script's probes */
	for (size_t i = 0; i < l->nlate; i++)
		free(l->late[i]);
	for (size_t i = 0; i < l->nstrings; i++)
		free(l->strings[i]);
	free(l->late);
	free(l->strings);
	free(l->descs);
	free(l->bound);
	free(l->q);
	free(l->strbuf);
	free(l);
}

static const struct djp_source_ops klive_ops = {
	.arm = klive_arm,
	.next = klive_next,
	.now_ns = klive_now,
	.close = klive_close,
};

int djp_script_klive_open(struct djp_source **out, char *err, size_t errsz)
{
	struct klive *l = calloc(1, sizeof(*l));
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
	for (size_t i = 0; i < l->k.n; i++)
		desc_from_kmarker(l, &l->descs[i], (uint32_t)i, &l->k.v[i]);
	l->mono_to_real = (int64_t)(clock_ns(CLOCK_REALTIME) - clock_ns(CLOCK_MONOTONIC));
	l->src.ops = &klive_ops;
	l->src.descs = l->descs;
	l->src.ndescs = (unsigned)l->k.n;
	*out = &l->src;
	return 0;
}
