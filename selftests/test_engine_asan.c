/* The disconnect guarantee under AddressSanitizer (asan/disconnect_asan). */
#include <sys/wait.h>

#include "harness.h"

TEST_TIMEOUT(disconnect_guarantee_asan, 120)
{
	char cmd[4200];
	int st;
	snprintf(cmd, sizeof(cmd), "ASAN_OPTIONS=detect_leaks=0 %s 500", djp_test_path("asan/disconnect_asan"));
	st = system(cmd);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
}
