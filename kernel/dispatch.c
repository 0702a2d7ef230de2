/*
 * Running the handlers of a hit.
 *
 * The trampolines run the common case themselves (arch/x86/tramp_lean.c,
 * tramp_full.c): they enter the read side of kernel/rcu.h inline and call
 * a pair of words from the site's handler list, which djp_list_seal fills
 * in: for the lean trampoline the only handler or djp_run_lean_list, for
 * the full one the only handler or djp_run_full_list, and for a lean
 * trampoline that prefetches the arguments the only handler's fast entry,
 * where it registered one (djp__connect's plan: the recorder does, for
 * kernel/agent/recorder.c).  They call
 * djp_dispatch_lean or djp_dispatch_full only when the fast path does not
 * apply: a thread not registered yet, or one already inside a handler of
 * ours (or that left one by a jump: kernel/rcu.c).  The SIGTRAP handler calls djp_trap_probe for every hit.
 *
 * A thread already inside a handler (a handler that calls instrumented
 * code, or a signal that lands during one) gets a counted miss instead of
 * a recursion.  Lean paths skip handlers that did not promise DJP_GPR_ONLY,
 * counted as misses too: that can only happen to a thread that entered a
 * lean trampoline just before its site was switched to the full one, and
 * skipping is the only safe choice, since its vector state is not saved.
 * A stack-walking handler (DJP__STACK) is skipped the same way, and
 * counted as a miss, when the view comes from a trampoline without %rsp
 * and %rbp: a batch publishes its lists before its text jumps to the
 * DJP__STACK variant they ask for, and a walk from the old view's stale
 * slots would record a wrong stack (thousands of them a batch, measured).
 *
 * The site of a hit is not stored in it: the word below the register view
 * names it (arch_hit_site), which costs the lean trampoline no store.
 *
 * This file and kernel/rcu.c are compiled for general registers only: they
 * run inside lean trampolines.
 */
/* Runs inside the lean trampoline, which saves no vector state: the compiler
 * must not use a vector or x87 register in this file. */
#pragma GCC target("general-regs-only")

#include "kernel/arming.h"
#include "kernel/engine.h"
#include "kernel/hit.h"
#include "kernel/rcu.h"

bool djp_in_handler(void)
{
	return djp_rcu_inside();
}

static inline void run_list(const struct djp_hit *hit, const struct djp_handler_list *l, unsigned need)
{
	for (unsigned i = 0; i < l->n; i++) {
		const struct djp_handler *h = &l->h[i];
		if (h->flags & DJP__SKIP)
			continue;
		/* A trampoline from before the batch that added this handler:
		 * a lean one, which saves no vector state the handler may
		 * touch, or one that keeps no %rsp and %rbp, from whose slots
		 * a stack walk would record a wrong stack.  Skipped, counted. */
		if ((h->flags & need) != need ||
		    ((h->flags & DJP__STACK) && (djp__view_regs(hit) & DJP_STACK_REGS) != DJP_STACK_REGS)) {
			atomic_fetch_add_explicit(&djp__hit_site(hit)->misses, 1, memory_order_relaxed);
			continue;
		}
		h->fn(hit, h->data);
	}
}

/* The lean fast path's call for a list that is not one lean handler. */
static void djp_run_lean_list(const struct djp_hit *hit, void *list)
{
	run_list(hit, list, DJP_GPR_ONLY);
}

static void djp_run_full_list(const struct djp_hit *hit, void *list)
{
	run_list(hit, list, 0);
}

/* Does DJP__ONCE handler j run instead of i (same data): it walks the
 * stack and i does not, or both alike and j comes first? */
static bool once_beats(const struct djp_handler_list *l, unsigned j, unsigned i)
{
	unsigned sj = l->h[j].flags & DJP__STACK, si = l->h[i].flags & DJP__STACK;
	return (l->h[j].flags & DJP__ONCE) && l->h[j].data == l->h[i].data && (sj > si || (sj == si && j < i));
}

/* Mark the DJP__ONCE handlers that another of the same data runs instead
 * of DJP__SKIP; returns how many handlers run, *first the first. */
static unsigned mark_repeats(struct djp_handler_list *l, const struct djp_handler **first)
{
	unsigned live = 0;
	*first = NULL;
	for (unsigned i = 0; i < l->n; i++) {
		struct djp_handler *h = &l->h[i];
		h->flags &= ~DJP__SKIP;
		for (unsigned j = 0; j < l->n && (h->flags & DJP__ONCE); j++)
			if (j != i && once_beats(l, j, i))
				h->flags |= DJP__SKIP;
		if (!(h->flags & DJP__SKIP) && !live++)
			*first = h;
	}
	return live;
}

