/*
 * The run: a script's probes on a source's events.
 *
 * run_script arms the markers some probe is bound to (one glob per probe
 * point, a statement point's sites by name, the probes the target runs
 * with globs of their own), runs the begin probes, starts the target, then
 * takes events and fires timers until exit(), an error, ^C or the source's
 * end; last come the end probes (or the error probes after more errors
 * than MAXERRORS) and the display of the globals written and never read.
 *
 * A probe runs under a setjmp: `next`, abort() and a run-time error come
 * back here by longjmp, which closes the foreach loops it had open and
 * frees the strings it made.  system()'s commands wait for the probe's
 * end, so that the script's output before them comes first.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "interp.h"
#include "builtins/tapset_named.h"
#include "lib/proto.h"
#include "tools/djp/line_out.h"
#include "tools/djp/script/agg.h"
#include "tools/djp/script/func_points.h"
#include "tools/djp/script/typed.h"

volatile int run_interrupted;

/* stap's defaults (lang.h); cli.c's -D changes them before anything runs. */
struct script_limits script_limits = { .maxstringlen = 512, .maxmapentries = 2048, .maxnesting = 10,
				       .maxaction = 1000, .maxaction_interruptible = 0, .maxerrors = 0,
				       .hist_elision = 2 };

/* system(): the commands a probe asked for, through /bin/sh, after the
 * script's output so far, each waited for. */
static void run_commands(struct run *r)
{
	int fd = line_out_fd(r->out);
	line_out_flush(r->out);
	for (int i = 0; i < r->ncommands; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			if (fd != STDOUT_FILENO && dup2(fd, STDOUT_FILENO) < 0)
				_exit(127);
			execl("/bin/sh", "sh", "-c", r->commands[i], (char *)NULL);
			_exit(127);
		}
		if (pid > 0)
			waitpid(pid, NULL, 0);
		free(r->commands[i]);
	}
	r->ncommands = 0;
}

static void run_probe(struct run *r, struct probe *p, const struct binding *b, const struct djp_ev *ev, const char *pp,
		      bool interruptible)
{
	jmp_buf jb, *saved = r->jb;
	int code;

	/* the target's aggregates, for a probe that may read them */
	if (r->sc->agg && (!b || p->reads_agg))
		agg_sync(r, r->sc, r->src);
	r->ev = ev;
	r->bind = b;
	r->probe = p;
	r->pp = pp;
	r->jb = &jb;
	r->fp = r->stack;
	r->sp = p->nslots;
	r->depth = 0;
	r->actions = 0;
	/* stap runs begin, end and error probes where they may be interrupted,
	 * with ten times the statements */
	r->max_actions = interruptible ? MAXACTION_INTERRUPTIBLE : MAXACTION;
	r->niters = 0;
	code = setjmp(jb);
	if (code == 0) {
		for (struct sym *s = p->locals; s; s = s->next) {
			if (s->ty == TY_STR)
				r->fp[s->slot].s = "";
			else
				r->fp[s->slot].n = 0;
		}
		if (!p->cond || eval_n(r, p->cond))
			exec(r, p->body);
	} else {
		while (r->niters > 0) {
			struct iter *it = &r->iters[--r->niters];
			it->map->iterating--;
			free(it->idx);
		}
		if (code == 1 && ++r->errors > MAXERRORS) {
			r->exiting = true; /* stap's MAXERRORS: the session fails */
			r->failed = true;
		}
	}
	r->jb = saved;
	r->ev = NULL;
	arena_reset(r);
	if (r->ncommands)
		run_commands(r);
}

bool run_agg_target(struct run *r, struct node *lv, const struct binding *b, const struct djp_ev *ev,
		    uint32_t given, const int64_t *vals, struct map_ent **e)
{
	jmp_buf jb, *saved = r->jb;
	int code, try_depth = r->try_depth;
	volatile bool ok = false;

	r->ev = ev;
	r->bind = b;
	r->probe = b->probe;
	r->pp = b->pp;
	r->jb = &jb;
	r->try_depth = 0; /* an error is the merge's, never a catch block's */
	*e = NULL;
	code = setjmp(jb);
	if (code == 0) {
		r->key_given = given;
		r->key_vals = vals;
		if (lv->kind == N_INDEX)
			*e = element(r, lv, true);
		ok = true;
	} else if (code == 1 && ++r->errors > MAXERRORS) {
		r->exiting = true;
		r->failed = true;
	}
	r->key_given = 0;
	r->jb = saved;
	r->try_depth = try_depth;
	r->ev = NULL;
	arena_reset(r);
	return ok;
}

