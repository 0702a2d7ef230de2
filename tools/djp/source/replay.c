/*
 * Event sources that need no target: the replay source, the synthetic one
 * (--bench-events) and the null one (scripts with only begin, end and
 * timer probes).
 *
 * The replay source reads a whole text file up front (docs/SCRIPTS.md has
 * the format): marker descriptors, the target's pid, execnames, timestamped
 * events and an optional end time.  Its clock is virtual: it is the time of
 * the last event delivered, or the deadline it was asked to wait for, so
 * timers fire between the right events and gettimeofday_*() give the same
 * answers on every run.  That makes a script's output a pure function of
 * the file, which is what the golden tests need.  This is a test facility
 * (the hidden --replay option), not a trace format.
 */
#include <ctype.h>
#include <stdbool.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "source.h"
#include "lib/marker_match.h"

struct replay {
	struct djp_source src;
	struct djp_ev_desc *descs;
	unsigned ndescs, cap_descs;
	struct djp_ev *evs;
	size_t nevs, cap_evs, pos;
	uint64_t clock, end_ts;
	bool has_end;
	char **strs; /* every string owned */
	size_t nstrs, cap_strs;
	struct {
		int32_t pid;
		char *comm;
	} comms[64];
	unsigned ncomms;
	struct { /* `memory ADDR HEX`: the target's memory, for %m and user_string */
		uint64_t addr;
		uint8_t *bytes;
		size_t len;
	} mems[32];
	unsigned nmems;
	struct { /* `cpu TID N`: the thread's events ran on CPU N (else 0) */
		int32_t tid, cpu;
	} cpus[64];
	unsigned ncpus;
};

static char *own(struct replay *r, const char *s, size_t n)
{
	char *d = malloc(n + 1);
	if (!d)
		abort();
	memcpy(d, s, n);
	d[n] = 0;
	if (r->nstrs == r->cap_strs) {
		r->cap_strs = r->cap_strs ? r->cap_strs * 2 : 64;
		r->strs = realloc(r->strs, sizeof(*r->strs) * r->cap_strs);
		if (!r->strs)
			abort();
	}
	r->strs[r->nstrs++] = d;
	return d;
}

/* Split a line into words; "quoted strings" keep spaces and C escapes. */
static int split(struct replay *r, char *line, char **w, bool *quoted, int max)
{
	int n = 0;
	char *p = line;
	while (*p) {
		while (isspace((unsigned char)*p))
			p++;
		if (!*p || *p == '#')
			break;
		if (n == max)
			return -1;
		if (*p == '"') {
			char buf[4096];
			size_t len = 0;
			p++;
			while (*p && *p != '"' && len < sizeof(buf) - 1) {
				if (*p == '\\' && p[1]) {
					p++;
					buf[len++] = *p == 'n' ? '\n' : *p == 't' ? '\t' : *p;
				} else {
					buf[len++] = *p;
				}
				p++;
			}
			if (*p != '"')
				return -1;
			p++;
			quoted[n] = true;
			w[n++] = own(r, buf, len);
		} else {
			char *s = p;
			while (*p && !isspace((unsigned char)*p))
				p++;
			quoted[n] = false;
			w[n++] = own(r, s, (size_t)(p - s));
		}
	}
	return n;
}

static bool parse_i64(const char *s, int64_t *v)
{
	char *end;
	errno = 0;
	if (s[0] == '-')
		*v = strtoll(s, &end, 0);
	else
		*v = (int64_t)strtoull(s, &end, 0);
	return !errno && *s && !*end;
}

static int replay_next(struct djp_source *s, struct djp_ev *ev, uint64_t deadline)
{
	struct replay *r = (struct replay *)s;
	if (r->pos < r->nevs && r->evs[r->pos].ts_ns <= deadline) {
		*ev = r->evs[r->pos++];
		if (ev->ts_ns > r->clock)
			r->clock = ev->ts_ns;
		return DJP_SRC_EVENT;
	}
	if (deadline == UINT64_MAX)
		return DJP_SRC_END;
	if (r->pos >= r->nevs && (!r->has_end || deadline >= r->end_ts)) {
		if (r->has_end)
			r->clock = r->end_ts;
		return DJP_SRC_END;
	}
	if (deadline > r->clock)
		r->clock = deadline;
	return DJP_SRC_TIMEOUT;
}

static uint64_t replay_now(struct djp_source *s)
{
	return ((struct replay *)s)->clock;
}

