/*
 * The parser: a recursive-descent reader of SystemTap's grammar (the subset
 * in docs/SCRIPTS.md) that builds the AST of lang.h; parse_stmt.c reads
 * statements and expressions, this file the rest.
 *
 * The whole text is lexed first into an array of tokens, so any rule can
 * look ahead as far as it needs (foreach's header is the only one that looks
 * past one token).  Expression rules follow stap's precedence ladder, from
 * assignment (right associative, with `<<<`) through ?:, || && | ^ & `in`,
 * comparisons, shifts, `.` concatenation, + -, * / %, unary and ++/--.
 * Names stay unresolved here: an identifier becomes N_VAR or N_CALL with its
 * text, and check.c binds it.  The first error stops the parse: it is
 * reported with its position and the parser unwinds by longjmp, which keeps
 * every rule free of error plumbing.
 *
 * Nesting.  Every later pass (check, run, print) walks the tree by
 * recursion, so the parser bounds the tree's depth: each nested expression,
 * unary operator, statement and block, and each link of a chain of binary
 * operators (a + a + ... builds a tree as deep as the chain is long) counts
 * one level, and a script deeper than MAX_NESTING is a parse error at the
 * token that went too deep.  The parser's own recursion is bounded by the
 * same count.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "parse.h"
#include "lib/escape.h"
#include "lib/func_source.h"
#include "lib/marker_match.h"

/* ---- top level ---------------------------------------------------------- */

static struct node *literal(struct parser *ps)
{
	struct tok *t = peek(ps, 0);
	struct node *n = parse_unary(ps);
	if (n->kind != N_NUM && n->kind != N_STR)
		fail_at(ps, t, "expected a literal number or string");
	return n;
}

static void global_decl(struct parser *ps)
{
	do {
		struct tok *t = expect_ident(ps, "a global name");
		struct sym *s = pool_alloc(ps->sc, sizeof(*s));
		s->name = t->text;
		s->line = t->line;
		s->col = t->col;
		s->global = true;
		s->nkeys = -1;
		s->maxentries = 0;
		s->wrap = accept(ps, "%"); /* a%[N], a%: wraps when full */
		if (accept(ps, "[")) {
			struct tok *sz = peek(ps, 0);
			if (sz->kind != T_NUM || sz->num <= 0)
				fail_at(ps, sz, "expected an array size");
			take(ps);
			s->maxentries = sz->num;
			expect(ps, "]");
		}
		if (accept(ps, "="))
			s->init = literal(ps);
		for (struct sym *o = ps->sc->globals; o; o = o->next)
			if (!strcmp(o->name, s->name))
				fail_at(ps, t, "duplicate global '%s'", s->name);
		s->slot = ps->sc->nglobals++;
		/* keep declaration order */
		struct sym **pp = &ps->sc->globals;
		while (*pp)
			pp = &(*pp)->next;
		*pp = s;
	} while (accept(ps, ","));
	accept(ps, ";");
}

