/*
 * Nothing lost: aggregation in the target (tools/djp/script/agg.c,
 * kernel/agent/agg.c), the rings' sizes (-s, -b, --buffer-size), and the
 * lost events counted per marker and per probe.
 *
 * The target is trace_progs/agg_target.c: threads that hit two markers as
 * fast as they can and print, once done, what a script counting them must
 * find.  Where events must be lost, the tool is stopped (SIGSTOP) while
 * the target fires, so that its rings fill whatever the machine's load.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "harness.h"
#include "test_trace_util.h"

static const char *agg_target(void)
{
	static char *p;
	if (!p)
		CHECK(p = strdup(djp_test_path("trace_progs/agg_target")));
	return p;
}

struct totals {
	long long count, sum, min, max, variance;
	long fn[3];
};

static void target_totals(const char *out, struct totals *t)
{
	const char *s = strstr(out, "\ntotal ");
	CHECK(s && sscanf(s, "\ntotal %lld %lld %lld %lld %lld", &t->count, &t->sum, &t->min, &t->max,
			  &t->variance) == 5);
	CHECK((s = strstr(out, "fn agg_fa ")) && sscanf(s, "fn agg_fa %ld", &t->fn[0]) == 1);
	CHECK((s = strstr(out, "fn agg_fb ")) && sscanf(s, "fn agg_fb %ld", &t->fn[1]) == 1);
	CHECK((s = strstr(out, "fn agg_fc ")) && sscanf(s, "fn agg_fc %ld", &t->fn[2]) == 1);
}

/* what run() adds to the target's command line */
static const char *target_extra = "";

/* djp OPTS... -c "agg_target --threads N --hits K" -e SCRIPT; the tool
 * stopped while the target fires when `stall`.  Returns the finished
 * process (stdout: the target's lines and the script's). */
static struct tproc *run(const char *const *opts, int threads, long hits, const char *script, bool stall,
			 bool no_agg)
{
	char cmd[4400];

	snprintf(cmd, sizeof(cmd), "%s --threads %d --hits %ld%s", agg_target(), threads, hits, target_extra);
	return tt_run_worker(cmd, opts, script, stall, no_agg);
}

static long long value_after(const char *out, const char *key)
{
	const char *s = strstr(out, key);
	if (!s)
		djp_test_fail(__FILE__, __LINE__, "no \"%s\" in: %s", key, out);
	return atoll(s + strlen(key));
}

/* More threads than cores, as fast as they can: every hit counted, by
 * thread and by usymname() of an argument, nothing lost, no event. */
TEST_TIMEOUT(script_agg_counts_every_hit_of_many_threads, 240)
{
	const long hits = 2000000;
	struct totals t;
	struct tproc *p = run(NULL, 4, hits,
			      "global n, per_tid, per_fn\n"
			      "probe process.mark(\"agg_hit\") { n++; per_tid[tid()]++ }\n"
			      "probe process.mark(\"agg_fn\") { per_fn[usymname($arg1)]++ }\n"
			      "probe end { printf(\"n=%d\\n\", n)\n"
			      "  foreach (k in per_tid) printf(\"tid=%d\\n\", per_tid[k])\n"
			      "  foreach (f in per_fn) printf(\"fn %s=%d\\n\", f, per_fn[f]) }",
			      false, false);
	target_totals(p->obuf, &t);
	CHECK_EQ(t.count, 4 * hits);
	if (value_after(p->obuf, "\nn=") != t.count || tt_count(p->obuf, "tid=2000000\n") != 4 ||
	    value_after(p->obuf, "fn agg_fa=") != t.fn[0] || value_after(p->obuf, "fn agg_fb=") != t.fn[1] ||
	    value_after(p->obuf, "fn agg_fc=") != t.fn[2] || strstr(p->ebuf, "lost"))
		djp_test_fail(__FILE__, __LINE__, "the script's counts are not the target's: %s / %s", p->obuf, p->ebuf);
	printf("# %lld hits counted of %lld, per thread and per function\n", value_after(p->obuf, "\nn="), t.count);
	free(p);
}

static const char stats_script[] =
	"global s, by_fn\n"
	"probe process.mark(\"agg_hit\") { s <<< $arg1; by_fn[ppfunc()] <<< $arg1 }\n"
	"probe end { printf(\"count=%d sum=%d min=%d max=%d avg=%d var=%d\\n\", @count(s), @sum(s), @min(s),\n"
	"  @max(s), @avg(s), @variance(s))\n"
	"  foreach (f in by_fn) printf(\"fn=%s count=%d\\n\", f, @count(by_fn[f]))\n"
	"  print(@hist_log(s)) }\n";