static void replay_close(struct djp_source *s)
{
	struct replay *r = (struct replay *)s;
	for (size_t i = 0; i < r->nstrs; i++)
		free(r->strs[i]);
	free(r->strs);
	free(r->descs);
	free(r->evs);
	free(r);
}

static int replay_read_mem(struct djp_source *s, int32_t pid, uint64_t addr, void *buf, size_t n)
{
	struct replay *r = (struct replay *)s;
	(void)pid;
	for (unsigned i = 0; i < r->nmems; i++)
		if (addr >= r->mems[i].addr && n <= r->mems[i].len && addr - r->mems[i].addr <= r->mems[i].len - n) {
			memcpy(buf, r->mems[i].bytes + (addr - r->mems[i].addr), n);
			return 0;
		}
	return -EFAULT;
}

static int replay_read_str(struct djp_source *s, int32_t pid, uint64_t addr, char *buf, size_t sz)
{
	size_t got = 0;
	for (; got + 1 < sz; got++) {
		if (replay_read_mem(s, pid, addr + got, buf + got, 1) < 0)
			return -EFAULT;
		if (!buf[got])
			return 0;
	}
	buf[got] = 0;
	return 0;
}

static const struct djp_source_ops replay_ops = {
	.read_str = replay_read_str,
	.read_mem = replay_read_mem,
	.next = replay_next,
	.now_ns = replay_now,
	.close = replay_close,
};

#define FAIL(...)                                                                             \
	do {                                                                                  \
		snprintf(err, errsz, __VA_ARGS__);                                            \
		goto fail;                                                                    \
	} while (0)

