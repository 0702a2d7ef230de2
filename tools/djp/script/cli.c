/*
 * The command line of probe scripts, after stap's:
 *
 *   djp [-c CMD | -x PID] [-o FILE] SCRIPT_FILE
 *   djp [-c CMD | -x PID] [-o FILE] -e 'SCRIPT'
 *   djp [-c CMD | -x PID] -l 'PROBEPOINT' | -L 'PROBEPOINT'
 *
 * The order of work is the order stap's passes have, and it matters: parse
 * (pass 1), then open the event source to learn the markers, resolve probe
 * points and check the program (pass 2); only a program that passed both is
 * armed and run (pass 5).  Any error before that exits with status 1 and
 * nothing armed.  Hidden, for tests and benchmarks only: --replay FILE takes
 * events from a replay file instead of a live process, and --bench-events N
 * feeds N synthetic events and prints the event rate.
 */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "run/run.h"
#include "lib/addr_line.h"
#include "lib/escape.h"
#include "lib/func_symbols.h"
#include "func_points.h"
#include "script.h"
#include "tools/djp/line_out.h"
#include "tools/djp/session/session.h"
#include "typed.h"

static void on_signal(int sig)
{
	run_interrupted = 1;
	session_stop_signal = sig; /* ends a wait for a -c command's agent */
}

static void usage(FILE *f)
{
	fprintf(f, "usage: djp [OPTIONS] SCRIPT_FILE [ARGUMENTS]\n"
		   "       djp [OPTIONS] -e 'SCRIPT' [ARGUMENTS]\n"
		   "       djp [-c CMD | -x PID] -l 'PROBEPOINT' | -L 'PROBEPOINT'\n"
		   "       djp --dump-functions\n"
		   "OPTIONS, anywhere on the line as stap takes them: -c CMD, -x PID, -o FILE,\n"
		   "-v, -p 1|2 (parse, elaborate: print and stop), -D NAME=VALUE (MAXSTRINGLEN,\n"
		   "MAXMAPENTRIES, MAXNESTING, MAXACTION, MAXACTION_INTERRUPTIBLE, MAXERRORS,\n"
		   "HIST_ELISION), --suppress-time-limits, -w (no warnings), -s MB (each thread's\n"
		   "ring, a power of two up to 256), -b (bulk: 16 MB rings), --buffer-size BYTES (as\n"
		   "djp trace's); -g is refused.  --int3 arms int3 breakpoints only, never jumps\n"
		   "(safe beside another tool's uprobes on the same functions); --no-uprobe, an\n"
		   "int3 where no jump can be placed, not the kernel's uprobe.  --force with -x\n"
		   "loads the agent even where the process's seccomp filter cannot be read.  -x\n"
		   "reaches PID's descendants too, --no-children PID alone (its forks followed).\n"
		   "ARGUMENTS are the script's $1.. and @1..\n");
}

/* -D NAME=VALUE: one of stap's limits (lang.h).  0, or 1 after one line. */
static int set_limit(const char *def)
{
	static const struct {
		const char *name;
		int64_t *v, max, min;
	} limits[] = {
		{ "MAXSTRINGLEN", &script_limits.maxstringlen, 65536, 1 },
		{ "MAXMAPENTRIES", &script_limits.maxmapentries, 100000000, 1 },
		{ "MAXNESTING", &script_limits.maxnesting, 1000, 1 },
		{ "MAXACTION", &script_limits.maxaction, INT64_MAX / 20, 1 },
		{ "MAXACTION_INTERRUPTIBLE", &script_limits.maxaction_interruptible, INT64_MAX / 2, 1 },
		{ "MAXERRORS", &script_limits.maxerrors, 1000000, 0 },
		{ "HIST_ELISION", &script_limits.hist_elision, HIST_MAX_LINEAR, -1 },
	};
	const char *eq = strchr(def, '=');
	char *end;
	long long v;

	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		size_t n = strlen(limits[i].name);
		if (strncmp(def, limits[i].name, n) || (def[n] != '=' && def[n]))
			continue;
		v = eq ? strtoll(eq + 1, &end, 0) : 0;
		if (!eq || end == eq + 1 || *end || v < limits[i].min || v > limits[i].max) {
			fprintf(stderr, "djp: -D %s: the value must be a number from %lld to %lld\n", def,
				(long long)limits[i].min, (long long)limits[i].max);
			return 1;
		}
		*limits[i].v = v;
		return 0;
	}
	if (!script_no_warnings)
		fprintf(stderr, "djp: WARNING: -D %.*s: not a limit of this runtime (MAXSTRINGLEN, MAXMAPENTRIES, "
				"MAXNESTING, MAXACTION, MAXACTION_INTERRUPTIBLE, MAXERRORS, HIST_ELISION); ignored\n",
			(int)(eq ? eq - def : (long)strlen(def)), def);
	return 0;
}

