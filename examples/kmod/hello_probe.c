// SPDX-License-Identifier: GPL-2.0
/*
 * hello_probe.ko: a kernel caller of djprobe.ko's API.  It connects one
 * handler to every marker of hello_marker.ko ("hello_marker:hello_*") and
 * logs each hello_second with its argument; unloading it disconnects, and
 * the markers are NOPs again.  Load hello_marker.ko before or after: the
 * probe also arms the markers of a module loaded later.
 */
#include <linux/atomic.h>
#include <linux/module.h>
#include <djprobe/djprobe.h>

static atomic64_t hits = ATOMIC64_INIT(0);
static int probe_id = -1;

/* Runs with preemption disabled, here in the workqueue's kthread. */
static void on_hello(const struct djp_hit *hit, void *data)
{
	atomic64_inc(data);
	if (!strcmp(djp_hit_name(hit), "hello_second"))
		pr_info("hello_probe: %s:%s n=%lld\n", djp_hit_module(hit), djp_hit_name(hit), djp_hit_arg(hit, 0));
}

static int __init hello_probe_init(void)
{
	probe_id = djp_connect("hello_marker:hello_*", on_hello, &hits, 0);
	if (probe_id < 0) {
		pr_err("hello_probe: djp_connect(\"hello_marker:hello_*\") failed: %d (is hello_marker.ko loaded?)\n",
		       probe_id);
		return probe_id;
	}
	return 0;
}

static void __exit hello_probe_exit(void)
{
	djp_disconnect(probe_id);	/* on return, on_hello runs nowhere */
	pr_info("hello_probe: %lld hits\n", atomic64_read(&hits));
}

module_init(hello_probe_init);
module_exit(hello_probe_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("djprobe example: a handler on a module's markers");
