/*
 * Probe scripts against live processes: `djp -c CMD` and `djp -x PID` run a
 * script on the events the agent records, with the example request server
 * as the target; and the errors that come before anything is armed.
 */
#include <signal.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

static const char *server(void)
{
	static char p[4096];
	snprintf(p, sizeof(p), "%s", djp_test_path("../examples/reqserver"));
	return p;
}

TEST_TIMEOUT(script_live_c_counts_every_request, 60)
{
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "%s --requests 200 --threads 4", server());
	char *argv[] = { (char *)tt_djp(), "-c", cmd, "-e",
			 "global n; probe process.mark(\"req_*\") { n[$$name]++ }\n"
			 "probe end { printf(\"total=%d start=%d\\n\", n[\"req_done\"] + n[\"req_error\"], n[\"req_start\"]) }",
			 NULL };
	struct tproc *p = tt_spawn(argv, false, -1);
	int st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st));
	CHECK_EQ(WEXITSTATUS(st), 0);
	if (!strstr(p->obuf, "total=200 start=200\n"))
		djp_test_fail(__FILE__, __LINE__, "output: %s / %s", p->obuf, p->ebuf);
}

TEST_TIMEOUT(script_live_histogram_per_kind, 60)
{
	char cmd[4300];
	snprintf(cmd, sizeof(cmd), "%s --requests 100 --threads 2", server());
	char *argv[] = { (char *)tt_djp(), "-c", cmd, "-e",
			 "global lat; probe process.mark(\"req_done\") { lat[$kind] <<< $latency_ns }\n"
			 "probe end { foreach (k in lat) { println(k); print(@hist_log(lat[k])) } }",
			 NULL };
	struct tproc *p = tt_spawn(argv, false, -1);
	int st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(tt_count(p->obuf, "value |") >= 2);
	CHECK(strstr(p->obuf, "get\n") || strstr(p->obuf, "put\n"));
}

TEST_TIMEOUT(script_live_x_attaches_and_leaves_text_restored, 60)
{
	char *sv[] = { (char *)server(), "--requests", "0", "--threads", "2", "--rate", "2000", NULL };
	struct tproc *srv = tt_spawn(sv, true, -1);
	char pid[16];
	CHECK(tt_wait_agent(srv->pid, 10000));
	snprintf(pid, sizeof(pid), "%d", (int)srv->pid);
	char *argv[] = { (char *)tt_djp(), "-x", pid, "-e",
			 "global n; probe process.mark(\"req_done\") { n++ } probe timer.ms(500) { exit() }\n"
			 "probe end { printf(\"done=%d\\n\", n > 0) }",
			 NULL };
	struct tproc *p = tt_spawn(argv, false, -1);
	int st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "done=1\n"));
	CHECK(kill(srv->pid, 0) == 0); /* still running */
	CHECK(tt_wait_restored(srv->pid, server(), 2000));
	tt_kill(srv);
}

TEST_TIMEOUT(script_live_errors_before_arming, 30)
{
	char cmd[4300];
	struct tproc *p;
	int st;
	/* no process given */
	char *a1[] = { (char *)tt_djp(), "-e", "probe process.mark(\"req_done\") { }", NULL };
	p = tt_spawn(a1, false, -1);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK_EQ(tt_lines(p->ebuf), 1);
	/* a field that the marker does not have: names the ones it has */
	snprintf(cmd, sizeof(cmd), "%s --requests 10", server());
	char *a2[] = { (char *)tt_djp(), "-c", cmd, "-e", "probe process.mark(\"req_done\") { println($nosuch) }", NULL };
	p = tt_spawn(a2, false, -1);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK(strstr(p->ebuf, "latency_ns"));
	/* a command that cannot be executed */
	char *a3[] = { (char *)tt_djp(), "-c", "/nonexistent/cmd", "-e", "probe process.mark(\"x\") { }", NULL };
	p = tt_spawn(a3, false, -1);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	CHECK_EQ(tt_lines(p->ebuf), 1);
}