int djp_replay_open(const char *path, struct djp_source **out, char *err, size_t errsz)
{
	struct replay *r = calloc(1, sizeof(*r));
	FILE *f = fopen(path, "r");
	char line[8192];
	int lineno = 0;

	if (!r)
		abort();
	if (!f) {
		int e = errno;
		snprintf(err, errsz, "%s: %s", path, strerror(e));
		free(r);
		return -e;
	}
	while (fgets(line, sizeof(line), f)) {
		char *w[20];
		bool q[20];
		int n;
		lineno++;
		n = split(r, line, w, q, 20);
		if (n < 0)
			FAIL("%s:%d: malformed line", path, lineno);
		if (n == 0)
			continue;
		if (!strcmp(w[0], "marker")) {
			struct djp_ev_desc *d;
			const char *why = "";
			if (n < 4 || n > 5 || !q[3])
				FAIL("%s:%d: expected: marker NAME OBJECT \"FORMAT\" [NARGS]", path, lineno);
			if (r->ndescs == r->cap_descs) {
				r->cap_descs = r->cap_descs ? r->cap_descs * 2 : 16;
				r->descs = realloc(r->descs, sizeof(*r->descs) * r->cap_descs);
				if (!r->descs)
					abort();
			}
			d = &r->descs[r->ndescs];
			memset(d, 0, sizeof(*d));
			d->id = r->ndescs;
			{
				size_t plen;
				d->name = djp_marker_split(w[1], &plen); /* an SDT probe: provider:name */
				d->provider = w[1];
				d->provider_len = (unsigned)plen;
			}
			d->object = w[2];
			d->format = w[3];
			if (djp_format_parse(d->format, &d->fmt, &why) < 0)
				FAIL("%s:%d: bad format: %s", path, lineno, why);
			d->nargs = d->fmt.nfields;
			if (n == 5) {
				int64_t na;
				if (!parse_i64(w[4], &na) || na < 0 || na > DJP_EV_MAX_ARGS)
					FAIL("%s:%d: bad argument count", path, lineno);
				d->nargs = (unsigned)na;
			}
			r->ndescs++;
		} else if (!strcmp(w[0], "target") && n == 2) {
			int64_t v;
			if (!parse_i64(w[1], &v))
				FAIL("%s:%d: bad pid", path, lineno);
			r->src.target_pid = (int32_t)v;
		} else if (!strcmp(w[0], "comm") && n == 3) {
			int64_t v;
			if (!parse_i64(w[1], &v) || r->ncomms == 64)
				FAIL("%s:%d: bad comm line", path, lineno);
			r->comms[r->ncomms].pid = (int32_t)v;
			r->comms[r->ncomms++].comm = w[2];
		} else if (!strcmp(w[0], "cpu") && n == 3) {
			int64_t t, c;
			if (!parse_i64(w[1], &t) || !parse_i64(w[2], &c) || c < 0 || r->ncpus == 64)
				FAIL("%s:%d: expected: cpu TID N", path, lineno);
			r->cpus[r->ncpus].tid = (int32_t)t;
			r->cpus[r->ncpus++].cpu = (int32_t)c;
		} else if (!strcmp(w[0], "function") && n == 3) {
			unsigned d;
			for (d = 0; d < r->ndescs && strcmp(r->descs[d].name, w[1]); d++)
				;
			if (d == r->ndescs)
				FAIL("%s:%d: function of an unknown marker '%s'", path, lineno, w[1]);
			r->descs[d].function = w[2];
		} else if (!strcmp(w[0], "memory") && n == 3) {
			int64_t a;
			size_t len = strlen(w[2]) / 2;
			uint8_t *bytes;
			if (!parse_i64(w[1], &a) || strlen(w[2]) % 2 || r->nmems == 32)
				FAIL("%s:%d: expected: memory ADDR HEXBYTES", path, lineno);
			bytes = (uint8_t *)own(r, w[2], len * 2); /* room enough */
			for (size_t i = 0; i < len; i++) {
				unsigned v;
				if (sscanf(w[2] + 2 * i, "%2x", &v) != 1)
					FAIL("%s:%d: bad hex byte at %zu", path, lineno, i);
				bytes[i] = (uint8_t)v;
			}
			r->mems[r->nmems].addr = (uint64_t)a;
			r->mems[r->nmems].bytes = bytes;
			r->mems[r->nmems++].len = len;
		} else if (!strcmp(w[0], "end") && n == 2) {
			int64_t v;
			if (!parse_i64(w[1], &v))
				FAIL("%s:%d: bad end time", path, lineno);
			r->end_ts = (uint64_t)v;
			r->has_end = true;
		} else if (!strcmp(w[0], "event") && n >= 5) {
			struct djp_ev *ev;
			int64_t ts, pid, tid;
			unsigned d;
			if (!parse_i64(w[1], &ts) || !parse_i64(w[2], &pid) || !parse_i64(w[3], &tid))
				FAIL("%s:%d: expected: event TS PID TID MARKER ARGS...", path, lineno);
			for (d = 0; d < r->ndescs && strcmp(r->descs[d].name, w[4]); d++)
				;
			if (d == r->ndescs)
				FAIL("%s:%d: unknown marker '%s'", path, lineno, w[4]);
			if ((unsigned)(n - 5) != r->descs[d].nargs)
				FAIL("%s:%d: marker '%s' has %u arguments, %d given", path, lineno, w[4], r->descs[d].nargs,
				     n - 5);
			if (r->nevs == r->cap_evs) {
				r->cap_evs = r->cap_evs ? r->cap_evs * 2 : 64;
				r->evs = realloc(r->evs, sizeof(*r->evs) * r->cap_evs);
				if (!r->evs)
					abort();
			}
			ev = &r->evs[r->nevs];
			memset(ev, 0, sizeof(*ev));
			ev->desc = (const struct djp_ev_desc *)(uintptr_t)d; /* fixed up below */
			ev->ts_ns = (uint64_t)ts;
			ev->pid = (int32_t)pid;
			ev->tid = (int32_t)tid;
			ev->cpu = 0;
			for (unsigned c = 0; c < r->ncpus; c++)
				if (r->cpus[c].tid == ev->tid)
					ev->cpu = r->cpus[c].cpu;
			ev->nargs = (unsigned)(n - 5);
			for (int i = 5; i < n; i++) {
				if (q[i]) {
					ev->strs[i - 5] = w[i];
					ev->args[i - 5] = (int64_t)(uintptr_t)w[i];
				} else if (!parse_i64(w[i], &ev->args[i - 5])) {
					FAIL("%s:%d: bad argument '%s'", path, lineno, w[i]);
				}
			}
			if (r->nevs && ev->ts_ns < r->evs[r->nevs - 1].ts_ns)
				FAIL("%s:%d: events must be in time order", path, lineno);
			r->nevs++;
		} else {
			FAIL("%s:%d: unknown line '%s'", path, lineno, w[0]);
		}
	}
	fclose(f);
	f = NULL;
	for (size_t i = 0; i < r->nevs; i++) {
		struct djp_ev *ev = &r->evs[i];
		ev->desc = &r->descs[(uintptr_t)ev->desc];
		for (unsigned c = 0; c < r->ncomms; c++)
			if (r->comms[c].pid == ev->pid)
				ev->comm = r->comms[c].comm;
	}
	r->clock = r->nevs ? r->evs[0].ts_ns : 0;
	r->src.ops = &replay_ops;
	r->src.descs = r->descs;
	r->src.ndescs = r->ndescs;
	*out = &r->src;
	return 0;
fail:
	if (f)
		fclose(f);
	replay_close(&r->src);
	return -EINVAL;
}

