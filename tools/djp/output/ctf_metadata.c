/*
 * The CTF trace's description: its event classes, and the TSDL metadata
 * file that declares them for babeltrace2 and Trace Compass.
 *
 * The metadata declares the layout of ctf_layout.h: the packet header and
 * context, the event header (id, timestamp) and context (vpid, vtid and
 * cpu_id, as LTTng names them, and seq), and one event per class with a field per
 * argument, named as the marker's format names it (argN where it names
 * none).  Every field name is written with a leading underscore, which
 * CTF readers take off: a name that is a TSDL keyword (`align`, `string`)
 * stays a name.  The clock is CLOCK_MONOTONIC in ns, the boot's clock the
 * text output prints, with LTTng's offset: CLOCK_REALTIME less
 * CLOCK_MONOTONIC, taken over the narrowest of a few readings, so that
 * babeltrace2 and Trace Compass show wall-clock times on which the traces
 * of several processes, and the kernel's, line up.
 *
 * Before each event block a comment holds the class as djp knows it (its
 * name and parsed format, in hex), which `djp trace --from` reads instead
 * of parsing TSDL: its conversions, widths and flags print the events
 * exactly as the live trace did.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ctf.h"
#include "ctf_layout.h"
#include "lib/escape.h"

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

static int64_t ns_of(clockid_t c)
{
	struct timespec ts;
	clock_gettime(c, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int ctf_trace_init(struct ctf_trace *t, char *err, size_t errsz)
{
	int64_t best = INT64_MAX, offset = 0;

	memset(t, 0, sizeof(*t));
	if (getrandom(t->uuid, sizeof(t->uuid), 0) != (ssize_t)sizeof(t->uuid)) {
		snprintf(err, errsz, "no random bytes for the trace's uuid: %s", strerror(errno));
		return -1;
	}
	t->uuid[6] = (uint8_t)((t->uuid[6] & 0x0f) | 0x40); /* version 4 */
	t->uuid[8] = (uint8_t)((t->uuid[8] & 0x3f) | 0x80);
	/* the monotonic reading closest to the realtime one: the narrowest
	 * of a few monotonic, realtime, monotonic triples */
	for (int i = 0; i < 5; i++) {
		int64_t m0 = ns_of(CLOCK_MONOTONIC), r = ns_of(CLOCK_REALTIME), m1 = ns_of(CLOCK_MONOTONIC);
		if (m1 - m0 < best) {
			best = m1 - m0;
			offset = r - (m0 + (m1 - m0) / 2);
		}
	}
	t->offset_s = offset / 1000000000;
	t->offset_ns = offset % 1000000000;
	if (t->offset_ns < 0) {
		t->offset_ns += 1000000000;
		t->offset_s--;
	}
	return 0;
}

void ctf_trace_free(struct ctf_trace *t)
{
	for (unsigned i = 0; i < t->nclasses; i++)
		free(t->classes[i].label);
	free(t->classes);
	memset(t, 0, sizeof(*t));
}

int ctf_trace_class(struct ctf_trace *t, const char *label, const struct djp_fmt *fmt, unsigned nargs, bool wide)
{
	struct ctf_class k = { .nargs = nargs, .wide = wide };
	uint64_t h = 0xcbf29ce484222325ull;

	/* the format's fields as parsed, whatever its text */
	if (fmt && fmt->nfields)
		memcpy(&k.fmt, fmt, sizeof(k.fmt));
	for (unsigned i = k.fmt.nfields; i < DJP_FMT_MAX_FIELDS; i++)
		memset(&k.fmt.field[i], 0, sizeof(k.fmt.field[i]));
	h = fnv(h, label, strlen(label) + 1);
	h = fnv(h, &k.fmt, sizeof(k.fmt));
	h = fnv(h, &nargs, sizeof(nargs));
	k.hash = fnv(h, &wide, 1);
	for (unsigned i = 0; i < t->nclasses; i++) {
		const struct ctf_class *c = &t->classes[i];
		if (c->hash == k.hash && c->nargs == nargs && c->wide == wide && !strcmp(c->label, label) &&
		    !memcmp(&c->fmt, &k.fmt, sizeof(k.fmt)))
			return (int)i;
	}
	if (t->nclasses == t->cap_classes) {
		unsigned cap = t->cap_classes ? t->cap_classes * 2 : 16;
		struct ctf_class *v = realloc(t->classes, cap * sizeof(*v));
		if (!v)
			return -1;
		t->classes = v;
		t->cap_classes = cap;
	}
	if (!(k.label = strdup(label)))
		return -1;
	t->classes[t->nclasses] = k;
	return (int)t->nclasses++;
}

