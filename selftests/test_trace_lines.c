/* Line probes fire once each time the line's code is entered, as gdb's
 * breakpoint on the line stops: trace_progs/line_target.c at -O0, whose
 * loop body has two consecutive rows in the line table, under `djp trace
 * line:FILE:LINE` and a script's process.statement("FUNC@FILE:LINE"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

static const char *line_target(void)
{
	static char p[4096];
	if (!p[0])
		snprintf(p, sizeof(p), "%s", djp_test_path("trace_progs/line_target"));
	return p;
}

/* The line of line_target.c that carries "tag: TAG". */
static int lt_line(const char *tag)
{
	char want[64];
	snprintf(want, sizeof(want), "tag: %s ", tag);
	return tt_source_line("line_target.c", want);
}

/* Events of `djp trace -c "line_target N" line:line_target.c:LINE`. */
static int traced(int line, long n)
{
	char cmd[4200], point[64];
	struct tproc *p;
	int st, events;

	snprintf(cmd, sizeof(cmd), "%s %ld", line_target(), n);
	snprintf(point, sizeof(point), "line:line_target.c:%d", line);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, point, NULL }, false, -1);
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "sum ") != NULL);
	events = tt_count(p->obuf, " func:lt_loop+");
	free(p);
	return events;
}

/* The body's two rows are one entry: n events for n passes, not 2n; the
 * loop's header, entered once before the loop and once from each pass
 * (its condition is reached from its own increment), n + 1. */
TEST_TIMEOUT(trace_line_fires_once_per_entry, 60)
{
	CHECK_EQ(traced(lt_line("loop-body"), 1000), 1000);
	CHECK_EQ(traced(lt_line("loop-header"), 1000), 1001);
}

TEST_TIMEOUT(script_statement_fires_once_per_entry, 60)
{
	char cmd[4200], script[512];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s 1000", line_target());
	snprintf(script, sizeof(script),
		 "global n; probe process.statement(\"lt_loop@line_target.c:%d\") { n++ } "
		 "probe end { printf(\"n=%%d\\n\", n) }",
		 lt_line("loop-body"));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e", script, NULL }, false, -1);
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (!strstr(p->obuf, "n=1000\n"))
		djp_test_fail(__FILE__, __LINE__, "the script printed %s", p->obuf);
	free(p);
}
