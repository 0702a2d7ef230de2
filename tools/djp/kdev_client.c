/*
 * The tool's side of /dev/djprobe, djprobe.ko's device (<djprobe/kdev.h>,
 * kmod/djprobe_dev.c).
 *
 * How it works.  Opening the device makes a tracing session in the kernel
 * with its own per-CPU rings; the tool maps them read-only and reads them
 * with the same consumer as the rings of a traced process (lib/ring.c, in
 * its read-only mode: the kernel's rings have the same layout, one slot
 * per CPU), then tells the kernel how far it has read (CONSUMED), since it
 * cannot write the read position into the mapping.  The marker table comes
 * from LIST: each marker's site address, and the events name their marker
 * by the low 32 bits of it (module text lies in one 2 GiB window), so the
 * table is kept sorted by those and searched.  A module loaded after the
 * listing has sites the table does not know: the first such event of a
 * drain lists again.
 *
 * Closing the device disconnects every probe of the session in the kernel
 * (its release), so nothing stays armed when the tool ends, however it
 * ends.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <djprobe/djprobe.h>

#include "kdev_client.h"
#include "tools/djp/kfunc_dwarf.h"

/* The kernel writes lib/ring.h's layout from <djprobe/kdev.h>'s copy. */
_Static_assert(DJP_KRING_MAGIC == DJP_RING_MAGIC && DJP_KRING_VERSION == DJP_RING_VERSION, "ring magic");
_Static_assert(sizeof(struct djp_kregion_hdr) == sizeof(struct djp_region_hdr), "region header");
_Static_assert(offsetof(struct djp_kregion_hdr, clock) == offsetof(struct djp_region_hdr, clock), "clock");
_Static_assert(offsetof(struct djp_kregion_hdr, slots_used) == offsetof(struct djp_region_hdr, slots_used), "used");
_Static_assert(offsetof(struct djp_kslot_hdr, head) == offsetof(struct djp_slot_hdr, head), "head");
_Static_assert(offsetof(struct djp_kslot_hdr, lost_nested) == offsetof(struct djp_slot_hdr, lost_nested), "lost");
_Static_assert(offsetof(struct djp_kslot_hdr, tail) == offsetof(struct djp_slot_hdr, tail), "tail");
_Static_assert(offsetof(struct djp_kslot_hdr, sb) == offsetof(struct djp_slot_hdr, sb), "sb");
_Static_assert(DJP_KEVF_TASK == DJP_EVF_TASK && DJP_KEVF_CPU == DJP_EVF_CPU && DJP_KEVF_PAD == DJP_EVF_PAD &&
		       DJP_KEVF_STRINGS == DJP_EVF_STRINGS,
	       "event flags");
_Static_assert(DJP_KSTR_TRUNCATED == DJP_STR_TRUNCATED && DJP_KSTR_FAULT == DJP_STR_FAULT &&
		       DJP_KSTR_NULL == DJP_STR_NULL && DJP_KSTR_ADDR == DJP_STR_ADDR,
	       "string descriptors");

/* The device's path: DJP_KDEV lets the tests point it elsewhere. */
static const char *dev_path(void)
{
	const char *p = getenv("DJP_KDEV");
	return p && *p ? p : DJP_KDEV_PATH;
}

static int by_id(const void *a, const void *b)
{
	uint32_t x = (uint32_t)((const struct kmarker *)a)->m.site, y = (uint32_t)((const struct kmarker *)b)->m.site;
	return x < y ? -1 : x > y;
}

/* A function point's fields named and typed as its parameters (or its
 * return value), when the kernel's DWARF has them; else arg1..arg6 as the
 * module lists them. */
static void name_parameters(struct kmarker *m)
{
	const struct kfunc_sig *sig;
	const char *why;
	char fmt[sizeof(m->m.format)];
	bool ret;

	if (strcmp(m->m.module, "kernel") || strncmp(m->m.name, "func:", 5) ||
	    kfunc_point_params(m->m.name, &sig, &ret, &why) || kfunc_format(sig, ret, fmt, sizeof(fmt)) < 0)
		return;
	memcpy(m->m.format, fmt, sizeof(fmt));
	m->m.nargs = ret ? 1 : sig->nargs;
	m->sig = sig;
	m->ret = ret;
}

int64_t kdev_arg_value(const struct kmarker *m, unsigned i, uint64_t raw)
{
	if (!m || !m->sig || i >= (m->ret ? 1u : m->sig->nargs))
		return (int64_t)raw;
	return kfunc_arg_value(m->ret ? &m->sig->ret : &m->sig->arg[i], raw);
}