void ctf_hex(FILE *f, const char *s)
{
	if (!*s)
		fputc('-', f);
	for (; *s; s++)
		fprintf(f, "%02x", (unsigned char)*s);
}

char *ctf_unhex(const char *h, size_t n)
{
	char *s;

	if (n == 1 && *h == '-')
		n = 0;
	if (n % 2 || !(s = malloc(n / 2 + 1)))
		return NULL;
	for (size_t i = 0; i < n / 2; i++) {
		unsigned v;
		if (sscanf(h + 2 * i, "%2x", &v) != 1 || !v) {
			free(s);
			return NULL;
		}
		s[i] = (char)v;
	}
	s[n / 2] = 0;
	return s;
}

/* The field name of argument i: the format's, else argN; one a field
 * before it has taken gets argN, then argN_I. */
static void field_name(const struct ctf_class *c, unsigned i, char names[][DJP_FMT_NAME_MAX + 16])
{
	const char *f = i < c->fmt.nfields ? c->fmt.field[i].name : "";
	bool taken;

	snprintf(names[i], sizeof(names[i]), "%s", f);
	for (unsigned round = 0;; round++) {
		if (!names[i][0] || round == 1)
			snprintf(names[i], sizeof(names[i]), "arg%u", i + 1);
		else if (round > 1)
			snprintf(names[i], sizeof(names[i]), "arg%u_%u", i + 1, round);
		taken = false;
		for (unsigned j = 0; j < i && !taken; j++)
			taken = !strcmp(names[j], names[i]);
		if (!taken)
			return;
	}
}

static void write_class(FILE *f, const struct ctf_class *c, unsigned id)
{
	char names[DJP_FMT_MAX_FIELDS][DJP_FMT_NAME_MAX + 16], safe[4 * 512 + 8];

	fprintf(f, "\n/* djp-class %u %u %u %u ", id, c->nargs, c->wide, c->fmt.nfields);
	ctf_hex(f, c->label);
	for (unsigned i = 0; i < c->fmt.nfields; i++) {
		const struct djp_fmt_field *d = &c->fmt.field[i];
		fprintf(f, " %d %u %u %d %d ", d->conv, d->flags, d->length, d->width, d->prec);
		ctf_hex(f, d->name);
	}
	fprintf(f, " */\nevent {\n\tname = \"%s\";\n\tid = %u;\n\tstream_id = 0;\n\tfields := struct {\n",
		djp_escape_c(safe, sizeof(safe), strlen(c->label) < 512 ? c->label : "(name too long)", true), id);
	for (unsigned i = 0; i < c->nargs && i < DJP_FMT_MAX_FIELDS; i++) {
		struct ctf_field l = ctf_field_of(&c->fmt, i, c->wide);
		field_name(c, i, names);
		if (l.str)
			fprintf(f, "\t\tstring { encoding = UTF8; } _%s;\n", names[i]);
		else
			fprintf(f, "\t\tinteger { size = %u; align = 8; signed = %s; base = %u; byte_order = le; } _%s;\n",
				l.bits, l.sign ? "true" : "false", l.base, names[i]);
	}
	fputs("\t};\n};\n", f);
}

