// SPDX-License-Identifier: GPL-2.0
/*
 * A function with a known number of calls, for the function points of
 * /dev/djprobe (selftests/kcheck/kfunc.sh probes it with djp and with a
 * tracefs kprobe, and compares).  Writing N to the parameter "kfunc" calls
 * djp_ks_kfunc(i, 1001, 1002, 1003, 1004, 1005) for i = 1..N in the
 * writer's task; each call returns 2i + 1.  Then djp_ks_kparms(-i, 200,
 * -300, "djp", -1234567890123 * i, i & 1) for i = 1..N, returning -i:
 * parameters of every width and sign, which the tool names and extends
 * from the module's DWARF (tools/djp/kfunc_dwarf.c).
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

/* Narrow parameters arrive with the upper bits of their registers
 * undefined (System V): the tool must cut and extend them by type. */
noinline int djp_ks_kparms(int neg, u8 small, s16 sh, const char *name, long big, bool flag)
{
	barrier();
	return neg + (small == 200 && sh == -300 && name[0] == 'd' && big < 0 ? 0 : 1000);
}
EXPORT_SYMBOL_GPL(djp_ks_kparms);

static int ks_kfunc_set(const char *val, const struct kernel_param *kp)
{
	unsigned int n, i;
	u64 sum = 0;
	int bad = 0;

	if (kstrtouint(val, 0, &n))
		return -EINVAL;
	for (i = 1; i <= n; i++)
		sum += djp_ks_kfunc(i, 1001, 1002, 1003, 1004, 1005);
	for (i = 1; i <= n; i++)
		bad += djp_ks_kparms(-(int)i, 200, -300, "djp", -1234567890123L * (long)i, i & 1) != -(int)i;
	if (bad)
		return -EIO;
	/* n calls of 2i + 1: n^2 + 2n */
	return sum == (u64)n * n + 2 * n ? 0 : -EIO;
}

static const struct kernel_param_ops ks_kfunc_ops = { .set = ks_kfunc_set };
module_param_cb(kfunc, &ks_kfunc_ops, NULL, 0200);
MODULE_PARM_DESC(kfunc, "N: call djp_ks_kfunc N times");
