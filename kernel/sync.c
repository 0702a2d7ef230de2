/*
 * Serialising every core after a text write: the "sync" of the int3
 * bootstrap.
 *
 * membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE) makes every thread
 * of the process execute a core-serialising instruction before it next
 * runs user code (Linux 4.16+; the process registers once).  Where it is
 * missing, or when DJP_SYNC=freeze asks for it, a freeze/thaw of all
 * threads serves instead: every thread stops in a signal handler and
 * executes cpuid before it returns to the code it was running.  The
 * patching thread itself needs only the branch that follows its stores.
 */
#include <errno.h>
#include <linux/membarrier.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/engine.h"
#include "lib/sysops.h"

static int use_membarrier;

int djp_sync_init(void)
{
	const char *want = getenv("DJP_SYNC");
	int q;
	if (want && !strcmp(want, "freeze"))
		return 0;
	q = djp_sys_membarrier(MEMBARRIER_CMD_QUERY, 0);
	if (q < 0 || !(q & MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE))
		return 0;
	if (djp_sys_membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED_SYNC_CORE, 0))
		return 0;
	use_membarrier = 1;
	return 0;
}

int djp_sync_cores(void)
{
	int r;
	if (use_membarrier)
		r = djp_sys_membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED_SYNC_CORE, 0);
	else
		r = djp_freeze_sync();
	arch_serialize();
	return r;
}