static void append_text(char *buf, size_t sz, size_t *len, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append_text(char *buf, size_t sz, size_t *len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (*len < sz)
		*len += (size_t)vsnprintf(buf + *len, sz - *len, fmt, ap);
	va_end(ap);
}

/* One probe point: component(arg).component(arg)...[?] */
/* A probe point of stap's that djp does not have yet, with why; NULL for
 * a name stap does not have either (a typo: "unknown probe point"). */
static const char *stap_point_missing(const char *const *comp, int ncomp)
{
	static const char *const kernel[] = {
		"kernel", "module", "kprobe", "kretprobe", "syscall", "nd_syscall", "tp_syscall", "syscall_any",
		"netfilter", "perf", "procfs", "signal", "scheduler", "vm", "ioblock", "ioscheduler", "socket",
		"tcp", "udp", "nfs", "nfsd", "sunrpc", "scsi", "irq_handler", "softirq", "workqueue", "netdev",
		"hrtimer", "kprocess", "memory", "generic", "vfs", "sched", "irq", "tty", "snmp", "ipmib",
		"linuxmib", "tcpmib", "nd_kprocess", "kernel_trace",
	};
	static const char *const fn[] = { "plt", "library", "insn" };
	static const char *const life[] = { "syscall" };

	if (!strcmp(comp[0], "kernel") || !strcmp(comp[0], "module"))
		return "of the kernel's probe points, djp has kernel.mark(\"GLOB\"), module(\"MODGLOB\").mark(\"GLOB\"), "
		       "kernel.function(\"NAME\")[.return] and module(\"M\").function(\"NAME\")[.return]";
	for (size_t i = 0; i < sizeof(kernel) / sizeof(kernel[0]); i++)
		if (!strcmp(comp[0], kernel[i]))
			return "kernel probe points; djp probes markers (kernel.mark, module(\"M\").mark, process.mark)";
	if (!strcmp(comp[0], "timer") && ncomp > 1 && !strncmp(comp[1], "profile", 7))
		return "timer.profile samples every CPU from the kernel";
	if (!strcmp(comp[0], "java") || !strncmp(comp[0], "python", 6))
		return "language runtimes' probe points; their SDT markers work as process.mark";
	if (strcmp(comp[0], "process"))
		return NULL;
	for (int c = 1; c < ncomp; c++) {
		if (!strcmp(comp[c], "return") && strcmp(comp[1], "function"))
			return "return probes of anything but function(\"GLOB\")";
		for (size_t i = 0; i < sizeof(fn) / sizeof(fn[0]); i++)
			if (!strcmp(comp[c], fn[i]))
				return "plt, library and instruction-stepping probes";
		for (size_t i = 0; i < sizeof(life) / sizeof(life[0]); i++)
			if (!strcmp(comp[c], life[i]))
				return "system call probes; process.begin, .end, .thread.begin and .thread.end are there";
	}
	return NULL;
}

/* A ':' that is not half of a C++ scope's "::" (function("shop::Cart::total")). */
static bool lone_colon(const char *s)
{
	for (const char *c = strchr(s, ':'); c; c = strchr(c, ':')) {
		if (c[1] != ':')
			return true;
		c += 2;
	}
	return false;
}

/*
 * process("PATH").function("GLOB") and .statement("GLOB@FILE:LINE"): an
 * instruction probe at each function's entry, or at a source line's code
 * (kernel/points.c makes the sites); .function("GLOB").return: their
 * returns (kernel/retprobes.c), the sites "func:NAME%return".  The pattern is the agent's point
 * spelling, "func:GLOB" or "line:FILE:LINE", and the events' sites are
 * named so too; with a PATH the agent is told the object, as "@PATH".
 * function("GLOB@FILE:LINE") keeps only the functions declared in FILE
 * at or around LINE (lib/func_source.c), "func:GLOB@FILE:LINE@OBJECT";
 * what stap has besides is said not supported.
 */
static void function_point(struct parser *ps, struct probe_point *pp, const char *what, const struct tok *proc,
			   const struct tok *spec, bool ret)
{
	char glob[600], obj[4096 + 2] = "";
	const char *at = strchr(spec->text, '@');
	bool statement = !strcmp(what, "statement");
	struct djp_src_filter src;

	pp->kind = PP_MARK;
	pp->point = true;
	pp->path = proc && proc->kind == T_STR ? proc->text : NULL;
	pp->pid = proc && proc->kind == T_NUM ? (int32_t)proc->num : 0;
	if (statement && at && strchr(at + 1, ':') && !strchr(strchr(at + 1, ':') + 1, ':')) {
		snprintf(glob, sizeof(glob), "line:%s", at + 1);
	} else if (!statement && spec->text[0] != '@' && spec->text[0] && !strpbrk(spec->text, "+%") &&
		   (at ? !strchr(at + 1, '@') && !djp_src_filter_parse(at + 1, &src) : !lone_colon(spec->text))) {
		/* function("GLOB") or function("GLOB@FILE:LINE") */
		snprintf(glob, sizeof(glob), "func:%s%s", spec->text, ret ? "%return" : "");
		pp->ret = ret;
	} else {
		diag(ps->sc, pp->line, pp->col, "semantic error",
		     "not supported yet: probe point %s (djp has function(\"GLOB\"), "
		     "function(\"GLOB@FILE:LINE\") and parse_statement(\"FUNC@FILE:LINE\"))",
		     pp->text);
		longjmp(ps->fail, 1);
	}
	pp->glob = pool_strndup(ps->sc, glob, strlen(glob));
	if (pp->path) {
		char *real = realpath(pp->path, NULL);
		snprintf(obj, sizeof(obj), "@%s", real ? real : pp->path);
		free(real);
	} else if (!statement && at) {
		/* "func:GLOB@FILE:LINE@": the source's '@' is not the object's */
		snprintf(obj, sizeof(obj), "@");
	}
	{
		size_t n = strlen(glob) + strlen(obj);
		char *c = pool_alloc(ps->sc, n + 1);
		snprintf(c, n + 1, "%s%s", glob, obj);
		pp->connect = c;
	}
}

/* process(PID): a process id */
static bool pid_arg(const struct tok *t)
{
	return t->kind == T_NUM && t->num > 0 && t->num <= INT32_MAX;
}

static bool no_args(struct tok *const *arg, int ncomp)
{
	for (int i = 0; i < ncomp; i++)
		if (arg[i])
			return false;
	return true;
}

/* A probe point's dotted words, each with its literal argument or NULL. */
struct point_words {
	const char *comp[4];
	struct tok *arg[4];
	int ncomp;
};

/* COMPONENT(ARG).COMPONENT...[?|!] into *w, its text as written into
 * pp->text. */
static void point_words(struct parser *ps, struct probe_point *pp, struct point_words *w)
{
	char text[512];
	size_t len = 0;

	w->ncomp = 0;
	do {
		struct tok *c = expect_ident(ps, "a probe point");
		if (w->ncomp == 4)
			fail_at(ps, c, "probe point has too many components");
		w->comp[w->ncomp] = c->text;
		w->arg[w->ncomp] = NULL;
		append_text(text, sizeof(text), &len, "%s%s", w->ncomp ? "." : "", c->text);
		if (accept(ps, "(")) {
			bool minus = accept(ps, "-"); /* begin(-5) */
			struct tok *a = take(ps);
			if ((a->kind != T_STR || minus) && a->kind != T_NUM) {
				ps->pos--;
				fail_at(ps, a, "expected a string or number literal");
			}
			if (minus) {
				struct tok *neg = pool_alloc(ps->sc, sizeof(*neg));
				*neg = *a;
				neg->num = -a->num;
				a = neg;
			}
			w->arg[w->ncomp] = a;
			if (a->kind == T_STR)
				append_text(text, sizeof(text), &len, "(\"%s\")", a->text);
			else
				append_text(text, sizeof(text), &len, "(%lld)", (long long)a->num);
			expect(ps, ")");
		}
		w->ncomp++;
	} while (accept(ps, "."));
	if (accept(ps, "?"))
		pp->optional = true;
	else if (accept(ps, "!"))
		pp->optional = pp->sufficient = true; /* stap: optional, and enough when it resolves */
	pp->text = pool_strndup(ps->sc, text, len < sizeof(text) ? len : sizeof(text) - 1);
}

/* timer.UNIT(N)[.randomize(M)]: false when the period (or its spread)
 * makes no sense */
static bool timer_point(struct probe_point *pp, const struct point_words *w)
{
	static const struct {
		const char *n;
		int64_t mul; /* ns a unit; 0: hz (a rate) */
	} units[] = { { "s", 1000000000 }, { "sec", 1000000000 }, { "ms", 1000000 }, { "msec", 1000000 },
		      { "us", 1000 },	     { "usec", 1000 },	     { "ns", 1 },	{ "nsec", 1 },
		      { "jiffies", 10000000 }, /* USER_HZ's 100 a second */
		      { "hz", 0 } };
	struct tok *const *arg = w->arg;
	int64_t mul = -1;

	pp->kind = PP_TIMER;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(w->comp[1], units[i].n))
			mul = units[i].mul;
	if (mul == 0 && arg[1]->num > 0 && arg[1]->num <= 1000000000)
		pp->period_ns = 1000000000 / arg[1]->num;
	else if (mul > 0)
		pp->period_ns = arg[1]->num * mul;
	if (pp->period_ns <= 0 || (mul > 0 && arg[1]->num > 0 && pp->period_ns / arg[1]->num != mul))
		return false;
	if (w->ncomp == 3) { /* .randomize(M), in the timer's unit */
		pp->random_ns = mul > 0 ? arg[2]->num * mul : 0;
		if (pp->random_ns < 0 || pp->random_ns >= pp->period_ns)
			return false;
	}
	return true;
}

