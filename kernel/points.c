/*
 * Instruction probes: a probe at a function's entry, at an offset into it,
 * at an address or at a source line, in code nobody prepared for it.
 *
 * A point probe (djp_connect_at) keeps its points as the user gave them
 * (a function glob and offset, an address, a "file:line") and resolves
 * them again in every object an attach looks at, exactly as a marker
 * probe matches its pattern again: connect resolves them in the objects
 * loaded now, a dlopen in the new ones, and disconnect finds the sites by
 * their handler lists.  An object's function symbols are read once, when
 * a point is first resolved in it (lib/func_symbols.c).
 *
 * A point becomes a site the first time it is resolved.  Each one is
 * checked first:
 *
 *   - it lies in a function symbol, and is an instruction boundary of that
 *     function decoded from its start, and of any other function that
 *     covers it (never a byte in the middle of an instruction, which an
 *     int3 would corrupt);
 *   - its instruction can run elsewhere (arch/x86/insn_reloc.c: not a
 *     loop/jrcxz, xbegin or somebody's int3), because an int3 probe here
 *     runs the displaced instruction out of line, as the kernel's boosted
 *     kprobes do: the trap handler resumes at a relocated copy that jumps
 *     back after it, with no single step and no second trap.
 *
 * The function's bytes are read from memory with the shadow copies of the
 * sites armed in it laid over them, so that an int3 or a jump of ours is
 * never decoded as the program's code.  The new sites live in a point
 * object of their own whose `parent` is the object their code is in: the
 * engine's walks over objects (trap tables, batches, fork, dlclose) then
 * see them with no special case, and they are dropped with their parent.
 * A point at a marker's address is that marker's site.  Two probes at one
 * instruction share its site, as two probes on one marker do.
 *
 * The site's shadow is the instruction itself, so the expected-bytes check
 * (-EBUSY) holds here as at markers, and after the last disconnect the text
 * is the original byte for byte.
 */
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/engine.h"
#include "kernel/lock.h"
#include "kernel/probes.h"
#include "lib/func_params.h"
#include "lib/func_source.h"
#include "lib/func_symbols.h"

static bool is_glob(const char *s)
{
	return s && strpbrk(s, "*?[");
}

static bool object_matches(const struct djp_object *o, const struct djp_point *pt)
{
	const char *base;
	if (!pt->object)
		return o->is_main || (!pt->func && !pt->line); /* an address: wherever it is */
	base = strrchr(o->path, '/');
	base = base ? base + 1 : o->path;
	if (!fnmatch(pt->object, o->path, 0) || !fnmatch(pt->object, base, 0))
		return true;
	/* a path through a link (/lib is /usr/lib on merged-/usr systems) */
	if (strchr(pt->object, '/') && !is_glob(pt->object)) {
		char *a = realpath(pt->object, NULL), *b = realpath(o->path, NULL);
		bool same = a && b && !strcmp(a, b);
		free(a);
		free(b);
		return same;
	}
	return false;
}

/* A point waiting for its site: what the checks found. */
struct new_point {
	uintptr_t addr; /* where its run starts: pc - pre */
	uintptr_t pc;	/* the point */
	uint8_t len, pre;
	uint8_t orig[DJP_SITE_MAX_LEN];
	const struct djp_func *f;
	uint64_t off;
	bool no_jump; /* int3 only: len is the one instruction */
	bool keep_flags;
};

struct resolve {
	struct djp_object *o;
	const struct djp_func_table *t;
	const struct djp_point *pt;
	const struct djp_probe *p;
	struct site_vec *sv;
	struct new_point *v;
	size_t n, cap;
	size_t matched;
	bool strict; /* an exact point: its refusal is the connect's error */
	bool ascending; /* the new points came in address order so far */
	int err;
};

/*
 * A relocated call pushes the original return address and jumps, so that
 * the callee returns into the program's code; under a CET shadow stack its
 * ret would not match the shadow copy and fault.  Such a process gets no
 * probe on a call instruction (the kernel says which features a thread
 * has in /proc/self/status, from Linux 6.6).
 */
