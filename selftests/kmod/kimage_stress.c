// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel image's busiest marker patched under load: vmlinux:sched_switch
 * is connected and disconnected N times in a row (10,000 in kcheck) while
 * every CPU keeps switching tasks, then the text must be what it was.
 *
 * Two kthreads bound to each CPU call yield() in a loop, so every CPU runs
 * __schedule(), and with it the marker's sites, all the time; at nice 10
 * they leave the patcher (the writer of the `stress` parameter, nice 0)
 * most of its CPU, and take every moment it waits: for the IPIs of a batch,
 * for the grace period of a disconnect.  Each cycle is one djp_connect (one
 * batch: int3, tails, first bytes, three syncs, with CPUs running through
 * the sites meanwhile) and one djp_disconnect (the batch back, and the wait
 * until no CPU is in the handler).  The handler counts its hits.
 *
 * Before the first cycle the six bytes of every site of the image are
 * saved; after the last, every site must be off, with no probe, holding
 * the saved bytes, which must be the NOP.  Every yield thread must have
 * gone on looping until it was stopped, which a CPU stuck in a trap or a
 * corrupted __schedule() would not.  The outcome is one line in
 * `stress_report`, read by selftests/kcheck/kimage_cmp.sh; the write
 * fails with -EIO when a check fails.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/kthread.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/mutex.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>
#include <djprobe/djprobe.h>

#include "kimage_selftest.h"

#define KS_NOP6 "\x66\x0f\x1f\x44\x00\x00"
#define KS_MAX_SITES 128
#define KS_YIELDERS_PER_CPU 2

struct ks_yielder {
	struct task_struct *task;
	u64 loops;
};

struct ks_site {
	unsigned long addr;
	char name[32];
	u8 bytes[6];
};

struct ks_run {
	struct ks_site sites[KS_MAX_SITES];
	unsigned int nsites;
	unsigned int bad;		/* sites found wrong after */
	char first_bad[96];
};

static struct ks_yielder *ks_yielders;
static unsigned int ks_nyielders;
static atomic64_t ks_hits;
static char ks_report[256] = "not run";
static DEFINE_MUTEX(ks_lock);

static int ks_yield_fn(void *arg)
{
	struct ks_yielder *y = arg;

	while (!kthread_should_stop()) {
		WRITE_ONCE(y->loops, y->loops + 1);
		yield();
	}
	return 0;
}

static void ks_stop_yielders(void)
{
	unsigned int i;

	for (i = 0; i < ks_nyielders; i++)
		if (ks_yielders[i].task)
			kthread_stop(ks_yielders[i].task);
	kfree(ks_yielders);
	ks_yielders = NULL;
	ks_nyielders = 0;
}

static int ks_start_yielders(void)
{
	unsigned int cpu, k, n = 0;

	ks_yielders = kcalloc(num_online_cpus() * KS_YIELDERS_PER_CPU, sizeof(*ks_yielders), GFP_KERNEL);
	if (!ks_yielders)
		return -ENOMEM;
	for_each_online_cpu(cpu) {
		for (k = 0; k < KS_YIELDERS_PER_CPU; k++) {
			struct ks_yielder *y = &ks_yielders[n];

			y->task = kthread_create_on_cpu(ks_yield_fn, y, cpu, "djp_yield/%u");
			if (IS_ERR(y->task)) {
				int err = PTR_ERR(y->task);

				y->task = NULL;
				ks_nyielders = n;
				ks_stop_yielders();
				return err;
			}
			set_user_nice(y->task, 10);
			wake_up_process(y->task);
			n++;
		}
	}
	ks_nyielders = n;
	return 0;
}

static void ks_on_switch(const struct djp_hit *hit, void *data)
{
	atomic64_inc(&ks_hits);
}

static int ks_save_site(const struct djp_kmarker *m, void *data)
{
	struct ks_run *run = data;
	struct ks_site *s;

	if (strcmp(m->module, "vmlinux"))
		return 0;
	if (run->nsites == KS_MAX_SITES)
		return -E2BIG;
	s = &run->sites[run->nsites++];
	s->addr = m->site;
	strscpy(s->name, m->name, sizeof(s->name));
	return copy_from_kernel_nofault(s->bytes, (void *)m->site, sizeof(s->bytes)) ? -EFAULT : 0;
}