/* kernel.mark("GLOB"), module("MODGLOB").mark("GLOB"): the markers of
 * loaded modules (script/klive.c) */
static void kernel_point(struct parser *ps, struct probe_point *pp, const struct point_words *w)
{
	char glob[600];
	pp->kind = PP_MARK;
	pp->kernel = true;
	pp->module = w->arg[0] ? w->arg[0]->text : NULL;
	pp->glob = w->arg[1]->text;
	snprintf(glob, sizeof(glob), "%s%s%s", pp->module ? pp->module : "", pp->module ? ":" : "", pp->glob);
	pp->connect = pool_strndup(ps->sc, glob, strlen(glob));
}

/* kernel.function("NAME")[.return], module("M").function("NAME")[.return]:
 * a kprobe (kretprobe) on the function, which djprobe.ko makes when the
 * point is connected, "func:NAME" or "func:M:NAME", with "%return" for
 * the return (kmod/kfunc.c); its events are the site of that name.
 * .call is the same point (a kprobe on a symbol is its out-of-line
 * copy), and kernel.statement("NAME+OFF") a kprobe at that offset,
 * "func:NAME+OFF". */
/* kernel.statement's "NAME+OFF": a name, '+', a number */
static bool kernel_offset(const char *s)
{
	const char *plus = strchr(s, '+');
	char *end;

	if (!plus || plus == s || strpbrk(s, "*?[%:@") || plus[1] < '0' || plus[1] > '9')
		return false;
	(void)strtoull(plus + 1, &end, 0);
	return !*end;
}

static void kernel_function_point(struct parser *ps, struct probe_point *pp, const struct point_words *w, bool ret)
{
	char glob[600];
	pp->kind = PP_MARK;
	pp->kernel = true;
	pp->point = true;
	pp->ret = ret;
	pp->module = w->arg[0] ? w->arg[0]->text : NULL;
	snprintf(glob, sizeof(glob), "func:%s%s%s%s", pp->module ? pp->module : "", pp->module ? ":" : "",
		 w->arg[1]->text, ret ? "%return" : "");
	pp->glob = pp->connect = pool_strndup(ps->sc, glob, strlen(glob));
}

/* process[(PATH|PID)].mark("GLOB"), and SystemTap's spelling of an SDT
 * probe, process.provider("P").mark("GLOB"): the pattern P:GLOB */
static void process_mark_point(struct parser *ps, struct probe_point *pp, const struct point_words *w)
{
	struct tok *const *arg = w->arg;
	pp->kind = PP_MARK;
	pp->path = arg[0] && arg[0]->kind == T_STR ? arg[0]->text : NULL;
	pp->pid = arg[0] && arg[0]->kind == T_NUM ? (int32_t)arg[0]->num : 0;
	if (w->ncomp == 2) {
		pp->glob = arg[1]->text;
	} else {
		char glob[512];
		snprintf(glob, sizeof(glob), "%s:%s", arg[1]->text, arg[2]->text);
		pp->glob = pool_strndup(ps->sc, glob, strlen(glob));
	}
}

/* a probe alias (a name of dotted words), or an unknown point: said after
 * the parse */
static void alias_point(struct parser *ps, struct probe_point *pp, const struct point_words *w)
{
	char name[256];
	size_t len = 0;
	for (int i = 0; i < w->ncomp; i++)
		len += (size_t)snprintf(name + len, sizeof(name) - len, "%s%s", i ? "." : "", w->comp[i]);
	pp->kind = PP_ALIAS;
	pp->alias = pool_strndup(ps->sc, name, len < sizeof(name) ? len : sizeof(name) - 1);
}

