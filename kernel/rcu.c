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
 * A section left by a jump.  A handler that siglongjmp's out, or a signal
 * handler that interrupted one and jumps back to the application (timeouts
 * and fault recovery do), never runs the store that ends the section: the
 * thread's count stays "ours", its hits would be misses for good and every
 * grace period would wait for it forever.  So each section notes where its
 * frame is before it begins (djp_rcu_entry_sp: the trampoline's %rsp, or
 * the hit on the C paths) and the word just below holds a hit key from
 * that moment on (the trampoline stores the return address its call will
 * push; the C paths' hit already has its key).  While the section lives,
 * the handlers run below that frame and the key is intact, so the frame
 * is gone, and the section was left by a jump, when
 *
 *  - the thread now runs above the frame on the same stack (for a new hit:
 *    at or above it, since a live section's nested hits are below), or
 *  - the frame was on the alternate signal stack and the thread is now
 *    off it, or
 *  - the word below the frame is no key: neither inside the trampoline
 *    pool nor a site pointer with the tag bit (an unmapped one counts).
 *
 * The thread checks this itself at a hit that finds its count "ours" and
 * in djp_connect/djp_disconnect, and ends the section; a grace period that
 * finds a known thread inside a section of ours for several milliseconds
 * asks it to check with the engine's signal, whose handler judges the
 * interrupted context.  Every test errs towards "alive": a live section is
 * never ended.  What stays undecided (the thread went deeper than the
 * frame and the key's word happens to be intact) waits for the thread's
 * next hit as before.  A thread that interrupted one of our sections with
 * a signal whose handler runs on the alternate stack is judged by the key
 * alone.
 *
 * The first hit of a thread registers it with liburcu-bp, which calls into
 * libc (mmap, memset) and may use vector registers.  Inside a lean
 * trampoline nothing saved them, so that path saves the extended state
 * itself around the calls.  This file is compiled with -mgeneral-regs-only
 * (kernel/kernel.mk), so the compiler adds no vector code of its own.
 */
/* The read side runs inside the lean trampoline, which saves no vector
 * state: the compiler must not use a vector or x87 register in this file. */
#pragma GCC target("general-regs-only")

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "kernel/engine.h"
#include "kernel/rcu.h"

/* Never registered, never written: its count reads 1, not 0. */
struct urcu_bp_reader djp_rcu_unregistered = { .ctr = URCU_BP_GP_COUNT };
__thread struct urcu_bp_reader *djp_rcu_reader
	__attribute__((tls_model("initial-exec"))) = &djp_rcu_unregistered;
__thread uintptr_t djp_rcu_entry_sp __attribute__((tls_model("initial-exec")));

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
static _Atomic pid_t known_tid[KNOWN]; /* whom to ask about a stuck section */

static void know(struct urcu_bp_reader *r, struct urcu_bp_reader *was)
{
	for (unsigned i = 0; i < KNOWN; i++) {
		struct urcu_bp_reader *expect = was;
		if (atomic_compare_exchange_strong(&known[i], &expect, r)) {
			atomic_store(&known_tid[i], r ? (pid_t)syscall(SYS_gettid) : 0);
			return;
		}
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
 * polls.  Halfway (250 polls, some 5 ms), a thread still inside is asked
 * whether it left its section by a jump (ask_inside_readers); the wait
 * gives up after 500 polls.
 */
static bool reader_inside(const struct urcu_bp_reader *r)
{
	return (CMM_LOAD_SHARED(r->ctr) & URCU_BP_GP_CTR_NEST_MASK) >= DJP_RCU_OURS;
}

/* Ask each thread still inside to check whether it left its section by a
 * jump (djp_rcu_recover_interrupted, from the engine signal's handler). */
static void ask_inside_readers(const struct urcu_bp_reader *self)
{
	int sig = djp_engine_signal();
	for (unsigned i = 0; sig && i < KNOWN; i++) {
		struct urcu_bp_reader *r = atomic_load(&known[i]);
		pid_t tid = atomic_load(&known_tid[i]);
		if (r && r != self && tid > 0 && reader_inside(r))
			syscall(SYS_tgkill, getpid(), tid, sig);
	}
}

static void let_readers_leave(void)
{
	const struct timespec nap = { 0, 20 * 1000 };
	struct urcu_bp_reader *self = URCU_TLS(urcu_bp_reader);
	for (int tries = 0; tries < 500; tries++) {
		int inside = 0;
		for (unsigned i = 0; i < KNOWN && !inside; i++) {
			struct urcu_bp_reader *r = atomic_load(&known[i]);
			inside = r && r != self && reader_inside(r);
		}
		if (!inside)
			return;
		if (tries == 250)
			ask_inside_readers(self);
		nanosleep(&nap, NULL);
	}
}

/* The word at `a`, or false if it is not mapped.  process_vm_readv on
 * ourselves: a read that cannot fault, from any context. */
static bool peek(uintptr_t a, uintptr_t *out)
{
	struct iovec local = { out, sizeof(*out) }, remote = { (void *)a, sizeof(*out) };
	return syscall(SYS_process_vm_readv, getpid(), &local, 1UL, &remote, 1UL, 0UL) == (long)sizeof(*out);
}

/* The essay's three tests; `cur` is where the thread runs now, `ss` its
 * alternate signal stack, `at_hit` when `cur` is a new hit's frame.  Being
 * on the alternate stack is judged by address: the ss_flags a signal frame
 * carries are the ones sigaltstack set, not SS_ONSTACK. */
static bool frame_gone(uintptr_t frame, uintptr_t cur, bool at_hit, const stack_t *ss)
{
	size_t size = ss->ss_flags & SS_DISABLE ? 0 : ss->ss_size;
	bool cur_alt = cur - (uintptr_t)ss->ss_sp < size;
	bool frame_alt = frame - (uintptr_t)ss->ss_sp < size;
	uintptr_t key;

	if (frame_alt && !cur_alt)
		return true;
	if (frame_alt == cur_alt && (cur > frame || (at_hit && cur == frame)))
		return true;
	if (!peek(frame - 8, &key))
		return errno == EFAULT;
	return !(key & DJP_HIT_KEY_SITE) && !arch_tramp_owns(key);
}

static void end_section(struct urcu_bp_reader *r)
{
	djp_rcu_mb_slave();
	CMM_STORE_SHARED(r->ctr, CMM_LOAD_SHARED(r->ctr) - DJP_RCU_OURS);
	cmm_barrier();
}

bool djp_rcu_recover(uintptr_t frame)
{
	struct urcu_bp_reader *r = djp_rcu_reader;
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	stack_t ss;
	int saved_errno = errno;
	bool gone;

	if (r == &djp_rcu_unregistered || !reader_inside(r) || syscall(SYS_sigaltstack, NULL, &ss))
		return false;
	gone = frame_gone(djp_rcu_entry_sp, frame ? frame : here, frame != 0, &ss);
	if (gone)
		end_section(r);
	errno = saved_errno;
	return gone;
}

void djp_rcu_recover_interrupted(const void *ucontext)
{
	const ucontext_t *uc = ucontext;
	struct urcu_bp_reader *r = djp_rcu_reader;
	int saved_errno = errno;

	if (r == &djp_rcu_unregistered || !reader_inside(r))
		return;
	/* Interrupted inside a trampoline: its hit will judge. */
	if (arch_tramp_owns((uintptr_t)uc->uc_mcontext.gregs[REG_RIP]))
		return;
	if (frame_gone(djp_rcu_entry_sp, (uintptr_t)uc->uc_mcontext.gregs[REG_RSP], false, &uc->uc_stack))
		end_section(r);
	errno = saved_errno;
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
	out->entry_sp_tls = (intptr_t)((uintptr_t)&djp_rcu_entry_sp - tp);
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