static bool shadow_stack_on(void)
{
	static int on = -1;
	if (on < 0) {
		char line[256];
		FILE *f = fopen("/proc/self/status", "re");
		on = 0;
		while (f && fgets(line, sizeof(line), f))
			if (!strncmp(line, "x86_Thread_features:", 20) && strstr(line, "shstk"))
				on = 1;
		if (f)
			fclose(f);
	}
	return on;
}

/* Is `a` an instruction boundary of the code b (size bytes at start),
 * decoded from its start?  0, -EINVAL (inside an instruction), -EILSEQ
 * (the code does not decode up to it). */
static int boundary_in(const uint8_t *b, uintptr_t start, size_t size, uintptr_t a)
{
	struct djp_insn in;
	for (uintptr_t at = start; at < a; at += in.len) {
		if (djp_insn_decode(b + (at - start), size - (at - start), at, &in) || !in.len)
			return -EILSEQ;
		if (at + in.len > a)
			return -EINVAL; /* a is inside this instruction */
	}
	return 0;
}

/* A symbol can start inside another function (a label of hand-written
 * assembly made a function): a point must be an instruction boundary of
 * every function that covers it, each decoded from its start, or its int3
 * or jump would split one of that function's instructions.  0, -EINVAL
 * (inside one), -EILSEQ (one does not decode up to it), -ENOMEM. */
static int boundary_of_covering(struct resolve *r, const struct djp_func *f, uintptr_t a)
{
	uintptr_t bias = djp_funcs_bias(r->o, r->t);

	for (const struct djp_func *g = djp_funcs_covering(r->t, a - bias, NULL); g;
	     g = djp_funcs_covering(r->t, a - bias, g)) {
		uintptr_t start = g->addr + bias;
		uint8_t *b;
		int err;
		if (g == f)
			continue;
		if (!(b = djp_function_bytes(r->o, start, g->size)))
			return -ENOMEM;
		err = boundary_in(b, start, g->size, a);
		free(b);
		if (err)
			return err;
	}
	return 0;
}

/* Check the instruction at `a` in function f; 0 and np filled in, or
 * -EINVAL (not an instruction boundary), -ENOTSUP (cannot run out of
 * line), -EILSEQ (does not decode). */
static int point_check(struct resolve *r, const struct djp_func *f, uintptr_t a, struct new_point *np)
{
	uintptr_t start = f->addr + djp_funcs_bias(r->o, r->t);
	size_t size = f->size;
	struct djp_insn in;
	uint8_t *b;
	int err = 0;

	/* A symbol without a size is an assembly label, such as the signal
	 * restorer every handler returns through (__restore_rt): where it
	 * ends, and so where its instructions are, is not known, and a probe
	 * there would trap the return of every signal, ours included. */
	if (!size)
		return -ENOTSUP;
	if (a < start || a - start >= size)
		return -EINVAL;
	if (!(b = djp_function_bytes(r->o, start, size)))
		return -ENOMEM;
	err = boundary_in(b, start, size, a);
	if (!err)
		err = boundary_of_covering(r, f, a);
	if (!err && djp_insn_decode(b + (a - start), size - (a - start), a, &in))
		err = -EILSEQ;
	if (!err && b[a - start] == X86_INT3)
		err = -EBUSY; /* somebody's breakpoint */
	if (!err && (in.kind == DJP_INSN_BAD || in.len > DJP_SITE_MAX_LEN))
		err = -ENOTSUP;
	if (!err && (in.kind == DJP_INSN_CALL_REL || in.kind == DJP_INSN_CALL_IND) && shadow_stack_on())
		err = -ENOTSUP;
	if (!err) {
		unsigned pre, jl = djp_jump_range(r->o, r->t, f, b, start, a, &pre);
		np->pc = a;
		np->pre = jl ? (uint8_t)pre : 0;
		np->addr = a - np->pre;
		np->no_jump = !jl;
		/* dead at a function's entry (the ABI gives them no value), or
		 * where the code sets them all before reading one */
		np->keep_flags = a != start && !djp_insn_flags_dead(b + (a - start), size - (a - start), a);
		np->len = jl ? (uint8_t)jl : in.len;
		memcpy(np->orig, b + (np->addr - start), np->len);
		np->f = f;
		np->off = a - start;
	}
	free(b);
	return err;
}

