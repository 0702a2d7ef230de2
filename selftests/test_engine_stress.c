/* The concurrency stress, briefly, in both sync modes (the long run is
 * `make stress DURATION=600`). */
#include <sys/wait.h>

#include "harness.h"

static void stress(const char *env)
{
	char cmd[4200];
	int st;
	snprintf(cmd, sizeof(cmd), "%s %s 3", env, djp_test_path("progs/engine_stress"));
	st = system(cmd);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}

TEST_TIMEOUT(stress_membarrier, 60)
{
	stress("DJP_SYNC=membarrier");
}

TEST_TIMEOUT(stress_shootdown, 60)
{
	stress("DJP_SYNC=shootdown");
}