/* After: each image site off, with no probe, holding its saved bytes. */
static int ks_check_site(const struct djp_kmarker *m, void *data)
{
	struct ks_run *run = data;
	unsigned int i;
	u8 now[6];

	if (strcmp(m->module, "vmlinux"))
		return 0;
	for (i = 0; i < run->nsites; i++)
		if (run->sites[i].addr == m->site)
			break;
	if (copy_from_kernel_nofault(now, (void *)m->site, sizeof(now)))
		memset(now, 0, sizeof(now));
	if (i == run->nsites || strcmp(m->how, "off") || m->probes ||
	    memcmp(now, run->sites[i].bytes, sizeof(now)) || memcmp(now, KS_NOP6, sizeof(now))) {
		if (!run->bad++)
			snprintf(run->first_bad, sizeof(run->first_bad), "%s at %px: %s, %u probes, %6ph",
				 m->name, (void *)m->site, m->how, m->probes, now);
	}
	return 0;
}

static int ks_run_stress(unsigned int cycles)
{
	struct ks_run *run;
	unsigned int i, done, switch_sites = 0, stalled = 0, cycles_hit = 0;
	u64 t0, ms;
	int err, id;

	run = kzalloc(sizeof(*run), GFP_KERNEL);
	if (!run)
		return -ENOMEM;
	err = djp_for_each_marker(ks_save_site, run);
	for (i = 0; i < run->nsites; i++)
		switch_sites += !strcmp(run->sites[i].name, "sched_switch");
	if (err || !switch_sites) {
		snprintf(ks_report, sizeof(ks_report), "cannot read the image's sites: %d, %u sched_switch sites",
			 err, switch_sites);
		kfree(run);
		return err ?: -ENOENT;
	}
	err = ks_start_yielders();
	if (err) {
		snprintf(ks_report, sizeof(ks_report), "cannot start the yield threads: %d", err);
		kfree(run);
		return err;
	}
	atomic64_set(&ks_hits, 0);
	t0 = ktime_get_ns();
	for (i = 0; i < cycles; i++) {
		s64 before = atomic64_read(&ks_hits);

		id = djp_connect("vmlinux:sched_switch", ks_on_switch, NULL, 0);
		if (id < 0) {
			err = id;
			break;
		}
		err = djp_disconnect(id);
		if (err)
			break;
		cycles_hit += atomic64_read(&ks_hits) != before;
		cond_resched();
	}
	done = i;
	ms = (ktime_get_ns() - t0) / NSEC_PER_MSEC;
	/* Every yield thread still loops: none is stuck in a trap or a
	 * corrupted __schedule().  Each must make a step while we wait. */
	for (i = 0; i < ks_nyielders; i++) {
		u64 seen = READ_ONCE(ks_yielders[i].loops);
		unsigned int tries = 0;

		while (READ_ONCE(ks_yielders[i].loops) == seen && tries++ < 1000)
			schedule_timeout_uninterruptible(1);
		stalled += READ_ONCE(ks_yielders[i].loops) == seen;
	}
	ks_stop_yielders();
	djp_for_each_marker(ks_check_site, run);
	snprintf(ks_report, sizeof(ks_report),
		 "%u of %u cycles in %llu ms, %lld hits (%u cycles with one), %u sched_switch sites, %u image sites checked, %u wrong%s%s, %u yield threads stalled",
		 done, cycles, ms, atomic64_read(&ks_hits), cycles_hit, switch_sites, run->nsites, run->bad,
		 run->bad ? ": first " : "", run->first_bad, stalled);
	pr_info("# stress: %s\n", ks_report);
	if (!err && (done != cycles || run->bad || stalled || !atomic64_read(&ks_hits)))
		err = -EIO;
	kfree(run);
	return err;
}

static int ks_set_stress(const char *val, const struct kernel_param *kp)
{
	unsigned int cycles;
	int err = kstrtouint(val, 0, &cycles);

	if (err || !cycles)
		return -EINVAL;
	mutex_lock(&ks_lock);
	err = ks_run_stress(cycles);
	mutex_unlock(&ks_lock);
	return err;
}

static const struct kernel_param_ops ks_stress_ops = { .set = ks_set_stress };
module_param_cb(stress, &ks_stress_ops, NULL, 0200);
MODULE_PARM_DESC(stress, "N: connect and disconnect vmlinux:sched_switch N times while every CPU schedules");

static int ks_get_report(char *buf, const struct kernel_param *kp)
{
	int n;

	mutex_lock(&ks_lock);
	n = scnprintf(buf, PAGE_SIZE, "%s\n", ks_report);
	mutex_unlock(&ks_lock);
	return n;
}

static const struct kernel_param_ops ks_report_ops = { .get = ks_get_report };
module_param_cb(stress_report, &ks_report_ops, NULL, 0400);
MODULE_PARM_DESC(stress_report, "the last stress run's outcome");

void kimage_stress_exit(void)
{
	mutex_lock(&ks_lock);
	if (ks_yielders)
		ks_stop_yielders();
	mutex_unlock(&ks_lock);
}
