/*
 * `djp trace`: record markers in a process or in the kernel and print each
 * event.
 *
 *   djp trace [-c CMD | -x PID | -p PID | -a [PATH...]] [-f FORMAT [-o OUT]]... [--html FILE]
 *             [--slice START,END[,KEY]]... [--snapshot]
 *             [--duration SECONDS] [--buffer-size BYTES] PATTERN[=FORMAT]...
 *   djp trace -k [-f FORMAT [-o OUT]]... [--html FILE] [--duration SECONDS] [--kprobe] PATTERN...
 *   djp trace --from DIR [-f FORMAT [-o OUT]]... [--html FILE] [--slice START,END[,KEY]]...
 *
 * The target records, the tool prints: one loop, whatever the target.  An
 * event source (source/source.h) is opened, -k choosing which:
 * source/process.c (a launched or attached process, through the agent in
 * it, and the processes it forks and execs; with -a every process of a
 * program, running or started later) or source/kernel.c (the
 * markers of loaded modules, through /dev/djprobe).  Each PATTERN is armed
 * on it; a pattern that matches nothing is an error and nothing stays
 * armed.  Then the target runs (-c: its main), the source hands out events
 * in time order, each with its marker named, and the output
 * (output/output.h: text, JSON, Perfetto's JSON, the page or CTF; several
 * at once, each -f with the -o after it, and --html the page besides)
 * writes them, flushed whenever the source pauses, when it is also told
 * the events lost by then.  --from reads a CTF trace djp wrote
 * (source/ctf.c) instead of a target, to write it in another format.  In
 * --snapshot mode the rings overwrite their oldest events instead of
 * dropping new ones, and the process source reads them only on SIGUSR1
 * and at the end: a flight recorder.
 *
 * The end comes from SIGINT or SIGTERM, --duration, a failed write, or the
 * source (the command's exit with -c, the process's death or its session's
 * end with -x).  The source is stopped (every probe disarmed), what was
 * recorded up to then is printed, and the source's summary goes to
 * stderr.  With -c the tool exits with the command's status (128 + signal
 * when it was killed), ending the command with SIGTERM if the trace ended
 * first.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "lib/escape.h"
#include "lib/proto.h"
#include "line_out.h"
#include "tools/djp/session/session.h"
#include "trace.h"

/* A %s argument keeps at most this many bytes, NUL included: SystemTap's
 * MAXSTRINGLEN, 512 (--max-string-len). */
#define DJP_TRACE_MAXSTRINGLEN 512
#define FLUSH_NS 20000000u /* the kernel source pauses after this long without an event */

static volatile sig_atomic_t snapshot_asked;

static void on_stop(int sig)
{
	session_stop_signal = sig;
}

static void on_usr1(int sig)
{
	(void)sig;
	snapshot_asked = 1;
}

