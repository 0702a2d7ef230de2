/*
 * The rings of a script's target: stap's -s (MB per ring) and -b (bulk),
 * and djp trace's --buffer-size, set the size of each thread's ring.
 *
 * The target is trace_progs/agg_target.c.  The tool is stopped (SIGSTOP)
 * while the target fires, so that what a ring holds decides, whatever the
 * machine's load: 2 threads x 100000 events of 24 bytes, more than the
 * default 1 MiB ring of a thread holds, less than 16 or 64 MiB.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

/* djp OPTS... -c "agg_target --threads 2 --hits 100000" -e SCRIPT, the
 * tool stopped while the target fires; the events the script printed and
 * those the warning says were lost, which add up to the target's hits. */
static long long printed_and_lost(const char *const *opts, long long *lost)
{
	static const char script[] = "global printed\n"
				     "probe process.mark(\"agg_hit\") { printed++; printf(\"v\\n\") }\n"
				     "probe end { printf(\"printed=%d\\n\", printed) }\n";
	char cmd[4400], *argv[16];
	const char *w;
	long long printed, hits;
	struct tproc *p;
	int n = 0, st;

	snprintf(cmd, sizeof(cmd), "%s --threads 2 --hits 100000", djp_test_path("trace_progs/agg_target"));
	argv[n++] = (char *)tt_djp();
	for (; opts && *opts; opts++)
		argv[n++] = (char *)*opts;
	argv[n++] = "-c";
	argv[n++] = cmd;
	argv[n++] = "-e";
	argv[n++] = (char *)script;
	argv[n] = NULL;
	p = tt_spawn(argv, false, -1);
	CHECK(tt_wait_out(p, "ready ", 20000));
	kill(p->pid, SIGSTOP);
	tt_send(p, "go\n");
	CHECK(tt_wait_out(p, "\ndone\n", 60000));
	kill(p->pid, SIGCONT);
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 60000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK((w = strstr(p->obuf, "\ntotal ")) && sscanf(w, "\ntotal %lld", &hits) == 1);
	CHECK((w = strstr(p->obuf, "printed=")));
	printed = atoll(w + 8);
	*lost = (w = strstr(p->ebuf, "djp: WARNING: ")) ? atoll(w + 14) : 0;
	if (printed + *lost != hits || tt_count(p->obuf, "\nv") != printed)
		djp_test_fail(__FILE__, __LINE__, "printed %lld, lost %lld of %lld: %s", printed, *lost, hits, p->ebuf);
	free(p);
	return hits;
}

TEST_TIMEOUT(script_ring_options_set_the_rings, 240)
{
	const char *tiny[] = { "--buffer-size", "16384", NULL }, *s64[] = { "-s", "64", NULL }, *bulk[] = { "-b", NULL },
		   *s1[] = { "-s", "1", NULL };
	long long hits, lost;

	hits = printed_and_lost(NULL, &lost);
	CHECK(lost > 0);
	printf("# default rings: %lld of %lld events lost\n", lost, hits);
	printed_and_lost(s1, &lost);
	CHECK(lost > 0);
	hits = printed_and_lost(tiny, &lost);
	CHECK(lost > hits - 2 * 16384 / 16); /* each ring holds at most 1024 */
	printf("# --buffer-size 16384: %lld of %lld events lost\n", lost, hits);
	printed_and_lost(s64, &lost);
	CHECK_EQ(lost, 0);
	printed_and_lost(bulk, &lost);
	CHECK_EQ(lost, 0);
}

TEST(script_ring_options_refuse_bad_sizes)
{
	static const char *const bad[][2] = { { "-s", "0" }, { "-s", "257" }, { "-s", "x" }, { "--buffer-size", "5000" },
					      { "--buffer-size", "4096" } };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { (char *)tt_djp(), (char *)bad[i][0], (char *)bad[i][1], "-e", "probe begin { exit() }",
				 NULL };
		struct tproc *p = tt_spawn(argv, false, -1);
		int st = tt_finish(p, 10000);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
		CHECK_EQ(tt_lines(p->ebuf), 1);
		CHECK(strstr(p->ebuf, bad[i][0]));
		free(p);
	}
}

/* djp trace --buffer-size below the smallest ring the agent makes: one
 * usage line, before anything is launched. */
TEST(trace_buffer_size_refuses_rings_the_agent_cannot_make)
{
	char cmd[4400];
	struct tproc *p;
	int st;

	snprintf(cmd, sizeof(cmd), "%s --threads 1 --hits 1", djp_test_path("trace_progs/agg_target"));
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--buffer-size", "8192", "-c", cmd, "agg_*", NULL },
		     false, -1);
	close(p->in); /* a target that ran would read no "go" and exit */
	p->in = -1;
	st = tt_finish(p, 20000);
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 2 || tt_lines(p->ebuf) != 1 || !strstr(p->ebuf, "--buffer-size") ||
	    strstr(p->obuf, "ready"))
		djp_test_fail(__FILE__, __LINE__, "status %#x: %s / %s", st, p->obuf, p->ebuf);
	free(p);
}