static void note_error(struct resolve *r, int err)
{
	if (r->strict && !r->err)
		r->err = err;
}

/* A point lands inside the range an idle site's jump would cover: that
 * site becomes an int3 probe of its own instruction (kernel/
 * site_narrow.c).  An armed one cannot change under its hits: false.  A
 * new point the same, before it is a site. */
static void shrink_new(struct new_point *np)
{
	struct djp_insn in;
	if (!djp_insn_decode(np->orig + np->pre, np->len - np->pre, np->pc, &in)) {
		memmove(np->orig, np->orig + np->pre, in.len);
		np->addr = np->pc;
		np->pre = 0;
		np->len = in.len;
		np->no_jump = true;
	}
}

static bool overlap(uintptr_t a, unsigned alen, uintptr_t b, unsigned blen)
{
	return a < b + blen && b < a + alen;
}

/* Does the probe being resolved read no argument?  A return probe reads
 * its entry's (and the return value's type) whatever its flags say. */
static bool without_args(const struct resolve *r)
{
	return (r->p->flags & DJP_NO_ARGS) && !r->pt->retprobe;
}

static struct djp_params_file *object_params(struct djp_object *o);
static int point_args(struct djp_marker_list *ml, struct djp_marker_info *m, struct djp_params_file *pf,
		      const struct djp_func *f);

/*
 * A site made without its arguments (DJP_NO_ARGS) gets them now, for a
 * probe that reads them, while the probes already there may be running
 * its handlers: the locations are written first, the count that says
 * they are there last, so that a hit sees none of them or all.  Its
 * trampolines keep every register for this (arm.c), and a prefetching
 * one, made when there was nothing to load, is not used again.  The
 * marker log hears of the site again, with its format.
 */
static int site_args_read(struct resolve *r, struct djp_site *s, const struct djp_func *f)
{
	struct djp_marker_info *m = (struct djp_marker_info *)s->m, got = *m;
	int err = point_args(s->obj->markers, &got, object_params(r->o), f);

	if (err)
		return err;
	memcpy(m->arg, got.arg, got.nargs * sizeof(got.arg[0]));
	m->ret_size = got.ret_size;
	m->ret_signed = got.ret_signed;
	m->ret_conv = got.ret_conv;
	__atomic_store_n(&m->format, got.format, __ATOMIC_RELEASE);
	__atomic_store_n(&m->nargs, got.nargs, __ATOMIC_RELEASE);
	s->args_unread = false;
	s->prefetch_stale = s->tramp[DJP_LEAN_PREFETCH] != 0;
	djp_site_announce(s);
	return 0;
}

