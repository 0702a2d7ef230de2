// SPDX-License-Identifier: GPL-2.0
/*
 * djp_kbench.ko: djprobe.ko's costs inside the kernel, measured side by
 * side in one run and printed as ratios (make kbench).
 *
 *  - a disabled marker against a bare 6-byte NOP (nopw 0x0(%rax,%rax,1))
 *    in the same loop shape: both an asm statement taking the loop counter,
 *    so the only difference is the marker's record, which costs nothing;
 *    and against a disabled tracepoint taking the same counter (its static
 *    key's 5-byte NOP, with the call block out of line);
 *  - an armed marker with an empty handler against the kernel's own kprobe
 *    on the same kind of NOP site: optimised (register_kprobe, then waiting
 *    until kprobes has put its jump on the site) and unoptimised
 *    (a kprobe with a post_handler, which kprobes never optimise); and
 *    against a tracepoint with an empty probe (register_trace_*);
 *  - a recorded event against a trace event: when the `recorded` parameter
 *    is written, a marker that `djp trace -k` has armed (its handler writes
 *    the event into /dev/djprobe's per-CPU ring) against a tracepoint whose
 *    trace event is enabled in tracefs (written into ftrace's ring buffer),
 *    each with a reader draining its rings (bench/kmod/recorded.sh);
 *  - connecting and disconnecting 1,000 sites in one call with IPI sync.
 *
 * The tracepoints are the module's own (djp_kbench_trace.h), one per way
 * they are measured, each alone in a loop of the same shape as its marker.
 *
 * Every loop is timed with ktime_get_ns over a count calibrated to run at
 * least 5 ms, and the variants take turns, round after round, so a slow
 * spell of the host (TCG, a neighbour) falls on all of them; each figure is
 * the median of its rounds.  Each kprobe has a site of its own: two kprobes
 * at one address share one probe, and the post_handler would keep both
 * unoptimised.
 *
 * Rows are "row NAME | VALUE | TARGET | STATUS", as bench/run.sh prints.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/kprobes.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/sort.h>
#include <linux/string.h>
#include <djprobe/djprobe.h>
#include <djprobe/marker.h>

#define CREATE_TRACE_POINTS
#include "djp_kbench_trace.h"

#define KB_ROUNDS 7
#define KB_MIN_NS (5 * NSEC_PER_MSEC)

#define KB_NOP6 "nopw 0x0(%%rax,%%rax,1)"

static noinline void kb_loop_nop(u64 n)
{
	u64 i;

	for (i = 0; i < n; i++)
		asm volatile(KB_NOP6 :: "r"(i));
}

static noinline void kb_loop_marker(u64 n)
{
	u64 i;

	for (i = 0; i < n; i++)
		MARK(kb_disabled, "i=%llu", i);
}

static noinline void kb_loop_armed(u64 n)
{
	u64 i;

	for (i = 0; i < n; i++)
		MARK(kb_armed, "i=%llu", i);
}

static noinline void kb_loop_tp_off(u64 n)
{
	u64 i;

	for (i = 0; i < n; i++)
		trace_kb_tp_off(i);
}

static noinline void kb_loop_tp_probe(u64 n)
{
	u64 i;

	for (i = 0; i < n; i++)
		trace_kb_tp_probe(i);
}

static noinline void kb_loop_rec(u64 n)
{
	u64 i;

	for (i = 0; i < n; i++)
		MARK(kb_rec, "i=%llu", i);
}

static noinline void kb_loop_tp_event(u64 n)
{
	u64 i;

	for (i = 0; i < n; i++)
		trace_kb_tp_event(i);
}

/* The kprobes' sites: labels on the NOP, one function each, never cloned. */
extern const u8 kb_kp_opt_site[], kb_kp_unopt_site[];

static noinline __noclone void kb_loop_kp_opt(u64 n)
{
	u64 i;

	for (i = 0; i < n; i++)
		asm volatile("kb_kp_opt_site: " KB_NOP6 :: "r"(i));
}

static noinline __noclone void kb_loop_kp_unopt(u64 n)
{
	u64 i;

	for (i = 0; i < n; i++)
		asm volatile("kb_kp_unopt_site: " KB_NOP6 :: "r"(i));
}

