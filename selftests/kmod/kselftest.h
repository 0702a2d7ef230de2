/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the parts of djp_kselftest.ko share: the TAP printer, the window a
 * patcher publishes around each site it connects, and the tests.
 *
 * A window is how a test knows which probes were connected for the whole
 * of a pass over a site, which is what makes "each handler ran exactly once
 * per pass" a check that can fail.  A patcher holds up to three probes, in
 * slots 0-2; the handler of slot k adds 1 << 16k to the site's hit counter,
 * so one counter keeps the slots apart.  Around each probe the patcher
 * writes the window of every site it covers:
 *
 *   1. mark slot k "moving" on the sites, 2. djp_connect, 3. mark it
 *   "stable" (connected) instead; and to release: 4. mark it "moving",
 *   5. djp_disconnect, 6. clear it.
 *
 * A loop reads the window before and after running a marker.  When the two
 * reads are the same word (a generation changes on every write), each
 * stable slot must have hit exactly once and each slot that is neither
 * stable nor moving not at all: its probe was not connected at any time
 * the marker could have run (connect had returned before the stable mark;
 * disconnect had returned before the clear, and never runs a handler
 * after).  A moving slot may or may not have hit.
 */
#ifndef DJP_KSELFTEST_H
#define DJP_KSELFTEST_H

#include <linux/atomic.h>
#include <linux/compiler.h>
#include <linux/printk.h>
#include <linux/types.h>
#include <djprobe/djprobe.h>

#define KS_MODULE "djp_kselftest"
#define KS_NSITES 64

/* ---- windows ------------------------------------------------------------ */

#define KS_SLOTS 3
#define KS_STABLE(w) ((w) & 7u)
#define KS_MOVING(w) (((w) >> 3) & 7u)
#define KS_SLOT_HIT(slot) (1ull << (16 * (slot)))

/* Only the patcher writes a window: sets and clears slot bits, and counts
 * a generation. */
static inline void ks_window_set(u32 *window, u32 stable_set, u32 stable_clear, u32 moving_set,
				 u32 moving_clear)
{
	u32 w = READ_ONCE(*window);
	u32 stable = (KS_STABLE(w) | stable_set) & ~stable_clear;
	u32 moving = (KS_MOVING(w) | moving_set) & ~moving_clear;

	WRITE_ONCE(*window, (((w >> 6) + 1) << 6) | (moving << 3) | stable);
}

/* 0 when a pass whose hit counter moved by `delta` agrees with the window
 * it saw unchanged, else 1. */
static __always_inline unsigned int ks_window_wrong(u32 window, u64 delta)
{
	unsigned int k, wrong = 0;

	for (k = 0; k < KS_SLOTS; k++) {
		u64 hits = (delta >> (16 * k)) & 0xffff;

		if (KS_MOVING(window) & (1u << k))
			continue;
		if (hits != !!(KS_STABLE(window) & (1u << k)))
			wrong = 1;
	}
	return wrong;
}

/* ---- TAP ---------------------------------------------------------------- */

__printf(2, 3) void ks_tap(bool ok, const char *fmt, ...);
#define ks_diag(fmt, ...) pr_info("# " fmt "\n", ##__VA_ARGS__)

/* ---- shared helpers ----------------------------------------------------- */

/* Writes djprobe.ko's sync parameter ("ipi" or "stop_machine"). */
int ks_set_sync(const char *how);
unsigned long ks_read_number(const char *path);
unsigned long ks_djprobe_misses(void);
/* Milliseconds each stress phase runs (module parameter duration_ms). */
extern unsigned int ks_duration_ms;

/* ---- the tests, each printing its own TAP lines ------------------------- */

#define KS_STRESS_TESTS 2	/* lines per stress mode */
#define KS_STRESS_MODES 4
void ks_stress_run_all(void);
void ks_irq_run(void);			/* 1 line */
void ks_sites_restored(void);		/* 1 line */
void ks_covered_run(void);		/* 2 lines */
void ks_noinstr_run(void);		/* 1 line */
void ks_argkinds_run(void);		/* 2 lines */
void ks_patterns_run(void);		/* 1 line */
void ks_reload_exit(void);

/* ---- stress_sites.c: the 64 sites and the loops that run them ----------- */

struct ks_worker {
	unsigned int id;
	u64 iter;			/* the pass under way; the handler checks it */
	u64 hits[KS_NSITES];		/* the handlers', on this worker's thread */
	u64 passes;
	u64 in_window;			/* passes with a stable probe */
	u64 wrong_count;		/* passes whose hits disagree with the window */
	u64 wrong_reg;			/* a value kept live across markers changed */
	u64 wrong_arg;			/* the handler saw another iteration */
	u64 handler_hits;
	int last_wrong_site;		/* the last wrong pass: where, what */
	u32 last_wrong_window;
	bool last_wrong_quiet;		/* no patching call anywhere meanwhile */
	u64 last_wrong_delta;
};

extern u32 ks_site_window[KS_NSITES];
/* Odd while the patcher is inside djp_connect or djp_disconnect, counted
 * up on entry and exit: tells the log whether a wrong pass ran while any
 * other site was being patched. */
extern u32 ks_patching;
int ks_worker_loop(void *worker);
/* The handler every stress probe connects: counts, checks the arguments and
 * clobbers every caller-saved register and the flags. */
void ks_stress_handler(const struct djp_hit *hit, void *data);
extern struct ks_worker **ks_workers;
extern unsigned int ks_nworkers;
extern atomic_t ks_stray_hits;

#endif /* DJP_KSELFTEST_H */
