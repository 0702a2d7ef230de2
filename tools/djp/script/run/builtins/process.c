/*
 * Built-in functions of the process and the probe: who hit it (pid(),
 * execname(), the ids /proc says), where (pp(), probefunc(), uaddr()),
 * on which CPU.  Outside a hit (begin, end, timers) the process is the
 * target's, as in stap; /proc is read through tapset.c, which remembers
 * what it read while the process lived.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/cxx_name.h"
#include "tapset.h"
#include "tools/djp/script/run/interp.h"

int64_t bi_pid(struct run *r, struct node *n)
{
	return ctx_pid(r);
}

int64_t bi_tid(struct run *r, struct node *n)
{
	return ctx_tid(r);
}

/* the event's process's command name */
const char *bi_execname(struct run *r, struct node *n)
{
	if (r->ev) {
		const char *o, *b;
		if (r->ev->comm)
			return r->ev->comm;
		o = r->ev->desc->object ? r->ev->desc->object : "";
		b = strrchr(o, '/');
		return b ? b + 1 : o;
	}
	return "djp";
}

int64_t bi_target(struct run *r, struct node *n)
{
	return r->src ? r->src->target_pid : 0;
}

/* the target, or a process descended from it (a child of fork) */
int64_t bi_target_set_pid(struct run *r, struct node *n)
{
	int32_t pid = (int32_t)eval_n(r, n->args[0]), t = r->src ? r->src->target_pid : 0;
	for (int hops = 0; pid > 1 && t > 0 && hops < 64; hops++) {
		if (pid == t)
			return 1;
		pid = (int32_t)tapset_proc_field(pid, TF_PPID);
	}
	return 0;
}

int64_t bi_ppid(struct run *r, struct node *n)
{
	return tapset_proc_field(ctx_pid(r), TF_PPID);
}

int64_t bi_uid(struct run *r, struct node *n)
{
	return tapset_proc_field(ctx_pid(r), TF_UID);
}

int64_t bi_euid(struct run *r, struct node *n)
{
	return tapset_proc_field(ctx_pid(r), TF_EUID);
}

int64_t bi_gid(struct run *r, struct node *n)
{
	return tapset_proc_field(ctx_pid(r), TF_GID);
}

int64_t bi_egid(struct run *r, struct node *n)
{
	return tapset_proc_field(ctx_pid(r), TF_EGID);
}

int64_t bi_stp_pid(struct run *r, struct node *n)
{
	return getpid();
}

const char *bi_pexecname(struct run *r, struct node *n)
{
	return arena_strn(r, tapset_comm((int32_t)tapset_proc_field(ctx_pid(r), TF_PPID)), 63);
}

const char *bi_cmdline_str(struct run *r, struct node *n)
{
	char *buf = arena_alloc(r, MAXSTRINGLEN);
	tapset_cmdline(ctx_pid(r), -1, buf, MAXSTRINGLEN);
	return buf;
}

const char *bi_cmdline_arg(struct run *r, struct node *n)
{
	char *buf = arena_alloc(r, MAXSTRINGLEN);
	tapset_cmdline(ctx_pid(r), (long)eval_n(r, n->args[0]), buf, MAXSTRINGLEN);
	return buf;
}

const char *bi_env_var(struct run *r, struct node *n)
{
	const char *v = tapset_env(ctx_pid(r), eval_s(r, n->args[0]));
	return arena_strn(r, v, strlen(v));
}

/* stap's _generic_indent (tapset/indent.stp): the counter of key (a
 * thread's, or the whole script's, INDENT_ALL) moved by delta; *x is the
 * depth the caller shows (counted before a positive delta, after a
 * negative one); *us the microseconds since the counter last left 0. */
#define INDENT_ALL INT32_MIN
static void indent_step(struct run *r, int32_t key, int64_t delta, int64_t *x, int64_t *us)
{
	int64_t now = (int64_t)(now_ns(r) / 1000);
	struct indent *in = NULL;

	for (int i = 0; i < r->nindent && !in; i++)
		if (r->indent[i].tid == key)
			in = &r->indent[i];
	if (!in) {
		in = &r->indent[r->nindent < 64 ? r->nindent++ : (key & 63)];
		*in = (struct indent){ key, 0, now };
	}
	if (!in->depth)
		in->t0 = now;
	*x = in->depth + (delta > 0 ? delta : 0);
	in->depth += delta;
	*us = now - in->t0;
}