/* 1,000 markers, never run: only arming and disarming them is measured. */
#define KB_M(a, b, c) MARK(kb_many_##a##b##c, "")
#define KB_M10(a, b) KB_M(a, b, 0); KB_M(a, b, 1); KB_M(a, b, 2); KB_M(a, b, 3); KB_M(a, b, 4); \
	KB_M(a, b, 5); KB_M(a, b, 6); KB_M(a, b, 7); KB_M(a, b, 8); KB_M(a, b, 9)
#define KB_M100(a) KB_M10(a, 0); KB_M10(a, 1); KB_M10(a, 2); KB_M10(a, 3); KB_M10(a, 4); \
	KB_M10(a, 5); KB_M10(a, 6); KB_M10(a, 7); KB_M10(a, 8); KB_M10(a, 9)

static bool kb_run_many;
static noinline void kb_many(void)
{
	if (!READ_ONCE(kb_run_many))
		return;
	KB_M100(0); KB_M100(1); KB_M100(2); KB_M100(3); KB_M100(4);
	KB_M100(5); KB_M100(6); KB_M100(7); KB_M100(8); KB_M100(9);
}

static void kb_empty(const struct djp_hit *hit, void *data)
{
}

static void kb_tp_empty(void *data, u64 i)
{
}

static int kb_kp_pre(struct kprobe *p, struct pt_regs *regs)
{
	return 0;
}

static void kb_kp_post(struct kprobe *p, struct pt_regs *regs, unsigned long flags)
{
}

/* ---- timing ------------------------------------------------------------- */

struct kb_variant {
	const char *name;
	void (*loop)(u64 n);
	u64 n;
	u64 ns_per_k[KB_ROUNDS];	/* ns per 1,000 iterations */
	u64 median;
};

static int kb_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return (x > y) - (x < y);
}

static u64 kb_time(void (*loop)(u64), u64 n)
{
	u64 t0 = ktime_get_ns();

	loop(n);
	return ktime_get_ns() - t0;
}

static void kb_measure(struct kb_variant *v, unsigned int nv)
{
	unsigned int i, r;

	for (i = 0; i < nv; i++) {
		v[i].n = 1000;
		while (kb_time(v[i].loop, v[i].n) < KB_MIN_NS && v[i].n < (1ull << 32))
			v[i].n *= 2;
	}
	for (r = 0; r < KB_ROUNDS; r++) {
		for (i = 0; i < nv; i++) {
			v[i].ns_per_k[r] = kb_time(v[i].loop, v[i].n) * 1000 / v[i].n;
			cond_resched();
		}
	}
	for (i = 0; i < nv; i++) {
		sort(v[i].ns_per_k, KB_ROUNDS, sizeof(u64), kb_cmp, NULL);
		v[i].median = v[i].ns_per_k[KB_ROUNDS / 2];
	}
}

/* "1.234" from thousandths */
#define KB_FIX(x) (unsigned long long)((x) / 1000), (unsigned long long)((x) % 1000)

static void kb_row_ns(const struct kb_variant *v)
{
	pr_info("row %s, ns per pass (median of %d) | %llu.%03llu | - | -\n", v->name, KB_ROUNDS,
		KB_FIX(v->median));
}

static void kb_row_ratio(const char *name, const struct kb_variant *a, const struct kb_variant *b,
			 unsigned int target_milli, const char *why_not)
{
	u64 ratio = b->median ? a->median * 1000 / b->median : 0;

	if (why_not)
		pr_info("row %s | n/a | <= %u.%02u | %s\n", name, target_milli / 1000,
			target_milli % 1000 / 10, why_not);
	else
		pr_info("row %s | %llu.%03llu | <= %u.%02u | %s\n", name, KB_FIX(ratio),
			target_milli / 1000, target_milli % 1000 / 10,
			ratio <= target_milli ? "ok" : "over");
}

/* ---- kprobes ------------------------------------------------------------ */

/*
 * Whether kprobes has optimised the probe at `site`: its optimiser writes a
 * jmp rel32 (0xe9) over the int3 once it has built the detour, which is
 * what /sys/kernel/debug/kprobes/list reports as [OPTIMIZED] (a module
 * cannot read that file: kernel_read refuses seq_file reads).  The
 * optimiser waits for an RCU-tasks grace period first, seconds under
 * emulation.
 */
