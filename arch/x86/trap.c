/*
 * The SIGTRAP handler: int3 probes, sites in flight, stale traps.
 *
 * One handler, installed once with SA_SIGINFO | SA_ONSTACK | SA_NODEFER, and
 * kept installed: an application's later sigaction(SIGTRAP) is recorded as
 * the handler we chain to (lib/real_signal.c, kernel/sigmask.c).  On a trap, the
 * int3 that fired is at RIP-1.  The handler pins the current trap table (an
 * immutable array sorted by address, published by pointer swap), binary-
 * searches it for RIP-1, and:
 *
 *  - DJP_TRAP_JUMP: the site is being armed with a jump; emulate the jump
 *    by setting RIP to the trampoline;
 *  - DJP_TRAP_SKIP: the site is being disarmed; emulate the NOP (RIP =
 *    site + length), or for an instruction probe run the displaced
 *    instruction out of line (RIP = its relocated copy, `target`, which
 *    jumps back after it);
 *  - DJP_TRAP_PROBE: an int3 probe; build the register view from the
 *    ucontext, run the handlers, resume after the site (a NOP) or at the
 *    displaced instruction's copy (an instruction): never single-stepped,
 *    as the kernel's boosted kprobes do.
 *
 * An address that is not in the table, whose byte is no longer 0xcc, is a
 * stale trap: the int3 was removed after this thread hit it and before the
 * handler looked.  Rewinding RIP by one re-executes what is there now.
 * Anything else is somebody else's trap and goes to the previous handler
 * (or gets the default action, as if we had never been here).  int3 is
 * reported with si_code SI_KERNEL; a SIGTRAP sent by kill() is never ours.
 *
 * Table lifetime, after SRCU: handlers count themselves in inflight[phase].
 * The publisher swaps the table pointer, flips the phase, and waits for the
 * old phase's count to drain before freeing the old table.  A handler that
 * read the phase just before the flip sees it changed after counting itself,
 * and retries in the new phase, so no handler can hold a table that the
 * publisher has stopped waiting for; and handlers arriving all the time,
 * as they do with eight threads on int3 probes, cannot starve the publisher,
 * because they count in the new phase.  The count covers the lookup only:
 * an int3 probe's handlers run after the handler has left it, because a
 * handler may leave by a jump (a siglongjmp out of it, or out of a signal
 * handler that interrupted it) and a count left behind would make the
 * publisher wait forever; what the handlers read is protected by the
 * engine's RCU (kernel/rcu.c).
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <sched.h>

#include "arch/x86/arch.h"
#include "lib/addr_sorted.h"
#include "lib/real_signal.h"

static _Atomic(struct djp_trap_table *) trap_table;
static atomic_long trap_inflight[2];
static atomic_int trap_phase;
static djp_trap_probe_fn probe_fn;

/* (the search djprobe.ko's die notifier makes too) */
_Static_assert(offsetof(struct djp_trap_entry, addr) == 0, "a trap entry begins with its address");
static const struct djp_trap_entry *lookup(const struct djp_trap_table *t, uintptr_t addr)
{
	return t ? djp_addr_find(t->e, t->n, sizeof(t->e[0]), addr) : NULL;
}

/* ucontext general registers into struct djp_regs order. */
static const int greg_of[16] = { REG_RAX, REG_RCX, REG_RDX, REG_RSI, REG_RDI, REG_R8,  REG_R9,  REG_R10,
				 REG_R11, REG_RBX, REG_RBP, REG_R12, REG_R13, REG_R14, REG_R15, REG_RSP };

/*
 * Set while this thread runs the handler's own code (not the probe's
 * handlers): what it calls in libc (errno's __errno_location, first of
 * all) may be probed too, by an instruction probe, and a trap there would
 * come back here, and again.  Such a nested trap only moves the thread on,
 * as if nobody listened; it touches no libc itself.
 */
static __thread int trapping __attribute__((tls_model("initial-exec")));

