/*
 * The CTF source: a trace `djp trace -f ctf` wrote, read back, so that a
 * trace taken once can be written in every format (`djp trace --from DIR
 * -f text|json|ctf`).
 *
 * It reads djp's own traces, not CTF at large: the metadata must open with
 * djp's signature, and its event classes are taken from the comment djp
 * writes before each event block (ctf_metadata.c: the name and the parsed
 * format, in hex), not from the TSDL; the stream files are decoded by
 * ctf_layout.h.  Every stream file is mapped whole; each has a cursor on
 * its next event, and a heap of the cursors by the events' seq (the
 * order the live trace wrote them) hands the events out in exactly that
 * order, so text and JSON come out byte for byte as they were printed
 * live.  An event is given its class's descriptor (named as the live
 * trace named it, its format as parsed then); its strings point into the
 * mapping.  The packets' events_discarded are the losses, by stream.
 *
 * Everything in the files is checked before it is used: a packet or an
 * event that runs past its end, an unknown class, a string without its
 * NUL, ends the read with one line naming the file and the byte.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "source.h"
#include "tools/djp/output/ctf.h"
#include "tools/djp/output/ctf_layout.h"

struct cstream {
	char *name;
	const uint8_t *data;
	size_t len;
	size_t pos;	    /* the next event's (or packet's) byte */
	size_t content_end; /* of the packet being read; 0 before the first */
	size_t packet_end;
	int32_t pid, tid;
	uint64_t discarded;
	uint64_t seq; /* of ev */
	struct djp_ev ev;
};

struct csrc {
	struct djp_source src;
	char *dir;
	struct djp_ev_desc *descs;
	bool *wide;
	struct cstream *streams;
	size_t nstreams;
	size_t *heap; /* stream indexes, by their event's seq */
	size_t nheap;
	uint64_t now, events;
};

static uint64_t le(const uint8_t *p, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = bytes; i--;)
		v = (v << 8) | p[i];
	return v;
}

static int bad(struct csrc *c, struct cstream *s, size_t at, const char *what)
{
	fprintf(stderr, "djp: %s/%s: %s at byte %zu\n", c->dir, s->name, what, at);
	return -EBADMSG;
}

/* s's next event into s->ev: 1, 0 at its end, or -EBADMSG. */
static int advance(struct csrc *c, struct cstream *s)
{
	const uint8_t *p;
	struct djp_ev *ev = &s->ev;
	const struct djp_ev_desc *d;
	size_t at;
	uint32_t id;

	while (s->pos >= s->content_end) {
		uint64_t content, packet;
		s->pos = s->packet_end;
		if (s->pos == s->len)
			return 0;
		p = s->data + s->pos;
		if (s->len - s->pos < CTF_PACKET_BYTES || le(p, 4) != CTF_MAGIC)
			return bad(c, s, s->pos, "not a packet of djp's");
		content = le(p + 40, 8) / 8;
		packet = le(p + 48, 8) / 8;
		if (content < CTF_PACKET_BYTES || content > packet || packet > s->len - s->pos)
			return bad(c, s, s->pos, "a packet runs past the file's end");
		if (le(p + 56, 8) > s->discarded)
			s->discarded = le(p + 56, 8);
		s->pid = (int32_t)le(p + 64, 4);
		s->tid = (int32_t)le(p + 68, 4);
		s->content_end = s->pos + content;
		s->packet_end = s->pos + packet;
		s->pos += CTF_PACKET_BYTES;
	}
	at = s->pos;
	p = s->data + at;
	if (s->content_end - at < CTF_EVENT_FIXED_BYTES)
		return bad(c, s, at, "an event runs past its packet");
	id = (uint32_t)le(p, 4);
	if (id >= c->src.ndescs)
		return bad(c, s, at, "an event of no class the metadata has");
	d = &c->descs[id];
	memset(ev, 0, sizeof(*ev));
	ev->desc = d;
	ev->ts_ns = le(p + 4, 8);
	ev->pid = (int32_t)le(p + 12, 4);
	ev->tid = (int32_t)le(p + 16, 4);
	ev->cpu = (int32_t)le(p + 20, 4);
	s->seq = le(p + 24, 8);
	ev->nargs = d->nargs;
	p += CTF_EVENT_FIXED_BYTES;
	for (unsigned i = 0; i < d->nargs; i++) {
		struct ctf_field f = ctf_field_of(&d->fmt, i, c->wide[id]);
		size_t left = (size_t)(s->data + s->content_end - p);
		if (f.str) {
			const uint8_t *nul = memchr(p, 0, left);
			if (!nul)
				return bad(c, s, at, "a string runs past its packet");
			ev->strs[i] = (const char *)p;
			p = nul + 1;
			continue;
		}
		if (left < f.bits / 8u)
			return bad(c, s, at, "an event runs past its packet");
		ev->args[i] = (int64_t)le(p, f.bits / 8u);
		if (f.sign && f.bits < 64 && (ev->args[i] >> (f.bits - 1)) & 1)
			ev->args[i] -= INT64_C(1) << f.bits;
		p += f.bits / 8u;
	}
	s->pos = (size_t)(p - s->data);
	return 1;
}