static bool kb_wait_optimized(const u8 *site)
{
	unsigned int i;

	for (i = 0; i < 400; i++) {
		if (READ_ONCE(*site) == 0xe9)
			return true;
		msleep(50);
	}
	return false;
}

/* ---- the benchmark ------------------------------------------------------ */

static void kb_disabled_vs_nop(void)
{
	struct kb_variant v[] = {
		{ .name = "disabled marker", .loop = kb_loop_marker },
		{ .name = "nopw 0x0(%rax,%rax,1)", .loop = kb_loop_nop },
		{ .name = "disabled tracepoint (static key NOP)", .loop = kb_loop_tp_off },
	};

	kb_measure(v, ARRAY_SIZE(v));
	kb_row_ns(&v[0]);
	kb_row_ns(&v[1]);
	kb_row_ns(&v[2]);
	kb_row_ratio("disabled marker / nopw, time ratio", &v[0], &v[1], 1050, NULL);
	kb_row_ratio("disabled marker / disabled tracepoint, time ratio", &v[0], &v[2], 1020, NULL);
}

static void kb_armed_vs_kprobes(void)
{
	struct kprobe opt = { .addr = (kprobe_opcode_t *)kb_kp_opt_site, .pre_handler = kb_kp_pre };
	struct kprobe unopt = { .addr = (kprobe_opcode_t *)kb_kp_unopt_site, .pre_handler = kb_kp_pre,
				.post_handler = kb_kp_post };
	struct kb_variant v[] = {
		{ .name = "armed marker, empty handler", .loop = kb_loop_armed },
		{ .name = "optimised kprobe on nopw, empty pre_handler", .loop = kb_loop_kp_opt },
		{ .name = "unoptimised kprobe on nopw (post_handler)", .loop = kb_loop_kp_unopt },
		{ .name = "tracepoint, empty probe", .loop = kb_loop_tp_probe },
	};
	const char *opt_missing = NULL;
	int id, err;

	id = djp_connect("djp_kbench:kb_armed", kb_empty, NULL, 0);
	if (id < 0) {
		pr_info("row armed marker | djp_connect failed: %d | - | error\n", id);
		return;
	}
	err = register_trace_kb_tp_probe(kb_tp_empty, NULL);
	if (err) {
		pr_info("row tracepoint with an empty probe | register_trace_kb_tp_probe failed: %d | - | error\n",
			err);
		goto out_djp;
	}
	err = register_kprobe(&opt);
	if (err) {
		pr_info("row optimised kprobe | register_kprobe failed: %d | - | error\n", err);
		goto out_tp;
	}
	err = register_kprobe(&unopt);
	if (err) {
		pr_info("row unoptimised kprobe | register_kprobe failed: %d | - | error\n", err);
		goto out_opt;
	}
	if (!kb_wait_optimized(kb_kp_opt_site))
		opt_missing = "kprobe not optimised after 20 s";
	if (READ_ONCE(*kb_kp_unopt_site) != 0xcc)
		pr_info("# the post_handler kprobe's site holds %#x, not int3\n", *kb_kp_unopt_site);

	kb_measure(v, ARRAY_SIZE(v));
	kb_row_ns(&v[0]);
	kb_row_ns(&v[1]);
	kb_row_ns(&v[2]);
	kb_row_ns(&v[3]);
	kb_row_ratio("armed marker / tracepoint with an empty probe, time ratio", &v[0], &v[3], 1000, NULL);
	kb_row_ratio("armed marker / optimised kprobe, time ratio", &v[0], &v[1], 1000, opt_missing);
	kb_row_ratio("armed marker / unoptimised kprobe, time ratio", &v[0], &v[2], 1000, NULL);

	unregister_kprobe(&unopt);
out_opt:
	unregister_kprobe(&opt);
out_tp:
	unregister_trace_kb_tp_probe(kb_tp_empty, NULL);
	tracepoint_synchronize_unregister();
out_djp:
	djp_disconnect(id);
}

