/*
 * The int3 bootstrap, batched: how a site changes from one instruction to
 * another while other threads may be executing it.
 *
 * The cross-modifying-code rules of the x86 manuals allow another core to see
 * only a one-byte change at an instruction start (opcode <-> 0xcc) without
 * serialising; anything else needs every core to execute a serialising
 * instruction between the write and the execution.  So, as the kernel's
 * text_poke_bp does, for every site of the batch at once:
 *
 *   step 1: write 0xcc over the first byte of every site;        sync
 *           (from now on no core decodes past the first byte: a thread
 *           that arrives traps, and the SIGTRAP handler emulates the
 *           instruction the site is becoming, per the trap table that
 *           the caller published before this batch)
 *   between: where a site's new bytes cover more than one instruction of
 *           the old (a jump over displaced instructions), a thread may be
 *           in the middle of them, or may return there from a signal
 *           handler: `check` finds out (the int3 keeps everyone else
 *           out), and such a site stays an int3 probe;
 *   step 2: write bytes 1..len-1 of the new instruction;          sync
 *           (the tails are visible everywhere before any core can decode
 *           them)
 *   step 3: write the new first byte (unless the new state is an int3
 *           probe, whose first byte is 0xcc already);             sync
 *
 * Three syncs a batch however many sites.  `sync` is membarrier
 * SYNC_CORE, or a TLB shootdown where that is missing (kernel/sync.c).
 *
 * A process whose every thread but the writer is stopped (kernel/freeze.c:
 * threads that block SIGTRAP, which an int3 would kill) needs none of it:
 * no thread runs the text while it changes, so arch_poke_whole writes each
 * site's new bytes at once and syncs once, before the threads go on; no
 * int3 is ever in the text.  (The writer itself needs only the branch that
 * follows its stores.)
 *
 * Failure: whatever step fails, the batch is rolled back with the same
 * protocol in reverse (0xcc everywhere, sync, old tails, sync, old first
 * bytes, sync), so every site ends holding exactly its old bytes.  Rollback
 * writes and syncs are retried; they cannot be allowed to give up.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch/x86/arch.h"

static const uint8_t int3 = X86_INT3;

static void retry_sync(int (*sync)(void))
{
	for (int i = 0; i < 1000 && sync(); i++)
		usleep(100);
}

static void retry_write(struct djp_text_session *s, uintptr_t a, const uint8_t *b, size_t n)
{
	for (int i = 0; i < 1000 && arch_text_write(s, a, b, n); i++)
		usleep(100);
}

/* Put every site back to p->old.  Sites whose memory already equals old
 * are left alone, so this serves at any point of the forward protocol. */
static void rollback(struct djp_text_session *s, struct djp_poke *p, size_t n, int (*sync)(void))
{
	for (size_t i = 0; i < n; i++)
		if (memcmp((void *)p[i].addr, p[i].old, p[i].len) && *(uint8_t *)p[i].addr != X86_INT3)
			retry_write(s, p[i].addr, &int3, 1);
	retry_sync(sync);
	for (size_t i = 0; i < n; i++)
		if (memcmp((uint8_t *)p[i].addr + 1, p[i].old + 1, p[i].len - 1))
			retry_write(s, p[i].addr + 1, p[i].old + 1, p[i].len - 1);
	retry_sync(sync);
	for (size_t i = 0; i < n; i++)
		if (*(uint8_t *)p[i].addr != p[i].old[0])
			retry_write(s, p[i].addr, p[i].old, 1);
	retry_sync(sync);
}

/* Write `to` over site p where it differs from `from`, in runs around
 * every byte that is an int3 in both (another tool's, see below). */
static int write_runs(struct djp_text_session *s, const struct djp_poke *p, const uint8_t *from, const uint8_t *to)
{
	int err = 0;
	for (unsigned b = 0, e; b < p->len && !err; b = e + 1) {
		for (e = b; e < p->len && !(from[e] == X86_INT3 && to[e] == X86_INT3); e++)
			;
		if (e > b && memcmp(from + b, to + b, e - b))
			err = arch_text_write(s, p->addr + b, to + b, e - b);
	}
	return err;
}

