/*
 * A counting script at the highest hit rate the machine gives: one thread
 * per online CPU calling a marker as fast as it can (bench-targets/
 * hot_threads), under `djp -c ... -e 'global n; probe ... { n++ }'`,
 * whose probe the target runs itself (tools/djp/script/agg.c), next to
 * `djp trace` recording the same hits as events.
 *
 *  - the hits per second the target reached while counted (target: 10 M);
 *  - the hits the script did not count (target: 0), and the events djp
 *    trace lost at that rate;
 *  - the cost per hit in the target, over the idle marker, of the count
 *    and of djp trace's recorded event (target: the count at most the
 *    event's);
 *  - the same at a function's entry (a function point, no marker): the
 *    hits not counted (target: 0) and the cost of each over the plain
 *    call.
 *
 * Medians of 3 runs of each, interleaved.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

#define RUNS 3

/* Run a shell command; the value after each of keys[i] in its output (both
 * streams) into v[i] (-1 when missing).  False when it failed. */
static int run_values(const char *cmd, const char *const *keys, double *v, int nkeys)
{
	char line[1024];
	FILE *p = popen(cmd, "r");
	for (int i = 0; i < nkeys; i++)
		v[i] = -1;
	if (!p)
		return 0;
	while (fgets(line, sizeof(line), p))
		for (int i = 0; i < nkeys; i++) {
			char *k = strstr(line, keys[i]);
			if (k)
				v[i] = atof(k + strlen(keys[i]));
		}
	return pclose(p) == 0;
}

int main(void)
{
	static const char *const keys[] = { "ns/call ", "rate ", "hits ", "counted ", "WARNING: ", " events, " };
	const char *count = "global n; probe process.mark(\"bench_hot\") { n++ } probe end { printf(\"counted %d\\n\", n) }";
	const char *fcount =
		"global n; probe process.function(\"hot_plain\") { n++ } probe end { printf(\"counted %d\\n\", n) }";
	double fplain[RUNS], fscript[RUNS], ftrace[RUNS], fmissed[RUNS];
	char exe[PATH_MAX], dir[PATH_MAX], cmd[3 * PATH_MAX + 512];
	double plain[RUNS], script[RUNS], trace[RUNS], rate[RUNS], missed[RUNS], tlost[RUNS], v[6];
	long threads = sysconf(_SC_NPROCESSORS_ONLN), calls = 10000000;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int ok = 1;

	if (n <= 0)
		return 1;
	exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s/..", dirname(exe));
	if (threads < 1)
		threads = 1;
	for (int r = 0; r < RUNS; r++) {
		snprintf(cmd, sizeof(cmd), "%s/bench-targets/hot_threads %ld %ld", dir, threads, calls);
		ok &= run_values(cmd, keys, v, 6);
		plain[r] = v[0];
		snprintf(cmd, sizeof(cmd), "%s/djp -c '%s/bench-targets/hot_threads %ld %ld' -e '%s' 2>&1", dir, dir,
			 threads, calls, count);
		ok &= run_values(cmd, keys, v, 6);
		script[r] = v[0];
		rate[r] = v[1];
		/* every hit counted, none lost (no warning at all) */
		missed[r] = v[3] < 0 ? v[2] : v[2] - v[3] + (v[4] > 0 ? v[4] : 0);
		snprintf(cmd, sizeof(cmd), "%s/djp trace -o /dev/null -c '%s/bench-targets/hot_threads %ld %ld' bench_hot 2>&1",
			 dir, dir, threads, calls);
		ok &= run_values(cmd, keys, v, 6);
		trace[r] = v[0];
		tlost[r] = v[5]; /* "N events, M lost" */
		/* at a function's entry */
		snprintf(cmd, sizeof(cmd), "%s/bench-targets/hot_threads %ld %ld func", dir, threads, calls);
		ok &= run_values(cmd, keys, v, 6);
		fplain[r] = v[0];
		snprintf(cmd, sizeof(cmd), "%s/djp -c '%s/bench-targets/hot_threads %ld %ld func' -e '%s' 2>&1", dir,
			 dir, threads, calls, fcount);
		ok &= run_values(cmd, keys, v, 6);
		fscript[r] = v[0];
		fmissed[r] = v[3] < 0 ? v[2] : v[2] - v[3] + (v[4] > 0 ? v[4] : 0);
		snprintf(cmd, sizeof(cmd),
			 "%s/djp trace -o /dev/null -c '%s/bench-targets/hot_threads %ld %ld func' func:hot_plain 2>&1", dir,
			 dir, threads, calls);
		ok &= run_values(cmd, keys, v, 6);
		ftrace[r] = v[0];
	}
	{
		double p = median_of(plain, RUNS), s = median_of(script, RUNS) - p, t = median_of(trace, RUNS) - p,
		       m = median_of(missed, RUNS), hr = median_of(rate, RUNS) / 1e6;
		printf("%ld threads x %ld calls, marker idle | %.2f ns/call | - | -\n", threads, calls, p);
		printf("counting script (n++ in the target), hit rate | %.1f M hits/s | >= 10 | %s\n", hr,
		       hr >= 10 ? "ok" : "over");
		printf("counting script, hits not counted or lost | %.0f | 0 | %s\n", m, m == 0 ? "ok" : "over");
		printf("counting script, cost per hit in the target | %.2f ns | <= djp trace's | %s\n", s,
		       s <= t ? "ok" : "over");
		printf("djp trace, recorded event, cost per hit in the target | %.2f ns | - | -\n", t);
		printf("djp trace, events lost at that rate | %.0f | - | -\n", median_of(tlost, RUNS));
		p = median_of(fplain, RUNS);
		s = median_of(fscript, RUNS) - p;
		t = median_of(ftrace, RUNS) - p;
		m = median_of(fmissed, RUNS);
		printf("function hot_plain idle | %.2f ns/call | - | -\n", p);
		printf("counting script at a function entry, hits not counted or lost | %.0f | 0 | %s\n", m,
		       m == 0 ? "ok" : "over");
		printf("counting script at a function entry, cost per hit in the target | %.2f ns | <= djp trace's | %s\n",
		       s, s <= t ? "ok" : "over");
		printf("djp trace func:hot_plain, recorded event, cost per hit in the target | %.2f ns | - | -\n", t);
	}
	return ok ? 0 : 1;
}
