/*
 * `djp trace`: record markers in a process and print each event.
 *
 *   djp trace [-c CMD | -x PID | -p PID] [--json | -f json] [-o FILE] [--snapshot]
 *             [--duration SECONDS] [--buffer-size BYTES] PATTERN[=FORMAT]...
 *
 * The target records, the tool prints.  The tool gets a session with the
 * agent inside the target (session_target.c), asks it for a ring region (a
 * memfd, passed over the socket and mapped here), for its marker table, and
 * to connect the recorder to each PATTERN; a pattern that matches nothing
 * is an error and nothing stays armed.  With -c, START then lets the command
 * run its main.  From there on the target's threads write events into their
 * rings with no system call and no wait, and the tool drains the rings
 * every few milliseconds (at once again when a drain was busy), printing as
 * it goes.  In --snapshot mode the rings overwrite their oldest events
 * instead of dropping new ones, and the tool reads them only on SIGUSR1 and
 * at the end: a flight recorder.
 *
 * The end comes from SIGINT or SIGTERM, --duration, the command's exit (-c),
 * the process's death (-x), or the session's end.  In an orderly end the
 * tool asks for the agent's counts, says BYE (the agent disarms every probe
 * before it answers), drains what was recorded up to then, and prints the
 * summary on stderr.  If the target is already gone the ring is still
 * mapped here, so what it recorded is drained all the same.  With -c the
 * tool exits with the command's status (128 + signal when it was killed),
 * ending the command with SIGTERM if the trace ended first.
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cmd_path.h"
#include "commands.h"
#include "lib/escape.h"
#include "lib/mapped_file.h"
#include "lib/marker_match.h"
#include "lib/proto.h"
#include "line_out.h"
#include "trace.h"

/* A %s argument keeps at most this many bytes, NUL included: SystemTap's
 * MAXSTRINGLEN, 512 (--max-string-len). */
#define DJP_TRACE_MAXSTRINGLEN 512
#define DRAIN_PERIOD_MS 5
#define DRAIN_IDLE_MS 20
#define BUSY_DRAIN 1024 /* a drain that brought this many: drain again at once */
#define ACCEPT_BUDGET_S 0.003 /* configuring processes that dial in, per round */

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
		"usage: djp trace [-c CMD | -x PID [--force]] [--json] [-o FILE] [--snapshot] [--int3]\n"
		"                 [--duration SECONDS] [--buffer-size BYTES] [--max-string-len N]\n"
		"                 PATTERN[=FORMAT]...\n"
		"       djp trace -k [--json] [-o FILE] [--duration SECONDS] [--kprobe] PATTERN...\n"
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
		"                 when it has none) (stap -x, bpftrace -p)\n"
		"  --force        with -x: load the agent even where the process's seccomp\n"
		"                 filter cannot be read (it may kill the process)\n"
		"  --json, -f json  one JSON object per event per line (bpftrace -f json;\n"
		"                 -f text, the default, is the line above)\n"
		"  -o FILE        write events to FILE instead of stdout (stap -o, bpftrace -o)\n"
		"  --snapshot     flight recorder: rings overwrite the oldest events; the\n"
		"                 last events are written on SIGUSR1 and at the end\n"
		"  --duration S   stop after S seconds\n"
		"  --buffer-size B  ring bytes per thread, a power of two (default 1 MiB)\n"
		"  --max-string-len N  a %%s argument keeps N - 1 bytes at most (stap's\n"
		"                 MAXSTRINGLEN, 8 to 1024, default 512); a cut one ends in ...\n"
		"  --int3         arm int3 breakpoints only, never jumps: slower, but safe\n"
		"                 beside another tool's uprobes on the same functions\n"
		"                 (bpftrace, perf probe, SystemTap)\n"
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

static int usage_error(const char *why)
{
	fprintf(stderr, "djp trace: %s (djp trace --help for usage)\n", why);
	return 2;
}

