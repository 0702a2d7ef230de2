/*
 * cpu(): a script that calls it has every hit record its CPU (CONNECT's
 * DJP_CONNECT_CPU, the ring's DJP_EVF_CPU).  The tool and the program are
 * pinned to one CPU at a time, so every hit must say that CPU; on a CPU
 * other than 0 a missing record (cpu() 0) fails.
 */
#include <limits.h>
#include <sched.h>

#include "golden_files.h"
#include "harness.h"
#include "test_trace_util.h"

static const char *corpus_target(char *buf, size_t n)
{
	snprintf(buf, n, "%s", djp_test_path("trace_progs/corpus_target"));
	return buf;
}

TEST_TIMEOUT(script_cpu_is_the_cpu_of_the_hit, 120)
{
	cpu_set_t all, one;
	char target[PATH_MAX], want[64];
	int tested = 0;

	CHECK_EQ(sched_getaffinity(0, sizeof(all), &all), 0);
	for (int c = CPU_SETSIZE - 1; c >= 0 && tested < 2; c--) {
		char *argv[] = { (char *)tt_djp(), "-c", (char *)corpus_target(target, sizeof(target)), "-e",
				 "global on\n"
				 "probe process.mark(\"request_done\") { on[cpu()]++ }\n"
				 "probe end { foreach (c in on) printf(\"%d %d\\n\", c, on[c]) }",
				 NULL };
		struct golden_result r;
		if (!CPU_ISSET(c, &all))
			continue;
		CPU_ZERO(&one);
		CPU_SET(c, &one);
		CHECK_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
		golden_run("/", argv, &r);
		CHECK_EQ(sched_setaffinity(0, sizeof(all), &all), 0);
		snprintf(want, sizeof(want), "%d 200\n", c);
		if (r.status || strcmp(r.out, want))
			djp_test_fail(__FILE__, __LINE__, "pinned to CPU %d: status %d, output [%s], stderr [%s]", c,
				      r.status, r.out, r.err);
		free(r.out);
		free(r.err);
		tested++;
	}
	CHECK(tested >= 1);
}
