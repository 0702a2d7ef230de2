/*
 * Grace periods for the handler lists: how djp_disconnect knows that its
 * handler is running nowhere.
 *
 * The algorithm is liburcu-bp's ("bulletproof": for a library whose
 * threads nobody registers), owned here as LTTng-UST owns its copy, so
 * that the trampolines can inline its read side against a layout that is
 * ours and no update of liburcu or glibc can move.  liburcu serves with
 * its public headers: barriers and shared accessors.
 *
 * Readers.  A thread's whole read-side state is one word, its reader's
 * `ctr`: the low half counts sections (0 or 1: a hit inside one of our
 * handlers is a counted miss, the recursion guard), the high half holds
 * the phase of the grace-period counter djp_rcu_gp_ctr when the section
 * began.  To enter, a thread stores djp_rcu_gp_ctr (phase | 1) into its
 * word; to leave, it stores 0.  Where the kernel has membarrier the reader
 * needs no fence: the writer's membarrier orders every running thread.
 * Otherwise both sides fence.  The trampoline's fast path is those stores:
 * load the thread's reader from an initial-exec TLS word of ours (one %fs
 * load), require a zero count, store the counter, call, store zero.
 *
 * Registration.  Until its first hit a thread's TLS word points to a
 * reader whose count is never zero, so the fast path's one test sends it
 * to the C path, which claims a free slot (tid 0 -> its tid, by
 * compare-and-swap) in an array of readers that only grows, in chunks
 * that are never unmapped: a grace period may read a slot whose thread
 * has gone.  A first hit may come in a signal handler that interrupted
 * malloc in that very thread, so registration takes no lock and
 * allocates nothing but a new chunk with mmap (selftests/
 * test_engine_thread_life.c).  The slot goes back at thread exit, by a
 * pthread key destructor of ours; the key is made by our constructor,
 * early enough to be among the first 32, whose values glibc keeps in the
 * thread itself, so that setting it allocates nothing either.  A hit in a
 * later destructor registers the thread again and sets the key again, so
 * glibc's next round gives that slot back too.  A slot whose thread is
 * gone without giving it back (a hit in glibc's last round, no key of
 * ours, a thread ended by the exit system call) is taken back when the
 * slots run out, before a new chunk is made; a fork's child frees the
 * slots of the threads it did not keep.
 *
 * The writer (djp_rcu_synchronize), one at a time: membarrier (or a
 * fence), wait until no reader is inside a section of the old phase, flip
 * the phase, wait again, membarrier.  The two waits are liburcu's answer
 * to a reader that loaded the counter before the flip and stored it
 * after: the second wait sees it.  A reader that is inside is waited for
 * by short naps, not spinning, so that a thread preempted inside a
 * handler (three runnable threads on two cores, the writer one of them)
 * gets the core and leaves: liburcu-bp's writer sleeps 10 ms at a time
 * after a hundred polls, which cost every grace period that met such a
 * thread those 10 ms.
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
 * The first hit of a thread registers it, which calls into libc
 * (pthread_setspecific, maybe mmap).  Inside a lean trampoline nothing
 * saved the vector registers, so that path saves the extended state itself
 * around the calls.  This file is compiled for general registers only (the
 * pragma below), so the compiler adds no vector code of its own.
 */
/* The read side runs inside the lean trampoline, which saves no vector
 * state: the compiler must not use a vector or x87 register in this file. */
#pragma GCC target("general-regs-only")

#include <errno.h>
#include <linux/membarrier.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#include "lib/init_order.h"
#include "kernel/arming.h"
#include "kernel/engine.h"
#include "kernel/rcu.h"

unsigned long djp_rcu_gp_ctr = 1;
bool djp_rcu_has_membarrier;

/* Never registered, never written: their counts read 1, not 0. */
struct djp_rcu_reader djp_rcu_unregistered = { .ctr = 1 };
struct djp_rcu_reader djp_rcu_quiet = { .ctr = 1 };
__thread struct djp_rcu_reader *djp_rcu_reader
	__attribute__((tls_model("initial-exec"))) = &djp_rcu_unregistered;
__thread uintptr_t djp_rcu_entry_sp __attribute__((tls_model("initial-exec")));