static int parse_args(struct trace *t, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "json", no_argument, NULL, 'j' },	    { "snapshot", no_argument, NULL, 's' },
		{ "duration", required_argument, NULL, 'd' }, { "buffer-size", required_argument, NULL, 'b' },
		{ "int3", no_argument, NULL, 'i' },	    { "help", no_argument, NULL, 'h' },
		{ "max-string-len", required_argument, NULL, 'm' },
		{ "force", no_argument, NULL, 'F' },
		{ NULL, 0, NULL, 0 },
	};
	char *end;
	int c;

	/* Options anywhere, as scripts take them (GNU getopt permutes): a
	 * pattern never starts with '-', and "--" ends the options. */
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "c:x:p:o:f:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'c':
			t->s.cmd = optarg;
			break;
		case 'x':
		case 'p': { /* -p: bpftrace's spelling */
			long v = strtol(optarg, &end, 10);
			if (!*optarg || *end || v <= 0 || v > 0x7fffffff)
				return usage_error("-x needs a process id");
			t->s.attach_pid = (pid_t)v;
			break;
		}
		case 'o':
			t->outfile = optarg;
			break;
		case 'j':
			t->json = true;
			break;
		case 's':
			t->s.snapshot = true;
			break;
		case 'i':
			t->int3 = true;
			break;
		case 'F':
			session_inject_force = true;
			break;
		case 'f': /* bpftrace's -f FORMAT */
			if (strcmp(optarg, "json") && strcmp(optarg, "text"))
				return usage_error("-f takes json or text");
			t->json = !strcmp(optarg, "json");
			break;
		case 'd':
			t->duration = strtod(optarg, &end);
			if (!*optarg || *end || !(t->duration > 0) || !isfinite(t->duration))
				return usage_error("--duration needs a positive number of seconds");
			break;
		case 'b': {
			unsigned long long v = strtoull(optarg, &end, 0);
			if (!*optarg || *end || v < DJP_RING_MIN_DEFAULT_SIZE || v > (1ull << 28) || (v & (v - 1)))
				return usage_error("--buffer-size needs a power of two from 16384 to 256 MiB");
			t->s.buffer_size = (size_t)v;
			break;
		}
		case 'm': {
			/* stap's MAXSTRINGLEN: the copy's size, NUL included */
			unsigned long v = strtoul(optarg, &end, 10);
			if (!*optarg || *end || v < 8 || v > DJP_RING_STR_BOUND_MAX)
				return usage_error("--max-string-len needs a number of bytes from 8 to 1024");
			t->s.str_bound = (unsigned)v;
			break;
		}
		case 'h':
			djp_usage_trace(stdout);
			return 0;
		default:
			return usage_error(optopt && strchr("cxpof", optopt) ? "option needs an argument"
									      : "unknown option");
		}
	}
	if (!t->s.cmd == !t->s.attach_pid)
		return usage_error("give exactly one of -c CMD and -x PID");
	if (optind >= argc)
		return usage_error("no PATTERN");
	t->patterns = argv + optind;
	t->npatterns = argc - optind;
	t->formats = calloc((size_t)t->npatterns, sizeof(*t->formats));
	t->str_args = calloc((size_t)t->npatterns, sizeof(*t->str_args));
	t->matched = calloc((size_t)t->npatterns, sizeof(*t->matched));
	if (!t->formats || !t->str_args || !t->matched) {
		perror("djp trace");
		return 1;
	}
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
	t->s.fmt_patterns = t->patterns;
	t->s.fmt_formats = t->formats;
	t->s.nfmt = t->npatterns;
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

/* What the messages name the target by: the command (escaped: a path may
 * hold anything), or its pid. */
static void where(struct session *s, char *buf, size_t sz)
{
	if (s->cmd)
		djp_escape_c(buf, sz, s->cmd, false);
	else
		snprintf(buf, sz, "process %d", (int)s->pid);
}

/* No probes but libc's (a wrapper, a shell)? */
static bool only_libc_probes(struct session *s)
{
	for (uint32_t id = 0; id < s->nmarkers; id++)
		if (s->markers[id].known && s->markers[id].object && !djp_path_is_libc(s->markers[id].object))
			return false;
	return true;
}

/* func:NAME, line:FILE:LINE: instruction probes (docs/TRACE.md) */
static bool is_point(const char *pattern)
{
	return !strncmp(pattern, "func:", 5) || !strncmp(pattern, "line:", 5);
}

/*
 * May s be a wrapper or an interpreter of the command (env, runuser, a
 * shell, a PATH shim's interpreter), so that a pattern may yet match in the
 * program it execs in the same process?  When it has no probes but libc's,
 * or when the program it runs is not the file the command names
 * (cmd_path.c: the interpreter of a script).
 */
