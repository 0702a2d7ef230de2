/* SPDX-License-Identifier: GPL-2.0 */
/* The trampoline region's geometry, shared by ktramp_entry.S and ktramp.c. */
#ifndef DJP_KMOD_KTRAMP_H
#define DJP_KMOD_KTRAMP_H

#define DJP_TRAMP_SLOTS 4096
#define DJP_TRAMP_SLOT_SIZE 32

#endif
