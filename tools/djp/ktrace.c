/*
 * `djp trace -k`: record markers of loaded kernel modules and print each
 * event (trace.c parses the options and comes here).
 *
 *   djp trace -k [--json] [-o FILE] [--duration SECONDS] [--kprobe]
 *                [--max-string-len N] PATTERN...
 *
 * The kernel records, the tool prints, as for a process (trace.c), through
 * the kernel source (source/kernel.c: /dev/djprobe, its own per-CPU rings
 * for this trace) and the same output (output/).  Each PATTERN
 * ("NAMEGLOB" or "MODGLOB:NAMEGLOB") is armed on the source; a pattern
 * that matches nothing is an error, and nothing stays armed: closing the
 * device disconnects.  A pattern also covers modules loaded later.  The
 * source hands out the events in time order across CPUs, each named (a
 * marker nobody can name any more, its module gone, as "marker#ID"); the
 * output is flushed whenever the source has nothing more for 20 ms.
 *
 * Lines are `djp trace`'s, "SECONDS.NANOS PID TID NAME field=value ...",
 * with NAME written MODULE:NAME, and PID and TID those of the task the hit
 * ran in, 0 0 when it interrupted something (a hard interrupt, a
 * softirq); --json adds "cpu".  A %s argument is what the kernel copied at
 * the hit, at most 63 bytes, or --max-string-len N - 1 when that is less;
 * a cut one ends in "...".  The end (SIGINT, SIGTERM, --duration): the
 * source stops (every probe disconnected first, so that what it hands out
 * next is every event recorded), then the summary on stderr: events and
 * losses (the kernel drops an event when a CPU's ring is full, and a hit
 * that interrupts a hit on the same CPU), per marker.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "output/output.h"
#include "source/source.h"
#include "trace.h"

#define KTRACE_FLUSH_NS 20000000u /* output flushed when idle this long */

static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	stop_sig = sig;
}

/* Events per descriptor, for the summary. */
struct kcount {
	const struct djp_ev_desc *d;
	uint64_t events;
};

struct ktrace {
	struct trace *t; /* the options */
	FILE *out;
	struct djp_source *src;
	struct djp_output output;
	uint64_t events;
	struct kcount *counts; /* by descriptor id */
	size_t ncounts, capcounts;
};

/* Every marker the patterns match, those of modules loaded later too. */
static int arm(struct ktrace *k)
{
	struct trace *t = k->t;
	struct djp_source *src = k->src;
	struct djp_arm_glob globs[64];
	uint32_t *ids = calloc(src->ndescs + 1, sizeof(*ids));
	int rc;

	if (!ids) {
		fprintf(stderr, "djp: out of memory\n");
		return -ENOMEM;
	}
	/* the rings are this trace's: an event is of one of its patterns */
	for (unsigned i = 0; i < src->ndescs; i++)
		ids[i] = i;
	for (int i = 0; i < t->npatterns; i++)
		globs[i] = (struct djp_arm_glob){ .glob = t->patterns[i], .now = true };
	src->want_monotonic = true;
	src->want_unknown = true;
	src->want_int3 = t->kprobe;
	src->str_bound = t->s.str_bound;
	src->interrupted = &stop_sig;
	src->quiet = true; /* the summary says the losses */
	src->who = "trace -k";
	rc = src->ops->arm(src, ids, src->ndescs, globs, (unsigned)t->npatterns);
	free(ids);
	return rc;
}

static void put(struct ktrace *k, const struct djp_ev *ev)
{
	uint32_t id = ev->desc->id;

	if (!djp_grow((void **)&k->counts, &k->capcounts, (size_t)id + 1, 256, sizeof(*k->counts)))
		abort();
	if (id >= k->ncounts) {
		memset(k->counts + k->ncounts, 0, (id + 1 - k->ncounts) * sizeof(*k->counts));
		k->ncounts = id + 1;
	}
	k->counts[id].d = ev->desc;
	k->counts[id].events++;
	k->events++;
	djp_output_event(&k->output, ev);
}

