/*
 * `djp trace -k`: record markers of loaded kernel modules and print each
 * event.
 *
 *   djp trace -k [--json] [-o FILE] [--duration SECONDS] [--kprobe]
 *                PATTERN...
 *
 * The kernel records, the tool prints, as for a process (trace.c), through
 * /dev/djprobe instead of an agent (kdev_client.c): the device gives this
 * trace its own per-CPU rings, each PATTERN ("NAMEGLOB" or
 * "MODGLOB:NAMEGLOB") is connected to the recorder there, and the tool
 * drains the rings as events come (poll, at most 20 ms apart).  A pattern
 * that matches nothing is an error, and nothing stays armed: closing the
 * device disconnects.  A pattern also covers modules loaded later.
 *
 * Lines are `djp trace`'s, "SECONDS.NANOS PID TID NAME field=value ...",
 * with NAME written MODULE:NAME, and PID and TID those of the task the hit
 * ran in, 0 0 when it interrupted something (a hard interrupt, a
 * softirq); --json adds "cpu".  The rings are per CPU: each drain is
 * copied out and sorted by time before it is printed, as a process's
 * threads are.  The end (SIGINT, SIGTERM, --duration):
 * every probe is disconnected first, so that the last drain holds every
 * event recorded, then the summary on stderr: events and losses (the
 * kernel drops an event when a CPU's ring is full, and a hit that
 * interrupts a hit on the same CPU), per marker.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <djprobe/djprobe.h>

#include "commands.h"
#include "grow.h"
#include "kdev_client.h"
#include "trace.h"

#define KTRACE_POLL_MS 20

static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	stop_sig = sig;
}

struct ktrace {
	FILE *out;
	bool json;
	const char *outfile;
	double duration;
	unsigned flags;
	char **patterns;
	int npatterns;
	int ids[64];
	int nids;
	struct kdev k;
	/* the last drain, sorted by time before it is printed */
	struct kept *kept;
	size_t nkept, capkept;
	uint8_t *arena;
	size_t arena_len, arena_cap;
};

static int usage_error(const char *why)
{
	fprintf(stderr, "djp trace -k: %s (djp trace --help for usage)\n", why);
	return 2;
}

static int parse_args(struct ktrace *t, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },	    { "duration", required_argument, NULL, 'd' },
		{ "kprobe", no_argument, NULL, 'K' },	    { "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ko:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'k':
			break;
		case 'o':
			t->outfile = optarg;
			break;
		case 'j':
			t->json = true;
			break;
		case 'K':
			t->flags |= DJP_FORCE_KPROBE;
			break;
		case 'd':
			t->duration = strtod(optarg, &end);
			if (!*optarg || *end || !(t->duration > 0) || !isfinite(t->duration))
				return usage_error("--duration needs a positive number of seconds");
			break;
		case 'h':
			djp_usage_trace(stdout);
			return 0;
		default:
			return usage_error(optopt == 'o' ? "option needs an argument"
							  : "unknown option (-c, -x, --snapshot and --buffer-size are "
							    "for processes)");
		}
	}
	if (optind >= argc)
		return usage_error("no PATTERN");
	t->patterns = argv + optind;
	t->npatterns = argc - optind;
	if (t->npatterns > (int)(sizeof(t->ids) / sizeof(t->ids[0])))
		return usage_error("too many PATTERNs (at most 64)");
	return -1;
}

/* One event of a drain, kept until the drain is sorted: a copy of it
 * in the arena, and what the drain said of it. */
struct kept {
	size_t off;
	uint64_t ns, seq;
	int32_t pid, tid;
	int cpu;
};

