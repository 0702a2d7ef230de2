/*
 * The CTF output (-f ctf -o DIR): a trace babeltrace2 and Trace Compass
 * open, in the Common Trace Format 1.8 that LTTng writes.
 *
 * DIR holds a `metadata` file (TSDL text, ctf_metadata.c) and one stream
 * file per thread, `stream-PID-TID`, each a run of packets
 * (ctf_layout.h has the bytes).  An event is encoded where it comes: its
 * marker's class is looked up by its descriptor (made the first time, one
 * class per marker name, format and argument count, and a wide twin
 * whose integers are all 64 bits for a value its sizes cannot hold), and
 * its header, context and arguments are appended to its thread's packet.
 * A packet is written (appended to its file, which is opened and closed
 * again, so that a thousand threads cost no descriptors) when it reaches
 * PACKET_MAX, when the packets held reach HELD_MAX in all, and at the
 * end; the metadata is rewritten (whole, by rename) whenever a written
 * packet uses a class it does not have yet, so what is on disk is always
 * a trace.
 *
 * Lost events (lost_thread()) are carried in the last packet of their thread's
 * stream as events_discarded, which babeltrace2 reports as discarded
 * events; losses of no one thread (no ring slot, overwritten in a
 * snapshot, a kernel ring) go to a stream of their own, `stream-PID-other`
 * (vtid -1), with an empty packet.
 *
 * Each event also carries its place in the trace (the header's seq), so
 * that `djp trace --from DIR` (source/ctf.c) puts the events of every
 * stream back in the order they were written, which is the order the live
 * trace printed them.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "ctf.h"
#include "ctf_layout.h"
#include "output.h"

#define PACKET_MAX (256u << 10)
#define HELD_MAX (8u << 20)

struct ctf_stream {
	int32_t pid, tid;
	uint64_t ts_begin, ts_end, discarded;
	uint64_t nevents; /* in the packet being built */
	bool written;	  /* a packet of it is in its file */
	char *buf;	  /* its events */
	size_t len, cap;
};

/* a descriptor's classes: [0] as its format says, [1] wide; -1 not made */
struct ctf_desc_slot {
	const void *desc;
	unsigned nargs;
	int cls[2];
};

struct ctf_out {
	struct ctf_trace t; /* the classes and what the metadata says */
	int dirfd;
	char *path;
	struct ctf_desc_slot *slots;
	size_t nslots, cap_slots; /* open addressing, cap a power of two */
	struct ctf_stream *streams;
	size_t nstreams, cap_streams;
	int32_t *stream_ix; /* open addressing over streams, cap_ix slots, -1 free */
	size_t cap_ix;
	size_t held;
	uint64_t first_ts, last_ts; /* of the trace */
	unsigned classes_on_disk;
	uint64_t seq;
	int err; /* the first write error */
	struct djp_output *o;
};

/* A write failed: the trace ends as a failed write to a stream ends it
 * (djp trace's loop looks at o->failed), and end() says why. */
static void fail(struct ctf_out *c, int err)
{
	if (!c->err)
		c->err = err ? err : EIO;
	c->o->failed = true;
}

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 16;
	void *q;
	while (n < need)
		n *= 2;
	if (n == *cap)
		return p;
	if (!(q = realloc(p, n * elem)))
		return NULL;
	*cap = n;
	return q;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