static int count_bound(const struct script *sc)
{
	int n = 0;
	for (const struct probe *p = sc->probes; p; p = p->next)
		n += p->nbinds;
	return n;
}

/* The script's text, or NULL after one line on stderr. */
static char *read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf = NULL, *nul;
	size_t len = 0, cap = 0;
	struct stat st;

	if (!f || fstat(fileno(f), &st)) {
		fprintf(stderr, "djp: %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return NULL;
	}
	if (S_ISDIR(st.st_mode)) {
		fprintf(stderr, "djp: %s: is a directory, not a script file\n", path);
		fclose(f);
		return NULL;
	}
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 8192;
			char *n = realloc(buf, cap);
			if (!n) {
				fprintf(stderr, "djp: %s: out of memory\n", path);
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = n;
		}
		size_t got = fread(buf + len, 1, 4096, f);
		len += got;
		if (got < 4096)
			break;
	}
	if (ferror(f)) {
		fprintf(stderr, "djp: %s: %s\n", path, strerror(errno));
		fclose(f);
		free(buf);
		return NULL;
	}
	fclose(f);
	buf[len] = 0;
	if ((nul = memchr(buf, 0, len))) {
		fprintf(stderr, "djp: %s: a NUL byte at offset %zu: a script is text\n", path, (size_t)(nul - buf));
		free(buf);
		return NULL;
	}
	return buf;
}

/* Each thread's ring, in bytes: -s, -b or --buffer-size; 0 the default. */
static size_t ring_bytes;

/* stap's bulk mode: rings of this many MB, unless -s says otherwise. */
#define BULK_RING_MB 16