static void kb_arm_many(void)
{
	u64 arm[KB_ROUNDS], disarm[KB_ROUNDS], run[KB_ROUNDS], t0, t1, t2;
	unsigned int r;
	int id;

	for (r = 0; r < KB_ROUNDS; r++) {
		t0 = ktime_get_ns();
		id = djp_connect("djp_kbench:kb_many_*", kb_empty, NULL, 0);
		t1 = ktime_get_ns();
		if (id < 0) {
			pr_info("row arm 1,000 sites | djp_connect failed: %d | - | error\n", id);
			return;
		}
		t1 = t1 - t0;
		t0 = ktime_get_ns();
		kb_run_many = true;
		kb_many();	/* every site fires once: armed for real */
		kb_run_many = false;
		run[r] = ktime_get_ns() - t0;
		t0 = ktime_get_ns();
		djp_disconnect(id);
		t2 = ktime_get_ns();
		arm[r] = t1;
		disarm[r] = t2 - t0;
	}
	sort(arm, KB_ROUNDS, sizeof(u64), kb_cmp, NULL);
	sort(disarm, KB_ROUNDS, sizeof(u64), kb_cmp, NULL);
	sort(run, KB_ROUNDS, sizeof(u64), kb_cmp, NULL);
	pr_info("# 1,000 sites: arm %llu..%llu us, disarm %llu..%llu us, run once armed %llu..%llu us\n",
		arm[0] / 1000, arm[KB_ROUNDS - 1] / 1000, disarm[0] / 1000, disarm[KB_ROUNDS - 1] / 1000,
		run[0] / 1000, run[KB_ROUNDS - 1] / 1000);
	pr_info("row arm 1,000 sites in one djp_connect, ipi sync, ms (median of %d) | %llu.%03llu | < 10 | %s\n",
		KB_ROUNDS, KB_FIX(arm[KB_ROUNDS / 2] / 1000), arm[KB_ROUNDS / 2] < 10 * NSEC_PER_MSEC ? "ok" : "over");
	pr_info("row disarm them in one djp_disconnect (grace periods included), ms (median of %d) | %llu.%03llu | < 10 | %s\n",
		KB_ROUNDS, KB_FIX(disarm[KB_ROUNDS / 2] / 1000),
		disarm[KB_ROUNDS / 2] < 10 * NSEC_PER_MSEC ? "ok" : "over");
}

static int kb_find_rec(const struct djp_kmarker *m, void *data)
{
	if (!strcmp(m->module, KBUILD_MODNAME) && !strcmp(m->name, "kb_rec")) {
		*(const char **)data = m->how;
		return 1;
	}
	return 0;
}

/*
 * The recorded rows, run when bench/kmod/recorded.sh has armed kb_rec with
 * `djp trace -k` and enabled kb_tp_event's trace event, each with a reader.
 */
static int kb_set_recorded(const char *val, const struct kernel_param *kp)
{
	struct kb_variant v[] = {
		{ .name = "recorded marker (djp trace -k)", .loop = kb_loop_rec },
		{ .name = "trace event into ftrace's ring buffer", .loop = kb_loop_tp_event },
	};
	const char *how = "not found";

	djp_for_each_marker(kb_find_rec, &how);
	if (strcmp(how, "jump") || !trace_kb_tp_event_enabled()) {
		pr_info("row recorded marker / trace event | kb_rec is %s, kb_tp_event is %s | - | error\n", how,
			trace_kb_tp_event_enabled() ? "enabled" : "disabled");
		return -EINVAL;
	}
	kb_measure(v, ARRAY_SIZE(v));
	kb_row_ns(&v[0]);
	kb_row_ns(&v[1]);
	kb_row_ratio("recorded marker / trace event, time ratio", &v[0], &v[1], 1000, NULL);
	return 0;
}

static const struct kernel_param_ops kb_recorded_ops = { .set = kb_set_recorded };
module_param_cb(recorded, &kb_recorded_ops, NULL, 0200);
MODULE_PARM_DESC(recorded, "write 1: time kb_rec, armed by djp trace -k, against kb_tp_event, enabled in tracefs");

static int __init kb_init(void)
{
	kb_disabled_vs_nop();
	kb_armed_vs_kprobes();
	kb_arm_many();
	return 0;
}

static void __exit kb_exit(void)
{
}

module_init(kb_init);
module_exit(kb_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("djprobe.ko benchmark: markers against NOPs, tracepoints and kprobes, arming 1,000 sites");