/* The class of ev as its descriptor says, wide or not: its index, or -1. */
static int class_of(struct ctf_out *c, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt,
		    bool wide)
{
	size_t mask, i;
	struct ctf_desc_slot *s;

	/* a marker nobody could name may come under a descriptor the
	 * source renames for each (process.c's one "marker#ID"): by its
	 * name, every time */
	if (ev->desc->unknown)
		return ctf_trace_class(&c->t, name, fmt, ev->nargs, wide);
	if (c->nslots * 2 >= c->cap_slots) {
		size_t ncap = c->cap_slots ? c->cap_slots * 2 : 64;
		struct ctf_desc_slot *n = calloc(ncap, sizeof(*n));
		if (!n)
			return -1;
		for (i = 0; i < c->cap_slots; i++) {
			size_t j;
			if (!c->slots[i].desc)
				continue;
			for (j = mix((uintptr_t)c->slots[i].desc ^ c->slots[i].nargs) & (ncap - 1); n[j].desc;
			     j = (j + 1) & (ncap - 1))
				;
			n[j] = c->slots[i];
		}
		free(c->slots);
		c->slots = n;
		c->cap_slots = ncap;
	}
	mask = c->cap_slots - 1;
	for (i = mix((uintptr_t)ev->desc ^ ev->nargs) & mask; c->slots[i].desc; i = (i + 1) & mask)
		if (c->slots[i].desc == ev->desc && c->slots[i].nargs == ev->nargs)
			break;
	s = &c->slots[i];
	if (!s->desc) {
		*s = (struct ctf_desc_slot){ .desc = ev->desc, .nargs = ev->nargs, .cls = { -1, -1 } };
		c->nslots++;
	}
	if (s->cls[wide] < 0)
		s->cls[wide] = ctf_trace_class(&c->t, name, fmt, ev->nargs, wide);
	return s->cls[wide];
}

static struct ctf_stream *stream_of(struct ctf_out *c, int32_t pid, int32_t tid)
{
	size_t mask, i;

	if (c->nstreams * 2 >= c->cap_ix) {
		size_t ncap = c->cap_ix ? c->cap_ix * 2 : 64;
		int32_t *n = malloc(ncap * sizeof(*n));
		if (!n)
			return NULL;
		memset(n, 0xff, ncap * sizeof(*n));
		for (size_t k = 0; k < c->nstreams; k++) {
			for (i = mix(((uint64_t)(uint32_t)c->streams[k].pid << 32) | (uint32_t)c->streams[k].tid) &
				 (ncap - 1);
			     n[i] >= 0; i = (i + 1) & (ncap - 1))
				;
			n[i] = (int32_t)k;
		}
		free(c->stream_ix);
		c->stream_ix = n;
		c->cap_ix = ncap;
	}
	mask = c->cap_ix - 1;
	for (i = mix(((uint64_t)(uint32_t)pid << 32) | (uint32_t)tid) & mask; c->stream_ix[i] >= 0; i = (i + 1) & mask) {
		struct ctf_stream *s = &c->streams[c->stream_ix[i]];
		if (s->pid == pid && s->tid == tid)
			return s;
	}
	{
		struct ctf_stream *v = grow(c->streams, &c->cap_streams, c->nstreams + 1, sizeof(*v));
		if (!v)
			return NULL;
		c->streams = v;
	}
	c->stream_ix[i] = (int32_t)c->nstreams;
	c->streams[c->nstreams] = (struct ctf_stream){ .pid = pid, .tid = tid };
	return &c->streams[c->nstreams++];
}

static void put_le(char *p, uint64_t v, unsigned bytes)
{
	for (unsigned i = 0; i < bytes; i++, v >>= 8)
		p[i] = (char)(v & 0xff);
}

/* The metadata, when a class is on no disk yet: whole, then renamed over
 * the old one. */
static void write_metadata(struct ctf_out *c)
{
	if (c->classes_on_disk == c->t.nclasses && c->classes_on_disk)
		return;
	if (ctf_metadata_write(&c->t, c->dirfd) < 0)
		fail(c, errno);
	else
		c->classes_on_disk = c->t.nclasses;
}

/* The packet s holds (events false: an empty one at its start), appended
 * to its file, with `discarded` as its events_discarded. */