static int open_source(const char *replay, const char *cmd, int32_t pid, struct script *sc, bool need_markers,
		       bool list_only, struct djp_source **src)
{
	char err[512] = "";
	const char *paths[64];
	unsigned npaths = 0;
	int rc;

	bool kernel = false, user = false;
	for (struct probe *p = sc->probes; p; p = p->next)
		for (struct probe_point *pp = p->points; pp; pp = pp->next)
			if (pp->kind == PP_MARK || pp->kind == PP_LIFE)
				*(pp->kernel ? &kernel : &user) = true;
	if (kernel && user) {
		/* one source a script: the kernel's or a process's */
		snprintf(err, sizeof(err), "a script cannot mix kernel probe points (kernel.mark, module(...).mark) "
					   "with process ones");
		rc = -EINVAL;
	} else if (replay) {
		rc = djp_replay_open(replay, src, err, sizeof(err));
	} else if (kernel && (cmd || pid)) {
		snprintf(err, sizeof(err), "-c and -x name a process; kernel.mark and module(...).mark points need none");
		rc = -EINVAL;
	} else if (kernel) {
		rc = djp_script_klive_open(src, err, sizeof(err));
	} else if (!need_markers && !cmd && !pid) {
		rc = djp_null_open(src);
		snprintf(err, sizeof(err), "%s", strerror(-rc));
	} else {
		struct djp_source_opts o = { .cmd = cmd, .pid = pid, .list_only = list_only, .buffer_size = ring_bytes };
		for (struct probe *p = sc->probes; p; p = p->next)
			for (struct probe_point *pp = p->points; pp; pp = pp->next)
				if (pp->kind == PP_MARK && pp->path && npaths < 64)
					paths[npaths++] = pp->path;
		o.paths = paths;
		o.npaths = npaths;
		rc = djp_script_live_open(&o, src, err, sizeof(err));
	}
	if (rc < 0 && err[0]) {
		char safe[4 * sizeof(err)]; /* it may name the command, a file, a marker */
		fprintf(stderr, "djp: %s\n", djp_escape_c(safe, sizeof(safe), err, false));
	}
	return rc;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct func_lines {
	char ***lines;
	unsigned *n, cap;
	const char *object;
	bool ret;    /* .return points */
	bool fields; /* -L: with the context variables */
};

/* -L's " $a:int $b:char const*", as stap prints context variables: those
 * of ps whose value can be read there; ps is freed. */
static void vars_text(struct djp_param_set *ps, char *buf, size_t sz)
{
	size_t len = 0;

	for (unsigned i = 0; i < ps->n && len < sz; i++)
		if (ps->v[i].loc.kind != DJP_LOC_NONE)
			len += (size_t)snprintf(buf + len, sz - len, " $%s:%s", ps->v[i].name, ps->v[i].type);
	djp_params_free(ps);
}

/* A function's, at its entry (and $return, said by the caller). */
static void params_text(struct djp_params_file *pf, const struct djp_func *f, char *buf, size_t sz)
{
	struct djp_param_set ps;
	char err[256];

	buf[0] = 0;
	if (pf && !djp_params_get(pf, f->addr, f->addr, &ps, err, sizeof(err)))
		vars_text(&ps, buf, sz);
}

/* One more line of -l's list, formatted. */
__attribute__((format(printf, 4, 5))) static void add_line(char ***lines, unsigned *n, unsigned *cap,
							    const char *fmt, ...)
{
	va_list ap;
	int r;

	if (*n + 1 >= *cap && !(*lines = realloc(*lines, sizeof(**lines) * (*cap = *cap * 2 + 64))))
		abort();
	va_start(ap, fmt);
	r = vasprintf(&(*lines)[*n], fmt, ap);
	va_end(ap);
	if (r < 0)
		abort();
	(*n)++;
}

static int add_func_line(void *ctx, const struct djp_func *f, const struct djp_func_source *fs,
			 struct djp_params_file *pf)
{
	struct func_lines *fl = ctx;
	char params[2048] = "", where[1100] = "";

	/* as stap -l, the declaration's file and line where DWARF has them */
	if (fs)
		snprintf(where, sizeof(where), "@%s:%u", fs->file, fs->decl_line);
	if (fl->fields)
		params_text(pf, f, params, sizeof(params));
	add_line(fl->lines, fl->n, &fl->cap, "process(\"%s\").function(\"%s%s\")%s%s%s", fl->object, f->name, where,
		 fl->ret ? ".return" : "", params, fl->fields && pf && fl->ret ? " $return:long" : "");
	return 0;
}

/* The functions a function("GLOB") point names, from the symbols of its
 * object (the target's program without one). */
static void list_functions(const struct probe_point *pp, const struct djp_source *src, bool fields, char ***lines,
			   unsigned *n, unsigned *cap)
{
	char err[512], spec[600], *path;
	struct func_lines fl = { .lines = lines, .n = n, .cap = *cap, .ret = pp->ret, .fields = fields };

	if (!(path = func_point_object(pp, src->target_pid)))
		return;
	fl.object = path;
	func_point_spec(pp, spec, sizeof(spec));
	if (func_points_each(path, spec, add_func_line, &fl, err, sizeof(err)) < 0)
		fprintf(stderr, "djp: %s\n", err);
	*cap = fl.cap;
	free(path);
}

/* A statement("FUNC@FILE:LINE") point's line, once for each function
 * with code there, as stap -l writes it (the file the line table names);
 * -L adds the variables in scope at the line's first address, parameters
 * and locals, those the DWARF places somewhere readable there. */
static void list_statements(const struct probe_point *pp, const struct djp_source *src, bool fields,
			    char ***lines, unsigned *n, unsigned *cap)
{
	char err[512], file[1024], vars[2048], *path;
	struct djp_func_table *t = NULL;
	struct djp_params_file *pf = NULL;
	uint64_t addrs[64];
	int na, line;

	if (!(path = func_point_object(pp, src->target_pid)))
		return;
	na = djp_lines_resolve(path, pp->glob + 5, addrs, 64, err, sizeof(err));
	if (na < 0 || (na > 0 && djp_funcs_read(path, &t, err, sizeof(err)))) {
		fprintf(stderr, "djp: %s\n", err);
		na = 0;
	}
	if (fields && na > 0 && djp_params_open(path, &pf, err, sizeof(err)))
		pf = NULL;
	for (int i = 0; i < na; i++) {
		const struct djp_func *f = djp_funcs_at(t, addrs[i]);
		struct djp_param_set ps;

		if (!f || djp_addr_line(path, addrs[i], file, sizeof(file), &line))
			continue;
		vars[0] = 0;
		if (pf && !djp_params_get_vars(pf, f->addr, addrs[i], &ps, err, sizeof(err)))
			vars_text(&ps, vars, sizeof(vars));
		add_line(lines, n, cap, "process(\"%s\").statement(\"%s@%s:%d\")%s", path, f->name, file, line, vars);
	}
	if (pf)
		djp_params_close(pf);
	djp_funcs_free(t);
	free(path);
}

/* -l / -L: the markers a probe point matches, sorted, one a line. */
static int list_points(struct script *sc, struct djp_source *src, bool fields, FILE *out)
{
	unsigned cap = src->ndescs + 1;
	char **lines = calloc(cap, sizeof(*lines));
	unsigned n = 0;

	if (!lines)
		abort();
	for (struct probe_point *pp = sc->probes->points; pp; pp = pp->next)
		if (pp->point && !pp->kernel && !strncmp(pp->glob, "func:", 5))
			list_functions(pp, src, fields, &lines, &n, &cap);
		else if (pp->point && !pp->kernel && !strncmp(pp->glob, "line:", 5))
			list_statements(pp, src, fields, &lines, &n, &cap);
	for (unsigned i = 0; i < src->ndescs; i++) {
		const struct djp_ev_desc *d = &src->descs[i];
		const struct probe_point *match = NULL;
		for (struct probe_point *pp = sc->probes->points; pp; pp = pp->next)
			if (!match && pp_matches(pp, d))
				match = pp;
		if (!match)
			continue;
		if (d->life || match->thread) { /* process.begin, .thread.begin...: the point as written */
			add_line(&lines, &n, &cap, "%s", match->text);
			continue;
		}
		struct strbuf b = { 0 };
		char tmp[160];
		if (d->kernel)
			snprintf(tmp, sizeof(tmp), "module(\"%s\").mark(\"", d->object ? d->object : "?");
		else if (d->provider_len)
			snprintf(tmp, sizeof(tmp), "process(\"%s\").provider(\"%.*s\").mark(\"", d->object ? d->object : "?",
				 (int)d->provider_len, d->provider);
		else
			snprintf(tmp, sizeof(tmp), "process(\"%s\").mark(\"", d->object ? d->object : "?");
		sb_put(&b, tmp, strlen(tmp));
		sb_put(&b, d->name, strlen(d->name));
		sb_put(&b, "\")", 2);
		for (unsigned a = 0; fields && a < d->nargs; a++) {
			const struct djp_fmt_field *f = a < d->fmt.nfields ? &d->fmt.field[a] : NULL;
			if (f && f->name[0])
				snprintf(tmp, sizeof(tmp), " $%s:%s", f->name, f->conv == 's' ? "string" : "long");
			else
				snprintf(tmp, sizeof(tmp), " $arg%u:%s", a + 1, f && f->conv == 's' ? "string" : "long");
			sb_put(&b, tmp, strlen(tmp));
		}
		add_line(&lines, &n, &cap, "%s", b.p);
		free(b.p);
	}
	qsort(lines, n, sizeof(*lines), cmp_str);
	for (unsigned i = 0; i < n; i++) {
		/* names, functions and paths come from the target's files: C
		 * escapes for what a terminal would act on (lib/escape.h) */
		char safe[4 * 4096 + 1];
		if (!i || strcmp(lines[i], lines[i - 1]))
			fprintf(out, "%s\n", djp_escape_c(safe, sizeof(safe), lines[i], false));
	}
	for (unsigned i = 0; i < n; i++)
		free(lines[i]);
	free(lines);
	return n ? 0 : 1;
}

static bool has_marks(struct script *sc)
{
	for (struct probe *p = sc->probes; p; p = p->next)
		for (struct probe_point *pp = p->points; pp; pp = pp->next)
			if (pp->kind == PP_MARK || pp->kind == PP_LIFE)
				return true;
	return false;
}

/* What the command line asks for. */
struct cli {
	const char *script_text, *script_file, *cmd, *outpath, *list, *replay;
	bool list_fields, int3, bulk;
	int32_t pid;
	int verbose, last_pass;
	uint64_t bench;
};

/* -s MB: stap's buffer size, each thread's ring here (a power of two). */
static int ring_mb_option(const char *arg)
{
	char *end;
	unsigned long mb = strtoul(arg, &end, 10), p2 = 1;
	if (!*arg || *end || mb < 1 || mb > 256) {
		fprintf(stderr, "djp: -s %s: the size of each thread's ring is 1 to 256 MB\n", arg);
		return 1;
	}
	while (p2 < mb) /* rings are powers of two */
		p2 *= 2;
	ring_bytes = (size_t)p2 << 20;
	return 0;
}

/* --buffer-size BYTES, as djp trace's */
static int buffer_size_option(const char *arg)
{
	char *end;
	unsigned long long v = strtoull(arg, &end, 0);
	if (!*arg || *end || v < DJP_RING_MIN_DEFAULT_SIZE || v > (1ull << 28) || (v & (v - 1))) {
		fprintf(stderr, "djp: --buffer-size %s: needs a power of two from 16384 to 256 MiB\n", arg);
		return 1;
	}
	ring_bytes = (size_t)v;
	return 0;
}

static int pid_option(struct cli *c, const char *arg)
{
	char *end;
	long v = strtol(arg, &end, 10);
	if (*end || v <= 0 || v > INT32_MAX) {
		fprintf(stderr, "djp: bad pid '%s'\n", arg);
		return 1;
	}
	c->pid = (int32_t)v;
	return 0;
}

static int pass_option(struct cli *c, const char *arg)
{
	if (strlen(arg) != 1 || arg[0] < '1' || arg[0] > '5') {
		fprintf(stderr, "djp: -p %s: a pass is 1 to 5\n", arg);
		return 1;
	}
	c->last_pass = arg[0] - '0';
	return 0;
}

/* The options that are refused, each with why. */
static int refused_option(int opt, const char *arg)
{
	if (opt == 'g')
		fprintf(stderr, "djp: -g (guru mode, embedded C) is not supported: a script runs in the tool, not in "
				"the traced process or the kernel\n");
	else
		fprintf(stderr, "djp: -I %s: tapset directories are not supported: the tapset functions are "
				"built in (djp --dump-functions lists them)\n",
			arg);
	return 1;
}

/* One option: -1 to go on, else the status to exit with. */
static int option(struct cli *c, int opt, const char *arg)
{
	switch (opt) {
	case 'v': c->verbose++; return -1;
	case 'p': return pass_option(c, arg) ? 1 : -1;
	case 'g':
	case 'I': return refused_option(opt, arg);
	case 'D': return set_limit(arg) ? 1 : -1;
	case 'w': script_no_warnings = true; return -1;
	case 's': return ring_mb_option(arg) ? 1 : -1;
	case 'b': c->bulk = true; return -1; /* stap's bulk mode: bigger buffers, one a thread */
	case 'Z': return buffer_size_option(arg) ? 1 : -1;
	case 'F': dump_functions(stdout); return 0;
	case 'T': /* stap's: no MAXACTION */
		script_limits.maxaction = script_limits.maxaction_interruptible = INT64_MAX / 20;
		return -1;
	case 'e': c->script_text = arg; return -1;
	case 'c': c->cmd = arg; return -1;
	case 'x': return pid_option(c, arg) ? 1 : -1;
	case 'o': c->outpath = arg; return -1;
	case 'l':
	case 'L':
		c->list = arg;
		c->list_fields = opt == 'L';
		return -1;
	case 'R': c->replay = arg; return -1;
	case 'B': c->bench = strtoull(arg, NULL, 10); return -1;
	case 'N': c->int3 = true; return -1;
	case 'U': session_uprobes_disable(); return -1;
	case 'f': session_inject_force = true; return -1;
	case 'C': session_no_children = true; return -1;
	case 'h': usage(stdout); return 0;
	default: usage(stderr); return 1;
	}
}

/*
 * As stap parses its command line: options anywhere (GNU getopt permutes),
 * the first other word the script file unless -e gave the script, the rest
 * the script's arguments ($1.., @1..); `--` ends the options.  -1 to go on,
 * else the status to exit with.
 */
static int options(struct cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "replay", required_argument, NULL, 'R' },
		{ "bench-events", required_argument, NULL, 'B' },
		{ "dump-functions", no_argument, NULL, 'F' },
		{ "suppress-time-limits", no_argument, NULL, 'T' },
		{ "int3", no_argument, NULL, 'N' },
		{ "no-uprobe", no_argument, NULL, 'U' },
		{ "buffer-size", required_argument, NULL, 'Z' },
		{ "force", no_argument, NULL, 'f' },
		{ "no-children", no_argument, NULL, 'C' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int opt, rc;

	while ((opt = getopt_long(argc, argv, "e:c:x:o:l:L:hvp:gD:ws:bI:", longopts, NULL)) != -1)
		if ((rc = option(c, opt, optarg)) >= 0)
			return rc;
	if (c->cmd && c->pid) {
		fprintf(stderr, "djp: -c and -x are mutually exclusive\n");
		return 1;
	}
	if (c->bulk && !ring_bytes)
		ring_bytes = (size_t)BULK_RING_MB << 20;
	return -1;
}

/* The script's text: -l/-L's point in a probe of its own, -e's, or the
 * script file's (*owned, to free).  -1 to go on, else the status. */
static int script_text(struct cli *c, int argc, char **argv, char **owned)
{
	if (c->list) {
		size_t n = strlen(c->list) + 16;
		if (!(*owned = malloc(n)))
			abort();
		snprintf(*owned, n, "probe %s {}", c->list);
		c->script_text = *owned;
	} else if (!c->script_text) {
		if (optind >= argc) {
			usage(stderr);
			return 1;
		}
		c->script_file = argv[optind++];
		if (!(*owned = read_file(c->script_file)))
			return 1;
		c->script_text = *owned;
	}
	return -1;
}

/* Pass 2: markers, probe points, names and types, the source open in *src
 * (and with --bench-events the synthetic one, *base its markers').  -1 to
 * go on, else the status: -l/-L and -p2 end here. */
static int elaborate(struct cli *c, struct script *sc, struct djp_source **src, struct djp_source **base)
{
	if ((!c->bench || c->replay) &&
	    open_source(c->replay, c->cmd, c->pid, sc, has_marks(sc) || c->list, c->list != NULL, src) < 0)
		return 1;
	if (c->list)
		return list_points(sc, *src, c->list_fields, stdout);
	if (*src)
		(*src)->want_int3 = c->int3;
	if (c->bench) {
		struct djp_source *synth;
		if (djp_synth_open(*src, c->bench, &synth) < 0)
			return 1;
		*base = *src; /* its descriptors stay in use */
		*src = synth;
	}
	if (resolve_probes(sc, *src) || typed_resolve(sc, *src) || check_script(sc) || check_dwarfless_refs(sc, *src) ||
	    check_kernel_refs(sc))
		return 1;
	bind_fields(sc);
	if (c->verbose)
		fprintf(stderr, "Pass 2: analyzed script: %d probe(s), %d global(s), %d marker(s) bound\n", sc->nprobes,
			sc->nglobals, count_bound(sc));
	if (c->last_pass <= 4) {
		/* stap's -p2 prints the elaborated script; -p3 and -p4 would
		 * build a module: here there is nothing between check and run */
		print_elaborated(sc, stdout);
		return 0;
	}
	return -1;
}

/* Pass 5: run, output to out; with --bench-events, the rate after. */
static int run_pass(struct cli *c, struct script *sc, struct djp_source *src, FILE *out)
{
	struct sigaction sa = { .sa_handler = on_signal };
	struct run_opts ro = { .out = out, .bench = c->bench != 0 };
	struct timespec t0, t1;
	uint64_t nev = 0;
	int errors, status;

	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	errors = run_script(sc, src, &ro, &nev);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	status = errors || report_never_bound(sc, src) ? 1 : 0;
	if (c->bench) {
		double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
		fprintf(out, "script count | %.1f | M events/s\n", s > 0 ? (double)nev / s / 1e6 : 0.0);
		line_out_flush(out);
	}
	return status;
}

/* What the script printed must have reached its output: a failed write (a
 * full disk, -o /dev/full) is an error.  1 then, else 0. */
static int close_output(FILE *out, const char *outpath)
{
	bool bad = line_out_flush(out) != 0;
	int err = bad ? errno : 0;
	bad |= ferror(out) != 0;
	if (out != stdout && fclose(out) && !bad) {
		bad = true;
		err = errno;
	}
	if (!bad)
		return 0;
	fprintf(stderr, "djp: %s: cannot write the script's output: %s\n",
		out != stdout && outpath ? outpath : "standard output", err ? strerror(err) : "a write failed");
	return 1;
}

/* Passes 1, 2 and 5 of the script in c; the status. */
static int passes(struct cli *c, struct script *sc, struct djp_source **src, struct djp_source **base, FILE **out)
{
	int status;

	if (parse_script(sc))
		return 1;
	if (c->verbose)
		fprintf(stderr, "Pass 1: parsed user script %s\n", sc->file.name);
	if (c->last_pass == 1) {
		print_script_tokens(sc, stdout);
		return 0;
	}
	if ((status = elaborate(c, sc, src, base)) >= 0)
		return status;
	if (c->verbose)
		fprintf(stderr, "Pass 5: starting run.\n");
	/* in whole lines: the command may write to the same output */
	FILE *lines = line_out_open(c->outpath);
	if (!lines) {
		fprintf(stderr, "djp: %s: %s\n", c->outpath ? c->outpath : "standard output", strerror(errno));
		return 1;
	}
	*out = lines;
	return run_pass(c, sc, *src, *out);
}

int djp_script_main(int argc, char **argv)
{
	struct cli c = { .last_pass = 5 };
	char *owned = NULL;
	struct script sc;
	struct djp_source *src = NULL, *base = NULL;
	FILE *out = stdout;
	int status;

	memset(&sc, 0, sizeof(sc));
	ring_bytes = 0;
	optind = 0;
	if ((status = options(&c, argc, argv)) >= 0 || (status = script_text(&c, argc, argv, &owned)) >= 0)
		return status;
	sc.file.name = c.script_file ? c.script_file : "<input>";
	sc.file.text = c.script_text;
	sc.args = (const char *const *)argv + optind;
	sc.nargs = argc - optind;
	status = passes(&c, &sc, &src, &base, &out);
	if (close_output(out, c.outpath))
		status = 1;
	if (src)
		src->ops->close(src);
	if (base)
		base->ops->close(base);
	script_release(&sc);
	free(owned);
	return status;
}
