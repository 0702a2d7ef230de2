/*
 * The int3 bootstrap's interface (text_poke.c has the essay), the one part
 * of the arch layer that the library and djprobe.ko share: each gives the
 * text session (user space: pages made writable, kmod/compat's arch.h: the
 * writable alias of module text) and the sync; the batch is the same code.
 */
#ifndef DJP_ARCH_TEXT_POKE_H
#define DJP_ARCH_TEXT_POKE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct djp_text_session;
int arch_text_open(struct djp_text_session *s, const uintptr_t *addrs, const uint8_t *lens, size_t n);
int arch_text_write(struct djp_text_session *s, uintptr_t addr, const uint8_t *buf, size_t len);
int arch_text_close(struct djp_text_session *s);

#define DJP_SITE_MAX_LEN 24 /* a jump over whole instructions: 5 + 15 - 1 */
struct djp_poke {
	uintptr_t addr;
	uint8_t len;
	uint8_t old[DJP_SITE_MAX_LEN]; /* what must be there now */
	uint8_t new[DJP_SITE_MAX_LEN]; /* what will be there (new[0] may be 0xcc) */
	/* in: `old` holds instructions a thread may be in the middle of, which
	 * `new`'s tail overwrites: ask `check` first.  out: it said a thread
	 * was inside, so the site got an int3 and kept its tail.  (A kernel
	 * marker is one instruction: djprobe.ko never sets it.) */
	bool check, demoted;
};
/* Which of the ranges [addr, addr + len) of the pokes marked `check` no
 * thread is strictly inside, now that each starts with an int3 every core
 * sees: sets `demoted` on the others (kernel/threads_check.c). */
typedef void (*djp_poke_check_fn)(struct djp_poke *p, size_t n);
/* Apply a batch with the three-step protocol; `sync` serialises every core
 * and returns 0 or -errno; `check` runs between the first step and the
 * tails when a poke asks for it.  On failure every site holds its `old`
 * bytes again and -errno is returned. */
int arch_poke_batch(struct djp_poke *p, size_t n, int (*sync)(void), djp_poke_check_fn check);
/* The same batch written whole, for a process whose every other thread is
 * stopped (no thread runs the text while it changes, so none may meet an
 * int3 the bootstrap would leave there for a moment: text_poke.c): the
 * text made writable, then `hold(ctx)`, which stops the other threads and
 * returns 0 (or its error: nothing is written, and it is returned), then
 * each site's new bytes in one write, one sync, and `release(ctx)`.
 * Nothing between hold and release allocates.  Neither `check` nor
 * `demoted` is used.  On failure every site holds its `old` bytes again
 * and -errno is returned. */
int arch_poke_whole(struct djp_poke *p, size_t n, int (*sync)(void), int (*hold)(void *ctx),
		    void (*release)(void *ctx), void *ctx);

#endif
