// SPDX-License-Identifier: GPL-2.0
/*
 * hello_marker.ko: a module with markers, and nothing else to do with
 * djprobe.  A delayed work runs ten times a second and passes two markers;
 * each costs one 6-byte NOP until something connects to it (hello_probe.c,
 * or `djp trace -k 'hello_marker:*'`).
 *
 *   readelf -x .markers hello_marker.ko     the records
 *   objdump -d hello_marker.ko              the nopw at each site
 */
#include <linux/jiffies.h>
#include <linux/module.h>
#include <linux/workqueue.h>
#include <djprobe/marker.h>

static unsigned long ticks;

static void tick(struct work_struct *work);
static DECLARE_DELAYED_WORK(hello_work, tick);

static void tick(struct work_struct *work)
{
	ticks++;
	MARK(hello_tick, "n=%lu jiffies=%lu", ticks, jiffies);
	if (ticks % 10 == 0)
		MARK(hello_second, "n=%lu", ticks / 10);
	schedule_delayed_work(&hello_work, HZ / 10);
}

static int __init hello_init(void)
{
	schedule_delayed_work(&hello_work, HZ / 10);
	return 0;
}

static void __exit hello_exit(void)
{
	cancel_delayed_work_sync(&hello_work);
}

module_init(hello_init);
module_exit(hello_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("djprobe example: markers in a module");
