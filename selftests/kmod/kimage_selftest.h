/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The two parts of djp_kimage.ko: the comparison with the tracepoints
 * (kimage_cmp.c, which owns the module's init and exit) and the patching
 * stress (kimage_stress.c).
 */
#ifndef DJP_KIMAGE_SELFTEST_H
#define DJP_KIMAGE_SELFTEST_H

/* Stops the stress's workload threads if a run was cut short. */
void kimage_stress_exit(void);

#endif
