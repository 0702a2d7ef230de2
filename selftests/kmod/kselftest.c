// SPDX-License-Identifier: GPL-2.0
/*
 * djp_kselftest.ko: djprobe.ko's selftests, run as the module loads.
 *
 * Each test prints TAP lines through printk ("djp_kselftest: ok 3 - ..."),
 * which the guest's serial console carries to the host (make kcheck); the
 * plan comes first, so a test that never reports is counted as missing
 * there.  Loading succeeds whatever the results, and the module stays
 * loaded: the reload test (reload.c) is driven afterwards by a guest script
 * through this module's "reload" parameter.
 *
 * duration_ms: how long each stress phase patches (4 phases, plus one for
 * the interrupt-context marker).
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/fs.h>
#include <linux/kernel.h>
#include <linux/module.h>
#include <linux/string.h>
#include "kselftest.h"

unsigned int ks_duration_ms = 2000;
module_param_named(duration_ms, ks_duration_ms, uint, 0444);
MODULE_PARM_DESC(duration_ms, "milliseconds each stress phase patches");

static unsigned int ks_tap_n;

void ks_tap(bool ok, const char *fmt, ...)
{
	struct va_format vaf;
	va_list ap;

	va_start(ap, fmt);
	vaf.fmt = fmt;
	vaf.va = &ap;
	pr_info("%sok %u - %pV\n", ok ? "" : "not ", ++ks_tap_n, &vaf);
	va_end(ap);
}

/* djprobe.ko's runtime-writable parameter, written as root would. */
int ks_set_sync(const char *how)
{
	static const char path[] = "/sys/module/djprobe/parameters/sync";
	struct file *f;
	loff_t pos = 0;
	ssize_t n;

	f = filp_open(path, O_WRONLY, 0);
	if (IS_ERR(f))
		return PTR_ERR(f);
	n = kernel_write(f, how, strlen(how), &pos);
	filp_close(f, NULL);
	if (n < 0)
		return n;
	return n == strlen(how) ? 0 : -EIO;
}

/* A number in a sysfs file, as root reads it; 0 when it cannot be read. */
unsigned long ks_read_number(const char *path)
{
	struct file *f;
	char buf[32] = "";
	loff_t pos = 0;
	unsigned long n = 0;

	f = filp_open(path, O_RDONLY, 0);
	if (IS_ERR(f))
		return 0;
	if (kernel_read(f, buf, sizeof(buf) - 1, &pos) > 0 && kstrtoul(strim(buf), 10, &n))
		n = 0;
	filp_close(f, NULL);
	return n;
}

/* djprobe.ko's count of hits it did not run (a handler already running on
 * that CPU), for the log: a miss it admits explains a count that is short. */
unsigned long ks_djprobe_misses(void)
{
	return ks_read_number("/sys/module/djprobe/parameters/misses");
}

static int __init ks_init(void)
{
	pr_info("1..%u\n", KS_STRESS_MODES * KS_STRESS_TESTS + 8);
	ks_stress_run_all();
	ks_irq_run();
	ks_sites_restored();
	ks_covered_run();
	ks_noinstr_run();
	ks_argkinds_run();
	ks_patterns_run();
	return 0;
}

static void __exit ks_exit(void)
{
	ks_reload_exit();
}

module_init(ks_init);
module_exit(ks_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("djprobe.ko selftests: concurrent patching, interrupt context, module reload");