void djp_usage_trace(FILE *out)
{
	fprintf(out,
		"usage: djp trace [-c CMD | -x PID [--force] [--no-children] | -a [PATH...]]\n"
		"                 [-f FORMAT [-o OUT]]... [--html FILE] [--slice START,END[,KEY]]...\n"
		"                 [--snapshot] [--int3] [--no-uprobe]\n"
		"                 [--duration SECONDS] [--buffer-size BYTES] [--max-string-len N]\n"
		"                 PATTERN[=FORMAT]...\n"
		"       djp trace -k [-f FORMAT [-o OUT]]... [--html FILE] [--duration SECONDS]\n"
		"                 [--kprobe] [--max-string-len N] PATTERN...\n"
		"       djp trace --from DIR [-f FORMAT [-o OUT]]... [--html FILE] [--slice START,END[,KEY]]...\n"
		"\n"
		"Record every hit of the markers matching the PATTERNs (globs over marker\n"
		"names; PROVIDER:NAME for SDT probes) and print one line per event:\n"
		"  TIMESTAMP PID TID NAME field=value ...\n"
		"TIMESTAMP is CLOCK_MONOTONIC in seconds.nanoseconds; the fields are named\n"
		"and converted as the marker's format says (argN= where it names none), or\n"
		"as FORMAT says (its %%s arguments copied as strings when the probe fires).\n"
		"Options may come before or after the patterns.\n"
		"\n"
		"  -c CMD         run CMD with the agent preloaded, armed before its main;\n"
		"                 exit with its exit status (stap -c, bpftrace -c)\n"
		"  -x PID, -p PID attach to a running process (the agent is loaded into it\n"
		"                 when it has none) and to its descendants, and follow\n"
		"                 its forks (stap -x, bpftrace -p)\n"
		"  --no-children  with -x: not the descendants PID has at the attach\n"
		"  -a [PATH...]   every process that maps one of the PATHs (with none: every\n"
		"                 process with a marker a PATTERN matches), running now or\n"
		"                 started later (as root: the kernel's exec notices), each\n"
		"                 attached as -x attaches; an argument with a '/' before any\n"
		"                 ':' is a PATH (./prog, /usr/bin/prog), the others PATTERNs\n"
		"  --force        with -x: load the agent even where the process's seccomp\n"
		"                 filter cannot be read (it may kill the process)\n"
		"  --json, -f json  one JSON object per event per line (bpftrace -f json;\n"
		"                 -f text, the default, is the line above)\n"
		"  -f perfetto, --format=perfetto  Chrome's trace-event JSON, for\n"
		"                 ui.perfetto.dev and chrome://tracing: a track per thread,\n"
		"                 markers as instant events, calls and --slice pairs as\n"
		"                 slices, lost events where they were found\n"
		"  -f html        the page --html writes, instead of the events\n"
		"  -f ctf -o DIR  a CTF 1.8 trace in the new or empty directory DIR, for\n"
		"                 babeltrace2 and Trace Compass\n"
		"  -o FILE        write events to FILE instead of stdout (stap -o, bpftrace -o);\n"
		"                 each -f may have its own -o: -f text -f ctf -o DIR prints\n"
		"                 the lines and writes the trace\n"
		"  --from DIR     read the CTF trace djp wrote in DIR instead of a target\n"
		"                 and write it as -f says (no PATTERN)\n"
		"  --html FILE    also write a page a browser opens to FILE: each marker's\n"
		"                 count and rate over time, lost events marked, histograms\n"
		"                 of the durations of calls (func:NAME with func:NAME%%return)\n"
		"                 and of --slice pairs\n"
		"  --slice START,END[,KEY]  each START event (a glob) and its END make a\n"
		"                 slice: the innermost open START of the thread, or with\n"
		"                 KEY the START of the process whose field KEY had the\n"
		"                 same value, on any thread\n"
		"  --snapshot     flight recorder: rings overwrite the oldest events; the\n"
		"                 last events are written on SIGUSR1 and at the end\n"
		"  --duration S   stop after S seconds\n"
		"  --buffer-size B  ring bytes per thread, a power of two (default 1 MiB)\n"
		"  --max-string-len N  a %%s argument keeps N - 1 bytes at most (stap's\n"
		"                 MAXSTRINGLEN, 8 to 1024, default 512); a cut one ends in ...\n"
		"                 (-k: djprobe.ko copies 63 bytes at most)\n"
		"  --int3         arm int3 breakpoints only, never jumps: slower, but safe\n"
		"                 beside another tool's uprobes on the same functions\n"
		"                 (bpftrace, perf probe, SystemTap)\n"
		"  --no-uprobe    where no jump can be placed, an int3 breakpoint handled in\n"
		"                 the target, not the kernel's uprobe (root's default)\n"
		"\n"
		"  -k             markers of loaded kernel modules (djprobe.ko, root only):\n"
		"                 PATTERN is NAMEGLOB or MODGLOB:NAMEGLOB, NAME prints as\n"
		"                 MODULE:NAME, PID TID are 0 0 in interrupt context\n"
		"  --kprobe       with -k: arm with register_kprobe(), not a jump\n"
		"\n"
		"Ends on ^C (SIGINT, SIGTERM), at --duration, or when the target exits, and\n"
		"then prints a summary on stderr: events and lost events per marker and per\n"
		"thread.  A full ring drops new events (counted as lost); the target never\n"
		"waits.\n");
}

static bool kernel_trace(int argc, char **argv);