/* Count this handler in the table's current phase (see the top). */
static int phase_enter(void)
{
	for (;;) {
		int phase = atomic_load(&trap_phase);
		atomic_fetch_add(&trap_inflight[phase], 1);
		if (atomic_load(&trap_phase) == phase)
			return phase;
		atomic_fetch_sub(&trap_inflight[phase], 1);
	}
}

static void nested_trap(uintptr_t addr, greg_t *g)
{
	const struct djp_trap_entry *e;
	int phase = phase_enter();
	e = lookup(atomic_load_explicit(&trap_table, memory_order_acquire), addr);
	if (e)
		g[REG_RIP] = (greg_t)(e->target ? e->target : addr + e->len);
	else if (*(volatile uint8_t *)addr != X86_INT3)
		g[REG_RIP] = (greg_t)addr; /* stale */
	/* else: not ours, and nobody to forward to from here: it traps
	 * again once the outer handler has returned */
	atomic_fetch_sub(&trap_inflight[phase], 1);
}

static void trap_handler(int sig, siginfo_t *info, void *ucv)
{
	ucontext_t *uc = ucv;
	greg_t *g = uc->uc_mcontext.gregs;
	uintptr_t addr = (uintptr_t)g[REG_RIP] - 1;
	const struct djp_trap_entry *e;
	int saved_errno;

	if (trapping && info->si_code == SI_KERNEL) {
		nested_trap(addr, g);
		return;
	}
	trapping = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	saved_errno = errno;
	if (info->si_code != SI_KERNEL) {
		trapping = 0;
		djp_kept_forward(sig, info, ucv);
		errno = saved_errno;
		return;
	}
	int phase = phase_enter();
	e = lookup(atomic_load_explicit(&trap_table, memory_order_acquire), addr);
	if (e && e->kind == DJP_TRAP_PROBE) {
		/* Out of the table's phase before the handlers run: a handler
		 * may leave by a jump, and must not leave the count behind
		 * (the publisher would wait for it forever).  The handler list
		 * has its own protection (kernel/rcu.c). */
		struct {
			uintptr_t key; /* the word below the hit names its site */
			struct djp_hit hit;
		} h;
		/* past the NOP, or to the displaced instruction's copy */
		uintptr_t resume = e->target ? e->target : addr + e->len;
		h.key = (uintptr_t)e->site | DJP_HIT_KEY_SITE;
		atomic_fetch_sub(&trap_inflight[phase], 1);
		for (int i = 0; i < 16; i++)
			h.hit.regs.r[i] = (uint64_t)g[greg_of[i]];
		h.hit.regs.r[DJP_REG_RIP] = addr;
		g[REG_RIP] = (greg_t)resume;
		trapping = 0; /* the handlers guard themselves (kernel/dispatch.c) */
		probe_fn(&h.hit);
		errno = saved_errno;
		return;
	}
	if (e)
		g[REG_RIP] = (greg_t)(e->target ? e->target : addr + e->len);
	atomic_fetch_sub(&trap_inflight[phase], 1);
	trapping = 0;
	if (!e) {
		if (*(volatile uint8_t *)addr != X86_INT3)
			g[REG_RIP] = (greg_t)addr; /* stale: re-execute what is there now */
		else
			djp_kept_forward(sig, info, ucv);
	}
	errno = saved_errno;
}

int arch_trap_init(djp_trap_probe_fn fn)
{
	probe_fn = fn;
	return djp_keep_signal(SIGTRAP, trap_handler);
}

void arch_trap_publish(struct djp_trap_table *t)
{
	struct djp_trap_table *old = atomic_exchange(&trap_table, t);
	int phase = atomic_load(&trap_phase);
	atomic_store(&trap_phase, !phase);
	while (atomic_load(&trap_inflight[phase]))
		sched_yield();
	free(old);
}

void arch_serialize(void)
{
	unsigned a = 0, b, c = 0, d;
	__asm__ __volatile__("cpuid" : "+a"(a), "=b"(b), "+c"(c), "=d"(d)::"memory");
}
