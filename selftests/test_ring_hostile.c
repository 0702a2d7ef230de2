/*
 * The producer never trusts memory the consumer can write: a target records
 * through the real recorder while a forked process scribbles on every shared
 * header word (selftests/progs/hostile_ring.c).  Before the producer kept its
 * position to itself, a head of 2^64 - 8 sent the fast path's stores past the
 * end of the last ring.
 */
#include <sys/wait.h>

#include "harness.h"

static void run_hostile(const char *prog, const char *mode)
{
	char cmd[512];
	int status;

	snprintf(cmd, sizeof(cmd), "%s 1 %s >/dev/null", djp_test_path(prog), mode);
	status = system(cmd);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		djp_test_fail(__FILE__, __LINE__, "%s %s: %s %d", prog, mode,
			      WIFSIGNALED(status) ? "killed by signal" : "exit", WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

TEST(ring_hostile_consumer_discard)
{
	run_hostile("progs/hostile_ring", "discard");
	run_hostile("progs/hostile_ring-O0", "discard");
}

TEST(ring_hostile_consumer_overwrite)
{
	run_hostile("progs/hostile_ring", "overwrite");
	run_hostile("progs/hostile_ring-O0", "overwrite");
}