/* stap's thread_indent(delta): microseconds since the thread's first call,
 * "execname(tid):", and an indentation that grows before and shrinks after
 * (tapset/indent.stp). */
const char *bi_thread_indent(struct run *r, struct node *n)
{
	int32_t tid = ctx_tid(r);
	int64_t x, us;
	char *buf = arena_alloc(r, MAXSTRINGLEN);

	indent_step(r, tid, eval_n(r, n->args[0]), &x, &us);
	snprintf(buf, MAXSTRINGLEN, "%6lld %s(%d):%*s", (long long)us, bi_execname(r, n), (int)tid,
		 (int)(x > 0 ? x - 1 : 0), "");
	return buf;
}

/* indent(delta): thread_indent's, one counter for the whole script, and
 * no task in the text ("%6d :" and the indentation). */
const char *bi_indent(struct run *r, struct node *n)
{
	int64_t x, us;
	char *buf = arena_alloc(r, MAXSTRINGLEN);

	indent_step(r, INDENT_ALL, eval_n(r, n->args[0]), &x, &us);
	snprintf(buf, MAXSTRINGLEN, "%6lld :%*s", (long long)us, (int)(x > 0 ? x - 1 : 0), "");
	return buf;
}

/* thread_indent_depth(delta), indent_depth(delta): the same counters'
 * depth as a number, for a script's own formatting. */
int64_t bi_thread_indent_depth(struct run *r, struct node *n)
{
	int64_t x, us;

	indent_step(r, ctx_tid(r), eval_n(r, n->args[0]), &x, &us);
	return x > 0 ? x - 1 : 0;
}

int64_t bi_indent_depth(struct run *r, struct node *n)
{
	int64_t x, us;

	indent_step(r, INDENT_ALL, eval_n(r, n->args[0]), &x, &us);
	return x > 0 ? x - 1 : 0;
}

/* user_mode(): 1 at a hit in a process, 0 at a kernel point and in the
 * tool's own probes (begin, end, timers), as stap says of its
 * contexts. */
int64_t bi_user_mode(struct run *r, struct node *n)
{
	return r->ev && r->bind && !r->bind->desc->kernel;
}

/* registers_valid(): whether register() can be read here: at a hit of a
 * process (whose registers a script that reads them records), not in
 * begin, end or a timer, nor at a kernel point. */
int64_t bi_registers_valid(struct run *r, struct node *n)
{
	return bi_user_mode(r, n);
}

int64_t bi_mem_page_size(struct run *r, struct node *n)
{
	return sysconf(_SC_PAGESIZE);
}

const char *bi_pp(struct run *r, struct node *n)
{
	return r->pp ? r->pp : "";
}

const char *bi_pn(struct run *r, struct node *n)
{
	return r->bind ? r->bind->pn : r->pp;
}

/* a function return's site is "NAME%return" */
int64_t bi_is_return(struct run *r, struct node *n)
{
	return r->bind && strstr(r->bind->desc->name, "%return") != NULL;
}

/* the function around the marker */
const char *bi_probefunc(struct run *r, struct node *n)
{
	const struct djp_ev_desc *d = r->bind ? r->bind->desc : NULL;
	if (!d || !r->ev)
		return "";
	if (d->provider_len == 4 && !memcmp(d->provider, "func", 4)) {
		/* an instruction probe's site is named for its function:
		 * "NAME" at the entry, "NAME+0x1c" inside, "NAME%return" */
		static char fn[256], cxx[512];
		const char *base;
		snprintf(fn, sizeof(fn), "%.*s", (int)strcspn(d->name, "+%"), d->name);
		/* a C++ function's own name, as its DWARF and stap name it */
		return djp_cxx_name(fn, cxx, sizeof(cxx), &base) ? base : fn;
	}
	if (r->src && r->src->ops->function_of)
		return r->src->ops->function_of(r->src, r->ev->pid, d);
	return d->function ? d->function : "";
}

/* the site's address where the agent said it; a return probe's is its
 * function's entry */
int64_t bi_uaddr(struct run *r, struct node *n)
{
	return r->bind && r->ev && r->bind->desc->site_runtime ? (int64_t)r->bind->desc->site : 0;
}

/* the hit's; begin, end and timers run in the tool */
int64_t bi_cpu(struct run *r, struct node *n)
{
	return r->ev ? (r->ev->cpu >= 0 ? r->ev->cpu : 0) : sched_getcpu();
}