void djp_list_seal(struct djp_handler_list *l, const struct djp_site *s)
{
	const struct djp_handler *h;
	unsigned live = mark_repeats(l, &h);
	/* the one handler is called directly, unless it walks the stack and
	 * a trampoline without %rsp and %rbp may still call it (run_list
	 * checks the view) */
	bool direct = live == 1 && (!(h->flags & DJP__STACK) || djp__site_views_hold_stack(s));
	if (direct && (h->flags & DJP_GPR_ONLY))
		l->lean = (struct djp_fast_call){ h->fn, h->data };
	else
		l->lean = (struct djp_fast_call){ djp_run_lean_list, l };
	if (direct)
		l->full = (struct djp_fast_call){ h->fn, h->data };
	else
		l->full = (struct djp_fast_call){ djp_run_full_list, l };
	l->prefetch = l->lean;
	l->wants_prefetch = false;
	if (direct && (h->flags & DJP_GPR_ONLY) && h->plan && !s->prefetch_stale) {
		/* called with more arguments than the handler type says: only
		 * a prefetching trampoline calls it */
		djp_fast_entry_fn fast = h->plan(h->data, s, &l->plan);
		if (fast) {
			l->prefetch = (struct djp_fast_call){ (djp_handler_fn)(void (*)(void))fast, &l->plan };
			l->wants_prefetch = true;
		}
	}
}

/*
 * Set while this thread enters the read side: a thread's first hit
 * registers it (kernel/rcu.c), which calls into libc (syscall(), for its
 * tid), and libc's functions may be probed too (instruction probes): a hit
 * there, inside the registration, would register again, and again.  It is
 * a miss instead, as a hit inside a handler is.  (The handlers themselves
 * are outside it: they may leave by a jump.)
 */
static __thread int entering __attribute__((tls_model("initial-exec")));

static inline void run(struct djp_hit *hit, unsigned need, bool in_lean)
{
	struct djp_site *s = djp__hit_site(hit);
	const struct djp_handler_list *l;
	bool in;
	/* the agent's thread, or the library's own work on this one: not
	 * the program's hit, not even a miss (kernel/rcu.c) */
	if (__builtin_expect(djp_rcu_is_quiet(), 0))
		return;
	if (__builtin_expect(entering, 0)) {
		atomic_fetch_add_explicit(&s->misses, 1, memory_order_relaxed);
		return;
	}
	entering = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	in = djp_rcu_enter(in_lean, (uintptr_t)hit);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	entering = 0;
	if (__builtin_expect(!in, 0)) {
		atomic_fetch_add_explicit(&s->misses, 1, memory_order_relaxed);
		return;
	}
	l = atomic_load_explicit(&s->handlers, memory_order_consume);
	if (l)
		run_list(hit, l, need);
	djp_rcu_exit();
}

/* Realigns the stack: a lean trampoline aligns it as the site's unwind
 * information says it is aligned there, and this path may call into libc. */
__attribute__((force_align_arg_pointer)) void djp_dispatch_lean(struct djp_hit *hit)
{
	run(hit, DJP_GPR_ONLY, true);
}

void djp_dispatch_full(struct djp_hit *hit)
{
	run(hit, 0, false);
}

void djp_trap_probe(struct djp_hit *hit)
{
	run(hit, 0, false);
}

/*
 * A return's hit (kernel/retprobes.c): the return site's handlers, run as
 * a lean trampoline's (lean) or a trap's, with `vals` the arguments its
 * entry kept, which a DJP_LOC_SAVED argument reads (djp_ret_saved).
 * They stay in the thread's pending entry while the handlers run.
 */
static __thread const uint64_t *ret_vals __attribute__((tls_model("initial-exec")));

void djp_dispatch_return(struct djp_hit *hit, const uint64_t *vals, bool lean)
{
	ret_vals = vals;
	if (lean)
		djp_dispatch_lean(hit);
	else
		djp_trap_probe(hit);
	ret_vals = NULL;
}

uint64_t djp_ret_saved(unsigned i)
{
	const uint64_t *v = ret_vals;
	return v && i < DJP_MARKER_MAX_ARGS ? v[i] : 0;
}