static int text_open(struct djp_text_session *s, const struct djp_poke *p, size_t n)
{
	uintptr_t *addrs = malloc(n * (sizeof(*addrs) + 1));
	uint8_t *lens;
	int err;

	if (!addrs)
		return -ENOMEM;
	lens = (uint8_t *)(addrs + n);
	for (size_t i = 0; i < n; i++) {
		addrs[i] = p[i].addr;
		lens[i] = p[i].len;
	}
	err = arch_text_open(s, addrs, lens, n);
	free(addrs);
	return err;
}

int arch_poke_whole(struct djp_poke *p, size_t n, int (*sync)(void), int (*hold)(void *ctx),
		    void (*release)(void *ctx), void *ctx)
{
	struct djp_text_session s;
	int err, closed;

	if (n == 0)
		return 0;
	if ((err = text_open(&s, p, n)))
		return err;
	if ((err = hold(ctx))) {
		arch_text_close(&s);
		return err;
	}
	for (size_t i = 0; i < n && !err; i++)
		err = write_runs(&s, &p[i], p[i].old, p[i].new);
	if (!err)
		err = sync();
	if (err) { /* still nobody running: the old bytes whole, too */
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < 1000 && memcmp((void *)p[i].addr, p[i].old, p[i].len) &&
					write_runs(&s, &p[i], (const uint8_t *)p[i].addr, p[i].old);
			     k++)
				usleep(100);
		retry_sync(sync);
	}
	release(ctx);
	closed = arch_text_close(&s);
	return err ? err : closed;
}

int arch_poke_batch(struct djp_poke *p, size_t n, int (*sync)(void), djp_poke_check_fn check)
{
	struct djp_text_session s;
	int err = 0, tails = 0, closed;

	if (n == 0)
		return 0;
	if ((err = text_open(&s, p, n)))
		return err;

	/* Step 1: int3 at every site whose first byte is not one already. */
	for (size_t i = 0; i < n && !err; i++)
		if (p[i].old[0] != X86_INT3)
			err = arch_text_write(&s, p[i].addr, &int3, 1);
	if (!err)
		err = sync();

	/* Between: no thread may be inside a range whose instructions the
	 * tails overwrite (a jump over several); one that is keeps the int3
	 * (the kernel's optprobes wait for such tasks the same way). */
	for (size_t i = 0; i < n && !err && check; i++)
		if (p[i].check) {
			check(p, n);
			break;
		}
	for (size_t i = 0; i < n && !err; i++)
		if (p[i].demoted) {
			p[i].new[0] = X86_INT3;
			memcpy(p[i].new + 1, p[i].old + 1, p[i].len - 1u);
		}

	/* Step 2: the tails.  An int3 in both old and new is not written:
	 * it is someone else's (a uprobe inside a jump being given up, which
	 * the kernel may take away at any moment: writing it back would leave
	 * an int3 nobody owns), so a tail is written in the runs around it. */
	for (size_t i = 0; i < n && !err; i++) {
		if (p[i].len <= 1 || !memcmp(p[i].old + 1, p[i].new + 1, p[i].len - 1))
			continue;
		for (unsigned b = 1, e; b < p[i].len && !err; b = e + 1) {
			for (e = b; e < p[i].len && !(p[i].old[e] == X86_INT3 && p[i].new[e] == X86_INT3); e++)
				;
			if (e > b)
				err = arch_text_write(&s, p[i].addr + b, p[i].new + b, e - b);
		}
		tails = 1;
	}
	/* The kernel skips this sync when no tail changed; so do we. */
	if (!err && tails)
		err = sync();

	/* Step 3: the first bytes. */
	for (size_t i = 0; i < n && !err; i++)
		if (p[i].new[0] != X86_INT3)
			err = arch_text_write(&s, p[i].addr, p[i].new, 1);
	if (!err)
		err = sync();

	if (err)
		rollback(&s, p, n, sync);
	/* a page left writable is reported as the error mprotect gave */
	closed = arch_text_close(&s);
	return err ? err : closed;
}
