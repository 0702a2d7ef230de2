/*
 * The read side of the engine's grace periods: liburcu-bp, entered through
 * a reader pointer cached in a TLS word of ours (kernel/rcu.c has the
 * essay).  The lean trampolines inline the same fast path (arch/x86/
 * tramp_lean.c), given the numbers djp_rcu_fast_path() returns.
 */
#ifndef DJP_KERNEL_RCU_H
#define DJP_KERNEL_RCU_H

#define _LGPL_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <urcu-bp.h>

/* The nesting count one of our sections adds to the reader's counter: far
 * above any nesting an application reaches with its own rcu_read_lock, so
 * that a count at or above it means "inside a handler of ours". */
#define DJP_RCU_OURS (1UL << 20)

/* The thread's liburcu-bp reader, or &djp_rcu_unregistered (whose count is
 * never zero, so that the trampolines' fast path needs no NULL test). */
extern __thread struct urcu_bp_reader *djp_rcu_reader __attribute__((tls_model("initial-exec")));
extern struct urcu_bp_reader djp_rcu_unregistered;

/* Where the thread's current section of ours has its frame: the stack
 * pointer of the trampoline (or the hit, on the C paths), below which the
 * handlers run, and whose word below holds a hit key (regs.h).  Written
 * before the section begins; meaningful while the count says "ours". */
extern __thread uintptr_t djp_rcu_entry_sp __attribute__((tls_model("initial-exec")));

/* How a section was entered, for djp_rcu_exit; 0: not entered, because the
 * thread is already inside one of our handlers (the caller counts a miss). */
#define DJP_RCU_ENTERED 1
#define DJP_RCU_ENTERED_EXITING 2

static inline void djp_rcu_mb_slave(void)
{
	if (__builtin_expect(urcu_bp_has_sys_membarrier, 1))
		cmm_barrier();
	else
		cmm_smp_mb();
}

/* Slow paths (rcu.c): register the thread, or enter on its way out. */
struct urcu_bp_reader *djp_rcu_register(bool in_lean);
/* The thread is inside a section of ours, at a hit whose frame is at
 * `frame`, or in connect/disconnect (frame 0): end that section if it was
 * left by a jump (a handler, or a signal handler that interrupted one,
 * that siglongjmp'd out); true if it was. */
bool djp_rcu_recover(uintptr_t frame);
/* The same, from a signal handler that interrupted the thread. */
void djp_rcu_recover_interrupted(const void *ucontext);
int djp_rcu_enter_exiting(void);
void djp_rcu_exit_exiting(void);
bool djp_rcu_exiting_inside(void);

/* Enter a read-side section for running handlers of the hit at `frame`
 * (whose word below is its key).  `in_lean` says the caller is a lean
 * trampoline, which saved no vector registers. */
static inline int djp_rcu_enter(bool in_lean, uintptr_t frame)
{
	struct urcu_bp_reader *r = djp_rcu_reader;
	unsigned long tmp;

	if (__builtin_expect(r == &djp_rcu_unregistered, 0) && !(r = djp_rcu_register(in_lean)))
		return djp_rcu_enter_exiting();
	cmm_barrier();
	tmp = CMM_LOAD_SHARED(r->ctr);
	if (__builtin_expect((tmp & URCU_BP_GP_CTR_NEST_MASK) >= DJP_RCU_OURS, 0)) {
		if (!djp_rcu_recover(frame))
			return 0;
		tmp = CMM_LOAD_SHARED(r->ctr);
	}
	djp_rcu_entry_sp = frame;
	cmm_barrier(); /* a signal handler that sees the count sees the frame */
	if (__builtin_expect(!(tmp & URCU_BP_GP_CTR_NEST_MASK), 1))
		CMM_STORE_SHARED(r->ctr, CMM_LOAD_SHARED(urcu_bp_gp.ctr) + DJP_RCU_OURS - URCU_BP_GP_COUNT);
	else /* inside the application's own rcu_read_lock: nest */
		CMM_STORE_SHARED(r->ctr, tmp + DJP_RCU_OURS);
	djp_rcu_mb_slave();
	return DJP_RCU_ENTERED;
}

static inline void djp_rcu_exit(int how)
{
	if (__builtin_expect(how == DJP_RCU_ENTERED, 1)) {
		struct urcu_bp_reader *r = djp_rcu_reader;
		djp_rcu_mb_slave();
		CMM_STORE_SHARED(r->ctr, CMM_LOAD_SHARED(r->ctr) - DJP_RCU_OURS);
		cmm_barrier();
	} else {
		djp_rcu_exit_exiting();
	}
}

/* True inside a handler of ours on this thread. */
static inline bool djp_rcu_inside(void)
{
	struct urcu_bp_reader *r = djp_rcu_reader;
	if (r != &djp_rcu_unregistered)
		return (CMM_LOAD_SHARED(r->ctr) & URCU_BP_GP_CTR_NEST_MASK) >= DJP_RCU_OURS;
	return djp_rcu_exiting_inside();
}

/* Wait until every section that began before the call has ended. */
void djp_rcu_synchronize(void);

/*
 * What a lean trampoline needs to inline the fast path: the %fs offsets of
 * djp_rcu_reader and djp_rcu_entry_sp (the same for every thread: static
 * TLS), the address of
 * the grace-period counter and what to add to it, and whether the reader
 * must issue full barriers itself (no membarrier system call).
 */
struct djp_rcu_fast {
	intptr_t reader_tls;
	intptr_t entry_sp_tls;
	const unsigned long *gp_ctr;
	unsigned long enter_add;
	bool need_mb;
};
void djp_rcu_fast_path(struct djp_rcu_fast *out);

/* pthread_atfork, around the engine's own handlers. */
void djp_rcu_fork_prepare(void);
void djp_rcu_fork_parent(void);
void djp_rcu_fork_child(void);

#endif
