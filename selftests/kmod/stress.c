// SPDX-License-Identifier: GPL-2.0
/*
 * The concurrent patching stress: 4 worker kthreads per CPU run passes over
 * the 64 sites (stress_sites.c) while this file's patcher connects and
 * disconnects random batches of them, in four modes: IPI sync,
 * stop_machine, the kprobe fallback, and all three mixed (the sync
 * parameter switched between batches, DJP_FORCE_KPROBE on some probes).
 *
 * The patcher holds up to three probes at once, one per slot, so a site may
 * have several probes connected, connecting and disconnecting at once.
 * Each batch is one djp_connect of a glob naming a random rectangle of
 * sites ("ks_site_[0357][16]"), held for a random 0-2 ms, then released,
 * the oldest first.  The windows written around each call (kselftest.h)
 * are what make the counts exact.
 *
 * A mode passes when some passes ran inside windows and every one of them
 * hit its handlers exactly (the first line), and when no register the
 * loop kept live, no marker argument and no stray hit went wrong (the
 * second).  Errors from djp_connect or djp_disconnect fail the first.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/delay.h>
#include <linux/jiffies.h>
#include <linux/kthread.h>
#include <linux/random.h>
#include <linux/slab.h>
#include "kselftest.h"

#define KS_WORKERS_PER_CPU 4

enum ks_how { KS_IPI, KS_STOP_MACHINE, KS_KPROBE, KS_MIXED };

static const struct ks_mode {
	const char *name;
	enum ks_how how;
} ks_modes[KS_STRESS_MODES] = {
	{ "ipi sync", KS_IPI },
	{ "stop_machine sync", KS_STOP_MACHINE },
	{ "kprobe fallback", KS_KPROBE },
	{ "mixed", KS_MIXED },
};

struct ks_held {
	int id;			/* -1: the slot is free */
	u64 sites;
	unsigned long seq;	/* connect order: the oldest goes first */
};

struct ks_patcher {
	struct ks_held held[KS_SLOTS];
	unsigned int nheld;
	unsigned long seq;
	unsigned long connects, failures;
	int first_err;
	const char *first_err_call;
};

static void ks_fail(struct ks_patcher *p, const char *call, int err)
{
	if (!p->failures++) {
		p->first_err = err;
		p->first_err_call = call;
	}
}

static void ks_windows(u64 sites, u32 stable_set, u32 stable_clear, u32 moving_set, u32 moving_clear)
{
	unsigned int s;

	for (s = 0; s < KS_NSITES; s++)
		if (sites & (1ull << s))
			ks_window_set(&ks_site_window[s], stable_set, stable_clear, moving_set, moving_clear);
}

/* A random non-empty set of octal digits, as a glob class and a mask. */
static u8 ks_digits(char *class)
{
	u8 set = get_random_u32() & 0xff;
	unsigned int d;
	char *c = class;

	if (!set)
		set = 1u << (get_random_u32() % 8);
	*c++ = '[';
	for (d = 0; d < 8; d++)
		if (set & (1u << d))
			*c++ = '0' + d;
	*c++ = ']';
	*c = '\0';
	return set;
}

static int ks_connect_batch(struct ks_patcher *p, enum ks_how how)
{
	char xs[11], ys[11], pattern[64];
	u8 xset = ks_digits(xs), yset = ks_digits(ys);
	unsigned int flags = 0, x, y, k;
	u32 bit;
	u64 sites = 0;
	int id, err;

	for (k = 0; p->held[k].id >= 0; k++)
		;
	bit = 1u << k;

	if (how == KS_MIXED)
		how = get_random_u32() % 3;
	if (how == KS_KPROBE) {
		flags = DJP_FORCE_KPROBE;
	} else {
		err = ks_set_sync(how == KS_IPI ? "ipi" : "stop_machine");
		if (err) {
			ks_fail(p, "writing /sys/module/djprobe/parameters/sync", err);
			return err;
		}
	}
	for (x = 0; x < 8; x++)
		for (y = 0; y < 8; y++)
			if ((xset & (1u << x)) && (yset & (1u << y)))
				sites |= 1ull << (x * 8 + y);
	snprintf(pattern, sizeof(pattern), KS_MODULE ":ks_site_%s%s", xs, ys);
	ks_windows(sites, 0, 0, bit, 0);
	WRITE_ONCE(ks_patching, ks_patching + 1);
	id = djp_connect(pattern, ks_stress_handler, (void *)(unsigned long)k, flags);
	WRITE_ONCE(ks_patching, ks_patching + 1);
	if (id < 0) {
		ks_windows(sites, 0, 0, 0, bit);
		ks_fail(p, "djp_connect", id);
		return id;
	}
	ks_windows(sites, bit, 0, 0, bit);
	p->connects++;
	p->held[k].id = id;
	p->held[k].sites = sites;
	p->held[k].seq = ++p->seq;
	p->nheld++;
	return 0;
}