static _Noreturn void bad_point(struct parser *ps, struct probe_point *pp, const struct point_words *w)
{
	const char *why = stap_point_missing(w->comp, w->ncomp);
	if (why) {
		diag(ps->sc, pp->line, pp->col, "semantic error", "not supported yet: probe point %s (%s)", pp->text,
		     why);
		longjmp(ps->fail, 1);
	}
	diag(ps->sc, pp->line, pp->col, "semantic error",
	     "while resolving probe point %s: unknown probe point (expected begin, end, begin(N), end(N), oneshot, "
	     "never, timer.ms(N), timer.s(N), timer.hz(N), timer.jiffies(N), timer.ms(N).randomize(M), "
	     "process(\"PATH\").mark(\"GLOB\"), process.mark(\"GLOB\"), process.provider(\"P\").mark(\"GLOB\"), "
	     "process[(\"PATH\")].begin, process[(\"PATH\")].end, process[(\"PATH\")].thread.begin, "
	     "process[(\"PATH\")].thread.end, "
	     "kernel.mark(\"GLOB\"), module(\"MODGLOB\").mark(\"GLOB\"), kernel.function(\"NAME\")[.return] or "
	     "module(\"M\").function(\"NAME\")[.return])",
	     pp->text);
	longjmp(ps->fail, 1);
}

/* process's argument: none, a path or a pid */
static bool process_arg(const struct tok *a)
{
	return !a || a->kind == T_STR || pid_arg(a);
}

static struct probe_point *probe_point(struct parser *ps)
{
	struct probe_point *pp = pool_alloc(ps->sc, sizeof(*pp));
	struct point_words w;
	const char *const *comp = w.comp;
	struct tok *const *arg = w.arg;
	int ncomp;

	pp->line = peek(ps, 0)->line;
	pp->col = peek(ps, 0)->col;
	point_words(ps, pp, &w);
	ncomp = w.ncomp;
	if (ncomp == 1 && (!arg[0] || arg[0]->kind == T_NUM) &&
	    (!strcmp(comp[0], "begin") || !strcmp(comp[0], "end") || !strcmp(comp[0], "error"))) {
		/* begin(N), end(N), error(N): run in order of N, lowest first */
		pp->kind = comp[0][0] == 'b' ? PP_BEGIN : comp[0][1] == 'n' ? PP_END : PP_ERROR;
		pp->priority = arg[0] ? arg[0]->num : 0;
	} else if (ncomp == 1 && !arg[0] && !strcmp(comp[0], "oneshot")) {
		pp->kind = PP_BEGIN; /* once, at the start, and then the end */
		pp->oneshot = true;
	} else if (ncomp == 1 && !arg[0] && !strcmp(comp[0], "never")) {
		pp->kind = PP_NEVER; /* checked, never run */
	} else if ((ncomp == 2 || (ncomp == 3 && !strcmp(comp[2], "randomize") && arg[2] && arg[2]->kind == T_NUM)) &&
		   !strcmp(comp[0], "timer") && !arg[0] && arg[1] && arg[1]->kind == T_NUM) {
		if (!timer_point(pp, &w))
			bad_point(ps, pp, &w);
	} else if (ncomp == 2 && (!strcmp(comp[0], "kernel") || !strcmp(comp[0], "module")) &&
		   !strcmp(comp[1], "mark") && arg[1] && arg[1]->kind == T_STR &&
		   (comp[0][0] == 'k' ? !arg[0] : arg[0] && arg[0]->kind == T_STR)) {
		kernel_point(ps, pp, &w);
	} else if ((ncomp == 2 || (ncomp == 3 && !arg[2] && (!strcmp(comp[2], "return") || !strcmp(comp[2], "call")))) &&
		   (!strcmp(comp[0], "kernel") || !strcmp(comp[0], "module")) && !strcmp(comp[1], "function") &&
		   arg[1] && arg[1]->kind == T_STR && arg[1]->text[0] && !strpbrk(arg[1]->text, "*?[+%:@") &&
		   (comp[0][0] == 'k' ? !arg[0] : arg[0] && arg[0]->kind == T_STR)) {
		kernel_function_point(ps, pp, &w, ncomp == 3 && !strcmp(comp[2], "return"));
	} else if (ncomp == 2 && (!strcmp(comp[0], "kernel") || !strcmp(comp[0], "module")) &&
		   !strcmp(comp[1], "statement") && arg[1] && arg[1]->kind == T_STR && kernel_offset(arg[1]->text) &&
		   (comp[0][0] == 'k' ? !arg[0] : arg[0] && arg[0]->kind == T_STR)) {
		kernel_function_point(ps, pp, &w, false);
	} else if (ncomp == 2 && !strcmp(comp[0], "process") && !strcmp(comp[1], "mark") && arg[1] &&
		   arg[1]->kind == T_STR && process_arg(arg[0])) {
		process_mark_point(ps, pp, &w);
	} else if (ncomp == 3 && !strcmp(comp[0], "process") && !strcmp(comp[1], "provider") &&
		   !strcmp(comp[2], "mark") && arg[1] && arg[1]->kind == T_STR && arg[2] && arg[2]->kind == T_STR &&
		   process_arg(arg[0])) {
		process_mark_point(ps, pp, &w);
	} else if ((ncomp == 2 || (ncomp == 3 && !arg[2] && !strcmp(comp[2], "call")) ||
		    (ncomp == 3 && !arg[2] && !strcmp(comp[2], "return") && !strcmp(comp[1], "function"))) &&
		   !strcmp(comp[0], "process") && (!strcmp(comp[1], "function") || !strcmp(comp[1], "statement")) &&
		   arg[1] && arg[1]->kind == T_STR && process_arg(arg[0])) {
		function_point(ps, pp, comp[1], arg[0], arg[1], ncomp == 3 && !strcmp(comp[2], "return"));
	} else if (ncomp == 2 && !strcmp(comp[0], "process") && process_arg(arg[0]) && !arg[1] &&
		   (!strcmp(comp[1], "begin") || !strcmp(comp[1], "end"))) {
		/* process[(PATH|PID)].begin and .end: a process's life, as the
		 * live source sees it (script/live.c) */
		pp->kind = PP_LIFE;
		pp->life = comp[1][0] == 'b' ? DJP_LIFE_BEGIN : DJP_LIFE_END;
		pp->path = arg[0] && arg[0]->kind == T_STR ? arg[0]->text : NULL;
		pp->pid = arg[0] && arg[0]->kind == T_NUM ? (int32_t)arg[0]->num : 0;
	} else if (ncomp == 3 && !strcmp(comp[0], "process") && process_arg(arg[0]) && !arg[1] && !arg[2] &&
		   !strcmp(comp[1], "thread") && (!strcmp(comp[2], "begin") || !strcmp(comp[2], "end"))) {
		/* process[(PATH|PID)].thread.begin and .end: the library's
		 * markers of a thread's life (kernel/threads.c), in whatever
		 * object it is; PATH is the program, compared at each event */
		pp->kind = PP_MARK;
		pp->thread = true;
		pp->glob = comp[2][0] == 'b' ? DJP_MARKER_THREAD_BEGIN : DJP_MARKER_THREAD_END;
		pp->path = arg[0] && arg[0]->kind == T_STR ? arg[0]->text : NULL;
		pp->pid = arg[0] && arg[0]->kind == T_NUM ? (int32_t)arg[0]->num : 0;
	} else if (no_args(arg, ncomp) && (ncomp == 1 || !stap_point_missing(comp, ncomp))) {
		alias_point(ps, pp, &w);
	} else {
		bad_point(ps, pp, &w);
	}
	return pp;
}