static void write_all(FILE *f, const struct ctf_trace *t)
{
	char uuid[40], host[256] = "", safe[4 * sizeof(host)];
	const uint8_t *u = t->uuid;

	snprintf(uuid, sizeof(uuid), "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
		 u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
	gethostname(host, sizeof(host) - 1);
	fprintf(f,
		CTF_DJP_SIGNATURE "\n"
		"\n"
		"typealias integer { size = 8; align = 8; signed = false; } := uint8_t;\n"
		"typealias integer { size = 32; align = 8; signed = false; } := uint32_t;\n"
		"typealias integer { size = 32; align = 8; signed = true; } := int32_t;\n"
		"typealias integer { size = 64; align = 8; signed = false; } := uint64_t;\n"
		"\n"
		"trace {\n"
		"\tmajor = 1;\n"
		"\tminor = 8;\n"
		"\tuuid = \"%s\";\n"
		"\tbyte_order = le;\n"
		"\tpacket.header := struct {\n"
		"\t\tuint32_t magic;\n"
		"\t\tuint8_t uuid[16];\n"
		"\t\tuint32_t stream_id;\n"
		"\t};\n"
		"};\n"
		"\n"
		"env {\n"
		"\thostname = \"%s\";\n"
		"\ttracer_name = \"djp\";\n"
		"};\n"
		"\n"
		"clock {\n"
		"\tname = \"monotonic\";\n"
		"\tuuid = \"%s\";\n"
		"\tdescription = \"CLOCK_MONOTONIC\";\n"
		"\tfreq = 1000000000;\n"
		"\tprecision = 1;\n"
		"\toffset_s = %" PRId64 ";\n"
		"\toffset = %" PRId64 ";\n"
		"\tabsolute = FALSE;\n"
		"};\n"
		"\n"
		"typealias integer { size = 64; align = 8; signed = false; map = clock.monotonic.value; } := "
		"uint64_clock_monotonic_t;\n"
		"\n"
		"stream {\n"
		"\tid = 0;\n"
		"\tpacket.context := struct {\n"
		"\t\tuint64_clock_monotonic_t timestamp_begin;\n"
		"\t\tuint64_clock_monotonic_t timestamp_end;\n"
		"\t\tuint64_t content_size;\n"
		"\t\tuint64_t packet_size;\n"
		"\t\tuint64_t events_discarded;\n"
		"\t\tint32_t vpid;\n"
		"\t\tint32_t vtid;\n"
		"\t};\n"
		"\tevent.header := struct {\n"
		"\t\tuint32_t id;\n"
		"\t\tuint64_clock_monotonic_t timestamp;\n"
		"\t};\n"
		"\tevent.context := struct {\n"
		"\t\tint32_t _vpid;\n"
		"\t\tint32_t _vtid;\n"
		"\t\tint32_t _cpu_id;\n"
		"\t\tuint64_t _seq;\n"
		"\t};\n"
		"};\n",
		uuid, djp_escape_c(safe, sizeof(safe), host, true), uuid, t->offset_s, t->offset_ns);
	for (unsigned i = 0; i < t->nclasses; i++)
		write_class(f, &t->classes[i], i);
}

int ctf_metadata_write(const struct ctf_trace *t, int dirfd)
{
	int fd = openat(dirfd, ".metadata.new", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	FILE *f;
	int bad;

	if (fd < 0)
		return -1;
	if (!(f = fdopen(fd, "w"))) {
		close(fd);
		return -1;
	}
	write_all(f, t);
	bad = ferror(f) | fflush(f);
	if (fclose(f) || bad) {
		if (!errno)
			errno = EIO;
		return -1;
	}
	return renameat(dirfd, ".metadata.new", dirfd, "metadata");
}

bool ctf_dir_empty(int dirfd)
{
	int fd = dup(dirfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *e;
	bool empty = true;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return false;
	}
	while (empty && (e = readdir(d)))
		empty = !strcmp(e->d_name, ".") || !strcmp(e->d_name, "..");
	closedir(d);
	return empty;
}
