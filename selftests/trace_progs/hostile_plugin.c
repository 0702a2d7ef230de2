/*
 * A library whose constructor waits (hostile_target --loader-waits): it
 * says "in constructor" and reads, with readv, the descriptor
 * HT_GATE_FD names until a byte comes.  The thread that loads it holds the
 * loader's lock meanwhile, so that any other thread's dlopen waits.
 */
#include <stdlib.h>
#include <sys/uio.h>
#include <unistd.h>

__attribute__((constructor)) static void wait_at_the_gate(void)
{
	const char *fd = getenv("HT_GATE_FD");
	char c;
	struct iovec v = { &c, 1 };
	if (!fd)
		return;
	if (write(1, "in constructor\n", 15) < 0)
		return;
	while (readv(atoi(fd), &v, 1) < 0)
		;
}
