/*
 * Grace periods for the handler lists: how djp_disconnect knows that its
 * handler is running nowhere.
 *
 * The engine uses liburcu's "bulletproof" flavour, made for libraries
 * whose threads nobody registers: a thread registers itself on its first
 * read-side section, and the writer (urcu_bp_synchronize_rcu) waits for
 * every registered reader whose counter says it is inside a section that
 * began before the grace period.  A reader's whole state is one word, its
 * `ctr`: the low half counts nesting, the high half carries the grace
 * period's phase.  Where the kernel has membarrier, the read side needs no
 * fence: the writer's membarrier orders every reader.
 *
 * Two things are ours, both so that a lean trampoline can do the common
 * case in a few inline instructions instead of a call:
 *
 *  - The reader pointer is cached in an initial-exec TLS word of ours
 *    (djp_rcu_reader).  liburcu-bp's own TLS lives in another object and
 *    is reached through the GOT and __tls_get_addr; ours is one %fs load.
 *    Until the thread registers it points to a reader whose count is
 *    never zero, so the fast path's one test sends it to the slow path.
 *    The cache is cleared by a thread_local destructor, which glibc runs
 *    before any pthread key destructor, so it is gone before liburcu-bp
 *    recycles the record at thread exit.  A hit after that (in another
 *    library's key destructor) enters through liburcu-bp's own
 *    rcu_read_lock, which registers the thread again.
 *
 *  - Our sections count DJP_RCU_OURS (2^20) levels of nesting, not one.
 *    To the writer that is just a reader inside a section; to us a count
 *    at or above 2^20 means "inside one of our handlers", which is the
 *    recursion guard: a hit there (a handler calling instrumented code, a
 *    signal landing during a handler) is a counted miss.  A count below
 *    2^20 is the application's own rcu_read_lock, which a marker may well
 *    sit inside; we nest into it.  So the trampoline's fast path is: load
 *    the cached reader, require a zero count, store the grace-period
 *    counter plus 2^20 - 1; and on the way out store zero.  Anything else
 *    (no reader yet, a non-zero count) calls the C dispatcher, which does
 *    the general case below.
 *
 * The first hit of a thread registers it with liburcu-bp, which calls into
 * libc (mmap, memset) and may use vector registers.  Inside a lean
 * trampoline nothing saved them, so that path saves the extended state
 * itself around the calls.  This file is compiled with -mgeneral-regs-only
 * (kernel/kernel.mk), so the compiler adds no vector code of its own.
 */
#include <stdlib.h>

#include "kernel/engine.h"
#include "kernel/rcu.h"

/* Never registered, never written: its count reads 1, not 0. */
struct urcu_bp_reader djp_rcu_unregistered = { .ctr = URCU_BP_GP_COUNT };
__thread struct urcu_bp_reader *djp_rcu_reader
	__attribute__((tls_model("initial-exec"))) = &djp_rcu_unregistered;

/* Past the thread_local destructor: no cache, and our own recursion guard
 * for the sections entered through liburcu-bp's rcu_read_lock. */
static __thread struct {
	bool exiting;
	bool inside;
} tail __attribute__((tls_model("initial-exec")));

extern int __cxa_thread_atexit_impl(void (*fn)(void *), void *obj, void *dso);
extern void *__dso_handle;

static void reader_forget(void *unused)
{
	(void)unused;
	djp_rcu_reader = &djp_rcu_unregistered;
	tail.exiting = true;
}

static __attribute__((noinline)) void register_thread(void)
{
	if (!URCU_TLS(urcu_bp_reader))
		urcu_bp_register();
	if (!tail.exiting && !__cxa_thread_atexit_impl(reader_forget, NULL, &__dso_handle))
		djp_rcu_reader = URCU_TLS(urcu_bp_reader);
}

struct urcu_bp_reader *djp_rcu_register(bool in_lean)
{
	if (tail.exiting)
		return NULL;
	if (in_lean) {
		size_t sz = arch_xsave_size();
		uint8_t *area = NULL;
		if (sz) {
			uint8_t *raw = __builtin_alloca(sz + 64);
			area = (uint8_t *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
			for (size_t i = 512; i < 576; i++)
				area[i] = 0; /* the XSAVE header */
			arch_vector_save(area);
		}
		register_thread();
		if (area)
			arch_vector_restore(area);
	} else {
		register_thread();
	}
	return djp_rcu_reader == &djp_rcu_unregistered ? NULL : djp_rcu_reader;
}

int djp_rcu_enter_exiting(void)
{
	if (tail.inside)
		return 0;
	tail.inside = true;
	urcu_bp_read_lock();
	return DJP_RCU_ENTERED_EXITING;
}

void djp_rcu_exit_exiting(void)
{
	urcu_bp_read_unlock();
	tail.inside = false;
}

bool djp_rcu_exiting_inside(void)
{
	return tail.inside;
}

void djp_rcu_fast_path(struct djp_rcu_fast *out)
{
	uintptr_t tp;
	_Static_assert(offsetof(struct urcu_bp_reader, ctr) == 0, "the trampoline tests the word at the reader");
	_Static_assert(URCU_BP_GP_CTR_NEST_MASK == 0xffffffffUL, "the trampoline tests the low 32 bits");
	__asm__("mov %%fs:0,%0" : "=r"(tp));
	out->reader_tls = (intptr_t)((uintptr_t)&djp_rcu_reader - tp);
	out->gp_ctr = &urcu_bp_gp.ctr;
	out->enter_add = DJP_RCU_OURS - URCU_BP_GP_COUNT;
	out->need_mb = !urcu_bp_has_sys_membarrier;
}

void djp_rcu_fork_prepare(void)
{
	urcu_bp_before_fork();
}

void djp_rcu_fork_parent(void)
{
	urcu_bp_after_fork_parent();
}

void djp_rcu_fork_child(void)
{
	urcu_bp_after_fork_child();
}