static const char linear_script[] =
	"global s\n"
	"probe process.mark(\"agg_hit\") { s <<< $arg1 }\n"
	"probe end { print(@hist_linear(s, 0, 100000, 5000)) }\n";

/* The script's output after the target's "done" line. */
static const char *script_out(const struct tproc *p)
{
	const char *s = strstr(p->obuf, "\ndone\n");
	CHECK(s);
	return s + 6;
}

/* Every aggregate against the target's own arithmetic, and histograms
 * against the same script run event by event with no event lost. */
TEST_TIMEOUT(script_agg_every_aggregate_matches_the_target, 240)
{
	const char *big[] = { "-s", "64", NULL };
	struct totals t;
	struct tproc *p = run(NULL, 3, 1000000, stats_script, false, false), *q;
	char want[256];

	target_totals(p->obuf, &t);
	snprintf(want, sizeof(want), "count=%lld sum=%lld min=%lld max=%lld avg=%lld var=%lld\n", t.count, t.sum, t.min,
		 t.max, t.sum / t.count, t.variance);
	if (!strstr(p->obuf, want) || !strstr(p->obuf, "fn=turns count=3000000\n") || strstr(p->ebuf, "lost"))
		djp_test_fail(__FILE__, __LINE__, "want %s: %s / %s", want, p->obuf, p->ebuf);
	free(p);

	/* histograms: 60000 events fit the rings (-s 64) however late the
	 * tool reads them */
	p = run(NULL, 3, 20000, stats_script, false, false);
	q = run(big, 3, 20000, stats_script, true, true);
	if (strcmp(script_out(p), script_out(q)) || strstr(q->ebuf, "lost") || strstr(p->ebuf, "lost"))
		djp_test_fail(__FILE__, __LINE__, "in the target:\n%s\nevent by event:\n%s\n%s", script_out(p),
			      script_out(q), q->ebuf);
	free(p);
	free(q);
	p = run(NULL, 3, 20000, linear_script, false, false);
	q = run(big, 3, 20000, linear_script, true, true);
	if (strcmp(script_out(p), script_out(q)) || !strstr(script_out(p), "@@@"))
		djp_test_fail(__FILE__, __LINE__, "in the target:\n%s\nevent by event:\n%s", script_out(p),
			      script_out(q));
	free(p);
	free(q);
}

/* Strings as indexes: user_string($arg1) and a %s field, copied at the
 * hit and keyed on their text ("alpha" at two addresses is one key), in
 * rings too small for the events they would be. */
TEST_TIMEOUT(script_agg_string_keys, 120)
{
	static const char *const words[] = { "alpha", "beta", "gamma", "delta" };
	const char *tiny[] = { "--buffer-size", "16384", NULL };
	struct tproc *p;
	char key[64];

	target_extra = " --strings";
	p = run(tiny, 2, 200000,
		"global w, m, n, s\n"
		"probe process.mark(\"agg_str\") { w[user_string($arg1)]++ }\n"
		"probe process.mark(\"agg_name\") { m[$name, tid()] <<< 2 }\n"
		"probe end { foreach (k in w) printf(\"w %s=%d\\n\", k, w[k])\n"
		"  foreach ([a, t] in m) { n[a] += @count(m[a, t]); s[a] += @sum(m[a, t]) }\n"
		"  foreach (k in n) printf(\"m %s=%d %d\\n\", k, n[k], s[k]) }\n",
		false, false);
	target_extra = "";
	for (int i = 0; i < 4; i++) {
		long long want;
		snprintf(key, sizeof(key), "word %s ", words[i]);
		want = value_after(p->obuf, key);
		snprintf(key, sizeof(key), "w %s=", words[i]);
		if (value_after(p->obuf, key) != want)
			djp_test_fail(__FILE__, __LINE__, "%s: %s", key, p->obuf);
		snprintf(key, sizeof(key), "m %s=", words[i]);
		if (value_after(p->obuf, key) != want || value_after(strstr(p->obuf, key) + strlen(key), " ") != 2 * want)
			djp_test_fail(__FILE__, __LINE__, "%s: %s", key, p->obuf);
	}
	if (strstr(p->ebuf, "lost") || strstr(p->ebuf, "ERROR"))
		djp_test_fail(__FILE__, __LINE__, "%s", p->ebuf);
	free(p);
}