static int keep_one(void *arg, const struct kevent *e)
{
	struct ktrace *t = arg;
	struct kept *k;

	if (!djp_grow((void **)&t->kept, &t->capkept, t->nkept + 1, 1024, sizeof(*t->kept)) ||
	    !djp_grow((void **)&t->arena, &t->arena_cap, t->arena_len + e->ev->size, 1 << 16, 1))
		abort();
	k = &t->kept[t->nkept];
	*k = (struct kept){ t->arena_len, e->ns, t->nkept, e->pid, e->tid, e->cpu };
	t->nkept++;
	memcpy(t->arena + t->arena_len, e->ev, e->ev->size);
	t->arena_len += (e->ev->size + 7) & ~7u;
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct kept *x = a, *y = b;
	if (x->ns != y->ns)
		return x->ns < y->ns ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void print_one(struct ktrace *t, const struct kept *k)
{
	const struct djp_event *ev = (const struct djp_event *)(t->arena + k->off);
	const struct kmarker *m = kdev_marker_of(&t->k, ev->marker_id); /* listed in the drain if new */
	const char *strs[DJP_KRING_MAX_ARGS] = { 0 };
	int64_t args[DJP_KRING_MAX_ARGS];
	unsigned n = ev->nargs < DJP_KRING_MAX_ARGS ? ev->nargs : DJP_KRING_MAX_ARGS;
	char name[32];

	if (!m)
		snprintf(name, sizeof(name), "marker#%u", ev->marker_id);
	for (unsigned i = 0; i < n; i++) {
		args[i] = (int64_t)ev->args[i];
		strs[i] = djp_event_str(ev, i, NULL, NULL); /* copied by the kernel */
	}
	trace_print_event(t->out, t->json, k->ns, k->pid, (uint32_t)k->tid, k->cpu, m ? m->full : name,
			  m && m->fmt.nfields ? &m->fmt : NULL, n, args, strs);
}

/* Drain, then print in time order across CPUs; the number of events. */
static long drain_print(struct ktrace *t)
{
	long n;

	t->nkept = t->arena_len = 0;
	n = kdev_drain(&t->k, keep_one, t);
	qsort(t->kept, t->nkept, sizeof(*t->kept), by_time);
	for (size_t i = 0; i < t->nkept; i++)
		print_one(t, &t->kept[i]);
	return n;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void summary(struct ktrace *t, const char *why, uint64_t events)
{
	fprintf(stderr, "djp trace: %s\n", why);
	fprintf(stderr, "djp trace: kernel: %" PRIu64 " events, %" PRIu64 " lost\n", events, kdev_lost(&t->k));
	fprintf(stderr, "  %-40s %12s\n", "MARKER", "EVENTS");
	for (size_t i = 0; i < t->k.n; i++)
		if (t->k.v[i].events)
			fprintf(stderr, "  %-40s %12" PRIu64 "\n", t->k.v[i].full, t->k.v[i].events);
	if (t->k.unknown)
		fprintf(stderr, "  %-40s %12" PRIu64 "\n", "(unknown: a module gone)", t->k.unknown);
}

int djp_cmd_ktrace(int argc, char **argv)
{
	struct ktrace t = { .out = stdout };
	struct sigaction sa = { .sa_handler = on_stop };
	char err[512], why[128];
	uint64_t events = 0;
	double start;
	int rc;
	long n;

	if ((rc = parse_args(&t, argc, argv)) >= 0)
		return rc;
	if (kdev_open(&t.k, err, sizeof(err))) {
		fprintf(stderr, "djp: trace -k: %s\n", err);
		return 1;
	}
	for (int i = 0; i < t.npatterns; i++) {
		int id = kdev_connect(&t.k, t.patterns[i], t.flags, err, sizeof(err));
		if (id < 0) {
			fprintf(stderr, "djp: trace -k: %s\n", err);
			kdev_close(&t.k); /* disconnects the others */
			return 1;
		}
		t.ids[t.nids++] = id;
	}
	if (t.outfile && !(t.out = fopen(t.outfile, "w"))) {
		fprintf(stderr, "djp: %s: %s\n", t.outfile, strerror(errno));
		kdev_close(&t.k);
		return 1;
	}
	setvbuf(t.out, NULL, _IOFBF, 1 << 16);
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	start = now_s();
	for (;;) {
		if ((n = drain_print(&t)) > 0) {
			events += (uint64_t)n;
			fflush(t.out);
		}
		if (stop_sig) {
			snprintf(why, sizeof(why), "stopped by %s", strsignal(stop_sig));
			break;
		}
		if (t.duration > 0 && now_s() - start >= t.duration) {
			snprintf(why, sizeof(why), "stopped after %g s", t.duration);
			break;
		}
		if (ferror(t.out)) {
			snprintf(why, sizeof(why), "stopped: cannot write the events (output closed?)");
			break;
		}
		if (n <= 0)
			kdev_wait(&t.k, KTRACE_POLL_MS);
	}
	/* nothing armed, then everything recorded until then */
	for (int i = 0; i < t.nids; i++)
		kdev_disconnect(&t.k, t.ids[i]);
	if ((n = drain_print(&t)) > 0)
		events += (uint64_t)n;
	summary(&t, why, events);
	rc = fflush(t.out) || ferror(t.out) ? 1 : 0;
	if (rc)
		fprintf(stderr, "djp: %s: cannot write the trace\n", t.outfile ? t.outfile : "standard output");
	if (t.out != stdout)
		fclose(t.out);
	kdev_close(&t.k);
	free(t.kept);
	free(t.arena);
	return rc;
}
