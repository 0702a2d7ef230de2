/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the parts of djp_kselftest.ko share: the TAP printer, the window a
 * patcher publishes around each site it connects, and the tests.
 *
 * A window is how a test knows a site was connected for the whole of a
 * pass over it, which is what makes "the handler ran exactly once per pass"
 * a check that can fail.  The patcher connects a probe, and only after
 * djp_connect has returned (every CPU serialised against the new text) it
 * raises the site's holder count; it lowers the count before it calls
 * djp_disconnect.  The count and a generation that changes on every update
 * share one word, so a loop that reads the same word before and after a
 * marker, with holders > 0, ran that marker while the probe was connected,
 * and its handler count must have moved by exactly the number of holders.
 * Passes that straddle a change are not counted either way.
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

#define KS_HOLDERS(w) ((w) & 0xffu)

/* Only the patcher writes a window. */
static inline void ks_window_change(u32 *window, int delta)
{
	u32 w = READ_ONCE(*window);

	WRITE_ONCE(*window, (((w >> 8) + 1) << 8) | (KS_HOLDERS(w) + delta));
}

/* ---- TAP ---------------------------------------------------------------- */

__printf(2, 3) void ks_tap(bool ok, const char *fmt, ...);
#define ks_diag(fmt, ...) pr_info("# " fmt "\n", ##__VA_ARGS__)

/* ---- shared helpers ----------------------------------------------------- */

/* Writes djprobe.ko's sync parameter ("ipi" or "stop_machine"). */
int ks_set_sync(const char *how);
/* Milliseconds each stress phase runs (module parameter duration_ms). */
extern unsigned int ks_duration_ms;

/* ---- the tests, each printing its own TAP lines ------------------------- */

#define KS_STRESS_TESTS 2	/* lines per stress mode */
#define KS_STRESS_MODES 4
void ks_stress_run_all(void);
void ks_irq_run(void);			/* 1 line */
void ks_sites_restored(void);		/* 1 line */
void ks_reload_exit(void);

/* ---- stress_sites.c: the 64 sites and the loops that run them ----------- */

struct ks_worker {
	unsigned int id;
	u64 iter;			/* the pass under way; the handler checks it */
	u64 hits[KS_NSITES];		/* the handler's, on this worker's thread */
	u64 passes;
	u64 in_window;			/* passes wholly inside a window */
	u64 wrong_count;		/* of those, hits that moved by != holders */
	u64 wrong_reg;			/* a value kept live across markers changed */
	u64 wrong_arg;			/* the handler saw another iteration */
	int last_wrong_site;
};

extern u32 ks_site_window[KS_NSITES];
int ks_worker_loop(void *worker);
/* The handler every stress probe connects: counts, checks the arguments and
 * clobbers every caller-saved register and the flags. */
void ks_stress_handler(const struct djp_hit *hit, void *data);
extern struct ks_worker **ks_workers;
extern unsigned int ks_nworkers;
extern atomic_t ks_stray_hits;

#endif /* DJP_KSELFTEST_H */