TEST_TIMEOUT(script_list_probe_points_of_a_file, 30)
{
	char pp[4300];
	snprintf(pp, sizeof(pp), "process(\"%s\").mark(\"req_*\")", server());
	char *a1[] = { (char *)tt_djp(), "-l", pp, NULL };
	struct tproc *p = tt_spawn(a1, false, -1);
	int st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_EQ(tt_count(p->obuf, ".mark(\"req_"), 3);
	char *a2[] = { (char *)tt_djp(), "-L", pp, NULL };
	p = tt_spawn(a2, false, -1);
	st = tt_finish(p, 10000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK(strstr(p->obuf, "mark(\"req_done\") $id:long $kind:string $latency_ns:long"));
	/* functions and markers in one list, as many as corpus_target has:
	 * the list grows past the room the markers alone took (it wrote
	 * past its end, and glibc aborted on the heap it had corrupted) */
	{
		char both[8900], fn[4400], mk[4400], prog[4096];
		long fns, mks;
		snprintf(prog, sizeof(prog), "%s", djp_test_path("trace_progs/corpus_target"));
		snprintf(fn, sizeof(fn), "process(\"%s\").function(\"*\")", prog);
		snprintf(mk, sizeof(mk), "process(\"%s\").mark(\"*\")", prog);
		snprintf(both, sizeof(both), "%s, %s", fn, mk);
		char *a3[] = { (char *)tt_djp(), "-l", fn, NULL };
		p = tt_spawn(a3, false, -1);
		st = tt_finish(p, 10000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		fns = tt_count(p->obuf, ".function(\"");
		char *a4[] = { (char *)tt_djp(), "-l", mk, NULL };
		p = tt_spawn(a4, false, -1);
		st = tt_finish(p, 10000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		mks = tt_count(p->obuf, ".mark(\"");
		CHECK(fns >= 5 && mks >= 5);
		char *a5[] = { (char *)tt_djp(), "-l", both, NULL };
		p = tt_spawn(a5, false, -1);
		st = tt_finish(p, 10000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		CHECK_EQ(tt_count(p->obuf, ".function(\""), fns);
		CHECK_EQ(tt_count(p->obuf, ".mark(\""), mks);
	}
}

/* A burst faster than the script can count loses events: the script's
 * count and the lost events the tool reports add up to the burst, and
 * when events were lost a warning says how many. */
TEST_TIMEOUT(script_live_reports_lost_events, 60)
{
	char cmd[4300];
	const long burst = 1000000;
	long counted = -1, lost = 0;
	const char *w;
	char line[64];
	snprintf(cmd, sizeof(cmd), "%s --ticks 0", tt_target(false));
	char *argv[] = { (char *)tt_djp(), "-c", cmd, "-e",
			 "global n; probe process.mark(\"tt_burst\") { n++ }\n"
			 "probe end { printf(\"counted=%d\\n\", n) }",
			 NULL };
	struct tproc *p = tt_spawn(argv, false, -1);
	int st;
	CHECK(tt_wait_out(p, "ready ", 10000));
	snprintf(line, sizeof(line), "burst %ld\n", burst);
	tt_send(p, line);
	CHECK(tt_wait_out(p, "burst 1000000 ", 20000));
	close(p->in); /* end of input: the target exits */
	p->in = -1;
	st = tt_finish(p, 30000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	if ((w = strstr(p->obuf, "counted=")))
		counted = atol(w + 8);
	if ((w = strstr(p->ebuf, "djp: WARNING: ")))
		lost = atol(w + 14);
	if (counted < 0 || counted + lost != burst || (lost && !strstr(p->ebuf, " events lost (")))
		djp_test_fail(__FILE__, __LINE__, "counted %ld, lost %ld of %ld: %s / %s", counted, lost, burst,
			      p->obuf, p->ebuf);
	printf("# counted %ld, lost %ld\n", counted, lost);
}