/* One resolved point at runtime address `a` in function f. */
static void point_found(struct resolve *r, const struct djp_func *f, uintptr_t a)
{
	struct djp_site *s = djp_site_covering(r->o, a);
	struct new_point np;
	int err;

	if (r->err)
		return;
	if (s && djp_site_pc(s) == a) {
		r->matched++;
		if (s->args_unread && !without_args(r))
			r->err = site_args_read(r, s, f);
		if (!r->err && !r->o->closing && !djp_site_carries(s, r->p->id))
			r->err = djp_site_vec_push(r->sv, s);
		return;
	}
	/* the new points near a: all of them, unless they came in address
	 * order (a glob's functions do), when only those whose runs can
	 * reach a's (which may start DJP_SITE_MAX_LEN bytes before a) */
	size_t from = 0;
	if (r->ascending && r->n && a > r->v[r->n - 1].pc)
		for (from = r->n; from > 0 && r->v[from - 1].pc + 2 * DJP_SITE_MAX_LEN > a; from--)
			;
	for (size_t i = from; i < r->n; i++)
		if (r->v[i].pc == a)
			return; /* two points resolved to one instruction */
	if (s && !djp_site_narrow(s)) {
		note_error(r, -EBUSY); /* inside the range another probe's jump covers */
		return;
	}
	for (size_t i = from; i < r->n; i++)
		if (r->v[i].addr <= a && r->v[i].addr + r->v[i].len > a)
			shrink_new(&r->v[i]);
	if ((err = point_check(r, f, a, &np))) {
		note_error(r, err);
		return;
	}
	/* another new point's run overlapping its run: its own instruction
	 * (which the other run does not hold: shrunk above) */
	for (size_t i = from; i < r->n; i++)
		if (overlap(r->v[i].addr, r->v[i].len, np.addr, np.len))
			shrink_new(&np);
	r->matched++;
	if (r->o->closing)
		return;
	if (r->n == r->cap) {
		void *v = realloc(r->v, (r->cap = r->cap ? 2 * r->cap : 16) * sizeof(*r->v));
		if (!v) {
			r->err = -ENOMEM;
			return;
		}
		r->v = v;
	}
	r->ascending = r->ascending && (!r->n || a > r->v[r->n - 1].pc);
	r->v[r->n++] = np;
}

/*
 * Code a return probe cannot have.  Not entered by a call, so that the
 * word at %rsp is no return address: the process's entry point (argc is
 * there) and GCC's NAME.cold parts, which their function jumps to.  And
 * functions that return twice through one return address: setjmp's
 * family and getcontext keep the address they were called with (the
 * trampoline's, once diverted) for a longjmp to return to after the first
 * return took the pending entry away; vfork's child and parent both return
 * through the one stack.  The unwinder's own entry points read their
 * return address to begin the unwinding (retprobes.c).
 */
static bool never_called(const struct resolve *r, const struct djp_func *f)
{
	static const char *const twice[] = {
		"setjmp",      "_setjmp",	 "__setjmp",	  "sigsetjmp",	   "__sigsetjmp",
		"savectx",     "getcontext",	 "__getcontext",  "swapcontext",   "__swapcontext",
		"vfork",       "__vfork",	 "_Unwind_RaiseException",	   "_Unwind_ForcedUnwind",
		"_Unwind_Backtrace",		 "_Unwind_Resume", "_Unwind_Resume_or_Rethrow",
	};
	const char *cold = strstr(f->name, ".cold");
	if ((r->t->entry && f->addr == r->t->entry) || (cold && (!cold[5] || cold[5] == '.')))
		return true;
	for (size_t i = 0; i < sizeof(twice) / sizeof(twice[0]); i++)
		if (!strcmp(f->name, twice[i]))
			return true;
	return false;
}

/* Is f from the source file and lines the point's qualifier names?  A
 * function the DWARF says nothing of is not. */
static bool from_source(struct resolve *r, const struct djp_func *f)
{
	struct djp_params_file *pf = object_params(r->o);
	struct djp_func_source fs;
	char err[256];
	return pf && !djp_params_source(pf, f->addr, r->pt->src.lo != 0, &fs, err, sizeof(err)) &&
	       djp_src_filter_match(&r->pt->src, &fs);
}

static int visit_func(void *ctx, const struct djp_func *f)
{
	struct resolve *r = ctx;
	if (r->pt->has_src && !from_source(r, f))
		return 0;
	if (r->pt->retprobe && never_called(r, f)) {
		note_error(r, -EPERM);
		return 0;
	}
	if (r->pt->offset && f->size && r->pt->offset >= f->size) {
		note_error(r, -EINVAL);
		return 0;
	}
	point_found(r, f, f->addr + djp_funcs_bias(r->o, r->t) + r->pt->offset);
	return r->err;
}

/* A point object that could not be made whole, before it was added. */
static void point_object_drop(struct djp_object *po, struct djp_marker_list *ml)
{
	djp_marker_list_free(ml);
	if (po) {
		for (size_t i = 0; po->sites && i < po->nsites; i++)
			free(po->sites[i].code);
		free(po->sites);
		free(po->path);
		free(po->file);
		free(po);
	}
}