/* ---- synthetic events for --bench-events ---------------------------------- */

struct synth {
	struct djp_source src;
	struct djp_ev_desc own[8];
	uint64_t left, clock;
	unsigned next_desc;
};

static int synth_next(struct djp_source *s, struct djp_ev *ev, uint64_t deadline)
{
	struct synth *y = (struct synth *)s;
	const struct djp_ev_desc *d;
	if (!y->left)
		return DJP_SRC_END;
	if (y->clock + 100 > deadline) {
		y->clock = deadline;
		return DJP_SRC_TIMEOUT;
	}
	y->left--;
	y->clock += 100;
	d = &y->src.descs[y->next_desc];
	if (++y->next_desc == y->src.ndescs)
		y->next_desc = 0;
	ev->desc = d;
	ev->ts_ns = y->clock;
	ev->pid = ev->tid = 4242;
	ev->cpu = 0;
	ev->comm = NULL;
	ev->ustack = NULL;
	ev->nustack = 0;
	ev->regs = NULL;
	ev->nregs = 0;
	ev->nvar_strs = 0;
	ev->loads = NULL;
	ev->nloads = 0;
	ev->nargs = d->nargs;
	for (unsigned i = 0; i < d->nargs; i++) {
		ev->args[i] = (int64_t)(y->left & 1023);
		ev->strs[i] = d->fmt.field[i].conv == 's' ? "synthetic" : NULL;
	}
	return DJP_SRC_EVENT;
}

static uint64_t synth_now(struct djp_source *s)
{
	return ((struct synth *)s)->clock;
}

static void synth_close(struct djp_source *s)
{
	free(s);
}

static const struct djp_source_ops synth_ops = {
	.next = synth_next,
	.now_ns = synth_now,
	.close = synth_close,
};

int djp_synth_open(const struct djp_source *base, uint64_t n, struct djp_source **out)
{
	static const char *const names[8] = { "rx", "tx", "alloc", "free", "lock", "unlock", "read", "write" };
	struct synth *y = calloc(1, sizeof(*y));
	if (!y)
		return -ENOMEM;
	if (base && base->ndescs) {
		y->src.descs = base->descs;
		y->src.ndescs = base->ndescs;
		y->src.target_pid = base->target_pid;
	} else {
		for (unsigned i = 0; i < 8; i++) {
			y->own[i].id = i;
			y->own[i].name = names[i];
			y->own[i].format = "len=%d";
			y->own[i].object = "/bench/synthetic";
			djp_format_parse("len=%d", &y->own[i].fmt, NULL);
			y->own[i].nargs = 1;
		}
		y->src.descs = y->own;
		y->src.ndescs = 8;
	}
	y->left = n;
	y->clock = 1000000000;
	y->src.ops = &synth_ops;
	*out = &y->src;
	return 0;
}

/* ---- the null source: no events, wall-clock timers ------------------------ */

static uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int null_next(struct djp_source *s, struct djp_ev *ev, uint64_t deadline)
{
	uint64_t now = wall_ns();
	if (deadline == UINT64_MAX) {
		pause(); /* until a signal: Ctrl-C ends the run */
		return DJP_SRC_TIMEOUT;
	}
	if (deadline > now) {
		struct timespec ts = { (time_t)(deadline / 1000000000ull), (long)(deadline % 1000000000ull) };
		clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL);
	}
	return DJP_SRC_TIMEOUT;
}

static uint64_t null_now(struct djp_source *s)
{
	return wall_ns();
}

static void null_close(struct djp_source *s)
{
	free(s);
}

static const struct djp_source_ops null_ops = {
	.next = null_next,
	.now_ns = null_now,
	.close = null_close,
};

int djp_null_open(struct djp_source **out)
{
	struct djp_source *s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ops = &null_ops;
	*out = s;
	return 0;
}