/* A probe run event by event that reads a global the target aggregates
 * sees every hit its thread made before it: each thread's checkpoint
 * (after every 100 of its hits) finds the count at least that high. */
TEST_TIMEOUT(script_agg_read_by_a_probe_sees_earlier_hits, 120)
{
	const char *big[] = { "-s", "16", NULL };
	struct tproc *p;

	target_extra = " --ticks-every 100";
	p = run(big, 2, 200000,
		"global n, checked, stale\n"
		"probe process.mark(\"agg_hit\") { n++ }\n"
		"probe process.mark(\"agg_tick\") { checked++; if (n < $mine) stale++ }\n"
		"probe end { printf(\"checked=%d stale=%d n=%d\\n\", checked, stale, n) }\n",
		false, false);
	target_extra = "";
	if (!strstr(p->obuf, "checked=4000 stale=0 n=400000\n") || strstr(p->ebuf, "lost"))
		djp_test_fail(__FILE__, __LINE__, "%s / %s", p->obuf, p->ebuf);
	free(p);
}

/* Other probes reset what the target aggregates, as a timer that prints
 * and clears does: each hit still counts once, before a reset or after.
 * The rings are too small for the hits as events (the tool is stopped). */
TEST_TIMEOUT(script_agg_globals_reset_by_another_probe, 120)
{
	const char *tiny[] = { "--buffer-size", "16384", NULL };
	struct totals t;
	struct tproc *p;
	char want[256];

	target_extra = " --ticks-every 1000";
	p = run(tiny, 2, 200000,
		"global n, s, c, seen, cnt, sum, per\n"
		"probe process.mark(\"agg_hit\") { n++; s <<< $arg1; c[tid()]++ }\n"
		"probe process.mark(\"agg_tick\") { seen += n; n = 0; cnt += @count(s); sum += @sum(s); delete s\n"
		"  foreach (k in c) per += c[k]; delete c }\n"
		"probe end { foreach (k in c) per += c[k]\n"
		"  printf(\"n=%d count=%d sum=%d per=%d\\n\", seen + n, cnt + @count(s), sum + @sum(s), per) }\n",
		true, false);
	target_extra = "";
	target_totals(p->obuf, &t);
	snprintf(want, sizeof(want), "n=%lld count=%lld sum=%lld per=%lld\n", t.count, t.count, t.sum, t.count);
	if (!strstr(p->obuf, want))
		djp_test_fail(__FILE__, __LINE__, "want %s: %s / %s", want, p->obuf, p->ebuf);
	free(p);
}

static const char shipped_script[] =
	"global n, printed\n"
	"probe process.mark(\"agg_hit\") { n++ }\n"
	"probe process.mark(\"agg_hit\") { printed++; printf(\"v\\n\") }\n"
	"probe end { printf(\"n=%d printed=%d\\n\", n, printed) }\n";

/* A ring too small for what the tool is shown: the probe that prints
 * loses events, said with the probe (line 3), and printed + lost adds up
 * to the hits; the probe that counts counts every hit, and loses none. */
TEST_TIMEOUT(script_agg_exact_whatever_the_rings, 120)
{
	const char *tiny[] = { "--buffer-size", "16384", NULL };
	struct totals t;
	struct tproc *p = run(tiny, 2, 100000, shipped_script, true, false);
	long long n, printed, lost = 0;
	const char *w;

	target_totals(p->obuf, &t);
	n = value_after(p->obuf, "\nn=");
	printed = value_after(p->obuf, "printed=");
	if ((w = strstr(p->ebuf, "djp: WARNING: ")))
		lost = atoll(w + 14);
	if (n != t.count || !lost || printed + lost != t.count || tt_count(p->obuf, "\nv") != printed ||
	    !(w = strstr(p->ebuf, "probe process.mark(\"agg_hit\") (<input>:3:")) || value_after(w, "): ") != lost ||
	    strstr(p->ebuf, "(<input>:2:"))
		djp_test_fail(__FILE__, __LINE__, "n %lld, printed %lld, lost %lld of %lld: %s", n, printed, lost, t.count,
			      p->ebuf);
	printf("# %lld of %lld events lost, every hit counted\n", lost, t.count);
	free(p);
}

/* Through a -c wrapper (sh -c 'exec ...'): the marker is bound only in
 * the program the shell execs, with its variables taken as numbers, and
 * the probe still runs there, every hit counted with the tool stopped
 * and the rings tiny. */