/* ---- the readers' slots ----------------------------------------------------- */

/* A chunk of slots; the first is static, the others are mmap'd as threads
 * come, linked once full, and never unmapped. */
struct chunk {
	struct chunk *_Atomic next;
	size_t n;
	struct djp_rcu_reader r[];
};
#define FIRST_SLOTS 256
#define MORE_SLOTS 1023 /* with the header: 64 KiB */
static struct {
	struct chunk c;
	struct djp_rcu_reader r[FIRST_SLOTS];
} first = { .c.n = FIRST_SLOTS };

#define for_each_slot(ch, i) \
	for (struct chunk *ch = &first.c; ch; ch = atomic_load_explicit(&ch->next, memory_order_acquire)) \
		for (size_t i = 0; i < ch->n; i++)

static bool reader_inside(const struct djp_rcu_reader *r)
{
	return CMM_LOAD_SHARED(r->ctr) & DJP_RCU_NEST_MASK;
}

static pid_t gettid_(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static bool thread_gone(pid_t tid)
{
	return syscall(SYS_tgkill, getpid(), tid, 0) < 0 && errno == ESRCH;
}

/* Take back the slots of threads gone without giving them back (no exit
 * key, or a hit in glibc's last round of destructors); true if any. */
static bool take_back_dead(void)
{
	bool any = false;
	for_each_slot(ch, i) {
		pid_t tid = __atomic_load_n(&ch->r[i].tid, __ATOMIC_ACQUIRE);
		if (tid > 0 && !reader_inside(&ch->r[i]) && thread_gone(tid) &&
		    __atomic_compare_exchange_n(&ch->r[i].tid, &tid, 0, false, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
			any = true;
	}
	return any;
}

static struct djp_rcu_reader *claim(pid_t tid)
{
	for (bool took_back = false;;) {
		struct chunk *last = NULL, *c;
		for_each_slot(ch, i) {
			pid_t free_ = 0;
			last = ch;
			if (!__atomic_load_n(&ch->r[i].tid, __ATOMIC_RELAXED) &&
			    __atomic_compare_exchange_n(&ch->r[i].tid, &free_, tid, false, __ATOMIC_ACQ_REL,
							__ATOMIC_RELAXED)) {
				CMM_STORE_SHARED(ch->r[i].ctr, 0);
				return &ch->r[i];
			}
		}
		/* All taken: those of dead threads first, then a new chunk
		 * (another thread may add one first). */
		if (!took_back && (took_back = true) && take_back_dead())
			continue;
		c = mmap(NULL, sizeof(*c) + MORE_SLOTS * sizeof(c->r[0]), PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (c == MAP_FAILED)
			return NULL;
		c->n = MORE_SLOTS;
		struct chunk *expect = NULL;
		if (!atomic_compare_exchange_strong(&last->next, &expect, c))
			munmap(c, sizeof(*c) + MORE_SLOTS * sizeof(c->r[0]));
	}
}

/* Give a slot back: the count first, so that its next owner starts out. */
static void release(struct djp_rcu_reader *r)
{
	CMM_STORE_SHARED(r->ctr, 0);
	__atomic_store_n(&r->tid, 0, __ATOMIC_RELEASE);
}

unsigned djp_rcu_readers_owned(void)
{
	unsigned n = 0;
	for_each_slot(ch, i)
		n += __atomic_load_n(&ch->r[i].tid, __ATOMIC_ACQUIRE) != 0;
	return n;
}

/* Ours gives the slot back at thread exit. */
static pthread_key_t exit_key;
static int exit_key_ok;
#define SAFE_KEYS 32 /* glibc keeps the first 32 values in the thread itself */

static void reader_exit(void *reader)
{
	djp_rcu_reader = &djp_rcu_unregistered;
	release(reader);
}

DJP_ENGINE_INIT static void rcu_init(void)
{
	pthread_key_t k;
	long q = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	if (q > 0 && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED) &&
	    syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0)
		djp_rcu_has_membarrier = true;
	if (pthread_key_create(&k, reader_exit) == 0) {
		if (k < SAFE_KEYS) {
			exit_key = k;
			exit_key_ok = 1;
		} else {
			pthread_key_delete(k);
		}
	}
}

/* Allocates nothing but a chunk (see the essay).  Without a usable key the
 * slot goes back only when the slots run out and its thread is gone. */
static __attribute__((noinline)) void register_thread(void)
{
	struct djp_rcu_reader *r = claim(gettid_());

	if (!r)
		return;
	if (exit_key_ok)
		pthread_setspecific(exit_key, r);
	djp_rcu_reader = r;
}

struct djp_rcu_reader *djp_rcu_register(bool in_lean)
{
	if (in_lean) {
		uint8_t *area = arch_vector_area_on_stack();
		if (area)
			arch_vector_save(area);
		register_thread();
		if (area)
			arch_vector_restore(area);
	} else {
		register_thread();
	}
	return djp_rcu_reader == &djp_rcu_unregistered ? NULL : djp_rcu_reader;
}

/* ---- threads whose hits are not the program's ------------------------------- */

/*
 * The agent's thread calls malloc, free, poll, and whatever else the
 * program may have probed; so does a program's thread while it runs the
 * library's own code (a dlopen's re-arming, a fork child's new agent).
 * Those hits are djprobe's, not the program's: reported, they were 12%
 * of a single-threaded program's malloc calls, from a thread it never
 * made, with entries that never met their returns.  Such a thread points
 * its reader at djp_rcu_quiet, and its hits are dropped before anything
 * is counted.  A registered thread's own slot stays its own meanwhile,
 * outside any section: a grace period does not wait for it.
 */
void djp__thread_quiet(void)
{
	djp_rcu_reader = &djp_rcu_quiet;
}

void *djp__quiet_begin(void)
{
	struct djp_rcu_reader *was = djp_rcu_reader;
	if (djp_rcu_inside())
		return NULL;
	djp_rcu_reader = &djp_rcu_quiet;
	cmm_barrier(); /* a signal handler here sees the thread quiet */
	return was;
}

void djp__quiet_end(void *was)
{
	cmm_barrier();
	if (was)
		djp_rcu_reader = (struct djp_rcu_reader *)was;
}

/* ---- sections left by a jump ------------------------------------------------ */

/* process_vm_readv and _writev on ourselves: a word read or written that
 * cannot fault, from any context (errno says why not). */
bool djp_peek_word(uintptr_t a, uintptr_t *out)
{
	struct iovec local = { out, sizeof(*out) }, remote = { (void *)a, sizeof(*out) };
	return syscall(SYS_process_vm_readv, getpid(), &local, 1UL, &remote, 1UL, 0UL) == (long)sizeof(*out);
}

bool djp_poke_word(uintptr_t a, uintptr_t v)
{
	struct iovec local = { &v, sizeof(v) }, remote = { (void *)a, sizeof(v) };
	return syscall(SYS_process_vm_writev, getpid(), &local, 1UL, &remote, 1UL, 0UL) == (long)sizeof(v);
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
	if (!djp_peek_word(frame - 8, &key))
		return errno == EFAULT;
	return !(key & DJP_HIT_KEY_SITE) && !arch_tramp_owns(key);
}

bool djp_rcu_recover(uintptr_t frame)
{
	uintptr_t here = (uintptr_t)__builtin_frame_address(0);
	stack_t ss;
	int saved_errno = errno;
	bool gone;

	if (!djp_rcu_inside() || syscall(SYS_sigaltstack, NULL, &ss))
		return false;
	gone = frame_gone(djp_rcu_entry_sp, frame ? frame : here, frame != 0, &ss);
	if (gone)
		djp_rcu_exit();
	errno = saved_errno;
	return gone;
}

void djp_rcu_recover_interrupted(const void *ucontext)
{
	const ucontext_t *uc = ucontext;
	int saved_errno = errno;

	if (!djp_rcu_inside())
		return;
	/* Interrupted inside a trampoline: its hit will judge. */
	if (arch_tramp_owns((uintptr_t)uc->uc_mcontext.gregs[ARCH_GREG_PC]))
		return;
	if (frame_gone(djp_rcu_entry_sp, (uintptr_t)uc->uc_mcontext.gregs[ARCH_GREG_SP], false, &uc->uc_stack))
		djp_rcu_exit();
	errno = saved_errno;
}

/* ---- the writer ------------------------------------------------------------- */

static pthread_mutex_t gp_lock = PTHREAD_MUTEX_INITIALIZER;

static void mb_master(void)
{
	/* Registered at start, the command does not fail (liburcu-bp dies if
	 * it does); without it the readers fence (need_mb) and so do we. */
	if (!djp_rcu_has_membarrier || syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0))
		cmm_smp_mb();
}

/* Inside a section that began in the other phase than the counter's now. */
static bool old_reader(const struct djp_rcu_reader *r)
{
	unsigned long v = CMM_LOAD_SHARED(r->ctr);
	return (v & DJP_RCU_NEST_MASK) && ((v ^ CMM_LOAD_SHARED(djp_rcu_gp_ctr)) & DJP_RCU_PHASE);
}

/*
 * Wait until no reader is inside a section of the old phase.  Short naps
 * let a preempted reader run (the essay); every 250 naps (some 5 ms) a
 * reader still inside is asked, by the engine's signal, whether it left its
 * section by a jump (djp_rcu_recover_interrupted), and the slot of a thread
 * that is gone is given back.
 */
static void wait_for_old_readers(void)
{
	const struct timespec nap = { 0, 20 * 1000 };
	struct djp_rcu_reader *self = djp_rcu_reader;
	int sig = djp_engine_signal();

	for (unsigned tries = 0;; tries++) {
		bool waiting = false;
		for_each_slot(ch, i) {
			struct djp_rcu_reader *r = &ch->r[i];
			pid_t tid;
			if (r == self || !old_reader(r))
				continue;
			tid = __atomic_load_n(&r->tid, __ATOMIC_ACQUIRE);
			if (tries % 250 == 249 && tid > 0) {
				if (thread_gone(tid)) {
					release(r);
					continue;
				}
				if (sig)
					syscall(SYS_tgkill, getpid(), tid, sig);
			}
			waiting = true;
		}
		if (!waiting)
			return;
		if (tries < 100)
			caa_cpu_relax();
		else
			nanosleep(&nap, NULL);
	}
}

void djp_rcu_synchronize(void)
{
	int saved_errno = errno;

	pthread_mutex_lock(&gp_lock);
	mb_master();
	wait_for_old_readers();
	cmm_smp_mb();
	CMM_STORE_SHARED(djp_rcu_gp_ctr, djp_rcu_gp_ctr ^ DJP_RCU_PHASE);
	cmm_smp_mb();
	wait_for_old_readers();
	mb_master();
	pthread_mutex_unlock(&gp_lock);
	errno = saved_errno;
}

void djp_rcu_fast_path(struct djp_rcu_fast *out)
{
	uintptr_t tp;
	_Static_assert(offsetof(struct djp_rcu_reader, ctr) == 0, "the trampoline tests the word at the reader");
	_Static_assert(DJP_RCU_NEST_MASK == 0xffffffffUL, "the trampoline tests the low 32 bits");
	__asm__("mov %%fs:0,%0" : "=r"(tp));
	out->reader_tls = (intptr_t)((uintptr_t)&djp_rcu_reader - tp);
	out->entry_sp_tls = (intptr_t)((uintptr_t)&djp_rcu_entry_sp - tp);
	out->gp_ctr = &djp_rcu_gp_ctr;
	out->need_mb = !djp_rcu_has_membarrier;
}

/* No grace period is under way across a fork. */
void djp_rcu_fork_prepare(void)
{
	pthread_mutex_lock(&gp_lock);
}

void djp_rcu_fork_parent(void)
{
	pthread_mutex_unlock(&gp_lock);
}

/* The child has one thread, with a new tid: keep its slot, free the rest. */
void djp_rcu_fork_child(void)
{
	struct djp_rcu_reader *self = djp_rcu_reader;
	pthread_mutex_init(&gp_lock, NULL);
	for_each_slot(ch, i)
		if (&ch->r[i] != self && ch->r[i].tid)
			release(&ch->r[i]);
	if (self != &djp_rcu_unregistered && self != &djp_rcu_quiet)
		self->tid = gettid_();
}