static bool waits_for_exec(struct trace *t, struct session *s)
{
	return only_libc_probes(s) || cmd_path_runs_other(t->s.cmd, s->program);
}

/* The -c command's own process has nothing a pattern names: say so and
 * which program that is, since what the trace waits for may never come
 * (a wrapper that runs nothing, or whose program has no such function). */
static void waiting_note(struct session *s, const char *why)
{
	char cmd[1024], msg[4 * sizeof(s->errmsg)], prog[4096];

	fprintf(stderr, "djp: %s: %s in %s, the program that was run; waiting for a program it execs\n",
		djp_escape_c(cmd, sizeof(cmd), s->cmd, false), djp_escape_c(msg, sizeof(msg), why, false),
		djp_escape_c(prog, sizeof(prog), s->program[0] ? s->program : "?", false));
}

/* Ring, marker table, patterns, FOLLOW, START (when `start`: a launched
 * command, a child of fork).  0, or 1 after one line on stderr. */
static int configure(struct trace *t, struct session *s, bool start)
{
	char what[1024], msg[4 * sizeof(s->errmsg)], pat[4 * DJP_AGENT_PATTERN_MAX + 4];
	unsigned nsites;

	where(s, what, sizeof(what));
	if (session_hello(s) || session_ring(s) || session_tables(s) || session_list(s)) {
		fprintf(stderr, "djp: %s: %s\n", what, djp_escape_c(msg, sizeof(msg), s->errmsg, false));
		return 1;
	}
	for (int i = 0; i < t->npatterns; i++) {
		unsigned how = t->int3 ? DJP_CONNECT_INT3 : 0;
		if (session_connect(s, t->patterns[i], how, t->str_args[i], 0, &nsites) == 0) {
			t->matched[i] = true; /* not pending: it matched */
			continue;
		}
		/* a wrapper (runuser, env, a shim) or a child that has not
		 * exec'd yet: kept for what it loads or execs; one that never
		 * matches is said at the end (unmatched()) */
		if (s->errcode == -ENOENT && (start || s->cmd) && waits_for_exec(t, s)) {
			char why[sizeof(s->errmsg)]; /* the agent's: "pattern 'P': matches no ..." */
			snprintf(why, sizeof(why), "%s", s->errmsg);
			if (session_connect(s, t->patterns[i], how | DJP_CONNECT_PENDING, t->str_args[i], 0, &nsites) ==
			    0) {
				if (s == &t->s)
					waiting_note(s, why);
				continue;
			}
		}
		if (s->errcode == -ENOENT && !is_point(t->patterns[i]))
			fprintf(stderr, "djp: %s: pattern '%s' matches no marker\n", what,
				djp_escape_c(pat, sizeof(pat), t->patterns[i], false));
		else
			fprintf(stderr, "djp: %s: %s\n", what, djp_escape_c(msg, sizeof(msg), s->errmsg, false));
		return 1;
	}
	if (s == &t->s ? session_kids_listen(&t->kids, s) : session_kids_follow(&t->kids, s)) {
		fprintf(stderr, "djp: %s: %s\n", what, djp_escape_c(msg, sizeof(msg), s->errmsg, false));
		return 1;
	}
	if (start && session_start(s)) {
		fprintf(stderr, "djp: %s: %s\n", what, djp_escape_c(msg, sizeof(msg), s->errmsg, false));
		return 1;
	}
	return 0;
}

/* Children of fork dialling in: each gets the same patterns and FOLLOW,
 * then START (its fork returns then).  A few milliseconds' worth at a
 * time: a configuration is several round trips with an agent that may be
 * waiting for a core among a hundred busy siblings (30 ms each was seen),
 * and the rings of the processes already traced must be drained
 * meanwhile, or a pre-fork server that starts a hundred workers at once
 * loses their first events.  The others wait in fork, losing nothing. */
static void accept_kids(struct trace *t)
{
	struct session *k;
	double until = now_s() + ACCEPT_BUDGET_S;
	while (now_s() < until && (k = session_kids_accept(&t->kids, &t->s))) {
		if (configure(t, k, true))
			session_discard(k);
		else
			session_kids_keep(&t->kids, k);
	}
}

/* A process of an -x trace that exec'd: the agent injected again and the
 * same patterns armed (session_kids.c). */
