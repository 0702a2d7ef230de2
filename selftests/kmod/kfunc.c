// SPDX-License-Identifier: GPL-2.0
/*
 * A function with a known number of calls, for the function points of
 * /dev/djprobe (selftests/kcheck/kfunc.sh probes it with djp and with a
 * tracefs kprobe, and compares).  Writing N to the parameter "kfunc" calls
 * djp_ks_kfunc(i, 1001, 1002, 1003, 1004, 1005) for i = 1..N in the
 * writer's task; each call returns 2i + 1.
 */
#include <linux/kernel.h>
#include <linux/module.h>

noinline u64 djp_ks_kfunc(u64 a, u64 b, u64 c, u64 d, u64 e, u64 f)
{
	/* a call with a body: never inlined, never folded away */
	barrier();
	return 2 * a + 1 + (b + c + d + e + f - 5015);
}
EXPORT_SYMBOL_GPL(djp_ks_kfunc);

static int ks_kfunc_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n, i;
	u64 sum = 0;

	if (kstrtouint(val, 0, &n))
		return -EINVAL;
	for (i = 1; i <= n; i++)
		sum += djp_ks_kfunc(i, 1001, 1002, 1003, 1004, 1005);
	/* n calls of 2i + 1: n^2 + 2n */
	return sum == (u64)n * n + 2 * n ? 0 : -EIO;
}

static const struct kernel_param_ops ks_kfunc_ops = { .set = ks_kfunc_set };
module_param_cb(kfunc, &ks_kfunc_ops, NULL, 0200);
MODULE_PARM_DESC(kfunc, "N: call djp_ks_kfunc N times");
