/* The harness itself: a failing CHECK must fail the test (checked by
 * running this very binary on its own hidden failing test). */
#include <sys/wait.h>

#include "harness.h"

TEST(harness_fails_a_failing_check)
{
	if (getenv("DJP_HARNESS_INNER")) {
		CHECK_EQ(1 + 1, 3);
		return;
	}
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "DJP_HARNESS_INNER=1 %s -t harness_fails_a_failing_check >/dev/null 2>&1",
		 djp_test_path("djp-selftests"));
	int st = system(cmd);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 1);
}