static void init_globals(struct script *sc)
{
	for (struct sym *g = sc->globals; g; g = g->next) {
		g->cell = calloc(1, sizeof(*g->cell));
		if (!g->cell)
			abort();
		if (g->nkeys > 0) {
			uint32_t max = g->maxentries > 0 ? (uint32_t)g->maxentries : MAXMAPENTRIES;
			g->map = map_new(g->nkeys, g->kty, g->ty, &g->hist, max);
			g->map->wrap = g->wrap;
		} else if (g->ty == TY_STAT) {
			g->stat = stat_new(&g->hist);
		} else if (g->ty == TY_STR) {
			g->strbuf = calloc(1, MAXSTRINGLEN);
			if (!g->strbuf)
				abort();
			if (g->init)
				snprintf(g->strbuf, MAXSTRINGLEN, "%s", g->init->str);
		} else if (g->init) {
			g->cell->n = g->init->num;
		}
	}
}

static void free_globals(struct script *sc)
{
	for (struct sym *g = sc->globals; g; g = g->next) {
		free(g->cell);
		map_free(g->map);
		free(g->stat);
		free(g->strbuf);
		g->cell = NULL;
		g->map = NULL;
		g->stat = NULL;
		g->strbuf = NULL;
	}
}

/* stap's display of a global the script wrote but never read */
static void display_global(struct run *r, struct sym *g)
{
	struct strbuf b = { 0 };
	FILE *out = r->out;

	if (g->nkeys <= 0) {
		if (g->ty == TY_STAT) {
			struct script_stat *st = g->stat;
			if (!st->count)
				fprintf(out, "%s @count=0x0\n", g->name);
			else
				fprintf(out, "%s @count=%lld @min=%lld @max=%lld @sum=%lld @avg=%lld\n", g->name,
					(long long)st->count, (long long)st->min, (long long)st->max, (long long)st->sum,
					(long long)(st->sum / st->count));
		} else if (g->ty == TY_STR) {
			print_escaped(&b, g->strbuf);
			fprintf(out, "%s=\"%s\"\n", g->name, b.p ? b.p : "");
		} else {
			/* stap's %#x: "0x0" for zero, unlike C's */
			print_number(&b, (uint64_t)g->cell->n, 16, -1, -1, PRINT_ALT);
			fprintf(out, "%s=%s\n", g->name, b.p);
		}
		free(b.p);
		return;
	}
	uint32_t count, *idx = snapshot(g->map, 0, -1, A_COUNT, &count);
	for (uint32_t k = 0; k < count; k++) {
		struct map_ent *e = &g->map->ent[idx[k]];
		b.len = 0;
		sb_put(&b, g->name, strlen(g->name));
		sb_putc(&b, '[');
		for (int i = 0; i < g->nkeys; i++) {
			if (i)
				sb_putc(&b, ',');
			if (g->kty[i] == TY_STR) {
				sb_putc(&b, '"');
				print_escaped(&b, e->key[i].s);
				sb_putc(&b, '"');
			} else {
				print_number(&b, (uint64_t)e->key[i].n, 10, -1, -1, PRINT_SIGN);
			}
		}
		sb_putc(&b, ']');
		if (g->ty == TY_STAT) {
			char tmp[200];
			struct script_stat *st = e->st;
			snprintf(tmp, sizeof(tmp), " @count=%lld @min=%lld @max=%lld @sum=%lld @avg=%lld",
				 (long long)st->count, (long long)st->min, (long long)st->max, (long long)st->sum,
				 (long long)(st->count ? st->sum / st->count : 0));
			sb_put(&b, tmp, strlen(tmp));
		} else if (g->ty == TY_STR) {
			sb_put(&b, "=\"", 2);
			print_escaped(&b, e->val.s);
			sb_putc(&b, '"');
		} else {
			sb_putc(&b, '=');
			print_number(&b, (uint64_t)e->val.n, 16, -1, -1, PRINT_ALT);
		}
		sb_putc(&b, '\n');
		fwrite(b.p, 1, b.len, out);
	}
	free(idx);
	free(b.p);
}

