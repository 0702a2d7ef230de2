/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Function points of /dev/djprobe (kfunc.c): "func:NAME[+OFF]" and
 * "func:NAME%return" through register_kprobe / register_kretprobe.
 */
#ifndef DJP_KMOD_KFUNC_H
#define DJP_KMOD_KFUNC_H

#include <djprobe/djprobe.h>
#include <djprobe/kdev.h>

#include "kring.h"


struct djp_kfunc;

/* A function point on pattern ("func:..."), recording into ring; 0 or
 * -errno (-ENOENT: no such function, -EINVAL: a bad pattern or a function
 * kprobes refuses). */
int djp_kfunc_register(const char *pattern, struct djp_kring *ring, struct djp_kfunc **out);
/* Returns when no handler of it runs any more. */
void djp_kfunc_unregister(struct djp_kfunc *f);
/* fn for each function point of every open file, as djp_for_each_marker. */
int djp_kfunc_for_each(int (*fn)(const struct djp_kmarker *m, void *data), void *data);
/* The hit's task, tgid << 32 | pid, or 0 when it interrupted something. */
u64 djp_dev_hit_task(void);

#endif