/* probe NAME = POINTS { } or probe NAME += POINTS { }: an alias. */
static void brace_points(struct parser *ps);

static bool alias_decl(struct parser *ps)
{
	struct tok *name = peek(ps, 0), *op;
	struct alias *a;
	struct probe_point **tail;
	char dotted[256];
	size_t len = 0;
	int k = 1;

	/* NAME or NAME.NAME... then = or += */
	while (peek(ps, k - 1)->kind == T_IDENT && is_op(peek(ps, k), ".") && peek(ps, k + 1)->kind == T_IDENT)
		k += 2;
	op = peek(ps, k);
	if (name->kind != T_IDENT || (!is_op(op, "=") && !is_op(op, "+=")))
		return false;
	for (int i = 0; i < k; i++) {
		struct tok *t = take(ps);
		len += (size_t)snprintf(dotted + len, sizeof(dotted) - len, "%s", t->kind == T_IDENT ? t->text : ".");
		if (len >= sizeof(dotted))
			fail_at(ps, name, "alias name too long");
	}
	take(ps);
	a = pool_alloc(ps->sc, sizeof(*a));
	a->name = pool_strndup(ps->sc, dotted, len);
	a->epilogue = is_op(op, "+=");
	tail = &a->points;
	do {
		brace_points(ps);
		*tail = probe_point(ps);
		tail = &(*tail)->next;
	} while (accept(ps, ","));
	a->body = parse_block(ps);
	a->next = ps->sc->aliases;
	ps->sc->aliases = a;
	return true;
}

/* ---- brace expansion of probe points ------------------------------------ */

#define BRACE_MAX 1024 /* points one expansion may make */
#define BRACE_DEPTH 32 /* braces within braces */

struct toklist {
	struct tok *v;
	size_t n, cap;
};

static void tl_add(struct toklist *l, const struct tok *t, size_t n)
{
	if (!n)
		return;
	if (l->n + n > l->cap) {
		l->cap = (l->n + n) * 2 + 16;
		l->v = realloc(l->v, sizeof(*l->v) * l->cap);
		if (!l->v)
			abort();
	}
	memcpy(l->v + l->n, t, sizeof(*t) * n);
	l->n += n;
}

/* t[0..n) is one point's tokens: append every point its braces stand for,
 * in product order, each followed by a ','.  False past BRACE_MAX. */
static bool expand_braces(const struct tok *t, size_t n, struct toklist *out, size_t *made, int level)
{
	size_t open = n, close = 0, depth = 0, start;
	struct toklist alt = { 0 };
	bool ok = true;

	for (size_t i = 0; i < n && open == n; i++)
		if (is_op(&t[i], "{") && (i == 0 || is_op(&t[i - 1], ".")))
			open = i;
	if (open == n) {
		if (++*made > BRACE_MAX)
			return false;
		tl_add(out, t, n);
		tl_add(out, &(struct tok){ .kind = T_OP, .text = ",", .len = 1, .line = t[n - 1].line,
					   .col = t[n - 1].col }, 1);
		return true;
	}
	for (close = open; close < n; close++) {
		if (is_op(&t[close], "{"))
			depth++;
		else if (is_op(&t[close], "}") && --depth == 0)
			break;
	}
	if (close == n || level == BRACE_DEPTH)
		return false;
	start = open + 1;
	for (size_t i = open + 1; i <= close && ok; i++) {
		if (is_op(&t[i], "{"))
			depth++;
		else if (is_op(&t[i], "}") && i < close)
			depth--;
		if (depth == 0 && (is_op(&t[i], ",") || i == close)) {
			/* prefix, this alternative, suffix */
			alt.n = 0;
			tl_add(&alt, t, open);
			tl_add(&alt, t + start, i - start);
			tl_add(&alt, t + close + 1, n - close - 1);
			ok = alt.n && expand_braces(alt.v, alt.n, out, made, level + 1);
			start = i + 1;
		}
	}
	free(alt.v);
	return ok;
}