static void write_packet(struct ctf_out *c, struct ctf_stream *s, uint64_t discarded, bool events)
{
	char head[CTF_PACKET_BYTES], name[64];
	size_t len = events ? s->len : 0;
	uint64_t bits = (uint64_t)(CTF_PACKET_BYTES + len) * 8;
	struct iovec iov[2] = { { head, sizeof(head) }, { s->buf, len } };
	ssize_t want = (ssize_t)(sizeof(head) + len), n;
	int fd;

	write_metadata(c);
	put_le(head, CTF_MAGIC, 4);
	memcpy(head + 4, c->t.uuid, 16);
	put_le(head + 20, 0, 4);
	put_le(head + 24, s->ts_begin, 8);
	put_le(head + 32, events ? s->ts_end : s->ts_begin, 8);
	put_le(head + 40, bits, 8);
	put_le(head + 48, bits, 8);
	put_le(head + 56, discarded, 8);
	put_le(head + 64, (uint32_t)s->pid, 4);
	put_le(head + 68, (uint32_t)s->tid, 4);
	if (s->tid < 0)
		snprintf(name, sizeof(name), "stream-%d-other", (int)s->pid);
	else
		snprintf(name, sizeof(name), "stream-%d-%d", (int)s->pid, (int)s->tid);
	fd = openat(c->dirfd, name, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0) {
		fail(c, errno);
	} else {
		n = writev(fd, iov, 2);
		if (n != want)
			fail(c, n < 0 ? errno : ENOSPC);
		if (close(fd))
			fail(c, errno);
	}
	s->written = true;
	if (!events)
		return;
	c->held -= s->len;
	s->len = 0;
	s->nevents = 0;
	s->ts_begin = s->ts_end;
}

static void flush_all(struct ctf_out *c)
{
	for (size_t i = 0; i < c->nstreams; i++)
		if (c->streams[i].nevents)
			write_packet(c, &c->streams[i], 0, true);
}

static void ctf_event(struct djp_output *o, const struct djp_ev *ev, const char *name, const struct djp_fmt *fmt)
{
	struct ctf_out *c = o->priv;
	char cut[DJP_EV_MAX_ARGS][DJP_RING_STR_BOUND_MAX + 4];
	const char *strs[DJP_EV_MAX_ARGS];
	size_t lens[DJP_EV_MAX_ARGS], need = CTF_EVENT_FIXED_BYTES;
	struct ctf_field fl[DJP_EV_MAX_ARGS];
	struct ctf_stream *s;
	bool wide = false;
	int cls;
	char *p;

	if (c->err)
		return;
	djp_output_strs(ev, strs, cut);
	for (unsigned i = 0; i < ev->nargs; i++) {
		fl[i] = ctf_field_of(fmt, i, false);
		if (fl[i].str) {
			/* NULL prints as "(null)" in text and JSON */
			strs[i] = strs[i] ? strs[i] : "(null)";
			need += (lens[i] = strlen(strs[i]) + 1);
		} else if (!ctf_fits(fl[i], ev->args[i])) {
			wide = true;
		}
	}
	for (unsigned i = 0; wide && i < ev->nargs; i++)
		fl[i] = ctf_field_of(fmt, i, true);
	for (unsigned i = 0; i < ev->nargs; i++)
		if (!fl[i].str)
			need += fl[i].bits / 8;
	if ((cls = class_of(c, ev, name, fmt, wide)) < 0 || !(s = stream_of(c, ev->pid, ev->tid))) {
		fail(c, ENOMEM);
		return;
	}
	if (s->len + need > PACKET_MAX && s->nevents)
		write_packet(c, s, 0, true);
	if (s->len + need > s->cap) {
		char *b = s->buf;
		size_t cap = s->cap;
		if (!(b = grow(b, &cap, s->len + need, 1))) {
			fail(c, ENOMEM);
			return;
		}
		s->buf = b;
		s->cap = cap;
	}
	p = s->buf + s->len;
	put_le(p, (uint32_t)cls, 4);
	put_le(p + 4, ev->ts_ns, 8);
	put_le(p + 12, (uint32_t)ev->pid, 4);
	put_le(p + 16, (uint32_t)ev->tid, 4);
	put_le(p + 20, (uint32_t)ev->cpu, 4);
	put_le(p + 24, c->seq++, 8);
	p += CTF_EVENT_FIXED_BYTES;
	for (unsigned i = 0; i < ev->nargs; i++) {
		if (fl[i].str) {
			memcpy(p, strs[i], lens[i]);
			p += lens[i];
		} else {
			put_le(p, (uint64_t)ev->args[i], fl[i].bits / 8);
			p += fl[i].bits / 8;
		}
	}
	if (!s->nevents++)
		s->ts_begin = ev->ts_ns;
	s->ts_end = ev->ts_ns;
	if (c->seq == 1 || ev->ts_ns < c->first_ts)
		c->first_ts = ev->ts_ns;
	if (ev->ts_ns > c->last_ts)
		c->last_ts = ev->ts_ns;
	s->len += need;
	if ((c->held += need) > HELD_MAX)
		flush_all(c);
}

