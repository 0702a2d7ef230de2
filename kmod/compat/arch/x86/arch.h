/*
 * The arch interface as djprobe.ko has it: what arch/x86/text_poke.c, the
 * batched int3 bootstrap shared with user space, asks of its environment,
 * and what lib/argloc.c, the argument-location parser, asks of the arch
 * (arch/x86/reg_names.c, shared too).
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

/* The register view's numbering and the assembler's names of the
 * registers, which lib/argloc.c (shared) parses against; the view's
 * struct djp_hit is user space's, renamed: djprobe.ko has its own. */
#define djp_hit djp_uspace_hit
#include "arch/x86/regs.h"
#undef djp_hit

/* The writable alias of the pages a batch touches (kmod/ktext.c). */
struct djp_text_session {
	struct djp_text_alias *alias;
};
/* arch_text_open/write/close and the batch, as in user space */
#include "arch/x86/text_poke.h"

#endif
