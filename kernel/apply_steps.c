/*
 * The six steps of a batch, for both engines (apply_steps.h has the steps).
 *
 * Every change of the probes or the sites (a connect, a disconnect, an
 * object or a module that comes or goes) moves the sites it concerns from
 * the way they are to the way their new handler lists ask for, in one
 * batch: decide (1), find trampolines (2), refuse if need be, leave the old
 * ways (3), publish the lists (4), enter the new ways (5), retire the old
 * lists after a grace period (6).  Both engines run that order; they
 * differ in what a step is made of, which the ops say:
 *
 *   - user space's text holds both its armed ways (an int3 and a jump are
 *     bytes of its own), so its step 5 is one int3 bootstrap that leaves
 *     the old way and enters the new one at every site: it has no step 3;
 *     djprobe.ko's trap is a kprobe, so it leaves in one batch and
 *     unregister_kprobe() (3) and enters in register_kprobe() and another
 *     batch (5);
 *   - djprobe.ko publishes first when the change only takes handlers away
 *     (DJP_APPLY_PUBLISH_FIRST), so that the grace period of step 6 runs
 *     while step 3 writes; a connect publishes after step 3, which may
 *     still refuse it.
 *
 * What a failure undoes is decided here, once.  Before step 4 nothing is
 * published: the new lists are freed (discard) and the text is as it was,
 * each step having rolled back its own writes.  After step 4, an engine
 * that can put the old lists back does (unpublish: user space, whose
 * failed bootstrap left every site's bytes as they were), and step 6 then
 * retires the new lists after a grace period, since a hit may have run
 * them; one that cannot (djprobe.ko, whose kprobes may be half
 * registered) keeps them, and its caller applies again without the probe
 * that failed.  Step 6 runs whenever step 4 did.
 */
#include "kernel/apply_steps.h"

int djp_apply_steps(const struct djp_apply_ops *ops, void *ctx, unsigned flags)
{
	bool published = false, grace = false;
	int err;

	err = ops->decide(ctx);
	if (!err && ops->tramps)
		err = ops->tramps(ctx);
	if (!err && ops->check)
		err = ops->check(ctx);
	if (err)
		goto unpublished;
	if (flags & DJP_APPLY_PUBLISH_FIRST) {
		grace = ops->publish(ctx);
		published = true;
	}
	if (ops->leave)
		err = ops->leave(ctx);
	if (err && !published)
		goto unpublished;
	if (!published)
		grace = ops->publish(ctx);
	if (!err)
		err = ops->enter(ctx);
	if (err && ops->unpublish) {
		ops->unpublish(ctx);
		grace = true; /* the new lists are retired now: a hit may be running them */
	}
	ops->retire(ctx, grace, err);
	return err;
unpublished:
	ops->discard(ctx);
	return err;
}
