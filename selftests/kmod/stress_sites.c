// SPDX-License-Identifier: GPL-2.0
/*
 * The 64 marker sites of the stress test, and the loop each worker kthread
 * runs over them.
 *
 * A pass runs the sites ks_site_00 to ks_site_77 (two octal digits, so that
 * a glob such as "ks_site_[257][0-3]" names a random rectangle of them and
 * one djp_connect arms a batch).  Around each marker the loop reads the
 * site's window and its own hit counter for the site, and checks the two
 * against each other (kselftest.h).  The handler runs on the worker's own
 * thread with preemption disabled, so a worker's counters have one writer
 * and need no atomics.
 *
 * Between passes the loop reports an RCU-tasks quiescent state: a kthread
 * that only ever calls cond_resched() is never seen as voluntarily
 * switching, so synchronize_rcu_tasks (which kprobes' optimiser and
 * trampoline users wait for) would wait for ever.
 *
 * Registers.  The handler clobbers every caller-saved register and the
 * flags, which a trampoline that saves too little would let through into
 * the loop.  Nine values, derived from the pass number, are pinned to rax,
 * rcx, rdx, rsi, rdi and r8-r11 by empty asm statements on both sides of
 * every marker, so they are live in exactly those registers as the marker
 * runs, and are checked at the end of the pass.  (The flags cannot be
 * checked from C: GCC assumes every x86 asm statement clobbers them, so no
 * compiled code keeps a flag live across a marker.)
 */
#include <linux/kernel.h>
#include <linux/kthread.h>
#include <linux/sched.h>
#include <djprobe/marker.h>
#include "kselftest.h"

u32 ks_site_window[KS_NSITES];
u32 ks_patching;
struct ks_worker **ks_workers;
unsigned int ks_nworkers;
atomic_t ks_stray_hits = ATOMIC_INIT(0);

void ks_stress_handler(const struct djp_hit *hit, void *data)
{
	u64 site = djp_hit_arg(hit, 0);
	u64 iter = djp_hit_arg(hit, 1);
	u64 wid = djp_hit_arg(hit, 2);
	unsigned long slot = (unsigned long)data;
	struct ks_worker *w;

	if (djp_hit_nargs(hit) != 3 || site >= KS_NSITES || wid >= READ_ONCE(ks_nworkers) ||
	    slot >= KS_SLOTS) {
		atomic_inc(&ks_stray_hits);
	} else {
		w = ks_workers[wid];
		if (iter != READ_ONCE(w->iter))
			w->wrong_arg++;
		w->hits[site] += KS_SLOT_HIT(slot);
		w->handler_hits++;
	}
	/* Values no handler may leave behind for its caller to see. */
	asm volatile("mov $0x5a5a5a5a5a5a5a5a, %%rax\n\t"
		     "mov %%rax, %%rcx\n\t"
		     "mov %%rax, %%rdx\n\t"
		     "mov %%rax, %%rsi\n\t"
		     "mov %%rax, %%rdi\n\t"
		     "mov %%rax, %%r8\n\t"
		     "mov %%rax, %%r9\n\t"
		     "mov %%rax, %%r10\n\t"
		     "mov %%rax, %%r11\n\t"
		     "add %%rax, %%rax\n\t"	/* CF, OF, SF, ZF, PF, AF all change */
		     ::: "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11", "cc", "memory");
}

#define KS_PIN() asm volatile("" : "+r"(ra), "+r"(rc), "+r"(rd), "+r"(rs), "+r"(rD), \
			      "+r"(r8), "+r"(r9), "+r"(r10), "+r"(r11))

#define KS_SITE(x, y)								\
	do {									\
		const unsigned int s = (x) * 8 + (y);				\
		u32 before = READ_ONCE(ks_site_window[s]);			\
		u32 patching = READ_ONCE(ks_patching);				\
		u64 h0 = READ_ONCE(w->hits[s]);					\
										\
		KS_PIN();							\
		MARK(ks_site_##x##y, "site=%u iter=%llu worker=%u", s, iter, wid); \
		KS_PIN();							\
		if (READ_ONCE(ks_site_window[s]) == before) {			\
			w->in_window += !!KS_STABLE(before);			\
			u64 delta = READ_ONCE(w->hits[s]) - h0;			\
										\
			if (ks_window_wrong(before, delta)) {			\
				w->wrong_count++;				\
				w->last_wrong_site = s;				\
				w->last_wrong_window = before;			\
				w->last_wrong_delta = delta;			\
				w->last_wrong_quiet = !(patching & 1) &&	\
					READ_ONCE(ks_patching) == patching;	\
			}							\
		}								\
	} while (0)

#define KS_ROW(x)								\
	do {									\
		KS_SITE(x, 0); KS_SITE(x, 1); KS_SITE(x, 2); KS_SITE(x, 3);	\
		KS_SITE(x, 4); KS_SITE(x, 5); KS_SITE(x, 6); KS_SITE(x, 7);	\
	} while (0)

#define KS_SEED(k) (iter * 0x9e3779b97f4a7c15ull + (k))

static noinline void ks_pass(struct ks_worker *w, u64 iter, unsigned int wid)
{
	register u64 ra asm("rax") = KS_SEED(1);
	register u64 rc asm("rcx") = KS_SEED(2);
	register u64 rd asm("rdx") = KS_SEED(3);
	register u64 rs asm("rsi") = KS_SEED(4);
	register u64 rD asm("rdi") = KS_SEED(5);
	register u64 r8 asm("r8") = KS_SEED(8);
	register u64 r9 asm("r9") = KS_SEED(9);
	register u64 r10 asm("r10") = KS_SEED(10);
	register u64 r11 asm("r11") = KS_SEED(11);

	KS_ROW(0); KS_ROW(1); KS_ROW(2); KS_ROW(3);
	KS_ROW(4); KS_ROW(5); KS_ROW(6); KS_ROW(7);

	KS_PIN();
	if (ra != KS_SEED(1) || rc != KS_SEED(2) || rd != KS_SEED(3) || rs != KS_SEED(4) ||
	    rD != KS_SEED(5) || r8 != KS_SEED(8) || r9 != KS_SEED(9) || r10 != KS_SEED(10) ||
	    r11 != KS_SEED(11))
		w->wrong_reg++;
}

int ks_worker_loop(void *worker)
{
	struct ks_worker *w = worker;

	while (!kthread_should_stop()) {
		WRITE_ONCE(w->iter, w->iter + 1);
		ks_pass(w, w->iter, w->id);
		w->passes++;
		cond_resched_tasks_rcu_qs();
	}
	return 0;
}
