// SPDX-License-Identifier: GPL-2.0
/*
 * djprobe.ko: markers in kernel modules, armed as jumps to trampolines
 * (docs/KERNEL.md).  Loading it installs the int3 handler of the bootstrap
 * before anything can be armed, then learns the markers of every loaded
 * module; unloading disconnects every probe, turns every site back into
 * its NOP, and waits until no CPU and no task is inside a handler or a
 * trampoline before the module's text (which holds the trampolines) goes.
 * /dev/djprobe (djprobe_dev.c), a client of the engine like any kernel
 * caller, comes after the engine and goes before it.
 */
#include <linux/kernel.h>
#include <linux/module.h>

#include "djprobe_dev.h"
#include "djprobe_int.h"

static int __init djprobe_init(void)
{
	int ret;

	ret = djp_trap_init();
	if (ret)
		return ret;
	ret = djp_tramp_init();
	if (ret)
		goto trap;
	ret = djp_core_init();
	if (ret)
		goto tramp;
	/* the device is a client like any other: after the engine is up */
	ret = djp_dev_init();
	if (ret)
		goto core;
	return 0;
core:
	djp_core_exit();
tramp:
	djp_tramp_exit();
trap:
	djp_trap_exit();
	return ret;
}

static void __exit djprobe_exit(void)
{
	djp_dev_exit();
	djp_core_exit();
	djp_tramp_exit();
	djp_trap_exit();
}

module_init(djprobe_init);
module_exit(djprobe_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("djprobe: jump-patched markers in kernel modules");
