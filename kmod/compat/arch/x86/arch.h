/*
 * The arch interface as djprobe.ko has it: what arch/x86/text_poke.c, the
 * batched int3 bootstrap shared with user space, asks of its environment.
 * User space's arch.h declares the same names for the library (where a
 * text session makes pages writable); here a session is the writable
 * alias of the module text pages that kmod/ktext.c maps, and the rest of
 * user space's arch layer (traps, trampolines, the decoder) has kernel
 * counterparts of its own in kmod/.
 */
#ifndef DJP_KMOD_COMPAT_ARCH_H
#define DJP_KMOD_COMPAT_ARCH_H

#include <linux/types.h>

#define X86_INT3 0xcc

/* The writable alias of the pages a batch touches (kmod/ktext.c). */
struct djp_text_session {
	struct djp_text_alias *alias;
};
/* arch_text_open/write/close and the batch, as in user space */
#include "arch/x86/text_poke.h"

#endif
