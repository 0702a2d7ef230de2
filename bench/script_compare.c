/*
 * Probe scripts: what the tool sustains, and what a hit costs the target,
 * next to bpftrace counting the same marker through its USDT note.
 *
 *  - the script engine alone, `c[$$name]++` over synthetic events
 *    (djp --bench-events): events per second (target 5 M/s);
 *  - the target's cost per hit of `global c; probe process.mark("*")
 *    { c[$$name]++ }` run by `djp -c`, over the target's own NOP loop
 *    (target: at most what recording costs, 15 ns);
 *  - the same count done by bpftrace (`usdt:...:djp:bench_hot`), per hit,
 *    and the ratio of the two (target: bpftrace at least 20x djp);
 *  - a script of 10 probes and 3 aggregates on the same marker, per hit in
 *    the target, over one probe that reads the same two arguments (target:
 *    1.10 at most: the target only records what the script reads, however
 *    many probes use it; the tool interprets) and over the count (which
 *    reads no argument, so its hits record less), and its events per
 *    second in the tool.
 *
 * Each per-call figure is the target's own measurement of its loop; the
 * median of 5 runs of each, interleaved.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

#define RUNS 5

static char dir[PATH_MAX];

int main(void)
{
	char exe[PATH_MAX], cmd[3 * PATH_MAX + 512];
	double plain[RUNS], djp[RUNS], bpf[RUNS], heavy[RUNS], one[RUNS], rate, heavy_rate;
	double splain[RUNS], sdjp[RUNS], sbpf[RUNS], fdjp[RUNS];
	/* the same count at the entry of a function with the same work and
	 * no site: an instruction probe, its two parameters from DWARF as the
	 * marker's two arguments */
	const char *func_count = "global c; probe process.function(\"hot_plain\") { c[$$name]++ }";
	double fplain[RUNS];
	const char *sdt_count = "global c; probe process.provider(\"hotsdt\").mark(\"bench_sdt\") { c[$$name]++ }";
	const char *one_probe = "global s; probe process.mark(\"bench_hot\") { s += $a + $b }";
	int have_bpf = system("command -v bpftrace >/dev/null 2>&1") == 0;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	const char *count = "global c; probe process.mark(\"*\") { c[$$name]++ }";
	const long calls = 2000000, bpf_calls = 100000;
	/* 10 probes, 3 aggregates: what a real script asks per event */
	const char *ten =
		"global c, lat, by_a, hist; "
		"probe process.mark(\"bench_hot\") { c[$$name]++ } "
		"probe process.mark(\"bench_hot\") { lat <<< $b } "
		"probe process.mark(\"bench_hot\") { by_a[$a % 8] <<< $b } "
		"probe process.mark(\"bench_hot\") { hist <<< $a & 1023 } "
		"probe process.mark(\"bench_hot\") { if ($a < 0) printf(\"%d\\n\", $a) } "
		"probe process.mark(\"bench_hot\") { x = $a * 2 + $b; if (x == -1) c[\"neg\"]++ } "
		"probe process.mark(\"bench_hot\") { s = \"k\" . sprint($a % 4); if (s == \"k9\") c[s]++ } "
		"probe process.mark(\"bench_hot\") { if ($b % 1000 == 999) c[\"mil\"]++ } "
		"probe process.mark(\"bench_hot\") { if ([$a % 8] in by_a && $a == -5) c[\"in\"]++ } "
		"probe process.mark(\"bench_hot\") { c[\"all\"] += 1 } "
		"probe end { printf(\"%d %d %d %d\\n\", @count(lat), @count(hist), c[\"all\"], @count(by_a[1])) }";

	if (n <= 0)
		return 1;
	exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s/..", dirname(exe));

	snprintf(cmd, sizeof(cmd), "%s/djp --bench-events 20000000 -e '%s' 2>&1", dir, count);
	rate = run_value(cmd, "script count | ");
	printf("script: c[$$name]++ in the tool | %.1f M events/s | >= 5 | %s\n", rate, rate >= 5 ? "ok" : "over");
	heavy_rate = -1;
	{
		/* the synthetic events take the markers of a replay file: the
		 * hot target's, a=%d b=%ld */
		char rp[] = "/tmp/djp-bench-replay-XXXXXX", tcmd[3 * PATH_MAX + 2048];
		int fd = mkstemp(rp);
		if (fd >= 0) {
			static const char line[] = "marker bench_hot /bench/hot \"a=%d b=%ld\"\n";
			if (write(fd, line, sizeof(line) - 1) == (ssize_t)sizeof(line) - 1) {
				snprintf(tcmd, sizeof(tcmd), "%s/djp --replay %s --bench-events 5000000 -e '%s' 2>&1", dir,
					 rp, ten);
				heavy_rate = run_value(tcmd, "script count | ");
			}
			close(fd);
			unlink(rp);
		}
	}

	for (int r = 0; r < RUNS; r++) {
		snprintf(cmd, sizeof(cmd), "%s/bench-targets/hot %ld", dir, calls);
		plain[r] = run_value(cmd, "ns/call ");
		snprintf(cmd, sizeof(cmd), "%s/djp -c '%s/bench-targets/hot %ld' -e '%s' 2>/dev/null", dir, dir, calls,
			 count);
		djp[r] = run_value(cmd, "ns/call ");
		{
			char tcmd[3 * PATH_MAX + 2048];
			snprintf(tcmd, sizeof(tcmd), "%s/djp -c '%s/bench-targets/hot %ld' -e '%s' 2>/dev/null", dir, dir,
				 calls, ten);
			heavy[r] = run_value(tcmd, "ns/call ");
			snprintf(tcmd, sizeof(tcmd), "%s/djp -c '%s/bench-targets/hot %ld' -e '%s' 2>/dev/null", dir, dir,
				 calls, one_probe);
			one[r] = run_value(tcmd, "ns/call ");
		}
		/* the same count on a 1-byte SDT nop, widened into a jump */
		snprintf(cmd, sizeof(cmd), "%s/bench-targets/hot_sdt %ld", dir, calls);
		splain[r] = run_value(cmd, "ns/call ");
		snprintf(cmd, sizeof(cmd), "%s/djp -c '%s/bench-targets/hot_sdt %ld' -e '%s' 2>/dev/null", dir, dir, calls,
			 sdt_count);
		sdjp[r] = run_value(cmd, "ns/call ");
		snprintf(cmd, sizeof(cmd), "%s/bench-targets/hot_sdt %ld plain", dir, calls);
		fplain[r] = run_value(cmd, "ns/call ");
		snprintf(cmd, sizeof(cmd), "%s/djp -c '%s/bench-targets/hot_sdt %ld plain' -e '%s' 2>/dev/null", dir, dir,
			 calls, func_count);
		fdjp[r] = run_value(cmd, "ns/call ");
		bpf[r] = sbpf[r] = -1;
		if (have_bpf) {
			snprintf(cmd, sizeof(cmd),
				 "bpftrace -c '%s/bench-targets/hot_sdt %ld' -e 'usdt:%s/bench-targets/hot_sdt:hotsdt:bench_sdt "
				 "{ @c[probe] = count(); }' 2>/dev/null",
				 dir, bpf_calls, dir);
			sbpf[r] = run_value(cmd, "ns/call ");
		}
		if (have_bpf) {
			snprintf(cmd, sizeof(cmd),
				 "bpftrace -c '%s/bench-targets/hot %ld' -e 'usdt:%s/bench-targets/hot:djp:bench_hot "
				 "{ @c[probe] = count(); }' 2>/dev/null",
				 dir, bpf_calls, dir);
			bpf[r] = run_value(cmd, "ns/call ");
		}
	}
	double p = median_of(plain, RUNS), d = median_of(djp, RUNS) - p, b = median_of(bpf, RUNS) - p;
	printf("script: target loop with the marker idle | %.2f ns/call | - | -\n", p);
	printf("script: djp count, cost per hit in the target | %.2f ns | <= 15 | %s\n", d, d <= 15 ? "ok" : "over");
	{
		double h = median_of(heavy, RUNS) - p, o = median_of(one, RUNS) - p;
		printf("script: 1 probe reading $a and $b, cost per hit in the target | %.2f ns | - | -\n", o);
		printf("script: 10 probes + 3 aggregates on $a and $b, cost per hit in the target | %.2f ns | - | -\n", h);
		printf("script: 10 probes + 3 aggregates / 1 probe, same arguments, per hit in the target | %.3f | <= 1.10 "
		       "| %s\n", h / o, h / o <= 1.10 ? "ok" : "over");
		printf("script: 10 probes + 3 aggregates / count (no argument read), per hit in the target | %.3f | - | -\n",
		       h / d);
		printf("script: 10 probes + 3 aggregates in the tool | %.1f M events/s | - | -\n", heavy_rate);
	}
	double sd = median_of(sdjp, RUNS) - median_of(splain, RUNS);
	printf("script: djp count on a 1-byte SDT nop (widened to a jump), cost per hit | %.2f ns | - | -\n", sd);
	printf("script: SDT nop / marker, djp count, cost per hit | %.3f x | <= 1.3 | %s\n", sd / d,
	       sd / d <= 1.3 ? "ok" : "over");
	{
		double fd = median_of(fdjp, RUNS) - median_of(fplain, RUNS);
		printf("script: djp count at a function entry (a jump over its first instructions), cost per hit | %.2f "
		       "ns | - | -\n",
		       fd);
		printf("script: function entry / marker, djp count, cost per hit | %.3f x | <= 1.3 | %s\n", fd / d,
		       fd / d <= 1.3 ? "ok" : "over");
	}
	if (!have_bpf || median_of(bpf, RUNS) < 0) {
		printf("script: bpftrace count (USDT) | skipped: bpftrace not installed or not permitted | - | -\n");
		return 0;
	}
	{
		double sb = median_of(sbpf, RUNS) - median_of(splain, RUNS);
		printf("script: bpftrace / djp on the same SDT nop, cost per hit | %.1f x | >= 100 | %s\n", sb / sd,
		       sb / sd >= 100 ? "ok" : "over");
	}
	printf("script: bpftrace count (USDT uprobe), cost per hit | %.1f ns | - | -\n", b);
	printf("script: bpftrace / djp, cost per hit | %.1f x | >= 20 | %s\n", b / d, b / d >= 20 ? "ok" : "over");
	return 0;
}