static void follow_exec(struct trace *t, struct session *gone)
{
	struct session *c = session_kids_exec(&t->s, gone);
	gone->end_note = "ended during the trace";
	if (!c)
		return;
	gone->end_note = "exec'd; traced on in the block of its new program";
	if (configure(t, c, false))
		session_discard(c);
	else
		session_kids_keep(&t->kids, c);
}

/* A child whose agent is gone (it exited, was killed or exec'd): its rings
 * stay mapped here, for the last drain, and hold its events up to its
 * end; one that exec'd is followed. */
static void kid_gone_cb(void *ctx, struct session *k)
{
	follow_exec(ctx, k);
}

static const char *run(struct trace *t, char *why, size_t whysz)
{
	struct session *s = &t->s;
	double start = now_s();
	int idle_ms = DRAIN_PERIOD_MS;

	for (;;) {
		long n = 0;
		if (!s->snapshot)
			n = trace_drain(t);
		else if (snapshot_asked) {
			snapshot_asked = 0;
			trace_drain(t);
		}
		if (t->dialled) {
			t->dialled = false;
			accept_kids(t);
		}
		if (session_stop_signal) {
			snprintf(why, whysz, "stopped by %s", strsignal(session_stop_signal));
			return why;
		}
		if (ferror(t->out))
			return "stopped: cannot write the events (output closed?)";
		if (t->duration > 0 && now_s() - start >= t->duration) {
			snprintf(why, whysz, "stopped after %g s", t->duration);
			return why;
		}
		if (s->cmd && session_reap(s, 0))
			return "the command exited";
		/* while its agent answers, the process lives (its death
		 * hangs the socket up, which wakes session_kids_wait) */
		if (!s->cmd && !s->alive && session_process_exited(s->pid))
			return "the process exited";
		/* The agent gone: the process exited, exec'd or crashed.  A
		 * -c trace lasts as long as the command (a shell may go on
		 * after the traced process); -x ends here. */
		/* Drain again at once when busy, every 5 ms while events come,
		 * and back off to 20 ms while none do: a quiet process costs
		 * the machine less, and 20 ms of events fit a ring at any
		 * rate short of a million a second per thread. */
		if (n >= BUSY_DRAIN)
			idle_ms = 0;
		else if (n > 0)
			idle_ms = DRAIN_PERIOD_MS;
		else if ((idle_ms = idle_ms * 2 + 1) > DRAIN_IDLE_MS)
			idle_ms = DRAIN_IDLE_MS;
		if (session_kids_wait(&t->kids, s, idle_ms, kid_gone_cb, t))
			t->dialled = true;
		if (session_agent_gone(s, 0) && !s->cmd) {
			if (session_process_exited(s->pid))
				return "the process exited";
			size_t kids = t->kids.n;
			if (!s->exec_followed) {
				follow_exec(t, s);
				/* exec'd and traced again: on until it exits */
				t->main_exec_traced = t->kids.n > kids;
			}
			if (!t->main_exec_traced)
				return "the agent closed the session";
		}
	}
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

static int exit_status(const struct session *s, int fallback)
{
	if (!s->cmd || s->child <= 0 || !s->child_done)
		return fallback;
	if (WIFEXITED(s->child_status))
		return WEXITSTATUS(s->child_status);
	if (WIFSIGNALED(s->child_status))
		return 128 + WTERMSIG(s->child_status);
	return fallback;
}

/* Flush and close the output; true (after one line on stderr) when any
 * write to it failed, now or earlier. */
static bool write_failed(struct trace *t)
{
	bool bad = line_out_flush(t->out) != 0;
	int err = bad ? errno : 0;

	bad |= ferror(t->out) != 0;
	if (fclose(t->out) && !bad) {
		bad = true;
		err = errno;
	}
	if (bad)
		fprintf(stderr, "djp: %s: cannot write the trace: %s\n", t->outfile ? t->outfile : "standard output",
			err ? strerror(err) : "a write failed");
	return bad;
}

/* Does a marker a process loaded later (dlopen) match pattern i? */
static bool matched_later(struct trace *t, int i)
{
	for (size_t k = 0; k <= t->kids.n; k++) {
		struct session *s = k ? t->kids.v[k - 1] : &t->s;
		for (uint32_t id = 0; id < s->nmarkers && !is_point(t->patterns[i]); id++) {
			const struct session_marker *m = &s->markers[id];
			size_t plen;
			const char *name = m->known ? djp_marker_split(m->name, &plen) : NULL;
			if (name && djp_marker_match_n(t->patterns[i], m->name, plen, name))
				return true;
		}
	}
	return false;
}

/* A -c command's patterns that matched nothing in any of its programs
 * (they were kept for the program a wrapper would exec, which never came
 * or never had them): one line each, naming the program that was run, and
 * true.  A pattern that matches nothing is an error. */
static bool unmatched(struct trace *t)
{
	char pat[1024], prog[4096], cmd[4096], last[4096 + 64] = "";
	bool any = false;

	/* the last program the command's own process exec'd */
	for (size_t k = t->kids.n; k-- > 0;)
		if (t->kids.v[k]->pid == t->s.pid && t->kids.v[k]->program[0]) {
			snprintf(last, sizeof(last), ", nor in the programs it exec'd (the last: %s)",
				 djp_escape_c(prog, sizeof(prog), t->kids.v[k]->program, false));
			break;
		}
	for (int i = 0; i < t->npatterns; i++) {
		if (t->matched[i] || matched_later(t, i))
			continue;
		fprintf(stderr, "djp: %s: pattern '%s' matched nothing in %s, the program that was run%s\n",
			djp_escape_c(cmd, sizeof(cmd), t->s.cmd, false),
			djp_escape_c(pat, sizeof(pat), t->patterns[i], false),
			djp_escape_c(prog, sizeof(prog), t->s.program[0] ? t->s.program : "?", false), last);
		any = true;
	}
	return any;
}

/* -k among the options: the kernel's markers (ktrace.c). */
static bool kernel_trace(int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (!strcmp(argv[i], "-k"))
			return true;
		if (!strcmp(argv[i], "-c") || !strcmp(argv[i], "-x") || !strcmp(argv[i], "-o") ||
		    !strcmp(argv[i], "--duration") || !strcmp(argv[i], "--buffer-size") ||
		    !strcmp(argv[i], "--max-string-len"))
			i++; /* and its value */
	}
	return false;
}