static void display_unread(struct run *r)
{
	for (struct sym *g = r->sc->globals; g; g = g->next) {
		if (!g->written || g->read)
			continue;
		display_global(r, g);
	}
}

static void dispatch(struct run *r, const struct djp_ev *ev)
{
	uint32_t id = ev->desc->id;
	struct binding **v;
	int n;

	if (id >= r->sc->nby || r->sc->nby_desc[id] < 0)
		bind_late(r->sc, ev->desc);
	v = r->sc->by_desc[id];
	n = r->sc->nby_desc[id];
	for (int i = 0; i < n && !r->exiting; i++)
		if ((!v[i]->pid || v[i]->pid == ev->pid) && !v[i]->probe->agg && /* agg: run in the target */
		    (!v[i]->path || (ev->program && same_object(v[i]->path, ev->program))))
			run_probe(r, v[i]->probe, v[i], ev, v[i]->pp, false);
}

static const char *point_text(struct probe *p, int kind)
{
	for (struct probe_point *pp = p->points; pp; pp = pp->next)
		if (pp->kind == kind)
			return pp->text;
	return p->points->text;
}

/* The arguments a probe reads with user_string() (check.c), for its glob:
 * $argN is argument N - 1 of any marker; a named field, its index in the
 * markers the probe is bound to now. */
static void probe_strings(const struct probe *p, struct djp_arm_glob *g)
{
	for (int k = 0; k < p->nrefs; k++) {
		const char *ref = p->refs[k];
		char *end;
		if (!p->ref_strbound[k])
			continue;
		if (p->ref_strbound[k] > g->str_bound)
			g->str_bound = p->ref_strbound[k];
		if (!strncmp(ref, "arg", 3)) {
			long a = strtol(ref + 3, &end, 10);
			if (!*end && a >= 1 && a <= 32) {
				g->str_args |= 1u << (a - 1);
				continue;
			}
		}
		for (int b = 0; b < p->nbinds; b++)
			if (p->binds[b]->field[k] >= 0 && p->binds[b]->field[k] < 32)
				g->str_args |= 1u << p->binds[b]->field[k];
	}
}

/* The time to a timer's next firing: its period, give or take up to its
 * .randomize(M), uniformly. */
static uint64_t timer_period(const struct timer *t)
{
	int64_t p = t->period_ns;
	if (t->random_ns)
		p += (int64_t)(random() % (2 * t->random_ns + 1)) - t->random_ns;
	return (uint64_t)p;
}

struct src_names {
	char **v;
	unsigned n, cap;
	bool ret;
};

static int add_src_name(void *ctx, const struct djp_func *f, const struct djp_func_source *fs,
			struct djp_params_file *pf)
{
	struct src_names *sn = ctx;
	size_t len = strlen(f->name) + 8;
	if (sn->n + 1 >= sn->cap && !(sn->v = realloc(sn->v, sizeof(*sn->v) * (sn->cap = sn->cap * 2 + 8))))
		abort();
	if (!(sn->v[sn->n] = malloc(len)))
		abort();
	snprintf(sn->v[sn->n++], len, "%s%s", f->name, sn->ret ? "%return" : "");
	sn->v[sn->n] = NULL;
	return 0;
}

/* A function point with a source qualifier, function("GLOB@FILE:LINE"):
 * the names of the functions it resolves to in its object's file
 * (func_points.c), by which its events are bound.  Non-zero after an
 * error line. */
