/* SPDX-License-Identifier: GPL-2.0 */
/*
 * /dev/djprobe (djprobe_dev.c): djprobe.ko's init registers it once the
 * engine is up, and its exit removes it before the engine goes.
 */
#ifndef DJP_KMOD_DJPROBE_DEV_H
#define DJP_KMOD_DJPROBE_DEV_H

int djp_dev_init(void);
void djp_dev_exit(void);

#endif