static int usage_error(const struct trace *t, const char *why)
{
	fprintf(stderr, "djp trace%s: %s (djp trace --help for usage)\n", t->kernel ? " -k" : "", why);
	return 2;
}

/* --slice START,END[,KEY]: START and END globs over event names, KEY a
 * field's name; -1 when it is not that. */
static int add_slice(struct trace *t, char *arg)
{
	char *end = strchr(arg, ','), *key = end ? strchr(end + 1, ',') : NULL;
	struct djp_slice_pair *v;

	if (!end || end == arg || !end[1] || end[1] == ',' || (key && !key[1]))
		return -1;
	*end++ = 0;
	if (key) {
		*key++ = 0;
		for (const char *c = key; *c; c++)
			if (!(*c == '_' || (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			      (c > key && *c >= '0' && *c <= '9')))
				return -1;
	}
	if (!(v = realloc(t->slices, (t->nslices + 1) * sizeof(*v))))
		return -1;
	t->slices = v;
	v[t->nslices++] = (struct djp_slice_pair){ .start = arg, .end = end, .key = key };
	return 0;
}

/* -a PATH...: an argument with a '/' before any ':' is a PATH (a marker
 * name has neither; func:, line: and PROVIDER:NAME have the ':' first),
 * taken out of the patterns; each must be a file.  -1, or the status after
 * one line on stderr. */
static int all_paths(struct trace *t)
{
	int np = 0;
	char safe[4200];

	if (!(t->paths = calloc((size_t)t->npatterns + 1, sizeof(*t->paths)))) {
		perror("djp trace");
		return 1;
	}
	for (int i = 0; i < t->npatterns; i++) {
		const char *a = t->patterns[i];
		size_t slash = strcspn(a, "/"), colon = strcspn(a, ":");
		struct stat st;
		int err;
		if (!a[slash] || colon < slash) {
			t->patterns[i - np] = t->patterns[i];
			continue;
		}
		err = stat(a, &st) ? errno : 0;
		if (err || !S_ISREG(st.st_mode)) {
			fprintf(stderr, "djp trace: -a: '%s': %s\n", djp_escape_c(safe, sizeof(safe), a, false),
				err ? strerror(err) : "not a file");
			return 1;
		}
		t->paths[np++] = a;
	}
	t->npatterns -= np;
	t->o.paths = t->paths;
	t->o.npaths = (unsigned)np;
	if (!t->npatterns)
		return usage_error(t, "no PATTERN (only PATHs)");
	return -1;
}

static int parse_args(struct trace *t, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },	    { "snapshot", no_argument, NULL, 's' },
		{ "duration", required_argument, NULL, 'd' }, { "buffer-size", required_argument, NULL, 'b' },
		{ "int3", no_argument, NULL, 'i' },	    { "help", no_argument, NULL, 'h' },
		{ "max-string-len", required_argument, NULL, 'm' },
		{ "force", no_argument, NULL, 'F' },
		{ "kprobe", no_argument, NULL, 'K' },
		{ "no-children", no_argument, NULL, 'C' },
		{ "format", required_argument, NULL, 'f' },
		{ "from", required_argument, NULL, 'R' },
		{ "html", required_argument, NULL, 'H' },
		{ "slice", required_argument, NULL, 'S' },
		{ "all", no_argument, NULL, 'a' },
		{ "no-uprobe", no_argument, NULL, 'U' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c, rc;

	/* Options anywhere, as scripts take them (GNU getopt permutes): a
	 * pattern never starts with '-', and "--" ends the options.  -k
	 * anywhere chooses the kernel's markers, for which the options of
	 * processes are unknown. */
	t->kernel = kernel_trace(argc, argv);
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "c:x:p:o:f:hka", longopts, NULL)) != -1) {
		if (t->kernel ? c && strchr("cxpsbiFaR", c) : c == 'K')
			return usage_error(t, t->kernel ? "unknown option (-c, -x, --snapshot and --buffer-size are "
							  "for processes)"
							: "unknown option");
		switch (c) {
		case 'k':
			break;
		case 'K':
			t->kprobe = true;
			break;
		case 'c':
			t->o.cmd = optarg;
			break;
		case 'a':
			t->o.all = true;
			break;
		case 'x':
		case 'p': { /* -p: bpftrace's spelling */
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v <= 0 || v > 0x7fffffff)
				return usage_error(t, "-x needs a process id");
			t->o.pid = (int32_t)v;
			break;
		}
		case 'o':
			if (!t->nouts || t->outs[t->nouts - 1].path) {
				if (t->nouts == TRACE_MAX_OUTS - 1)
					return usage_error(t, "too many outputs (at most 4)");
				t->nouts++;
			}
			t->outs[t->nouts - 1].path = optarg;
			break;
		case 'R':
			t->from = optarg;
			break;
		case 'H':
			t->html = optarg;
			break;
		case 'S':
			if (add_slice(t, optarg))
				return usage_error(t, "--slice takes START,END or START,END,KEY (KEY a field name)");
			break;
		case 's':
			t->o.snapshot = true;
			break;
		case 'i':
			t->int3 = true;
			break;
		case 'U':
			session_uprobes_disable();
			break;
		case 'F':
			session_inject_force = true;
			break;
		case 'C':
			session_no_children = true;
			break;
		case 'j':
		case 'f': { /* bpftrace's -f FORMAT; the -o after it is its file */
			struct djp_output probe;
			if (c == 'j')
				optarg = "json";
			if (!djp_output_init(&probe, optarg, NULL))
				return usage_error(t, "-f takes text, json, perfetto, html or ctf");
			if (!t->nouts || t->outs[t->nouts - 1].format) {
				if (t->nouts == TRACE_MAX_OUTS - 1)
					return usage_error(t, "too many outputs (at most 4)");
				t->nouts++;
			}
			t->outs[t->nouts - 1].format = optarg;
			break;
		}
		case 'd':
			t->duration = strtod(optarg, &end);
			if (!*optarg || *end || !(t->duration > 0) || !isfinite(t->duration))
				return usage_error(t, "--duration needs a positive number of seconds");
			break;
		case 'b': {
			unsigned long long v = strtoull(optarg, &end, 0);
			if (!*optarg || *end || v < DJP_RING_MIN_DEFAULT_SIZE || v > (1ull << 28) || (v & (v - 1)))
				return usage_error(t, "--buffer-size needs a power of two from 16384 to 256 MiB");
			t->o.buffer_size = (size_t)v;
			break;
		}
		case 'm': {
			/* stap's MAXSTRINGLEN: the copy's size, NUL included */
			unsigned long v = strtoul(optarg, &end, 10);
			if (!*optarg || *end || v < 8 || v > DJP_RING_STR_BOUND_MAX)
				return usage_error(t, "--max-string-len needs a number of bytes from 8 to 1024");
			t->o.str_bound = (unsigned)v;
			break;
		}
		case 'h':
			djp_usage_trace(stdout);
			return 0;
		default:
			if (t->kernel)
				return usage_error(t, optopt == 'o' ? "option needs an argument"
								    : "unknown option (-c, -x, --snapshot and "
								      "--buffer-size are for processes)");
			return usage_error(t, optopt && strchr("cxpofHS", optopt) ? "option needs an argument"
										 : "unknown option");
		}
	}
	if (!t->nouts)
		t->nouts = 1; /* text on standard output */
	for (unsigned i = 0; i < t->nouts; i++) {
		struct trace_out *o = &t->outs[i];
		struct djp_output probe;
		djp_output_init(&probe, o->format ? o->format : "text", NULL);
		if (probe.ops->open_dir && !o->path)
			return usage_error(t, "-f ctf needs -o DIR");
		for (unsigned j = 0; j < i && !o->path; j++)
			if (!t->outs[j].path)
				return usage_error(t, "two outputs to standard output (give each -f its -o)");
	}
	if (t->html) /* --html FILE: the page, besides */
		t->outs[t->nouts++] = (struct trace_out){ .format = "html", .path = t->html };
	if (t->from) {
		if (t->o.cmd || t->o.pid || t->o.all || t->kernel)
			return usage_error(t, "--from reads a trace: no -c, -x, -a or -k");
		if (optind < argc)
			return usage_error(t, "--from takes no PATTERN (the trace holds what was recorded)");
		return -1;
	}
	if (!t->kernel && (!!t->o.cmd + !!t->o.pid + t->o.all) != 1)
		return usage_error(t, "give exactly one of -c CMD, -x PID and -a");
	if (optind >= argc)
		return usage_error(t, "no PATTERN");
	t->patterns = argv + optind;
	t->npatterns = argc - optind;
	if (t->o.all && (rc = all_paths(t)) >= 0)
		return rc;
	if (t->kernel && t->npatterns > 64)
		return usage_error(t, "too many PATTERNs (at most 64)");
	t->formats = calloc((size_t)t->npatterns, sizeof(*t->formats));
	t->str_args = calloc((size_t)t->npatterns, sizeof(*t->str_args));
	if (!t->formats || !t->str_args) {
		perror("djp trace");
		return 1;
	}
	if (t->kernel) /* NAMEGLOB or MODGLOB:NAMEGLOB, as they are */
		return -1;
	for (int i = 0; i < t->npatterns; i++) {
		/* PATTERN=FORMAT: print with FORMAT, copy its %s */
		char *eq = strchr(t->patterns[i], '=');
		if (eq) {
			struct djp_fmt f;
			const char *why;
			*eq = 0;
			t->formats[i] = eq + 1;
			if (djp_format_parse(t->formats[i], &f, &why) < 0) {
				fprintf(stderr, "djp trace: pattern '%s': format '%s': %s\n", t->patterns[i],
					t->formats[i], why);
				return 2;
			}
			/* the agent's own reading of which arguments a
			 * format's %s are */
			t->str_args[i] = djp_format_str_mask(t->formats[i], f.nfields);
		}
	}
	for (int i = 0; i < t->npatterns; i++) {
		/* The agent takes patterns of up to DJP_AGENT_PATTERN_MAX
		 * bytes; say so here rather than lose the session. */
		size_t n = strlen(t->patterns[i]);
		if (n > DJP_AGENT_PATTERN_MAX || !n) {
			char head[48], safe[200];
			snprintf(head, sizeof(head), "%.40s", t->patterns[i]);
			fprintf(stderr, "djp trace: pattern '%s%s': %s (%zu characters; at most %d)\n",
				djp_escape_c(safe, sizeof(safe), head, false), n > 40 ? "..." : "",
				n ? "too long" : "empty", n, DJP_AGENT_PATTERN_MAX);
			return 2;
		}
	}
	return -1;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Every descriptor the source has (the kernel's: its rings are this
 * trace's, so an event is of one of its patterns), and the patterns. */
static int arm_all(struct djp_source *src, const struct djp_arm_glob *globs, unsigned n)
{
	uint32_t *ids = calloc(src->ndescs + 1, sizeof(*ids));
	int rc;

	if (!ids) {
		fprintf(stderr, "djp: out of memory\n");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < src->ndescs; i++)
		ids[i] = i;
	rc = src->ops->arm(src, ids, src->ndescs, globs, n);
	free(ids);
	return rc;
}

/* The source -k chose, opened and armed with the patterns, its target
 * running: 0, or 1 after one line on stderr (nothing left armed). */
static int open_source(struct trace *t)
{
	struct djp_arm_glob *globs = calloc((size_t)t->npatterns, sizeof(*globs));
	char err[512];
	int rc;

	t->o.formats = t->formats;
	err[0] = 0;
	rc = t->from	 ? djp_ctf_source_open(t->from, &t->src, err, sizeof(err))
	     : t->kernel ? djp_kernel_source_open(&t->src, err, sizeof(err))
			 : djp_process_source_open(&t->o, &t->src, err, sizeof(err));

	if (rc < 0) {
		if (err[0])
			fprintf(stderr, "djp: %s%s\n", t->kernel ? "trace -k: " : "", err);
		free(globs);
		return 1;
	}
	if (!globs) {
		fprintf(stderr, "djp: out of memory\n");
		return 1;
	}
	for (int i = 0; i < t->npatterns; i++)
		globs[i] = (struct djp_arm_glob){ .glob = t->patterns[i], .now = true, .str_args = t->str_args[i] };
	t->src->want_monotonic = true; /* the boot's clock, as perf and ftrace */
	t->src->want_unknown = true;   /* printed as marker#ID */
	t->src->want_int3 = t->int3 || t->kprobe;
	t->src->str_bound = t->o.str_bound;
	t->src->interrupted = &session_stop_signal;
	t->src->quiet = true; /* the summary says the losses */
	t->src->who = "trace -k";
	rc = arm_all(t->src, globs, (unsigned)t->npatterns);
	free(globs);
	if (rc || (t->src->ops->start && t->src->ops->start(t->src)))
		return 1;
	return 0;
}

static void install_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

/* Flush and close an output; true (after one line on stderr) when any
 * write to it failed, now or earlier. */
static bool write_failed(struct trace_out *o)
{
	bool bad;
	int err;

	if (!o->out) { /* a directory: its end() said so */
		bad = o->output.failed;
		if (o->output.ops && o->output.ops->close)
			o->output.ops->close(&o->output);
		return bad;
	}
	bad = line_out_flush(o->out) != 0;
	err = bad ? errno : 0;
	bad |= ferror(o->out) != 0;
	if (fclose(o->out) && !bad) {
		bad = true;
		err = errno;
	}
	o->out = NULL;
	if (bad)
		fprintf(stderr, "djp: %s: cannot write the trace: %s\n", o->path ? o->path : "standard output",
			err ? strerror(err) : "a write failed");
	return bad;
}

static void event_out(struct trace *t, const struct djp_ev *ev)
{
	for (unsigned i = 0; i < t->nouts; i++)
		djp_output_event(&t->outs[i].output, ev);
}

static bool out_error(const struct trace *t)
{
	for (unsigned i = 0; i < t->nouts; i++)
		if (t->outs[i].out ? ferror(t->outs[i].out) != 0 : t->outs[i].output.failed)
			return true;
	return false;
}

/* Each output made: its file or directory opened, before the target is
 * touched (a bad OUT leaves it as it was); 0, or 1 after one line. */
static int open_outputs(struct trace *t)
{
	char err[512];

	for (unsigned i = 0; i < t->nouts; i++) {
		struct trace_out *o = &t->outs[i];
		djp_output_init(&o->output, o->format ? o->format : "text", NULL);
		if (o->output.ops->open_dir) {
			if (o->output.ops->open_dir(&o->output, o->path, err, sizeof(err)) < 0) {
				fprintf(stderr, "djp: %s\n", err);
				return 1;
			}
			continue;
		}
		/* in whole lines: the command may write to the same output */
		if (!(o->out = line_out_open(o->path))) {
			fprintf(stderr, "djp: %s: %s\n", o->path ? o->path : "standard output", strerror(errno));
			return 1;
		}
		o->output.out = o->out;
	}
	for (unsigned i = 0; i < t->nouts; i++) {
		struct djp_output *o = &t->outs[i].output;
		o->slices = t->slices;
		o->nslices = t->nslices;
		o->patterns = t->patterns;
		o->npatterns = (unsigned)t->npatterns;
	}
	return 0;
}

/* Each thread's losses, as the summary counted them, to the outputs that
 * carry them (CTF). */
static void lost_out(void *ctx, int32_t pid, int32_t tid, uint64_t n)
{
	struct trace *t = ctx;
	for (unsigned i = 0; i < t->nouts; i++)
		if (t->outs[i].output.ops->lost_thread)
			t->outs[i].output.ops->lost_thread(&t->outs[i].output, pid, tid, n);
}

static void lost_to_outputs(void *ctx, const struct djp_ev_desc *d, int32_t pid, uint64_t n)
{
	struct trace *t = ctx;
	uint64_t now = t->src->ops->now_ns(t->src);
	const char *name = d ? (d->label ? d->label : d->name) : NULL;

	for (unsigned i = 0; i < t->nouts; i++)
		djp_output_lost(&t->outs[i].output, now, pid, name, n);
}

/* The events lost since the last look, to the outputs that draw them. */
static void tell_lost(struct trace *t)
{
	bool wanted = false;

	for (unsigned i = 0; i < t->nouts; i++)
		wanted |= t->outs[i].output.ops->lost != NULL;
	if (t->src->ops->lost_new && wanted)
		t->src->ops->lost_new(t->src, lost_to_outputs, t);
}

/* Events to the output until the target ends, ^C, --duration or a failed
 * write: why, in why.  The output is flushed whenever the source pauses
 * (after a round of the processes; the kernel's, after 20 ms without an
 * event). */
static const char *run(struct trace *t, char *why, size_t whysz)
{
	struct djp_source *src = t->src;
	double start = now_s();
	uint64_t printed = 0, n = 0, deadline = src->ops->now_ns(src) + FLUSH_NS;
	struct djp_ev ev;

	for (;;) {
		int rc = src->ops->next(src, &ev, deadline);
		if (rc == DJP_SRC_EVENT) {
			event_out(t, &ev);
			n++;
			continue;
		}
		deadline = src->ops->now_ns(src) + FLUSH_NS;
		tell_lost(t);
		if (n != printed) {
			printed = n;
			for (unsigned i = 0; i < t->nouts; i++) /* once a round, not once a process */
				if (t->outs[i].out)
					fflush(t->outs[i].out);
		}
		if (rc == DJP_SRC_END)
			return src->end_why ? src->end_why : "the source ended";
		if (rc < DJP_SRC_END) {
			snprintf(why, whysz, "stopped: %s", strerror(-rc));
			return why;
		}
		if (session_stop_signal) {
			snprintf(why, whysz, "stopped by %s", strsignal(session_stop_signal));
			return why;
		}
		if (out_error(t))
			return "stopped: cannot write the events (output closed?)";
		if (t->duration > 0 && now_s() - start >= t->duration) {
			snprintf(why, whysz, "stopped after %g s", t->duration);
			return why;
		}
	}
}

/* -k among the options: the kernel's markers (source/kernel.c); its options'
 * values are not looked at. */
static bool kernel_trace(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-k"))
			return true;
		if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "-x") || !strcmp(argv[i], "-o") ||
		    !strcmp(argv[i], "-f") || !strcmp(argv[i], "--format") || !strcmp(argv[i], "--from") ||
		    !strcmp(argv[i], "--duration") || !strcmp(argv[i], "--buffer-size") ||
		    !strcmp(argv[i], "--max-string-len") || !strcmp(argv[i], "--html") || !strcmp(argv[i], "--slice"))
			i++; /* and its value */
	}
	return false;
}

