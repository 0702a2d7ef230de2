/*
 * The engine's grace periods: our own read side and writer, after
 * liburcu-bp's algorithm (kernel/rcu.c has the essay).  The lean
 * trampolines inline the same fast path (arch/x86/tramp_lean.c), given the
 * numbers djp_rcu_fast_path() returns.  liburcu serves with its public
 * headers only: barriers and shared-memory accessors.
 */
#ifndef DJP_KERNEL_RCU_H
#define DJP_KERNEL_RCU_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <urcu/arch.h>
#include <urcu/system.h>

/* A reader's word: the low half counts the sections it is in (one at most:
 * a hit inside a section is a miss), the high half carries the phase of
 * the grace-period counter it entered with. */
#define DJP_RCU_NEST_MASK 0xffffffffUL
#define DJP_RCU_PHASE (1UL << 32)

/* One thread's reader, in memory that is never unmapped (a grace period may
 * read one whose thread has gone); a cache line each. */
struct djp_rcu_reader {
	unsigned long ctr;
	pid_t tid; /* the owner, 0 when the slot is free */
} __attribute__((aligned(64)));

/* The grace-period counter: the phase, and a nest count of one, which is
 * what a reader stores to enter. */
extern unsigned long djp_rcu_gp_ctr;
/* Whether the writer orders readers with membarrier (else readers fence). */
extern bool djp_rcu_has_membarrier;

/* The thread's reader, or &djp_rcu_unregistered (whose count is never
 * zero, so that the trampolines' fast path needs no NULL test). */
extern __thread struct djp_rcu_reader *djp_rcu_reader __attribute__((tls_model("initial-exec")));
extern struct djp_rcu_reader djp_rcu_unregistered;
/* The reader of a thread whose hits are none of the program's: the
 * agent's, or a program's thread while it does the library's own work
 * (djp__quiet_begin).  Never registered, never written: its count reads
 * 1, as the unregistered one's, so that the trampolines' fast path sends
 * its hits to the C path, which drops them (kernel/dispatch.c), uncounted. */
extern struct djp_rcu_reader djp_rcu_quiet;

/* Where the thread's current section of ours has its frame: the stack
 * pointer of the trampoline (or the hit, on the C paths), below which the
 * handlers run, and whose word below holds a hit key (regs.h).  Written
 * before the section begins; meaningful while the count is not zero. */
extern __thread uintptr_t djp_rcu_entry_sp __attribute__((tls_model("initial-exec")));

static inline void djp_rcu_mb_slave(void)
{
	if (__builtin_expect(djp_rcu_has_membarrier, 1))
		cmm_barrier();
	else
		cmm_smp_mb();
}

/* Slow path (rcu.c): the thread's reader, registered now; NULL when no
 * slot could be had (out of memory). */
struct djp_rcu_reader *djp_rcu_register(bool in_lean);
/* The thread is inside a section of ours, at a hit whose frame is at
 * `frame`, or in connect/disconnect (frame 0): end that section if it was
 * left by a jump (a handler, or a signal handler that interrupted one,
 * that siglongjmp'd out); true if it was. */
bool djp_rcu_recover(uintptr_t frame);
/* The same, from a signal handler that interrupted the thread. */
void djp_rcu_recover_interrupted(const void *ucontext);

/* Enter a read-side section for running handlers of the hit at `frame`
 * (whose word below is its key).  `in_lean` says the caller is a lean
 * trampoline, which saved no vector registers.  False: not entered,
 * because the thread is already inside one of our handlers or has no
 * reader (the caller counts a miss). */
static inline bool djp_rcu_enter(bool in_lean, uintptr_t frame)
{
	struct djp_rcu_reader *r = djp_rcu_reader;

	if (__builtin_expect(r == &djp_rcu_quiet, 0))
		return false;
	if (__builtin_expect(r == &djp_rcu_unregistered, 0) && !(r = djp_rcu_register(in_lean)))
		return false;
	cmm_barrier();
	if (__builtin_expect(CMM_LOAD_SHARED(r->ctr) & DJP_RCU_NEST_MASK, 0) && !djp_rcu_recover(frame))
		return false;
	djp_rcu_entry_sp = frame;
	cmm_barrier(); /* a signal handler that sees the count sees the frame */
	CMM_STORE_SHARED(r->ctr, CMM_LOAD_SHARED(djp_rcu_gp_ctr));
	djp_rcu_mb_slave();
	return true;
}

/* Leave the thread's section (also one left by a jump: rcu.c). */
static inline void djp_rcu_exit(void)
{
	djp_rcu_mb_slave();
	CMM_STORE_SHARED(djp_rcu_reader->ctr, 0);
	cmm_barrier();
}

/* True inside a handler of ours on this thread. */
static inline bool djp_rcu_inside(void)
{
	struct djp_rcu_reader *r = djp_rcu_reader;
	return r != &djp_rcu_unregistered && r != &djp_rcu_quiet && (CMM_LOAD_SHARED(r->ctr) & DJP_RCU_NEST_MASK);
}

/* True when this thread's hits are not the program's (djp_rcu_quiet). */
static inline bool djp_rcu_is_quiet(void)
{
	return djp_rcu_reader == &djp_rcu_quiet;
}

/* The word at `a` of this process, read or written without a fault: false
 * when it is not mapped (errno EFAULT) or the system call fails. */
bool djp_peek_word(uintptr_t a, uintptr_t *out);
bool djp_poke_word(uintptr_t a, uintptr_t v);

/* Wait until every section that began before the call has ended. */
void djp_rcu_synchronize(void);

/* Slots owned by a thread (tests: a thread that exits gives its slot back). */
unsigned djp_rcu_readers_owned(void);

/*
 * What a lean trampoline needs to inline the fast path: the %fs offsets of
 * djp_rcu_reader and djp_rcu_entry_sp (the same for every thread: static
 * TLS), the address of the grace-period counter (which holds the nest
 * count a reader stores), and whether the reader must issue full barriers
 * itself (no membarrier system call).
 */
struct djp_rcu_fast {
	intptr_t reader_tls;
	intptr_t entry_sp_tls;
	const unsigned long *gp_ctr;
	bool need_mb;
};
void djp_rcu_fast_path(struct djp_rcu_fast *out);

/* pthread_atfork, around the engine's own handlers. */
void djp_rcu_fork_prepare(void);
void djp_rcu_fork_parent(void);
void djp_rcu_fork_child(void);

#endif