/* The object's DWARF for its functions' parameters, opened once. */
static struct djp_params_file *object_params(struct djp_object *o)
{
	char err[256];
	if (!o->params_tried) {
		o->params_tried = true;
		if (!o->file || djp_params_open(o->file, &o->params, err, sizeof(err)))
			o->params = NULL;
	}
	return o->params;
}

/* The printf conversion of a value whose type says conv (lib/func_params.h);
 * hex where the type is not known. */
static const char *conv_spec(char conv)
{
	return conv == 'd' ? "%ld" : conv == 'u' ? "%lu" : conv == 'p' ? "%p" : "%#lx";
}

/*
 * The arguments of the point m (of function f, link-time addresses): the
 * function's parameters where the DWARF says they are at that address,
 * as an SDT probe's are (lib/func_params.c), then, inside the function,
 * the variables in scope there (stap's locals).  The format names them,
 * so that a script's $NAME and `djp trace`'s output have them, each
 * converted as its C type says: "fd=%ld len=%lu buf=%p" (a signed or
 * unsigned number in decimal, a pointer in hex).  A value that cannot be
 * read there is left out, and so is a variable whose name an earlier one
 * has.  The entry also keeps what the return value is, for its return
 * site (ret_marker).
 */
static int point_args(struct djp_marker_list *ml, struct djp_marker_info *m, struct djp_params_file *pf,
		      const struct djp_func *f)
{
	struct djp_param_set ps;
	char err[256], fmt[1024];
	size_t len = 0;
	unsigned k = 0;

	if (!pf || djp_params_get_vars(pf, f->addr, m->site, &ps, err, sizeof(err)))
		return 0; /* no DWARF for it: no arguments */
	fmt[0] = 0;
	for (unsigned i = 0; i < ps.n && k < DJP_MARKER_MAX_ARGS; i++) {
		const struct djp_param *p = &ps.v[i];
		bool seen = false;
		int n;
		for (unsigned j = 0; j < i && p->is_local; j++)
			seen |= !strcmp(ps.v[j].name, p->name);
		if (seen || p->loc.kind == DJP_LOC_NONE || strlen(p->name) >= 32 || strchr(p->name, '%'))
			continue;
		n = snprintf(fmt + len, sizeof(fmt) - len, "%s%s=%s", k ? " " : "", p->name, conv_spec(p->conv));
		if (n < 0 || (size_t)n >= sizeof(fmt) - len)
			break;
		len += (size_t)n;
		m->arg[k++] = p->loc;
	}
	m->ret_size = ps.ret.size;
	m->ret_signed = ps.ret.is_signed;
	m->ret_conv = ps.ret.conv;
	djp_params_free(&ps);
	m->nargs = (uint8_t)k;
	if (k && !(m->format = djp_marker_list_strdup(ml, fmt, len)))
		return -ENOMEM;
	return 0;
}