/* At a probe point: if its components hold `{a,b}` expansions, replace its
 * tokens by the points they stand for, comma-separated (langref: brace
 * expansion).  A '{' opens an expansion at a point's start or after a '.';
 * any other '{' at depth 0 is the probe's body. */
static void brace_points(struct parser *ps)
{
	size_t i = ps->pos, depth = 0, made = 0;
	bool any = false;
	struct toklist out = { 0 };

	for (; i < ps->ntoks && ps->toks[i].kind != T_EOF; i++) {
		struct tok *t = &ps->toks[i];
		bool opens = is_op(t, "{") && (i == ps->pos || is_op(&ps->toks[i - 1], ".") ||
					       (depth && (is_op(&ps->toks[i - 1], ",") || is_op(&ps->toks[i - 1], "{"))));
		if (opens) {
			depth++;
			any = true;
		} else if (depth && is_op(t, "}")) {
			depth--;
		} else if (!depth && (is_op(t, ",") || is_op(t, "{") || is_kw(t, "if") || is_op(t, "="))) {
			break;
		}
	}
	if (!any)
		return;
	if (depth || !expand_braces(ps->toks + ps->pos, i - ps->pos, &out, &made, 0)) {
		free(out.v);
		if (made > BRACE_MAX)
			fail_at(ps, peek(ps, 0), "brace expansion makes more than %d probe points", BRACE_MAX);
		fail_at(ps, peek(ps, 0), "unbalanced '{' in a probe point, or braces nested over %d deep", BRACE_DEPTH);
	}
	out.n--; /* the last ',' */
	{
		struct toklist all = { 0 };
		tl_add(&all, ps->toks, ps->pos);
		tl_add(&all, out.v, out.n);
		tl_add(&all, ps->toks + i, ps->ntoks - i);
		free(ps->toks);
		ps->toks = all.v;
		ps->ntoks = all.n;
	}
	free(out.v);
}

static void probe_decl(struct parser *ps, struct tok *kw)
{
	struct probe *p;
	struct probe_point **tail;

	if (alias_decl(ps))
		return;
	p = pool_alloc(ps->sc, sizeof(*p));
	tail = &p->points;
	p->line = kw->line;
	p->col = kw->col;
	ps->probe_from = ps->pos;
	do {
		brace_points(ps);
		*tail = probe_point(ps);
		tail = &(*tail)->next;
	} while (accept(ps, ","));
	ps->probe_points_to = ps->pos;
	ps->in_probe = true;
	ps->probe_all_return = true;
	for (struct probe_point *pt = p->points; pt; pt = pt->next)
		ps->probe_all_return &= pt->kind == PP_MARK && pt->point && pt->ret && !pt->kernel;
	if (is_kw(peek(ps, 0), "if")) {
		take(ps);
		expect(ps, "(");
		p->cond = parse_expr(ps);
		expect(ps, ")");
	}
	p->body = parse_block(ps);
	ps->in_probe = false;
	p->index = ps->sc->nprobes++;
	struct probe **pp = &ps->sc->probes;
	while (*pp)
		pp = &(*pp)->next;
	*pp = p;
}

static uint8_t type_name(struct parser *ps)
{
	struct tok *t = expect_ident(ps, "a type (long or string)");
	if (!strcmp(t->text, "long"))
		return TY_LONG;
	if (!strcmp(t->text, "string"))
		return TY_STR;
	ps->pos--;
	fail_at(ps, t, "expected a type (long or string)");
}

/* %{ ... %}: C for stap's kernel module, allowed in guru mode only */
static _Noreturn void embedded_c(struct parser *ps, const struct tok *t)
{
	diag(ps->sc, t->line, t->col, "parse error",
	     "embedded C (%%{ %%}) is guru mode (-g): djp runs scripts without a kernel module to put C in");
	longjmp(ps->fail, 1);
}

static void function_decl(struct parser *ps)
{
	struct tok *t = expect_ident(ps, "a function name");
	struct func *f = pool_alloc(ps->sc, sizeof(*f));

	f->name = t->text;
	f->line = t->line;
	f->col = t->col;
	for (struct func *o = ps->sc->funcs; o; o = o->next)
		if (!strcmp(o->name, f->name))
			fail_at(ps, t, "duplicate function '%s'", f->name);
	if (accept(ps, ":"))
		f->ret = type_name(ps);
	expect(ps, "(");
	if (!is_op(peek(ps, 0), ")")) {
		do {
			struct tok *p = expect_ident(ps, "a parameter name");
			struct sym *s = pool_alloc(ps->sc, sizeof(*s));
			if (f->nparams == 16)
				fail_at(ps, p, "too many parameters");
			s->name = p->text;
			s->line = p->line;
			s->col = p->col;
			s->slot = f->nparams;
			s->written = true;
			if (accept(ps, ":"))
				s->ty = type_name(ps);
			for (int i = 0; i < f->nparams; i++)
				if (!strcmp(f->params[i]->name, s->name))
					fail_at(ps, p, "duplicate parameter '%s'", s->name);
			f->params[f->nparams++] = s;
		} while (accept(ps, ","));
	}
	expect(ps, ")");
	if (accept(ps, ":"))
		f->ret = type_name(ps);
	if (is_op(peek(ps, 0), "%") && is_op(peek(ps, 1), "{"))
		embedded_c(ps, peek(ps, 0));
	f->body = parse_block(ps);
	f->next = ps->sc->funcs;
	ps->sc->funcs = f;
}