int djp_cmd_trace(int argc, char **argv)
{
	if (kernel_trace(argc, argv))
		return djp_cmd_ktrace(argc, argv);
	struct trace t = { .kids.follow_fd = -1, .dialled = true, .s.str_bound = DJP_TRACE_MAXSTRINGLEN };
	struct session *s = &t.s;
	char why[128];
	const char *reason;
	int rc;

	if (session_init(s)) {
		fprintf(stderr, "djp: out of memory\n");
		return 1;
	}
	if ((rc = parse_args(&t, argc, argv)) >= 0)
		goto out;
	/* in whole lines: the command may write to the same output */
	if (!(t.out = line_out_open(t.outfile))) {
		fprintf(stderr, "djp: %s: %s\n", t.outfile ? t.outfile : "standard output", strerror(errno));
		rc = 1;
		goto out;
	}
	install_signals();
	if (s->cmd ? session_launch(s) : session_attach(s)) {
		rc = 1;
		goto out;
	}
	if (configure(&t, s, s->cmd != NULL)) {
		/* Nothing stays armed: a command that never ran its main is
		 * killed; an attached process is told BYE (or sees the session
		 * end), which disarms. */
		if (s->cmd)
			session_kill_unstarted(s);
		else if (s->alive)
			session_bye(s);
		rc = 1;
		goto out;
	}

	reason = run(&t, why, sizeof(why));
	session_end(s); /* counts, then BYE: disarmed when it answers */
	for (size_t i = 0; i < t.kids.n; i++)
		session_end(t.kids.v[i]);
	trace_drain(&t); /* everything recorded until the probes were disarmed */
	trace_summary(&t, reason);
	rc = 0;
	if (s->cmd) {
		/* The command goes on after a stop by signal or --duration:
		 * end it, as the trace of a command ends with it. */
		if (!s->child_done)
			session_stop_child(s);
		rc = exit_status(s, 1);
		if (unmatched(&t))
			rc = 1;
	}
out:
	if (t.out && write_failed(&t))
		rc = 1; /* events that did not reach the output: as djp list */
	session_free(s);
	session_kids_free(&t.kids);
	if (t.released)
		fclose(t.released);
	free(t.released_text);
	free(t.formats);
	free(t.str_args);
	free(t.matched);
	return rc;
}