/* Make the sites of r->v in a point object of their own. */
static int sites_make(struct resolve *r)
{
	struct djp_object *po;
	struct djp_marker_list *ml;
	char name[512];

	if (!r->n)
		return 0;
	po = calloc(1, sizeof(*po));
	ml = djp_marker_list_new();
	if (!po || !ml || !(po->sites = calloc(r->n, sizeof(*po->sites))))
		goto enomem;
	ml->is_dyn = r->t->is_dyn;
	for (size_t i = 0; i < r->n; i++) {
		struct djp_marker_info *m = djp_marker_list_push(ml);
		const struct new_point *np = &r->v[i];
		if (!m)
			goto enomem;
		if (np->off)
			snprintf(name, sizeof(name), "%s+%#llx", np->f->name, (unsigned long long)np->off);
		else
			snprintf(name, sizeof(name), "%s", np->f->name);
		m->site = np->pc - djp_funcs_bias(r->o, r->t);
		m->site_len = np->len;
		m->name = djp_marker_list_strdup(ml, name, strlen(name));
		m->function = djp_marker_list_strdup(ml, np->f->name, strlen(np->f->name));
		m->provider = "func";
		m->format = "";
		m->args = "";
		/* at an entry the call has just pushed its return address */
		m->sp_align = np->off ? -1 : 8;
		if (!m->name || !m->function)
			goto enomem;
		if (!without_args(r) && point_args(ml, m, object_params(r->o), np->f))
			goto enomem;
	}
	/* what each site's displaced instruction keeps (counted in nsites
	 * for point_object_drop) */
	for (; po->nsites < r->n; po->nsites++)
		if (!(po->sites[po->nsites].code = calloc(1, sizeof(struct djp_site_code))))
			goto enomem;
	po->path = strdup(r->o->path);
	po->file = r->o->file ? strdup(r->o->file) : NULL;
	if (!po->path || (r->o->file && !po->file))
		goto enomem;
	po->bias = r->o->bias;
	po->permanent = r->o->permanent;
	po->vec_use = -1;
	po->parent = r->o;
	po->markers = ml;
	for (size_t i = 0; i < r->n; i++) {
		struct djp_site *s = &po->sites[i];
		s->addr = r->v[i].addr;
		s->len = r->v[i].len;
		memcpy(s->orig, r->v[i].orig, s->len);
		s->state = SITE_IDLE;
		s->no_jump = r->v[i].no_jump;
		s->code->keep_flags = r->v[i].keep_flags;
		s->code->pre = r->v[i].pre;
		s->m = &ml->v[i];
		s->obj = po;
		s->id = djp_site_id_next();
		s->args_late = s->args_unread = without_args(r);
	}
	po->nsites = r->n;
	djp_object_add(po);
	for (size_t i = 0; i < r->n; i++)
		if (djp_site_vec_push(r->sv, &po->sites[i]))
			return -ENOMEM;
	return 0;
enomem:
	point_object_drop(po, ml);
	return -ENOMEM;
}

static int resolve_in(struct resolve *r)
{
	const struct djp_point *pt = r->pt;
	const struct djp_func_table *t = djp_object_funcs(r->o);

	if (!t)
		return 0;
	r->t = t;
	if (pt->func) {
		djp_funcs_match(t, pt->glob, visit_func, r);
	} else if (pt->line) {
		uint64_t addrs[64];
		char err[256];
		int n = djp_lines_resolve(r->o->file, pt->line, addrs, 64, err, sizeof(err));
		for (int i = 0; i < n && !r->err; i++) {
			const struct djp_func *f = djp_funcs_at(t, addrs[i]);
			if (f)
				point_found(r, f, addrs[i] + djp_funcs_bias(r->o, t));
		}
	} else {
		uintptr_t b = djp_funcs_bias(r->o, t);
		const struct djp_func *f = pt->addr >= b ? djp_funcs_at(t, pt->addr - b) : NULL;
		if (f)
			point_found(r, f, pt->addr);
	}
	if (!r->err)
		r->err = sites_make(r);
	r->n = 0;
	r->ascending = true;
	return r->err;
}

int djp_point_resolve(const struct djp_probe *p, struct site_vec *sv, size_t *matched)
{
	DJP_LOCK_HELD();
	struct resolve r = { .pt = p->point, .p = p, .sv = sv, .ascending = true };
	int err = 0;

	r.strict = !is_glob(p->point->func); /* an exact function: its refusal is the answer */
	if (p->point->retprobe && shadow_stack_on())
		return -ENOTSUP; /* a diverted return would fault (retprobes.c) */
	for (struct djp_object *o = djp_objects; o && !err; o = o->next)
		if (!o->parent && !o->closing && object_matches(o, p->point)) {
			r.o = o;
			err = resolve_in(&r);
		}
	free(r.v);
	if (matched)
		*matched = r.matched;
	return err;
}

/* ---- return sites ---------------------------------------------------------- */

/* Name, arguments and format of the return site of entry e: the entry's
 * arguments, kept at the entry (DJP_LOC_SAVED), then the return value. */
