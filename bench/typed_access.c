/*
 * The cost of typed accesses in the target (docs/SCRIPTS.md, "Typed
 * access"): a function point whose probe reads its pointer parameter from
 * its register ($n), one member through it ($n->a), and a chain of three
 * dereferences ($n->next->next->a), at each call of bench-targets/
 * hot_typed's hot_node, each hit recorded as an event for the script in
 * the tool.  Rows: the cost per hit in the target over the plain call,
 * and the member and the chain over the register alone (targets: 3 and
 * 8 ns).  Medians of 3 runs of each, interleaved.  The rings (-s 128)
 * never wrap here, so each row also counts the kernel's first touch of
 * the ring pages its events fill, which a typed event's 16 more bytes
 * meet sooner; bench/typed_hits times the hit alone, on a warm ring.
 */
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench/bench.h"

#define RUNS 3
#define CALLS 1000000L

int main(void)
{
	static const char *const reads[] = { "$n", "$n->a", "$n->next->next->a" };
	char exe[PATH_MAX], dir[PATH_MAX], cmd[3 * PATH_MAX + 512];
	double plain[RUNS], hit[3][RUNS], p, c[3];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	int ok = 1;

	if (n <= 0)
		return 1;
	exe[n] = 0;
	snprintf(dir, sizeof(dir), "%s/..", dirname(exe));
	for (int r = 0; r < RUNS; r++) {
		snprintf(cmd, sizeof(cmd), "%s/bench-targets/hot_typed %ld", dir, CALLS);
		ok &= (plain[r] = run_value(cmd, "ns/call ")) > 0;
		for (int k = 0; k < 3; k++) {
			/* a local: the probe runs in the tool, each hit an event;
			 * rings large enough that none is lost */
			snprintf(cmd, sizeof(cmd),
				 "%s/djp -s 128 -c '%s/bench-targets/hot_typed %ld' -e 'probe process.function(\"hot_node\") "
				 "{ x = %s }' 2>&1",
				 dir, dir, CALLS, reads[k]);
			ok &= (hit[k][r] = run_value(cmd, "ns/call ")) > 0;
		}
	}
	p = median_of(plain, RUNS);
	for (int k = 0; k < 3; k++)
		c[k] = median_of(hit[k], RUNS) - p;
	printf("function hot_node idle | %.2f ns/call | - | -\n", p);
	printf("function entry, register argument ($n), cost per hit in the target | %.2f ns | - | -\n", c[0]);
	printf("one member ($n->a), over the register argument | %.2f ns | <= 3 | %s\n", c[1] - c[0],
	       c[1] - c[0] <= 3 ? "ok" : "over");
	printf("three dereferences ($n->next->next->a), over the register argument | %.2f ns | <= 8 | %s\n",
	       c[2] - c[0], c[2] - c[0] <= 8 ? "ok" : "over");
	return ok ? 0 : 1;
}