static void ctf_lost(struct djp_output *o, int32_t pid, int32_t tid, uint64_t n)
{
	struct ctf_out *c = o->priv;
	struct ctf_stream *s = stream_of(c, pid, tid < 0 ? -1 : tid);

	if (!s)
		fail(c, ENOMEM);
	else
		s->discarded += n;
}

static void ctf_end(struct djp_output *o)
{
	struct ctf_out *c = o->priv;

	for (size_t i = 0; i < c->nstreams; i++) {
		struct ctf_stream *s = &c->streams[i];
		/* babeltrace2 counts the losses a packet adds to the one
		 * before it, over the time between their ends: a stream
		 * with losses opens with an empty packet, so that they
		 * span its events (a stream of no event: the trace) */
		if (s->discarded && !s->written) {
			if (!s->nevents) {
				s->ts_begin = c->first_ts;
				s->ts_end = c->last_ts;
			}
			write_packet(c, s, 0, false);
		}
		if (s->nevents || s->discarded)
			write_packet(c, s, s->discarded, true);
	}
	write_metadata(c);
	if (c->err)
		fprintf(stderr, "djp: %s: cannot write the CTF trace: %s\n", c->path, strerror(c->err));
}

/* DIR made, or taken when it is an empty directory: a trace is never
 * mixed with what was there. */
static int ctf_open_dir(struct djp_output *o, const char *path, char *err, size_t errsz)
{
	struct ctf_out *c = calloc(1, sizeof(*c));
	struct stat st;

	if (!c || !(c->path = strdup(path))) {
		free(c);
		snprintf(err, errsz, "%s: out of memory", path);
		return -1;
	}
	o->priv = c;
	c->o = o;
	c->dirfd = -1;
	if (mkdir(path, 0755) && errno != EEXIST) {
		snprintf(err, errsz, "%s: cannot make the CTF directory: %s", path, strerror(errno));
		return -1;
	}
	if ((c->dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || fstat(c->dirfd, &st)) {
		snprintf(err, errsz, "%s: %s", path, strerror(errno));
		return -1;
	}
	if (st.st_nlink > 2 || !ctf_dir_empty(c->dirfd)) {
		snprintf(err, errsz, "%s: not empty (a CTF trace goes to a new or empty directory)", path);
		return -1;
	}
	if (ctf_trace_init(&c->t, err, errsz) < 0)
		return -1;
	return 0;
}

static void ctf_close(struct djp_output *o)
{
	struct ctf_out *c = o->priv;

	if (!c)
		return;
	for (size_t i = 0; i < c->nstreams; i++)
		free(c->streams[i].buf);
	free(c->streams);
	free(c->stream_ix);
	free(c->slots);
	ctf_trace_free(&c->t);
	if (c->dirfd >= 0)
		close(c->dirfd);
	free(c->path);
	free(c);
	o->priv = NULL;
}

const struct djp_output_ops djp_output_ctf = {
	.name = "ctf",
	.event = ctf_event,
	.end = ctf_end,
	.open_dir = ctf_open_dir,
	.lost_thread = ctf_lost,
	.close = ctf_close,
};