int kdev_list(struct kdev *k, char *err, size_t errsz)
{
	struct djp_kdev_list req = { 0 };
	struct djp_kdev_marker *v = NULL;

	for (;;) {
		req.buf = (uintptr_t)v;
		if (ioctl(k->fd, DJP_KIOC_LIST, &req) < 0) {
			int e = errno;
			free(v);
			snprintf(err, errsz, "%s: cannot list the markers: %s", dev_path(), strerror(e));
			return -e;
		}
		if (req.count <= req.cap)
			break;
		/* a module came meanwhile: room for a few more */
		req.cap = req.count + 16;
		free(v);
		if (!(v = calloc(req.cap, sizeof(*v)))) {
			snprintf(err, errsz, "out of memory");
			return -ENOMEM;
		}
	}
	/* room for the function points this listing no longer has (below) */
	struct kmarker *nv = calloc(req.count + k->n + 1, sizeof(*nv));
	if (!nv) {
		free(v);
		snprintf(err, errsz, "out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < req.count; i++) {
		struct kmarker *m = &nv[i];
		const char *why;
		m->m = v[i];
		snprintf(m->full, sizeof(m->full), "%s:%s", m->m.module, m->m.name);
		name_parameters(m);
		if (djp_format_parse(m->m.format, &m->fmt, &why) < 0)
			memset(&m->fmt, 0, sizeof(m->fmt));
		/* what the reader keeps survives a new listing */
		for (size_t j = 0; j < k->n; j++)
			if (k->v[j].m.site == m->m.site && !strcmp(k->v[j].full, m->full))
				m->user = k->v[j].user;
	}
	free(v);
	/* A function point is gone from the listing once disconnected, but
	 * its events may still be in the rings: keep its name, unless its id
	 * is another's now. */
	uint32_t n = req.count;
	for (size_t j = 0; j < k->n; j++) {
		bool listed = false;
		if ((uint32_t)k->v[j].m.site >= DJP_KFUNC_ID_LIMIT)
			continue;
		for (uint32_t i = 0; i < req.count && !listed; i++)
			listed = (uint32_t)nv[i].m.site == (uint32_t)k->v[j].m.site;
		if (!listed)
			nv[n++] = k->v[j];
	}
	req.count = n;
	qsort(nv, req.count, sizeof(*nv), by_id);
	free(k->v);
	k->v = nv;
	k->n = req.count;
	return 0;
}

int kdev_open(struct kdev *k, char *err, size_t errsz)
{
	void *base;
	int e;

	memset(k, 0, sizeof(*k));
	k->fd = open(dev_path(), O_RDONLY | O_CLOEXEC);
	if (k->fd < 0) {
		e = errno;
		if (e == ENOENT || e == ENXIO || e == ENODEV)
			snprintf(err, errsz, "djprobe.ko is not loaded (no %s)", dev_path());
		else if (e == EACCES || e == EPERM)
			snprintf(err, errsz, "%s: kernel markers are for root only (CAP_SYS_ADMIN)", dev_path());
		else
			snprintf(err, errsz, "%s: %s", dev_path(), strerror(e));
		return -e;
	}
	if (ioctl(k->fd, DJP_KIOC_INFO, &k->info) < 0) {
		e = errno;
		snprintf(err, errsz, "%s: not djprobe.ko's device: %s", dev_path(), strerror(e));
		goto fail;
	}
	base = mmap(NULL, k->info.region_size, PROT_READ, MAP_SHARED, k->fd, 0);
	if (base == MAP_FAILED) {
		e = errno;
		snprintf(err, errsz, "%s: cannot map the rings: %s", dev_path(), strerror(e));
		goto fail;
	}
	if (!(k->cons = djp_consumer_open_mapped(base, k->info.region_size))) {
		e = errno;
		munmap(base, k->info.region_size);
		snprintf(err, errsz, "%s: the rings are not in the layout this tool reads", dev_path());
		goto fail;
	}
	if ((e = -kdev_list(k, err, errsz)))
		goto fail;
	return 0;
fail:
	kdev_close(k);
	return -e;
}

void kdev_close(struct kdev *k)
{
	djp_consumer_close(k->cons);
	if (k->fd >= 0)
		close(k->fd); /* the kernel disconnects this session's probes */
	free(k->v);
	memset(k, 0, sizeof(*k));
	k->fd = -1;
}

int kdev_connect(struct kdev *k, const char *pattern, unsigned flags, char *err, size_t errsz)
{
	struct djp_kdev_connect req = { .flags = flags };

	if (strlen(pattern) >= sizeof(req.pattern)) {
		snprintf(err, errsz, "pattern '%.40s...': too long (at most %zu characters)", pattern,
			 sizeof(req.pattern) - 1);
		return -ENAMETOOLONG;
	}
	strcpy(req.pattern, pattern);
	if (ioctl(k->fd, DJP_KIOC_CONNECT, &req) < 0) {
		int e = errno;
		if (!strncmp(pattern, DJP_KFUNC_PREFIX, strlen(DJP_KFUNC_PREFIX))) {
			/* a function point: kprobes said no */
			const char *fn = pattern + strlen(DJP_KFUNC_PREFIX);
			int n = (int)strcspn(fn, "+%");
			if (e == ENOENT)
				snprintf(err, errsz, "kernel function '%.*s': no such function", n, fn);
			else if (e == EINVAL && (!n || (fn[n] == '%' && strcmp(fn + n, "%return"))))
				snprintf(err, errsz, "'%s': not func:NAME, func:NAME+OFFSET or func:NAME%%return",
					 pattern);
			else
				snprintf(err, errsz, "kernel function '%.*s': kprobes cannot probe it: %s", n, fn,
					 strerror(e));
		} else if (e == ENOENT)
			snprintf(err, errsz, "pattern '%s' matches no kernel marker", pattern);
		else if (e == EBUSY)
			snprintf(err, errsz, "pattern '%s': a site holds bytes that are not djprobe's (a kprobe?)",
				 pattern);
		else
			snprintf(err, errsz, "pattern '%s': %s", pattern, strerror(e));
		return -e;
	}
	return req.id;
}

int kdev_disconnect(struct kdev *k, int id)
{
	return ioctl(k->fd, DJP_KIOC_DISCONNECT, &id) < 0 ? -errno : 0;
}

static const struct kmarker *find(const struct kdev *k, uint32_t id)
{
	size_t lo = 0, hi = k->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		uint32_t m = (uint32_t)k->v[mid].m.site;
		if (m == id)
			return &k->v[mid];
		if (m < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const struct kmarker *kdev_marker_of(struct kdev *k, uint32_t id)
{
	const struct kmarker *m = find(k, id);
	char err[256];

	if (!m && !k->relisted) {
		k->relisted = true; /* once a drain: a module loaded since */
		if (!kdev_list(k, err, sizeof(err)))
			m = find(k, id);
	}
	return m;
}

struct drain_ctx {
	struct kdev *k;
	int (*fn)(void *arg, const struct kevent *e);
	void *arg;
};

static int on_event(void *arg, const struct djp_event *ev, uint32_t tid, unsigned slot)
{
	struct drain_ctx *d = arg;
	struct kevent e = { .ev = ev };
	uint64_t task = 0;

	(void)tid, (void)slot;
	e.marker = kdev_marker_of(d->k, ev->marker_id);
	e.ns = djp_clock_to_ns(djp_consumer_clock(d->k->cons), ev->timestamp);
	djp_event_task(ev, &task);
	e.pid = (int32_t)(task >> 32);
	e.tid = (int32_t)(uint32_t)task;
	e.cpu = djp_event_cpu(ev);
	return d->fn(d->arg, &e);
}

long kdev_drain(struct kdev *k, int (*fn)(void *arg, const struct kevent *e), void *arg)
{
	struct drain_ctx d = { k, fn, arg };
	struct djp_drain_ops ops = { .event = on_event };
	unsigned n = djp_consumer_nslots(k->cons);
	uint64_t tails[n ? n : 1];
	struct djp_kdev_consumed req = { .tails = (uintptr_t)tails, .n = n };
	long got;

	k->relisted = false;
	got = djp_consumer_drain(k->cons, &ops, &d);
	for (unsigned i = 0; i < n; i++)
		tails[i] = djp_consumer_tail(k->cons, i);
	if (got >= 0 && ioctl(k->fd, DJP_KIOC_CONSUMED, &req) < 0)
		return -errno;
	return got;
}

void kdev_wait(struct kdev *k, int timeout_ms)
{
	struct pollfd p = { .fd = k->fd, .events = POLLIN };
	poll(&p, 1, timeout_ms);
}

uint64_t kdev_lost(const struct kdev *k)
{
	uint64_t lost = 0;
	for (unsigned i = 0; i < djp_consumer_nslots(k->cons); i++) {
		struct djp_slot_stats st;
		if (!djp_consumer_slot_stats(k->cons, i, &st))
			lost += st.lost_full + st.lost_nested;
	}
	return lost;
}

bool kdev_matches(const struct kmarker *m, const char *pattern)
{
	const char *colon = strchr(pattern, ':');
	if (!colon)
		return !fnmatch(pattern, m->m.name, 0);
	char mod[128];
	snprintf(mod, sizeof(mod), "%.*s", (int)(colon - pattern), pattern);
	return !fnmatch(mod, m->m.module, 0) && !fnmatch(colon + 1, m->m.name, 0);
}
