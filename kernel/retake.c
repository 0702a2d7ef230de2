/*
 * Retaking the sites given up to another tool's breakpoint.
 *
 * The batch code gives a site up when another tool's uprobe takes it over
 * (kernel/arm.c, djp_sites_yield_to_foreign_traps): idle, its handler list
 * kept, `yielded`.  Once the other tool has gone, the site's bytes are the
 * file's again, and the site is armed again for the list it kept: the same
 * list made anew and applied, an ordinary batch with every check of one
 * (a site that holds a foreign int3 again is -EBUSY, a thread that blocks
 * SIGTRAP -EDEADLK; either waits for the next look).
 *
 * Deciding a site's list is the attach code's (kernel/attach.c); the batch
 * code only reports which sites are whole again.  So this lies above both,
 * called by the agent's periodic look (kernel/dlhooks.c).
 */
#include <errno.h>
#include <stdlib.h>

#include "kernel/arming.h"
#include "kernel/lock.h"
#include "kernel/probes.h"

int djp_sites_retake(void)
{
	DJP_LOCK_HELD();
	struct site_vec sv = { 0 };
	int err;

	sv.n = sv.cap = djp_sites_yielded_whole(&sv.v);
	/* each its own list again (no probe has id -1): the batch arms them */
	err = djp_change_probe(&sv, NULL, -1);
	free(sv.v);
	/* taken again meanwhile, or a thread blocks SIGTRAP now: next time */
	return err == -EBUSY || err == -EDEADLK ? 0 : err;
}
