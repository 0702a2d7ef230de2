/*
 * The six steps of a batch, the one state machine of both engines:
 * kernel/arm.c's djp_sites_apply (user space) and kmod/kconnect.c's
 * sites_apply (djprobe.ko) each give their steps, and djp_apply_steps()
 * runs them in order and decides what a failure at each one undoes
 * (apply_steps.c has the essay).  Pure: compiled in both, as
 * arch/x86/text_poke.c is (kmod/Kbuild).
 */
#ifndef DJP_KERNEL_APPLY_STEPS_H
#define DJP_KERNEL_APPLY_STEPS_H

#include <stdbool.h>

/*
 * A site's way, in both engines: off (its original bytes: the NOP), a
 * trap (user space's int3 probe, djprobe.ko's kprobe) or a jump to a
 * trampoline.  User space's enum djp_site_state and djprobe.ko's enum
 * djp_how are these.
 */
enum djp_way {
	DJP_WAY_OFF,
	DJP_WAY_TRAP,
	DJP_WAY_JUMP,
};

/*
 * Step 1's rule for one site: the way its new handler list asks for.  No
 * handler: off.  Else, where the engine keeps an armed site's way
 * (`keeps_way`: djprobe.ko, whose trap is a kprobe and not bytes of its
 * own, so that changing a live site's way would leave it a bare NOP for a
 * while), the way it has; else a trap when `trap` (a handler forces one,
 * or no jump can be placed there), a jump otherwise.  A jump that step 2
 * then finds no trampoline for becomes a trap, in both.
 */
static inline enum djp_way djp_way_wanted(unsigned nhandlers, bool trap, enum djp_way now, bool keeps_way)
{
	if (!nhandlers)
		return DJP_WAY_OFF;
	if (keeps_way && now != DJP_WAY_OFF)
		return now;
	return trap ? DJP_WAY_TRAP : DJP_WAY_JUMP;
}

/*
 * An engine's steps, each given its batch (ctx).  Those that may fail
 * return 0 or -errno.  NULL: the engine has no such step.
 */
struct djp_apply_ops {
	/* 1: each site's new handler list (made, not published) and way;
	 * may refuse the batch (-EBUSY: a site holds bytes that are not
	 * what its state says; -ENOMEM) */
	int (*decide)(void *ctx);
	/* 2: a trampoline for each new jump that has none (a site that
	 * cannot have one becomes a trap) */
	int (*tramps)(void *ctx);
	/* the last refusal, with the trampolines known: nothing is
	 * published or written yet */
	int (*check)(void *ctx);
	/* 3: leave the old ways the new ones do not share (djprobe.ko:
	 * disarm the jumps that go, unregister the kprobes that go) */
	int (*leave)(void *ctx);
	/* 4: publish the new lists (RCU); true when an old list was
	 * retired, so that step 6 owes a grace period */
	bool (*publish)(void *ctx);
	/* 5: enter the new ways (user space: every site, in one int3
	 * bootstrap, which leaves the old ways too) */
	int (*enter)(void *ctx);
	/* after a failure of 3 or 5 that followed 4: put the old lists back
	 * (the new ones are then the retired ones).  NULL: the new lists
	 * stay, and the engine's caller applies again */
	void (*unpublish)(void *ctx);
	/* 6: after a grace period when `grace`, free the retired lists;
	 * `err` is the batch's result */
	void (*retire)(void *ctx, bool grace, int err);
	/* the new lists were never published: free them */
	void (*discard)(void *ctx);
};

/* Publish (step 4) before leaving the old ways (step 3): the sites that
 * leave take the new, shorter or empty lists meanwhile, and the grace
 * period runs beside the disarming.  Without it, step 3 may still refuse
 * the batch with nothing published. */
#define DJP_APPLY_PUBLISH_FIRST 1u

/* Run the steps of `ops` on the batch `ctx`; 0 or the first -errno. */
int djp_apply_steps(const struct djp_apply_ops *ops, void *ctx, unsigned flags);

#endif
