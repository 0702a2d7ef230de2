/*
 * Nothing lost at function, return and statement points: a script that
 * only aggregates there is run in the target (tools/djp/script/agg.c,
 * kernel/agent/agg.c), with its context variables found by name at each
 * site ($v is the first parameter of one function and the second of
 * another; $return comes after a function's parameters), and values and
 * conditions that are expressions of them computed there.
 *
 * The target is trace_progs/aggcall_target.c: four threads (more than the
 * machine's cores) calling two functions as fast as they can, which print
 * what a script must find.  The tool is stopped (SIGSTOP) while they run
 * and each thread's ring is the smallest there is, so that a script run
 * event by event loses hits whatever the load (the first test shows it
 * does); one run in the target must not lose one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "test_trace_util.h"

#define THREADS 4
#define CALLS 250000L

static const char *const tiny_rings[] = { "--buffer-size", "16384", NULL };

static struct tproc *run(const char *script, bool no_agg)
{
	char cmd[4400];

	snprintf(cmd, sizeof(cmd), "%s --threads %d --calls %ld", djp_test_path("trace_progs/aggcall_target"),
		 THREADS, CALLS);
	return tt_run_worker(cmd, tiny_rings, script, true, no_agg);
}

/* The number after `key` in s, which must be there. */
static long long after(const char *s, const char *key)
{
	const char *at = strstr(s, key);
	if (!at)
		djp_test_fail(__FILE__, __LINE__, "no \"%s\" in: %s", key, s);
	return atoll(at + strlen(key));
}

/* Two numbers after `key` in s, which must be there. */
static void two_after(const char *s, const char *key, long long *a, long long *b)
{
	const char *at = strstr(s, key);
	if (!at || sscanf(at + strlen(key), "%lld %lld", a, b) != 2)
		djp_test_fail(__FILE__, __LINE__, "no \"%s\" N N in: %s", key, s);
}

/* What the script printed: after the target's "done". */
static const char *script_out(const struct tproc *p)
{
	const char *s = strstr(p->obuf, "\ndone\n");
	CHECK(s);
	return s + 6;
}

static void no_loss(const struct tproc *p)
{
	if (strstr(p->ebuf, "lost") || strstr(p->ebuf, "not counted") || strstr(p->ebuf, "WARNING"))
		djp_test_fail(__FILE__, __LINE__, "hits lost: %s", p->ebuf);
}

/* Function entries of two functions with $v at different places, every
 * call counted, per function and per thread; event by event, the same
 * script loses calls. */
TEST_TIMEOUT(script_agg_function_probe_counts_every_call, 300)
{
	static const char script[] =
		"global n, by_fn, by_tid\n"
		"probe process.function(\"ac_*\") { n++; by_fn[ppfunc()] <<< $v; by_tid[tid()]++ }\n"
		"probe end { printf(\"n=%d\\n\", n)\n"
		"  foreach (f in by_fn) printf(\"fn %s %d %d\\n\", f, @count(by_fn[f]), @sum(by_fn[f]))\n"
		"  foreach (t in by_tid) printf(\"tid=%d\\n\", by_tid[t]) }";
	char per_thread[64];
	struct tproc *p = run(script, false);
	const char *out = script_out(p);
	long long work, work_sum, pair, pair_sum, n[2], sum[2];

	two_after(p->obuf, "\nwork ", &work, &work_sum);
	two_after(p->obuf, "\npair ", &pair, &pair_sum);
	two_after(out, "fn ac_work ", &n[0], &sum[0]);
	two_after(out, "fn ac_pair ", &n[1], &sum[1]);
	CHECK_EQ(work, THREADS * CALLS);
	snprintf(per_thread, sizeof(per_thread), "tid=%ld\n", CALLS + (CALLS + 3) / 4);
	if (after(out, "n=") != work + pair || n[0] != work || sum[0] != work_sum || n[1] != pair ||
	    sum[1] != pair_sum || tt_count(out, per_thread) != THREADS)
		djp_test_fail(__FILE__, __LINE__, "not the target's counts:\n%s\n%s", p->obuf, p->ebuf);
	no_loss(p);
	printf("# %lld calls counted of %lld, per function and per thread, none lost\n", after(out, "n="),
	       work + pair);
	free(p);

	/* the same, event by event: the stopped tool's rings overflow */
	p = run(script, true);
	out = script_out(p);
	if (after(out, "n=") >= work + pair || !strstr(p->ebuf, "events lost"))
		djp_test_fail(__FILE__, __LINE__, "event by event lost nothing: %s / %s", out, p->ebuf);
	printf("# event by event: %lld of %lld\n", after(out, "n="), work + pair);
	free(p);
}

