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
int arch_text_open(struct djp_text_session *s, const uintptr_t *addrs, const uint8_t *lens, size_t n);
int arch_text_write(struct djp_text_session *s, uintptr_t addr, const uint8_t *buf, size_t len);
int arch_text_close(struct djp_text_session *s);

/* As in user space's arch.h: one site's change in a batch. */
#define DJP_SITE_MAX_LEN 24
struct djp_poke {
	uintptr_t addr;
	uint8_t len;
	uint8_t old[DJP_SITE_MAX_LEN]; /* what must be there now */
	uint8_t new[DJP_SITE_MAX_LEN]; /* what will be there (new[0] may be 0xcc) */
	/* user space's check of threads inside a multi-instruction range;
	 * a marker site is one instruction, so the kernel never sets it */
	bool check, demoted;
};
typedef void (*djp_poke_check_fn)(struct djp_poke *p, size_t n);
int arch_poke_batch(struct djp_poke *p, size_t n, int (*sync)(void), djp_poke_check_fn check);

#endif
