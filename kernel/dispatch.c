/*
 * Running the handlers of a hit.
 *
 * The trampolines call djp_dispatch_lean or djp_dispatch_full with the
 * register view they built and the site from their data slot; the SIGTRAP
 * handler calls djp_trap_probe for int3 probes.  All three read the site's
 * handler list under an RCU read-side critical section (liburcu's bp
 * flavour: no thread registration needed, a compiler barrier on the read
 * side where the kernel has membarrier), so djp_disconnect can wait for a
 * grace period and know that its handler is running nowhere.
 *
 * A per-thread guard turns a hit inside a handler (a handler that calls
 * instrumented code, or a signal that lands during one) into a counted
 * miss instead of a recursion.  The lean dispatcher skips handlers that did
 * not promise DJP_GPR_ONLY: that can only happen to a thread that entered a
 * lean trampoline just before its site was switched to the full one, and
 * skipping is the only safe choice, since its vector state is not saved.
 */
#define _LGPL_SOURCE
#include <urcu-bp.h>

#include "kernel/engine.h"
#include "kernel/hit_args.h"

/* Per-thread state, in one initial-exec block so that a hit computes its
 * address once: the recursion guard, and the cached RCU reader (below). */
struct thread_state {
	int in_handler;
	int reader_exiting;
	struct urcu_bp_reader *reader;
};
static __thread struct thread_state ts __attribute__((tls_model("initial-exec")));
#define in_handler (ts.in_handler)
#define reader (ts.reader)
#define reader_exiting (ts.reader_exiting)

/* liburcu-bp's flag, copied once: read through the GOT twice a hit otherwise. */
static int has_membarrier;

static inline void mb_slave(void)
{
	if (__builtin_expect(has_membarrier, 1))
		cmm_barrier();
	else
		cmm_smp_mb();
}

bool djp_in_handler(void)
{
	return in_handler;
}

/*
 * The RCU read side, with liburcu-bp's own protocol (urcu/static/urcu-bp.h)
 * but the thread's reader record cached in an initial-exec TLS word of
 * ours: liburcu-bp's TLS lives in another object, and reaching it costs a
 * GOT load and an add every time, four times a hit.  The cache is cleared
 * by a thread_local destructor, which glibc runs before any pthread key
 * destructor, so it is gone before liburcu-bp recycles the record at thread
 * exit; a hit after that (in a later destructor) takes the slow path, the
 * library's own read lock, which re-registers the thread.
 */
extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso);
extern void *__dso_handle;

static void reader_forget(void *unused)
{
	(void)unused;
	reader = NULL;
	reader_exiting = 1;
}

/*
 * The first hit in a thread registers it with liburcu-bp, which calls into
 * libc (mmap, memset) and may use vector registers.  Inside a lean
 * trampoline nothing saved them, so this slow path saves the extended state
 * itself around the calls.  This file is compiled with -mgeneral-regs-only,
 * so the compiler adds no vector code of its own.
 */
static __attribute__((noinline)) void register_thread(void)
{
	size_t sz = arch_xsave_size();
	uint8_t *area = NULL;
	if (sz) {
		uint8_t *raw = __builtin_alloca(sz + 64);
		area = (uint8_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
		for (size_t i = 512; i < 576; i++)
			area[i] = 0; /* the XSAVE header */
		arch_vector_save(area);
	}
	if (!URCU_TLS(urcu_bp_reader))
		urcu_bp_register();
	has_membarrier = urcu_bp_has_sys_membarrier;
	if (!reader_exiting && !__cxa_thread_atexit_impl(reader_forget, NULL, &__dso_handle))
		reader = URCU_TLS(urcu_bp_reader);
	if (area)
		arch_vector_restore(area);
}

static inline struct urcu_bp_reader *read_lock(void)
{
	struct urcu_bp_reader *r = reader;
	unsigned long tmp;
	if (__builtin_expect(!r, 0)) {
		register_thread();
		if (!(r = reader)) {
			urcu_bp_read_lock(); /* a thread on its way out */
			return NULL;
		}
	}
	cmm_barrier();
	tmp = r->ctr;
	if (__builtin_expect(!(tmp & URCU_BP_GP_CTR_NEST_MASK), 1)) {
		_CMM_STORE_SHARED(r->ctr, _CMM_LOAD_SHARED(urcu_bp_gp.ctr));
		mb_slave();
	} else {
		_CMM_STORE_SHARED(r->ctr, tmp + URCU_BP_GP_COUNT);
	}
	return r;
}

static inline void read_unlock(struct urcu_bp_reader *r)
{
	unsigned long tmp;
	if (__builtin_expect(!r, 0)) {
		urcu_bp_read_unlock();
		return;
	}
	tmp = r->ctr;
	mb_slave();
	_CMM_STORE_SHARED(r->ctr, tmp - URCU_BP_GP_COUNT);
	cmm_barrier();
}

static inline void run(struct djp_site *s, const struct djp_regs *regs, unsigned need)
{
	struct djp_handler_list *l;
	struct urcu_bp_reader *r;
	if (__builtin_expect(in_handler, 0)) {
		atomic_fetch_add_explicit(&s->misses, 1, memory_order_relaxed);
		return;
	}
	in_handler = 1;
	r = read_lock();
	l = rcu_dereference(*(struct djp_handler_list **)&s->handlers);
	if (l) {
		struct djp_hit hit = { s, regs };
		for (unsigned i = 0; i < l->n; i++)
			if ((l->h[i].flags & need) == need)
				l->h[i].fn(&hit, l->h[i].data);
	}
	read_unlock(r);
	in_handler = 0;
}

void djp_dispatch_lean(struct djp_regs *regs, struct djp_site *site)
{
	run(site, regs, DJP_GPR_ONLY);
}

void djp_dispatch_full(struct djp_regs *regs, struct djp_site *site)
{
	run(site, regs, 0);
}

void djp_trap_probe(struct djp_site *site, struct djp_regs *regs)
{
	run(site, regs, 0);
}

DJP_API const char *djp_hit_name(const struct djp_hit *hit)
{
	return hit->site->m->name;
}

DJP_API unsigned djp_hit_nargs(const struct djp_hit *hit)
{
	return hit->site->m->nargs;
}

DJP_API uintptr_t djp_hit_site(const struct djp_hit *hit)
{
	return hit->site->addr;
}

DJP_API int64_t djp_hit_arg(const struct djp_hit *hit, unsigned i)
{
	if (i >= hit->site->m->nargs)
		return 0;
	return (int64_t)djp_arg_fetch(hit, &hit->site->m->arg[i]);
}

/* For the recorder and the agent (kernel/engine.h). */
uint32_t djp__hit_id(const struct djp_hit *hit)
{
	return hit->site->id;
}

const struct djp_marker_info *djp__hit_marker(const struct djp_hit *hit)
{
	return hit->site->m;
}