/* The row of LOW in a printed @hist_log, its count; -1 when absent. */
static long long hist_row(const char *out, long long low)
{
	for (const char *l = out; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL) {
		long long v, c;
		if (sscanf(l, "%lld |%*[@ ] %lld", &v, &c) == 2 && v == low)
			return c;
	}
	return -1;
}

/* Return probes: $return's statistics and histogram, and $return keyed
 * by a parameter, exact. */
TEST_TIMEOUT(script_agg_return_probe_hist_and_sum, 300)
{
	struct tproc *p = run("global s, h, by_w\n"
			      "probe process.function(\"ac_work\").return { s <<< $return; h <<< $return }\n"
			      "probe process.function(\"ac_pair\").return { by_w[$w] <<< $return }\n"
			      "probe end { printf(\"ret %d %d %d %d\\n\", @count(s), @sum(s), @min(s), @max(s))\n"
			      "  print(@hist_log(h))\n"
			      "  foreach (w in by_w+) printf(\"w %d %d %d\\n\", w, @count(by_w[w]), @sum(by_w[w])) }",
			      false);
	const char *out = script_out(p);
	char want[128];
	long long rows = 0;
	int nrows = 0;

	snprintf(want, sizeof(want), "ret %lld ", (long long)(THREADS * CALLS));
	CHECK(strstr(out, want));
	/* the target's "ret SUM MIN MAX" is the script's after the count */
	if (strncmp(strstr(p->obuf, "\nret ") + 5, strstr(out, want) + strlen(want),
		    strcspn(strstr(p->obuf, "\nret ") + 5, "\n") + 1))
		djp_test_fail(__FILE__, __LINE__, "sum, min, max differ:\n%s", p->obuf);
	for (const char *l = strstr(p->obuf, "\nhist "); l; l = strstr(l + 1, "\nhist ")) {
		long long low, count;
		CHECK(sscanf(l, "\nhist %lld %lld", &low, &count) == 2);
		if (hist_row(out, low) != count)
			djp_test_fail(__FILE__, __LINE__, "bucket %lld: %lld, the target's %lld:\n%s", low,
				      hist_row(out, low), count, p->obuf);
		rows += count;
		nrows++;
	}
	CHECK_EQ(rows, THREADS * CALLS);
	for (int w = 0; w < 8; w++) {
		long long count, sum;
		snprintf(want, sizeof(want), "by_w %d ", w);
		CHECK(sscanf(strstr(p->obuf, want), "by_w %*d %lld %lld", &count, &sum) == 2);
		snprintf(want, sizeof(want), "w %d %lld %lld\n", w, count, sum);
		if (!strstr(out, want))
			djp_test_fail(__FILE__, __LINE__, "want %s:\n%s", want, p->obuf);
	}
	no_loss(p);
	printf("# %lld returns in %d buckets, exact; by_w exact\n", rows, nrows);
	free(p);
}

/* A condition and values that are expressions of the hit's variables,
 * computed in the target. */
TEST_TIMEOUT(script_agg_condition_and_value_expressions, 300)
{
	struct tproc *p = run("global big, twice, diff\n"
			      "probe process.function(\"ac_work\").return {\n"
			      "  if ($return > 150000) { big++; twice += $return * 2 } }\n"
			      "probe process.function(\"ac_work\").return { diff <<< $return - $v }\n"
			      "probe end { printf(\"big=%d twice=%d diff %d %d %d %d\\n\", big, twice,\n"
			      "  @count(diff), @sum(diff), @min(diff), @max(diff)) }",
			      false);
	const char *out = script_out(p);
	long long work, work_sum, big, big_sum, ret_sum;
	char want[256];

	two_after(p->obuf, "\nwork ", &work, &work_sum);
	two_after(p->obuf, "\nbig ", &big, &big_sum);
	ret_sum = after(p->obuf, "\nret ");
	CHECK_EQ(work, THREADS * CALLS);
	/* r - v = 2 v + 1: from 1 to 199999 */
	snprintf(want, sizeof(want), "big=%lld twice=%lld diff %lld %lld 1 199999\n", big, 2 * big_sum, work,
		 ret_sum - work_sum);
	if (!big || !strstr(out, want))
		djp_test_fail(__FILE__, __LINE__, "want %s:\n%s\n%s", want, p->obuf, p->ebuf);
	no_loss(p);
	printf("# %lld of %lld returns over 150000, every difference, exact\n", big, work);
	free(p);
}

/* An index that is an expression of the hit's variables ($v & 3) is
 * computed in the target: four entries a thread, not one per $v (100,000
 * values, past what a table holds). */