static void ks_release_oldest(struct ks_patcher *p)
{
	unsigned int k, oldest = KS_SLOTS;
	struct ks_held *h;
	u32 bit;
	int err;

	for (k = 0; k < KS_SLOTS; k++)
		if (p->held[k].id >= 0 && (oldest == KS_SLOTS || p->held[k].seq < p->held[oldest].seq))
			oldest = k;
	h = &p->held[oldest];
	bit = 1u << oldest;
	ks_windows(h->sites, 0, bit, bit, 0);
	WRITE_ONCE(ks_patching, ks_patching + 1);
	err = djp_disconnect(h->id);
	WRITE_ONCE(ks_patching, ks_patching + 1);
	if (err)
		ks_fail(p, "djp_disconnect", err);
	ks_windows(h->sites, 0, 0, 0, bit);
	h->id = -1;
	p->nheld--;
}

/* For `ms`, and on until 8 batches were connected (a kprobe batch can take
 * seconds under emulation), up to 4 times `ms`. */
static void ks_patch_for(struct ks_patcher *p, enum ks_how how, unsigned int ms)
{
	unsigned long start = jiffies;

	while ((time_before(jiffies, start + msecs_to_jiffies(ms)) ||
		(p->connects < 8 && time_before(jiffies, start + 4 * msecs_to_jiffies(ms)))) &&
	       p->failures < 10) {
		if (p->nheld == KS_SLOTS || (p->nheld && get_random_u32() % 2))
			ks_release_oldest(p);
		else
			ks_connect_batch(p, how);
		usleep_range(1000, 1000 + get_random_u32() % 9000);
	}
	while (p->nheld)
		ks_release_oldest(p);
	if (how != KS_KPROBE)
		ks_set_sync("ipi");
}

static void ks_free_workers(struct task_struct **tasks, unsigned int n)
{
	unsigned int i;

	WRITE_ONCE(ks_nworkers, 0);
	for (i = 0; i < n; i++) {
		if (tasks[i])
			kthread_stop(tasks[i]);
		kfree(ks_workers[i]);
	}
	kfree(ks_workers);
	ks_workers = NULL;
	kfree(tasks);
}

/* KS_WORKERS_PER_CPU bound kthreads on each online CPU, started together. */
static struct task_struct **ks_start_workers(unsigned int *n)
{
	unsigned int max = num_online_cpus() * KS_WORKERS_PER_CPU, i = 0, cpu, k;
	struct task_struct **tasks;

	tasks = kcalloc(max, sizeof(*tasks), GFP_KERNEL);
	ks_workers = kcalloc(max, sizeof(*ks_workers), GFP_KERNEL);
	if (!tasks || !ks_workers) {
		kfree(tasks);
		kfree(ks_workers);
		ks_workers = NULL;
		return NULL;
	}
	for_each_online_cpu(cpu) {
		for (k = 0; k < KS_WORKERS_PER_CPU && i < max; k++, i++) {
			ks_workers[i] = kzalloc(sizeof(*ks_workers[i]), GFP_KERNEL);
			if (!ks_workers[i])
				goto fail;
			ks_workers[i]->id = i;
			tasks[i] = kthread_create(ks_worker_loop, ks_workers[i], "djp_ks/%u:%u", cpu, k);
			if (IS_ERR(tasks[i])) {
				tasks[i] = NULL;
				goto fail;
			}
			kthread_bind(tasks[i], cpu);
		}
	}
	WRITE_ONCE(ks_nworkers, i);
	for (k = 0; k < i; k++)
		wake_up_process(tasks[k]);
	*n = i;
	return tasks;
fail:
	/* The one that failed is NULL or half made: free it with the rest. */
	ks_free_workers(tasks, i + 1);
	return NULL;
}