static int resolve_src_funcs(struct probe_point *pp, struct djp_source *src)
{
	struct src_names sn = { .ret = pp->ret };
	char spec[600], err[512], *path;
	int n;

	if (!(path = func_point_object(pp, src->target_pid))) {
		fprintf(stderr, "ERROR: probe point %s: %s: %s\n", pp->text, pp->path ? pp->path : "the target",
			strerror(errno));
		return 1;
	}
	func_point_spec(pp, spec, sizeof(spec));
	n = func_points_each(path, spec, add_src_name, &sn, err, sizeof(err));
	free(path);
	if (n < 0 || (!sn.n && !pp->optional)) {
		fprintf(stderr, "ERROR: probe point %s: %s\n", pp->text, n < 0 ? err : "no function matches");
		return 1;
	}
	pp->names = sn.v ? sn.v : calloc(1, sizeof(*pp->names));
	pp->nnames = sn.n;
	return pp->names ? 0 : (abort(), 1);
}

/* Statement points: their lines as the names of their sites (the source
 * reads the target's line tables), before anything is armed; function
 * points with a source qualifier, their functions.  Non-zero after an
 * error line. */
static int resolve_lines(struct script *sc, struct djp_source *src)
{
	char *names[64], err[512];
	for (struct probe *p = sc->probes; p; p = p->next)
		for (struct probe_point *pp = p->points; pp; pp = pp->next) {
			int n;
			if (pp->kind == PP_MARK && pp->point && !pp->names && !strncmp(pp->glob, "func:", 5) &&
			    strchr(pp->glob, '@')) {
				if (resolve_src_funcs(pp, src))
					return 1;
				continue;
			}
			if (pp->kind != PP_MARK || !pp->point || strncmp(pp->glob, "line:", 5) || pp->names)
				continue;
			if (!src->ops->resolve_line) {
				pp->names = calloc(1, sizeof(*pp->names)); /* matches nothing */
				continue;
			}
			n = src->ops->resolve_line(src, pp->path, pp->glob + 5, names, 64, err, sizeof(err));
			if (n < 0 && !(pp->optional && n == -ENOENT)) {
				fprintf(stderr, "ERROR: probe point %s: %s\n", pp->text, err);
				return 1;
			}
			if (!(pp->names = calloc((size_t)(n > 0 ? n : 0) + 1, sizeof(*pp->names))))
				abort();
			for (int i = 0; i < n; i++)
				pp->names[i] = names[i];
			pp->nnames = (unsigned)(n > 0 ? n : 0);
		}
	return 0;
}

/* One arm glob per site of a statement point: "func:NAME+0xOFF", with the
 * object when the point names one. */
static void add_line_globs(struct djp_arm_glob **globs, unsigned *nglobs, const struct probe_point *pp,
			   struct probe *p)
{
	for (unsigned i = 0; i < pp->nnames; i++) {
		char *g = func_point_line_glob(pp, i);
		if (!(*globs = realloc(*globs, sizeof(**globs) * (*nglobs + 1))))
			abort();
		(*globs)[(*nglobs)++] =
			(struct djp_arm_glob){ g, 0, 0, !pp->optional, p->uses_ustack, (unsigned)p->agg, pp->text, false };
		probe_strings(p, &(*globs)[*nglobs - 1]);
	}
}

/* One glob per probe point of the marker kind to arm (a statement point's
 * sites one each, by name); the probes the target runs have globs of their
 * own.  *nglobs of them, malloc'd. */
static struct djp_arm_glob *arm_globs(struct script *sc, unsigned *nglobs)
{
	struct djp_arm_glob *globs = NULL;