static bool before(const struct csrc *c, size_t a, size_t b)
{
	return c->streams[c->heap[a]].seq < c->streams[c->heap[b]].seq;
}

static void swap(struct csrc *c, size_t a, size_t b)
{
	size_t t = c->heap[a];
	c->heap[a] = c->heap[b];
	c->heap[b] = t;
}

static void push(struct csrc *c, size_t si)
{
	size_t i = c->nheap++;
	c->heap[i] = si;
	for (; i && before(c, i, (i - 1) / 2); i = (i - 1) / 2)
		swap(c, i, (i - 1) / 2);
}

static void sift_down(struct csrc *c)
{
	for (size_t i = 0;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < c->nheap && before(c, l, m))
			m = l;
		if (l + 1 < c->nheap && before(c, l + 1, m))
			m = l + 1;
		if (m == i)
			return;
		swap(c, i, m);
		i = m;
	}
}

static int csrc_next(struct djp_source *src, struct djp_ev *ev, uint64_t deadline_ns)
{
	struct csrc *c = (struct csrc *)src;
	struct cstream *s;
	int rc;

	(void)deadline_ns;
	if (!c->nheap) {
		src->end_why = "the trace was read";
		return DJP_SRC_END;
	}
	s = &c->streams[c->heap[0]];
	*ev = s->ev;
	c->now = ev->ts_ns;
	c->events++;
	if ((rc = advance(c, s)) < 0) {
		c->nheap = 0;
		return rc;
	}
	if (!rc)
		c->heap[0] = c->heap[--c->nheap];
	sift_down(c);
	return DJP_SRC_EVENT;
}

static int csrc_arm(struct djp_source *src, const uint32_t *ids, unsigned n, const struct djp_arm_glob *globs,
		    unsigned nglobs)
{
	(void)src, (void)ids, (void)n, (void)globs, (void)nglobs;
	return 0;
}

static int csrc_stop(struct djp_source *src)
{
	(void)src;
	return 0;
}

static uint64_t csrc_lost_total(const struct csrc *c)
{
	uint64_t n = 0;
	for (size_t i = 0; i < c->nstreams; i++)
		n += c->streams[i].discarded;
	return n;
}

static void csrc_report(struct djp_source *src, FILE *f)
{
	struct csrc *c = (struct csrc *)src;
	fprintf(f, "djp trace: %s: %" PRIu64 " events, %" PRIu64 " lost, in %zu streams\n", c->dir, c->events,
		csrc_lost_total(c), c->nstreams);
}

static void csrc_lost_threads(struct djp_source *src, djp_src_lost_thread_fn fn, void *ctx)
{
	struct csrc *c = (struct csrc *)src;
	for (size_t i = 0; i < c->nstreams; i++)
		if (c->streams[i].discarded)
			fn(ctx, c->streams[i].pid, c->streams[i].tid, c->streams[i].discarded);
}

static uint64_t csrc_now(struct djp_source *src)
{
	return ((struct csrc *)src)->now;
}

static void csrc_close(struct djp_source *src)
{
	struct csrc *c = (struct csrc *)src;

	for (size_t i = 0; i < c->nstreams; i++) {
		if (c->streams[i].len)
			munmap((void *)c->streams[i].data, c->streams[i].len);
		free(c->streams[i].name);
	}
	for (unsigned i = 0; i < src->ndescs; i++)
		free((char *)c->descs[i].name);
	free(c->streams);
	free(c->heap);
	free(c->descs);
	free(c->wide);
	free(c->dir);
	free(c);
}