static int ret_marker(struct djp_marker_list *ml, const struct djp_site *e)
{
	struct djp_marker_info *m = djp_marker_list_push(ml);
	const char *fn = e->m->function ? e->m->function : e->m->name;
	unsigned k = e->m->format && e->m->format[0] ? e->m->nargs : 0;
	char buf[1024];

	if (!m)
		return -ENOMEM;
	if (k > DJP_MARKER_MAX_ARGS - 1)
		k = 0; /* its format names them all or none */
	snprintf(buf, sizeof(buf), "%s%%return", fn);
	m->name = djp_marker_list_strdup(ml, buf, strlen(buf));
	m->function = djp_marker_list_strdup(ml, fn, strlen(fn));
	snprintf(buf, sizeof(buf), "%s%sreturn=%s", k ? e->m->format : "", k ? " " : "", conv_spec(e->m->ret_conv));
	m->format = djp_marker_list_strdup(ml, buf, strlen(buf));
	if (!m->name || !m->function || !m->format)
		return -ENOMEM;
	m->provider = "func";
	m->args = "";
	m->site = e->m->site;
	m->sp_align = -1;
	for (unsigned i = 0; i < k; i++) {
		m->arg[i] = e->m->arg[i];
		m->arg[i].kind = DJP_LOC_SAVED;
		m->arg[i].disp = i;
	}
	/* as wide as the type: an int function leaves %rax's high half as
	 * it was */
	m->arg[k] = (struct djp_argloc){ .kind = DJP_LOC_REG,
					 .size = e->m->ret_size ? e->m->ret_size : 8,
					 .is_signed = e->m->ret_signed,
					 .reg = DJP_REG_RET,
					 .index = DJP_REG_NONE };
	m->nargs = (uint8_t)(k + 1);
	return 0;
}

/* The return sites of entries of sv whose real object is `parent` and
 * that have none, in a point object of their own. */
static int ret_sites_in(struct site_vec *sv, struct djp_object *parent)
{
	struct djp_object *po = calloc(1, sizeof(*po));
	struct djp_marker_list *ml = djp_marker_list_new();
	size_t n = 0, k = 0;

	for (size_t i = 0; i < sv->n; i++)
		n += !sv->v[i]->ret && (sv->v[i]->obj->parent ? sv->v[i]->obj->parent : sv->v[i]->obj) == parent;
	if (!po || !ml || !(po->sites = calloc(n, sizeof(*po->sites))))
		goto enomem;
	for (size_t i = 0; i < sv->n; i++) {
		struct djp_site *e = sv->v[i];
		if (e->ret || (e->obj->parent ? e->obj->parent : e->obj) != parent)
			continue;
		if (ret_marker(ml, e))
			goto enomem;
		ml->is_dyn = e->obj->markers && e->obj->markers->is_dyn;
	}
	po->path = strdup(parent->path);
	po->file = parent->file ? strdup(parent->file) : NULL;
	if (!po->path || (parent->file && !po->file))
		goto enomem;
	po->bias = parent->bias;
	po->permanent = parent->permanent;
	po->vec_use = -1;
	po->parent = parent;
	po->markers = ml;
	for (size_t i = 0; i < sv->n; i++) {
		struct djp_site *e = sv->v[i], *s;
		if (e->ret || (e->obj->parent ? e->obj->parent : e->obj) != parent)
			continue;
		s = &po->sites[k];
		s->addr = e->addr;
		s->state = SITE_IDLE;
		s->no_jump = true;
		s->is_return = true;
		s->m = &ml->v[k];
		s->obj = po;
		s->id = djp_site_id_next();
		e->ret = s;
		k++;
	}
	po->nsites = n;
	djp_object_add(po);
	return 0;
enomem:
	point_object_drop(po, ml);
	return -ENOMEM;
}

int djp_ret_sites(struct site_vec *sv)
{
	DJP_LOCK_HELD();
	int err = 0;
	for (size_t i = 0; i < sv->n && !err; i++)
		if (!sv->v[i]->ret)
			err = ret_sites_in(sv, sv->v[i]->obj->parent ? sv->v[i]->obj->parent : sv->v[i]->obj);
	return err;
}

