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
 * Two things on the read side are ours, both so that a trampoline can do
 * the common case in a few inline instructions instead of a call:
 *
 *  - The reader pointer is cached in an initial-exec TLS word of ours
 *    (djp_rcu_reader).  liburcu-bp's own TLS lives in another object and
 *    is reached through the GOT and __tls_get_addr; ours is one %fs load.
 *    Until the thread registers it points to a reader whose count is
 *    never zero, so the fast path's one test sends it to the slow path.
 *    The cache must be cleared at thread exit before liburcu-bp recycles
 *    the record, and setting that up must allocate nothing: a thread's
 *    first hit may come in a signal handler that interrupted malloc
 *    (glibc's thread_local destructor list callocs, and hung a test that
 *    does this; selftests/test_engine_thread_life.c).  So the cache is
 *    cleared by a pthread key destructor of ours, and the key value is
 *    set without allocating because the key is made by our constructor,
 *    early enough to be one of the first 32.  Key destructors run in key
 *    order, and liburcu-bp's key, made by its constructor before ours, is
 *    older: at registration the thread's liburcu-bp key value moves into
 *    our key, so that liburcu-bp's destructor finds nothing in glibc's
 *    first round; ours clears the cache and puts the value back, and
 *    glibc's next round runs liburcu-bp's.  A hit after ours (in another
 *    key destructor) enters through liburcu-bp's own rcu_read_lock, which
 *    registers the thread again if liburcu-bp has let it go.
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
 * And on the write side, djp_rcu_synchronize first lets a thread that was
 * preempted inside one of our sections run and leave it (see
 * let_readers_leave), then runs liburcu-bp's grace period.
 *
 * The first hit of a thread registers it with liburcu-bp, which calls into
 * libc (mmap, memset) and may use vector registers.  Inside a lean
 * trampoline nothing saved them, so that path saves the extended state
 * itself around the calls.  This file is compiled with -mgeneral-regs-only
 * (kernel/kernel.mk), so the compiler adds no vector code of its own.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "kernel/engine.h"
#include "kernel/rcu.h"

/* Never registered, never written: its count reads 1, not 0. */
struct urcu_bp_reader djp_rcu_unregistered = { .ctr = URCU_BP_GP_COUNT };
__thread struct urcu_bp_reader *djp_rcu_reader
	__attribute__((tls_model("initial-exec"))) = &djp_rcu_unregistered;

/* Past our key destructor: no cache, and our own recursion guard for the
 * sections entered through liburcu-bp's rcu_read_lock. */
static __thread struct {
	bool exiting;
	bool inside;
} tail __attribute__((tls_model("initial-exec")));

/* Ours clears the cache at thread exit; liburcu-bp's (found at the first
 * registration: the key whose value is the thread's reader) unregisters. */
static pthread_key_t exit_key;
static int exit_key_ok, urcu_key = -1;
#define SAFE_KEYS 32 /* glibc keeps the first 32 values in the thread itself */

static void know(struct urcu_bp_reader *r, struct urcu_bp_reader *was);

static void reader_forget(void *reader)
{
	know(NULL, djp_rcu_reader);
	djp_rcu_reader = &djp_rcu_unregistered;
	tail.exiting = true;
	if (urcu_key >= 0)
		pthread_setspecific((pthread_key_t)urcu_key, reader);
}

__attribute__((constructor)) static void make_exit_key(void)
{
	pthread_key_t k;
	if (pthread_key_create(&k, reader_forget) == 0) {
		if (k < SAFE_KEYS) {
			exit_key = k;
			exit_key_ok = 1;
		} else {
			pthread_key_delete(k);
		}
	}
}

/* The readers of threads that hit a marker, for djp_rcu_synchronize's
 * wait (below); a slot is NULL when free.  Their records live in
 * liburcu-bp's arena, which is never unmapped, so a stale one is still
 * memory to read. */
#define KNOWN 512
static struct urcu_bp_reader *_Atomic known[KNOWN];

static void know(struct urcu_bp_reader *r, struct urcu_bp_reader *was)
{
	for (unsigned i = 0; i < KNOWN; i++) {
		struct urcu_bp_reader *expect = was;
		if (atomic_compare_exchange_strong(&known[i], &expect, r))
			return;
	}
}

/* liburcu-bp's key: among the first 32, the one whose value is r.  Found
 * once; a key index of liburcu-bp's never changes. */
static int find_urcu_key(struct urcu_bp_reader *r)
{
	int k = __atomic_load_n(&urcu_key, __ATOMIC_RELAXED);
	for (int i = 0; k < 0 && i < SAFE_KEYS; i++)
		if (pthread_getspecific((pthread_key_t)i) == r)
			__atomic_store_n(&urcu_key, k = i, __ATOMIC_RELAXED);
	return k;
}

/* Allocates nothing (see the essay): liburcu-bp's registration mmaps and
 * takes its mutex with every signal blocked; pthread_setspecific on keys
 * below 32 writes into the thread's own descriptor.  Without a usable key
 * of ours the thread keeps entering through the C slow path, uncached. */
static __attribute__((noinline)) void register_thread(void)
{
	struct urcu_bp_reader *r;
	int k;

	if (!URCU_TLS(urcu_bp_reader))
		urcu_bp_register();
	r = URCU_TLS(urcu_bp_reader);
	if (tail.exiting || !exit_key_ok || !r || (k = find_urcu_key(r)) < 0)
		return;
	if (pthread_setspecific(exit_key, r) || pthread_setspecific((pthread_key_t)k, NULL))
		return;
	djp_rcu_reader = r;
	know(r, NULL);
}

/*
 * Before the grace period, wait (a little, sleeping) until no other known
 * thread is inside one of our sections.  liburcu-bp's writer polls a
 * reader that stays in a section a hundred times and then sleeps 10 ms
 * between polls; a thread preempted inside a handler's section (three
 * runnable threads on two cores, the writer one of them) costs every
 * grace period that meets it those 10 ms.  Sleeping 20 us at a time here
 * lets it run and leave; then the grace period finds the threads outside,
 * or in sections that end at once.  Correctness is liburcu's: this only
 * chooses when to start it.  A hot thread is seen outside within a few
 * polls; the wait gives up after 5 ms.
 */
static void let_readers_leave(void)
{
	const struct timespec nap = { 0, 20 * 1000 };
	struct urcu_bp_reader *self = URCU_TLS(urcu_bp_reader);
	for (int tries = 0; tries < 250; tries++) {
		int inside = 0;
		for (unsigned i = 0; i < KNOWN && !inside; i++) {
			struct urcu_bp_reader *r = atomic_load(&known[i]);
			inside = r && r != self && (CMM_LOAD_SHARED(r->ctr) & URCU_BP_GP_CTR_NEST_MASK) >= DJP_RCU_OURS;
		}
		if (!inside)
			return;
		nanosleep(&nap, NULL);
	}
}

void djp_rcu_synchronize(void)
{
	let_readers_leave();
	urcu_bp_synchronize_rcu();
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

/* The child has one thread: forget the others' readers. */
void djp_rcu_fork_child(void)
{
	urcu_bp_after_fork_child();
	for (unsigned i = 0; i < KNOWN; i++)
		if (atomic_load(&known[i]) != URCU_TLS(urcu_bp_reader))
			atomic_store(&known[i], NULL);
}