static const struct djp_source_ops csrc_ops = {
	.arm = csrc_arm,
	.next = csrc_next,
	.stop = csrc_stop,
	.report = csrc_report,
	.lost_threads = csrc_lost_threads,
	.now_ns = csrc_now,
	.close = csrc_close,
};

/* One class comment, "djp-class ID NARGS WIDE NFIELDS LABEL [CONV FLAGS
 * LENGTH WIDTH PREC NAME]...", into descriptor id: false when malformed. */
static bool parse_class(struct csrc *c, char *line, unsigned id)
{
	struct djp_ev_desc *d = &c->descs[id];
	char *save, *tok[5 + 6 * DJP_FMT_MAX_FIELDS];
	unsigned n = 0, cid, nargs, wide, nfields;

	for (char *t = strtok_r(line, " ", &save); t && n < sizeof(tok) / sizeof(tok[0]); t = strtok_r(NULL, " ", &save))
		tok[n++] = t;
	if (n < 5 || sscanf(tok[0], "%u", &cid) != 1 || sscanf(tok[1], "%u", &nargs) != 1 ||
	    sscanf(tok[2], "%u", &wide) != 1 || sscanf(tok[3], "%u", &nfields) != 1 || cid != id ||
	    nargs > DJP_EV_MAX_ARGS || wide > 1 || nfields > DJP_FMT_MAX_FIELDS || n != 5 + 6 * nfields)
		return false;
	memset(d, 0, sizeof(*d));
	if (!(d->name = ctf_unhex(tok[4], strlen(tok[4]))))
		return false;
	d->id = id;
	d->format = "";
	d->object = c->dir;
	d->nargs = nargs;
	d->fmt.nfields = nfields;
	c->wide[id] = wide;
	for (unsigned i = 0; i < nfields; i++) {
		struct djp_fmt_field *f = &d->fmt.field[i];
		int conv, width, prec;
		unsigned flags, length;
		char *name;
		char **t = &tok[5 + 6 * i];
		if (sscanf(t[0], "%d", &conv) != 1 || !djp_format_conv_known((char)conv) ||
		    sscanf(t[1], "%u", &flags) != 1 || flags > 0xff || sscanf(t[2], "%u", &length) != 1 ||
		    length > DJP_FMT_LEN_T || sscanf(t[3], "%d", &width) != 1 || width < -1 ||
		    width > DJP_FMT_NUM_MAX || sscanf(t[4], "%d", &prec) != 1 || prec < -1 || prec > DJP_FMT_NUM_MAX ||
		    !(name = ctf_unhex(t[5], strlen(t[5]))))
			return false;
		if (strlen(name) >= DJP_FMT_NAME_MAX) {
			free(name);
			return false;
		}
		f->conv = (char)conv;
		f->flags = (uint8_t)flags;
		f->length = (uint8_t)length;
		f->width = (int16_t)width;
		f->prec = (int16_t)prec;
		strcpy(f->name, name);
		free(name);
	}
	return true;
}

static int read_metadata(struct csrc *c, int dirfd, char *err, size_t errsz)
{
	int fd = openat(dirfd, "metadata", O_RDONLY | O_CLOEXEC);
	char *text = NULL, *p;
	size_t len = 0, cap = 0;
	unsigned n = 0;
	ssize_t r;

	if (fd < 0) {
		snprintf(err, errsz, "%s: no CTF trace here (metadata: %s)", c->dir, strerror(errno));
		return -ENOENT;
	}
	for (;;) {
		if (len + 4096 + 1 > cap) {
			char *t = realloc(text, cap = 2 * cap + 8192);
			if (!t) {
				close(fd);
				free(text);
				snprintf(err, errsz, "%s: out of memory", c->dir);
				return -ENOMEM;
			}
			text = t;
		}
		if ((r = read(fd, text + len, 4096)) <= 0)
			break;
		len += (size_t)r;
	}
	close(fd);
	text[len] = 0;
	if (r < 0 || strncmp(text, CTF_DJP_SIGNATURE "\n", strlen(CTF_DJP_SIGNATURE) + 1) || strlen(text) != len) {
		free(text);
		snprintf(err, errsz, "%s: not a CTF trace djp wrote (its metadata lacks djp's first line)", c->dir);
		return -EINVAL;
	}
	for (p = text; (p = strstr(p, "\n/* djp-class ")); p++)
		n++;
	c->descs = calloc(n + 1, sizeof(*c->descs));
	c->wide = calloc(n + 1, sizeof(*c->wide));
	if (!c->descs || !c->wide) {
		free(text);
		snprintf(err, errsz, "%s: out of memory", c->dir);
		return -ENOMEM;
	}
	for (p = text; (p = strstr(p, "\n/* djp-class ")); p++) {
		char *line = p + strlen("\n/* djp-class "), *end = strstr(line, " */");
		if (end)
			*end = 0;
		if (!end || !parse_class(c, line, c->src.ndescs)) {
			free((char *)c->descs[c->src.ndescs].name); /* a class cut short */
			free(text);
			snprintf(err, errsz, "%s/metadata: event class %u is malformed", c->dir, c->src.ndescs);
			return -EINVAL;
		}
		c->src.ndescs++;
		p = end;
	}
	free(text);
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct cstream *)a)->name, ((const struct cstream *)b)->name);
}

