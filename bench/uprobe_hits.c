/*
 * A site no jump can reach, per hit in the target, each hit recorded with
 * its two arguments: by djp with the kernel's uprobe and its BPF recorder
 * (tools/djp/session/session_uprobes.c), by djp as an int3 probe in the
 * target (--no-uprobe: a SIGTRAP a hit), and by bpftrace through the
 * site's USDT note (a uprobe and bpftrace's BPF program, which printf()s
 * the two arguments as djp trace prints them).  bpftrace counting the hits
 * in a map, which records nothing a hit, is shown beside them.  The site
 * is hot_sdt's hotsdt:bench_trap, a nop right after a call and three bytes
 * before its function's end.  Target: djp's uprobe at most bpftrace's
 * cost on the same site for the same record.
 *
 * Each figure is the target's own ns per call over its loop, less the
 * same loop untraced; the median of 7 runs of each, interleaved (the
 * tracers' consumers share the two cores with the target, which moves a
 * single run by a few hundred ns).  Root only (uprobes and BPF); the rows
 * say so when they cannot be measured.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

#define RUNS 7

int main(void)
{
	char exe[PATH_MAX], dir[PATH_MAX], cmd[3 * PATH_MAX + 512];
	double plain[RUNS], up[RUNS], trap[RUNS], bpf[RUNS], bcount[RUNS];
	const long calls = 200000;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int have_bpf = system("command -v bpftrace >/dev/null 2>&1") == 0;

	if (n <= 0)
		return 1;
	exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s/..", dirname(exe));
	snprintf(cmd, sizeof(cmd), "%s/djp list --json %s/bench-targets/hot_sdt | grep -q '\"arming\":\"uprobe\"'", dir,
		 dir);
	if (system(cmd) != 0) {
		printf("djp uprobe on a site no jump reaches | skipped: the tool may not use the kernel's uprobes (root) "
		       "| - | -\n");
		return 0;
	}
	for (int r = 0; r < RUNS; r++) {
		snprintf(cmd, sizeof(cmd), "%s/bench-targets/hot_sdt %ld trap", dir, calls);
		plain[r] = run_value(cmd, "ns/call ");
		snprintf(cmd, sizeof(cmd), "%s/djp trace -c '%s/bench-targets/hot_sdt %ld trap' hotsdt:bench_trap 2>/dev/null",
			 dir, dir, calls);
		up[r] = run_value(cmd, "ns/call ");
		snprintf(cmd, sizeof(cmd),
			 "%s/djp trace --no-uprobe -c '%s/bench-targets/hot_sdt %ld trap' hotsdt:bench_trap 2>/dev/null", dir,
			 dir, calls);
		trap[r] = run_value(cmd, "ns/call ");
		bpf[r] = bcount[r] = -1;
		if (have_bpf) {
			snprintf(cmd, sizeof(cmd),
				 "bpftrace -c '%s/bench-targets/hot_sdt %ld trap' -e 'usdt:%s/bench-targets/hot_sdt:hotsdt:"
				 "bench_trap { printf(\"%%d %%d\\n\", arg0, arg1); }' 2>/dev/null",
				 dir, calls, dir);
			bpf[r] = run_value(cmd, "ns/call ");
			snprintf(cmd, sizeof(cmd),
				 "bpftrace -c '%s/bench-targets/hot_sdt %ld trap' -e 'usdt:%s/bench-targets/hot_sdt:hotsdt:"
				 "bench_trap { @c[probe] = count(); }' 2>/dev/null",
				 dir, calls, dir);
			bcount[r] = run_value(cmd, "ns/call ");
		}
	}
	double p = median_of(plain, RUNS), u = median_of(up, RUNS) - p, t = median_of(trap, RUNS) - p;
	printf("djp trace, the kernel's uprobe (BPF recorder), cost per hit | %.0f ns | - | -\n", u);
	printf("djp trace --no-uprobe, an int3 probe in the target, cost per hit | %.0f ns | - | -\n", t);
	printf("int3 probe / the kernel's uprobe, per hit | %.2f x | - | -\n", t / u);
	if (!have_bpf || median_of(bpf, RUNS) < 0) {
		printf("bpftrace on the same site | skipped: bpftrace not installed or not permitted | - | -\n");
		return 0;
	}
	double b = median_of(bpf, RUNS) - p, c = median_of(bcount, RUNS) - p;
	printf("bpftrace printf of the two arguments (USDT uprobe), same site, cost per hit | %.0f ns | - | -\n", b);
	printf("djp uprobe / bpftrace, each hit recorded with its arguments, per hit | %.3f x | <= 1.0 | %s\n", u / b,
	       u / b <= 1.0 ? "ok" : "over");
	printf("bpftrace count (a map, nothing recorded a hit), same site, cost per hit | %.0f ns | - | -\n", c);
	printf("djp uprobe recording / bpftrace counting, per hit | %.3f x | - | -\n", u / c);
	return 0;
}