/* A copy of alias point q in the pool (the alias may serve many probes). */
static struct probe_point *copy_point(struct script *sc, const struct probe_point *q)
{
	struct probe_point *c = pool_alloc(sc, sizeof(*c));
	*c = *q;
	c->next = NULL;
	return c;
}

/* A deep copy of a parsed (not yet checked) tree: each probe that uses an
 * alias gets its own copy of the alias's body, since the checker resolves
 * names in place, to the slots of the probe it checks. */
static struct node *clone_node(struct script *sc, const struct node *n)
{
	struct node *c;
	if (!n)
		return NULL;
	c = pool_alloc(sc, sizeof(*c));
	*c = *n;
	c->a = clone_node(sc, n->a);
	c->b = clone_node(sc, n->b);
	c->c = clone_node(sc, n->c);
	c->d = clone_node(sc, n->d);
	c->fe_limit = clone_node(sc, n->fe_limit);
	c->fe_slice = clone_node(sc, n->fe_slice);
	if (n->args) {
		int room = n->kind == S_FOREACH ? MAXKEYS : n->nargs + 1;
		c->args = pool_alloc(sc, sizeof(struct node *) * (size_t)room);
		for (int i = 0; i < n->nargs; i++)
			c->args[i] = clone_node(sc, n->args[i]);
	}
	return c;
}

#define ALIAS_DEPTH 16 /* aliases of aliases: deeper is a cycle */

struct expansion {
	struct probe_point **tail;
	struct node *pre[16], *post[16];
	int npre, npost;
};

/* The points alias point pp stands for, appended at x->tail, and the
 * bodies to wrap the probe's in: an alias's own alias points expand first,
 * so that the innermost prologue runs first and its epilogue last. */
static int expand_point(struct script *sc, const struct probe_point *pp, struct expansion *x, int depth)
{
	bool found = false;
	int errors = 0;

	if (depth == ALIAS_DEPTH) {
		diag(sc, pp->line, pp->col, "semantic error", "probe alias %s: aliases nested too deeply (a cycle?)",
		     pp->alias);
		return 1;
	}
	for (struct alias *a = sc->aliases; a; a = a->next) {
		int npost;
		if (strcmp(a->name, pp->alias))
			continue;
		found = true;
		npost = x->npost;
		for (struct probe_point *q = a->points; q; q = q->next) {
			if (q->kind == PP_ALIAS) {
				struct probe_point inner = *q;
				inner.optional |= pp->optional;
				errors += expand_point(sc, &inner, x, depth + 1);
				continue;
			}
			*x->tail = copy_point(sc, q);
			(*x->tail)->optional |= pp->optional;
			x->tail = &(*x->tail)->next;
		}
		if (!a->epilogue && x->npre < 16) {
			x->pre[x->npre++] = clone_node(sc, a->body);
		} else if (a->epilogue && x->npost < 16) {
			/* before the epilogues of the aliases it is made of */
			memmove(&x->post[npost + 1], &x->post[npost], sizeof(x->post[0]) * (size_t)(x->npost - npost));
			x->post[npost] = clone_node(sc, a->body);
			x->npost++;
		}
	}
	if (!found && !pp->optional) {
		diag(sc, pp->line, pp->col, "semantic error",
		     "while resolving probe point %s: unknown probe point (no alias of that name, and none of "
		     "begin, end, begin(N), end(N), oneshot, never, timer.*, process...mark)",
		     pp->text);
		errors++;
	}
	return errors;
}

/*
 * Each probe point that names an alias becomes the alias's points, and the
 * probe's body is wrapped: the prologues of `=` aliases first, the
 * epilogues of `+=` ones after, all in one scope, as stap does.  A name no
 * alias has is stap's unknown probe point.
 */
static int expand_aliases(struct script *sc)
{
	int errors = 0;
	for (struct probe *p = sc->probes; p; p = p->next) {
		struct probe_point *out = NULL;
		struct expansion x = { .tail = &out };
		for (struct probe_point *pp = p->points, *next; pp; pp = next) {
			next = pp->next;
			if (pp->kind != PP_ALIAS) {
				pp->next = NULL;
				*x.tail = pp;
				x.tail = &pp->next;
				continue;
			}
			errors += expand_point(sc, pp, &x, 0);
		}
		p->points = out;
		if (x.npre || x.npost) {
			struct node *b = pool_alloc(sc, sizeof(*b));
			*b = *p->body;
			b->kind = S_BLOCK;
			b->nargs = x.npre + 1 + x.npost;
			b->args = pool_alloc(sc, sizeof(struct node *) * (size_t)(b->nargs + 1));
			for (int i = 0; i < x.npre; i++)
				b->args[i] = x.pre[i];
			b->args[x.npre] = p->body;
			for (int i = 0; i < x.npost; i++)
				b->args[x.npre + 1 + i] = x.post[i];
			p->body = b;
		}
	}
	return errors;
}

static bool uses_defined(const struct node *n)
{
	if (!n)
		return false;
	if (n->kind == N_DEFINED)
		return true;
	if (uses_defined(n->a) || uses_defined(n->b) || uses_defined(n->c) || uses_defined(n->d) ||
	    uses_defined(n->fe_limit) || uses_defined(n->fe_slice))
		return true;
	for (int i = 0; i < n->nargs; i++)
		if (uses_defined(n->args[i]))
			return true;
	return false;
}

/*
 * stap elaborates each point of a probe on its own, so @defined($x) can be
 * true at one marker and false at another.  A probe of several points whose
 * body asks @defined becomes one probe per point, each with its own copy
 * of the body (unless a point is `!`, whose meaning is about the list).
 */