TEST_TIMEOUT(script_agg_computed_index, 300)
{
	struct tproc *p = run("global q, qs\n"
			      "probe process.function(\"ac_work\") { q[$v & 3]++; qs[$v & 3] <<< $v }\n"
			      "probe end { foreach (k in q+) printf(\"q %d %d %d %d\\n\", k, q[k], @count(qs[k]),\n"
			      "  @sum(qs[k])) }",
			      false);
	const char *out = script_out(p);
	char want[160];

	for (int k = 0; k < 4; k++) {
		long long count, sum;
		snprintf(want, sizeof(want), "\nquarter %d ", k);
		two_after(p->obuf, want, &count, &sum);
		snprintf(want, sizeof(want), "q %d %lld %lld %lld\n", k, count, count, sum);
		if (!strstr(out, want))
			djp_test_fail(__FILE__, __LINE__, "want %s:\n%s\n%s", want, p->obuf, p->ebuf);
	}
	no_loss(p);
	printf("# %lld calls in 4 computed indexes, exact\n", (long long)(THREADS * CALLS));
	free(p);
}

/* cpu() as an index: the CPU each hit ran on, every hit counted under
 * one of the machine's CPUs. */
TEST_TIMEOUT(script_agg_cpu_key, 300)
{
	struct tproc *p = run("global by_cpu\n"
			      "probe process.function(\"ac_work\") { by_cpu[cpu()]++ }\n"
			      "probe end { foreach (c in by_cpu+) printf(\"cpu %d %d\\n\", c, by_cpu[c]) }",
			      false);
	const char *out = script_out(p);
	long long work, work_sum, total = 0, cpu, n;
	long ncpus = sysconf(_SC_NPROCESSORS_CONF);
	int rows = 0;

	two_after(p->obuf, "\nwork ", &work, &work_sum);
	for (const char *l = strstr(out, "cpu "); l; l = strstr(l + 1, "\ncpu ")) {
		CHECK(sscanf(l + (*l == '\n'), "cpu %lld %lld", &cpu, &n) == 2);
		if (cpu < 0 || cpu >= ncpus)
			djp_test_fail(__FILE__, __LINE__, "cpu %lld of %ld:\n%s", cpu, ncpus, out);
		total += n;
		rows++;
	}
	if (total != work || !rows)
		djp_test_fail(__FILE__, __LINE__, "%lld of %lld calls:\n%s\n%s", total, work, p->obuf, p->ebuf);
	no_loss(p);
	printf("# %lld calls counted on %d CPUs\n", total, rows);
	free(p);
}

/* A statement point inside ac_work: every pass counted, with a local. */
TEST_TIMEOUT(script_agg_statement_probe_counts_every_pass, 300)
{
	char script[512], want[96];
	long long work, work_sum;
	struct tproc *p;
	const char *out;

	snprintf(script, sizeof(script),
		 "global n, st\n"
		 "probe process.statement(\"ac_work@aggcall_target.c:%d\") { n++; st <<< $v }\n"
		 "probe end { printf(\"n=%%d st %%d %%d\\n\", n, @count(st), @sum(st)) }",
		 tt_source_line("aggcall_target.c", "tag: work-line "));
	p = run(script, false);
	out = script_out(p);
	two_after(p->obuf, "\nwork ", &work, &work_sum);
	CHECK_EQ(work, THREADS * CALLS);
	snprintf(want, sizeof(want), "n=%lld st %lld %lld\n", work, work, work_sum);
	if (!strstr(out, want))
		djp_test_fail(__FILE__, __LINE__, "want %s:\n%s\n%s", want, p->obuf, p->ebuf);
	no_loss(p);
	printf("# %ld passes counted, none lost\n", THREADS * CALLS);
	free(p);
}

/* A probe that only counts makes its functions' sites without their
 * arguments (DJP_NO_ARGS: no DWARF read for them); one that prints them,
 * on one of those functions, has them read when it connects, and the tool
 * hears of the site again with its format (the marker log): $$parms names
 * them in every line. */
TEST_TIMEOUT(script_count_then_arguments_on_one_of_its_functions, 120)
{
	char cmd[4400];
	struct tproc *p;
	const char *out;
	long long work, work_sum, pair, pair_sum;

	snprintf(cmd, sizeof(cmd), "%s --threads 1 --calls 40", djp_test_path("trace_progs/aggcall_target"));
	p = tt_run_worker(cmd, NULL,
			  "global n\n"
			  "probe process.function(\"ac_*\") { n++ }\n"
			  "probe process.function(\"ac_pair\") { printf(\"pair %s\\n\", $$parms) }\n"
			  "probe end { printf(\"n=%d\\n\", n) }",
			  false, false);
	out = script_out(p);
	two_after(p->obuf, "\nwork ", &work, &work_sum);
	two_after(p->obuf, "\npair ", &pair, &pair_sum);
	if (after(out, "n=") != work + pair || tt_count(p->obuf, "pair w=0x") != pair)
		djp_test_fail(__FILE__, __LINE__, "not %lld calls and %lld lines with ac_pair's arguments:\n%s\n%s",
			      work + pair, pair, p->obuf, p->ebuf);
	free(p);
}