/* Events until ^C, --duration or a failed write; why it ended in why. */
static void run(struct ktrace *k, char *why, size_t whysz)
{
	struct djp_source *src = k->src;
	double duration = k->t->duration;
	uint64_t start = src->ops->now_ns(src), end = UINT64_MAX, printed = 0;
	struct djp_ev ev;

	if (duration > 0)
		end = start + (uint64_t)(duration * 1e9);
	for (;;) {
		uint64_t now = src->ops->now_ns(src);
		uint64_t deadline = end - now > KTRACE_FLUSH_NS ? now + KTRACE_FLUSH_NS : end;
		int rc = src->ops->next(src, &ev, deadline);
		if (rc == DJP_SRC_EVENT) {
			put(k, &ev);
			continue;
		}
		if (printed != k->events) {
			printed = k->events;
			fflush(k->out);
		}
		if (rc < DJP_SRC_END) {
			snprintf(why, whysz, "stopped: the device failed: %s", strerror(-rc));
			return;
		}
		if (stop_sig) {
			snprintf(why, whysz, "stopped by %s", strsignal(stop_sig));
			return;
		}
		if (src->ops->now_ns(src) >= end) {
			snprintf(why, whysz, "stopped after %g s", duration);
			return;
		}
		if (ferror(k->out)) {
			snprintf(why, whysz, "stopped: cannot write the events (output closed?)");
			return;
		}
	}
}

static void no_lost(void *ctx, const struct djp_ev_desc *d, uint64_t n)
{
	(void)ctx, (void)d, (void)n;
}

static void summary(struct ktrace *k, const char *why)
{
	uint64_t unknown = 0;

	fprintf(stderr, "djp trace: %s\n", why);
	fprintf(stderr, "djp trace: kernel: %" PRIu64 " events, %" PRIu64 " lost\n", k->events,
		k->src->ops->lost(k->src, no_lost, NULL));
	fprintf(stderr, "  %-40s %12s  %s\n", "MODULE:MARKER", "EVENTS", "(EVENTS recorded and read)");
	for (size_t i = 0; i < k->ncounts; i++) {
		const struct kcount *c = &k->counts[i];
		if (c->events && c->d->unknown)
			unknown += c->events;
		else if (c->events)
			fprintf(stderr, "  %-40s %12" PRIu64 "\n", c->d->label, c->events);
	}
	if (unknown)
		fprintf(stderr, "  %-40s %12" PRIu64 "\n", "(unknown: a module gone)", unknown);
}

int ktrace_run(struct trace *t)
{
	struct ktrace k = { .t = t, .out = stdout };
	struct sigaction sa = { .sa_handler = on_stop };
	struct djp_ev ev;
	char err[512], why[128];
	int rc;

	if (djp_kernel_source_open(&k.src, err, sizeof(err))) {
		fprintf(stderr, "djp: trace -k: %s\n", err);
		return 1;
	}
	if (arm(&k)) {
		k.src->ops->close(k.src); /* disconnects what was connected */
		return 1;
	}
	if (t->outfile && !(k.out = fopen(t->outfile, "w"))) {
		fprintf(stderr, "djp: %s: %s\n", t->outfile, strerror(errno));
		k.src->ops->close(k.src);
		return 1;
	}
	setvbuf(k.out, NULL, _IOFBF, 1 << 16);
	djp_output_init(&k.output, t->json ? "json" : "text", k.out);
	djp_output_begin(&k.output);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	run(&k, why, sizeof(why));
	/* nothing armed, then everything recorded until then */
	k.src->ops->stop(k.src);
	while (k.src->ops->next(k.src, &ev, UINT64_MAX) == DJP_SRC_EVENT)
		put(&k, &ev);
	djp_output_end(&k.output);
	summary(&k, why);
	rc = fflush(k.out) || ferror(k.out) ? 1 : 0;
	if (rc)
		fprintf(stderr, "djp: %s: cannot write the trace\n", t->outfile ? t->outfile : "standard output");
	if (k.out != stdout)
		fclose(k.out);
	k.src->ops->close(k.src);
	free(k.counts);
	return rc;
}