int djp_cmd_trace(int argc, char **argv)
{
	struct trace t = { .o.str_bound = DJP_TRACE_MAXSTRINGLEN, .o.snapshot_asked = &snapshot_asked };
	struct djp_ev ev;
	char why[128];
	const char *reason;
	int rc;

	if ((rc = parse_args(&t, argc, argv)) >= 0)
		goto out;
	if (open_outputs(&t)) {
		rc = 1;
		goto out;
	}
	install_signals();
	if (open_source(&t)) {
		rc = 1;
		goto out;
	}
	for (unsigned i = 0; i < t.nouts; i++)
		djp_output_begin(&t.outs[i].output);
	reason = run(&t, why, sizeof(why));
	/* every probe disarmed, then everything recorded until then */
	t.src->ops->stop(t.src);
	while (t.src->ops->next(t.src, &ev, UINT64_MAX) == DJP_SRC_EVENT)
		event_out(&t, &ev);
	tell_lost(&t);
	fprintf(stderr, "djp trace: %s\n", reason);
	if (t.src->ops->report)
		t.src->ops->report(t.src, stderr);
	/* the losses, once the summary has counted them */
	if (t.src->ops->lost_threads)
		t.src->ops->lost_threads(t.src, lost_out, &t);
	for (unsigned i = 0; i < t.nouts; i++)
		djp_output_end(&t.outs[i].output);
	rc = t.src->ops->exit_status ? t.src->ops->exit_status(t.src) : 0;
out:
	for (unsigned i = 0; i < t.nouts; i++)
		if ((t.outs[i].out || t.outs[i].output.ops) && write_failed(&t.outs[i]))
			rc = 1; /* events that did not reach the output: as djp list */
	if (t.src)
		t.src->ops->close(t.src);
	free(t.formats);
	free(t.str_args);
	free(t.slices);
	free(t.paths);
	return rc;
}
