/*
 * `djp trace` follows forks: a child of the traced process dials the tool
 * before its fork returns (FOLLOW, kernel/trace/agent.c), gets the same
 * probes in a ring of its own, and its events carry its pid.  Counted
 * exactly per process, under -c (the agent preloaded) and under -x (the
 * agent injected).
 */
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

/* Launch or attach (with the target started by the test, no agent), make
 * the target fork n children of k events each, and check the counts. */
static void follow(bool attach, long n, long k)
{
	struct tproc *t = NULL, *p;
	unsigned long long total;
	char line[64], spid[16], expect[64];
	int st, blocks, others;

	if (attach) {
		t = tt_spawn((char *const[]){ (char *)tt_target(false), "--ticks", "0", NULL }, false, -1);
		CHECK(tt_wait_out(t, "ready", 10000));
		snprintf(spid, sizeof(spid), "%d", (int)t->pid);
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "tt_burst", NULL }, false, -1);
		CHECK(tt_wait_armed(t->pid, tt_target(false), 10000));
	} else {
		char cmd[4200];
		snprintf(cmd, sizeof(cmd), "%s --ticks 0", tt_target(false));
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "tt_burst", NULL }, false, -1);
		CHECK(tt_wait_out(p, "ready", 10000));
		t = p; /* the command's stdin is the tool's */
	}
	snprintf(line, sizeof(line), "fork %ld %ld\n", n, k);
	snprintf(expect, sizeof(expect), "forked %ld", n);
	tt_send(t, line);
	CHECK(tt_wait_out(t, expect, 30000));
	if (attach) {
		kill(p->pid, SIGINT);
		st = tt_finish(p, 20000);
	} else {
		close(p->in);
		p->in = -1;
		st = tt_finish(p, 20000);
	}
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	blocks = tt_summary_sum(p->ebuf, "tt_burst", &total, &others);
	if (blocks != n || total != (unsigned long long)(n * k) || others != 1)
		djp_test_fail(__FILE__, __LINE__, "%d processes with events (%d without), %llu events: %s", blocks, others,
			      total, p->ebuf);
	/* every event line names its process: a child, never the parent */
	if (strstr(p->obuf, " tt_burst ") && t != p) {
		char needle[32];
		snprintf(needle, sizeof(needle), " %d %d tt_burst", (int)t->pid, (int)t->pid);
		CHECK(!strstr(p->obuf, needle));
	}
	if (attach) {
		close(t->in);
		t->in = -1;
		st = tt_finish(t, 10000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		free(t);
	}
	free(p);
}

TEST_TIMEOUT(trace_follows_forked_children, 120)
{
	follow(false, 20, 100);
}

TEST_TIMEOUT(trace_follows_forks_of_an_injected_process, 120)
{
	follow(true, 5, 50);
}

/* A script follows forks too: pid() is the child's, counts exact per pid. */
TEST_TIMEOUT(script_follows_forked_children, 120)
{
	char cmd[4200];
	struct tproc *p;
	int st, lines = 0;
	const char *l;
	snprintf(cmd, sizeof(cmd), "%s --ticks 0", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "-c", cmd, "-e",
				      "global c; probe process.mark(\"tt_burst\") { c[pid()]++ }\n"
				      "probe end { foreach (p in c) printf(\"pid %d: %d\\n\", p, c[p]) }",
				      NULL },
		     false, -1);
	CHECK(tt_wait_out(p, "ready", 10000));
	tt_send(p, "fork 10 100\n");
	CHECK(tt_wait_out(p, "forked 10", 30000));
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	for (l = p->obuf; (l = strstr(l, "pid ")); l++) {
		int pid, n;
		CHECK_EQ(sscanf(l, "pid %d: %d", &pid, &n), 2);
		if (n != 100 || pid == atoi(strstr(p->obuf, "ready ") + 6))
			djp_test_fail(__FILE__, __LINE__, "pid %d counted %d: %s", pid, n, p->obuf);
		lines++;
	}
	if (lines != 10)
		djp_test_fail(__FILE__, __LINE__, "%d processes: %s / %s", lines, p->obuf, p->ebuf);
	free(p);
}
