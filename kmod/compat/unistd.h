/* Kernel shim of <unistd.h> (see errno.h).  usleep() only paces the
 * retries of the bootstrap's rollback (arch/x86/text_poke.c), which may run
 * inside stop_machine: a busy wait is what fits every context there. */
#include <linux/delay.h>
#define usleep(us) udelay(us)