static void ks_stress_run(const struct ks_mode *mode)
{
	struct ks_patcher p = { .first_err_call = "", .held = { { .id = -1 }, { .id = -1 }, { .id = -1 } } };
	u64 passes = 0, in_window = 0, wrong_count = 0, wrong_reg = 0, wrong_arg = 0, hits = 0;
	struct task_struct **tasks;
	unsigned int n = 0, i;
	unsigned long misses;
	struct ks_worker last_wrong = { .last_wrong_site = -1 };

	atomic_set(&ks_stray_hits, 0);
	misses = ks_djprobe_misses();
	tasks = ks_start_workers(&n);
	if (!tasks) {
		ks_tap(false, "%s: 64 sites counted exactly while connected # cannot start the workers", mode->name);
		ks_tap(false, "%s: registers and arguments intact across armed markers # no workers", mode->name);
		return;
	}
	ks_patch_for(&p, mode->how, ks_duration_ms);
	for (i = 0; i < n; i++) {
		struct ks_worker *w = ks_workers[i];

		passes += w->passes;
		in_window += w->in_window;
		wrong_count += w->wrong_count;
		wrong_reg += w->wrong_reg;
		wrong_arg += w->wrong_arg;
		if (w->wrong_count)
			last_wrong = *w;
		hits += w->handler_hits;
	}
	ks_free_workers(tasks, n);

	ks_diag("%s: %u workers, %llu passes, %lu batches connected, %llu passes in windows, %llu hits, %lu misses by djprobe",
		mode->name, n, passes, p.connects, in_window, hits, ks_djprobe_misses() - misses);
	if (p.failures)
		ks_diag("%s: %lu failed calls, the first %s: %d", mode->name, p.failures,
			p.first_err_call, p.first_err);
	if (wrong_count)
		ks_diag("%s: %llu passes with hits the windows rule out; one at ks_site_%o%o: slots stable %#x, moving %#x, hits by slot %llu %llu %llu, %s",
			mode->name, wrong_count, last_wrong.last_wrong_site / 8,
			last_wrong.last_wrong_site % 8, KS_STABLE(last_wrong.last_wrong_window),
			KS_MOVING(last_wrong.last_wrong_window), last_wrong.last_wrong_delta & 0xffff,
			(last_wrong.last_wrong_delta >> 16) & 0xffff, (last_wrong.last_wrong_delta >> 32) & 0xffff,
			last_wrong.last_wrong_quiet ? "no patching call under way" :
			"a patching call under way for other sites");
	ks_tap(!p.failures && !wrong_count && in_window > 0,
	       "%s: 64 sites counted exactly while connected%s", mode->name,
	       p.failures ? " # a patching call failed" : wrong_count ? " # counts differ" :
	       !in_window ? " # no pass ran inside a window" : "");
	ks_tap(!wrong_reg && !wrong_arg && !atomic_read(&ks_stray_hits) && hits > 0,
	       "%s: registers and arguments intact across armed markers%s", mode->name,
	       wrong_reg ? " # a live register changed" : wrong_arg ? " # a marker argument was wrong" :
	       atomic_read(&ks_stray_hits) ? " # a hit from an unknown site or worker" :
	       !hits ? " # no handler ran" : "");
	if (wrong_reg || wrong_arg)
		ks_diag("%s: %llu passes with a changed register, %llu wrong arguments",
			mode->name, wrong_reg, wrong_arg);
}

void ks_stress_run_all(void)
{
	unsigned int m;

	for (m = 0; m < KS_STRESS_MODES; m++)
		ks_stress_run(&ks_modes[m]);
}

/* ---- after the last disconnect ----------------------------------------- */

struct ks_restored {
	unsigned int seen, bad;
	char first_bad[80];
};

static int ks_check_site(const struct djp_kmarker *m, void *data)
{
	static const u8 nop6[6] = { 0x66, 0x0f, 0x1f, 0x44, 0x00, 0x00 };
	struct ks_restored *r = data;

	if (strcmp(m->module, KS_MODULE) || strncmp(m->name, "ks_site_", 8))
		return 0;
	r->seen++;
	if (m->probes || strcmp(m->how, "off") || memcmp((void *)m->site, nop6, sizeof(nop6))) {
		if (!r->bad++)
			snprintf(r->first_bad, sizeof(r->first_bad), "%s: %u probes, %s, %*ph",
				 m->name, m->probes, m->how, 6, (void *)m->site);
	}
	return 0;
}

void ks_sites_restored(void)
{
	struct ks_restored r = {};
	int err = djp_for_each_marker(ks_check_site, &r);

	if (r.bad)
		ks_diag("%u sites not restored, the first %s", r.bad, r.first_bad);
	ks_tap(!err && r.seen == KS_NSITES && !r.bad,
	       "64 sites are nopw again and off after the last disconnect%s",
	       err ? " # djp_for_each_marker failed" : r.seen != KS_NSITES ? " # not all 64 listed" :
	       r.bad ? " # a site kept other bytes" : "");
}