/* Every stream file (a regular file but metadata and hidden ones, as
 * babeltrace2 takes them), mapped. */
static int map_streams(struct csrc *c, int dirfd, char *err, size_t errsz)
{
	int fd = dup(dirfd);
	DIR *dir = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	size_t cap = 0;
	int rc = 0;

	if (!dir) {
		if (fd >= 0)
			close(fd);
		snprintf(err, errsz, "%s: %s", c->dir, strerror(errno));
		return -errno;
	}
	while (!rc && (e = readdir(dir))) {
		struct stat st;
		struct cstream *s;
		int sfd;
		if (e->d_name[0] == '.' || !strcmp(e->d_name, "metadata"))
			continue;
		if ((sfd = openat(dirfd, e->d_name, O_RDONLY | O_CLOEXEC)) < 0 || fstat(sfd, &st)) {
			snprintf(err, errsz, "%s/%s: %s", c->dir, e->d_name, strerror(errno));
			rc = -errno;
		} else if (S_ISREG(st.st_mode) && st.st_size) {
			if (c->nstreams == cap) {
				struct cstream *v = realloc(c->streams, (cap = 2 * cap + 16) * sizeof(*v));
				if (!v) {
					close(sfd);
					snprintf(err, errsz, "%s: out of memory", c->dir);
					rc = -ENOMEM;
					break;
				}
				c->streams = v;
			}
			s = &c->streams[c->nstreams];
			memset(s, 0, sizeof(*s));
			s->len = (size_t)st.st_size;
			s->data = mmap(NULL, s->len, PROT_READ, MAP_PRIVATE, sfd, 0);
			s->name = strdup(e->d_name);
			if (s->data == MAP_FAILED || !s->name) {
				snprintf(err, errsz, "%s/%s: %s", c->dir, e->d_name, strerror(errno));
				rc = -errno;
				if (s->data != MAP_FAILED)
					munmap((void *)s->data, s->len);
				free(s->name);
			} else {
				c->nstreams++;
			}
		}
		if (sfd >= 0)
			close(sfd);
	}
	closedir(dir);
	if (c->nstreams)
		qsort(c->streams, c->nstreams, sizeof(*c->streams), cmp_name);
	return rc;
}

int djp_ctf_source_open(const char *dir, struct djp_source **out, char *err, size_t errsz)
{
	struct csrc *c = calloc(1, sizeof(*c));
	int dirfd, rc;

	if (!c || !(c->dir = strdup(dir))) {
		free(c);
		snprintf(err, errsz, "%s: out of memory", dir);
		return -ENOMEM;
	}
	c->src.ops = &csrc_ops;
	if ((dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0) {
		rc = -errno;
		snprintf(err, errsz, "%s: %s", dir, strerror(errno));
		csrc_close(&c->src);
		return rc;
	}
	rc = read_metadata(c, dirfd, err, errsz);
	if (!rc)
		rc = map_streams(c, dirfd, err, errsz);
	close(dirfd);
	c->src.descs = c->descs;
	if (!rc && !(c->heap = calloc(c->nstreams + 1, sizeof(*c->heap)))) {
		snprintf(err, errsz, "%s: out of memory", dir);
		rc = -ENOMEM;
	}
	for (size_t i = 0; !rc && i < c->nstreams; i++) {
		int a = advance(c, &c->streams[i]);
		if (a < 0) {
			err[0] = 0; /* advance said where */
			rc = a;
		} else if (a) {
			push(c, i);
		}
	}
	if (rc) {
		csrc_close(&c->src);
		return rc;
	}
	*out = &c->src;
	return 0;
}
