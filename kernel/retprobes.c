/*
 * Return probes: handlers that run when a function returns.
 *
 * A return probe is a hook at the function's entry site (an instruction
 * probe, jump or int3, like any other) and a return site with no bytes of
 * its own that carries the probe's handlers.  At each entry the hook reads
 * the return address the call pushed at %rsp, keeps it on the thread's
 * stack of pending returns with that slot's address and the entry's
 * arguments, and writes the address of djp_ret_tramp (arch/x86/
 * ret_tramp.S) over it.  The function runs as it would; its `ret` lands
 * in the trampoline, which saves the registers as a hit's view and calls
 * djp_ret_dispatch: the pending return whose slot is just below the
 * stack pointer is taken off, the return site's handlers run with that
 * view (%rax is the return value, the entry's arguments are read from what
 * was kept: DJP_LOC_SAVED), and the trampoline goes on to the original
 * return address, with every register as the function left it.  This is
 * the kernel's uretprobe, with the pending returns in the thread's own
 * memory instead of the kernel's.
 *
 * Frames that never return through their slot:
 *
 *   - longjmp (or a coroutine switch) leaves pending returns whose frames
 *     are gone.  The trampoline matches a return by its slot, searching
 *     from the newest, so a stale entry below never answers a live one (a
 *     later call that reuses the slot is newer, and found first).  Stale
 *     entries are dropped when the stack fills: one whose slot no longer
 *     holds the trampoline's address is gone (a live one always does).
 *   - A C++ exception, pthread_exit or pthread_cancel, and backtrace(),
 *     run libgcc's unwinder, which reads the return addresses on the
 *     stack and knows nothing of the trampoline.  While any return probe
 *     is connected, the engine keeps probes of its own on the unwinder's
 *     entry points (kernel/ret_unwinder.c: _Unwind_RaiseException,
 *     _Unwind_ForcedUnwind and _Unwind_Backtrace, in libgcc_s or the
 *     program): they give every
 *     pending frame of the thread its real return address back before the
 *     unwinder reads one, and keep the entries, "parked".  A catch block
 *     begins with __cxa_begin_catch, called from the frame that caught:
 *     a probe there diverts again the parked frames above that one (their
 *     slots still hold their return addresses), and drops those below,
 *     which the exception unwound: they never return.  Parked frames no
 *     catch takes back (backtrace(), a thread's forced unwind) return
 *     uncounted, counted as their return site's misses: correct over
 *     complete.
 *   - A thread that exits inside a probed function leaves its entries; its
 *     stack of pending returns is freed with the thread (a key destructor).
 *
 * A hit inside a handler is a miss (kernel/dispatch.c), so the hook never
 * runs while the thread is already in ours: the thread's stack changes
 * only in its own hook and trampoline, and a signal handler that returns
 * through the trampoline matches its own, newer entries.  A process with a
 * CET shadow stack is refused (points.c): its returns are checked against
 * the shadow copy and a diverted one would fault.
 */
/*
 * Values read at the entry.  A script's $p->len at a .return is, as stap
 * has it, the value $p->len had when the call began: the function may
 * change it before it returns (struct_target's visit does).  So a return
 * site's handler may have values read at the entry: the agent's entry
 * function (djp_ret_set_entry_fn) runs at each diverted entry, with the
 * entry's registers, and writes them into the pending return, where the
 * return's handlers read them (djp_ret_entry_values).  A signal handler's
 * calls push entries of their own, so the values of an interrupted call
 * are never another's.
 */
/* The hook runs inside lean trampolines, which save no vector state, and
 * the dispatcher before it has saved any: no vector or x87 register here
 * (and no struct copies or loops the compiler could make a libc call of). */
#pragma GCC target("general-regs-only")

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "lib/init_order.h"
#include "kernel/engine.h"
#include "kernel/hit.h"
#include "kernel/hit_args.h"
#include "kernel/lock.h"
#include "kernel/probes.h"
#include "kernel/rcu.h"

/* One pending return: where its address was, what it was, whose return
 * it is, and the entry's arguments (the return site's first nargs - 1). */
struct ret_frame {
	uintptr_t slot;
	uintptr_t ra;
	struct djp_site *site;
	uint64_t parked; /* its return address given back for an unwinder */
	uint64_t vals[DJP_MARKER_MAX_ARGS];
	struct djp_ret_entry entry; /* read at the entry for the return's handlers */
};

static _Atomic djp_ret_entry_fn entry_fn;
/* the pending return whose handlers run on this thread now */
static __thread const struct djp_ret_entry *entry_now __attribute__((tls_model("initial-exec")));

void djp_ret_set_entry_fn(djp_ret_entry_fn fn)
{
	atomic_store_explicit(&entry_fn, fn, memory_order_release);
}

const struct djp_ret_entry *djp_ret_entry_values(void)
{
	return entry_now;
}

#define RET_FRAMES 16384 /* deeper than this, calls return uncounted */

