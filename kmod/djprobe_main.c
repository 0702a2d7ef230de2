// SPDX-License-Identifier: GPL-2.0
/*
 * djprobe.ko: markers in kernel modules, armed as jumps to trampolines
 * (docs/KERNEL.md).  Loading it installs the int3 handler of the bootstrap
 * before anything can be armed, then learns the markers of every loaded
 * module; unloading disconnects every probe, turns every site back into
 * its NOP, and waits until no CPU and no task is inside a handler or a
 * trampoline before the module's text (which holds the trampolines) goes.
 */
#include <linux/kernel.h>
#include <linux/module.h>

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
	return 0;
tramp:
	djp_tramp_exit();
trap:
	djp_trap_exit();
	return ret;
}

static void __exit djprobe_exit(void)
{
	djp_core_exit();
	djp_tramp_exit();
	djp_trap_exit();
}

module_init(djprobe_init);
module_exit(djprobe_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("djprobe: jump-patched markers in kernel modules");
