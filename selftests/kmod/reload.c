// SPDX-License-Identifier: GPL-2.0
/*
 * Markers of a module that comes and goes: the probe on djp_kmarkers2.ko's
 * markers stays connected while a guest script (selftests/kcheck/
 * kmarkers2.sh) loads and unloads that module again and again.  Each load
 * runs every marker `passes` times in its init and again in its exit, so
 * djprobe.ko must arm the new text on MODULE_STATE_COMING, before init
 * runs, and keep it armed until MODULE_STATE_GOING, after exit has run.
 *
 * The script drives this through the parameter "reload":
 *   connect [kprobe]   connect "djp_kmarkers2:*" (with DJP_FORCE_KPROBE)
 *   expect N           every marker was hit N times since the last check
 *                      (-EIO, with the counts in the log, when not)
 *   disconnect
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/atomic.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/string.h>
#include "kselftest.h"

#define KM2_SITES 8	/* djp_kmarkers2.c */

static atomic64_t ks_km2_hits[KM2_SITES];
static atomic_t ks_km2_stray = ATOMIC_INIT(0);
static int ks_km2_id = -1;
static DEFINE_MUTEX(ks_km2_lock);

static void ks_km2_handler(const struct djp_hit *hit, void *data)
{
	u64 site = djp_hit_arg(hit, 0);

	if (site < KM2_SITES)
		atomic64_inc(&ks_km2_hits[site]);
	else
		atomic_inc(&ks_km2_stray);
}

static int ks_km2_expect(unsigned int n)
{
	int site, err = 0;

	for (site = 0; site < KM2_SITES; site++) {
		s64 hits = atomic64_xchg(&ks_km2_hits[site], 0);

		if (hits != n) {
			ks_diag("reload: km2_site_%d hit %lld times, expected %u", site, hits, n);
			err = -EIO;
		}
	}
	if (atomic_xchg(&ks_km2_stray, 0)) {
		ks_diag("reload: hits with a site number out of range");
		err = -EIO;
	}
	return err;
}

static int ks_reload_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n;
	int err = 0;

	mutex_lock(&ks_km2_lock);
	if (sysfs_streq(val, "connect") || sysfs_streq(val, "connect kprobe")) {
		if (ks_km2_id >= 0) {
			err = -EBUSY;
		} else {
			err = djp_connect("djp_kmarkers2:*", ks_km2_handler, NULL,
					  strstr(val, "kprobe") ? DJP_FORCE_KPROBE : 0);
			if (err >= 0) {
				ks_km2_id = err;
				err = 0;
			}
		}
	} else if (sysfs_streq(val, "disconnect")) {
		err = ks_km2_id < 0 ? -ENOENT : djp_disconnect(ks_km2_id);
		ks_km2_id = -1;
	} else if (sscanf(val, "expect %u", &n) == 1) {
		err = ks_km2_expect(n);
	} else {
		err = -EINVAL;
	}
	mutex_unlock(&ks_km2_lock);
	if (err)
		ks_diag("reload: '%s' failed: %d", strim((char *)val), err);
	return err;
}

static const struct kernel_param_ops ks_reload_ops = {
	.set = ks_reload_set,
};
module_param_cb(reload, &ks_reload_ops, NULL, 0200);
MODULE_PARM_DESC(reload, "connect [kprobe] | expect N | disconnect (selftests/kcheck/kmarkers2.sh)");

void ks_reload_exit(void)
{
	if (ks_km2_id >= 0)
		djp_disconnect(ks_km2_id);
}
