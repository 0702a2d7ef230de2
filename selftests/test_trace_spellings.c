/*
 * bpftrace's spellings of djp trace's options: -p PID for -x PID, and
 * -f json / -f text for --json and the default lines, so that a user's
 * fingers from the other tool do the right thing, and a wrong -f says so.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include "harness.h"
#include "test_trace_util.h"

/* djp trace -f FORMAT -c the target ticking three times: its stdout. */
static struct tproc *ticks_as(const char *format)
{
	char cmd[4096];
	struct tproc *p;

	snprintf(cmd, sizeof(cmd), "%s --ticks 3 --tick-us 1000 --no-stdin", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "-f", (char *)format, "tt_tick", NULL },
		     false, -1);
	return p;
}

TEST(trace_f_json_and_f_text_are_bpftraces_spellings)
{
	struct tproc *p = ticks_as("json");

	CHECK_EQ(tt_finish(p, 20000), 0);
	CHECK_EQ(tt_count(p->obuf, "{\"ts_ns\":"), 3);
	CHECK_EQ(tt_count(p->obuf, "\"name\":\"tt_tick\""), 3);
	free(p);
	p = ticks_as("text");
	CHECK_EQ(tt_finish(p, 20000), 0);
	CHECK_EQ(tt_count(p->obuf, " tt_tick i="), 3);
	CHECK(!strstr(p->obuf, "{\"ts_ns\":"));
	free(p);
	p = ticks_as("xml");
	CHECK_EQ(tt_finish(p, 20000), 2 << 8);
	CHECK(strstr(p->ebuf, "-f takes text, json, perfetto, html or ctf"));
	CHECK(!strstr(p->obuf, "tt_tick"));
	free(p);
}

TEST(trace_p_attaches_as_x_does)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--tick-us", "20000", NULL }, true, -1);
	struct tproc *p;
	char pid[16];

	CHECK(tt_wait_out(t, "ready", 10000));
	CHECK(tt_wait_agent(t->pid, 10000));
	snprintf(pid, sizeof(pid), "%d", (int)t->pid);
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-p", pid, "tt_evil", NULL }, false, -1);
	CHECK(tt_wait_armed(t->pid, tt_target(false), 10000));
	tt_send(t, "evil 2\n");
	CHECK(tt_wait_out(t, "evil done", 10000));
	CHECK(tt_wait_out(p, "\\\\z\n", 10000));
	kill(p->pid, SIGINT);
	CHECK_EQ(tt_finish(p, 10000), 0);
	CHECK_EQ(tt_count(p->obuf, " tt_evil "), 2);
	tt_kill(t);
	free(p);
	free(t);
}