TEST_TIMEOUT(script_agg_in_the_program_a_wrapper_execs, 120)
{
	const char *tiny[] = { "--buffer-size", "16384", NULL };
	char cmd[4400], want[160];
	struct totals t;
	struct tproc *p;

	snprintf(cmd, sizeof(cmd), "sh -c 'exec %s --threads 4 --hits 250000'", agg_target());
	p = tt_run_worker(cmd, tiny,
			  "global n, s\n"
			  "probe process.mark(\"agg_hit\") { n++; s <<< $v }\n"
			  "probe end { printf(\"n=%d s %d %d %d %d\\n\", n, @count(s), @sum(s), @min(s), @max(s)) }",
			  true, false);
	target_totals(p->obuf, &t);
	snprintf(want, sizeof(want), "n=%lld s %lld %lld %lld %lld\n", t.count, t.count, t.sum, t.min, t.max);
	if (!strstr(p->obuf, want) || strstr(p->ebuf, "lost") || !strstr(p->ebuf, "waiting for a program it execs"))
		djp_test_fail(__FILE__, __LINE__, "want %s: %s / %s", want, p->obuf, p->ebuf);
	printf("# %lld hits counted in the program the shell exec'd\n", t.count);
	free(p);
}

/* The warning of lost events comes before the end probes' output, also
 * when exit() ended the run. */
TEST_TIMEOUT(script_lost_warning_before_end_output, 120)
{
	char cmd[4400], line[5000];
	struct tproc *p;
	const char *w, *end;
	int st;

	snprintf(cmd, sizeof(cmd), "%s --threads 1 --hits 100000", agg_target());
	snprintf(line, sizeof(line),
		 "exec %s -c '%s' -e 'global n\n"
		 "probe process.mark(\"agg_hit\") { printf(\"v=%%d\\n\", $arg1); if (++n == 100) exit() }\n"
		 "probe end { println(\"END\") }' 2>&1",
		 tt_djp(), cmd);
	p = tt_spawn((char *const[]){ "/bin/sh", "-c", line, NULL }, false, -1);
	CHECK(tt_wait_out(p, "ready ", 20000));
	/* the shell exec'd djp: stop it while the target fills its ring */
	kill(p->pid, SIGSTOP);
	tt_send(p, "go\n");
	CHECK(tt_wait_out(p, "\ndone\n", 60000));
	kill(p->pid, SIGCONT);
	close(p->in);
	p->in = -1;
	st = tt_finish(p, 60000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	w = strstr(p->obuf, "djp: WARNING: ");
	end = strstr(p->obuf, "\nEND\n");
	if (!w || !end || w > end)
		djp_test_fail(__FILE__, __LINE__, "the warning is not before END: %s", p->obuf);
	free(p);
}

/* djp trace: events lost while the agent is gone by the end (-c, the
 * command exited) are counted per marker, and the rows add up. */
TEST_TIMEOUT(trace_lost_per_marker_adds_up, 120)
{
	char cmd[4400];
	unsigned long long ev1, lost1, ev2, lost2, events, lost;
	struct tproc *p;
	const char *s;
	int st;

	snprintf(cmd, sizeof(cmd), "%s --threads 2 --hits 100000", agg_target());
	p = tt_spawn((char *const[]){ (char *)tt_djp(), "trace", "--buffer-size", "16384", "-o", "/dev/null", "-c", cmd,
				      "agg_*", NULL },
		     false, -1);
	CHECK(tt_wait_out(p, "ready ", 20000));
	kill(p->pid, SIGSTOP);
	tt_send(p, "go\n");
	CHECK(tt_wait_out(p, "\ndone\n", 60000));
	close(p->in); /* the target exits while the tool is stopped */
	p->in = -1;
	kill(p->pid, SIGCONT);
	st = tt_finish(p, 60000);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK((s = strstr(p->ebuf, " events, ")) && sscanf(s, " events, %llu lost", &lost) == 1);
	while (s > p->ebuf && s[-1] != ' ')
		s--;
	events = strtoull(s, NULL, 10);
	CHECK(tt_summary_row(p->ebuf, "agg_hit", &ev1, &lost1));
	CHECK(tt_summary_row(p->ebuf, "agg_fn", &ev2, &lost2));
	if (!lost1 || !lost2 || lost1 + lost2 != lost || events + lost != 400000 || strstr(p->ebuf, "unknown"))
		djp_test_fail(__FILE__, __LINE__, "per marker %llu + %llu, total %llu: %s", lost1, lost2, lost, p->ebuf);
	printf("# %llu events, %llu lost: %llu agg_hit, %llu agg_fn\n", events, lost, lost1, lost2);
	free(p);
}