struct ret_stack {
	unsigned n;
	struct ret_frame f[RET_FRAMES];
};

static __thread struct ret_stack *ret_stack __attribute__((tls_model("initial-exec")));

static pthread_key_t stack_key;
static bool stack_key_ok;

static void stack_free(void *st)
{
	if (st == ret_stack)
		ret_stack = NULL;
	munmap(st, sizeof(struct ret_stack));
}

/* Made by the library's constructor, as kernel/rcu.c's is: a key whose
 * value glibc keeps in the thread itself (below 32) is safe to set from a
 * handler. */
DJP_ENGINE_INIT static void ret_init(void)
{
	pthread_key_t k;
	if (pthread_key_create(&k, stack_free) == 0) {
		if (k < 32) {
			stack_key = k;
			stack_key_ok = true;
		} else {
			pthread_key_delete(k);
		}
	}
}

/* The thread's stack of pending returns, mapped at its first diverted
 * call (pages are touched as the stack deepens); NULL when it cannot be. */
static struct ret_stack *stack_get(void)
{
	void *p;
	if (ret_stack)
		return ret_stack;
	if (!stack_key_ok)
		return NULL; /* could never be freed */
	p = mmap(NULL, sizeof(struct ret_stack), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		 -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	pthread_setspecific(stack_key, p);
	return ret_stack = p;
}

/* Read the word at a slot that may be gone (a freed stack): 0 if so. */
static uintptr_t slot_read(uintptr_t slot)
{
	uintptr_t v;
	return djp_peek_word(slot, &v) ? v : 0;
}

/* One entry to another place, word by word: a struct copy or a loop the
 * compiler turned into memcpy would be libc's, which uses vector
 * registers (see the top of the file). */
__attribute__((optimize("no-tree-loop-distribute-patterns"))) static void frame_move(struct ret_frame *to,
										       const struct ret_frame *from)
{
	uint64_t *d = (uint64_t *)to;
	const uint64_t *s = (const uint64_t *)from;
	if (to != from)
		for (size_t i = 0; i < sizeof(*to) / 8; i++)
			d[i] = s[i];
}

/* A full stack: drop the entries whose slot no longer holds the
 * trampoline's address (frames a longjmp left).  True if room was made. */
static bool stack_evict(struct ret_stack *st)
{
	unsigned k = 0;
	for (unsigned i = 0; i < st->n; i++)
		if (!st->f[i].parked && slot_read(st->f[i].slot) == (uintptr_t)djp_ret_tramp)
			frame_move(&st->f[k++], &st->f[i]);
		else
			atomic_fetch_add_explicit(&st->f[i].site->misses, 1, memory_order_relaxed);
	st->n = k;
	return k < RET_FRAMES;
}

/* The entry's hook: divert this call's return. */
static void ret_hook(const struct djp_hit *hit, void *data)
{
	struct djp_site *e = djp__hit_site(hit), *r = e->ret;
	uintptr_t *slot = (uintptr_t *)hit->regs.r[DJP_REG_SP];
	struct ret_stack *st;
	struct ret_frame *f;

	(void)data;
	if (!r || !atomic_load_explicit(&r->handlers, memory_order_relaxed))
		return;
	if (!(st = stack_get()) || (st->n == RET_FRAMES && !stack_evict(st))) {
		atomic_fetch_add_explicit(&r->misses, 1, memory_order_relaxed);
		return;
	}
	f = &st->f[st->n];
	f->slot = (uintptr_t)slot;
	f->ra = *slot;
	f->site = r;
	f->parked = 0;
	for (unsigned i = 0; i + 1 < r->m->nargs && i < e->m->nargs; i++)
		f->vals[i] = djp_arg_fetch(hit, e, &e->m->arg[i]);
	f->entry.owner = NULL;
	{
		djp_ret_entry_fn fn = atomic_load_explicit(&entry_fn, memory_order_acquire);
		if (fn)
			fn(hit, e, r, &f->entry);
	}
	st->n++;
	*slot = (uintptr_t)djp_ret_tramp;
}

uintptr_t djp_ret_diverted(uintptr_t slot)
{
	const struct ret_stack *st = ret_stack;
	for (unsigned i = st ? st->n : 0; i > 0; i--)
		if (st->f[i - 1].slot == slot && !st->f[i - 1].parked)
			return st->f[i - 1].ra;
	return 0;
}

/* Nothing to return to: the entry was lost, which the rules above never
 * allow.  There is no right place to go on to. */
__attribute__((noreturn, cold)) static void ret_lost(uintptr_t slot)
{
	char msg[128];
	int n = snprintf(msg, sizeof(msg), "djprobe: a diverted return at %#lx has no pending entry\n",
			 (unsigned long)slot);
	if (n > 0 && write(2, msg, (size_t)n) < 0)
		n = 0;
	abort();
}

/*
 * Called by the trampoline with the view it saved (rsp: after the return;
 * the key word below it for us to fill): run the return site's handlers,
 * and say where the call really returns to.
 */
uintptr_t djp_ret_dispatch(struct djp_hit *hit)
{
	struct ret_stack *st = ret_stack;
	uintptr_t slot = hit->regs.r[DJP_REG_SP] + ARCH_RA_FROM_CFA, ra;
	struct ret_frame *f;
	unsigned i = st ? st->n : 0;
	uint8_t *area = NULL;

	while (i && (st->f[i - 1].slot != slot || st->f[i - 1].parked))
		i--;
	if (!i)
		ret_lost(slot);
	/* the entry stays where it is while the handlers run: a hit inside
	 * them is a miss, which pushes nothing on this thread's stack */
	f = &st->f[i - 1];
	ra = f->ra;
	hit->regs.r[DJP_REG_PC] = ra;
	((uintptr_t *)hit)[-1] = (uintptr_t)f->site | DJP_HIT_KEY_SITE;
	entry_now = &f->entry;
	if (atomic_load_explicit(&f->site->handlers, memory_order_relaxed)) {
		if (!atomic_load_explicit(&f->site->ret_vec, memory_order_acquire)) {
			/* DJP_GPR_ONLY handlers only (a handler that may touch
			 * vector state, attached after this read, misses this
			 * return) */
			djp_dispatch_return(hit, f->vals, true);
		} else {
			/* the return value may be in xmm0-1, ymm0 or st0-1, and
			 * the handlers are any C */
			if ((area = arch_vector_area_on_stack()))
				arch_vector_save(area);
			djp_dispatch_return(hit, f->vals, false);
			if (area)
				arch_vector_restore(area);
		}
	}
	entry_now = NULL;
	for (; i < st->n; i++)
		frame_move(&st->f[i - 1], &st->f[i]);
	st->n--;
	return ra;
}

/* ---- the unwinder's entry points ----------------------------------------- */

/* Give every pending frame of this thread its return address back, and
 * park it: the unwinder is about to read them.  A stale entry (its slot no
 * longer holds the trampoline's address) goes. */
void djp_ret_unwinder_hook(const struct djp_hit *hit, void *data)
{
	struct ret_stack *st = ret_stack;
	unsigned k = 0;
	(void)hit;
	(void)data;
	if (!st)
		return;
	for (unsigned i = 0; i < st->n; i++) {
		struct ret_frame *f = &st->f[i];
		if (!f->parked && slot_read(f->slot) == (uintptr_t)djp_ret_tramp && djp_poke_word(f->slot, f->ra))
			f->parked = 1;
		if (f->parked)
			frame_move(&st->f[k++], f);
		else
			atomic_fetch_add_explicit(&f->site->misses, 1, memory_order_relaxed);
	}
	st->n = k;
}

/* A catch begins, in the frame that called __cxa_begin_catch (its %rsp is
 * this hit's, less the call's return address): the parked frames above it
 * are diverted again, those at or below it were unwound. */
void djp_ret_catch_hook(const struct djp_hit *hit, void *data)
{
	struct ret_stack *st = ret_stack;
	uintptr_t sp = hit->regs.r[DJP_REG_SP];
	unsigned k = 0;
	(void)data;
	if (!st)
		return;
	for (unsigned i = 0; i < st->n; i++) {
		struct ret_frame *f = &st->f[i];
		if (f->parked && f->slot > sp && slot_read(f->slot) == f->ra &&
		    djp_poke_word(f->slot, (uintptr_t)djp_ret_tramp))
			f->parked = 0;
		if (!f->parked)
			frame_move(&st->f[k++], f);
		else
			atomic_fetch_add_explicit(&f->site->misses, 1, memory_order_relaxed);
	}
	st->n = k;
}

/* ---- attaching ------------------------------------------------------------ */

int djp_ret_attach(struct site_vec *sv, const struct djp_probe *p)
{
	DJP_LOCK_HELD();
	struct site_vec rv = { 0 };
	/* an int3 entry when the probe asks for one */
	struct djp_probe hook = { .id = p->id,
				  .fn = ret_hook,
				  .flags = DJP_GPR_ONLY | DJP__ONCE | (p->flags & DJP_FORCE_INT3) };
	int err;

	if (!sv->n)
		return 0;
	if ((err = djp_ret_sites(sv)))
		return err;
	for (size_t i = 0; i < sv->n && !err; i++) {
		/* before the handler is published (see djp_ret_dispatch) */
		if (!(p->flags & DJP_GPR_ONLY))
			atomic_store_explicit(&sv->v[i]->ret->ret_vec, true, memory_order_release);
		err = djp_site_vec_push(&rv, sv->v[i]->ret);
	}
	/* the handlers first: a return diverted finds them */
	if (!err)
		err = djp_change_probe(&rv, p, -1);
	if (!err && (err = djp_change_probe(sv, &hook, -1)))
		djp_change_probe(&rv, NULL, p->id);
	free(rv.v);
	return err;
}
