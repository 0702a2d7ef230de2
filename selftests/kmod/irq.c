// SPDX-License-Identifier: GPL-2.0
/*
 * A marker in hard interrupt context: an hrtimer callback, firing every
 * 100 us on one CPU, runs the marker ks_irq_tick while this test connects
 * and disconnects a probe on it as fast as it can, rotating through IPI
 * sync, stop_machine and the kprobe fallback.
 *
 * The callback counts its passes with the same windows as the stress loops
 * (kselftest.h), with the one probe in slot 0: a tick that ran while it
 * was connected must have hit the handler exactly once, and a tick that ran
 * while it was not, never.  The handler also checks where it runs: in the
 * context that hit the marker, a hard interrupt.  The arming happens while
 * the timer keeps firing, so the int3 bootstrap is hit from interrupts
 * mid-way, which is the case this test exists for.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/hrtimer.h>
#include <linux/jiffies.h>
#include <linux/preempt.h>
#include <djprobe/marker.h>
#include "kselftest.h"

#define KS_IRQ_PERIOD_NS (100 * NSEC_PER_USEC)

static struct hrtimer ks_timer;
static u32 ks_irq_window;
/* Written in the timer's context only (the callback, and the handler it runs). */
static u64 ks_irq_ticks, ks_irq_hits, ks_irq_in_window, ks_irq_wrong;
static u64 ks_irq_bad_hit;
/* The last wrong tick, for the log: its window, its hits, the arming. */
static u32 ks_irq_wrong_window;
static u64 ks_irq_wrong_delta;
static unsigned int ks_irq_how, ks_irq_wrong_how;

static void ks_irq_handler(const struct djp_hit *hit, void *data)
{
	if (!in_hardirq() || djp_hit_arg(hit, 0) != ks_irq_ticks)
		ks_irq_bad_hit++;
	ks_irq_hits += KS_SLOT_HIT(0);
}

static enum hrtimer_restart ks_irq_tick(struct hrtimer *timer)
{
	u32 before = READ_ONCE(ks_irq_window);
	u64 h0 = ks_irq_hits;

	barrier();
	MARK(ks_irq_tick, "tick=%llu", ks_irq_ticks);
	barrier();
	if (READ_ONCE(ks_irq_window) == before) {
		ks_irq_in_window += !!KS_STABLE(before);
		if (ks_window_wrong(before, ks_irq_hits - h0)) {
			ks_irq_wrong++;
			ks_irq_wrong_window = before;
			ks_irq_wrong_delta = ks_irq_hits - h0;
			ks_irq_wrong_how = READ_ONCE(ks_irq_how);
		}
	}
	ks_irq_ticks++;
	hrtimer_forward_now(timer, ns_to_ktime(KS_IRQ_PERIOD_NS));
	return HRTIMER_RESTART;
}

void ks_irq_run(void)
{
	static const char *const sync[] = { "ipi", "stop_machine", NULL };
	unsigned long end = jiffies + msecs_to_jiffies(ks_duration_ms);
	unsigned long cycles = 0, failures = 0, misses = ks_djprobe_misses();
	int id, first_err = 0;

	hrtimer_init(&ks_timer, CLOCK_MONOTONIC, HRTIMER_MODE_REL_HARD);
	ks_timer.function = ks_irq_tick;
	hrtimer_start(&ks_timer, ns_to_ktime(KS_IRQ_PERIOD_NS), HRTIMER_MODE_REL_HARD);

	while (time_before(jiffies, end) && failures < 10) {
		const char *how = sync[cycles % 3];

		WRITE_ONCE(ks_irq_how, cycles % 3);

		if (how && ks_set_sync(how)) {
			if (!failures++)
				first_err = -ENOENT;
			continue;
		}
		ks_window_set(&ks_irq_window, 0, 0, 1, 0);
		id = djp_connect(KS_MODULE ":ks_irq_tick", ks_irq_handler, NULL,
				 how ? 0 : DJP_FORCE_KPROBE);
		if (id < 0) {
			ks_window_set(&ks_irq_window, 0, 0, 0, 1);
			if (!failures++)
				first_err = id;
			continue;
		}
		ks_window_set(&ks_irq_window, 1, 0, 0, 1);
		usleep_range(500, 2000);
		ks_window_set(&ks_irq_window, 0, 1, 1, 0);
		id = djp_disconnect(id);
		ks_window_set(&ks_irq_window, 0, 0, 0, 1);
		if (id < 0 && !failures++)
			first_err = id;
		cycles++;
	}
	hrtimer_cancel(&ks_timer);
	ks_set_sync("ipi");

	ks_diag("hrtimer: %llu ticks, %lu arm cycles, %llu ticks while connected, %lu misses by djprobe",
		ks_irq_ticks, cycles, ks_irq_in_window, ks_djprobe_misses() - misses);
	if (failures)
		ks_diag("hrtimer: %lu failed calls, the first: %d", failures, first_err);
	if (ks_irq_wrong)
		ks_diag("hrtimer: %llu wrong ticks, the last with the probe %s, %s, %llu hits",
			ks_irq_wrong, KS_STABLE(ks_irq_wrong_window) ? "connected" : "not connected",
			sync[ks_irq_wrong_how] ?: "kprobe fallback", ks_irq_wrong_delta);
	ks_tap(!failures && !ks_irq_wrong && !ks_irq_bad_hit && ks_irq_in_window > 0,
	       "hrtimer marker counted exactly while armed, handler in hard interrupt%s",
	       failures ? " # a patching call failed" : ks_irq_wrong ? " # counts differ" :
	       ks_irq_bad_hit ? " # the handler ran outside the interrupt or saw another tick" :
	       !ks_irq_in_window ? " # no tick while connected" : "");
}