	*nglobs = 0;
	for (struct probe *p = sc->probes; p; p = p->next)
		for (struct probe_point *pp = p->points; pp; pp = pp->next) {
			unsigned k = 0;
			const char *g = pp->connect ? pp->connect : pp->glob;
			if (pp->kind != PP_MARK)
				continue;
			if (pp->names && !strncmp(pp->glob, "line:", 5)) { /* a statement point: its sites by name */
				add_line_globs(&globs, nglobs, pp, p);
				continue;
			}
			/* a probe the target runs has globs of its own */
			while (k < *nglobs && (strcmp(globs[k].glob, g) || globs[k].plan1 != (unsigned)p->agg))
				k++;
			if (k == *nglobs) {
				if (!(globs = realloc(globs, sizeof(*globs) * (*nglobs + 1))))
					abort();
				globs[(*nglobs)++] =
					(struct djp_arm_glob){ g, 0, 0, false, false, (unsigned)p->agg, pp->text, false };
			}
			globs[k].now |= pp->point && !pp->optional;
			globs[k].ustack |= p->uses_ustack;
			probe_strings(p, &globs[k]);
		}
	/* With the registers, every pattern's handler keeps %rsp and %rbp in
	 * the view, as the stack handler does, and of two of the session's
	 * on one site the agent runs one (DJP__ONCE): so that a site two
	 * globs match, one with the stack, records it, every glob has it
	 * (each event carries the registers anyway). */
	if (sc->uses_regs)
		for (unsigned i = 0; i < *nglobs; i++)
			for (unsigned j = 0; j < *nglobs && !globs[i].ustack; j++)
				globs[i].ustack = globs[j].ustack && !globs[j].plan1 && !globs[i].plan1;
	return globs;
}

/* Step 1: arm the markers some probe is bound to.  0, or -1 after an
 * error line. */
static int arm(struct script *sc, struct djp_source *src)
{
	uint32_t *ids = malloc(sizeof(*ids) * (src->ndescs + 1));
	struct djp_arm_glob *globs;
	unsigned n = 0, nglobs;
	int rc;

	if (!ids)
		abort();
	for (unsigned i = 0; i < src->ndescs; i++)
		if (sc->nby_desc[i])
			ids[n++] = i;
	if (resolve_lines(sc, src)) {
		free(ids);
		return -1;
	}
	agg_prepare(sc, src);
	typed_load_sites(sc, src);
	globs = arm_globs(sc, &nglobs);
	src->want_cpu = sc->uses_cpu;
	src->want_regs = sc->uses_regs;
	if (sc->nvars) { /* @var: the words each event carries (never freed: the run reads them) */
		struct djp_var_want *v = calloc(sc->nvars, sizeof(*v));
		if (!v || !(src->var_runtime = calloc(sc->nvars, sizeof(*src->var_runtime))))
			abort();
		for (unsigned i = 0; i < sc->nvars; i++)
			v[i] = (struct djp_var_want){ sc->vars[i].object, sc->vars[i].addr,
						      sc->vars[i].object[0] ? sc->vars[i].size : 0, /* 0: a register */
						      sc->vars[i].str_bound };
		src->vars = v;
		src->nvars = sc->nvars;
	}
	src->want_int3 |= sc->regs_callee; /* only an int3's view holds them */
	rc = src->ops->arm(src, ids, n, globs, nglobs);
	free(globs);
	free(ids);
	if (rc < 0) {
		if (!src->arm_said) /* else it said why in one line */
			fprintf(stderr, "ERROR: cannot arm the probes: %s\n", strerror(-rc));
		return -1;
	}
	return 0;
}

/* Step 2: begin probes, then let the target run. */
static void begin(struct run *r, struct script *sc, struct djp_source *src)
{
	for (int i = 0; i < sc->nbegins && !r->exiting; i++) {
		run_probe(r, sc->begins[i], NULL, NULL, point_text(sc->begins[i], PP_BEGIN), true);
		for (struct probe_point *pp = sc->begins[i]->points; pp; pp = pp->next)
			if (pp->oneshot)
				r->exiting = true; /* oneshot: once, then the end */
	}
	if (src && src->ops->start && !r->exiting) {
		int rc = src->ops->start(src);
		if (rc < 0) {
			fprintf(stderr, "ERROR: cannot start the target: %s\n", strerror(-rc));
			r->errors++;
			r->exiting = true;
		}
	}
}

/* The timers due at now, each once, then set to their next time. */
static void fire_timers(struct run *r, struct script *sc, uint64_t now)
{
	for (int i = 0; i < sc->ntimers && !r->exiting; i++) {
		struct timer *t = &sc->timers[i];
		if (t->due > now)
			continue;
		run_probe(r, t->probe, NULL, NULL, point_text(t->probe, PP_TIMER), false);
		t->due += timer_period(t);
		if (t->due <= now)
			t->due = now + timer_period(t);
	}
}

