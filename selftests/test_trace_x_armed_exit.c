/*
 * `djp trace -x PID` on a process that exits as soon as it is armed: the
 * tool's last configuration requests (FOLLOW, after CONNECT armed the
 * site) meet a closed session.  That is the process's end, not an error:
 * the trace ends as for any process that exits ("the process exited"),
 * with every event its rings hold.  all_target waits until its site is a
 * jump, hits it 50 times and exits at once, so its exit falls inside the
 * configuration in some of the rounds.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "test_trace_util.h"

TEST_TIMEOUT(trace_x_process_exiting_as_it_is_armed_ends_the_trace, 180)
{
	for (int round = 0; round < 20; round++) {
		struct tproc *t = tt_spawn((char *const[]){ (char *)djp_test_path("trace_progs/all_target"), NULL },
					   false, -1), *p;
		unsigned long long ev, lost;
		char pid[16];
		int st;

		CHECK(tt_wait_out(t, "up ", 10000));
		snprintf(pid, sizeof(pid), "%d", (int)t->pid);
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", pid, "at_hit", NULL }, false, -1);
		st = tt_finish(p, 60000);
		if (!WIFEXITED(st) || WEXITSTATUS(st) || !strstr(p->ebuf, "the process exited"))
			djp_test_fail(__FILE__, __LINE__, "round %d: status %#x: %s", round, st, p->ebuf);
		if (!tt_summary_row(p->ebuf, "at_hit", &ev, &lost) || ev != 50 || lost ||
		    tt_count(p->obuf, " at_hit i=") != 50)
			djp_test_fail(__FILE__, __LINE__, "round %d: not 50 events: %s", round, p->ebuf);
		CHECK_EQ(tt_finish(t, 10000), 0);
		free(p);
		free(t);
	}
}