static void split_for_defined(struct script *sc)
{
	for (struct probe *p = sc->probes; p; p = p->next) {
		bool sufficient = false;
		if (!p->points || !p->points->next || (!uses_defined(p->body) && !uses_defined(p->cond)))
			continue;
		for (struct probe_point *pp = p->points; pp; pp = pp->next)
			sufficient |= pp->sufficient;
		if (sufficient)
			continue;
		while (p->points->next) {
			struct probe *np = pool_alloc(sc, sizeof(*np));
			struct probe_point *last = p->points, *prev = NULL;
			while (last->next)
				prev = last, last = last->next;
			prev->next = NULL;
			*np = *p;
			np->points = last;
			np->body = clone_node(sc, p->body);
			np->cond = clone_node(sc, p->cond);
			np->index = sc->nprobes++;
			np->next = p->next; /* the later points after: the order written */
			p->next = np;
		}
	}
}

int parse_script(struct script *sc)
{
	struct parser ps = { .sc = sc };
	struct lexer lx;
	size_t cap = 256;

	ps.toks = malloc(sizeof(*ps.toks) * cap);
	if (!ps.toks)
		return 1;
	lex_init(&lx, &sc->file, sc);
	for (;;) {
		if (ps.ntoks == cap) {
			struct tok *n = realloc(ps.toks, sizeof(*ps.toks) * (cap *= 2));
			if (!n) {
				free(ps.toks);
				return 1;
			}
			ps.toks = n;
		}
		if (!lex_next(&lx, &ps.toks[ps.ntoks])) {
			free(ps.toks);
			return 1;
		}
		if (ps.toks[ps.ntoks++].kind == T_EOF)
			break;
	}
	if (preprocess(sc, &ps.toks, &ps.ntoks)) {
		free(ps.toks);
		return 1;
	}
	if (setjmp(ps.fail)) {
		free(ps.toks);
		free(ps.synth);
		return 1;
	}
	for (;;) {
		struct tok *t;
		if (peek(&ps, 0)->kind == T_EOF && ps.nsynth) {
			/* what @entry of an expression added (parse_stmt.c), in
			 * place of the end: parsed as the script's own */
			struct tok *v = realloc(ps.toks, sizeof(*v) * (ps.ntoks + ps.nsynth));
			if (!v)
				abort();
			ps.toks = v;
			v[ps.ntoks - 1 + ps.nsynth] = v[ps.ntoks - 1];
			memcpy(v + ps.ntoks - 1, ps.synth, sizeof(*v) * ps.nsynth);
			ps.ntoks += ps.nsynth;
			ps.nsynth = 0;
		}
		if (peek(&ps, 0)->kind == T_EOF)
			break;
		t = take(&ps);
		if (is_kw(t, "global"))
			global_decl(&ps);
		else if (is_kw(t, "probe"))
			probe_decl(&ps, t);
		else if (is_kw(t, "function"))
			function_decl(&ps);
		else if (is_op(t, ";"))
			continue;
		else if (is_kw(t, "private")) {
			/* stap's visibility within a tapset file; there is one file
			 * here.  `private NAME` is a private global */
			struct tok *n = peek(&ps, 0);
			if (n->kind == T_IDENT && !is_kw(n, "global") && !is_kw(n, "function"))
				global_decl(&ps);
		}
		else if (is_op(t, "%") && is_op(peek(&ps, 0), "{"))
			embedded_c(&ps, t);
		else {
			ps.pos--;
			fail_at(&ps, t, "expected 'global', 'probe' or 'function'");
		}
	}
	free(ps.synth);
	sc->toks = ps.toks; /* for -p1; freed by script_release */
	sc->ntoks = ps.ntoks;
	if (expand_aliases(sc))
		return 1;
	split_for_defined(sc);
	if (!sc->probes) {
		diag(sc, 0, 0, "semantic error", "no probes found");
		return 1;
	}
	return 0;
}

void print_script_tokens(const struct script *sc, FILE *out)
{
	int indent = 0;
	bool line_start = true;
	for (size_t i = 0; i < sc->ntoks && sc->toks[i].kind != T_EOF; i++) {
		const struct tok *t = &sc->toks[i];
		bool close = t->kind == T_OP && !strcmp(t->text, "}");
		if (close && indent)
			indent--;
		if (!line_start && !indent && t->kind == T_IDENT &&
		    (!strcmp(t->text, "global") || !strcmp(t->text, "probe") || !strcmp(t->text, "function"))) {
			fputc('\n', out); /* a declaration starts a line */
			line_start = true;
		}
		if (line_start)
			fprintf(out, "%*s", indent * 4, "");
		else
			fputc(' ', out);
		switch (t->kind) {
		case T_STR: {
			char buf[1024];
			fprintf(out, "\"%s\"", djp_escape_c(buf, sizeof(buf), t->text, true));
			break;
		}
		case T_NUM: fprintf(out, "%lld", (long long)t->num); break;
		case T_DOLLAR: fprintf(out, "$%s", t->text); break;
		case T_DOLLAR2: fprintf(out, "$$%s", t->text); break;
		case T_AT: fprintf(out, "@%s", t->text); break;
		default: fputs(t->text, out); break;
		}
		line_start = t->kind == T_OP && (!strcmp(t->text, "{") || !strcmp(t->text, "}") || !strcmp(t->text, ";"));
		if (t->kind == T_OP && !strcmp(t->text, "{"))
			indent++;
		if (line_start)
			fputc('\n', out);
	}
	if (!line_start)
		fputc('\n', out);
}
