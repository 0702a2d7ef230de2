/*
 * `djp trace` follows forks: a child of the traced process dials the tool
 * before its fork returns (FOLLOW, kernel/agent/agent.c), gets the same
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
		/* every child's events printed before the tool is told to stop:
		 * ^C ends a trace with what it has read */
		for (int i = 0; i < 500 && tt_count(p->obuf, " tt_burst ") < n * k; i++)
			tt_wait_out(p, "\n\n", 20); /* reads what there is */
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

/* -x of a process that execs: the preload does not travel, so the tool
 * injects the agent into the new program and arms the same patterns; the
 * events before and after are all there, under the one pid.  As djp trace
 * and as a script. */
static void exec_under_x(bool script)
{
	struct tproc *t = tt_spawn((char *const[]){ (char *)tt_target(false), "--ticks", "0", NULL }, false, -1);
	struct tproc *p;
	char spid[16];
	int st;

	CHECK(tt_wait_out(t, "ready", 10000));
	snprintf(spid, sizeof(spid), "%d", (int)t->pid);
	if (script)
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "-x", spid, "-e",
					      "global c; probe process.mark(\"tt_burst\") { c[pid(), $a < 100]++ }\n"
					      "probe end { foreach ([p, small] in c) printf(\"%d %d: %d\\n\", p, small, "
					      "c[p, small]) }",
					      NULL },
			     false, -1);
	else
		p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-x", spid, "tt_burst", NULL }, false, -1);
	CHECK(tt_wait_armed(t->pid, tt_target(false), 10000));
	tt_send(t, "burst 30\n");
	CHECK(tt_wait_out(t, "burst 30 ", 10000));
	tt_send(t, "exec\n");
	t->olen = 0; /* the new program says ready again */
	t->obuf[0] = 0;
	CHECK(tt_wait_out(t, "ready", 10000));
	CHECK(tt_wait_armed(t->pid, tt_target(false), 10000));
	tt_send(t, "burst 200\n");
	CHECK(tt_wait_out(t, "burst 200 ", 10000));
	close(t->in); /* it exits; the trace ends with it */
	t->in = -1;
	st = tt_finish(t, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if (script) {
		char want[64];
		/* 30 before (a < 100 all), 200 after: 100 small and 100 not */
		snprintf(want, sizeof(want), "%s 1: 130\n", spid);
		CHECK(strstr(p->obuf, want) != NULL);
		snprintf(want, sizeof(want), "%s 0: 100\n", spid);
		CHECK(strstr(p->obuf, want) != NULL);
	} else {
		unsigned long long total;
		int others;
		char needle[32];
		/* two blocks: before the exec and after, both of this pid */
		CHECK_EQ(tt_summary_sum(p->ebuf, "tt_burst", &total, &others), 2);
		CHECK_EQ(total, 230);
		snprintf(needle, sizeof(needle), " %d %d tt_burst", (int)t->pid, (int)t->pid);
		CHECK_EQ(tt_count(p->obuf, needle), 230);
		CHECK(strstr(p->ebuf, "the process exited") != NULL);
	}
	free(p);
	free(t);
}

TEST_TIMEOUT(trace_x_follows_exec, 60)
{
	exec_under_x(false);
}

TEST_TIMEOUT(script_x_follows_exec, 60)
{
	exec_under_x(true);
}

/* A hundred processes at once, as a pre-fork server starts its workers:
 * one tool drains them all, every event of every one, none lost; and five
 * that are killed (SIGKILL, no exit of their own) right after their last
 * event keep every event up to their death, each reported as a process
 * that ended during the trace.  (The rate a tool sustains this way is a
 * benchmark: bench/trace_many.) */
TEST_TIMEOUT(trace_a_hundred_processes_and_the_killed, 120)
{
	char cmd[4200];
	struct tproc *p;
	unsigned long long total, ev, lost;
	int st, others, blocks;
	const char *b;

	snprintf(cmd, sizeof(cmd), "%s --ticks 0", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "-o", "/dev/null", "tt_burst", NULL }, false,
		     -1);
	CHECK(tt_wait_out(p, "ready", 10000));
	tt_send(p, "fork 100 2000 2000\n"); /* a second, 200,000 events a second in all */
	CHECK(tt_wait_out(p, "forked 100", 60000));
	tt_send(p, "fork 5 300 0 die\n");
	CHECK(tt_wait_out(p, "forked 5", 30000));
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	blocks = tt_summary_sum(p->ebuf, "tt_burst", &total, &others);
	if (blocks != 105 || total != 100 * 2000 + 5 * 300)
		djp_test_fail(__FILE__, __LINE__, "%d processes, %llu events: %.2000s", blocks, total, p->ebuf);
	/* none lost anywhere, each process's count exact */
	for (b = p->ebuf; (b = strstr(b, "djp trace: process ")); b++) {
		const char *line_end = strchr(b, '\n');
		if (!strstr(b, ": 0 events,") || strstr(b, ": 0 events,") > line_end) {
			CHECK(tt_summary_row(b, "tt_burst", &ev, &lost));
			CHECK(ev == 2000 || ev == 300);
			CHECK_EQ(lost, 0);
			if (!(strstr(b, "; ended during the trace") && strstr(b, "; ended during the trace") < line_end))
				djp_test_fail(__FILE__, __LINE__, "block: %.600s", b);
		}
	}
	free(p);
}

/* fork then exec, under -c: the preload travels in the environment, the
 * exec'd program dials in before its main, and its events (fired at the
 * very start of main) are all there, each under its own pid. */
TEST_TIMEOUT(trace_follows_fork_and_exec, 60)
{
	char cmd[4200];
	struct tproc *p;
	unsigned long long total;
	int st, others;

	snprintf(cmd, sizeof(cmd), "%s --ticks 0", tt_target(false));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "-c", cmd, "tt_burst", NULL }, false, -1);
	CHECK(tt_wait_out(p, "ready", 10000));
	tt_send(p, "spawn 6 40\n");
	CHECK(tt_wait_out(p, "spawned 6", 30000));
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 20000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* six exec'd programs with 40 each; the parent and the six children
	 * before their exec recorded none */
	if (tt_summary_sum(p->ebuf, "tt_burst", &total, &others) != 6 || total != 240)
		djp_test_fail(__FILE__, __LINE__, "%llu events: %s", total, p->ebuf);
	free(p);
}