/* Step 3: events and timers until exit(), an error or the end; the number
 * of events.  What the probes wrote is flushed 100 ms of event time
 * later (never, in a benchmark), or when the source comes back without an
 * event. */
static uint64_t take_events(struct run *r, struct script *sc, struct djp_source *src, const struct run_opts *opts)
{
	uint64_t t0 = src->ops->now_ns(src), flush_at = UINT64_MAX, events = 0;
	struct djp_ev ev;
	bool stopping = false;

	for (int i = 0; i < sc->ntimers; i++)
		sc->timers[i].due = t0 + timer_period(&sc->timers[i]);
	while (!r->exiting) {
		uint64_t deadline = flush_at;
		int rc;
		/* ^C: the events recorded before it, then the end probes, and
		 * no timer meanwhile */
		if (run_interrupted && !stopping) {
			stopping = true;
			if (!src->ops->stop || src->ops->stop(src) < 0)
				break;
		}
		for (int i = 0; i < sc->ntimers && !stopping; i++)
			if (sc->timers[i].due < deadline)
				deadline = sc->timers[i].due;
		rc = src->ops->next(src, &ev, deadline);
		if (rc == DJP_SRC_EVENT) {
			events++;
			dispatch(r, &ev);
			if (r->dirty && flush_at == UINT64_MAX && !opts->bench)
				flush_at = ev.ts_ns + 100000000ull;
			continue;
		}
		if (rc == DJP_SRC_END)
			break;
		if (rc < DJP_SRC_END) {
			fprintf(stderr, "ERROR: event source: %s\n", strerror(-rc));
			r->errors++;
			break;
		}
		uint64_t now = src->ops->now_ns(src);
		if (!stopping)
			fire_timers(r, sc, now);
		if (now >= flush_at || r->dirty) {
			line_out_flush(r->out);
			r->dirty = false;
			flush_at = UINT64_MAX;
		}
	}
	return events;
}

/* Step 4: the probes stop, the target's aggregates are merged for good and
 * the losses said, before the end probes' output; then end probes, then
 * unread globals; after more errors than MAXERRORS, the error probes
 * instead (stap); after abort(), none. */
static void end(struct run *r, struct script *sc, struct djp_source *src)
{
	if (src) {
		if (src->ops->finish)
			src->ops->finish(src);
		line_out_flush(r->out);
		agg_sync(r, sc, src);
		agg_report_lost(sc, src);
	}
	if (r->aborting)
		return;
	r->exiting = false;
	if (r->failed) {
		for (int i = 0; i < sc->nerrs && !r->exiting; i++)
			run_probe(r, sc->errs[i], NULL, NULL, point_text(sc->errs[i], PP_ERROR), true);
		return;
	}
	for (int i = 0; i < sc->nends && !r->exiting; i++)
		run_probe(r, sc->ends[i], NULL, NULL, point_text(sc->ends[i], PP_END), true);
	display_unread(r);
}

int run_script(struct script *sc, struct djp_source *src, const struct run_opts *opts, uint64_t *nevents)
{
	struct run *r = calloc(1, sizeof(*r));
	uint64_t events = 0;
	int errors;

	if (!r)
		abort();
	r->sc = sc;
	r->src = src;
	r->out = opts->out;
	init_globals(sc);
	if (src && src->ops->arm && arm(sc, src)) {
		r->errors++;
	} else {
		begin(r, sc, src);
		if (src)
			events = take_events(r, sc, src, opts);
		end(r, sc, src);
	}
	line_out_flush(r->out);
	if (r->errors && !script_no_warnings && !(src && src->arm_said))
		fprintf(stderr, "WARNING: Number of errors: %d, skipped probes: 0\n", r->errors);
	errors = r->errors;
	agg_free(sc);
	free_globals(sc);
	arena_reset(r);
	free(r->arena);
	free(r->pb.p);
	free(r->ub.p);
	free(r->commands);
	tapset_named_free(r->named);
	free(r);
	if (nevents)
		*nevents = events;
	return errors;
}
